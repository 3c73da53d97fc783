"""What a batch's fork server prepares once, before it forks any trusted process.

Every trusted process of a batch runs the same hidden suite against the same reference:
the same case table, the same weights for each module's case, the same reference result
for each probe, the same catalog of mistakes. The fork server (grader/grade/zygote.py)
computes them here, once, and every trusted process forked after it starts with them: its
reference results read without a hash of their inputs' bytes or a copy (harness/memo.py),
its table and catalog already built, the solution and each mistake's module already
compiled. Nothing here runs a line of a submission.
"""
from .. import assignment as assignments
from ..catalog.build import mistake_module
from ..harness import Reference, memo
from . import ahead, checks
from .session import Session


def prepare(hidden_tests, solution):
    """The suite in `hidden_tests` (a hidden suite's folder) against `solution`: its table,
    each module case's weights, the reference's result of every probe the suite asks
    (ahead.asks, every case selected) and the catalog's mistake modules, kept in this
    process. Returns how many probes' results it computed."""
    declared = assignments.load_folder(hidden_tests)
    session = Session(declared)
    reference = Reference(solution, assignment=declared)
    asks = ahead.asks(session, reference, lambda case: checks._state(case, reference))
    for mistake in session.catalog:
        mistake_module(mistake, reference.path, session.catalog.module)
    memo.settled()  # kept here; no trusted process sends them back
    return len(asks)
