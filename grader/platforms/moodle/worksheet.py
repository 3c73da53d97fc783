"""`grader export moodle`: the final scores as Moodle's grading worksheet, with each student's
feedback as its comments (`--with-comments`); rows of a Moodle download only.

- `moodle`: the grading worksheet ("Upload grading worksheet", with the offline grading
  worksheet enabled): `Identifier` (`Participant 10006`), `Full name`, `Grade`, `Maximum
  Grade` and `Last modified (grade)`, which Moodle requires (the time of the export, so the
  import is newer than any grade already there). Moodle takes no lateness (its worksheet
  reads only the identifier, the grade and the time of the grade). (Checked against its
  source: the assignfeedback_offline importer looks up `Identifier`, `Grade` and `Last
  modified (grade)`, plus the columns of enabled feedback plugins, after csv_import_reader
  removed a BOM.)

      Identifier,Full name,Grade,Maximum Grade,Last modified (grade)
      Participant 10006,Fang Wu,85,100,2026-12-02 23:30:00 +0000

- `moodle --with-comments`: the worksheet's `Feedback comments` column too, which the
  importer reads for the assignfeedback_comments plugin (get_editor_fields: 'comments' =>
  get_string('pluginname') = "Feedback comments") and stores with set_editor_text as the
  comment's HTML (FORMAT_HTML): the text goes in as `<pre>` + the escaped feedback.txt +
  `</pre>`, which Moodle shows as the same lines. The escape leaves no `"` in the cell, so
  PHP's fgetcsv (escape character `\\`) reads it as Python's csv wrote it.
"""
import csv
import html
import io
import time

from ...report.gradebook import text_cell
from ...textsafety import safe_text
from ..exports import CsvExport, exportable, members, score
from ..feedback import with_feedback

MOODLE_COLUMNS = ["Identifier", "Full name", "Grade", "Maximum Grade", "Last modified (grade)"]
MOODLE_PARTICIPANT = "Participant "
MOODLE_COMMENTS = "Feedback comments"


def moodle_text(rows, now=None, missing_as_zero=False):
    """The Moodle grading worksheet CSV for gradebook rows (final_rows), and the notes."""
    keep, notes = exportable(rows, missing_as_zero)
    stamp = time.strftime("%Y-%m-%d %H:%M:%S +0000", time.gmtime(now))
    handle = io.StringIO(newline="")
    writer = csv.writer(handle)
    writer.writerow(MOODLE_COLUMNS)
    for row in keep:
        if (row.get("layout") or "plain") != "moodle":
            notes.append(not_moodle(row))
            continue
        for ident, name in members(row):
            writer.writerow([text_cell(MOODLE_PARTICIPANT + ident), text_cell(name),
                             score(row["total"]), score(row.get("max") or 0), stamp])
    return handle.getvalue(), notes


def not_moodle(row):
    """The note for a row that is not from a Moodle download."""
    return (f"left out {safe_text(row.get('name', '?'), 120)}: not from a Moodle download, so "
            f"it has no Moodle participant id")


def moodle_comment(text):
    """The worksheet's Feedback comments cell: the text as HTML Moodle shows line for line."""
    return "<pre>" + html.escape(text, quote=True) + "</pre>"


def moodle_rows(out_dir, rows, missing_as_zero=False, now=None):
    """The grading worksheet with a Feedback comments column: (CSV text, notes). A student
    whose feedback cannot be returned keeps the grade, with an empty comment and a note."""
    text, notes = moodle_text(rows, now=now, missing_as_zero=missing_as_zero)
    moodle = [r for r in exportable(rows, missing_as_zero)[0]
              if (r.get("layout") or "plain") == "moodle"]
    comments = {}
    for row, said, _page in with_feedback(out_dir, moodle, notes):
        for ident, _name in members(row):
            comments[MOODLE_PARTICIPANT + ident] = moodle_comment(said)
    lines = list(csv.reader(io.StringIO(text, newline="")))
    handle = io.StringIO(newline="")
    writer = csv.writer(handle)
    # after the grade: Moodle's importer reads a feedback column only at an index that is
    # not 0 (importgradeslib.php: `if (!empty($details['index']))`)
    writer.writerow(lines[0] + [MOODLE_COMMENTS])
    for line in lines[1:]:
        writer.writerow(line + [comments.get(line[0], "")])
    return handle.getvalue(), notes


class WorksheetExport(CsvExport):
    kind = "moodle"
    help = "moodle: the scores (--with-comments: and each student's feedback)"

    def csv(self, args, source, rows, state):
        missing = getattr(args, "export_missing_as_zero", False)
        if getattr(args, "with_comments", False):
            return moodle_rows(source, rows, missing)
        return moodle_text(rows, missing_as_zero=missing)



EXPORT = WorksheetExport()
