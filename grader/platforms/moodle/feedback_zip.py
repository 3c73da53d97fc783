"""`grader export moodle-feedback-zip`: each student's feedback as the zip Moodle uploads.

The zip of "Upload multiple feedback files in a zip"
(assignfeedback_file's importziplib.php): a folder per student named
`<full name>_<participant id>_assignfeedback_file_`, which is_valid_filename_for_import
splits on `_` (at most 5 pieces: the second is the participant id, the third and fourth the
plugin), holding feedback.html and feedback.txt. A `_` in a name would move the id, so a
name's `_` (and `/`) become spaces, as in Moodle's own download.
"""
import os
import zipfile

from ...textsafety import safe_text
from ..exports import Export, exportable, members
from ..feedback import with_feedback
from .worksheet import not_moodle

MOODLE_PLUGIN = "assignfeedback_file"


def _moodle_name(name):
    """A full name as a folder name Moodle's importer splits right: no `_` (it would move
    the participant id), no path separator, no control character, not empty."""
    cleaned = safe_text(str(name or ""), 200)
    for bad in ("_", "/", "\\"):
        cleaned = cleaned.replace(bad, " ")
    cleaned = " ".join("".join(c if c.isprintable() else " " for c in cleaned).split())
    return cleaned.lstrip(".~") or "student"


def moodle_zip(out_dir, rows, target, missing_as_zero=False):
    """Write the feedback zip Moodle's "Upload multiple feedback files in a zip" takes;
    returns (students in it, notes)."""
    keep, notes = exportable(rows, missing_as_zero)
    moodle = []
    for row in keep:
        if (row.get("layout") or "plain") != "moodle":
            notes.append(not_moodle(row))
        else:
            moodle.append(row)
    count = 0
    partial = target + ".part"
    with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as archive:
        for row, text, page in with_feedback(out_dir, moodle, notes):
            for ident, name in members(row):
                folder = f"{_moodle_name(name)}_{ident}_{MOODLE_PLUGIN}_"
                archive.writestr(f"{folder}/feedback.txt", text.encode("utf-8"))
                if page is not None:
                    archive.writestr(f"{folder}/feedback.html", page.encode("utf-8"))
                count += 1
    os.replace(partial, target)
    return count, notes


class FeedbackZipExport(Export):
    kind = "moodle-feedback-zip"
    help = "moodle-feedback-zip: the zip of feedback files Moodle uploads"
    feedback = True

    def write(self, args, source, rows, state, say):
        count, notes = moodle_zip(source, rows, args.out,
                                  getattr(args, "export_missing_as_zero", False))
        for note in notes:
            say(note)
        return (f"Wrote {args.out}: {count} student(s)' feedback.html and feedback.txt, for "
                f"Moodle's \"Upload multiple feedback files in a zip\"")



EXPORT = FeedbackZipExport()
