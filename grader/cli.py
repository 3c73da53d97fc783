"""The `grader` command: the registry of its verbs, one module each in grader/commands/.

Each command module has its NAME, `add_parser(commands)` (its arguments), optionally
`problem(args)` (its usage mistakes, one line, before anything is read or written) and
`assignment_name(args)` (which assignment it works on when --assignment names none), and
`run(args)` (the exit status). `main` parses the command line, loads the assignment, asks
the command's usage checks, sets the language and runs it.
"""
import argparse
import sys

from . import __version__, i18n
from .commands import (export, grade, gradebook, gradescope, merge, nbgrader, override, release,
                       show, similarity, validate)
from .commands.arguments import assignment_argument, load_assignment

# in the order `grader --help` lists them
COMMANDS = (release, grade, gradescope, export, gradebook, show, override, nbgrader, merge,
            similarity, validate)
BY_NAME = {command.NAME: command for command in COMMANDS}


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
    parser.add_argument("--version", action="version", version=f"grader {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        assignment_argument(command.add_parser(commands))
    return parser


def _named(args):
    """The assignment --assignment names (None: the kit's only one, else the default)."""
    return getattr(args, "kit_assignment", None)


def main(argv=None):
    args = build_parser().parse_args(argv)
    command = BY_NAME[args.command]
    name = getattr(command, "assignment_name", _named)(args)
    wrong = load_assignment(args, name)
    if wrong:
        print(f"grader {args.command}: {wrong}", file=sys.stderr)
        return 2
    mistake = command.problem(args) if hasattr(command, "problem") else None
    if mistake:
        print(f"grader {args.command}: {mistake}", file=sys.stderr)
        return 2
    if getattr(args, "lang", None):
        i18n.set_language(args.lang)  # this process writes the feedback; the trusted ones get it too
    return command.run(args)
