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

(course, scores, feedback: grader/nbgrader_bridge/.) A submission the grader itself failed
on gets nothing in the gradebook (never a silent zero) and makes the exit status 2; the next
run grades it again. A folder where nothing gradable was found ("missing work") gets its
feedback but no score: nbgrader export then shows it as not submitted, not as an earned 0.
A folder in submitted/ whose name is not a student in gradebook.db is graded but nothing is
written for it (the default exchange lets `nbgrader submit --student` choose any name); one
line names them. The pre-flight (commands/grading.py) reads the course file and the
overrides ledger once: the scores written are the final ones they give.
"""
import dataclasses
import os
import shutil
import sys
import tempfile

from .. import assignment as assignments
from .. import overrides as ledger
from ..nbgrader_bridge import NbgraderMissing, course, feedback, notebook, require_nbgrader, scores
from ..nbgrader_bridge.course import shown_student
from . import usage
from .arguments import suite_arguments, suite_problem

NAME = "nbgrader"
LISTED = 20   # students named in one closing line


def add_parser(commands):
    parser = commands.add_parser(
        NAME, help="grade an nbgrader course's submissions and write the scores into "
                   "its gradebook.db",
        description="Grade COURSE/submitted/<student>/ASSIGNMENT/*.ipynb with the kit's "
                    "sandboxed grader (never in nbgrader's kernel), write each student's part "
                    "scores into the course's gradebook.db through nbgrader's API, and their "
                    "feedback to COURSE/feedback/<student>/ASSIGNMENT/. Needs nbgrader: "
                    "pip install -e '.[nbgrader]'.")
    parser.add_argument("--course", required=True, metavar="DIR", help="the course's root")
    parser.add_argument("assignment", metavar="ASSIGNMENT")
    parser.add_argument("students", nargs="*", metavar="STUDENT",
                        help="only these students (default: everyone who submitted)")
    parser.add_argument("--gradebook", "--out", dest="out", default=None, metavar="DIR",
                        help="the kit's own results, its gradebook folder (default: "
                             "COURSE/grader/ASSIGNMENT; --out is the older spelling)")
    parser.add_argument("--jobs", type=int, default=1, metavar="N")
    parser.add_argument("--force", action="store_true",
                        help="regrade also the submissions unchanged since their last grading")
    parser.add_argument("--course-file", default=None, metavar="FILE",
                        help="the course file: due date, extensions, late policy (default: "
                             "course.toml in the kit's results folder, --out, when there is "
                             "one); the penalty goes to nbgrader's late_submission_penalty")
    parser.add_argument("--earlier", action="append", metavar="KIT=COURSE",
                        help="for an assignment that builds on another whose module students "
                             "provide: the course's name for that earlier assignment (default: "
                             "the kit's), whose submission holds a student's module when they "
                             "did not hand it in again")
    suite_arguments(parser)
    return parser


def assignment_name(args):
    """ASSIGNMENT names the kit's assignment too when the kit declares one by that name."""
    if args.kit_assignment is None and args.assignment in assignments.names():
        return args.assignment
    return args.kit_assignment


def problem(args):
    return usage.first(lambda: suite_problem(args),
                       lambda: args.out and usage.output_folder("--out", args.out))


def _say(message):
    print(f"grader nbgrader: {message}", file=sys.stderr)


@dataclasses.dataclass
class _Course:
    """The nbgrader course of one run, as its gradebook.db holds the assignment."""
    coursedir: object      # nbgrader's CourseDirectory
    notebook: str          # the notebook's name in the course (without .ipynb)
    names: dict            # {student id: name} of gradebook.db's students
    points: dict           # {part: points} of the declaration

    def path(self, kind, student, assignment):
        return self.coursedir.format_path(getattr(self.coursedir, f"{kind}_directory"), student,
                                         assignment)


