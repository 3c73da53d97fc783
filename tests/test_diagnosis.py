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
from grader.catalog import diagnose
from grader.catalog.build import MistakeImplementation
from grader.harness import Reference
from grader.suite import checks
from grader.suite.session import Session
from grading import grades

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
    rows = grades(out)
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


# ---- at its edges (issue 19, from tests/test_mutants_diagnose.py) ---------------------------
# catalog/diagnose.py without grading a batch: real catalog mistakes, real hidden cases
# and the real check (grader/suite/checks.passes, what the suite gives diagnose_parts), fed
# with recorder entries written here (issue 19: switching the evidence check off went
# unnoticed). Which cases each mistake fails is computed here, once, by the checks.

SUITE = Session(assignment.load("attention"))  # the library's run state, as the plugin keeps it


cases_table = SUITE.assignment.cases()  # the table module: CASES, Case and its reasons


REFERENCE = Reference(SOLUTION)


PART = "masked_softmax"


ALL = SUITE.table.cases("match", "eval", "dropout")


CASES = {c.id: c for c in ALL}


OWN = [c.id for c in ALL if c.part == PART]


DOT = [c.id for c in ALL if c.part == "DotProductAttention"]


def grade_case(case, implementation):
    return checks.passes(SUITE, case, implementation, REFERENCE)


@pytest.fixture(scope="module")
def fails():
    """{mistake id: the ids of the masked_softmax and DotProductAttention cases it fails}"""
    out = {}
    for mistake_id in ("softmax-neg-inf", "softmax-repeat", "softmax-no-2d-case",
                       "softmax-2d-transposed", "softmax-mask-zero", "softmax-fill-positive",
                       "softmax-fill-small", "softmax-wrong-axis"):
        implementation = MistakeImplementation(by_id(mistake_id), SOLUTION, CATALOG.module)
        out[mistake_id] = {n for n in OWN + DOT if not grade_case(CASES[n], implementation)}
    return out


def entries(failing, passed, part=PART, blame="student"):
    """Recorder entries: `failing` {case id: [mistake ids it matched]}, `passed` ids."""
    out = [{"name": n, "part": part, "outcome": "failed", "blame": blame, "mistakes": m,
            "message": f"\n\n  {n} failed  \nmore"} for n, m in failing.items()]
    return out + [{"name": n, "part": part, "outcome": "passed", "blame": None, "mistakes": [],
                   "message": ""} for n in passed]


def diagnose_parts(tests, lang="en"):
    return diagnose.diagnose_parts(tests, CASES, grade_case, SOLUTION, lang=lang, catalog=CATALOG)


def own(ids):
    return {n for n in ids if n in OWN}


def test_a_mistake_is_named_when_it_explains_the_failures_and_fails_nothing_passed(fails):
    failing = sorted(own(fails["softmax-neg-inf"]))
    assert 2 <= len(failing) < len(OWN)
    tests = entries({n: ["softmax-neg-inf"] for n in failing}, [n for n in OWN if n not in failing])
    mistake = by_id("softmax-neg-inf")
    assert diagnose_parts(tests) == [{
        "part": PART, "mistake": "softmax-neg-inf",
        "text": f"masked_softmax: in {len(failing)} of the {len(failing)} failing cases of this "
                f"part the results are exactly what you get if {mistake.text('en')}.",
        "experiment": CATALOG.experiment("masked_softmax", "en")}]


def test_no_mistake_is_named_when_it_would_fail_a_case_the_submission_passed(fails):
    """The evidence check: the results of one failing case equal the mistake's, but the
    mistake also fails a case this submission passed, so it is not this submission's."""
    failing = sorted(own(fails["softmax-neg-inf"]))
    tests = entries({n: ["softmax-neg-inf"] for n in failing[1:]},
                    [n for n in OWN if n not in failing[1:]])
    (found,) = diagnose_parts(tests)
    assert found["mistake"] is None
    name = failing[1][len("masked_softmax: "):]
    assert found["text"] == f"masked_softmax: {name}: {failing[1]} failed"
    assert found["experiment"] == CATALOG.experiment("masked_softmax", "en")
    (found,) = diagnose_parts(tests, lang="zh_CN")
    # (the case's name may be translated)
    assert found["text"].startswith("masked_softmax：") and found["text"].endswith(f"：{failing[1]} failed")
    assert found["experiment"] == CATALOG.experiment("masked_softmax", "zh")


