"""`grader grade SUBMISSION... --gradebook DIR`: grade submissions against the hidden suite
(grader/grade), each recognised by its platform (grader/platforms), into the gradebook DIR.

The pre-flight (commands/run.py) says every refusal in one line before anything is graded;
each submission's line on the console shows its final score, and the batch ends with its
summary. Exit status 0 when grading ran, whatever the scores; 2 when the grader itself
failed on some submission (or refused to start); 130 on Ctrl-C.
"""
import os
import sys
import time

from .. import course as courses
from .. import files, shards
from .. import platforms
from ..report import console, gradebook
from ..report.gradescope import results_text
from ..textsafety import safe_text
from . import usage
from .arguments import course_argument, disclosure_arguments, gradebook_argument, suite_arguments
from .arguments import suite_problem

NAME = "grade"
NOTES_SHOWN = 200


def add_parser(commands):
    parser = commands.add_parser(
        NAME, help="grade submissions against the hidden suite",
        description="Grade each SUBMISSION (a folder, .py, .ipynb or .zip): writes "
                    "DIR/<folder>/results.json (Gradescope format), DIR/<folder>/feedback.txt and "
                    "DIR/grades.csv (its folder column names each submission's folder: the name "
                    "itself unless the name was odd or collided; its total is the final score, after "
                    "overrides and the course file's late policy). Exit status 0 when grading ran, whatever the scores; 2 when "
                    "the grader itself failed on some submission.")
    parser.add_argument("submissions", nargs="+", metavar="SUBMISSION")
    gradebook_argument(parser, "the gradebook folder: results, grades.csv, report.html")
    parser.add_argument("--jobs", type=int, default=1, metavar="N",
                        help="submissions whose code runs at once (default 1); one more is "
                             "prepared meanwhile and waits for its turn")
    parser.add_argument("--force", action="store_true",
                        help="regrade every submission, also those unchanged since their row in "
                             "DIR was graded (by default those rows are kept)")
    arrivals = [p.arrives_as for p in platforms.listed() if p.arrives_as]
    recognised = " and ".join([", ".join(arrivals[:-1]), arrivals[-1]] if len(arrivals) > 1
                              else arrivals)
    parser.add_argument("--layout", default="auto", choices=platforms.layouts(),
                        help="how the work arrived, which says each student's id and name "
                             "(grades.csv's student_id and name columns): auto (default) "
                             f"recognises {recognised} by their names; "
                             "plain: the file or folder name")
    parser.add_argument("--shard", default=None, metavar="K/N",
                        help="grade only shard K of N: the students whose id (else submission "
                             "name) hashes to K (sha256), so N machines given the same class "
                             "share it without overlap; DIR/shard.json records the run for "
                             "grader merge")
    parser.add_argument("--parts", default="all", metavar="PARTS",
                        help="grade only these parts: all (default), cpu (every part but GPU), "
                             "gpu (the GPU part, on a GPU node), or part names separated by "
                             "commas; grader merge combines the parts per student")
    disclosure_arguments(parser)
    parser.add_argument("--carry-forward", default="on", choices=("on", "off"),
                        help="error carried forward: on (default), a part keeps the points of "
                             "cases whose results equal what the solution gives with a mistake "
                             "that a function it calls has, named in that function's own part; "
                             "off, those cases fail (grader gradescope, nbgrader and validate "
                             "grade with the default)")
    course_argument(parser)
    parser.add_argument("--results-json", metavar="PATH",
                        help="with one submission: also write its results.json here "
                             "(Gradescope's /autograder/results/results.json)")
    suite_arguments(parser)
    return parser


def problem(args):
    """The suite's arguments, --results-json, every submission there, --gradebook a folder."""
    return usage.first(
        lambda: suite_problem(args),
        lambda: args.results_json and usage.output_file("--results-json", args.results_json),
        lambda: _missing(args.submissions),
        lambda: (os.path.lexists(args.out) and not os.path.isdir(args.out)
                 and f"--out {args.out} exists and is not a folder (nothing was graded)"))


def _missing(submissions):
    missing = [p for p in submissions if not os.path.lexists(p)]
    if not missing:
        return None
    shown = ", ".join(safe_text(p, 200) for p in missing[:5])
    more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
    return f"no such file or folder: {shown}{more} (nothing was graded)"


def _say(message):
    print(f"grader grade: {message}", file=sys.stderr)


def run(args):
    try:
        return _grade(args)
    except KeyboardInterrupt:  # before the batch started (the batch handles its own)
        print("\ngrader grade: interrupted before anything was graded", file=sys.stderr)
        return 130


