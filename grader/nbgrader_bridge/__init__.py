"""The kit in an nbgrader course, one module per concern.

    notebook.py   the one solution -> nbgrader's source notebook (needs nbformat only)
    course.py     the course's folders as nbgrader's config lays them out; who submitted
    scores.py     the kit's results -> nbgrader's gradebook.db, through nbgrader.api
    feedback.py   each student's feedback where `nbgrader generate_feedback` puts it

Grading itself never happens in nbgrader's kernel: `grader nbgrader` (commands/nbgrader.py)
grades the submitted notebooks with the kit's own sandboxed batch (grader/grade) and only
writes the scores through nbgrader's API. nbgrader is an extra (`pip install -e '.[nbgrader]'`); only the
commands that need it import it, through `require_nbgrader`.
"""
import sys

INSTALL_HINT = "pip install -e '.[nbgrader]'"
# jsonschema checks the "iri" formats with rfc3987-syntax when it is installed (Jupyter's
# extras install it), and that module builds about 35 Earley parsers when it is imported:
# 1.8 s of CPU in every process that imports nbformat, measured here (a bare `nbgrader
# --version` 3.1 s, 1.3 s without it; python-jsonschema/jsonschema#1428). No schema that
# nbformat or nbgrader validates uses those formats: left out, jsonschema leaves them
# unchecked (its import of the module is optional) and nothing else changes.
IRI_CHECKER = "rfc3987_syntax"


def leave_out_iri_checker():
    """Keep jsonschema from importing rfc3987-syntax in this process (see IRI_CHECKER),
    unless something imported it (or jsonschema) already."""
    if "jsonschema" not in sys.modules:
        sys.modules.setdefault(IRI_CHECKER, None)  # an import of it raises ImportError


class NbgraderMissing(Exception):
    """nbgrader (or nbformat) is not installed; the message says how to install it."""


def require_nbgrader(what="this command"):
    """Import nbgrader, or raise NbgraderMissing with a one-line install hint."""
    leave_out_iri_checker()
    try:
        import nbgrader.api  # noqa: F401 - the extra (heavy): is it installed?
    except ImportError:
        raise NbgraderMissing(f"{what} needs nbgrader, which is not installed here: "
                              f"{INSTALL_HINT}") from None


def require_nbformat(what="this command"):
    """Import nbformat, or raise NbgraderMissing with a one-line install hint."""
    leave_out_iri_checker()
    try:
        import nbformat  # noqa: F401 - needed only to write a notebook: is it installed?
    except ImportError:
        raise NbgraderMissing(f"{what} needs nbformat, which is not installed here: "
                              f"{INSTALL_HINT}") from None