def test_failures_the_grader_caused_and_skipped_cases_are_no_evidence(fails):
    failing = sorted(own(fails["softmax-neg-inf"]))
    passed = [n for n in OWN if n not in failing]
    assert diagnose_parts(entries({n: ["softmax-neg-inf"] for n in failing}, passed,
                                  blame="grader")) == []
    tests = entries({n: ["softmax-neg-inf"] for n in failing}, passed)
    tests.append({"name": "unknown: case", "part": PART, "outcome": "skipped"})
    assert diagnose_parts(tests)[0]["mistake"] == "softmax-neg-inf"
    assert diagnose_parts(entries({}, OWN)) == []  # nothing lost: nothing said


def test_a_mistake_in_a_called_function_is_said_once_then_referred_to(fails):
    own_failing = sorted(own(fails["softmax-neg-inf"]))
    dot_failing = sorted(n for n in fails["softmax-neg-inf"] if n in DOT)
    assert dot_failing, "the case table changed: no DotProductAttention case shows -inf"
    tests = entries({n: ["softmax-neg-inf"] for n in own_failing},
                    [n for n in OWN if n not in own_failing])
    tests += entries({n: ["softmax-neg-inf"] for n in dot_failing},
                     [n for n in DOT if n not in dot_failing], part="DotProductAttention")
    first, again = diagnose_parts(tests)
    assert first["mistake"] == again["mistake"] == "softmax-neg-inf" and first["experiment"]
    assert again == {"part": "DotProductAttention", "mistake": "softmax-neg-inf", "experiment": "",
                     "text": f"in masked_softmax, which DotProductAttention calls: the same mistake "
                             f"as in masked_softmax above (in {len(dot_failing)} of the "
                             f"{len(dot_failing)} failing cases of this part the results are "
                             f"exactly what it gives)."}
    tests = tests[len(OWN):]  # the DotProductAttention part alone: said in full, where it is
    (alone,) = diagnose_parts(tests, lang="zh")
    mistake = by_id("softmax-neg-inf")
    assert alone["text"] == (f"在 DotProductAttention 调用的 masked_softmax 中：本部分 "
                             f"{len(dot_failing)} 个未通过的用例中，有 {len(dot_failing)} 个的结果"
                             f"恰好等于这样做时得到的结果：{mistake.text('zh')}。")


def test_matching_runs_the_plausible_mistakes_on_the_same_probe(fails):
    name = sorted(own(fails["softmax-neg-inf"]))[0]
    case = CASES[name]
    probe = case.probe(checks._state(case, REFERENCE))
    got = MistakeImplementation(by_id("softmax-neg-inf"), SOLUTION, CATALOG.module).raw(probe)
    found = diagnose.matching(case, probe, got, SOLUTION, catalog=CATALOG)
    assert "softmax-neg-inf" in found
    assert "softmax-repeat" not in found or name in fails["softmax-repeat"]
    assert diagnose.sentence(found, catalog=CATALOG) == ("Your result is exactly what you get if "
                                        f"{by_id(found[0]).text('en')}.")
    assert diagnose.sentence(found, "zh", catalog=CATALOG) == f"你的结果恰好等于这样做时得到的结果：{by_id(found[0]).text('zh')}。"
    assert diagnose.sentence([], catalog=CATALOG) == \
        diagnose.sentence(["no-such-mistake"], catalog=CATALOG) == ""
    right = REFERENCE.run(probe, case.call_text()).raw  # (asked in failing cases only)
    assert "softmax-neg-inf" not in diagnose.matching(case, probe, right, SOLUTION, catalog=CATALOG)


def test_a_called_functions_mistakes_are_searched_only_once_that_part_failed(fails):
    name = sorted(n for n in fails["softmax-neg-inf"] if n in DOT)[0]
    case = CASES[name]
    probe = case.probe(checks._state(case, REFERENCE))
    got = MistakeImplementation(by_id("softmax-neg-inf"), SOLUTION, CATALOG.module).raw(probe)
    assert "softmax-neg-inf" not in diagnose.matching(case, probe, got, SOLUTION,
                                                      failed_parts=set(), catalog=CATALOG)
    assert "softmax-neg-inf" in diagnose.matching(case, probe, got, SOLUTION,
                                                  failed_parts={"masked_softmax"}, catalog=CATALOG)
    assert "softmax-neg-inf" in diagnose.matching(case, probe, got, SOLUTION, catalog=CATALOG)
    search = diagnose.Search()
    for _ in range(diagnose.Search.FULL):
        assert "softmax-neg-inf" in diagnose.matching(case, probe, got, SOLUTION, search=search,
                                                      catalog=CATALOG)
    assert search.parts[case.part]["seen"] >= {"softmax-neg-inf"}


