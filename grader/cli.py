"""The `grader` command: one subcommand per thing an instructor does."""
import argparse
import dataclasses
import os
import sys

from . import assignment
from .platforms import layouts


class _Parser(argparse.ArgumentParser):
    """argparse's parser, with a usage error said in one line (exit 2)."""

    def error(self, message):
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


def build_parser():
    parser = _Parser(
        prog="grader", description="Release, grade and validate an assignment of the kit "
                                   "(tests_hidden/<name>/assignment.toml). The gradebook folder "
                                   "is --gradebook DIR in every command (--out, --from: the "
                                   "same).")
    parser.add_argument("--version", action="version", version=f"grader {_version()}")
    commands = parser.add_subparsers(dest="command", required=True)

    release = commands.add_parser("release", help="write the student skeleton from the solution")
    release.add_argument("--solution", default=None,
                         help="the instructor's solution (default: the assignment's)")
    release.add_argument("--output", default=None, metavar="FILE",
                         help="the skeleton alone, to FILE: the older spelling of --out FILE.py "
                              "(default: the assignment's student folder)")
    release.add_argument("--check", action="store_true",
                         help="only check that the skeleton is up to date (exit 1 if not)")
    release.add_argument("--notebook", metavar="PATH", default=None,
                         help="also write nbgrader's source notebook here (for a course: "
                              "COURSE/source/<assignment>/<module>.ipynb); needs nbformat")
    release.add_argument("--readme", metavar="PATH", default=None,
                         help="the student README whose sections become the notebook's "
                              "markdown (default: the assignment's student folder's README.md; "
                              "README.zh-CN.md for Chinese)")
    release.add_argument("--lang", choices=("en", "zh"), default="en",
                         help="language of the skeleton's docstrings and comments and of the "
                              "notebook's README: en (default) or zh (needs --out or --output)")
    release.add_argument("--out", metavar="DIR|FILE.py", default=None,
                         help="write the whole student folder here (the assignment's student "
                              "folder, with <module>.py in --lang); a path ending in .py: the "
                              "skeleton alone; with --check, compare it")

    grade = commands.add_parser(
        "grade", help="grade submissions against the hidden suite",
        description="Grade each SUBMISSION (a folder, .py, .ipynb or .zip): writes "
                    "DIR/<folder>/results.json (Gradescope format), DIR/<folder>/feedback.txt and "
                    "DIR/grades.csv (its folder column names each submission's folder: the name "
                    "itself unless the name was odd or collided; its total is the final score, after "
                    "overrides and the course file's late policy). Exit status 0 when grading ran, whatever the scores; 2 when "
                    "the grader itself failed on some submission.")
    grade.add_argument("submissions", nargs="+", metavar="SUBMISSION")
    _gradebook_argument(grade, "the gradebook folder: results, grades.csv, report.html")
    grade.add_argument("--jobs", type=int, default=1, metavar="N",
                       help="submissions graded at once (default 1)")
    grade.add_argument("--force", action="store_true",
                       help="regrade every submission, also those unchanged since their row in "
                            "DIR was graded (by default those rows are kept)")
    grade.add_argument("--layout", default="auto",
                       choices=layouts(),
                       help="how the work arrived, which says each student's id and name "
                            "(grades.csv's student_id and name columns): auto (default) "
                            "recognises Canvas and Moodle downloads, a Gradescope export and "
                            "nbgrader's submitted/ folder by their names; plain: the file or "
                            "folder name")
    grade.add_argument("--shard", default=None, metavar="K/N",
                       help="grade only shard K of N: the students whose id (else submission "
                            "name) hashes to K (sha256), so N machines given the same class "
                            "share it without overlap; DIR/shard.json records the run for "
                            "grader merge")
    grade.add_argument("--parts", default="all", metavar="PARTS",
                       help="grade only these parts: all (default), cpu (every part but GPU), "
                            "gpu (the GPU part, on a GPU node), or part names separated by "
                            "commas; grader merge combines the parts per student")
    _disclosure_arguments(grade)
    grade.add_argument("--carry-forward", default="on", choices=("on", "off"),
                       help="error carried forward: on (default), a part keeps the points of "
                            "cases whose results equal what the solution gives with a mistake "
                            "that a function it calls has, named in that function's own part; "
                            "off, those cases fail (grader gradescope, nbgrader and validate "
                            "grade with the default)")
    _course_argument(grade)
    grade.add_argument("--results-json", metavar="PATH",
                       help="with one submission: also write its results.json here "
                            "(Gradescope's /autograder/results/results.json)")
    _suite_arguments(grade)

    from .commands import gradescope as gradescope_command
    gradescope_command.add_parser(commands)

    from .commands import export as export_command
    export_command.add_parser(commands)

    book = commands.add_parser(
        "gradebook", help="rebuild grades.csv and report.html from the kept rows (no grading)",
        description="Rebuild DIR/grades.csv, DIR/report.html and the feedback of students whose "
                    "adjustment changed, from the rows kept in DIR, the course file (late "
                    "policy, extensions) and DIR/overrides.json. Nothing is graded.")
    _gradebook_argument(book)
    _course_argument(book)

    show = commands.add_parser(
        "show", help="print one student's result: parts, penalties, overrides and diagnoses",
        description="Print one student's final row from the gradebook: each part (and its "
                    "override), the submission time and the zone it was read in, lateness and "
                    "penalty, overrides with their reasons, diagnoses and flags. STUDENT: a "
                    "student id or a submission name as in grades.csv (exactly one row).")
    show.add_argument("student", metavar="STUDENT")
    _gradebook_argument(show)
    _course_argument(show)

    override = commands.add_parser(
        "override", help="change a student's part or total score, with a reason (kept in "
                         "DIR/overrides.json; survives regrades)",
        description="Record an instructor's change to a score in DIR/overrides.json (an "
                    "append-only ledger: time, who, reason) and rebuild the gradebook. "
                    "STUDENT: a student id or a submission name as in grades.csv; PART: a part "
                    "name, or total. The graded row is never changed: removing the override "
                    "restores the graded score.")
    override.add_argument("target", nargs="*", metavar="STUDENT PART [POINTS]")
    _gradebook_argument(override)
    override.add_argument("--reason", default=None, help="why (the student reads it)")
    override.add_argument("--remove", action="store_true",
                          help="end the override of STUDENT PART (the graded score is back)")
    override.add_argument("--import", dest="import_file", metavar="CSV", default=None,
                          help="record every line of a CSV with columns student,part,points,reason "
                               "(all or none)")
    override.add_argument("--list", action="store_true", help="show the ledger")
    override.add_argument("--allow-bonus", action="store_true",
                          help="allow more points than the part's (or the total's) maximum")
    _course_argument(override)

    nbgrader = commands.add_parser(
        "nbgrader", help="grade an nbgrader course's submissions and write the scores into "
                         "its gradebook.db",
        description="Grade COURSE/submitted/<student>/ASSIGNMENT/*.ipynb with the kit's "
                    "sandboxed grader (never in nbgrader's kernel), write each student's part "
                    "scores into the course's gradebook.db through nbgrader's API, and their "
                    "feedback to COURSE/feedback/<student>/ASSIGNMENT/. Needs nbgrader: "
                    "pip install -e '.[nbgrader]'.")
    nbgrader.add_argument("--course", required=True, metavar="DIR", help="the course's root")
    nbgrader.add_argument("assignment", metavar="ASSIGNMENT")
    nbgrader.add_argument("students", nargs="*", metavar="STUDENT",
                          help="only these students (default: everyone who submitted)")
    nbgrader.add_argument("--gradebook", "--out", dest="out", default=None, metavar="DIR",
                          help="the kit's own results, its gradebook folder (default: "
                               "COURSE/grader/ASSIGNMENT; --out is the older spelling)")
    nbgrader.add_argument("--jobs", type=int, default=1, metavar="N")
    nbgrader.add_argument("--force", action="store_true",
                          help="regrade also the submissions unchanged since their last grading")
    nbgrader.add_argument("--course-file", default=None, metavar="FILE",
                          help="the course file: due date, extensions, late policy (default: "
                               "course.toml in the kit's results folder, --out, when there is "
                               "one); the penalty goes to nbgrader's late_submission_penalty")
    nbgrader.add_argument("--earlier", action="append", metavar="KIT=COURSE",
                          help="for an assignment that builds on another whose module students "
                               "provide: the course's name for that earlier assignment (default: "
                               "the kit's), whose submission holds a student's module when they "
                               "did not hand it in again")
    _suite_arguments(nbgrader)

    merge = commands.add_parser(
        "merge", help="merge the folders of grader grade --shard / --parts into one gradebook",
        description="Check that the SHARD_DIRs (each the --out of grader grade --shard K/N or "
                    "--parts) are every shard of one class, graded with one suite and the "
                    "same settings, with no student graded twice differently and every part "
                    "graded for every student; then write DIR as one run would (grades.csv, "
                    "report.html, each student's files, what grader export reads) and "
                    "DIR/merge.json (which machine graded which shard and part). Refuses, "
                    "writing nothing, with exit status 2 and the reason.")
    merge.add_argument("shard_dirs", nargs="+", metavar="SHARD_DIR")
    _gradebook_argument(merge, "the gradebook folder to write")
    _course_argument(merge)

    from .similarity.command import add_parser as similarity_parser
    similarity_parser(commands)
    # its --from is the gradebook folder: the one flag name every command takes for it
    commands.choices["similarity"].add_argument(
        "--gradebook", dest="source", default=argparse.SUPPRESS, metavar="DIR",
        help="the gradebook folder (the same as --from)")

    validate = commands.add_parser(
        "validate", help="check the hidden suite: solution full marks, skeleton 0, every catalog "
                         "mistake loses points in its part and is diagnosed as itself, "
                         "alternatives full marks with no diagnosis")
    validate.add_argument("--jobs", type=int, default=1, metavar="N")
    validate.add_argument("--out", default=None, metavar="DIR", help="keep the results here")
    validate.add_argument("--docs", default=None, metavar="PATH",
                          help="also write the catalog's table with this run's scores "
                               "(docs/mistakes.md)")
    _suite_arguments(validate)
    _assignment_argument(commands)
    return parser


