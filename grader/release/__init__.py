"""`grader release`: the student's files, generated from the instructor's solution and the
assignment's declaration. One module per concern, in the order they build on each other:

    core.py       the solution -> the skeleton (find the solution regions, stub them, drop
                  instructor-only text, pick a language, check nothing leaks); imports
                  nothing of the kit, so nbgrader_bridge/notebook.py builds on it too
    generated.py  the per-assignment files the declaration says all of: the Classroom
                  workflow and the READMEs' points tables; the public self-checks' per-part
                  selection, checked
    folder.py     the whole student folder in a language: the kit's folder, the skeleton,
                  the generated files and the earlier assignments' solutions it provides as
                  given code (core.given), written fresh

`grader release` and `grader release --check` (the notebook too, through
nbgrader_bridge/notebook.py) are commands/release.py: this package imports nothing above it,
so the notebook writer builds on its core without a cycle.
"""
from .core import (BEGIN, BEGIN_INSTRUCTOR, BEGIN_ZH, END, END_INSTRUCTOR, END_ZH,  # noqa: F401
                   LANGUAGES, STUB_CALL, CheckLanguage, CheckNoLeak, DropInstructorOnly,
                   FindRegions, Region, ReleaseError, SelectLanguage, Source, StubRegions,
                   release)
from .folder import student_folder  # noqa: F401

