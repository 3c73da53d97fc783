"""`grader nbgrader --course DIR ASSIGNMENT [STUDENT...]`: grade an nbgrader course's
submissions with the kit, and put the scores in nbgrader's gradebook.

    1. the gradebook must hold ASSIGNMENT as released from the kit's source notebook (one
       graded cell per part, with the declaration's points): scores.assignment_cells
    2. each student's COURSE/submitted/<student>/ASSIGNMENT/<notebook>.ipynb is copied
       (regular files only) into a folder named after the student: course.stage; for an
       assignment that builds on one whose module students provide, their module too (from
       beside the notebook, else from their submission of the earlier assignment)
    3. the kit grades them as one batch, sandboxed, never in nbgrader's kernel; its own
       results (results.json, feedback.txt, grades.csv) go to --out, by default
       COURSE/grader/ASSIGNMENT, which is a kit gradebook like any other: a submission
       unchanged since its last grading is not graded again (--force regrades)
    4. each student's part scores go into gradebook.db (scores.record), their feedback to
       COURSE/feedback/<student>/ASSIGNMENT/ (feedback.write), and the graded notebook to
       COURSE/autograded/<student>/ASSIGNMENT/, where formgrader opens it; a submission
       copied there by hand gets the files `nbgrader release_feedback` needs
       (course.write_release_files), and one line names those students

A submission the grader itself failed on gets nothing in the gradebook (never a silent
zero) and makes the exit status 2; the next run grades it again. A folder where nothing
gradable was found ("missing work") gets its feedback but no score: nbgrader export then
shows it as not submitted, not as an earned 0. A folder in submitted/
whose name is not a student in gradebook.db is graded but nothing is written for it (the
default exchange lets `nbgrader submit --student` choose any name); one line names them.
"""
import os
import shutil
import sys
import tempfile

from . import require_nbgrader


def _say(message):
    print(f"grader nbgrader: {message}", file=sys.stderr)


def _shown(student):
    """A student's folder name for one line of the console: the name comes from
    submitted/, which `nbgrader submit --student` lets a student choose."""
    from ..textsafety import safe_text
    return " ".join(safe_text(student, 100).split()) or "?"


