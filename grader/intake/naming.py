"""The assignment's file as students hand it in: `<module>.py` or `<module>.ipynb`, and the
names an LMS or an operating system gives a second upload of it.

Intake and the layouts are given the assignment's module name (its declaration's `module`,
grader/assignment.py); `module_name(None)` is the default assignment's, for callers that
name none. Nothing here names an assignment.

    like("transformer").match("transformer-1")       # Canvas's re-upload suffix
    like("transformer").match("Transformer (2)")     # a browser's or an OS's copy
    like("transformer").match("rnn") is None
"""
import functools
import re

from ..assignment import load

# what is added to a re-uploaded or copied name: -1 (Canvas), " (2)" (browsers, Windows),
# _v3, " final", " copy" (a student's own), in any number and order. A run of digits is one
# suffix, never split (`(?!\d)`): split, a name of n digits and a mismatch had 2^n ways to
# fail (25 digits took 4 s, each more doubling it); now it fails in one pass
SUFFIXES = r"(?:[ _-]*(?:\(\d+\)|\d+(?!\d)|v\d+(?!\d)|final|copy))*"


def module_name(module=None):
    """`module`, else the default assignment's module name."""
    if module is None:
        module = load().module
    return module


@functools.lru_cache(maxsize=64)
def like(module):
    """The pattern of a file stem that is `module` with any of SUFFIXES, in any case."""
    return re.compile(rf"^{re.escape(module)}{SUFFIXES}$", re.IGNORECASE)


def file_names(module):
    """(`<module>.py`, `<module>.ipynb`): the names a submission's work is looked for by."""
    return f"{module}.py", f"{module}.ipynb"
