"""The kit's scores into nbgrader's gradebook.db, through nbgrader's own API.

The source notebook (notebook.py) has one graded cell per part of the hidden suite, whose
grade_id is the part's name and whose points are the part's points: `nbgrader
generate_assignment` puts them in the gradebook, so nbgrader knows every part's maximum.
Here each student's submission gets a Grade per part: the kit's score as the cell's
`auto_score`, `needs_manual_grade` off. A manual score an instructor gave in formgrader is
left alone (nbgrader lets it win over the automatic one, as with its own autograder).
"""
import warnings

from ..assignment import load


class GradebookProblem(Exception):
    """The course's gradebook does not hold the assignment as the kit released it."""


def assignment_cells(gradebook, assignment, points, notebook_file=None):
    """(notebook name, {part: max score}) of the notebook of `assignment` whose graded
    cells are the suite's parts; GradebookProblem when there is none, or when its points
    differ from the hidden suite's `points` ({part: points}). notebook_file: the kit's
    notebook for it (the declaration's `<module>.ipynb`; None: the default assignment's),
    named in the advice."""
    from nbgrader.api import MissingEntry  # optional extra, heavy: nbgrader only here
    if notebook_file is None:
        notebook_file = load().notebook_file
    try:
        record = gradebook.find_assignment(assignment)
    except MissingEntry:
        raise GradebookProblem(
            f"the gradebook has no assignment {assignment!r}: write its source notebook with "
            f"`grader release --notebook source/{assignment}/{notebook_file}`, then run "
            f"`nbgrader generate_assignment {assignment}`") from None
    seen = []
    for notebook in record.notebooks:
        cells = {c.name: c.max_score for c in [*notebook.grade_cells, *notebook.task_cells]}
        seen.append(f"{notebook.name} ({', '.join(sorted(cells)) or 'no graded cells'})")
        if set(points) <= set(cells):
            wrong = [f"{p}: {cells[p]:g} in the gradebook, {points[p]:g} in the hidden suite"
                     for p in points if abs(cells[p] - points[p]) > 1e-9]
            if wrong:
                raise GradebookProblem(
                    f"the points of {assignment}/{notebook.name} differ from the hidden suite's "
                    f"({'; '.join(wrong)}): release the notebook again (`grader release "
                    f"--notebook ...`, then `nbgrader generate_assignment {assignment} --force`)")
            return notebook.name, {p: cells[p] for p in points}
    raise GradebookProblem(
        f"no notebook of {assignment} has a graded cell per part of the hidden suite "
        f"({', '.join(points)}); it has: {'; '.join(seen) or 'no notebooks'}. Release the "
        f"source notebook that `grader release --notebook` writes")


def student_names(gradebook):
    """{student id: "First Last"} of the course's students, as nbgrader's database has them."""
    names = {}
    for student in gradebook.students:
        name = " ".join(n for n in (student.first_name, student.last_name) if n)
        names[student.id] = name
    return names


def record(gradebook, assignment, notebook, student, timestamp, scores, penalty=0.0):
    """Write one student's `scores` ({part: score}) into the gradebook, creating the
    student and the submission as needed. `timestamp` (timestamp.txt's text, or None) is
    the submission's time, which `nbgrader export` shows; `penalty` (points the course's
    late policy takes, grader/course.py) is the notebook's late_submission_penalty, which
    nbgrader subtracts from the score in `nbgrader export` and formgrader."""
    gradebook.update_or_create_student(student)
    extra = {"timestamp": timestamp} if timestamp else {}
    with warnings.catch_warnings():
        # nbgrader's own add_submission autoflushes half-built objects under SQLAlchemy 2
        # (three "not in session" SAWarnings per new submission, `nbgrader autograde`
        # prints them too); the rows are written all the same
        warnings.filterwarnings("ignore", message=r"Object of type <Submitted\w+> not in session")
        gradebook.update_or_create_submission(assignment, student, **extra)
    for part, score in scores.items():
        grade = gradebook.find_grade(part, notebook, assignment, student)
        grade.auto_score = float(score)
        grade.needs_manual_grade = False
    submitted = gradebook.find_submission_notebook(notebook, assignment, student)
    submitted.late_submission_penalty = float(penalty) if penalty else None
    gradebook.db.commit()


def part_scores(result, row, parts):
    """{part: score} of one graded submission: from its final gradebook row (the kit's
    score with the instructor's part overrides, gradebook.final_row), else from the result."""
    if row is not None and isinstance(row.get("parts"), dict):
        by_part = {p: pair[0] for p, pair in row["parts"].items()}
    else:
        by_part = {p: score for p, (score, _) in result.by_part().items()}
    return {p: float(by_part.get(p, 0.0)) for p in parts}