def _tensor(value):
    import torch
    return {"kind": "tensor", "tensor": torch.tensor(value)}


def _raw(output, captured=None, grads=None):
    return {"ok": True, "calls": [{"output": output, "captured": captured or {}}],
            "grads": grads or {}}


def test_same_results_compares_everything_a_check_reads():
    probe = {"target": "masked_softmax"}
    a = _raw(_tensor([1.0, 2.0]), {"w": _tensor([0.5])})
    assert diagnose.same_results(a, _raw(_tensor([1.0, 2.0]), {"w": _tensor([0.5])}), probe)
    assert not diagnose.same_results(a, _raw(_tensor([1.0, 2.5]), {"w": _tensor([0.5])}), probe)
    assert not diagnose.same_results(a, _raw(_tensor([1.0, 2.0]), {"w": _tensor([0.6])}), probe)
    assert not diagnose.same_results(a, _raw(_tensor([1.0, 2.0]), {"v": _tensor([0.5])}), probe)
    assert not diagnose.same_results(a, _raw(_tensor([1.0, 2.0])), probe)
    assert not diagnose.same_results(a, dict(a, calls=a["calls"] * 2), probe)
    assert not diagnose.same_results(a, _raw({"kind": "other", "type": "int"}), probe)
    other = _raw({"kind": "other", "type": "int"})
    assert diagnose.same_results(other, _raw({"kind": "other", "type": "int"}), probe)
    assert not diagnose.same_results(other, _raw({"kind": "other", "type": "str"}), probe)
    assert diagnose.same_results(_raw({"kind": "missing"}), _raw({"kind": "missing"}), probe)
    assert not diagnose.same_results(a, None, probe) and not diagnose.same_results([], a, probe)
    nan = _raw(_tensor([float("nan")]))
    assert diagnose.same_results(nan, _raw(_tensor([float("nan")])), probe)
    # gradients get 10x the tolerance: float32 rtol 1e-3
    g = _raw(_tensor([1.0]), grads={"args": {"0": _tensor([1.0])}, "params": {}})
    near = _raw(_tensor([1.0]), grads={"args": {"0": _tensor([1.0005])}, "params": {}})
    far = _raw(_tensor([1.0]), grads={"args": {"0": _tensor([1.002])}, "params": {}})
    assert diagnose.same_results(g, near, probe) and not diagnose.same_results(g, far, probe)
    assert not diagnose.same_results(_raw(_tensor([1.0])), _raw(_tensor([1.0005])), probe)
    # outputs at float32's own tolerance (1.1e-4 at 1), gradients at exactly 10x (1.1e-3)
    assert diagnose.same_results(_raw(_tensor([1.0])), _raw(_tensor([1.00005])), probe)
    edge = _raw(_tensor([1.0]), grads={"args": {"0": _tensor([1.00115])}, "params": {}})
    inside = _raw(_tensor([1.0]), grads={"args": {"0": _tensor([1.00105])}, "params": {}})
    assert diagnose.same_results(g, inside, probe) and not diagnose.same_results(g, edge, probe)
    assert not diagnose.same_results(g, _raw(_tensor([1.0]), grads={"args": {}, "params": {}}), probe)


def test_a_missing_output_on_one_side_is_a_difference():
    probe = {"target": "masked_softmax"}
    no_output = {"ok": True, "calls": [{"captured": {}}], "grads": {}}
    assert not diagnose.same_results(_raw({"kind": "missing"}), no_output, probe)
    assert not diagnose.same_results(no_output, _raw({"kind": "missing"}), probe)
    assert diagnose.same_results(no_output, dict(no_output), probe)


def _failed(stage, message, keys=None):
    return {"ok": False, "stage": stage, "error": {"type": "RuntimeError", "message": message},
            "state_keys": keys}


