"""One catalog of mistakes, for grading the suite and for diagnosing submissions.

`mistakes.py` is the table (OpInfo style: data, not code): each mistake is a small edit of
the solution with an id, the part it costs and a teaching sentence in English and Chinese.
`build.py` turns an entry into a module (the solution with that edit, trusted code);
`diagnose.py` runs the same probe on the mistakes a failing case could come from and names
those whose results equal the submission's. `grader validate` grades every entry and checks
that it loses points in its part and is diagnosed as itself.
"""
from .mistakes import CALLS, EXPERIMENTS, MISTAKES, Mistake, by_id, callers, suspects_for

__all__ = ["CALLS", "EXPERIMENTS", "MISTAKES", "Mistake", "by_id", "callers", "suspects_for"]
