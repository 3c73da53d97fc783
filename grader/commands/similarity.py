"""`grader similarity --gradebook DIR [--threshold T]`: which submissions are alike beyond the
book's code (grader/similarity/): DIR/similarity.csv and .html, linked from report.html. A
review aid, never a verdict: no grade changes; nothing is run."""
import argparse
import os
import sys

from ..report import gradebook
from ..similarity import DEFAULT_THRESHOLD, MIN_SHARED
from ..similarity.command import relink_report
from ..similarity.command import run as compare_class
from ..textsafety import safe_text

NAME = "similarity"


def _count(n, noun):
    """The console's English: "1 pair", "2 pairs"."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def threshold_value(text):
    """argparse type: a score from 0 to 1."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"{text} is not a score above 0 and at most 1")
    return value


def add_parser(commands):
    parser = commands.add_parser(
        NAME, help="which submissions are alike beyond the book's code: "
                   "DIR/similarity.html and .csv (a review aid; no grade changes)",
        description="Compare the code of every two submissions of the gradebook DIR with "
                    "copydetect, the skeleton, public tests, solution and the book's own code "
                    "removed as base code; write DIR/similarity.csv (every pair) and "
                    "DIR/similarity.html (flagged pairs side by side, clusters), linked from "
                    "report.html. A review aid, never a verdict: no grade changes.")
    parser.add_argument("--from", dest="source", default="grades", metavar="DIR",
                        help="the gradebook folder (the --out of grader grade; default grades)")
    # --gradebook: the one flag name every command takes for the gradebook folder
    parser.add_argument("--gradebook", dest="source", default=argparse.SUPPRESS, metavar="DIR",
                        help="the gradebook folder (the same as --from)")
    parser.add_argument("--threshold", type=threshold_value, default=DEFAULT_THRESHOLD,
                        metavar="T", help="flag pairs scoring at least T (0 to 1; default "
                                          f"{DEFAULT_THRESHOLD:g})")
    return parser


def run(args, stream=None):
    stream = stream or sys.stdout
    out_dir = args.source
    if not os.path.isdir(out_dir) or not gradebook.load_records(out_dir):
        print(f"grader similarity: --from {safe_text(out_dir, 300)} is not a graded gradebook "
              "folder (the --out of grader grade)", file=sys.stderr)
        return 2
    try:
        import copydetect  # noqa: F401 - the similarity extra (heavy): is it installed?
    except ImportError:
        print("grader similarity: needs copydetect: pip install -e '.[similarity]'",
              file=sys.stderr)
        return 2
    pairs, groups, found, skipped = compare_class(out_dir, args.threshold, args.kit_assignment)
    flagged = sum(p.flagged for p in pairs)
    big = sum(len(g) > 2 for g in groups)
    print(f"Wrote {out_dir}/similarity.html and similarity.csv: {_count(len(found), 'submission')}, "
          f"{_count(len(pairs), 'pair')}, {flagged} flagged (score >= {args.threshold:g} and "
          f"{MIN_SHARED} shared characters), {_count(big, 'cluster')} of more than two, "
          f"{len(skipped)} skipped. A review aid: no grade changed.", file=stream)
    note = relink_report(out_dir, args.kit_assignment)
    if note:
        print(f"note: {note}", file=sys.stderr)
    return 0