def run(args):
    try:
        require_nbgrader("grader nbgrader")
    except NbgraderMissing as error:
        _say(error)
        return 2
    # the grading machinery (grade/, the sandbox) is loaded only by the commands that grade:
    # gradebook, override and show never import it (tests/test_overrides.py NO_GRADING)
    from . import grading as runs
    if not os.path.isdir(args.course):
        _say(f"--course {args.course} is not a folder")
        return 2
    found = _course(args)
    if isinstance(found, str):
        _say(found)
        return 2
    out_dir = args.out or os.path.join(found.coursedir.root, "grader", args.assignment)
    grading = runs.Run(args)
    try:  # the late policy and the overrides are read before anything is graded
        grading.read_gradebook(out_dir, args.course_file)
    except runs.Refused as error:
        _say(error)
        return 2
    entries, notes = course.submitted(found.coursedir, args.assignment, args.students)
    for note in notes:
        print(f"  {note}")
    if not entries:
        _say(f"nothing to grade: no submissions of {args.assignment} in "
             f"{found.path('submitted', '*', args.assignment)}")
        return 2
    print(f"Grading {len(entries)} submission(s) of {args.assignment} ({found.notebook}.ipynb); "
          f"the kit's results in {out_dir}")
    graded = _grade(args, runs, grading, found, entries, out_dir)
    if isinstance(graded, int):
        return graded
    results, stage_notes = graded
    # the final rows: the instructor's overrides, then the late policy (as grades.csv has them)
    # (keyed by folder: a row keeps a safe copy of the name, the folder is the result's own)
    final = {row.get("folder"): row for row in grading.final_rows()}
    said = _write_back(args, found, entries, results, stage_notes, final, out_dir)
    return _closing(args, found, len(entries), out_dir, **said)


def _course(args):
    """The course, its gradebook.db checked for the assignment; or why not (one line)."""
    # nbgrader: an extra (heavy), loaded only by this command (require_nbgrader checked it)
    from nbgrader.api import Gradebook
    coursedir = course.load_coursedir(args.course)
    points = notebook.part_points(args.kit_assignment)
    try:
        with Gradebook(coursedir.db_url, coursedir.course_id) as book:
            name, _ = scores.assignment_cells(book, args.assignment, points,
                                              args.kit_assignment.notebook_file)
            names = scores.student_names(book)
    except scores.GradebookProblem as refused:
        return str(refused)
    return _Course(coursedir, name, names, points)


def _grade(args, runs, grading, found, entries, out_dir):
    """Stage each submission and grade them as one batch: (results, each one's staging
    notes), or the exit status when nothing was graded."""
    try:
        earlier = _earlier(args.kit_assignment, args.earlier or [])
        grading.choose_isolation()
    except ValueError as error:
        _say(error)
        return 2
    except runs.Refused as error:
        _say(f"nothing was graded: {error}")
        return 2
    staging = tempfile.mkdtemp(prefix="attnkit-nbgrader-")
    os.chmod(staging, 0o711)
    try:
        submissions, stage_notes = [], []
        for entry in entries:
            # stage/<student>/<student>: the kit names a submission after its folder
            target = os.path.join(staging, entry.student, entry.student)
            stage_notes.append(course.stage(entry, found.notebook, target, [
                (module, found.path("submitted", entry.student, name))
                for module, name in earlier]))
            submissions.append(course.submission(entry, target, found.names.get(entry.student, ""),
                                                 entry.student in found.names))
        results = runs.grade_batch(submissions, out_dir, grading.options, jobs=args.jobs,
                                   force=args.force, book=grading.book)
    except (runs.SuiteFailed, runs.IsolationUnavailable) as error:
        _say(f"nothing was graded: {error}")
        return 2
    except runs.BatchInterrupted as stop:
        _say(f"interrupted: {stop.graded} of {stop.total} graded, nothing written to the "
             f"gradebook; the same command finishes (what was graded is not graded again)")
        return 130
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return results, stage_notes


