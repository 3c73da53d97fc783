"""Gradescope's results.json for one submission.

Format: https://gradescope-autograders.readthedocs.io/en/latest/specs/ (top-level `score`
and `tests`, each with `name`, `score`, `max_score`, `status`, `output`, `visibility`).
Tests skipped on this machine (the CUDA tier without a GPU) carry no points and are listed
in the top-level output instead, so a test never shows as passed without having run.

Every string that may come from a submission is made safe and capped (files.py):
a test's output at MESSAGE_CHARS, the summary at SUMMARY_CHARS, and `results_text` keeps
the whole file under RESULTS_BYTES by cutting the tests' outputs first.
"""
from ..grade.outcome import SubmissionResult
from ..textsafety import safe_text
from .files import MESSAGE_CHARS, RESULTS_BYTES, SUMMARY_CHARS, dumps

VISIBILITY = "visible"


def _round(value):
    return round(float(value), 4)


def summary_text(result: SubmissionResult, limit=SUMMARY_CHARS):
    lines = []
    if result.grader_error:
        lines.append(f"GRADER ERROR: {safe_text(result.grader_error, 4000)}\nThis is not your "
                     f"fault; your instructor has been told.")
    if result.intake_error:
        lines.append(f"Your submission could not be graded: {safe_text(result.intake_error, 4000)}")
    summary = result.summary or {}
    if summary.get("load_error"):
        lines.append(safe_text(summary["load_error"], MESSAGE_CHARS))
    api = summary.get("api") or {}
    missing = [safe_text(name, 100) for name, kind in api.items() if kind == "missing"]
    if missing:
        lines.append("Not found in attention.py: " + ", ".join(missing[:50]) +
                     " (the parts that use them score 0; the other parts are graded in full).")
    for number, kind, message in (summary.get("cell_errors") or [])[:50]:
        lines.append(f"Notebook cell {safe_text(number, 20)} raised {safe_text(kind, 100)}: "
                     f"{safe_text(message, 500)} (the cell was skipped).")
    lines += [safe_text(note, 2000) for note in result.notes[:50]]
    parts = result.by_part()
    if parts:
        lines.append("Score by part: " + ", ".join(
            f"{part} {_fmt(score)}/{_fmt(top)}" for part, (score, top) in parts.items()))
    skipped = [t for t in result.tests if t.status == "skipped"]
    if skipped:
        reasons = sorted({safe_text(t.message, 500) for t in skipped})
        lines.append(f"{len(skipped)} tests did not run on this grading machine and carry no "
                     f"points here: " + "; ".join(reasons))
    printed_out = safe_text((summary.get("stdout") or "")[:4000]).strip()
    if printed_out:
        lines.append("Your code printed (first part shown):\n" + printed_out[:2000])
    return safe_text("\n\n".join(lines), limit)


def _fmt(value):
    return f"{value:g}"


def results_json(result: SubmissionResult, message_chars=MESSAGE_CHARS, summary_chars=SUMMARY_CHARS):
    tests = []
    for test in result.tests:
        if test.status == "skipped":
            continue
        output = test.message if test.status != "passed" else ""
        tests.append({
            "name": safe_text(test.name, 500),
            "score": _round(test.score),
            "max_score": _round(test.max_score),
            "status": "passed" if test.status == "passed" else "failed",
            "output": safe_text(output or "", message_chars),
            "tags": [safe_text(test.part, 100)],
            "visibility": VISIBILITY,
        })
    return {
        "score": _round(result.score),
        "output": summary_text(result, summary_chars),
        "visibility": VISIBILITY,
        "stdout_visibility": "hidden",
        "execution_time": _round(result.seconds),
        "tests": tests,
        "extra_data": {
            "status": result.status,
            "max_score": _round(result.max_score),
            "isolation": result.isolation,
            "skipped": [{"name": safe_text(t.name, 500), "reason": safe_text(t.message, 500)}
                        for t in result.tests if t.status == "skipped"],
            "grader_errors": len(result.grader_failures) + bool(result.grader_error),
        },
    }


def results_text(result: SubmissionResult, limit=RESULTS_BYTES):
    """results.json as text of at most `limit` bytes of UTF-8, always valid JSON: the tests'
    outputs are cut shorter and shorter first, then the summary, then both go."""
    message_chars, summary_chars = MESSAGE_CHARS, SUMMARY_CHARS
    while True:
        text = dumps(results_json(result, message_chars, summary_chars))
        if len(text.encode("utf-8")) <= limit:
            return text
        if message_chars > 64:
            message_chars //= 4
        elif summary_chars > 256:
            summary_chars //= 4
        else:
            break
    data = results_json(result, 0, 0)
    data["output"] = "The results were too large to write; your instructor has the details."
    for test in data["tests"]:
        test["output"] = ""
    text = dumps(data)
    if len(text.encode("utf-8")) <= limit:
        return text
    return dumps({"score": data["score"], "output": data["output"], "tests": [],
                  "extra_data": {"status": safe_text(result.status), "cut": True}})
