"""grades.csv: one row per submission, a column per part.

A submission the grader failed on has an empty total and status "grader error": an empty
cell is not a zero, and the instructor sees which rows to look at.
"""
import csv


def _first_failure(result):
    for test in result.tests:
        if test.status == "failed":
            first = (test.message or "").strip().splitlines()
            return f"first failure: {test.name}: {first[0] if first else ''}"
    return ""


def write_gradebook(results, parts, path):
    maxima = {}
    for result in results:
        for part, (_, top) in result.by_part().items():
            maxima[part] = max(maxima.get(part, 0.0), top)
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["submission", "status", "total", "max"]
                        + [f"{p} (/{maxima.get(p, 0):g})" for p in parts] + ["reason", "source"])
        for result in sorted(results, key=lambda r: r.name):
            by_part = result.by_part()
            failed = result.status == "grader error"
            total = "" if failed else f"{result.score:g}"
            reason = result.grader_error or result.intake_error or (
                f"{len(result.grader_failures)} tests failed inside the grader" if failed
                else (result.summary or {}).get("load_error") or _first_failure(result))
            writer.writerow([result.name, result.status, total, f"{result.max_score:g}"]
                            + [f"{by_part.get(p, (0, 0))[0]:g}" for p in parts]
                            + [reason.splitlines()[0][:300] if reason else "", result.source])
