"""The diagnosis names a mistake only with evidence, whatever style the code is written in.

Real grading of submissions that are not catalog entries: a catalog mistake made in
another style (einsum, loops), two mistakes at once, a mistake that is in no catalog, and
the cases where the feedback used to give wrong advice (code that masks nothing told to
store weights before dropout)."""
import os
import re

import pytest

from conftest import KIT, SOLUTION
from grader.catalog import MISTAKES, by_id
from grader.catalog.diagnose import Search, same_results
from grader.grade import grade_batch

ALTERNATIVES = os.path.join(KIT, "grader", "validate", "alternatives")


def _edit(path, *edits):
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    for old, new in edits:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    return text


def _solution_with(*ids):
    with open(SOLUTION, encoding="utf-8") as handle:
        text = handle.read()
    for mistake_id in ids:
        text = by_id(mistake_id).apply(text)
    return text


SUBMISSIONS = {
    # the issue's +1e6 mask, in the einsum style with masked_fill
    "einsum_fill_positive": lambda: _edit(
        os.path.join(ALTERNATIVES, "einsum_masked_fill.py"),
        ("scores = X.masked_fill(padding, torch.finfo(X.dtype).min)",
         "scores = X.masked_fill(padding, 1e6)")),
    # masking with 0 in Python loops
    "loops_fill_zero": lambda: _edit(
        os.path.join(ALTERNATIVES, "loops.py"),
        ("filler = torch.full((X.shape[2] - length,), -1e6,",
         "filler = torch.full((X.shape[2] - length,), 0.0,")),
    "two_mistakes": lambda: _solution_with("softmax-neg-inf", "mha-no-output-projection"),
    # in no catalog: the output of multi-head attention doubled
    "uncatalogued": lambda: _edit(SOLUTION, ("return self.W_o(output_concat)",
                                            "return 2 * self.W_o(output_concat)")),
    # masks nothing: it must not be told to store its weights before dropout
    "masks_nothing": lambda: _solution_with("dot-masks-nothing"),
}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    folder = tmp_path_factory.mktemp("diagnosis")
    paths = []
    for name, make in SUBMISSIONS.items():
        path = folder / f"{name}.py"
        path.write_text(make(), encoding="utf-8")
        paths.append(str(path))
    results = grade_batch(paths, str(folder / "out"), jobs=2, force=True)
    return {r.name: r for r in results}, folder / "out"


def _diagnosis(result, part):
    found = [d for d in result.diagnoses if d["part"] == part]
    assert len(found) == 1, result.diagnoses
    return found[0]


def test_a_catalog_mistake_in_another_style_is_diagnosed(graded):
    results, _ = graded
    assert _diagnosis(results["einsum_fill_positive"], "masked_softmax")["mistake"] == \
        "softmax-fill-positive"
    assert _diagnosis(results["loops_fill_zero"], "masked_softmax")["mistake"] == \
        "softmax-mask-zero"


def test_two_mistakes_are_each_named_in_their_own_part(graded):
    results, _ = graded
    result = results["two_mistakes"]
    assert _diagnosis(result, "masked_softmax")["mistake"] == "softmax-neg-inf"
    assert _diagnosis(result, "MultiHeadAttention")["mistake"] == "mha-no-output-projection"
    dot = _diagnosis(result, "DotProductAttention")
    assert dot["mistake"] == "softmax-neg-inf" and "which DotProductAttention calls" in dot["text"]


def test_a_mistake_in_no_catalog_gets_an_observation_not_a_cause(graded):
    results, _ = graded
    result = results["uncatalogued"]
    diagnosis = _diagnosis(result, "MultiHeadAttention")
    assert diagnosis["mistake"] is None
    assert "exactly what you get" not in diagnosis["text"]
    assert diagnosis["text"].startswith("MultiHeadAttention: ")
    # the GPU part cannot grade a module that is wrong on the CPU: said, not diagnosed
    assert [d["part"] for d in result.diagnoses] == ["MultiHeadAttention", "GPU"]
    assert all(d["mistake"] is None for d in result.diagnoses)
    for test in result.tests:
        assert "exactly what you get" not in test.message, test.name