def main(args, options):
    require_nbgrader("grader nbgrader")
    from nbgrader.api import Gradebook

    from .. import course as courses
    from .. import overrides as ledger
    from ..grade import BatchInterrupted, SuiteFailed, grade_batch
    from ..report import gradebook as kit_gradebook
    from ..sandbox.isolation import IsolationUnavailable
    from . import course, feedback, notebook, scores

    if not os.path.isdir(args.course):
        _say(f"--course {args.course} is not a folder")
        return 2
    coursedir = course.load_coursedir(args.course)
    from .. import assignment
    declared = getattr(args, "kit_assignment", None) or assignment.load()
    points = notebook.part_points(declared)
    try:
        with Gradebook(coursedir.db_url, coursedir.course_id) as book:
            notebook_name, _ = scores.assignment_cells(book, args.assignment, points,
                                                       declared.notebook_file)
            names = scores.student_names(book)
    except scores.GradebookProblem as problem:
        _say(str(problem))
        return 2
    out_dir = args.out or os.path.join(coursedir.root, "grader", args.assignment)
    course_file = getattr(args, "course_file", None)
    try:  # the late policy and the overrides are read before anything is graded
        policy = courses.find(out_dir, course_file)
        ledger.load(out_dir)
    except (courses.CourseError, ledger.OverrideError) as error:
        _say(str(error))
        return 2
    entries, notes = course.submitted(coursedir, args.assignment, args.students)
    for note in notes:
        print(f"  {note}")
    if not entries:
        _say(f"nothing to grade: no submissions of {args.assignment} in "
             f"{coursedir.format_path(coursedir.submitted_directory, '*', args.assignment)}")
        return 2
    print(f"Grading {len(entries)} submission(s) of {args.assignment} ({notebook_name}.ipynb); "
          f"the kit's results in {out_dir}")
    try:
        earlier = _earlier(declared, getattr(args, "earlier", None) or [])
    except ValueError as error:
        _say(str(error))
        return 2
    staging = tempfile.mkdtemp(prefix="attnkit-nbgrader-")
    os.chmod(staging, 0o711)
    try:
        submissions, stage_notes = [], []
        for entry in entries:
            # stage/<student>/<student>: the kit names a submission after its folder
            target = os.path.join(staging, entry.student, entry.student)
            stage_notes.append(course.stage(entry, notebook_name, target, [
                (module, coursedir.format_path(coursedir.submitted_directory, entry.student,
                                               name)) for module, name in earlier]))
            submissions.append(_submission(entry, target, names.get(entry.student, ""),
                                           entry.student in names))
        results = grade_batch(submissions, out_dir, options, jobs=args.jobs, force=args.force,
                              course_file=course_file)
    except (SuiteFailed, IsolationUnavailable) as error:
        _say(f"nothing was graded: {error}")
        return 2
    except BatchInterrupted as stop:
        _say(f"interrupted: {stop.graded} of {stop.total} graded, nothing written to the "
             f"gradebook; the same command finishes (what was graded is not graded again)")
        return 130
    finally:
        shutil.rmtree(staging, ignore_errors=True)

    # the final rows: the instructor's overrides, then the late policy (as grades.csv has them)
    # (keyed by folder: a row keeps a safe copy of the name, the folder is the result's own)
    final = {row.get("folder"): row for row in kit_gradebook.final_rows(
        list(kit_gradebook.load_records(out_dir).values()), policy, ledger.load(out_dir))}
    failed, copied, totals, unknown, missing = [], [], [], [], []
    with Gradebook(coursedir.db_url, coursedir.course_id) as book:
        for entry, result, notes in zip(entries, results, stage_notes):
            row = final.get(result.folder)
            if result.status == "grader error" or row is None or row.get("total") is None:
                failed.append(_shown(entry.student))
                print(f"  {_shown(entry.student)}: grader error, nothing written "
                      f"(see {os.path.join(out_dir, result.folder, 'grader-errors.log')})")
                continue
            if entry.student not in names:
                unknown.append(_shown(entry.student))
                continue
            target = coursedir.format_path(coursedir.feedback_directory, entry.student,
                                           args.assignment)
            feedback.write(os.path.join(out_dir, result.folder), target, notebook_name, notes,
                           title=f"{args.assignment}: {entry.student}")
            course.copy_submission_files(entry, target)
            if row.get("status") == "missing work":
                # nothing gradable was found: no score (not a 0 they earned), no graded copy;
                # the feedback says what the folder held
                missing.append(_shown(entry.student))
                if not course.collected(entry):
                    course.write_release_files(entry, notebook_name, [target])
                    copied.append(_shown(entry.student))
                print(f"  {_shown(entry.student)}: missing work, no score written "
                      f"({' '.join((row.get('reason') or 'no notebook found').split())[:200]})")
                continue
            part = scores.part_scores(result, row, list(points))
            penalty = float(row.get("penalty") or 0.0)
            scores.record(book, args.assignment, notebook_name, entry.student,
                          _timestamp(entry.timestamp), part, penalty)
            if any(o.get("part") == ledger.TOTAL for o in row.get("overrides") or []):
                totals.append(_shown(entry.student))
            autograded = coursedir.format_path(coursedir.autograded_directory, entry.student,
                                               args.assignment)
            course.copy_submission_files(entry, autograded, notebook_name)
            if not course.collected(entry):
                course.write_release_files(entry, notebook_name, [autograded, target])
                copied.append(_shown(entry.student))
            late = (f", late by {row['days_late']} day(s): -{penalty:g}" if penalty else "")
            print(f"  {_shown(entry.student)}: {sum(part.values()):g}/{sum(points.values()):g}{late}"
                  f"{' (unchanged, kept)' if result.unchanged else ''}")
    print(f"Wrote {len(entries) - len(failed) - len(unknown) - len(missing)} student(s)' scores to {coursedir.db_url} and "
          f"their feedback to {coursedir.format_path(coursedir.feedback_directory, '<student>', args.assignment)}")
    if unknown:
        shown = ", ".join(unknown[:20]) + (f" and {len(unknown) - 20} more" if len(unknown) > 20 else "")
        print(f"Not students of the course in {coursedir.db_url}: {shown}. Their folders in "
              f"submitted/ were graded (see {out_dir}/grades.csv) but nothing was written to "
              f"the gradebook or feedback/: the id is the folder's name, which `nbgrader "
              f"submit --student` lets anyone choose. Add the real ones (`nbgrader db student "
              f"add ID`) and run this again.")
    if totals:
        print(f"An override of the total cannot be written into nbgrader's gradebook, which "
              f"keeps scores per part: {', '.join(totals[:20])} got their parts' scores; "
              f"override parts instead (`grader override --out {out_dir} STUDENT PART POINTS`).")
    if copied:
        shown = ", ".join(copied[:20]) + (f" and {len(copied) - 20} more" if len(copied) > 20 else "")
        print(f"Copied into submitted/ by hand, not collected: {shown}. `nbgrader release_feedback` "
              f"runs for them, but only `nbgrader submit` gives a student what `nbgrader "
              f"fetch_feedback` needs: hand out their "
              f"{coursedir.format_path(coursedir.feedback_directory, '<student>', args.assignment)}"
              f"/{notebook_name}.html yourself, or have them submit and run `nbgrader collect`.")
    if failed:
        _say(f"the grader itself failed on: {', '.join(failed)}; run the same command again")
        return 2
    return 0


