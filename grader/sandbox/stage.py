"""The worker's private folder, staged before it starts: the submission and what it may import.

    stage_runtime(stage_dir)                  the worker's runtime/ (copied once per stage folder)
    copy_submission_folder(file, work_dir, max_bytes)
                                              the submission's file and the regular files beside it
    imports = imports_of(assignment)          the module names the submission is imported by and
                                              may import: its own, and the earlier assignments'
                                              it builds on (the declaration's `builds_on`)
    stage_given(given_files(imports), work_dir)
                                              the earlier solutions declared `given`, read-only

An earlier assignment reaches a worker in one of two ways, as the later one declares it:
`provide = "student"`: the student's own earlier file, handed in beside the later one
(copy_submission_folder copies it with the other files); `provide = "given"`: the earlier
assignment's solution, public once the instructor says so. Nothing of a solution is staged
unless the declaration says `given`.
"""
import dataclasses
import importlib.machinery
import keyword
import os
import shutil
import stat
import sys
import sysconfig

from ..release.core import DropInstructorOnly, ReleaseError, Source

MAX_MODULE_NAME = 64   # characters of a module name the worker registers (checked there too)

RUNTIME_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "runtime")


def stage_runtime(stage_dir):
    """The worker's runtime/, copied under `stage_dir`/shared/ (once): its parent goes on the
    worker's sys.path at level `none`, so it must be listable by a throwaway uid, which the
    stage folder (0711) is not. Returns the copy's path."""
    shared = os.path.join(stage_dir, "shared")
    os.makedirs(shared, mode=0o755, exist_ok=True)
    os.chmod(shared, 0o755)
    runtime = os.path.join(shared, "runtime")
    if not os.path.isdir(runtime):
        shutil.copytree(RUNTIME_DIR, runtime, ignore=shutil.ignore_patterns("__pycache__"))
        for folder, dirs, files in os.walk(runtime):
            os.chmod(folder, 0o755)
            for name in files:
                os.chmod(os.path.join(folder, name), 0o644)
    return runtime


def copy_submission_folder(submission_file, work_dir, max_bytes, max_entries=2000, max_depth=8):
    """Copy the submission's file and the regular files beside it (helpers it may import)
    into the worker's private folder, never through a link, a FIFO or a device, and within a
    budget of bytes and entries. `grader grade` passes intake's staged folder, which holds
    only regular files; a hand run (`pytest tests_hidden --submission FILE`) may point into
    any folder, and what is past the budget is left out."""
    source_dir = os.path.dirname(os.path.abspath(submission_file))
    first = os.path.basename(submission_file)
    inside = os.path.abspath(work_dir) + os.sep  # never copy the worker's own folder into itself
    budget = {"bytes": max_bytes, "entries": max_entries}

    def copy_file(src, dst):
        try:
            fd = os.open(src, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            return
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode) or info.st_size > budget["bytes"]:
                return
            budget["bytes"] -= info.st_size
            with open(fd, "rb", closefd=False) as source, open(dst, "wb") as out:
                shutil.copyfileobj(source, out, length=1 << 16)
        finally:
            os.close(fd)

    def walk(src, dst, depth):
        try:
            entries = sorted(os.scandir(src), key=lambda e: (e.name != first, e.name))
        except OSError:
            return
        for entry in entries:
            if budget["entries"] <= 0:
                return
            budget["entries"] -= 1
            if entry.is_symlink() or inside.startswith(os.path.abspath(entry.path) + os.sep):
                continue
            target = os.path.join(dst, entry.name)
            if entry.is_file(follow_symlinks=False):
                copy_file(entry.path, target)
            elif entry.is_dir(follow_symlinks=False) and depth < max_depth \
                    and entry.name != "__pycache__":
                os.makedirs(target, exist_ok=True)
                walk(entry.path, target, depth + 1)

    os.makedirs(work_dir, exist_ok=True)
    walk(source_dir, work_dir, 0)


