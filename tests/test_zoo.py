"""The hidden suite is only as good as its tests: `grader validate` over the mistake zoo.

Every mutant loses points in the part it breaks; the solution, the book's own code and
correct alternatives in other styles (loops, einsum, torch.where, masked_fill with the
dtype's minimum) get full marks; the released skeleton gets 0."""
import os

import pytest

from conftest import KIT
from grader.grade import SuiteOptions
from grader.validate import ALTERNATIVES, validate
from grader.validate.mutants import MUTANTS


@pytest.fixture(scope="module")
def validation():
    return validate(SuiteOptions(), jobs=2)


def test_validate_holds(validation):
    ok, rows = validation
    bad = [f"{item.kind} {item.name}: {detail}" for item, good, detail in rows if not good]
    assert ok and not bad, "\n".join(bad)


def test_zoo_is_big_enough_and_covers_every_part(validation):
    _, rows = validation
    assert len(MUTANTS) >= 25
    parts = {m.part for m in MUTANTS}
    assert parts == {"sequence_mask", "masked_softmax", "AdditiveAttention",
                     "DotProductAttention", "transpose", "MultiHeadAttention", "GPU"}
    alternatives = [item for item, _, _ in rows if item.kind == "alternative"]
    assert len(alternatives) >= 5 and len(os.listdir(ALTERNATIVES)) >= 5


def test_docs_table_names_every_mutant():
    with open(os.path.join(KIT, "docs", "mistakes.md"), encoding="utf-8") as handle:
        table = handle.read()
    for mutant in MUTANTS:
        assert f"`{mutant.name}`" in table, mutant.name


def test_a_mutant_that_loses_nothing_fails_validation():
    """The check itself: full marks in the mutant's part, a grader error, or a skeleton
    with points all count as failures of the hidden suite."""
    from grader.grade.outcome import SubmissionResult, TestOutcome
    from grader.validate import Expectation

    def result(passed, **extra):
        tests = [TestOutcome("t1", "masked_softmax", 2, "passed" if passed else "failed"),
                 TestOutcome("t2", "transpose", 1, "passed")]
        return SubmissionResult("x", "x.py", tests, **extra)

    mutant = Expectation("mutant", "m", "m.py", part="masked_softmax")
    assert mutant.check(result(False))[0] is True
    assert mutant.check(result(True))[0] is False
    assert mutant.check(result(False, grader_error="boom"))[0] is False
    assert Expectation("skeleton", "s", "s.py").check(result(False))[0] is False
    assert Expectation("solution", "s", "s.py").check(result(True))[0] is True
