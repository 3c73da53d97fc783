"""catalog/diagnose.py without grading a batch: real catalog mistakes, real hidden cases
and the real check (grader/suite/checks.passes, what the suite gives diagnose_parts), fed
with recorder entries written here (issue 19: switching the evidence check off went
unnoticed). Which cases each mistake fails is computed here, once, by the checks."""
import pytest

from conftest import SOLUTION
from grader.catalog import Catalog, diagnose
from grader.catalog.build import MistakeImplementation
from grader.harness import Reference

from grader import assignment
from grader.suite import checks
from grader.suite.session import Session

SUITE = Session(assignment.load("attention"))  # the library's run state, as the plugin keeps it
cases_table = SUITE.assignment.cases()  # the table module: CASES, Case and its reasons

REFERENCE = Reference(SOLUTION)
CATALOG = Catalog.of(assignment.load("attention"))
by_id = CATALOG.by_id
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