def _version():
    """The installed kit's version (pyproject.toml's), or "unknown" from a bare checkout."""
    try:
        from importlib.metadata import PackageNotFoundError, version
    except ImportError:  # pragma: no cover - Python < 3.8
        return "unknown"
    for name in ("attention-kit", "attention_kit"):
        try:
            return version(name)
        except PackageNotFoundError:
            continue
    return "unknown"


def _gradebook_argument(parser, what="the gradebook folder"):
    """--gradebook DIR: the one name of the gradebook folder (--out: its older spelling)."""
    parser.add_argument("--gradebook", "--out", dest="out", required=True, metavar="DIR",
                        help=f"{what} (--out is the older spelling)")


def _course_argument(parser):
    parser.add_argument("--course", default=None, metavar="FILE",
                        help="the course file: due date, extensions, late policy (default: "
                             "course.toml in the gradebook folder, when there is one)")


def _disclosure_arguments(parser):
    from .report.summary import LEVELS, VISIBILITIES
    parser.add_argument("--feedback", default="full", choices=LEVELS,
                        help="how much of a hidden case students see in feedback.txt and "
                             "results.json: full (inputs, expected values, differences), "
                             "summary (each part's diagnosis and an experiment only) or score "
                             "(the scores only); default full")
    parser.add_argument("--visibility", default="visible", choices=VISIBILITIES,
                        help="Gradescope's visibility of each test in results.json (the total "
                             "score stays visible): after_due_date keeps the hidden suite from "
                             "students who may resubmit until the deadline; default visible")


