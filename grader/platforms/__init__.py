"""The course platforms, one module (or package) each, and the registry the command line
and the exports read their choices from.

    plain.py        files and folders named after the student (the fallback; Classroom's clones)
    nbgrader.py     nbgrader's submitted/ folder; each submission of `grader nbgrader`
    canvas/         Canvas's download, its gradebook import (scores.py), submission comments
                    (comments.py, and the script a course runs, post_comments.py)
    moodle.py       Moodle's download, its grading worksheet (with comments), feedback zip
    gradescope/     Gradescope's export (its metadata: metadata.py), the autograder zip
                    (autograder.py)
    classroom.py    GitHub Classroom: the workflow the student folder carries

Each is one `base.Platform` object, registered when its module is imported; this package
imports every module in it, so a new platform is one new module here (docs/how-to/
add-platform.md). What the platforms share: base.py (what a platform is, the recognition helpers),
exports.py (which rows an LMS gets, a student's feedback, `Export`), recognition.py (the paths
given to `grader grade` → one Submission per student). No platform imports another.

    resolve(paths, layout, module, earlier)   the Batch (recognition.py)
    layouts()                                 --layout's choices
    export_kinds()                            {KIND: Export} of `grader export KIND`
    named(layout), listed()                   a platform by name; all, in list order
"""
import importlib
import pkgutil

from .base import listed, named
from .recognition import layouts, resolve

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")


def export_kinds():
    """{kind: Export} of every platform, in list order: the score exports, then the
    feedback exports."""
    every = [e for platform in listed() for e in platform.exports]
    return {e.kind: e for e in sorted(every, key=lambda e: e.feedback)}


__all__ = ["export_kinds", "layouts", "listed", "named", "resolve"]
