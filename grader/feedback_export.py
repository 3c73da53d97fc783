"""Each student's feedback back through their LMS: what `grader export` writes for it.

The text returned is the student's own feedback.txt (and, as a file, feedback.html) from the
gradebook folder: the disclosure level and the language they were graded with, the
instructor-adjustment block included. A student's files must show the final score that is
exported with them (results.json's `extra_data.adjustment` is the final row's adjustment):
a student whose files lag behind (the course file or an override changed, and the gradebook
was not rebuilt since) is left out with a note, never sent a score their feedback does not
give. Each text is capped at RETURN_BYTES (the file's own cap is larger; feedback.txt itself
keeps to 12 KB).

- Moodle, comments (`moodle_comment`): the offline grading worksheet's `Feedback comments`
  column, which Moodle's assignfeedback_offline importer reads for the assignfeedback_comments
  plugin (get_editor_fields: 'comments' => get_string('pluginname') = "Feedback comments") and
  stores with set_editor_text as the comment's HTML (FORMAT_HTML): the text goes in as
  `<pre>` + the escaped feedback.txt + `</pre>`, which Moodle shows as the same lines. The
  escape leaves no `"` in the cell, so PHP's fgetcsv (escape character `\\`) reads it as
  Python's csv wrote it.
- Moodle, files (`moodle_zip`): the zip of "Upload multiple feedback files in a zip"
  (assignfeedback_file's importziplib.php): a folder per student named
  `<full name>_<participant id>_assignfeedback_file_`, which is_valid_filename_for_import
  splits on `_` (at most 5 pieces: the second is the participant id, the third and fourth the
  plugin), holding feedback.html and feedback.txt. A `_` in a name would move the id, so a
  name's `_` (and `/`) become spaces, as in Moodle's own download.
- Canvas (`canvas_comments`): Canvas's re-upload of a submissions zip attaches each file under
  the *student's* file name (assignment.rb, infer_comment_context_from_filename:
  display_name = the student's attachment's), so feedback.html would reach them named
  attention.py; the submission-comment API is used instead: comments.json (Canvas user id,
  or sis_user_id:/sis_login_id: as the score export's columns, and the text) and
  post_comments.py (grader/canvas_comments.py, standard library only), which a course runs
  with its own token.
"""
import html
import json
import os
import shutil
import zipfile

from . import export
from . import files
from .report import adjustments
from .report.gradebook import text_cell
from .textsafety import safe_text

RETURN_BYTES = 32 * 1024          # one student's returned text (Canvas keeps 64 KB - 1)
HTML_BYTES = 4 * 1024 * 1024      # feedback.html read back for the zip
MOODLE_COMMENTS = "Feedback comments"
MOODLE_PLUGIN = "assignfeedback_file"
CANVAS_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "canvas_comments.py")


def _read(path, limit):
    """A student's file from the gradebook: a regular file, never through a link, at most
    `limit` bytes; None when it is not there."""
    try:
        if os.path.islink(path) or not os.path.isfile(path) or os.path.getsize(path) > limit:
            return None
        with open(path, encoding="utf-8") as handle:
            return handle.read(limit + 1)
    except (OSError, UnicodeDecodeError):
        return None


def _folder(out_dir, row):
    folder = row.get("folder")
    if not isinstance(folder, str) or not folder or "/" in folder or folder in (".", ".."):
        return None
    return os.path.join(out_dir, folder)


def feedback_of(out_dir, row):
    """(feedback.txt's text, feedback.html's text or None, why not) of a final row: the
    text is None, with the reason, when the files are missing or lag behind the row's final
    score."""
    folder = _folder(out_dir, row)
    if folder is None:
        return None, None, "no folder in the gradebook"
    text = _read(os.path.join(folder, "feedback.txt"), files.FEEDBACK_BYTES)
    if text is None:
        return None, None, "no feedback.txt in its folder"
    results = _read(os.path.join(folder, "results.json"), 4 * files.RESULTS_BYTES)
    try:
        shown = json.loads(results).get("extra_data", {}).get("adjustment") if results else None
    except (ValueError, AttributeError):
        shown = None
    if shown != adjustments.wanted(row):
        return None, None, ("its feedback files do not show the final score (run grader "
                            "gradebook with the same course file, then export again)")
    page = _read(os.path.join(folder, "feedback.html"), HTML_BYTES)
    return files.cap_bytes(text, RETURN_BYTES), page, None


