"""The hidden suite is only as good as its tests: `grader validate` over the mistake catalog.

Every catalog mistake loses points in its part and is diagnosed as itself; the solution,
the book's own code and correct alternatives in other styles (loops, einsum, torch.where,
masked_fill with the dtype's minimum, LazyLinear) get full marks and no diagnosis; the
released skeleton gets 0. Every assignment the kit declares is validated (attention: 68
entries, 141 s at --jobs 2; transformer: 27, about 2 min) and its catalog teaches in both
languages and is named entry by entry in its docs/mistakes*.md."""
import os

import pytest

from conftest import KIT
from grader import assignment
from grader.catalog import Catalog
from grader.grade import SuiteOptions
from grader.validate import docs_path, validate

DECLARED = assignment.names()


@pytest.fixture(scope="module", params=DECLARED)
def validation(request):
    declared = assignment.load(request.param)
    return declared, validate(SuiteOptions(), jobs=2, assignment=declared)


@pytest.mark.slow
def test_validate_holds(validation):
    _, (ok, rows) = validation
    bad = [f"{item.kind} {item.name}: {detail}" for item, good, detail in rows if not good]
    assert ok and not bad, "\n".join(bad)


@pytest.mark.slow
def test_catalog_is_big_enough_and_covers_every_part(validation):
    declared, (_, rows) = validation
    catalog = Catalog.of(declared)
    kinds = [item.kind for item, _, _ in rows]
    assert kinds.count("mistake") == len(catalog) and kinds.count("solution") == 1 and \
        kinds.count("skeleton") == 1
    alternatives = kinds.count("alternative")
    assert alternatives == len([n for n in os.listdir(declared.alternatives)
                                if n.endswith(".py")])
    # every part but the device part has mistakes of its own
    assert {m.part for m in catalog} >= {p.name for p in declared.parts if not p.gpu}
    if declared.name == "attention":
        assert len(catalog) >= 50 and alternatives >= 5
        assert {m.part for m in catalog} == {"sequence_mask", "masked_softmax",
                                             "AdditiveAttention", "DotProductAttention",
                                             "transpose", "MultiHeadAttention", "GPU"}
    else:
        assert len(catalog) >= 15 and alternatives >= 4  # issue 16: the transformer's


def test_the_kit_declares_both_assignments():
    assert {"attention", "transformer"} <= set(DECLARED)


@pytest.mark.parametrize("name", DECLARED)
def test_every_mistake_teaches_in_both_languages(name):
    catalog = Catalog.of(assignment.load(name))
    assert len(catalog) >= 15
    for mistake in catalog:
        # the English is the table's, the Chinese its catalog's (tests_hidden/<name>/locale)
        assert mistake.en.strip() and mistake.text("zh").strip(), mistake.id
        assert any("\u4e00" <= ch <= "\u9fff" for ch in mistake.text("zh")), mistake.id
        assert catalog.experiment(mistake.target, "en") and \
            catalog.experiment(mistake.target, "zh"), mistake.id


@pytest.mark.parametrize("name", DECLARED)
def test_docs_table_names_every_mistake(name):
    declared = assignment.load(name)
    assert docs_path(declared) == ("docs/mistakes.md" if name == "attention"
                                   else f"docs/mistakes-{name}.md")
    with open(os.path.join(KIT, docs_path(declared)), encoding="utf-8") as handle:
        table = handle.read()
    assert f"`tests_hidden/{name}/mistakes.py`" in table
    for mistake in Catalog.of(declared):
        assert f"| `{mistake.id}` | {mistake.part} |" in table, mistake.id


def test_a_mistake_that_loses_nothing_or_is_misdiagnosed_fails_validation():
    """The check itself: full marks in the mistake's part, another diagnosis (or none), a
    grader error, a skeleton with points, or a diagnosed alternative all count as failures
    of the hidden suite."""
    from grader.grade.outcome import SubmissionResult, TestOutcome
    from grader.validate import Expectation

    def result(passed, diagnosed="m", **extra):
        tests = [TestOutcome("t1", "masked_softmax", 2, "passed" if passed else "failed"),
                 TestOutcome("t2", "transpose", 1, "passed")]
        diagnoses = [] if diagnosed is None else [
            {"part": "masked_softmax", "mistake": diagnosed, "text": "", "experiment": ""}]
        return SubmissionResult("x", "x.py", tests, diagnoses=diagnoses, **extra)

    mistake = Expectation("mistake", "m", "m.py", part="masked_softmax")
    assert mistake.check(result(False))[0] is True
    assert mistake.check(result(False, diagnosed="other"))[0] is False
    assert mistake.check(result(False, diagnosed=None))[0] is False
    assert mistake.check(result(True))[0] is False
    assert mistake.check(result(False, grader_error="boom"))[0] is False
    assert Expectation("skeleton", "s", "s.py").check(result(False))[0] is False
    assert Expectation("solution", "s", "s.py").check(result(True, diagnosed=None))[0] is True
    assert Expectation("alternative", "a", "a.py").check(result(True))[0] is False
