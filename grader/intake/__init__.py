"""Intake: turn whatever a student uploaded into one folder holding a plain `attention.py`.

A submission is a `.py` file, an `.ipynb` notebook, a `.zip` archive or a folder. Intake
finds the student's code in it, reads it as text whatever the editor did to it, converts a
notebook to a module, and copies the student's other .py files beside it (their own
helpers). What it cannot accept becomes an IntakeError whose message tells the student
what is wrong; what it changed becomes a note in the feedback.
"""
import dataclasses
import os
import re
import shutil
import tempfile

from .archive import extract
from .errors import IntakeError
from .notebook import notebook_to_module
from .text import decode_source

__all__ = ["IntakeError", "Staged", "stage", "submission_names"]

MODULE = "attention.py"
SKIP_DIRS = {"__MACOSX", "__pycache__", ".git", ".ipynb_checkpoints", "node_modules", ".venv", "venv"}
NOT_THE_SUBMISSION = re.compile(r"^(test_.*|.*_test|conftest|setup|sitecustomize|usercustomize)\.py$")
LMS_SUFFIX = re.compile(r"^attention([ _-]*(\(\d+\)|\d+|v\d+|final|copy))*$", re.IGNORECASE)
MAX_HELPER_BYTES = 2 * 1024 * 1024


@dataclasses.dataclass
class Staged:
    name: str                 # the submission's name in the gradebook and the output folder
    source: str               # what was uploaded
    file: str = None          # the staged attention.py
    notes: list = dataclasses.field(default_factory=list)
    error: str = None         # why it cannot be graded (IntakeError), if so


def submission_names(paths):
    """A unique name per submission: the file or folder name without its extension.

    nbgrader's layout `submitted/<student>/<assignment>/` names it after the student; names
    that still collide get the parent folder's name, then a counter.
    """
    def base(path):
        path = os.path.normpath(path)
        name = os.path.basename(path)
        stem, ext = os.path.splitext(name)
        if ext.lower() in (".py", ".ipynb", ".zip"):
            name = stem
        parent = os.path.basename(os.path.dirname(path))
        if os.path.isdir(path) and name.lower() == "attention" and parent:
            name = parent
        return name

    names = [base(p) for p in paths]
    counts = {name: names.count(name) for name in names}
    for i, name in enumerate(names):
        if counts[name] > 1:
            parent = os.path.basename(os.path.dirname(os.path.abspath(paths[i])))
            names[i] = f"{parent}-{name}" if parent else name
    taken = set()
    for i, name in enumerate(names):
        unique, counter = name, 1
        while unique in taken:
            counter += 1
            unique = f"{name}-{counter}"
        taken.add(unique)
        names[i] = unique
    return names


def _candidates(folder):
    found = []
    for current, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("."))
        depth = os.path.relpath(current, folder).count(os.sep) + (current != folder)
        for name in sorted(files):
            found.append((depth, os.path.join(current, name)))
    return found


def locate(folder, label):
    """The file in `folder` that holds the student's code."""
    files = _candidates(folder)
    def pick(test):
        matches = [(d, p) for d, p in files if test(os.path.basename(p))]
        if not matches:
            return None
        best = min(d for d, _ in matches)
        shallowest = [p for d, p in matches if d == best]
        if len(shallowest) > 1:
            shown = ", ".join(os.path.relpath(p, folder) for p in shallowest)
            raise IntakeError(f"{label} holds several candidate files ({shown}); keep only one.")
        return shallowest[0]

    for test in (lambda n: n == "attention.py",
                 lambda n: n == "attention.ipynb",
                 lambda n: n.lower().endswith(".py") and LMS_SUFFIX.match(n[:-3]),
                 lambda n: n.lower().endswith(".ipynb") and LMS_SUFFIX.match(n[:-6])):
        chosen = pick(test)
        if chosen:
            return chosen
    py = [p for _, p in files if p.endswith(".py") and not NOT_THE_SUBMISSION.match(os.path.basename(p))]
    if len(py) == 1:
        return py[0]
    notebooks = [p for _, p in files if p.endswith(".ipynb")]
    if not py and len(notebooks) == 1:
        return notebooks[0]
    listing = ", ".join(os.path.relpath(p, folder) for _, p in files[:10]) or "nothing"
    raise IntakeError(f"{label} has no attention.py (it contains: {listing}). Name your file "
                      f"attention.py.")


def _read(path, label):
    with open(path, "rb") as handle:
        data = handle.read()
    if path.lower().endswith(".ipynb"):
        return notebook_to_module(data, label)
    return decode_source(data, label)


def stage(path, dest, name):
    """Stage the submission at `path` into the new folder `dest`; never raises IntakeError."""
    label = os.path.basename(os.path.normpath(path))
    staged = Staged(name=name, source=path)
    os.makedirs(dest, exist_ok=True)
    unpacked = None
    try:
        if os.path.isdir(path):
            folder = path
            chosen = locate(folder, label)
        elif path.lower().endswith(".zip"):
            unpacked = tempfile.mkdtemp(prefix="attnkit-unzip-")
            staged.notes += extract(path, unpacked, label)
            folder = unpacked
            chosen = locate(folder, label)
        elif os.path.isfile(path):
            folder, chosen = None, path
        else:
            raise IntakeError(f"{path} does not exist.")
        if not (chosen.lower().endswith((".py", ".ipynb"))):
            raise IntakeError(f"{label} is not a .py file, a notebook, a zip or a folder.")
        shown = os.path.relpath(chosen, folder) if folder else label
        text, notes = _read(chosen, shown)
        staged.notes += notes
        if folder is not None:
            _copy_helpers(os.path.dirname(chosen), chosen, dest, staged.notes)
        staged.file = os.path.join(dest, MODULE)
        with open(staged.file, "w", encoding="utf-8") as handle:
            handle.write(text)
    except IntakeError as error:
        staged.error = str(error)
    finally:
        if unpacked:
            shutil.rmtree(unpacked, ignore_errors=True)
    return staged


def _copy_helpers(folder, chosen, dest, notes):
    """The student's other modules beside attention.py (their own helpers), as text."""
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        if (path == chosen or not name.endswith(".py") or name == MODULE or not os.path.isfile(path)
                or os.path.islink(path) or os.path.getsize(path) > MAX_HELPER_BYTES):
            continue
        try:
            text, _ = _read(path, name)
        except IntakeError:
            continue
        with open(os.path.join(dest, name), "w", encoding="utf-8") as handle:
            handle.write(text)
