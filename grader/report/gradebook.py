"""grades.csv: one row per submission, a column per part.

A submission the grader failed on has an empty total and status "grader error": an empty
cell is not a zero, and the instructor sees which rows to look at. `submission` is the
submission's name as uploaded (made safe); `folder` is its folder in the output directory
(folders.py: the same as the name unless the name was odd or collided). `student_id` and
`name` are the student the row is about, as the layout the work arrived in says
(intake/layouts.py: Canvas's user id, Moodle's participant id, Gradescope's SID, nbgrader's
student folder); `grader export` matches rows to the LMS's gradebook on `student_id`.

`diagnoses` holds the catalog ids of the mistakes diagnosed (grader/catalog/), one per part
that lost points to a known mistake, separated by spaces ("mha-repeat softmax-neg-inf"),
empty when none was.

Text cells (name, reason, source, folder) are made safe, cut, and neutralised for
spreadsheets: a cell starting with = + - @ (or tab, CR) gets a leading ' (OWASP's advice
on CSV injection), so opening grades.csv in Excel never runs a formula from a submission.

The output folder is the course's gradebook: each submission's row is also kept in its
folder (DIR/<folder>/gradebook-row.json, with the fingerprint of what was graded), and
grades.csv is rebuilt from all the rows in DIR, so grading a few submissions into the
folder of an earlier batch updates their rows and keeps everyone else's.
"""
import csv
import io
import json
import os

from ..textsafety import safe_text
from .files import GRADEBOOK_CELL_CHARS, write_bytes, write_text
from .summary import mistake_ids

ROW_FILE = "gradebook-row.json"

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


def record(result, fingerprint=None):
    """The gradebook's row for one SubmissionResult, as plain data (kept in its folder)."""
    failed = result.status == "grader error"
    reason = result.grader_error or result.intake_error or (
        f"{len(result.grader_failures)} tests failed inside the grader" if failed
        else (result.summary or {}).get("load_error") or _first_failure(result))
    return {"name": safe_text(result.name, 1000), "status": result.status,
            "total": None if failed else round(float(result.score), 4),
            "max": round(float(result.max_score), 4),
            "parts": {p: [round(float(s), 4), round(float(t), 4)]
                      for p, (s, t) in result.by_part().items()},
            "reason": safe_text(reason or "", GRADEBOOK_CELL_CHARS * 4),
            "source": safe_text(result.source or "", 2000),
            "folder": getattr(result, "folder", None) or safe_text(result.name, 200),
            "fingerprint": fingerprint, **identity(result),
            "diagnoses": mistake_ids(result)}


def identity(result):
    """The row's student: {"student_id", "student_name", "layout"} (safe, capped)."""
    return {"student_id": safe_text(getattr(result, "student_id", "") or "", 400),
            "student_name": safe_text(getattr(result, "student_name", "") or "", 400),
            "layout": safe_text(getattr(result, "layout", "") or "", 20)}


def safe_record(result, fingerprint=None):
    """`record`, or a grader-error row if the result itself is too odd to read."""
    try:
        return record(result, fingerprint)
    except Exception as error:
        name = safe_text(getattr(result, "name", "?"), 1000)
        return {"name": name, "status": "grader error", "total": None, "max": 0, "parts": {},
                "reason": f"the grader could not write this row: {error!r}"[:1000],
                "source": safe_text(getattr(result, "source", ""), 2000),
                "folder": getattr(result, "folder", None) or name[:80], "fingerprint": None,
                "student_id": "", "student_name": "", "layout": ""}


def save_record(row, out_dir):
    write_text(os.path.join(out_dir, row["folder"], ROW_FILE), json.dumps(row, ensure_ascii=False))


def load_records(out_dir):
    """{name: row} for every row kept in `out_dir` (rows that do not read back are left out)."""
    rows = {}
    try:
        entries = sorted(os.scandir(out_dir), key=lambda e: e.name)
    except OSError:
        return rows
    for entry in entries:
        if not entry.is_dir(follow_symlinks=False):
            continue
        try:
            with open(os.path.join(entry.path, ROW_FILE), encoding="utf-8") as handle:
                row = json.load(handle)
        except (OSError, ValueError):
            continue
        if isinstance(row, dict) and isinstance(row.get("name"), str) \
                and row.get("folder") == entry.name and isinstance(row.get("parts"), dict):
            rows[row["name"]] = row
    return rows


def _cells(row, parts):
    total = "" if row.get("total") is None else f"{row['total']:g}"
    return ([text_cell(row["name"]), text_cell(row.get("student_id")),
             text_cell(row.get("student_name")), text_cell(row.get("status", "")), total,
             f"{float(row.get('max', 0)):g}"]
            + [f"{float(row['parts'].get(p, (0, 0))[0]):g}" for p in parts]
            + [text_cell(" ".join(str(m) for m in row.get("diagnoses") or []))]
            + [text_cell(row.get("reason")), text_cell(row.get("source")),
               text_cell(row.get("folder"))])


def gradebook_text(rows, parts):
    """grades.csv from gradebook rows (dicts from `record`), sorted by name."""
    maxima = {}
    for row in rows:
        for part, pair in row.get("parts", {}).items():
            try:
                maxima[part] = max(maxima.get(part, 0.0), float(pair[1]))
            except (TypeError, ValueError, IndexError):
                pass
    handle = io.StringIO(newline="")
    writer = csv.writer(handle)
    writer.writerow(["submission", "student_id", "name", "status", "total", "max"]
                    + [f"{p} (/{maxima.get(p, 0):g})" for p in parts]
                    + ["diagnoses", "reason", "source", "folder"])
    for row in sorted(rows, key=lambda r: safe_text(r.get("name", ""))):
        try:
            writer.writerow(_cells(row, parts))
        except Exception as error:  # an odd row must not cost the gradebook
            writer.writerow([text_cell(row.get("name", "?")), text_cell(row.get("student_id")),
                             text_cell(row.get("student_name")), "grader error", "", ""]
                            + [""] * (len(parts) + 1)
                            + [text_cell(f"the grader could not write this row: {error!r}"),
                               text_cell(row.get("source", "")), text_cell(row.get("folder", ""))])
    return handle.getvalue()


def write_gradebook(rows, parts, path):
    """Write grades.csv (atomically) from gradebook rows."""
    write_bytes(path, gradebook_text(rows, parts).encode("utf-8", errors="replace"))