def _suite_arguments(parser):
    from .sandbox.isolation import CHOICES
    from .sandbox.limits import Limits
    parser.add_argument("--solution", default=None,
                        help="the instructor's solution (default: the assignment's)")
    parser.add_argument("--hidden-tests", default=None,
                        help="the hidden suite's folder (default: tests_hidden/<assignment>/)")
    parser.add_argument("--isolation", default="auto", choices=CHOICES,
                        help="auto: the best this machine allows; strict: refuse to grade "
                             "without Linux namespaces; or one level (default auto)")
    parser.add_argument("--no-gpu", action="store_true", help="grade as if there were no GPU")
    parser.add_argument("--lang", choices=("en", "zh"), default="en",
                        help="language of what students read (feedback.txt, results.json): "
                             "en (default) or zh (中文)")
    limits = parser.add_argument_group("limits for each submission")
    for field in dataclasses.fields(Limits):
        limits.add_argument("--" + field.name.replace("_", "-"), type=field.type
                            if field.type in (int, float) else float, default=field.default,
                            help=f"(default {field.default})")


def suite_options(args):
    from .grade import SuiteOptions
    from .sandbox.limits import Limits
    limits = Limits(**{f.name: getattr(args, f.name) for f in dataclasses.fields(Limits)})
    return SuiteOptions(hidden_tests=args.hidden_tests, solution=args.solution,
                        isolation=args.isolation, limits=limits, no_gpu=args.no_gpu,
                        lang=getattr(args, "lang", "en"),
                        carry_forward=getattr(args, "carry_forward", "on"),
                        assignment=getattr(args, "kit_assignment", None))


