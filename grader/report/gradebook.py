"""grades.csv: one row per submission, a column per part.

A submission the grader failed on has an empty total and status "grader error": an empty
cell is not a zero, and the instructor sees which rows to look at. `submission` is the
submission's name as uploaded (made safe); `folder` is its folder in the output directory
(folders.py: the same as the name unless the name was odd or collided).

Text cells (name, reason, source, folder) are made safe, cut, and neutralised for
spreadsheets: a cell starting with = + - @ (or tab, CR) gets a leading ' (OWASP's advice
on CSV injection), so opening grades.csv in Excel never runs a formula from a submission.
"""
import csv
import io

from ..textsafety import safe_text
from .files import GRADEBOOK_CELL_CHARS, write_bytes

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def text_cell(value, limit=GRADEBOOK_CELL_CHARS):
    """A cell for text that came from a submission: one safe line that no spreadsheet
    reads as a formula."""
    if value is None:
        return ""
    lines = safe_text(value, limit).replace("\t", " ").strip().splitlines()
    text = lines[0].strip() if lines else ""
    if text.startswith(FORMULA_START):
        text = "'" + text
    return text


def _first_failure(result):
    for test in result.tests:
        if test.status == "failed":
            first = safe_text(test.message or "", 2000).strip().splitlines()
            return f"first failure: {test.name}: {first[0] if first else ''}"
    return ""


def _row(result, parts):
    by_part = result.by_part()
    failed = result.status == "grader error"
    total = "" if failed else f"{result.score:g}"
    reason = result.grader_error or result.intake_error or (
        f"{len(result.grader_failures)} tests failed inside the grader" if failed
        else (result.summary or {}).get("load_error") or _first_failure(result))
    return ([text_cell(result.name), result.status, total, f"{result.max_score:g}"]
            + [f"{by_part.get(p, (0, 0))[0]:g}" for p in parts]
            + [text_cell(reason), text_cell(result.source),
               text_cell(getattr(result, "folder", None) or result.name)])


def _sort_key(result):
    try:
        return (0, safe_text(result.name))
    except Exception:
        return (1, "")


def gradebook_text(results, parts):
    maxima = {}
    for result in results:
        try:
            for part, (_, top) in result.by_part().items():
                maxima[part] = max(maxima.get(part, 0.0), top)
        except Exception:
            pass
    handle = io.StringIO(newline="")
    writer = csv.writer(handle)
    writer.writerow(["submission", "status", "total", "max"]
                    + [f"{p} (/{maxima.get(p, 0):g})" for p in parts] + ["reason", "source", "folder"])
    for result in sorted(results, key=_sort_key):
        try:
            writer.writerow(_row(result, parts))
        except Exception as error:  # an odd row must not cost the gradebook
            name = text_cell(getattr(result, "name", "?"))
            writer.writerow([name, "grader error", "", ""] + [""] * len(parts)
                            + [text_cell(f"the grader could not write this row: {error!r}"),
                               text_cell(getattr(result, "source", "")),
                               text_cell(getattr(result, "folder", ""))])
    return handle.getvalue()


def write_gradebook(results, parts, path):
    write_bytes(path, gradebook_text(results, parts).encode("utf-8", errors="replace"))