def _earlier(declared, given):
    """[(module, the course's assignment name), ...] for each earlier assignment whose module
    the student provides (`builds_on` with provide = "student"): the course's name is the
    kit's unless `--earlier KIT=COURSE` says otherwise. ValueError names a bad --earlier."""
    provided = declared.provided_by_student()
    named = {}
    for pair in given:
        kit, _, name = pair.partition("=")
        if (kit not in provided or not name or name in (".", "..") or "/" in name
                or not name.isprintable()):
            raise ValueError(f"--earlier {pair}: expected KIT=COURSE, KIT one of the earlier "
                             f"assignments whose module students provide "
                             f"({', '.join(sorted(provided)) or 'none'}) and COURSE the "
                             f"course's name for it")
        named[kit] = name
    return [(module, named.get(kit, kit)) for kit, module in provided.items()]


def _submission(entry, path, name, known=True):
    """The kit's Submission for one nbgrader submission: the student is the folder under
    submitted/ (nbgrader's own id; main() writes only the students gradebook.db already
    has), their name from gradebook.db, and the time is
    timestamp.txt's ("nbgrader-timestamp"), which only `nbgrader collect` writes; a
    submission copied there by hand has none (no time, so no lateness is charged)."""
    from ..intake import layouts
    submission = layouts.Submission(path=path, name=entry.student,
                                    student_id=layouts.student_id(entry.student),
                                    student_name=name, layout="nbgrader")
    when = _timestamp(entry.timestamp)
    # set as attributes: grade._identify reads them with getattr, whichever fields
    # intake/layouts.py declares
    submission.submitted_at = _iso(when) if when else ""
    submission.time_source = "nbgrader-timestamp" if when else ""
    submission.flags = [] if known else [
        f"{_shown(entry.student)} is not a student in nbgrader's database: nothing written there"]
    return submission


def _iso(text):
    """timestamp.txt's time as ISO 8601 with its offset (nbgrader reads it as UTC)."""
    from nbgrader.utils import parse_utc
    moment = parse_utc(text)
    if moment.tzinfo is None:
        import datetime
        moment = moment.replace(tzinfo=datetime.timezone.utc)
    return moment.isoformat()


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
