"""The hidden tests: one harness per kind of check, run over the case table in cases.py."""
import pytest

import checks


@pytest.mark.cases("match")
def test_matches_reference(case, student, reference):
    """Outputs, stored attention weights and gradients equal the instructor's solution."""
    checks.check_match(case, student, reference)


@pytest.mark.cases("eval")
def test_eval_mode_is_deterministic(case, student, reference):
    checks.check_eval(case, student, reference)


@pytest.mark.cases("dropout")
def test_dropout_acts_on_the_weights(case, student, reference):
    checks.check_dropout(case, student, reference)


@pytest.mark.cases("device")
def test_device_discipline(case, student, reference):
    """CPU-only machines: tensors are made on the inputs' device (see grader/sandbox/runtime/guards.py)."""
    checks.check_device(case, student, reference)


@pytest.mark.cases("cuda")
def test_on_cuda(case, student, reference):
    checks.check_cuda(case, student, reference)
