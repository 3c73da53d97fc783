"""`grader nbgrader --course DIR ASSIGNMENT [STUDENT...]`: grade an nbgrader course's
submissions with the kit, and put the scores in nbgrader's gradebook.

    1. the gradebook must hold ASSIGNMENT as released from the kit's source notebook (one
       graded cell per part, with the hidden suite's points): scores.assignment_cells
    2. each student's COURSE/submitted/<student>/ASSIGNMENT/<notebook>.ipynb is copied
       (regular files only) into a folder named after the student: course.stage
    3. the kit grades them as one batch, sandboxed, never in nbgrader's kernel; its own
       results (results.json, feedback.txt, grades.csv) go to --out, by default
       COURSE/grader/ASSIGNMENT, which is a kit gradebook like any other: a submission
       unchanged since its last grading is not graded again (--force regrades)
    4. each student's part scores go into gradebook.db (scores.record), their feedback to
       COURSE/feedback/<student>/ASSIGNMENT/ (feedback.write), and the graded notebook to
       COURSE/autograded/<student>/ASSIGNMENT/, where formgrader opens it

A submission the grader itself failed on gets nothing in the gradebook (never a silent
zero) and makes the exit status 2; the next run grades it again.
"""
import os
import shutil
import sys
import tempfile

from . import require_nbgrader


def _say(message):
    print(f"grader nbgrader: {message}", file=sys.stderr)


def main(args, options):
    require_nbgrader("grader nbgrader")
    from nbgrader.api import Gradebook

    from ..grade import BatchInterrupted, SuiteFailed, grade_batch
    from ..report import gradebook as kit_gradebook
    from ..sandbox.isolation import IsolationUnavailable
    from . import course, feedback, notebook, scores

    if not os.path.isdir(args.course):
        _say(f"--course {args.course} is not a folder")
        return 2
    coursedir = course.load_coursedir(args.course)
    points = notebook.part_points(options.hidden_tests)
    try:
        with Gradebook(coursedir.db_url, coursedir.course_id) as book:
            notebook_name, _ = scores.assignment_cells(book, args.assignment, points)
    except scores.GradebookProblem as problem:
        _say(str(problem))
        return 2
    entries, notes = course.submitted(coursedir, args.assignment, args.students)
    for note in notes:
        print(f"  {note}")
    if not entries:
        _say(f"nothing to grade: no submissions of {args.assignment} in "
             f"{coursedir.format_path(coursedir.submitted_directory, '*', args.assignment)}")
        return 2
    out_dir = args.out or os.path.join(coursedir.root, "grader", args.assignment)
    print(f"Grading {len(entries)} submission(s) of {args.assignment} ({notebook_name}.ipynb); "
          f"the kit's results in {out_dir}")
    staging = tempfile.mkdtemp(prefix="attnkit-nbgrader-")
    os.chmod(staging, 0o711)
    try:
        paths, stage_notes = [], []
        for entry in entries:
            # stage/<student>/<student>: the kit names a submission after its folder
            target = os.path.join(staging, entry.student, entry.student)
            stage_notes.append(course.stage(entry, notebook_name, target))
            paths.append(target)
        results = grade_batch(paths, out_dir, options, jobs=args.jobs, force=args.force)
    except (SuiteFailed, IsolationUnavailable) as error:
        _say(f"nothing was graded: {error}")
        return 2
    except BatchInterrupted as stop:
        _say(f"interrupted: {stop.graded} of {stop.total} graded, nothing written to the "
             f"gradebook; the same command finishes (what was graded is not graded again)")
        return 130
    finally:
        shutil.rmtree(staging, ignore_errors=True)

    kept = kit_gradebook.load_records(out_dir)
    failed = []
    with Gradebook(coursedir.db_url, coursedir.course_id) as book:
        for entry, result, notes in zip(entries, results, stage_notes):
            if result.status == "grader error":
                failed.append(entry.student)
                print(f"  {entry.student}: grader error, nothing written "
                      f"(see {os.path.join(out_dir, result.folder, 'grader-errors.log')})")
                continue
            part = scores.part_scores(result, kept.get(result.name), list(points))
            scores.record(book, args.assignment, notebook_name, entry.student,
                          _timestamp(entry.timestamp), part)
            target = coursedir.format_path(coursedir.feedback_directory, entry.student,
                                           args.assignment)
            feedback.write(os.path.join(out_dir, result.folder), target, notebook_name, notes,
                           title=f"{args.assignment}: {entry.student}")
            course.copy_submission_files(entry, target)
            course.copy_submission_files(entry, coursedir.format_path(
                coursedir.autograded_directory, entry.student, args.assignment), notebook_name)
            print(f"  {entry.student}: {sum(part.values()):g}/{sum(points.values()):g}"
                  f"{' (unchanged, kept)' if result.unchanged else ''}")
    print(f"Wrote {len(entries) - len(failed)} student(s)' scores to {coursedir.db_url} and "
          f"their feedback to {coursedir.format_path(coursedir.feedback_directory, '<student>', args.assignment)}")
    if failed:
        _say(f"the grader itself failed on: {', '.join(failed)}; run the same command again")
        return 2
    return 0


def _timestamp(text):
    """timestamp.txt's time when nbgrader can read it, else None (the submission keeps none)."""
    if not text:
        return None
    from nbgrader.utils import parse_utc
    try:
        parse_utc(text)
    except (ValueError, OverflowError, TypeError):
        return None
    return text
