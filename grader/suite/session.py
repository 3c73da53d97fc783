"""One run of a hidden suite: the assignment, its table, and what the run has learnt so far.

The pytest plugin keeps one Session on pytest's config (`config.attnkit_suite`); the checks
take it as their first argument. Nothing of a run lives in a module global, so a process
may run suites of several assignments, one after another or side by side.
"""
import functools

from .. import i18n
from ..catalog import Catalog, diagnose
from .table import Table


def _language(lang):
    """One of i18n.languages() (English for what is none of them)."""
    try:
        return i18n.normalize(str(lang))
    except ValueError:
        return i18n.ENGLISH


class Session:
    def __init__(self, assignment, lang="en", table=None):
        self.assignment = assignment
        self.table = table if table is not None else Table(assignment)
        self.lang = _language(lang)       # of the student's feedback
        self.failed_parts = set()         # parts with a failed case so far
        self.search = diagnose.Search()   # how far the search for mistakes has gone
        self.asked_ahead = False          # the suite's probes went to the worker in one request
        self.selected = None              # ids of the cases whose tests run (None: every case)
        self.parts = {}                   # nodeid -> part, filled at collection
        self.graph = None                 # the submission's call graph (catalog/callgraph.py)

    def reaches(self, target):
        """The api names the submission's code of `target` reaches (None: no submission
        read, as in a catalog's own runs: the solution's calls are assumed)."""
        if self.graph is None:
            return None
        return self.graph.reaches(target, self.assignment.api)

    @functools.cached_property
    def catalog(self):
        """The assignment's catalog of mistakes (tests_hidden/<name>/mistakes.py), built once
        per run, when a diagnosis first needs it."""
        return Catalog.of(self.assignment)

    def fail(self, part):
        """A case of `part` failed: the diagnosis searches that part's mistakes."""
        self.failed_parts.add(part)