def _write_back(args, found, entries, results, stage_notes, final, out_dir):
    """Each student's scores, feedback and graded notebook into the course; who was left
    out, and why ({"failed", "unknown", "missing", "totals", "copied"}: students shown)."""
    # nbgrader: an extra (heavy), loaded only by this command (require_nbgrader checked it)
    from nbgrader.api import Gradebook
    said = {"failed": [], "unknown": [], "missing": [], "totals": [], "copied": []}
    with Gradebook(found.coursedir.db_url, found.coursedir.course_id) as book:
        for entry, result, notes in zip(entries, results, stage_notes):
            shown, row = shown_student(entry.student), final.get(result.folder)
            if result.status == "grader error" or row is None or row.get("total") is None:
                said["failed"].append(shown)
                print(f"  {shown}: grader error, nothing written "
                      f"(see {os.path.join(out_dir, result.folder, 'grader-errors.log')})")
                continue
            if entry.student not in found.names:
                said["unknown"].append(shown)
                continue
            target = found.path("feedback", entry.student, args.assignment)
            feedback.write(os.path.join(out_dir, result.folder), target, found.notebook, notes,
                           title=f"{args.assignment}: {entry.student}")
            course.copy_submission_files(entry, target)
            if row.get("status") == "missing work":
                _missing_work(found, entry, row, target, said)
                continue
            _record(args, book, found, entry, result, row, target, said)
    return said


def _missing_work(found, entry, row, target, said):
    """Nothing gradable was found: no score (not a 0 they earned), no graded copy; the
    feedback says what the folder held."""
    shown = shown_student(entry.student)
    said["missing"].append(shown)
    if not course.collected(entry):
        course.write_release_files(entry, found.notebook, [target])
        said["copied"].append(shown)
    print(f"  {shown}: missing work, no score written "
          f"({' '.join((row.get('reason') or 'no notebook found').split())[:200]})")


def _record(args, book, found, entry, result, row, target, said):
    """One student's part scores and penalty into gradebook.db, the graded notebook into
    autograded/, and its line on the console."""
    shown = shown_student(entry.student)
    part = scores.part_scores(result, row, list(found.points))
    penalty = float(row.get("penalty") or 0.0)
    scores.record(book, args.assignment, found.notebook, entry.student,
                  course.timestamp(entry.timestamp), part, penalty)
    if any(o.get("part") == ledger.TOTAL for o in row.get("overrides") or []):
        said["totals"].append(shown)
    autograded = found.path("autograded", entry.student, args.assignment)
    course.copy_submission_files(entry, autograded, found.notebook)
    if not course.collected(entry):
        course.write_release_files(entry, found.notebook, [autograded, target])
        said["copied"].append(shown)
    late = (f", late by {row['days_late']} day(s): -{penalty:g}" if penalty else "")
    print(f"  {shown}: {sum(part.values()):g}/{sum(found.points.values()):g}{late}"
          f"{' (unchanged, kept)' if result.unchanged else ''}")


def _listed(students):
    more = len(students) - LISTED
    return ", ".join(students[:LISTED]) + (f" and {more} more" if more > 0 else "")


def _closing(args, found, count, out_dir, failed, unknown, missing, totals, copied):
    """The run's closing lines; the exit status."""
    feedback_folder = found.path("feedback", "<student>", args.assignment)
    print(f"Wrote {count - len(failed) - len(unknown) - len(missing)} student(s)' scores to "
          f"{found.coursedir.db_url} and their feedback to {feedback_folder}")
    if unknown:
        print(f"Not students of the course in {found.coursedir.db_url}: {_listed(unknown)}. Their "
              f"folders in submitted/ were graded (see {out_dir}/grades.csv) but nothing was "
              f"written to the gradebook or feedback/: the id is the folder's name, which "
              f"`nbgrader submit --student` lets anyone choose. Add the real ones (`nbgrader "
              f"db student add ID`) and run this again.")
    if totals:
        print(f"An override of the total cannot be written into nbgrader's gradebook, which "
              f"keeps scores per part: {', '.join(totals[:LISTED])} got their parts' scores; "
              f"override parts instead (`grader override --out {out_dir} STUDENT PART POINTS`).")
    if copied:
        print(f"Copied into submitted/ by hand, not collected: {_listed(copied)}. `nbgrader "
              f"release_feedback` runs for them, but only `nbgrader submit` gives a student "
              f"what `nbgrader fetch_feedback` needs: hand out their {feedback_folder}"
              f"/{found.notebook}.html yourself, or have them submit and run `nbgrader "
              f"collect`.")
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
