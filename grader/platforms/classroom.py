"""GitHub Classroom: the assignment's template repository runs the public self-checks as
Classroom's autograding, and the grade of record comes from grading the students' clones.

What Classroom needs is one file of the student folder, `.github/workflows/classroom.yml`
(one step per CPU part, running that part's public self-checks, worth the part's points),
which `grader release` writes with the rest of the folder: `files` delegates to
release/generated.py, where the student folder is built (release sits below the platforms,
so the workflow stays there). The clones (`gh classroom clone student-repos`) are graded as
plain folders (platforms/plain.py), so Classroom recognises no download of its own and takes
no export: its score is the students' early signal, never sent back.
"""
from ..release import generated
from . import base


class Classroom(base.Platform):
    name = "classroom"
    title = "GitHub Classroom"
    listed = 60
    recognises = False

    def files(self, assignment):
        """{path in the student folder: text} of what Classroom runs."""
        return {generated.WORKFLOW: generated.workflow(assignment)}


PLATFORM = base.register(Classroom())
