"""`grader export canvas|moodle --out FILE [--from DIR]`: the gradebook in DIR (the `--out`
of `grader grade`) as the CSV each LMS imports.

Canvas (Grades → Import): the columns of Canvas's own gradebook export, `Student`, `ID`,
`SIS User ID`, `SIS Login ID`, `Section`, then one column per assignment, named as Canvas
names it, `Attention (12345)` (`--assignment`; a name without `(id)` makes Canvas offer a
new assignment). A `Points Possible` row follows the header, as in Canvas's export. Canvas
matches a row on `ID` (its user id: what a Canvas download names), else `SIS User ID`
(where a Gradescope export's SID goes), else `SIS Login ID` (nbgrader's and plain names);
rows from a Moodle download are left out (a participant id means nothing to Canvas).

    Student,ID,SIS User ID,SIS Login ID,Section,Attention (12345)
    Points Possible,,,,,100
    wangli,10000,,,,100

Moodle (the assignment's "Upload grading worksheet", with the offline grading worksheet
enabled): the worksheet's columns, an `Identifier` of the form `Participant 10006` (the
participant id a Moodle download names), `Full name`, `Grade`, `Maximum Grade` and
`Last modified (grade)`, which Moodle requires (the time of the export, so the import is
newer than any grade already there).

    Identifier,Full name,Grade,Maximum Grade,Last modified (grade)
    Participant 10006,Fang Wu,85,100,2026-12-02 23:30:00 +0000

Rows the grader failed on are left out with a note on stderr, never exported as 0 (a
`not gradable` row is a real 0 and is exported); so are rows without a student id, and, for
Moodle, rows that did not come from a Moodle download. Every text cell is neutralised for
spreadsheets (gradebook.text_cell). A group submission (Gradescope, ids joined by `;`)
gives each member a row.
"""
import csv
import io
import os
import sys
import time

from .report import files
from .report.gradebook import load_records, text_cell
from .textsafety import safe_text

CANVAS_COLUMNS = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
MOODLE_COLUMNS = ["Identifier", "Full name", "Grade", "Maximum Grade", "Last modified (grade)"]
MOODLE_PARTICIPANT = "Participant "


def _score(value):
    return f"{float(value):g}"


def _members(row):
    """[(id, name)] of the students a row is about (a group: one per member)."""
    ids = [i for i in str(row.get("student_id") or "").split(";") if i.strip()]
    names = [n.strip() for n in str(row.get("student_name") or "").split(";")]
    if len(names) != len(ids):
        names = [row.get("student_name") or ""] * len(ids)
    return list(zip(ids, names))


def exportable(rows):
    """(rows to export, notes): the rows with a score and a student id, sorted by name."""
    keep, notes = [], []
    for row in sorted(rows, key=lambda r: safe_text(r.get("name", ""))):
        shown = safe_text(row.get("name", "?"), 120)
        if row.get("status") == "grader error" or row.get("total") is None:
            notes.append(f"left out {shown}: the grader failed on it (see its grader-errors.log); "
                         f"regrade it, it is never exported as 0")
        elif not _members(row):
            notes.append(f"left out {shown}: no student id (grade it with --layout matching "
                         f"how the work arrived)")
        else:
            keep.append(row)
    return keep, notes


def canvas_text(rows, assignment="Attention"):
    """The Canvas gradebook import CSV for gradebook rows, and the notes on what was left out."""
    keep, notes = exportable(rows)
    handle = io.StringIO(newline="")
    writer = csv.writer(handle)
    writer.writerow(CANVAS_COLUMNS + [text_cell(assignment)])
    top = max((float(r.get("max") or 0) for r in keep), default=0)
    writer.writerow(["Points Possible", "", "", "", "", _score(top)])
    for row in keep:
        layout = row.get("layout") or "plain"
        if layout == "moodle":
            notes.append(f"left out {safe_text(row.get('name', '?'), 120)}: its id is a Moodle "
                         f"participant id, which Canvas does not know")
            continue
        for ident, name in _members(row):
            ids = {"canvas": [ident, "", ""], "gradescope": ["", ident, ""]}.get(
                layout, ["", "", ident])
            writer.writerow([text_cell(name)] + [text_cell(i) for i in ids] + ["",
                            _score(row["total"])])
    return handle.getvalue(), notes


def moodle_text(rows, now=None):
    """The Moodle grading worksheet CSV for gradebook rows, and the notes."""
    keep, notes = exportable(rows)
    stamp = time.strftime("%Y-%m-%d %H:%M:%S +0000", time.gmtime(now))
    handle = io.StringIO(newline="")
    writer = csv.writer(handle)
    writer.writerow(MOODLE_COLUMNS)
    for row in keep:
        if (row.get("layout") or "plain") != "moodle":
            notes.append(f"left out {safe_text(row.get('name', '?'), 120)}: not from a Moodle "
                         f"download, so it has no Moodle participant id")
            continue
        for ident, name in _members(row):
            writer.writerow([text_cell(MOODLE_PARTICIPANT + ident), text_cell(name),
                             _score(row["total"]), _score(row.get("max") or 0), stamp])
    return handle.getvalue(), notes


def main(args):
    if not os.path.isdir(args.source):
        print(f"grader export: --from {safe_text(args.source, 200)} is not a gradebook folder "
              f"(the --out of grader grade)", file=sys.stderr)
        return 2
    if os.path.isdir(args.out):
        print(f"grader export: --out {safe_text(args.out, 200)} is a folder", file=sys.stderr)
        return 2
    rows = list(load_records(args.source).values())
    if not rows:
        print(f"grader export: no graded rows in {safe_text(args.source, 200)}", file=sys.stderr)
        return 2
    if args.lms == "canvas":
        text, notes = canvas_text(rows, args.assignment)
    else:
        text, notes = moodle_text(rows)
    for note in notes:
        print(f"grader export: {note}", file=sys.stderr)
    files.write_bytes(args.out, text.encode("utf-8"))
    count = text.count("\n") - (2 if args.lms == "canvas" else 1)
    print(f"Wrote {args.out}: {count} student(s) for {args.lms}"
          + (f", {len(notes)} row(s) left out (see above)" if notes else ""))
    return 0