def test_errors_are_compared_on_their_first_300_characters():
    probe = {"target": "MultiHeadAttention"}
    same_start = "x" * 300
    assert diagnose.same_results(_failed("call", same_start + "a"), _failed("call", same_start + "b"), probe)
    assert not diagnose.same_results(_failed("call", "x" * 299 + "a"), _failed("call", "x" * 299 + "b"),
                                     probe)


def test_parameters_are_compared_by_name_and_shape():
    probe = {"target": "MultiHeadAttention"}
    a = _failed("load_state_dict", "m", [["W_q.weight", [8, 4]]])
    assert not diagnose.same_results(a, _failed("load_state_dict", "m", [["W_k.weight", [8, 4]]]), probe)
    assert not diagnose.same_results(a, _failed("load_state_dict", "m", [["W_q.weight", [4, 8]]]), probe)
    assert diagnose.same_results(a, _failed("load_state_dict", "m", [("W_q.weight", [8, 4])]), probe)


def test_a_part_recorded_before_its_first_search_still_gets_its_full_searches():
    search = diagnose.Search()
    everything = [by_id("softmax-neg-inf"), by_id("softmax-repeat")]
    search.record("r", [])
    assert [search.narrow("r", everything) for _ in range(5)] == [everything] * 4 + [[]]


def test_a_class_mistake_is_run_with_the_value_read_from_the_case():
    """softmax-fill-small stands for every fill from -1000 to 0: a submission that fills with
    -20 is matched by the instance for -20 (read from its weights), not by the default -1."""
    submission = MistakeImplementation(by_id("softmax-fill-small@-20"), SOLUTION, CATALOG.module)
    failing = [n for n in OWN if not grade_case(CASES[n], submission)]
    assert failing
    named = set()
    for name in failing:
        case = CASES[name]
        probe = case.probe(checks._state(case, REFERENCE))
        named.update(diagnose.matching(case, probe, submission.raw(probe), SOLUTION, catalog=CATALOG))
    assert "softmax-fill-small@-20" in named and "softmax-fill-small" not in named


def test_a_session_remembers_the_last_three_values_of_a_class_mistake():
    """Each remembered value is run again in every later case that cannot be read (work that
    must stay bounded): the three most recent, the latest last, a repeat moved to the end."""
    search = diagnose.Search()
    for value in ("-1", "-2", "-3", "-4", "-5"):
        search.remember("softmax-fill-small", value)
    assert search.params["softmax-fill-small"] == ["-3", "-4", "-5"]
    search.remember("softmax-fill-small", "-4")
    assert search.params["softmax-fill-small"] == ["-3", "-5", "-4"]


def test_two_mistakes_found_at_once_are_tried_first_in_the_later_cases():
    """A submission with two DotProductAttention mistakes: once one has matched alone, the
    pair is found in one search and named in every later case that shows both, more cases
    than the part's searches for pairs (Search.COMBINED = 3) could find one by one."""
    both = "dot-masks-nothing&dot-no-scale"
    submission = MistakeImplementation(by_id(both), SOLUTION, CATALOG.module)
    search = diagnose.Search()
    found = []
    for name in DOT:
        case = CASES[name]
        if grade_case(case, submission):
            continue
        probe = case.probe(checks._state(case, REFERENCE))
        found.append(diagnose.matching(case, probe, submission.raw(probe), SOLUTION,
                                       failed_parts={"DotProductAttention"}, search=search, catalog=CATALOG))
    first = next(i for i, ids in enumerate(found) if ids)  # a mistake matched alone
    assert "&" not in "".join(found[first])
    later = found[first + 1:]
    assert all(later), "a later failing case was left unexplained"
    assert sum(ids == [both] for ids in later) >= 4
    assert search.combined("DotProductAttention") == {"found": [both], "searches": 1}


