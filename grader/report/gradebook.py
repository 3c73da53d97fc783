"""grades.csv: one row per submission, a column per part.

A submission the grader failed on has an empty total and status "grader error": an empty
cell is not a zero, and the instructor sees which rows to look at. `submission` is the
submission's name as uploaded (made safe); `folder` is its folder in the output directory
(folders.py: the same as the name unless the name was odd or collided). `student_id` and
`name` are the student the row is about, as the layout the work arrived in says
(grader/platforms/: Canvas's user id, Moodle's participant id, Gradescope's SID, nbgrader's
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

The row keeps what was graded; the final score is derived each time grades.csv is built
(`final_rows`): the instructor's overrides (grader/overrides.py) replace part scores (or the
total), their sum is `raw_total`, the course's late policy (grader/course.py) takes
`penalty`, and `total` is the final score (what the exports send). The columns after
`folder`: `late` (yes/no, empty when unknown), `days_late`, `submitted_at` and
`time_source` (as the layout found them; a zoneless Moodle time as read in course.toml's
`timezone`), `time_zone` (which zone the time was read in, course.zone_of), `raw_total`,
`penalty`, `overrides` ("part
points (reason)", separated by "; ") and `flags` (identity warnings and what to review).
grades.csv is written with a UTF-8 byte order mark (utf-8-sig), so Excel on a Chinese
Windows reads names right; read it with encoding="utf-8-sig".
"""
import csv
import io
import json
import os

from .. import course as courses
from .. import overrides as ledger
from ..intake.layouts import shown_source
from ..textsafety import finite_number as _number, safe_text
from ..files import GRADEBOOK_CELL_CHARS, write_bytes, write_text
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
            "source": safe_text(_shown(result.source), 2000),
            "folder": result.folder or safe_text(result.name, 200),
            "fingerprint": fingerprint, **identity(result),
            "diagnoses": mistake_ids(result)}


def _shown(source):
    """A row's source: never the temporary folder a download zip was unpacked into (gone
    when grading ends), but the zip and its entry (intake.layouts.shown_source)."""
    return shown_source(source or "")


def identity(result):
    """The row's student and when the work arrived: {"student_id", "student_name", "layout",
    "submitted_at", "time_source", "late_flag", "flags"} (safe, capped; the result's
    provenance, from the layout)."""
    return provenance_fields(result.provenance)


def provenance_fields(who):
    """`identity`'s fields from an outcomes.Provenance: text made safe and capped, the LMS's
    late flag only when it is a boolean, at most 20 flags."""
    late_flag, flags = who.late_flag, who.flags
    return {"student_id": safe_text(who.student_id or "", 400),
            "student_name": safe_text(who.student_name or "", 400),
            "layout": safe_text(who.layout or "", 20),
            "submitted_at": safe_text(who.submitted_at or "", 40),
            "time_source": safe_text(who.time_source or "", 40),
            "late_flag": late_flag if isinstance(late_flag, bool) else None,
            "flags": [safe_text(f, 400) for f in flags[:20]] if isinstance(flags, list) else []}


