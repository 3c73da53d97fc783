"""The gradebook rebuilt from its kept rows: grades.csv with the final scores (gradebook.py),
report.html (html.py) and the files of each student whose adjustment changed
(adjustments.py). `grader grade`, `grader gradebook`, `grader override` and `grader merge`
end with it; nothing is graded.
"""
import os

from . import adjustments, gradebook
from . import html as pages


def rebuild(out_dir, rows, parts=None, course=None, entries=None, assignment=None):
    """Build what derives from the kept rows: grades.csv (final scores), report.html (titled
    with `assignment`'s title; None: the default assignment's), and each student's files
    where their adjustment changed (adjustments.sync). Returns
    (final rows, how many students' files were rewritten). report.html and the students'
    files never raise; grades.csv is written whatever happened to them."""
    rows = list(rows)
    final = gradebook.final_rows(rows, course, entries)
    gradebook.write_gradebook(final, parts if parts is not None else gradebook.parts_of(rows),
                              os.path.join(out_dir, "grades.csv"))
    pages.write_report(final, out_dir, gradebook.orphans(rows, entries), assignment)
    try:
        changed = adjustments.sync(out_dir, final)
    except Exception:
        changed = 0
    return final, changed
