"""Each student's feedback where `nbgrader generate_feedback` puts it:
COURSE/feedback/<student>/<assignment>/.

    feedback.txt      the kit's feedback (grader/report/feedback.py), with any note about
                      what was graded of the submission first
    <notebook>.html   the kit's feedback.html when the grader wrote one, else feedback.txt
                      as a page: `nbgrader release_feedback` hands out every .html file there
                      as the feedback of the notebook it is named after, so the page is
                      named after the notebook (and not also kept as feedback.html, which
                      would be released as the feedback of a notebook called "feedback")

command.py copies timestamp.txt and submission_secret.txt beside them, which
release_feedback needs (or, for a submission copied into submitted/ by hand, writes them:
course.write_release_files).
"""
import html
import os
import shutil

from ..i18n import _
from .. import files


def page(text, title):
    return (f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>{html.escape(title)}'
            f'</title></head>\n<body><pre style="white-space: pre-wrap">{html.escape(text)}'
            f'</pre></body></html>\n')


def write(results_folder, target, notebook, notes=(), title="Feedback"):
    """Copy one student's feedback from the kit's `results_folder` into `target`."""
    os.makedirs(target, exist_ok=True)
    try:
        with open(os.path.join(results_folder, "feedback.txt"), encoding="utf-8") as handle:
            text = handle.read()
    except OSError:
        text = _("The grader wrote no feedback for this submission.") + "\n"
    if notes:
        text = "".join(_("Note: {note}").format(note=n) + "\n" for n in notes) + "\n" + text
    files.write_text(os.path.join(target, "feedback.txt"), text, files.FEEDBACK_BYTES)
    rich = os.path.join(results_folder, "feedback.html")
    if os.path.isfile(rich):
        shutil.copyfile(rich, os.path.join(target, f"{notebook}.html"))
    else:
        files.write_text(os.path.join(target, f"{notebook}.html"), page(text, title))