def _with_feedback(out_dir, rows, notes):
    """[(row, text, page)] for the rows whose feedback can be returned; notes say who not."""
    found = []
    for row in rows:
        text, page, why = feedback_of(out_dir, row)
        if text is None:
            notes.append(f"left out {safe_text(row.get('name', '?'), 120)}'s feedback: {why}")
            continue
        found.append((row, text, page))
    return found


def moodle_comment(text):
    """The worksheet's Feedback comments cell: the text as HTML Moodle shows line for line."""
    return "<pre>" + html.escape(text, quote=True) + "</pre>"


def moodle_rows(out_dir, rows, missing_as_zero=False, now=None):
    """The grading worksheet with a Feedback comments column: (CSV text, notes). A student
    whose feedback cannot be returned keeps the grade, with an empty comment and a note."""
    import csv
    import io
    text, notes = export.moodle_text(rows, now=now, missing_as_zero=missing_as_zero)
    moodle = [r for r in export.exportable(rows, missing_as_zero)[0]
              if (r.get("layout") or "plain") == "moodle"]
    comments = {}
    for row, said, _page in _with_feedback(out_dir, moodle, notes):
        for ident, _name in export._members(row):
            comments[export.MOODLE_PARTICIPANT + ident] = moodle_comment(said)
    lines = list(csv.reader(io.StringIO(text, newline="")))
    handle = io.StringIO(newline="")
    writer = csv.writer(handle)
    # after the grade: Moodle's importer reads a feedback column only at an index that is
    # not 0 (importgradeslib.php: `if (!empty($details['index']))`)
    writer.writerow(lines[0] + [MOODLE_COMMENTS])
    for line in lines[1:]:
        writer.writerow(line + [comments.get(line[0], "")])
    return handle.getvalue(), notes


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
    keep, notes = export.exportable(rows, missing_as_zero)
    moodle = []
    for row in keep:
        if (row.get("layout") or "plain") != "moodle":
            notes.append(f"left out {safe_text(row.get('name', '?'), 120)}: not from a Moodle "
                         f"download, so it has no Moodle participant id")
        else:
            moodle.append(row)
    count = 0
    partial = target + ".part"
    with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as archive:
        for row, text, page in _with_feedback(out_dir, moodle, notes):
            for ident, name in export._members(row):
                folder = f"{_moodle_name(name)}_{ident}_{MOODLE_PLUGIN}_"
                archive.writestr(f"{folder}/feedback.txt", text.encode("utf-8"))
                if page is not None:
                    archive.writestr(f"{folder}/feedback.html", page.encode("utf-8"))
                count += 1
    os.replace(partial, target)
    return count, notes


def canvas_user(row, ident):
    """The :user_id Canvas's API takes for one of a row's ids (as the score export's columns:
    a Canvas download's user id, a Gradescope SID as sis_user_id, a name as sis_login_id)."""
    layout = row.get("layout") or "plain"
    if layout == "canvas":
        return ident
    return f"sis_user_id:{ident}" if layout == "gradescope" else f"sis_login_id:{ident}"


def canvas_comments(out_dir, rows, target_dir, missing_as_zero=False):
    """Write target_dir/comments.json and target_dir/post_comments.py; returns (comments,
    notes)."""
    keep, notes = export.exportable(rows, missing_as_zero)
    canvas = []
    for row in keep:
        if (row.get("layout") or "plain") == "moodle":
            notes.append(f"left out {safe_text(row.get('name', '?'), 120)}: its id is a Moodle "
                         f"participant id, which Canvas does not know")
        else:
            canvas.append(row)
    comments = []
    for row, text, _page in _with_feedback(out_dir, canvas, notes):
        for ident, name in export._members(row):
            comments.append({"user": canvas_user(row, ident), "name": text_cell(name),
                             "score": row.get("total"), "text": text})
    os.makedirs(target_dir, exist_ok=True)
    files.write_bytes(os.path.join(target_dir, "comments.json"), json.dumps(
        {"format": "attention-kit canvas comments 1", "comments": comments},
        ensure_ascii=False, indent=1).encode("utf-8"))
    script = os.path.join(target_dir, "post_comments.py")
    shutil.copyfile(CANVAS_SCRIPT, script)
    os.chmod(script, 0o755)
    return comments, notes
