"""`grader export canvas`: the final scores as the CSV Canvas imports (Grades > Import).

The columns of Canvas's own gradebook export, `Student`, `ID`, `SIS User ID`, `SIS Login
ID`, `Section`, then one column per assignment, named as Canvas names it, `Attention
(12345)` (`--assignment`, required: a name Canvas does not have makes it create a new
assignment; or `--template`, the gradebook CSV downloaded from Canvas, of which only this
assignment's column is filled: `canvas_from_template`). A `Points Possible` row follows the
header, as in Canvas's export. Canvas matches a row on `ID` (its user id: what a Canvas
download names), else `SIS User ID` (where an institution's id goes: a Gradescope SID),
else `SIS Login ID` (nbgrader's and plain names); rows whose id is another LMS's own (a
Moodle participant id) are left out.

    Student,ID,SIS User ID,SIS Login ID,Section,Attention (12345)
    Points Possible,,,,,100
    wangli,10000,,,,100

Canvas takes no lateness (an extra column would be read as another assignment), so
lateness, the raw score and the penalty are in grades.csv and report.html. (Checked against
its source: app/models/gradebook_importer.rb makes every column after `Section` an
assignment and finds its header with row[0].include?("Student"), which the BOM does not
disturb.) Every text cell is neutralised for spreadsheets (gradebook.text_cell).
"""
import csv
import io

from ... import files
from ...assignment import default_name
from ...report.gradebook import recorded_assignment, text_cell
from ...textsafety import safe_text
from ..exports import CsvExport, ExportError, column, exportable, foreign, members, score

CANVAS_COLUMNS = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
CANVAS_IDENTITY = ("Student", "ID", "SIS User ID", "SIS Login ID", "Integration ID",
                   "Root Account", "Section")
# exports.column of a row -> the Canvas column its ids go to (another LMS's own: none)
CANVAS_KEYS = {"canvas": "ID", "sis": "SIS User ID", "login": "SIS Login ID"}
TEMPLATE_BYTES = 16 * 1024 * 1024


def _key(row):
    """The Canvas column a row's ids go to, or None for another LMS's own ids."""
    return CANVAS_KEYS.get(column(row))


def canvas_text(rows, assignment="Attention", missing_as_zero=False):
    """The Canvas gradebook import CSV for gradebook rows (final_rows), and the notes on
    what was left out."""
    keep, notes = exportable(rows, missing_as_zero)
    handle = io.StringIO(newline="")
    writer = csv.writer(handle)
    writer.writerow(CANVAS_COLUMNS + [text_cell(assignment)])
    top = max((float(r.get("max") or 0) for r in keep), default=0)
    writer.writerow(["Points Possible", "", "", "", "", score(top)])
    for row in keep:
        key = _key(row)
        if key is None:
            notes.append(foreign(row, "Canvas"))
            continue
        for ident, name in members(row):
            ids = [ident if key == k else "" for k in ("ID", "SIS User ID", "SIS Login ID")]
            writer.writerow([text_cell(name)] + [text_cell(i) for i in ids] + ["",
                            score(row["total"])])
    return handle.getvalue(), notes


def new_column(source):
    """The graded assignment's name, capitalized (rows from before assignments were declared:
    the default one's): what its Canvas column is likely called."""
    return (recorded_assignment(source) or default_name()).capitalize()


def read_template(path):
    """The rows of a gradebook CSV downloaded from Canvas (Grades > Export), as csv reads
    them (a BOM and Excel's re-save tolerated)."""
    text = files.read_text(path, TEMPLATE_BYTES, ExportError,
                           name=f"--template {safe_text(path, 200)}", hint=" (save it as CSV UTF-8)")
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


def canvas_from_template(rows, lines, column_name, missing_as_zero=False):
    """The Canvas import CSV built on the instructor's own Canvas export: its identity
    columns and its students, with only `column_name` filled from the final rows (no other
    assignment is sent back, so nothing graded in Canvas meanwhile is overwritten); the
    template's students without a row here are left out (Canvas keeps their grades)."""
    keep, notes = exportable(rows, missing_as_zero)
    header = [h.strip() for h in lines[0]]
    identity = [i for i, h in enumerate(header) if h in CANVAS_IDENTITY]
    at = header.index(column_name)
    scores = {}
    for row in keep:
        key = _key(row)
        if key is None:
            notes.append(foreign(row, "Canvas"))
            continue
        for ident, _name in members(row):
            scores[(key, ident)] = (row, score(row["total"]))
    handle = io.StringIO(newline="")
    writer = csv.writer(handle)
    writer.writerow([text_cell(header[i]) for i in identity] + [text_cell(column_name)])
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


def add_arguments(parser):
    """`grader export`'s Canvas options."""
    parser.add_argument("--assignment", default=None,
                        help='Canvas: the assignment column, as Canvas names it in its export, '
                             'e.g. "Attention (12345)" (needed, or --template)')
    parser.add_argument("--template", default=None, metavar="CSV",
                        help="Canvas: the gradebook CSV downloaded from Canvas (Grades > "
                             "Export): its students and identity columns, and the one column "
                             "of this assignment (--assignment, or the one named after it), "
                             "filled; nothing else is sent back")


class ScoresExport(CsvExport):
    kind = "canvas"
    help = "canvas: the scores"

    def refusal(self, args, source):
        if not args.assignment and not getattr(args, "template", None):
            return (f"name the Canvas column to fill: --assignment \"{new_column(source)} "
                    f"(<id>)\" as Canvas's own export names it, or --template the gradebook "
                    f"CSV downloaded from Canvas (Grades > Export); a name Canvas does not "
                    f"have would create a new assignment")
        return None

    def prepare(self, args, source):
        """(the template's lines or None, the column to fill)."""
        template = getattr(args, "template", None)
        if not template:
            return None, args.assignment
        lines = read_template(template)
        return lines, template_column(lines, args.assignment, new_column(source))

    def csv(self, args, source, rows, state):
        lines, column_name = state
        missing = getattr(args, "export_missing_as_zero", False)
        if lines is not None:
            return canvas_from_template(rows, lines, column_name, missing)
        return canvas_text(rows, column_name, missing)

    def written(self, args, state):
        return f" in the column {state[1]!r}"


EXPORT = ScoresExport()
