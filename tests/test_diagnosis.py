"""The diagnosis names a mistake only with evidence, whatever style the code is written in.

Real grading of submissions that are not catalog entries: a catalog mistake made in
another style (einsum, loops), two mistakes at once, a mistake that is in no catalog, and
the cases where the feedback used to give wrong advice (code that masks nothing told to
store weights before dropout)."""
import os
import re

import pytest

from conftest import KIT, SOLUTION
from grader import assignment
from grader.catalog import Catalog
from grader.catalog.diagnose import Search, same_results
from grader.grade import grade_batch

ALTERNATIVES = os.path.join(KIT, "tests_hidden", "attention", "alternatives")
CATALOG = Catalog.of(assignment.load("attention"))
MISTAKES, by_id = CATALOG.mistakes, CATALOG.by_id


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
    # two independent mistakes in one function: every case with dropout off shows only the
    # missing scaling, the dropout case shows both at once
    "two_in_one_part": lambda: _edit(
        SOLUTION, ("scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(d)",
                   "scores = torch.bmm(queries, keys.transpose(1, 2))"),
        ("        return torch.bmm(self.dropout(self.attention_weights), values)  # (B, Q, V)"
         "\n        ### END SOLUTION\n\n\ndef transpose_qkv",
         "        return self.dropout(torch.bmm(self.attention_weights, values))"
         "\n        ### END SOLUTION\n\n\ndef transpose_qkv")),
    # near-variants of catalog mistakes, each written otherwise than the catalog's edit:
    # a fill of -10 in Python loops (the catalog's instance fills with -1)
    "loops_fill_ten": lambda: _edit(
        os.path.join(ALTERNATIVES, "loops.py"),
        ("filler = torch.full((X.shape[2] - length,), -1e6,",
         "filler = torch.full((X.shape[2] - length,), -10.0,")),
    # every layer of AdditiveAttention with nn.Linear's default bias (the catalog's: W_q)
    "all_biases": lambda: _edit(
        SOLUTION, *[(line, line.replace(", bias=False)", ")")) for line in (
            "self.W_k = nn.Linear(key_size, num_hiddens, bias=False)",
            "self.W_q = nn.Linear(query_size, num_hiddens, bias=False)",
            "self.w_v = nn.Linear(num_hiddens, 1, bias=False)")]),
    # a length off by one the other way (one position too few)
    "one_too_few": lambda: _edit(
        SOLUTION, ("mask = positions[None, :] < valid_len[:, None]",
                   "mask = positions[None, :] + 1 < valid_len[:, None]")),
    # the softmax taken before reshaping back, down the (batch x queries) rows, with
    # valid_lens only (the catalog's instance takes it over axis 1, with or without)
    "softmax_down_rows": lambda: _edit(
        SOLUTION, ("return nn.functional.softmax(X.reshape(shape), dim=-1)",
                   "return torch.softmax(X, dim=0).view(shape)")),
    # sequence_mask ignores `value`, but masked_softmax masks by itself and passes: the
    # catalog's mask-ignores-value equals its sequence_mask cases, yet it would fail the
    # masked_softmax cases this file passes, so it is not this file's mistake
    "own_masking": lambda: _edit(
        SOLUTION, ("X[~mask] = value", "X[~mask] = 0"),
        ("X = sequence_mask(X.reshape(-1, shape[-1]), valid_lens, value=-1e6)",
         "X = X.reshape(-1, shape[-1])\n"
         "    keep = torch.arange(shape[-1], device=X.device)[None, :] < valid_lens[:, None]\n"
         "    X = X.masked_fill(~keep, -1e6)")),
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


def _named(result, part):
    """The catalog ids a part's diagnosis names, in order (observations left out)."""
    return [d["mistake"] for d in result.diagnoses if d["part"] == part and d["mistake"]]


@pytest.mark.slow
def test_a_catalog_mistake_in_another_style_is_diagnosed(graded):
    results, _ = graded
    assert _diagnosis(results["einsum_fill_positive"], "masked_softmax")["mistake"] == \
        "softmax-fill-positive"
    assert _diagnosis(results["loops_fill_zero"], "masked_softmax")["mistake"] == \
        "softmax-mask-zero"


