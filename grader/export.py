"""`grader export canvas|moodle --out FILE [--gradebook DIR]`: the gradebook in DIR (the
`--gradebook` of `grader grade`) as the CSV each LMS imports (the feedback exports,
canvas-comments and moodle-feedback-zip, and moodle --with-comments: feedback_export.py).

Canvas (Grades → Import): the columns of Canvas's own gradebook export, `Student`, `ID`,
`SIS User ID`, `SIS Login ID`, `Section`, then one column per assignment, named as Canvas
names it, `Attention (12345)` (`--assignment`, required: a name Canvas does not have makes it
create a new assignment; or `--template`, the gradebook CSV downloaded from Canvas, of which
only this assignment's column is filled: `canvas_from_template`). A `Points Possible` row
follows the header, as in Canvas's export. Canvas
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

The score exported is the final one (gradebook.final_rows: the instructor's overrides, then
the course's late policy; `--course FILE`, default DIR/course.toml). Neither import takes
lateness (an extra Canvas column would be read as another assignment; Moodle's worksheet
reads only the identifier, the grade and the time of the grade), so lateness, the raw score
and the penalty are in grades.csv and report.html. (Checked against their sources: Canvas's
app/models/gradebook_importer.rb makes every column after `Section` an assignment and finds
its header with row[0].include?("Student"), which the BOM does not disturb; Moodle's
assignfeedback_offline importer looks up `Identifier`, `Grade` and `Last modified (grade)`
(plus the columns of enabled feedback plugins), after csv_import_reader removed a BOM.)

Rows the grader failed on are left out with a note on stderr, never exported as 0 (a
`not gradable` row, whose file was found but does not run, is a real 0 and is exported);
so are `missing work` rows (nothing gradable was found: not a 0 the student earned) unless
`--export-missing-as-zero`, or an instructor's override gave them a score; so are rows
without a student id, rows whose student id another row also has (both named in a note:
the LMS would keep whichever it read last), and, for Moodle, rows that did not come from a
Moodle download.
Every text cell is neutralised for spreadsheets (gradebook.text_cell). A group submission
(Gradescope, ids joined by `;`) gives each member a row. Both files are written with a
UTF-8 byte order mark (utf-8-sig): Excel on a Chinese Windows then reads the names right,
and both Canvas and Moodle take UTF-8 with or without it.
"""
import csv
import io
import os
import sys
import time

from . import course as courses
from . import overrides as ledger
from . import files
from .report.gradebook import BOM, final_rows, load_records, orphans, text_cell
from .textsafety import safe_text

CANVAS_COLUMNS = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
MOODLE_COLUMNS = ["Identifier", "Full name", "Grade", "Maximum Grade", "Last modified (grade)"]
MOODLE_PARTICIPANT = "Participant "


def _score(value):
    return f"{float(value):g}"


def _members(row):
    """[(id, name)] of the students a row is about (a group: one per member)."""
    ids = [i.strip() for i in str(row.get("student_id") or "").split(";") if i.strip()]
    names = [n.strip() for n in str(row.get("student_name") or "").split(";")]
    if len(names) != len(ids):
        names = [row.get("student_name") or ""] * len(ids)
    return list(zip(ids, names))


def exportable(rows, missing_as_zero=False):
    """(rows to export, notes): the rows with a score and a student id, sorted by name.
    A `missing work` row is left out unless missing_as_zero, or an override scored it."""
    keep, notes = [], []
    for row in sorted(rows, key=lambda r: safe_text(r.get("name", ""))):
        shown = safe_text(row.get("name", "?"), 120)
        if row.get("status") == "grader error" or row.get("total") is None:
            notes.append(f"left out {shown}: the grader failed on it (see its grader-errors.log); "
                         f"regrade it, it is never exported as 0")
        elif row.get("status") == "missing work" and not missing_as_zero \
                and not row.get("overrides"):
            notes.append(f"left out {shown}: no gradable work was found in what was handed "
                         f"in (missing work; review it, or --export-missing-as-zero)")
        elif not _members(row):
            notes.append(f"left out {shown}: no student id (grade it with --layout matching "
                         f"how the work arrived)")
        else:
            keep.append(row)
    return _one_row_per_student(keep, notes)


def _column(row):
    """Which of an LMS's id columns a row's ids go to (ids in different columns never clash)."""
    layout = row.get("layout") or "plain"
    return layout if layout in ("canvas", "moodle", "gradescope") else "login"


def _one_row_per_student(rows, notes):
    """A student id in two rows (a name changed between two downloads graded into one
    gradebook, a Gradescope SID alone and in a group) would be exported twice with two
    scores, and the LMS keeps whichever it reads last: such rows are left out, named."""
    seen = {}
    for row in rows:
        for ident, _name in _members(row):
            seen.setdefault((_column(row), ident), []).append(row)
    twice = {key: found for key, found in seen.items() if len(found) > 1}
    dropped = {id(row) for found in twice.values() for row in found}
    for (_col, ident), found in sorted(twice.items()):
        names = ", ".join(safe_text(r.get("name", "?"), 120) for r in found[:5])
        notes.append(f"left out {names}: student id {safe_text(ident, 100)} is in {len(found)} "
                     f"rows; check which is theirs (grader gradebook), then export again")
    return [row for row in rows if id(row) not in dropped], notes


