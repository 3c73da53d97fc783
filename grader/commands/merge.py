"""`grader merge SHARD_DIR... --gradebook DIR`: the folders of `grader grade --shard K/N`
and `--parts` checked and merged into one gradebook (grader/merge/: what is refused, and
how). Refuses, writing nothing, with exit status 2 and the reason."""
import sys

from .. import course as courses
from .. import overrides as ledger
from ..merge import plan, write
from ..merge.errors import MergeError
from ..report.book import Gradebook
from .arguments import course_argument, gradebook_argument

NAME = "merge"


def add_parser(commands):
    parser = commands.add_parser(
        NAME, help="merge the folders of grader grade --shard / --parts into one gradebook",
        description="Check that the SHARD_DIRs (each the --out of grader grade --shard K/N or "
                    "--parts) are every shard of one class, graded with one suite and the "
                    "same settings, with no student graded twice differently and every part "
                    "graded for every student; then write DIR as one run would (grades.csv, "
                    "report.html, each student's files, what grader export reads) and "
                    "DIR/merge.json (which machine graded which shard and part). Refuses, "
                    "writing nothing, with exit status 2 and the reason.")
    parser.add_argument("shard_dirs", nargs="+", metavar="SHARD_DIR")
    gradebook_argument(parser, "the gradebook folder to write")
    course_argument(parser)
    return parser


def run(args):
    """Exit 0 when merged, 2 with one line saying why not."""
    try:
        book = Gradebook.open(args.out, args.course)
        merged, groups = plan(args.shard_dirs, args.out)
    except (MergeError, courses.CourseError, ledger.OverrideError) as error:
        print(f"grader merge: nothing was merged: {error}", file=sys.stderr)
        return 2
    final = write(merged, groups, book, args.kit_assignment)
    shown = "; ".join(f"parts {', '.join(p)}: {len(g)} shard(s)" for p, g in groups.items())
    print(f"Merged {len(merged)} students ({shown}) into {args.out}/grades.csv "
          f"({len(final)} rows)")
    return 0