def _grade(args):
    # the grading machinery (grade/, the sandbox) is loaded only by the commands that grade:
    # gradebook, override and show never import it (tests/test_overrides.py NO_GRADING)
    from . import grading as runs
    try:  # before anything is read
        shard = shards.parse_shard(args.shard) if args.shard else None
        parts = shards.parse_parts(args.parts)
    except shards.ShardError as error:
        _say(error)
        return 2
    grading = runs.Run(args)
    batch = grading.resolve(args.submissions, args.layout)
    refused = _batch_problem(args, batch, shard)
    if refused:
        _say(refused)
        return 2
    try:  # said before anything is graded
        grading.read_gradebook(args.out, args.course)
        level = grading.choose_isolation()
    except runs.Refused as error:
        _say(error)
        return 2
    shown = ", ".join(f"{n} {k}" for k, n in sorted(batch.layouts.items()))
    if shard is not None:
        mine = sum(shards.belongs(s, shard) for s in batch.submissions)
        shown += f"; shard {shard}: {mine} of them"
    print(f"Grading {len(batch.submissions)} submission(s) ({shown}); isolation: {level.level}"
          f"{' with a throwaway uid' if level.uid is not None else ''}; error carried forward: "
          f"{grading.options.carry_forward}; results in {args.out}")
    return _batch(args, runs, grading, batch, shard, parts)


def _batch_problem(args, batch, shard):
    """Print the batch's notes; why it cannot be graded as asked, or None."""
    for note in batch.notes[:NOTES_SHOWN]:
        print(f"  {note}")
    if len(batch.notes) > NOTES_SHOWN:
        print(f"  ... and {len(batch.notes) - NOTES_SHOWN} more notes")
    if not batch.submissions:
        return "nothing to grade (every path given was skipped)"
    if args.results_json and shard is not None:
        return ("--results-json is for one submission graded whole (Gradescope); --shard "
                "splits a class: use one or the other")
    if args.results_json and len(batch.submissions) != 1:
        return "--results-json needs exactly one submission"
    return None


def _batch(args, runs, grading, batch, shard, parts):
    """Grade the batch (`runs`: commands/grading.py), then what follows it: Gradescope's
    results.json, the warnings, the summary; the exit status."""
    started = time.monotonic()
    try:
        results = runs.grade_batch(batch.submissions, args.out, grading.options, jobs=args.jobs,
                              force=args.force, feedback=args.feedback,
                              visibility=args.visibility, book=grading.book,
                              shard=shard, parts=parts)
    except (shards.ShardError, runs.SuiteFailed) as error:
        _say(f"nothing was graded: {error}")
        return 2
    except runs.BatchInterrupted as stop:
        print(f"\ngrader grade: interrupted: {stop.graded} of {stop.total} submissions graded, "
              f"{args.out}/grades.csv written for them; the same command grades the rest",
              file=sys.stderr)
        return 130
    if args.results_json:
        _copy_results(args.out, results[0], args.results_json, args.feedback, args.visibility,
                      grading.assignment.module_file)
    _warn_orphan_overrides(grading)
    _summary(grading, args.out, results, time.monotonic() - started,
             sum(r.unchanged for r in results))
    failed = [r for r in results if r.status == "grader error"]
    if failed:
        shown = ", ".join(safe_text(r.folder or r.name, 100) for r in failed[:50])
        more = f" and {len(failed) - 50} more" if len(failed) > 50 else ""
        print(f"The grader itself failed on: {shown}{more} (see DIR/<folder>/grader-errors.log)",
              file=sys.stderr)
        return 2
    return 0


def _summary(grading, out_dir, results, seconds, unchanged):
    """The batch's closing lines: its final rows counted (as grades.csv has them), what the
    course file could not decide, and where grades.csv is."""
    try:
        final = grading.final_rows(results)
    except Exception:  # noqa: BLE001 - grades.csv is written; the summary counts what was graded
        final = [gradebook.safe_record(r) for r in results]
    lines = console.summary(final, seconds, unchanged)
    lines += [courses.say(note) for note in courses.notes(final)]
    lines.append(f"Wrote {out_dir}/grades.csv and {out_dir}/report.html.")
    for line in lines:
        console.print_line(sys.stdout, line)


def _warn_orphan_overrides(grading):
    """An override in effect that applies to no row is said, not silently dropped."""
    try:
        lines = grading.orphans()
    except Exception:  # noqa: BLE001 - the batch is done; grades.csv says the rest
        return
    for line in lines:
        _say(f"warning: {line}")


def _copy_results(out_dir, result, target, feedback="full", visibility="visible",
                  module_file=None):
    """Gradescope's results.json: the one in the submission's folder, or, if that could not
    be written, one written here from the result (atomically, capped, as always)."""
    source = os.path.join(out_dir, result.folder or result.name, "results.json")
    try:
        with open(source, "rb") as handle:
            data = handle.read()
    except OSError:
        data = results_text(result, feedback=feedback, visibility=visibility,
                            module_file=module_file).encode("utf-8")
    files.write_bytes(target, data)
