"""Each student's feedback where `nbgrader generate_feedback` puts it:
COURSE/feedback/<student>/<assignment>/.

    feedback.txt      the kit's feedback (grader/report/feedback.py), with any note about
                      what was graded of the submission first
    feedback.html     the kit's HTML feedback, when the grader wrote one
    <notebook>.html   what `nbgrader release_feedback` hands the student: nbgrader releases
                      the .html files named after the submitted notebooks; it is the kit's
                      feedback.html, or feedback.txt as a page
"""
import html
import os
import shutil

from ..report import files


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
        text = "The grader wrote no feedback for this submission.\n"
    if notes:
        text = "".join(f"Note: {n}\n" for n in notes) + "\n" + text
    files.write_text(os.path.join(target, "feedback.txt"), text, files.FEEDBACK_BYTES)
    rich = os.path.join(results_folder, "feedback.html")
    if os.path.isfile(rich):
        shutil.copyfile(rich, os.path.join(target, "feedback.html"))
        shutil.copyfile(rich, os.path.join(target, f"{notebook}.html"))
    else:
        files.write_text(os.path.join(target, f"{notebook}.html"), page(text, title))
