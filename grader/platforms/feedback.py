"""Each student's feedback as an LMS gets it back (Canvas's comments, Moodle's worksheet
comments and feedback zip).

A student's feedback (`feedback_of`) is their own feedback.txt (and feedback.html as a
file) from the gradebook folder: the disclosure level and the language they were graded
with, the instructor-adjustment block included. Their files must show the final score that
is exported with them (results.json's `extra_data.adjustment` is the final row's
adjustment): a student whose files lag behind (the course file or an override changed, and
the gradebook was not rebuilt since) is left out with a note, never sent a score their
feedback does not give. Each text is capped at RETURN_BYTES (feedback.txt keeps to 12 KB).
"""
import json
import os

from .. import files
from ..report import adjustments
from ..textsafety import safe_text

RETURN_BYTES = 32 * 1024          # one student's returned text (Canvas keeps 64 KB - 1)
HTML_BYTES = 4 * 1024 * 1024      # feedback.html read back for a zip


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


def with_feedback(out_dir, rows, notes):
    """[(row, text, page)] for the rows whose feedback can be returned; notes say who not."""
    found = []
    for row in rows:
        text, page, why = feedback_of(out_dir, row)
        if text is None:
            notes.append(f"left out {safe_text(row.get('name', '?'), 120)}'s feedback: {why}")
            continue
        found.append((row, text, page))
    return found