@pytest.mark.slow
def test_two_mistakes_are_each_named_in_their_own_part(graded):
    """One bug, one diagnosis: masked_softmax's -inf is named in its own part only. Its
    callers are judged on their own code (error carried forward): DotProductAttention's is
    right, so it keeps its points and gets no diagnosis; MultiHeadAttention still fails with
    masked_softmax answered right, so its part names its own mistake, and no case of it
    says it is "exactly" the -inf (its length-0 case's NaN came from masked_softmax)."""
    results, _ = graded
    result = results["two_mistakes"]
    assert _diagnosis(result, "masked_softmax")["mistake"] == "softmax-neg-inf"
    assert _named(result, "MultiHeadAttention") == ["mha-no-output-projection"]
    assert [d["mistake"] for d in result.diagnoses].count("softmax-neg-inf") == 1
    assert not [d for d in result.diagnoses if d["part"] == "DotProductAttention"]
    assert result.by_part()["DotProductAttention"] == (15, 15)
    for test in result.tests:
        if test.part == "MultiHeadAttention" and test.status == "failed":
            assert "masked scores are set to -inf" not in test.message, test.name
            assert test.carry_note["why"] == "differs", test.name
    # the part's count of failing cases is the count the part summary gives
    mha = _diagnosis(result, "MultiHeadAttention")
    failing = sum(1 for t in result.tests if t.part == "MultiHeadAttention"
                  and t.status == "failed")
    assert f"of the {failing} failing cases of this part" in mha["text"]


@pytest.mark.slow
def test_a_mistake_in_no_catalog_gets_an_observation_not_a_cause(graded):
    results, _ = graded
    result = results["uncatalogued"]
    diagnosis = _diagnosis(result, "MultiHeadAttention")
    assert diagnosis["mistake"] is None
    assert "exactly what you get" not in diagnosis["text"]
    assert diagnosis["text"].startswith("MultiHeadAttention: ")
    # a module wrong on the CPU that does its work keeps its GPU share (suite/work.py)
    assert [d["part"] for d in result.diagnoses] == ["MultiHeadAttention"]
    assert result.by_part()["GPU"] == (10, 10)
    assert all(d["mistake"] is None for d in result.diagnoses)
    for test in result.tests:
        assert "exactly what you get" not in test.message, test.name


@pytest.mark.slow
def test_code_that_masks_nothing_is_not_told_about_dropout(graded):
    results, _ = graded
    result = results["masks_nothing"]
    assert _diagnosis(result, "DotProductAttention")["mistake"] == "dot-masks-nothing"
    for test in result.tests:
        assert "stored after dropout" not in test.message, test.name
        assert "eval mode" not in test.message or "dropout" not in test.message.split(
            "eval mode", 1)[1][:200], test.name


@pytest.mark.slow
def test_two_independent_mistakes_in_one_part_are_both_named(graded):
    results, _ = graded
    result = results["two_in_one_part"]
    entries = [d for d in result.diagnoses if d["part"] == "DotProductAttention"]
    assert [d["mistake"] for d in entries] == ["dot-no-scale", "dot-dropout-on-output"]
    scale, dropout = entries
    assert scale["text"] == ("DotProductAttention: in 9 of the 11 failing cases of "
                                    "this part the results are exactly what you get if the "
                                    "scores are not divided by sqrt(d).")
    assert dropout["text"] == (
        "DotProductAttention: in 1 of the 11 failing cases of this part the results are exactly "
        "what you get if dropout is applied to the output instead of the attention weights, "
        "together with the other mistake named for this part.")
    assert scale["experiment"] and dropout["experiment"] == ""  # the same target's: said once
    (dropout_case,) = [t for t in result.tests
                       if t.name == "DotProductAttention: dropout in training mode acts on the weights"]
    assert dropout_case.message.endswith(
        "Your result is exactly what you get if dropout is applied to the output instead of the "
        "attention weights, and also the scores are not divided by sqrt(d).")
    # the student's summary says both, each on its own line
    from grader.report import summary
    (block,) = [b for b in summary.part_summaries(result) if b["part"] == "DotProductAttention"]
    assert [d["mistake"] for d in block["diagnoses"]] == ["dot-no-scale", "dot-dropout-on-output"]
    lines = summary.block_lines([block])
    assert sum("exactly what you get if" in line for line in lines) == 2


@pytest.mark.slow
@pytest.mark.parametrize("name, part, mistake, clause", [
    ("loops_fill_ten", "masked_softmax", "softmax-fill-small",
     "masked scores are set to -10, which is not small enough to vanish in the softmax"),
    ("all_biases", "AdditiveAttention", "additive-bias",
     "W_k, W_q and w_v are built with a bias (nn.Linear's default; the model has none)"),
    ("softmax_down_rows", "masked_softmax", "softmax-wrong-axis",
     "the softmax is taken down the columns of the scores flattened to (batch x queries, keys)"),
    ("one_too_few", "sequence_mask", "mask-off-by-one-short",
     "position t is kept only when t < valid_len - 1"),
])
def test_a_near_variant_is_diagnosed_as_itself(graded, name, part, mistake, clause):
    results, _ = graded
    result = results[name]
    assert _named(result, part) == [mistake]
    assert clause in _diagnosis(result, part)["text"]


