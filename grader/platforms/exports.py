"""What the exports to an LMS share: which final rows can be sent, the ids of a row, one row
per student, and `Export`, one thing `grader export KIND` writes (a platform lists its own
in `Platform.exports`; each student's feedback as the gradebook holds it: feedback.py).

The rows are the gradebook's final rows (gradebook.final_rows: the instructor's overrides,
then the course's late policy). Rows the grader failed on are left out with a note, never
exported as 0 (a `not gradable` row, whose file was found but does not run, is a real 0 and
is exported); so are `missing work` rows (nothing gradable was found: not a 0 the student
earned) unless `--export-missing-as-zero`, or an instructor's override gave them a score;
so are rows without a student id and rows whose student id another row also has in the same
column (both named in a note: the LMS would keep whichever it read last). A group
submission (Gradescope, ids joined by `;`) gives each member a row. Which column of an
LMS's import a row's ids go to is its platform's `id_kind` (`column`).
"""
import csv
import io

from .. import files
from ..report.gradebook import BOM
from ..textsafety import safe_text
from .base import named


class ExportError(ValueError):
    """An export that cannot be written as asked: one line saying why."""


def score(value):
    """A score as the LMS reads it: a plain number ("85", "0.5")."""
    return f"{float(value):g}"


def members(row):
    """[(id, name)] of the students a row is about (a group: one per member)."""
    ids = [i.strip() for i in str(row.get("student_id") or "").split(";") if i.strip()]
    names = [n.strip() for n in str(row.get("student_name") or "").split(";")]
    if len(names) != len(ids):
        names = [row.get("student_name") or ""] * len(ids)
    return list(zip(ids, names))


def column(row):
    """Which of an LMS's id columns a row's ids go to: its platform's own name for an id
    only that LMS knows ("canvas", "moodle"), else "sis" or "login" (ids in different
    columns never clash)."""
    layout = row.get("layout") or "plain"
    platform = named(layout)
    kind = platform.id_kind if platform is not None else "login"
    return layout if kind == "own" else kind


def foreign(row, lms):
    """The note for a row whose id is another LMS's own, which `lms` does not know."""
    platform = named(row.get("layout") or "plain")
    return (f"left out {safe_text(row.get('name', '?'), 120)}: its id is a "
            f"{platform.id_name if platform else 'student'} id, which {lms} does not know")


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
        elif not members(row):
            notes.append(f"left out {shown}: no student id (grade it with --layout matching "
                         f"how the work arrived)")
        else:
            keep.append(row)
    return one_row_per_student(keep, notes)


def one_row_per_student(rows, notes):
    """A student id in two rows (a name changed between two downloads graded into one
    gradebook, a Gradescope SID alone and in a group) would be exported twice with two
    scores, and the LMS keeps whichever it reads last: such rows are left out, named."""
    seen = {}
    for row in rows:
        for ident, _name in members(row):
            seen.setdefault((column(row), ident), []).append(row)
    twice = {key: found for key, found in seen.items() if len(found) > 1}
    dropped = {id(row) for found in twice.values() for row in found}
    for (_col, ident), found in sorted(twice.items()):
        names = ", ".join(safe_text(r.get("name", "?"), 120) for r in found[:5])
        notes.append(f"left out {names}: student id {safe_text(ident, 100)} is in {len(found)} "
                     f"rows; check which is theirs (grader gradebook), then export again")
    return [row for row in rows if id(row) not in dropped], notes


class Export:
    """One thing `grader export KIND` writes from a gradebook's final rows."""
    kind = ""              # the command's KIND
    help = ""              # what it writes, one clause of the command's help
    feedback = False       # a feedback export (listed after the score exports)
    writes = "file"        # "file", or "folder"
    holds = ""             # a folder export: what it writes in it ("comments.json and ...")
    first_file = ""        # a folder export: the file the usage check looks at

    def refusal(self, args, source):
        """Why the export cannot run as asked, before any row is read (one line), or None."""
        return None

    def prepare(self, args, source):
        """What the export reads besides the rows (ExportError when it cannot)."""
        return None

    def write(self, args, source, rows, state, say):
        """Write the export of the final `rows`; `say(note)` tells what was left out.
        Returns the line that says what was written."""
        raise NotImplementedError


class CsvExport(Export):
    """An export that is one CSV an LMS imports, written with a UTF-8 byte order mark
    (utf-8-sig: Excel on a Chinese Windows reads the names right, and the LMSs read UTF-8
    with or without it)."""

    def csv(self, args, source, rows, state):
        """(the CSV's text, notes on what was left out)."""
        raise NotImplementedError

    def written(self, args, state):
        """What the closing line adds after `for KIND` (" in the column ...")."""
        return ""

    def write(self, args, source, rows, state, say):
        text, notes = self.csv(args, source, rows, state)
        for note in notes:
            say(note)
        files.write_bytes(args.out, (BOM + text).encode("utf-8"))
        count = sum(1 for line in list(csv.reader(io.StringIO(text, newline="")))[1:]
                    if line and line[0].strip() != "Points Possible")
        return (f"Wrote {args.out}: {count} student(s) for {self.kind}"
                + self.written(args, state)
                + (f", {len(notes)} row(s) left out (see above)" if notes else ""))