@dataclasses.dataclass(frozen=True)
class Imports:
    """The names a submission is imported by and may import (the worker's `sys.modules`)."""
    module: str           # the submission's own module (the declaration's `module`)
    given: tuple = ()     # ((module, absolute path of the earlier solution), ...): staged
    student: tuple = ()   # ((module, earlier assignment's name), ...): the student's own files

    def earlier_file(self, module):
        """`<module>.py` when `module` is an earlier assignment's the student hands in
        (the name a failed import should ask for), else None."""
        return f"{module}.py" if any(name == module for name, _ in self.student) else None


def check_module_name(name):
    """`name` if a worker may register a module under it: a Python name, not a keyword, at
    most MAX_MODULE_NAME characters, not a module of the standard library or one installed
    (torch, numpy, ...); else ValueError saying why."""
    if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name):
        raise ValueError(f"module name {name!r} is not a Python name")
    if len(name) > MAX_MODULE_NAME:
        raise ValueError(f"module name {name[:20]!r}... is longer than {MAX_MODULE_NAME} "
                         "characters")
    if name in sys.stdlib_module_names or name == "runtime" or _installed(name):
        raise ValueError(f"module name {name!r} is taken by a module the worker's Python has "
                         "(the submission's folder comes last on its sys.path)")
    return name


def _installed(name):
    """Is `name` a top-level module of the Python installation the worker runs (its standard
    library and site-packages, as `python -I` sees them)?"""
    paths = sysconfig.get_paths()
    roots = {paths[key] for key in ("stdlib", "platstdlib", "purelib", "platlib")}
    roots |= {os.path.join(paths["platstdlib"], "lib-dynload")}
    return importlib.machinery.PathFinder.find_spec(name, sorted(roots)) is not None


def imports_of(assignment):
    """The Imports of `assignment` (grader/assignment.py), its builds_on resolved in its kit.
    ValueError when they cannot work: a name twice, or a given solution that itself imports
    an earlier module this assignment does not declare (it would fail in the worker)."""
    given, student = [], []
    for dep, earlier in assignment.earlier():
        entry = (earlier.module, earlier.solution) if dep.provide == "given" \
            else (earlier.module, earlier.name)
        (given if dep.provide == "given" else student).append(entry)
    names = [assignment.module] + [name for name, _ in given + student]
    for name in names:
        check_module_name(name)
    if len(set(names)) != len(names):
        raise ValueError(f"{assignment.name}: two of its modules share a name ({', '.join(names)})")
    for dep, earlier in assignment.earlier():
        if dep.provide != "given":
            continue
        for _, before in earlier.earlier():
            if before.module not in names:
                raise ValueError(
                    f"{assignment.name} builds on {earlier.name} (given), whose solution "
                    f"imports {before.module} ({earlier.name} builds on {before.name}): declare "
                    f"{before.name} in {assignment.name}'s builds_on too")
    return Imports(assignment.module, tuple(given), tuple(student))


def given_files(imports):
    """{file name: bytes}: each given earlier solution as the worker gets it, `<module>.py`,
    its `### BEGIN INSTRUCTOR ONLY` blocks dropped (as `grader release` drops them).
    ValueError when one cannot be read."""
    files = {}
    for module, path in imports.given:
        try:
            with open(path, encoding="utf-8") as handle:
                source = Source(path, handle.read().split("\n"))
            files[f"{module}.py"] = "\n".join(DropInstructorOnly().apply(source).lines).encode()
        except (OSError, UnicodeError, ReleaseError) as exc:
            raise ValueError(f"the given {module}.py ({path}) cannot be staged: {exc}") from None
    return files


def stage_given(files, work_dir):
    """Write given_files() into `work_dir`, read-only, each in place of any file of that name
    the student handed in (the declaration chose the given one)."""
    for name, data in files.items():
        target = os.path.join(work_dir, name)
        if os.path.isdir(target) and not os.path.islink(target):
            shutil.rmtree(target)
        elif os.path.lexists(target):
            os.unlink(target)
        with open(target, "xb") as out:
            out.write(data)
        os.chmod(target, 0o444)
