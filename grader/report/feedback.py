"""A plain-text feedback file per submission, for courses that hand feedback out themselves."""
from .gradescope import summary_text


def feedback_text(result):
    lines = [f"{result.name}: {result.score:g} / {result.max_score:g} points", "",
             summary_text(result), ""]
    for test in result.tests:
        if test.status == "skipped":
            continue
        mark = {"passed": "PASS", "failed": "FAIL", "grader-error": "GRADER ERROR"}[test.status]
        lines.append(f"[{mark}] {test.name} ({test.score:g}/{test.max_score:g})")
        if test.status != "passed" and test.message:
            lines += ["    " + line for line in test.message.splitlines()]
    return "\n".join(lines) + "\n"