def test_a_single_mistake_is_named_before_a_pair_that_explains_as_much(fails):
    """The first mistake named is the part's headline (report/summary.py): between a single
    mistake and a pair of mistakes that each explain as many failing cases, the single one,
    even when the pair was seen first. Which case each fails is hand-built here (grade_case
    reads a table)."""
    pair = "softmax-log&softmax-repeat"
    c1, c2, c3, c4 = OWN[:4]
    table = {"softmax-neg-inf": {c3, c4}, pair: {c1, c2}}

    def graded_by_table(case, implementation):
        return case.id not in table.get(implementation.mistake.id, set())

    tests = entries({c1: [pair], c2: [pair], c3: ["softmax-neg-inf"], c4: ["softmax-neg-inf"]},
                    OWN[4:])
    found = diagnose.diagnose_parts(tests, CASES, graded_by_table, SOLUTION, catalog=CATALOG)
    assert [d["mistake"] for d in found] == ["softmax-neg-inf", "softmax-log", "softmax-repeat"]
    assert found[0]["text"] == (f"masked_softmax: in 2 of the 4 failing cases of this part the "
                                f"results are exactly what you get if {by_id('softmax-neg-inf').en}.")
    assert found[1]["text"].endswith("together with the other mistake named for this part.")


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_experiment_is_not_repeated_under_the_unexplained_cases(fails, lang):
    """A part with a named mistake and a failing case it does not explain: the observation of
    that case follows, without the part's experiment, which the named mistake already gave."""
    failing = sorted(own(fails["softmax-neg-inf"]))
    other = next(n for n in OWN if n not in fails["softmax-neg-inf"])
    tests = entries({**{n: ["softmax-neg-inf"] for n in failing}, other: []},
                    [n for n in OWN if n not in failing and n != other])
    named, observed = diagnose_parts(tests, lang=lang)
    experiment = CATALOG.experiment("masked_softmax", lang)
    assert named["mistake"] == "softmax-neg-inf" and named["experiment"] == experiment
    assert observed["mistake"] is None and observed["experiment"] == ""
    words = "the other 1 failing case(s)" if lang == "en" else "其余 1 个未通过的用例"
    assert words in observed["text"] and observed["text"].endswith(f"{other} failed")


def test_a_fill_value_read_in_one_case_is_tried_where_it_cannot_be_read(fails):
    """DotProductAttention's results do not show masked_softmax's fill value, so its cases
    run softmax-fill-small with the values read in the session's earlier cases: a submission
    filling with -20 is matched there by the instance for -20."""
    submission = MistakeImplementation(by_id("softmax-fill-small@-20"), SOLUTION, CATALOG.module)
    search = diagnose.Search()

    def found(names, failed_parts):
        out = []
        for name in names:
            case = CASES[name]
            if grade_case(case, submission):
                continue
            probe = case.probe(checks._state(case, REFERENCE))
            out.append(diagnose.matching(case, probe, submission.raw(probe), SOLUTION,
                                         failed_parts=failed_parts, search=search, catalog=CATALOG))
        return out

    assert any("softmax-fill-small@-20" in ids for ids in found(OWN, {PART}))
    assert search.params["softmax-fill-small"] == ["-20"]
    dot = found(DOT, {PART, "DotProductAttention"})
    assert dot and all("softmax-fill-small@-20" in ids for ids in dot)


def test_a_parts_own_mistake_is_named_before_a_called_functions_that_explains_as_much():
    """The first mistake named is the part's headline: between a DotProductAttention mistake
    and a masked_softmax one that each explain one failing case, the part's own, even when
    the other was seen first. Which case each fails is hand-built (grade_case reads a table)."""
    c1, c2 = DOT[:2]
    table = {"dot-no-scale": {c1}, "softmax-neg-inf": {c2}}

    def graded_by_table(case, implementation):
        return case.id not in table.get(implementation.mistake.id, set())

    tests = entries({c2: ["softmax-neg-inf"], c1: ["dot-no-scale"]}, DOT[2:],
                    part="DotProductAttention")
    found = diagnose.diagnose_parts(tests, CASES, graded_by_table, SOLUTION, catalog=CATALOG)
    assert [d["mistake"] for d in found] == ["dot-no-scale", "softmax-neg-inf"]
    assert found[1]["text"].startswith("in masked_softmax, which DotProductAttention calls: in 1 "
                                       "of the 2 failing cases")


def test_a_device_mistake_is_never_one_of_a_pair_in_a_cpu_case(fails):
    """gpu-arange-no-device changes no result on the CPU, so paired with a mistake X it gives
    X's results there: naming the pair in a CPU case would name the device mistake without
    evidence. Matched earlier in the session, it is not paired."""
    name = sorted(own(fails["softmax-neg-inf"]))[0]
    case = CASES[name]
    probe = case.probe(checks._state(case, REFERENCE))
    got = MistakeImplementation(by_id("softmax-neg-inf"), SOLUTION, CATALOG.module).raw(probe)
    plausible = CATALOG.suspects_for(case.target)
    assert "gpu-arange-no-device" in {m.id for m in plausible}
    search = diagnose.Search()
    search.singles(["gpu-arange-no-device"])
    assert diagnose._two_at_once(case, probe, got, SOLUTION, plausible, search, CATALOG) == []