def _assignment_argument(commands):
    """--assignment NAME on every command that has no --assignment of its own (export's is
    the Canvas column): the kit's only assignment, else assignment.DEFAULT. `nbgrader`'s ASSIGNMENT
    names it when the kit declares one by that name."""
    for parser in commands.choices.values():
        if "--assignment" in parser._option_string_actions:
            continue
        parser.add_argument("--assignment", metavar="NAME", default=None, dest="kit_assignment",
                            help="which assignment (tests_hidden/NAME/assignment.toml); "
                                 "default: the kit's only one, else "
                                 f"{assignment.DEFAULT}")


def resolve_assignment(args):
    """Load the assignment args name and fill the paths left to it; an error message or None."""
    name = getattr(args, "kit_assignment", None)
    if name is None and args.command == "nbgrader" and args.assignment in assignment.names():
        name = args.assignment
    if name is None and args.command in ("gradebook", "override") and args.out:
        from .report.gradebook import recorded_assignment
        name = recorded_assignment(args.out)  # the one its rows were graded for
    try:
        args.kit_assignment = assignment.load(name)
    except assignment.AssignmentError as error:
        return str(error)
    if getattr(args, "solution", "") is None:
        args.solution = args.kit_assignment.solution
    if getattr(args, "hidden_tests", "") is None:
        args.hidden_tests = args.kit_assignment.hidden_tests
    if getattr(args, "output", "") is None and args.command == "release":
        args.output = args.kit_assignment.skeleton
    return None


