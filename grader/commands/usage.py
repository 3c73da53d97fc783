"""Mistakes on the `grader` command line, found before anything runs, each said in one line.

Each command's `problem(args)` (one module per command in grader/commands/) asks these of
what its parsed arguments name: the files a command reads
(`--solution`, `--hidden-tests`, `--readme`, `export --template`) must be there, of the right kind; the files it
writes (`--out` of `gradescope` and `export`, a folder for `export canvas-comments`,
`--output` and `--notebook` of `release`,
`--results-json`, `--docs`) must not be folders, and a single file's folder must exist; an
output folder (`--out` of `validate` and `nbgrader`) must not be a file; `--jobs` must be
at least 1 and every limit of the sandbox (`--memory-mb`, `--call-seconds`, ...) a number
above 0, since a limit of 0 grades every submission as 0. Relative paths are read from the current folder, and the
message says which folder that is, since the kit's own files are elsewhere.
"""
import dataclasses
import math
import os

from ..sandbox.limits import Limits
from ..textsafety import safe_text


def first(*checks):
    """The first of `checks` (each a function of no arguments) that finds a mistake, or None."""
    for check in checks:
        found = check()
        if found:
            return found
    return None


def _shown(path):
    return safe_text(str(path), 200)


def _where(path):
    """' (relative paths are read from CWD)' for a relative path, else ''."""
    if os.path.isabs(path):
        return ""
    return f" (relative paths are read from the current folder, {_shown(os.getcwd())})"


def input_file(flag, path, hint=""):
    if not os.path.exists(path):
        return f"{flag} {_shown(path)}: no such file{_where(path)}{hint}"
    if not os.path.isfile(path):
        return f"{flag} {_shown(path)} is not a file"
    if not os.access(path, os.R_OK):
        return f"{flag} {_shown(path)} cannot be read"
    return None


def hidden_tests(path):
    if not os.path.isdir(path):
        return f"--hidden-tests {_shown(path)}: no such folder{_where(path)}"
    if not os.path.isfile(os.path.join(path, "cases.py")):
        return (f"--hidden-tests {_shown(path)} holds no cases.py: it is not a hidden suite "
                "(the kit's are tests_hidden/<assignment>/)")
    if not os.path.isfile(os.path.join(path, "assignment.toml")):
        return (f"--hidden-tests {_shown(path)} holds no assignment.toml: a hidden suite "
                "declares its assignment (see tests_hidden/<name>/assignment.toml)")
    return None


def output_file(flag, path, make_folders=False):
    """A file the command will write: not a folder; its folder exists (unless the command
    makes it) and is a folder."""
    if os.path.isdir(path):
        return f"{flag} {_shown(path)} is a folder; give the file to write"
    folder = os.path.dirname(os.path.abspath(path))
    existing = folder
    while make_folders and not os.path.lexists(existing):
        existing = os.path.dirname(existing)
    if not os.path.lexists(existing):
        return f"{flag} {_shown(path)}: the folder {_shown(folder)} does not exist"
    if not os.path.isdir(existing):
        return f"{flag} {_shown(path)}: {_shown(existing)} is not a folder"
    return None


def output_folder(flag, path):
    if os.path.lexists(path) and not os.path.isdir(path):
        return f"{flag} {_shown(path)} exists and is not a folder"
    return None


def limits(args):
    """Every limit of the sandbox (grader/sandbox/limits.py) given must be a finite number
    above 0: a limit of 0 would grade every submission, the solution too, as 0."""
    for field in dataclasses.fields(Limits):
        value = getattr(args, field.name, None)
        if value is None:
            continue
        if not math.isfinite(value) or value <= 0:
            return (f"--{field.name.replace('_', '-')} {value:g}: give a number above 0 "
                    f"(default {field.default:g})")
    return None


def problem(args):
    """The first mistake in `args` (parsed by grader.cli), as one line, or None."""
    command = args.command
    checks = []
    if getattr(args, "solution", None) is not None:
        checks.append(lambda: input_file("--solution", args.solution))
    if getattr(args, "hidden_tests", None) is not None:
        checks.append(lambda: hidden_tests(args.hidden_tests))
    if getattr(args, "readme", None) is not None:
        declared = getattr(args, "kit_assignment", None)
        folder = getattr(declared, "student_folder", None) or "assignments/<assignment>"
        kit = os.path.join(folder, "README.zh-CN.md")
        checks.append(lambda: input_file("--readme", args.readme,
                                          f"; the kit's Chinese README is {_shown(kit)}"))
    if getattr(args, "jobs", None) is not None and args.jobs < 1:
        checks.append(lambda: f"--jobs {args.jobs}: give 1 or more")
    checks.append(lambda: limits(args))
    if command in ("validate", "nbgrader") and getattr(args, "out", None):
        checks.append(lambda: output_folder("--out", args.out))
    if command == "release":
        if (getattr(args, "out", None) or "").endswith(".py"):
            checks.append(lambda: output_file("--out", args.out, make_folders=True))
        checks.append(lambda: output_file("--output", args.output, make_folders=True))
        if args.notebook:
            checks.append(lambda: output_file("--notebook", args.notebook, make_folders=True))
    if command == "export" and getattr(args, "lms", None) == "canvas-comments":
        checks.append(lambda: output_folder("--out", args.out))   # it writes a folder
        checks.append(lambda: output_file("--out", os.path.join(args.out, "comments.json"),
                                           make_folders=True))
    elif command in ("gradescope", "export"):
        checks.append(lambda: output_file("--out", args.out))
    if command == "export" and getattr(args, "template", None):
        checks.append(lambda: input_file("--template", args.template))
    if getattr(args, "results_json", None):
        checks.append(lambda: output_file("--results-json", args.results_json))
    if getattr(args, "docs", None):
        checks.append(lambda: output_file("--docs", args.docs))
    for check in checks:
        found = check()
        if found:
            return found
    return None
