"""Catalogs of mistakes, for grading a hidden suite and for diagnosing submissions.

An assignment's catalog is a table (OpInfo style: data, not code) that lives with it,
`tests_hidden/<name>/mistakes.py`: each mistake is a small edit of the solution with an id,
the part it costs and a teaching sentence in English and Chinese. `mistakes.py` here is the
machinery: `Catalog.of(assignment)` is that table with its lookups, passed to whatever needs
it. `build.py` turns an entry into a module (the solution with that edit, trusted code);
`diagnose.py` runs the same probe on the mistakes a failing case could come from and names
those whose results equal the submission's; `carry.py` judges a caller's cases on top of a
callee's named mistake. `grader validate` grades every entry and checks that it loses points
in its part and is diagnosed as itself.
"""
from .mistakes import Catalog, CatalogError, Mistake, base_id, members, output_tensor

__all__ = ["Catalog", "CatalogError", "Mistake", "base_id", "members", "output_tensor"]
