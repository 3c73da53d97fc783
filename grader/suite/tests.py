"""The hidden tests: one harness per kind of check, run over the assignment's case table.

A suite's test file imports these (tests_hidden/<name>/test_<name>.py), which makes them
its tests: pytest collects them there, parametrized over the table's cases (plugin.py).
"""
import pytest

from . import checks


@pytest.mark.cases("match")
def test_matches_reference(suite, case, student, reference):
    """Outputs, stored weights and gradients equal the instructor's solution."""
    checks.check_match(suite, case, student, reference)


@pytest.mark.cases("eval")
def test_eval_mode_is_deterministic(suite, case, student, reference):
    checks.check_eval(suite, case, student, reference)


@pytest.mark.cases("dropout")
def test_dropout_acts_on_the_weights(suite, case, student, reference):
    checks.check_dropout(suite, case, student, reference)


@pytest.mark.cases("device")
def test_device_discipline(suite, case, student, reference):
    """CPU-only machines: tensors are made on the inputs' device (grader/sandbox/runtime/guards.py)."""
    checks.check_device(suite, case, student, reference)


@pytest.mark.cases("cuda")
def test_on_cuda(suite, case, student, reference):
    checks.check_cuda(suite, case, student, reference)
