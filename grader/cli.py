"""The `grader` command: one subcommand per thing an instructor does."""
import argparse
import sys

from . import paths


def build_parser():
    parser = argparse.ArgumentParser(
        prog="grader", description="Release, grade and validate the attention assignment.")
    commands = parser.add_subparsers(dest="command", required=True)

    release = commands.add_parser("release", help="write the student skeleton from the solution")
    release.add_argument("--solution", default=paths.SOLUTION)
    release.add_argument("--output", default=paths.SKELETON)
    release.add_argument("--check", action="store_true",
                         help="only check that the skeleton is up to date (exit 1 if not)")

    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    if args.command == "release":
        from . import release
        try:
            return release.main(args)
        except release.ReleaseError as error:
            print(f"grader release: {error}", file=sys.stderr)
            return 2
    return 2
