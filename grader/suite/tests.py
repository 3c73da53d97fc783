"""The hidden tests: one harness per kind of check, run over the assignment's case table.

Each is made from its entry in checks.KINDS (its name, its check, its docstring), so that a
kind of check is one entry there. A suite's test file imports these by name
(tests_hidden/<name>/test_<name>.py), which makes them its tests: pytest collects them
there, parametrized over the table's cases of that kind (plugin.py).
"""
import pytest

from . import checks


def _test_of(kind):
    """The hidden test of one kind of check: `kind.check` over each case of that kind."""
    @pytest.mark.cases(kind.name)
    def test(suite, case, student, reference):
        kind.check(suite, case, student, reference)
    test.__name__ = test.__qualname__ = kind.test
    test.__doc__ = kind.about
    return test


for _kind in checks.KINDS:
    globals()[_kind.test] = _test_of(_kind)
__all__ = [kind.test for kind in checks.KINDS]
