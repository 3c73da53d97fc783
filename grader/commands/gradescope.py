"""`grader gradescope --out autograder.zip`: the autograder zip for Gradescope
(platforms/gradescope/autograder.py), grading `--assignment NAME` with the feedback students
see (`--feedback`, `--visibility`, `--lang`) and the isolation the container allows."""
import sys

from ..platforms.gradescope import autograder
from . import usage
from .arguments import disclosure_arguments, isolation_argument, language_argument

NAME = "gradescope"


def add_parser(commands):
    parser = commands.add_parser(NAME, help="write the autograder zip for Gradescope")
    parser.add_argument("--out", default="autograder.zip")
    parser.add_argument("--torch", default=None, help="torch version setup.sh installs "
                        "(default: the one installed here)")
    isolation_argument(parser)
    language_argument(parser, "language of the feedback students read (default en)")
    disclosure_arguments(parser)
    return parser


def problem(args):
    return usage.output_file("--out", args.out)


def _torch_version():
    import torch  # heavy (seconds): imported only to read the version setup.sh installs
    return torch.__version__.split("+")[0]


def run(args):
    version = args.torch or _torch_version()
    chosen = getattr(args, "kit_assignment", None)
    try:
        autograder.build(args.out, version, args.isolation, feedback=args.feedback,
                         visibility=args.visibility, lang=args.lang, assignment=chosen)
    except OSError as error:  # writing the zip (the reason names the file)
        print(f"grader gradescope: {error}", file=sys.stderr)
        return 2
    print(f"wrote {args.out}: grades {getattr(chosen, 'name', chosen) or 'the default assignment'}; "
          f"setup.sh installs torch=={version} (CPU); students see "
          f"--feedback {args.feedback}, each test --visibility {args.visibility}; upload it as "
          f"the assignment's autograder")
    return 0
