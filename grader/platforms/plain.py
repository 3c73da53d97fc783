"""Plain folders and files: what a name that matches no platform's gets, and `--layout
plain` (students' own folders, a class's files collected by hand, GitHub Classroom's
clones).

The row is named after the file or folder, without the extension (intake.submission_names:
nbgrader-like `submitted/<student>/<assignment>/` files are the student's; collisions get
the parent folder's name, then a counter); that name is the student id when it is one as it
is (intake/layouts.py student_id), which an LMS's export puts in its login column. The time
is the file's own (file-mtime: the newest file in a folder), the last resort, which a copy
changes: it is shown but never charged.
"""
from ..intake import submission_names
from ..intake.layouts import Submission, display_name, student_id
from . import base


class Plain(base.Platform):
    name = "plain"
    title = "plain"
    listed = 10
    tried = 1000

    def find(self, ctx, path, name, is_dir):
        """Anything: plain is tried last."""
        return base.Found(path, "plain", label=name)

    def submissions(self, found, module):
        """One Submission per plain file or folder, named over the whole batch."""
        names = submission_names([f.path for f in found], module)
        return [Submission(f.path, n, student_id(n) if student_id(n) == n else "",
                           display_name(n), "plain") for f, n in zip(found, names)]


PLATFORM = base.register(Plain())
