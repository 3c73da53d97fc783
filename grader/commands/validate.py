"""`grader validate [--assignment NAME]`: does the assignment's hidden suite grade the way it
should (grader/validate/)? The solution full marks, the skeleton 0, every catalog mistake
loses points in its part and is diagnosed as itself, the correct alternatives full marks with
no diagnosis; a table of every check, and exit status 0 only when all hold. `--docs PATH`
also writes the catalog's table with this run's scores (docs/mistakes.md).
"""
import datetime
import sys

from . import usage
from .arguments import suite_arguments, suite_problem

NAME = "validate"


def add_parser(commands):
    parser = commands.add_parser(
        NAME, help="check the hidden suite: solution full marks, skeleton 0, every catalog "
                   "mistake loses points in its part and is diagnosed as itself, "
                   "alternatives full marks with no diagnosis")
    parser.add_argument("--jobs", type=int, default=1, metavar="N")
    parser.add_argument("--out", default=None, metavar="DIR", help="keep the results here")
    parser.add_argument("--docs", default=None, metavar="PATH",
                        help="also write the catalog's table with this run's scores "
                             "(docs/mistakes.md)")
    suite_arguments(parser)
    return parser


def problem(args):
    return usage.first(lambda: suite_problem(args),
                       lambda: args.out and usage.output_folder("--out", args.out),
                       lambda: args.docs and usage.output_file("--docs", args.docs))


def run(args):
    # the grading machinery (grade/, the sandbox) is loaded only by the commands that grade:
    # gradebook, override and show never import it (tests/test_overrides.py NO_GRADING)
    from . import grading as runs
    grading = runs.Run(args)
    try:
        grading.choose_isolation()
    except runs.Refused as error:
        print(f"grader validate: {error}", file=sys.stderr)
        return 2
    try:
        ok, rows = runs.validate(grading.options, jobs=args.jobs, out_dir=args.out,
                            assignment=grading.assignment)
    except runs.SuiteFailed as error:
        print(f"grader validate: the hidden suite does not hold: {error}", file=sys.stderr)
        return 1
    print_table(rows)
    if args.docs:
        with open(args.docs, "w", encoding="utf-8") as out:
            out.write(runs.docs_table(rows, datetime.date.today().isoformat(), grading.assignment))
    return 0 if ok else 1


def print_table(rows, stream=None):
    """Every check, ok or not (`!!`), and how many hold."""
    stream = stream or sys.stdout
    print(f"\n{'':2} {'kind':<12} {'name':<28} result", file=stream)
    for item, ok, detail in rows:
        print(f"{'ok' if ok else '!!':2} {item.kind:<12} {item.name:<28} {detail}", file=stream)
    bad = [item.name for item, ok, _ in rows if not ok]
    settings = {item.result.carry_forward for item, _, _ in rows if item.result is not None}
    if "on" in settings:  # grader/catalog/carry.py; validate grades with the default
        print("\nGraded with error carried forward on (the default): no case of a function "
              "that calls a mistake's function may lose points.", file=stream)
    print(f"\n{len(rows) - len(bad)} of {len(rows)} checks hold" +
          (f"; failing: {', '.join(bad)}" if bad else "."), file=stream)
