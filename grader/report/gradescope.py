"""Gradescope's results.json for one submission.

Format: https://gradescope-autograders.readthedocs.io/en/latest/specs/ (top-level `score`
and `tests`, each with `name`, `score`, `max_score`, `status`, `output`, `visibility`).
Tests skipped on this machine (the CUDA tier without a GPU) carry no points and are listed
in the top-level output instead, so a test never shows as passed without having run.
"""
from ..grade.outcome import SubmissionResult

VISIBILITY = "visible"


def _round(value):
    return round(float(value), 4)


def summary_text(result: SubmissionResult):
    lines = []
    if result.grader_error:
        lines.append(f"GRADER ERROR: {result.grader_error}\nThis is not your fault; your "
                     f"instructor has been told.")
    if result.intake_error:
        lines.append(f"Your submission could not be graded: {result.intake_error}")
    summary = result.summary or {}
    if summary.get("load_error"):
        lines.append(summary["load_error"])
    api = summary.get("api") or {}
    missing = [name for name, kind in api.items() if kind == "missing"]
    if missing:
        lines.append("Not found in attention.py: " + ", ".join(missing) +
                     " (the parts that use them score 0; the other parts are graded in full).")
    for number, kind, message in summary.get("cell_errors") or []:
        lines.append(f"Notebook cell {number} raised {kind}: {message} (the cell was skipped).")
    lines += result.notes
    parts = result.by_part()
    if parts:
        lines.append("Score by part: " + ", ".join(
            f"{part} {_fmt(score)}/{_fmt(top)}" for part, (score, top) in parts.items()))
    skipped = [t for t in result.tests if t.status == "skipped"]
    if skipped:
        reasons = sorted({t.message for t in skipped})
        lines.append(f"{len(skipped)} tests did not run on this grading machine and carry no "
                     f"points here: " + "; ".join(reasons))
    printed_out = (summary.get("stdout") or "").strip()
    if printed_out:
        lines.append("Your code printed (first part shown):\n" + printed_out[:2000])
    return "\n\n".join(lines)


def _fmt(value):
    return f"{value:g}"


def results_json(result: SubmissionResult):
    tests = []
    for test in result.tests:
        if test.status == "skipped":
            continue
        output = test.message if test.status != "passed" else ""
        tests.append({
            "name": test.name,
            "score": _round(test.score),
            "max_score": _round(test.max_score),
            "status": "passed" if test.status == "passed" else "failed",
            "output": output,
            "tags": [test.part],
            "visibility": VISIBILITY,
        })
    return {
        "score": _round(result.score),
        "output": summary_text(result),
        "visibility": VISIBILITY,
        "stdout_visibility": "hidden",
        "execution_time": _round(result.seconds),
        "tests": tests,
        "extra_data": {
            "status": result.status,
            "max_score": _round(result.max_score),
            "isolation": result.isolation,
            "skipped": [{"name": t.name, "reason": t.message} for t in result.tests
                        if t.status == "skipped"],
            "grader_errors": len(result.grader_failures) + bool(result.grader_error),
        },
    }