@pytest.mark.slow
def test_a_per_case_match_the_part_rejected_is_not_shown(graded):
    results, _ = graded
    result = results["own_masking"]
    by_part = result.by_part()
    assert by_part["masked_softmax"][0] == by_part["masked_softmax"][1]  # it passes there
    assert by_part["sequence_mask"][0] < by_part["sequence_mask"][1]
    diagnosis = _diagnosis(result, "sequence_mask")
    assert diagnosis["mistake"] is None
    failing = [t for t in result.tests if t.part == "sequence_mask" and t.status == "failed"]
    assert failing
    for test in failing:
        assert "exactly what you get" not in test.message, test.name
        assert not test.mistakes, test.name


@pytest.mark.slow
def test_diagnoses_reach_results_json_and_grades_csv(graded):
    import csv
    import json
    results, out = graded
    folder = results["two_mistakes"].folder if hasattr(results["two_mistakes"], "folder") \
        else "two_mistakes"
    with open(out / folder / "results.json", encoding="utf-8") as handle:
        data = json.load(handle)
    ids = {}
    for d in data["extra_data"]["diagnoses"]:
        ids.setdefault(d["part"], []).append(d["mistake"])
    assert ids["masked_softmax"] == ["softmax-neg-inf"]
    assert ids["MultiHeadAttention"] == ["mha-no-output-projection"]
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
    everything = list(MISTAKES[:5])
    assert search.narrow("p", everything) == everything
    search.record("p", [everything[2].id])
    assert search.narrow("p", everything) == everything
    assert search.narrow("p", everything) == [everything[2]]
    # while nothing has matched, a few more full searches, then none
    assert all(search.narrow("q", everything) == everything for _ in range(4))
    assert search.narrow("q", everything) == []


def test_a_fill_value_is_read_from_the_weights_it_gives():
    """softmax-fill-small stands for every fill from -1000 to 0: the value is read from the
    weights (computed here with torch.softmax, not with the catalog's code)."""
    import torch
    _infer_fill = assignment.load("attention").catalog()._infer_fill
    instance = CATALOG.instance
    X = torch.randn(2, 3, 5, generator=torch.Generator().manual_seed(3))
    lens = torch.tensor([2, 4])

    def weights(fill):
        keep = torch.arange(5)[None, None, :] < lens[:, None, None]
        return torch.softmax(X.masked_fill(~keep, fill), dim=-1)

    def raw(w):
        return {"ok": True, "calls": [{"output": {"kind": "tensor", "tensor": w}}]}

    probe = {"target": "masked_softmax", "args": [X, lens]}
    assert _infer_fill(probe, raw(weights(-10.0))) == "-10"
    assert _infer_fill(probe, raw(weights(-37.5))) == "-37.5"
    assert _infer_fill(probe, raw(weights(-1e6))) is None  # masked: no weight left to read
    assert _infer_fill(probe, raw(weights(5.0))) is None   # not a small negative fill
    mixed = weights(-10.0)
    mixed[1] = weights(-3.0)[1]  # two fills in one result: no single value
    assert _infer_fill(probe, raw(mixed)) is None
    ten = by_id("softmax-fill-small@-10")
    assert ten.id == "softmax-fill-small@-10" and "-10," in ten.en
    assert instance(by_id("softmax-fill-small"), "-1").id == "softmax-fill-small"
    assert by_id("softmax-fill-small@1") is None and by_id("softmax-fill-small@x") is None
    assert by_id("additive-bias@W_q+W_k") is None  # not in the module's order
    assert by_id("additive-bias@W_k+w_v").edits[0][1] == \
        "self.W_k = nn.Linear(key_size, num_hiddens)"


def test_two_mistakes_at_once_combine_only_when_they_edit_different_lines():
    combined, members = CATALOG.combined, CATALOG.members
    both = combined(["dot-dropout-on-output", "dot-no-scale"])
    assert both.id == "dot-dropout-on-output&dot-no-scale"
    assert members(both.id) == ["dot-dropout-on-output", "dot-no-scale"]
    with open(SOLUTION, encoding="utf-8") as handle:
        source = handle.read()
    changed = both.apply(source)
    assert "/ math.sqrt(d)" in source and "/ math.sqrt(d)" not in changed
    assert "return self.dropout(torch.bmm(self.attention_weights, values))" in changed
    # dot-scale-after-softmax edits the lines dot-no-dropout edits: no such combination
    assert combined(["dot-scale-after-softmax", "dot-no-dropout"]) is None
    assert combined(["dot-no-scale", "dot-no-scale"]) is None