def canvas_text(rows, assignment="Attention", missing_as_zero=False):
    """The Canvas gradebook import CSV for gradebook rows (final_rows), and the notes on
    what was left out."""
    keep, notes = exportable(rows, missing_as_zero)
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


def moodle_text(rows, now=None, missing_as_zero=False):
    """The Moodle grading worksheet CSV for gradebook rows (final_rows), and the notes."""
    keep, notes = exportable(rows, missing_as_zero)
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


CANVAS_IDENTITY = ("Student", "ID", "SIS User ID", "SIS Login ID", "Integration ID",
                   "Root Account", "Section")
CANVAS_KEYS = {"canvas": "ID", "gradescope": "SIS User ID", "login": "SIS Login ID"}
TEMPLATE_BYTES = 16 * 1024 * 1024


def _new_column(source):
    """The graded assignment's name, capitalized (rows from before assignments were declared:
    the default one's): what its Canvas column is likely called."""
    from .assignment import DEFAULT
    from .report.gradebook import recorded_assignment
    return (recorded_assignment(source) or DEFAULT).capitalize()


class ExportError(ValueError):
    """An export that cannot be written as asked: one line saying why."""


def read_template(path):
    """The rows of a gradebook CSV downloaded from Canvas (Grades > Export), as csv reads
    them (a BOM and Excel's re-save tolerated)."""
    try:
        with open(path, "rb") as handle:
            raw = handle.read(TEMPLATE_BYTES + 1)
    except OSError as error:
        raise ExportError(f"--template {safe_text(path, 200)}: cannot read it "
                          f"({error.strerror or error})") from None
    if len(raw) > TEMPLATE_BYTES:
        raise ExportError(f"--template {safe_text(path, 200)}: larger than 16 MB")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ExportError(f"--template {safe_text(path, 200)}: not UTF-8 text (save it as "
                          f"CSV UTF-8)") from None
    try:
        lines = list(csv.reader(io.StringIO(text, newline="")))
    except csv.Error as error:
        raise ExportError(f"--template {safe_text(path, 200)}: not CSV ({error})") from None
    if not lines or not lines[0] or "Student" not in lines[0][0] or "ID" not in lines[0]:
        raise ExportError(f"--template {safe_text(path, 200)}: not a Canvas gradebook export "
                          f"(its first row starts Student,ID,...: Canvas, Grades > Export)")
    return lines


def template_column(lines, wanted=None, graded="Attention"):
    """The one assignment column of the template to fill: `wanted` (--assignment), which
    must be there, else the one named after the graded assignment ("Attention (12345)")."""
    header = [h.strip() for h in lines[0]]
    columns = [h for h in header if h and h not in CANVAS_IDENTITY]
    if wanted is not None:
        if wanted.strip() not in header:
            raise ExportError(f"--assignment {safe_text(wanted, 200)!r} is not a column of the "
                              f"template (its assignments: "
                              f"{', '.join(safe_text(c, 80) for c in columns[:15])})")
        return wanted.strip()
    named = [c for c in columns
             if c.casefold() == graded.casefold() or c.casefold().startswith(graded.casefold() + " (")]
    if len(named) != 1:
        raise ExportError(f"the template has {len(named)} column(s) named {graded!r}"
                          + (f" ({', '.join(safe_text(c, 80) for c in named[:10])})" if named else "")
                          + "; give the column with --assignment (one of: "
                          + ", ".join(safe_text(c, 80) for c in columns[:15]) + ")")
    return named[0]


def canvas_from_template(rows, lines, column, missing_as_zero=False):
    """The Canvas import CSV built on the instructor's own Canvas export: its identity
    columns and its students, with only `column` filled from the final rows (no other
    assignment is sent back, so nothing graded in Canvas meanwhile is overwritten); the
    template's students without a row here are left out (Canvas keeps their grades)."""
    keep, notes = exportable(rows, missing_as_zero)
    header = [h.strip() for h in lines[0]]
    identity = [i for i, h in enumerate(header) if h in CANVAS_IDENTITY]
    at = header.index(column)
    scores = {}
    for row in keep:
        layout = _column(row)
        if layout == "moodle":
            notes.append(f"left out {safe_text(row.get('name', '?'), 120)}: its id is a Moodle "
                         f"participant id, which Canvas does not know")
            continue
        for ident, _name in _members(row):
            scores[(CANVAS_KEYS[layout], ident)] = (row, _score(row["total"]))
    handle = io.StringIO(newline="")
    writer = csv.writer(handle)
    writer.writerow([text_cell(header[i]) for i in identity] + [text_cell(column)])
    used, others = set(), 0
    for line in lines[1:]:
        line = line + [""] * (len(header) - len(line))
        cells = dict(zip(header, (c.strip() for c in line)))
        if line[0].strip() == "Points Possible":
            writer.writerow([text_cell(line[i]) for i in identity] + [text_cell(line[at])])
            continue
        found = next(((key, scores[key]) for key in ((name, cells.get(name, "")) for name in
                                                     ("ID", "SIS User ID", "SIS Login ID"))
                      if key[1] and key in scores), None)
        if found is None:
            others += bool(cells.get("ID"))
            continue
        used.add(found[0])
        writer.writerow([text_cell(line[i]) for i in identity] + [found[1][1]])
    for key, (row, _score_text) in scores.items():
        if key not in used:
            notes.append(f"left out {safe_text(row.get('name', '?'), 120)}: {key[0]} "
                         f"{safe_text(key[1], 100)} is not a student of the template")
    if others:
        notes.append(f"{others} student(s) of the template have no row here: left out (Canvas "
                     f"keeps their grades)")
    return handle.getvalue(), notes