def main(argv=None):
    args = build_parser().parse_args(argv)
    wrong = resolve_assignment(args)
    if wrong:
        print(f"grader {args.command}: {wrong}", file=sys.stderr)
        return 2
    from .commands.usage import problem
    mistake = problem(args)
    if mistake:
        print(f"grader {args.command}: {mistake}", file=sys.stderr)
        return 2
    if getattr(args, "lang", None):
        from . import i18n
        i18n.set_language(args.lang)  # this process writes the feedback; the trusted ones get it too
    if args.command == "release":
        from . import release
        from .nbgrader_bridge import NbgraderMissing
        try:
            return release.main(args)
        except (release.ReleaseError, NbgraderMissing) as error:
            print(f"grader release: {error}", file=sys.stderr)
            return 2
        except OSError as error:  # a file it reads or writes (the reason names it)
            print(f"grader release: {error}", file=sys.stderr)
            return 2
    if args.command == "grade":
        try:
            return _grade(args)
        except KeyboardInterrupt:  # before the batch started (the batch handles its own)
            print("\ngrader grade: interrupted before anything was graded", file=sys.stderr)
            return 130
    if args.command == "gradescope":
        from .commands import gradescope as gradescope_command
        return gradescope_command.run(args)
    if args.command == "export":
        from .commands import export as export_command
        return export_command.run(args)
    if args.command == "merge":
        from .merge import main as merge_main
        return merge_main(args)
    if args.command == "similarity":
        from .similarity.command import main as similarity_main
        return similarity_main(args)
    if args.command == "gradebook":
        from .gradebook_commands import gradebook_main
        return gradebook_main(args)
    if args.command == "override":
        from .gradebook_commands import override_main
        return override_main(args)
    if args.command == "show":
        from .gradebook_commands import show_main
        return show_main(args)
    if args.command == "nbgrader":
        from .nbgrader_bridge import NbgraderMissing, command
        try:
            return command.main(args, suite_options(args))
        except NbgraderMissing as error:
            print(f"grader nbgrader: {error}", file=sys.stderr)
            return 2
    if args.command == "validate":
        from .grade import SuiteFailed
        from .validate import print_table, validate
        try:
            ok, rows = validate(suite_options(args), jobs=args.jobs, out_dir=args.out,
                                assignment=args.kit_assignment)
        except SuiteFailed as error:
            print(f"grader validate: the hidden suite does not hold: {error}", file=sys.stderr)
            return 1
        print_table(rows)
        if args.docs:
            import datetime
            from .validate import docs_table
            with open(args.docs, "w", encoding="utf-8") as out:
                out.write(docs_table(rows, datetime.date.today().isoformat(),
                                     args.kit_assignment))
        return 0 if ok else 1
    return 2


def _grade(args):
    from .grade import BatchInterrupted, SuiteFailed, grade_batch
    from .sandbox.isolation import IsolationUnavailable, choose
    problem = _usage_problem(args.submissions, args.out)
    if problem:
        print(f"grader grade: {problem}", file=sys.stderr)
        return 2
    from . import shards
    try:  # before anything is read
        shard = shards.parse_shard(args.shard) if args.shard else None
        parts = shards.parse_parts(args.parts)
    except shards.ShardError as error:
        print(f"grader grade: {error}", file=sys.stderr)
        return 2
    from .grade import student_provided
    from .platforms import resolve
    batch = resolve(args.submissions, args.layout, module=args.kit_assignment.module,
                            earlier=student_provided(args.kit_assignment))
    for note in batch.notes[:200]:
        print(f"  {note}")
    if len(batch.notes) > 200:
        print(f"  ... and {len(batch.notes) - 200} more notes")
    if not batch.submissions:
        print("grader grade: nothing to grade (every path given was skipped)", file=sys.stderr)
        return 2
    if args.results_json and shard is not None:
        print("grader grade: --results-json is for one submission graded whole (Gradescope); "
              "--shard splits a class: use one or the other", file=sys.stderr)
        return 2
    if args.results_json and len(batch.submissions) != 1:
        print("grader grade: --results-json needs exactly one submission", file=sys.stderr)
        return 2
    from . import course as courses
    from . import overrides as ledger
    try:  # said before anything is graded
        courses.find(args.out, args.course)
        ledger.load(args.out)
    except (courses.CourseError, ledger.OverrideError) as error:
        print(f"grader grade: {error}", file=sys.stderr)
        return 2
    options = suite_options(args)
    try:
        level = choose(options.isolation)
    except IsolationUnavailable as error:
        print(f"grader grade: {error}", file=sys.stderr)
        return 2
    shown = ", ".join(f"{n} {k}" for k, n in sorted(batch.layouts.items()))
    if shard is not None:
        mine = sum(shards.belongs(s, shard) for s in batch.submissions)
        shown += f"; shard {shard}: {mine} of them"
    print(f"Grading {len(batch.submissions)} submission(s) ({shown}); isolation: {level.level}"
          f"{' with a throwaway uid' if level.uid is not None else ''}; error carried forward: "
          f"{options.carry_forward}; results in {args.out}")
    import time
    started = time.monotonic()
    try:
        results = grade_batch(batch.submissions, args.out, options, jobs=args.jobs,
                              force=args.force, feedback=args.feedback,
                              visibility=args.visibility, course_file=args.course,
                              shard=shard, parts=parts)
    except shards.ShardError as error:
        print(f"grader grade: nothing was graded: {error}", file=sys.stderr)
        return 2
    except SuiteFailed as error:
        print(f"grader grade: nothing was graded: {error}", file=sys.stderr)
        return 2
    except BatchInterrupted as stop:
        print(f"\ngrader grade: interrupted: {stop.graded} of {stop.total} submissions graded, "
              f"{args.out}/grades.csv written for them; the same command grades the rest",
              file=sys.stderr)
        return 130
    if args.results_json:
        _copy_results(args.out, results[0], args.results_json, args.feedback, args.visibility,
                      args.kit_assignment.module_file)
    _warn_orphan_overrides(args.out)
    failed = [r for r in results if r.status == "grader error"]
    unchanged = sum(r.unchanged for r in results)
    _summary(args.out, args.course, results, time.monotonic() - started, unchanged)
    if failed:
        from .textsafety import safe_text
        shown = ", ".join(safe_text(getattr(r, "folder", r.name), 100) for r in failed[:50])
        more = f" and {len(failed) - 50} more" if len(failed) > 50 else ""
        print(f"The grader itself failed on: {shown}{more} (see DIR/<folder>/grader-errors.log)",
              file=sys.stderr)
        return 2
    return 0