def test_a_pair_that_fails_with_its_own_error_is_named():
    """mask-maxlen-from-batch with softmax-no-2d-case: with 2-D lengths the pair raises an
    error neither mistake raises alone (the mask's shape); the error is the evidence, so the
    pair is named in those cases once one of them has matched alone."""
    both = "mask-maxlen-from-batch&softmax-no-2d-case"
    submission = MistakeImplementation(by_id(both), SOLUTION, CATALOG.module)
    search = diagnose.Search()
    errors = []
    for name in [c.id for c in ALL if c.part == "sequence_mask"] + OWN:
        case = CASES[name]
        # (a degenerate case is withheld, never diagnosed: grader/suite/checks.py)
        if case.degenerate or grade_case(case, submission):
            continue
        probe = case.probe(checks._state(case, REFERENCE))
        got = submission.raw(probe)
        found = diagnose.matching(case, probe, got, SOLUTION,
                                  failed_parts={"sequence_mask", PART}, search=search, catalog=CATALOG)
        if got["ok"] is False and case.part == PART:
            errors.append((name, found))
    # every error is explained: by mask-maxlen-from-batch's own error where the lengths are
    # 1-D, by the pair's where they are 2-D
    assert errors and all(found for _, found in errors), errors
    two_d = [found for name, found in errors if "2-D lengths" in name]
    assert two_d and all(found == [both] for found in two_d), errors


def test_a_cases_line_naming_a_mistake_stays_only_when_its_part_qualified_it(fails):
    """The per-case "exactly what you get if" line (grader/suite/checks.py) is the student's
    to read: kept for a mistake the part's diagnosis names, dropped for one it rejected, and
    a failing case that named no mistake keeps its message as it was."""
    line = "\n  " + diagnose.sentence(["softmax-neg-inf"], catalog=CATALOG)
    failing = sorted(own(fails["softmax-neg-inf"]))
    other = next(n for n in OWN if n not in fails["softmax-neg-inf"])

    def with_lines(tests):
        for entry in tests:
            if entry["mistakes"]:
                entry["message"] = f"{entry['name']} failed{line}"
        return tests

    tests = with_lines(entries({**{n: ["softmax-neg-inf"] for n in failing}, other: []},
                               [n for n in OWN if n not in failing and n != other]))
    diagnose_parts(tests)
    by_name = {t["name"]: t for t in tests}
    assert by_name[failing[0]]["message"] == f"{failing[0]} failed{line}"
    assert by_name[failing[0]]["mistakes"] == ["softmax-neg-inf"]
    assert by_name[other]["message"] == f"\n\n  {other} failed  \nmore"
    # the evidence check rejects it (it fails failing[0], which this submission passes)
    tests = with_lines(entries({n: ["softmax-neg-inf"] for n in failing[1:]},
                               [n for n in OWN if n not in failing[1:]]))
    diagnose_parts(tests)
    rejected = {t["name"]: t for t in tests}[failing[1]]
    assert rejected["message"] == f"{failing[1]} failed" and rejected["mistakes"] == []


def test_the_six_mistakes_matched_most_often_are_the_candidates():
    """A part's candidates are the MAX_CANDIDATES = 6 mistakes matched in most of its failing
    cases: five matched in three cases and one in two are weighed, the seventh, matched in
    one, is not (its case gets the observation). Hand-built: grade_case reads a table."""
    three = ["softmax-repeat", "softmax-neg-inf", "softmax-mask-zero", "softmax-fill-positive",
             "softmax-log"]
    c1, c2, c3, c4, c5, c6 = OWN[:6]
    table = {**{m: {c1, c2, c3} for m in three}, "softmax-no-2d-case": {c4, c5},
             "softmax-2d-transposed": {c6}}

    def graded_by_table(case, implementation):
        return case.id not in table.get(implementation.mistake.id, set())

    tests = entries({c1: three, c2: three, c3: three, c4: ["softmax-no-2d-case"],
                     c5: ["softmax-no-2d-case"], c6: ["softmax-2d-transposed"]}, OWN[6:])
    found = diagnose.diagnose_parts(tests, CASES, graded_by_table, SOLUTION, catalog=CATALOG)
    assert [d["mistake"] for d in found] == ["softmax-repeat", "softmax-no-2d-case", None]
    assert found[2]["text"].startswith("masked_softmax: no catalog mistake explains the other 1 ")