def main(args):
    if not os.path.isdir(args.source):
        print(f"grader export: --gradebook {safe_text(args.source, 200)} is not a gradebook "
              f"folder (the --gradebook of grader grade)", file=sys.stderr)
        return 2
    if os.path.isdir(args.out) and args.lms != "canvas-comments":
        print(f"grader export: --out {safe_text(args.out, 200)} is a folder", file=sys.stderr)
        return 2
    if args.lms == "canvas-comments" and os.path.lexists(args.out) and not os.path.isdir(args.out):
        print(f"grader export: --out {safe_text(args.out, 200)} is a file; canvas-comments "
              f"writes a folder (comments.json and post_comments.py)", file=sys.stderr)
        return 2
    template = getattr(args, "template", None)
    if args.lms == "canvas" and not args.assignment and not template:
        print(f"grader export: name the Canvas column to fill: --assignment "
              f"\"{_new_column(args.source)} (<id>)\" as Canvas's own export names it, or "
              f"--template the gradebook CSV downloaded from Canvas (Grades > Export); a "
              f"name Canvas does not have would create a new assignment", file=sys.stderr)
        return 2
    rows = list(load_records(args.source).values())
    if not rows:
        print(f"grader export: no graded rows in {safe_text(args.source, 200)}", file=sys.stderr)
        return 2
    try:
        policy = courses.find(args.source, getattr(args, "course", None))
        entries = ledger.load(args.source)
        lines = read_template(template) if template and args.lms == "canvas" else None
        column = template_column(lines, args.assignment, _new_column(args.source)) \
            if lines is not None else args.assignment
    except (courses.CourseError, ledger.OverrideError, ExportError) as error:
        print(f"grader export: {safe_text(str(error), 500)}", file=sys.stderr)
        return 2
    for line in orphans(rows, entries):
        print(f"grader export: warning: {line}", file=sys.stderr)
    rows = final_rows(rows, policy, entries)
    missing = getattr(args, "export_missing_as_zero", False)
    from . import feedback_export
    if args.lms == "canvas-comments":
        comments, notes = feedback_export.canvas_comments(args.source, rows, args.out, missing)
        for note in notes:
            print(f"grader export: {note}", file=sys.stderr)
        print(f"Wrote {os.path.join(args.out, 'comments.json')}: {len(comments)} student(s)' "
              f"feedback, and {os.path.join(args.out, 'post_comments.py')}, which posts it "
              f"(CANVAS_TOKEN=... python3 post_comments.py --canvas https://... --course ID "
              f"--assignment ID [--post])")
        return 0
    if args.lms == "moodle-feedback-zip":
        count, notes = feedback_export.moodle_zip(args.source, rows, args.out, missing)
        for note in notes:
            print(f"grader export: {note}", file=sys.stderr)
        print(f"Wrote {args.out}: {count} student(s)' feedback.html and feedback.txt, for "
              f"Moodle's \"Upload multiple feedback files in a zip\"")
        return 0
    if args.lms == "canvas":
        text, notes = canvas_from_template(rows, lines, column, missing) if lines is not None \
            else canvas_text(rows, column, missing)
    elif getattr(args, "with_comments", False):
        text, notes = feedback_export.moodle_rows(args.source, rows, missing)
    else:
        text, notes = moodle_text(rows, missing_as_zero=missing)
    for note in notes:
        print(f"grader export: {note}", file=sys.stderr)
    files.write_bytes(args.out, (BOM + text).encode("utf-8"))
    count = sum(1 for line in list(csv.reader(io.StringIO(text, newline="")))[1:]
                if line and line[0].strip() != "Points Possible")
    print(f"Wrote {args.out}: {count} student(s) for {args.lms}"
          + (f" in the column {column!r}" if args.lms == "canvas" else "")
          + (f", {len(notes)} row(s) left out (see above)" if notes else ""))
    return 0