def _summary(out_dir, course_file, results, seconds, unchanged):
    """The batch's closing lines: its final rows counted (as grades.csv has them), what the
    course file could not decide, and where grades.csv is."""
    from . import course as courses
    from . import overrides as ledger
    from .report import console, gradebook
    try:
        kept = gradebook.load_records(out_dir)
        rows = [kept.get(r.name) or gradebook.safe_record(r) for r in results]
        final = gradebook.final_rows(rows, courses.find(out_dir, course_file),
                                     ledger.load(out_dir))
    except Exception:  # noqa: BLE001 - grades.csv is written; the summary counts what was graded
        final = [gradebook.safe_record(r) for r in results]
    lines = console.summary(final, seconds, unchanged)
    lines += [courses.say(note) for note in courses.notes(final)]
    lines.append(f"Wrote {out_dir}/grades.csv and {out_dir}/report.html.")
    for line in lines:
        console.print_line(sys.stdout, line)


def _warn_orphan_overrides(out_dir):
    """An override in effect that applies to no row is said, not silently dropped."""
    from . import overrides as ledger
    from .report import gradebook
    try:
        rows = list(gradebook.load_records(out_dir).values())
        lines = gradebook.orphans(rows, ledger.load(out_dir))
    except Exception:  # the batch is done; grades.csv says the rest
        return
    for line in lines:
        print(f"grader grade: warning: {line}", file=sys.stderr)


def _usage_problem(submissions, out_dir):
    """A mistake on the command line, said in one line before anything is graded, or None."""
    missing = [p for p in submissions if not os.path.lexists(p)]
    if missing:
        from .textsafety import safe_text
        shown = ", ".join(safe_text(p, 200) for p in missing[:5])
        more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
        return f"no such file or folder: {shown}{more} (nothing was graded)"
    if os.path.lexists(out_dir) and not os.path.isdir(out_dir):
        return f"--out {out_dir} exists and is not a folder (nothing was graded)"
    return None


def _copy_results(out_dir, result, target, feedback="full", visibility="visible",
                  module_file=None):
    """Gradescope's results.json: the one in the submission's folder, or, if that could not
    be written, one written here from the result (atomically, capped, as always)."""
    from . import files
    from .report.gradescope import results_text
    source = os.path.join(out_dir, getattr(result, "folder", result.name), "results.json")
    try:
        with open(source, "rb") as handle:
            data = handle.read()
    except OSError:
        data = results_text(result, feedback=feedback, visibility=visibility,
                            module_file=module_file).encode("utf-8")
    files.write_bytes(target, data)