def test_a_mistake_the_checks_cannot_grade_on_a_case_counts_as_failing_it(fails):
    """Grading a catalog mistake on a case may raise (not a StudentFailure): the diagnosis
    goes on and counts the case as failed by that mistake, so a mistake that cannot be shown
    to pass a case the submission passed is not named."""
    failing = sorted(own(fails["softmax-neg-inf"]))
    passed = [n for n in OWN if n not in failing]

    def crashes_on_one(case, implementation):
        if implementation.mistake.id == "softmax-neg-inf" and case.id == passed[0]:
            raise RuntimeError("the check itself failed")
        return grade_case(case, implementation)

    def tests():  # (diagnose_parts edits the entries in place)
        return entries({n: ["softmax-neg-inf"] for n in failing}, passed)

    found = diagnose.diagnose_parts(tests(), CASES, crashes_on_one, SOLUTION, catalog=CATALOG)
    assert [d["mistake"] for d in found] == [None]
    assert diagnose_parts(tests())[0]["mistake"] == "softmax-neg-inf"  # graded, it is named


def test_under_the_device_guard_the_device_verdict_is_compared():
    """The CPU device-discipline check (check "device") reruns a right case under the
    guard: a submission that makes its positions on the default device has the device
    verdict of gpu-arange-no-device, and is matched by it; the solution's values are the
    same, its verdict is not."""
    case = SUITE.table.cases("device")[0]
    sample = SUITE.table.same_target(case)[0]
    probe = sample.probe(checks._state(sample, REFERENCE), guard=True)
    got = MistakeImplementation(by_id("gpu-arange-no-device"), SOLUTION, CATALOG.module).raw(probe)
    assert diagnose.matching(case, probe, got, SOLUTION, catalog=CATALOG) == ["gpu-arange-no-device"]
    right = REFERENCE.run(probe, sample.call_text()).raw
    assert not diagnose.same_results(got, right, probe)
    assert diagnose.same_results(got, dict(got), probe)


def test_a_part_that_lost_nothing_does_not_stop_the_parts_after_it(fails):
    failing = sorted(own(fails["softmax-neg-inf"]))
    mask = [c.id for c in ALL if c.part == "sequence_mask"]
    tests = entries({}, mask, part="sequence_mask")  # all passed, listed first
    tests += entries({n: ["softmax-neg-inf"] for n in failing}, [n for n in OWN if n not in failing])
    assert [d["mistake"] for d in diagnose_parts(tests)] == ["softmax-neg-inf"]


def test_one_instance_of_a_class_mistake_is_named_when_two_give_the_same_results():
    """With one example the queries are the flattened rows: softmax over axis 1 and down
    the flattened columns give the same weights, and both instances fit the case. The case
    names the entry once, by the first instance that matched (diagnose.py line ~209: the
    search over one entry's instances stops at its first match)."""
    import torch
    from grader.harness.compare import same
    torch.manual_seed(0)
    case = cases_table.Case(part=PART, name="one example", points=1, target="masked_softmax",
                            args=(torch.randn(1, 3, 4), torch.tensor([2])))
    probe = case.probe()
    axis_1 = MistakeImplementation(by_id("softmax-wrong-axis"), SOLUTION, CATALOG.module)
    rows = MistakeImplementation(by_id("softmax-wrong-axis@rows"), SOLUTION, CATALOG.module)
    # independently of matching(): the two instances really are alike here, and wrong
    assert same(axis_1.raw(probe)["calls"][0]["output"]["tensor"],
                rows.raw(probe)["calls"][0]["output"]["tensor"])
    assert not grade_case(case, axis_1)
    found = diagnose.matching(case, probe, axis_1.raw(probe), SOLUTION, catalog=CATALOG)
    assert [diagnose.base_id(i) for i in found].count("softmax-wrong-axis") == 1