def test_code_that_masks_nothing_is_not_told_about_dropout(graded):
    results, _ = graded
    result = results["masks_nothing"]
    assert _diagnosis(result, "DotProductAttention")["mistake"] == "dot-masks-nothing"
    for test in result.tests:
        assert "stored after dropout" not in test.message, test.name
        assert "eval mode" not in test.message or "dropout" not in test.message.split(
            "eval mode", 1)[1][:200], test.name


def test_diagnoses_reach_results_json_and_grades_csv(graded):
    import csv
    import json
    results, out = graded
    folder = results["two_mistakes"].folder if hasattr(results["two_mistakes"], "folder") \
        else "two_mistakes"
    with open(out / folder / "results.json", encoding="utf-8") as handle:
        data = json.load(handle)
    ids = {d["part"]: d["mistake"] for d in data["extra_data"]["diagnoses"]}
    assert ids["masked_softmax"] == "softmax-neg-inf"
    assert ids["MultiHeadAttention"] == "mha-no-output-projection"
    with open(out / "grades.csv", encoding="utf-8-sig") as handle:
        rows = {r["submission"]: r for r in csv.DictReader(handle)}
    assert "softmax-neg-inf" in rows["two_mistakes"]["diagnoses"].split()
    assert rows["uncatalogued"]["diagnoses"] == ""


# -- the parts, without grading ---------------------------------------------------------
def test_the_catalog_is_a_table_of_unique_edits_of_the_solution():
    with open(SOLUTION, encoding="utf-8") as handle:
        source = handle.read()
    assert len({m.id for m in MISTAKES}) == len(MISTAKES) >= 50
    for mistake in MISTAKES:
        changed = mistake.apply(source)
        assert changed != source, mistake.id
        compile(changed, mistake.id, "exec")
        assert not re.search(r"\b(repeat_interleave|permute|masked_fill)\(", mistake.en), \
            f"{mistake.id}: the sentence names the fixing call"


def test_errors_match_only_with_the_same_stage_type_and_parameters():
    def failed(stage, kind, keys=None, message="shapes cannot be multiplied (3x4 and 5x6)"):
        return {"ok": False, "stage": stage, "error": {"type": kind, "message": message},
                "state_keys": keys}

    probe = {"target": "AdditiveAttention"}
    keys = [["W_q.weight", [8, 4]], ["W_q.bias", [8]]]
    assert same_results(failed("call", "TypeError"), failed("call", "TypeError"), probe)
    assert not same_results(failed("call", "TypeError"), failed("call", "ValueError"), probe)
    assert not same_results(failed("call", "TypeError"), failed("backward", "TypeError"), probe)
    # two RuntimeErrors of different mistakes are no evidence of each other
    assert not same_results(failed("call", "RuntimeError"),
                            failed("call", "RuntimeError", message="Number of dimensions of "
                                   "repeat dims can not be smaller"), probe)
    assert same_results(failed("load_state_dict", "RuntimeError", keys),
                        failed("load_state_dict", "RuntimeError", keys), probe)
    assert not same_results(failed("load_state_dict", "RuntimeError", keys),
                            failed("load_state_dict", "RuntimeError", keys[:1]), probe)
    assert not same_results({"ok": True, "calls": []}, failed("call", "TypeError"), probe)


def test_the_search_narrows_after_the_first_failing_cases_of_a_part():
    search = Search()
    everything = MISTAKES[:5]
    assert search.narrow("p", everything) == everything
    search.record("p", [everything[2].id])
    assert search.narrow("p", everything) == everything
    assert search.narrow("p", everything) == [everything[2]]
    # while nothing has matched, a few more full searches, then none
    assert all(search.narrow("q", everything) == everything for _ in range(4))
    assert search.narrow("q", everything) == []
