"""Base code: what every student was given or could copy from the book, which never counts.

An assignment's base code is what its declaration names (grader/assignment.py: the skeleton
students start from, the public self-checks, the instructor's solution) and what its
folder's similarity_base.toml adds: `files` of that folder (the book's own code, as the
correct alternatives hold it) and `examples`, the book's example calls from the same
sections as students paste them as demos. A k-gram of a submission found in any of them is
removed before two submissions are compared.

    texts = base_texts(assignment)      # [(label, text)]; assignment None: the default one
"""
import os
import tomllib

from .. import paths
from ..assignment import load

DECLARATION = "similarity_base.toml"
KEYS = {"files": list, "examples": str}
MAX_BYTES = 1024 * 1024     # of the declaration and of each base file (the kit's own files)


class BaseError(ValueError):
    """similarity_base.toml is wrong: the message names the file and the key."""


def _assignment(assignment):
    if assignment is None:
        assignment = load()
    return assignment


def declared(assignment=None):
    """(files, examples) that the assignment's similarity_base.toml declares: absolute
    paths inside its folder, and the example calls' text; ((), "") without the file."""
    assignment = _assignment(assignment)
    path = os.path.join(assignment.folder, DECLARATION)
    if not os.path.isfile(path):
        return (), ""
    try:
        with open(path, "rb") as handle:
            data = tomllib.loads(handle.read(MAX_BYTES + 1).decode("utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise BaseError(f"{path}: {error}") from None
    unknown = sorted(set(data) - set(KEYS))
    if unknown:
        raise BaseError(f"{path}: unknown key {unknown[0]!r} (known: {', '.join(KEYS)})")
    for key, kind in KEYS.items():
        if key in data and not isinstance(data[key], kind):
            raise BaseError(f"{path}: {key!r} must be a {'list' if kind is list else 'string'}")
    folder = os.path.realpath(assignment.folder)
    files = []
    for name in data.get("files", []):
        if not isinstance(name, str) or os.path.isabs(name):
            raise BaseError(f"{path}: files holds {name!r}, not a path inside {folder}")
        full = os.path.realpath(os.path.join(folder, name))
        if os.path.commonpath([full, folder]) != folder:
            raise BaseError(f"{path}: files holds {name!r}, which is outside {folder}")
        files.append(full)
    return tuple(files), data.get("examples", "")


def base_files(assignment=None):
    """The base code's files, those that exist (a kit without the skeleton still runs)."""
    assignment = _assignment(assignment)
    candidates = [assignment.skeleton, assignment.public_tests, assignment.solution]
    candidates += declared(assignment)[0]
    return [path for path in candidates if os.path.isfile(path)]


def base_texts(assignment=None):
    """(label, text) of every piece of base code."""
    assignment = _assignment(assignment)
    texts = []
    for path in base_files(assignment):
        with open(path, encoding="utf-8", errors="replace") as handle:
            texts.append((os.path.relpath(path, paths.KIT_ROOT), handle.read(MAX_BYTES)))
    examples = declared(assignment)[1]
    if examples:
        where = os.path.relpath(os.path.join(assignment.folder, DECLARATION), paths.KIT_ROOT)
        texts.append((f"the book's example calls ({where})", examples))
    return texts