def safe_record(result, fingerprint=None):
    """`record`, or a grader-error row if the result itself is too odd to read."""
    try:
        return record(result, fingerprint)
    except Exception as error:
        name = safe_text(result.name, 1000)
        return {"name": name, "status": "grader error", "total": None, "max": 0, "parts": {},
                "reason": f"the grader could not write this row: {error!r}"[:1000],
                "source": safe_text(_shown(result.source), 2000),
                "folder": result.folder or name[:80], "fingerprint": None,
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


def recorded_assignment(out_dir):
    """The assignment the rows kept in `out_dir` were graded for (grader grade records it
    in each row), or None when they name none or several."""
    named = {row.get("assignment") for row in load_records(out_dir).values()}
    named.discard(None)
    found = named.pop() if len(named) == 1 else None
    return found if isinstance(found, str) and found.isidentifier() else None


def final_row(row, course=None, current=None):
    """A copy of a kept row with its final score derived: overrides, then the late policy.

    Adds "graded_total" (what was graded), "raw_total" (after overrides), "penalty",
    "late", "days_late", "due", "late_basis" (what a penalty rests on: "time", "lms-flag"),
    "time_zone", "overrides" ([{"part", "graded", "points", "reason", "who",
    "time"}]), "review" (what the instructor should look at) and sets "total" and "parts"
    to the final values. A row the grader failed on keeps its empty total."""
    row = dict(row)
    row["parts"] = {p: list(v) for p, v in (row.get("parts") or {}).items()
                    if isinstance(v, (list, tuple)) and len(v) == 2}
    row["graded_total"] = row.get("total")
    late = courses.lateness(course, row)
    row.update(late=late["late"], days_late=late["days_late"], due=late["due"],
               late_basis=late["basis"], time_zone=courses.zone_of(course, row))
    row["course_notes"] = courses.row_notes(course, row)
    read = courses.read_time(course, row)
    if read is not None:   # a zoneless time as read in the course's zone
        row["submitted_at"] = read.isoformat()
    review = list(late["review"])
    found = ledger.for_row(row, current or {})
    row["overrides"] = []
    if row.get("status") == "grader error" or row.get("total") is None:
        row.update(raw_total=None, penalty=None, total=None)
        if found:
            review.append("overrides not applied: the grader failed on this row (regrade it)")
        row["review"] = review
        return row
    for part, entry in found.items():
        if part == ledger.TOTAL or part not in row["parts"]:
            continue
        row["overrides"].append({"part": part, "graded": row["parts"][part][0],
                                 **{k: entry[k] for k in ("points", "reason", "who", "time")}})
        row["parts"][part][0] = entry["points"]
    stale = [p for p in found if p != ledger.TOTAL and p not in row["parts"]]
    if stale:
        review.append("an override names a part this row no longer has: " + ", ".join(stale))
    raw = sum(float(pair[0]) for pair in row["parts"].values()) if row["overrides"] \
        else float(row["total"])
    if ledger.TOTAL in found:
        entry = found[ledger.TOTAL]
        row["overrides"].append({"part": ledger.TOTAL, "graded": round(raw, 4),
                                 **{k: entry[k] for k in ("points", "reason", "who", "time")}})
        raw = float(entry["points"])
    if _number(raw) is None:  # a NaN would pass max(0.0, ...) below as a 0 never earned
        raise ValueError(f"the total {raw!r} is not a finite number")
    row["raw_total"] = round(raw, 4)
    row["penalty"] = courses.penalty(course, late, raw, row.get("max") or 0)
    row["total"] = round(max(0.0, raw - row["penalty"]), 4)
    row["review"] = review
    return row


def final_rows(rows, course=None, entries=None):
    """final_row for each kept row, with the ledger's active overrides (see overrides.py)."""
    current = ledger.active(entries or [])
    out = []
    for row in rows:
        try:
            out.append(final_row(row, course, current))
        except Exception as error:  # an odd row must not cost the gradebook
            broken = dict(row)
            broken.update(status="grader error", total=None, raw_total=None, penalty=None,
                          reason=f"the grader could not compute this row's final score: {error!r}")
            out.append(broken)
    return out


def _late_cell(value):
    return {True: "yes", False: "no"}.get(value, "")


def _score_cell(value):
    value = _number(value)
    return "" if value is None else f"{value:g}"


def _overrides_cell(row):
    listed = row.get("overrides") if isinstance(row.get("overrides"), list) else []
    return "; ".join(f"{o.get('part')} {_score_cell(o.get('points'))} ({o.get('reason', '')})"
                     for o in listed if isinstance(o, dict))


def _strings(value):
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _flags_cell(row):
    return "; ".join(_strings(row.get("flags")) + _strings(row.get("review")))


def _cells(row, parts):
    total = "" if row.get("total") is None else f"{row['total']:g}"
    return ([text_cell(row["name"]), text_cell(row.get("student_id")),
             text_cell(row.get("student_name")), text_cell(row.get("status", "")), total,
             f"{float(row.get('max', 0)):g}"]
            + [f"{float(row['parts'].get(p, (0, 0))[0]):g}" for p in parts]
            + [text_cell(" ".join(str(m) for m in row.get("diagnoses") or []))]
            + [text_cell(row.get("reason")), text_cell(row.get("source")),
               text_cell(row.get("folder"))]
            + [_late_cell(row.get("late")),
               "" if row.get("days_late") is None else str(int(row["days_late"])),
               text_cell(row.get("submitted_at")), text_cell(row.get("time_source")),
               text_cell(row.get("time_zone")),
               _score_cell(row.get("raw_total", row.get("total"))),
               _score_cell(row.get("penalty")), text_cell(_overrides_cell(row), 1000),
               text_cell(_flags_cell(row), 1000)])


EXTRA_COLUMNS = ["late", "days_late", "submitted_at", "time_source", "time_zone", "raw_total",
                 "penalty", "overrides", "flags"]


def gradebook_text(rows, parts):
    """grades.csv from gradebook rows (dicts from `record`, or `final_rows`), sorted by name."""
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
                    + ["diagnoses", "reason", "source", "folder"] + EXTRA_COLUMNS)
    for row in sorted(rows, key=lambda r: safe_text(r.get("name", ""))):
        try:
            writer.writerow(_cells(row, parts))
        except Exception as error:  # an odd row must not cost the gradebook
            writer.writerow([text_cell(row.get("name", "?")), text_cell(row.get("student_id")),
                             text_cell(row.get("student_name")), "grader error", "", ""]
                            + [""] * (len(parts) + 1)
                            + [text_cell(f"the grader could not write this row: {error!r}"),
                               text_cell(row.get("source", "")), text_cell(row.get("folder", ""))]
                            + [""] * len(EXTRA_COLUMNS))
    return handle.getvalue()


BOM = "\ufeff"


def write_gradebook(rows, parts, path):
    """Write grades.csv (atomically, UTF-8 with a byte order mark) from gradebook rows."""
    write_bytes(path, (BOM + gradebook_text(rows, parts)).encode("utf-8", errors="replace"))


def parts_of(rows):
    """The parts of kept rows, in the order they first appear."""
    order = {}
    for row in rows:
        for part in row.get("parts") or {}:
            order.setdefault(part, None)
    return list(order)


def orphans(rows, entries):
    """One line per override in effect that applies to no kept row (its student's id
    changed, or the row is gone): such an override is not applied, and must not pass
    unseen."""
    keys = {ledger.row_key(r) for r in rows}
    return [f"the override of {e['student']}'s {e['part']} ({e['points']:g}, {e['reason']}) "
            f"applies to no row in the gradebook: not applied"
            for (student, _), e in sorted(ledger.active(entries or []).items())
            if student not in keys]
