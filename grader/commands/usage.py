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


def shown(path):
    return safe_text(str(path), 200)


def _where(path):
    """' (relative paths are read from CWD)' for a relative path, else ''."""
    if os.path.isabs(path):
        return ""
    return f" (relative paths are read from the current folder, {shown(os.getcwd())})"


def input_file(flag, path, hint=""):
    if not os.path.exists(path):
        return f"{flag} {shown(path)}: no such file{_where(path)}{hint}"
    if not os.path.isfile(path):
        return f"{flag} {shown(path)} is not a file"
    if not os.access(path, os.R_OK):
        return f"{flag} {shown(path)} cannot be read"
    return None


def hidden_tests(path):
    if not os.path.isdir(path):
        return f"--hidden-tests {shown(path)}: no such folder{_where(path)}"
    if not os.path.isfile(os.path.join(path, "cases.py")):
        return (f"--hidden-tests {shown(path)} holds no cases.py: it is not a hidden suite "
                "(the kit's are tests_hidden/<assignment>/)")
    if not os.path.isfile(os.path.join(path, "assignment.toml")):
        return (f"--hidden-tests {shown(path)} holds no assignment.toml: a hidden suite "
                "declares its assignment (see tests_hidden/<name>/assignment.toml)")
    return None


def output_file(flag, path, make_folders=False):
    """A file the command will write: not a folder; its folder exists (unless the command
    makes it) and is a folder."""
    if os.path.isdir(path):
        return f"{flag} {shown(path)} is a folder; give the file to write"
    folder = os.path.dirname(os.path.abspath(path))
    existing = folder
    while make_folders and not os.path.lexists(existing):
        existing = os.path.dirname(existing)
    if not os.path.lexists(existing):
        return f"{flag} {shown(path)}: the folder {shown(folder)} does not exist"
    if not os.path.isdir(existing):
        return f"{flag} {shown(path)}: {shown(existing)} is not a folder"
    return None


def output_folder(flag, path):
    if os.path.lexists(path) and not os.path.isdir(path):
        return f"{flag} {shown(path)} exists and is not a folder"
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
