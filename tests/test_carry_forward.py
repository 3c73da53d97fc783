"""Error carried forward (grader/catalog/carry.py), by real grading: catalog mistakes built
as `grader validate` builds them (the solution with the edit), graded in one batch per
setting through the real trusted processes and sandboxed workers.

Under the default a mistake in a function others call costs its own part, and its callers
nothing: their failed cases are run again with the failing callee answered by the solution,
and their own code (the solution's) is right. With --carry-forward off the callers' losses
come back. tests/test_follow_through.py tries the rule on mistakes in no catalog, across the
assignment edge, against gaming and for never paying; `grader validate` (tests/test_zoo.py)
checks the callers' cases of every catalog mistake under the default."""
import json
import os

import pytest
import torch

from grader import assignment, i18n
from grader.catalog import Catalog
from grader.grade import MixedSettings, SuiteOptions, grade_batch
from grader.grade.fingerprint import suite_fingerprint
from grader.report.carried import carried_lines

pytestmark = pytest.mark.slow
CATALOG = Catalog.of(assignment.load("attention"))
by_id, callers = CATALOG.by_id, CATALOG.callers

MAX = {"sequence_mask": 11, "masked_softmax": 20, "AdditiveAttention": 15,
       "DotProductAttention": 15, "transpose": 9, "MultiHeadAttention": 20, "GPU": 10}
# one mistake of each kind a caller can meet: wrong values, an error (the mask returned),
# a property check (dropout never applied), the transposes, a device verdict
BEFORE = {  # docs/mistakes.md's, with the old rule: (points left in its own part, total /100)
    "mask-off-by-one": (0, 9),
    "mask-returns-mask": (0, 9),
    "dot-no-dropout": (14, 97),
    "transpose-no-permute": (3, 72),
    "gpu-arange-no-device": (0, 90),
}
# with error carried forward: the own part as before, but for the GPU part, which is every
# function's: it loses only sequence_mask's own 2 points (its callers' 8 are carried)
OWN_AFTER = dict({m: own for m, (own, _total) in BEFORE.items()}, **{"gpu-arange-no-device": 8})
# and of the GPU part, a function's own 2 points only where its code skips work
# (mask-returns-mask ignores X: suite/work.py); mask-off-by-one computes for real and keeps it
AFTER = {"mask-off-by-one": 89, "mask-returns-mask": 87, "dot-no-dropout": 99,
         "transpose-no-permute": 94, "gpu-arange-no-device": 98}
# length 0 keeps one position: no catalog mistake (mask-off-by-one agrees only at length 0)
UNCATALOGUED = ("mask = positions[None, :] < valid_len[:, None]",
                "mask = positions[None, :] < valid_len.clamp(min=1)[:, None]")


def _source(*ids, edit=None):
    with open(assignment.load("attention").solution, encoding="utf-8") as handle:
        source = handle.read()
    for mistake_id in ids:
        source = by_id(mistake_id).apply(source)
    if edit:
        assert source.count(edit[0]) == 1
        source = source.replace(*edit)
    return source


def _grade(folder, named, setting):
    files = []
    os.makedirs(folder / "subs", exist_ok=True)
    for name, source in named.items():
        path = folder / "subs" / f"{name}.py"
        path.write_text(source, encoding="utf-8")
        files.append(str(path))
    out = folder / f"out-{setting}"
    results = grade_batch(files, str(out), SuiteOptions(carry_forward=setting), jobs=1)
    return {r.name: r for r in results}, out


def _hostile(name, folder):
    from hostile_zoo import ZOO
    path = next(h for h in ZOO if h.name == name).build(str(folder), None)
    with open(path, encoding="utf-8") as handle:
        return handle.read()


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    folder = tmp_path_factory.mktemp("carry")
    subs = {name: _source(name) for name in BEFORE}
    subs["uncatalogued"] = _source(edit=UNCATALOGUED)
    on_subs = dict(subs, **{"mask-and-dot": _source("mask-off-by-one", "dot-no-scale"),
                            "guard-popped": _hostile("guard-popped", folder),
                            "no-mha": _source(edit=UNCATALOGUED).replace(
                                "class MultiHeadAttention(", "class MultiHeadAttentionDraft(")})
    on, on_dir = _grade(folder, on_subs, "on")
    off, off_dir = _grade(folder, subs, "off")
    return {"on": on, "off": off, "on_dir": on_dir, "off_dir": off_dir}


def _part(result, part):
    return result.by_part()[part][0]


def test_a_callee_mistake_costs_its_own_part_and_never_its_callers(graded):
    for mistake_id, own_after in OWN_AFTER.items():
        result = graded["on"][mistake_id]
        mistake = by_id(mistake_id)
        assert result.status == "graded" and result.carry_forward == "on", mistake_id
        assert _part(result, mistake.part) == own_after, mistake_id
        reach = callers(mistake.target) - {mistake.target}
        for test in result.tests:
            if test.target in reach and test.status != "skipped":
                assert test.status == "passed", (mistake_id, test.name, test.message)
        for part, top in MAX.items():
            if part not in (mistake.part, "GPU"):
                assert _part(result, part) == top, (mistake_id, part)
        assert result.score == AFTER[mistake_id], mistake_id
        carried = [t for t in result.tests if t.carried]
        # each judged apart from the failed function it calls: the mistake's, or the one
        # between them that its mistake made fail (masked_softmax, for a sequence_mask's)
        assert carried and all(t.carried["in"] and set(t.carried["in"]) <= reach | {
            mistake.target} for t in carried), mistake_id
        assert any(t.carried["in"] == [mistake.target] for t in carried), mistake_id
        assert not any(t.carried for t in result.tests if t.target == mistake.target)


# --carry-forward off: the callers' CPU parts lose what docs/mistakes.md said; the GPU part
# is graded by the same rule under both settings (a function wrong on the CPU that does its
# work keeps its share), so mask-off-by-one's totals rise by its 10 GPU points (9 -> 19)
OFF = {"mask-off-by-one": 19, "mask-returns-mask": 9, "dot-no-dropout": 97,
       "transpose-no-permute": 72, "gpu-arange-no-device": 90}


def test_off_brings_the_old_losses_back(graded):
    lost_before = lost_after = 0
    for mistake_id, (own_before, _total) in BEFORE.items():
        off, on = graded["off"][mistake_id], graded["on"][mistake_id]
        assert off.carry_forward == "off" and off.score == OFF[mistake_id], mistake_id
        assert _part(off, by_id(mistake_id).part) == own_before, mistake_id
        assert not any(t.carried for t in off.tests) and not any(t.carry_note for t in off.tests)
        own = by_id(mistake_id).part
        lost_before += sum(MAX[p] - _part(off, p) for p in MAX if p not in (own, "GPU"))
        lost_after += sum(MAX[p] - _part(on, p) for p in MAX if p not in (own, "GPU"))
    # the callers' parts (GPU aside): 70 (masked_softmax and the attentions), 70, 2
    # (MultiHeadAttention's dropout), 20 (MultiHeadAttention), 0 -- docs/mistakes.md
    assert (lost_before, lost_after) == (162, 0)


def test_a_dependent_part_still_pays_for_its_own_mistake(graded):
    both = graded["on"]["mask-and-dot"]
    # DotProductAttention is judged with masked_softmax (which failed, because of
    # sequence_mask) answered right: its own missing scale fails every case there, as
    # dot-no-scale alone does (docs/mistakes.md: 0/15)
    assert _part(both, "DotProductAttention") == 0
    dot = [t for t in both.tests if t.part == "DotProductAttention" and t.status == "failed"]
    assert dot and all(t.carry_note["why"] == "differs" and t.carry_note["callees"] ==
                       ["masked_softmax"] for t in dot)
    # MultiHeadAttention is judged with DotProductAttention answered right: its own code is
    # the solution's, so it keeps its points
    assert _part(both, "MultiHeadAttention") == 20
    assert {tuple(t.carried["in"]) for t in both.tests
            if t.carried and t.part == "MultiHeadAttention"} == {("DotProductAttention",)}
    assert _part(both, "masked_softmax") == 20 and _part(both, "sequence_mask") == 0
    text = (graded["on_dir"] / "mask-and-dot" / "feedback.txt").read_text(encoding="utf-8")
    assert ("cases of this part fail even with masked_softmax answering correctly, so "
            "DotProductAttention has a mistake of its own there.") in text
    # one bug, one diagnosis: the DotProductAttention part names its own mistake only
    assert [d["mistake"] for d in both.diagnoses if d["part"] == "DotProductAttention"] == \
        ["dot-no-scale"]


def test_a_callee_bug_no_catalog_names_is_carried_too(graded):
    on, off = graded["on"]["uncatalogued"], graded["off"]["uncatalogued"]
    assert not [d for d in on.diagnoses if d["part"] == "sequence_mask" and d["mistake"]]
    assert _part(on, "sequence_mask") == _part(off, "sequence_mask") < 11
    for part in ("masked_softmax", "AdditiveAttention", "DotProductAttention",
                 "MultiHeadAttention", "GPU"):
        assert _part(on, part) == MAX[part], part
    assert _part(off, "masked_softmax") < 20  # its length-0 cases fail with the old rule
    text = (graded["on_dir"] / "uncatalogued" / "feedback.txt").read_text(encoding="utf-8")
    assert ("give the right result once sequence_mask answers correctly, so masked_softmax's "
            "own code is right there and their points are kept (error carried forward): "
            "sequence_mask failed cases of its own in the sequence_mask part, which is where "
            "that costs points.") in text


def test_a_missing_function_is_never_judged_apart_from_a_callee(graded):
    """A part whose own function is not defined gets no note of error carried forward
    (nothing of its own ran), while the functions it would call are judged as usual."""
    result = graded["on"]["no-mha"]
    assert _part(result, "MultiHeadAttention") == 0
    assert not [t.name for t in result.tests if (t.carry_note or t.carried)
                and t.target == "MultiHeadAttention"]
    assert [t for t in result.tests if t.part == "masked_softmax" and t.carried]
    text = (graded["on_dir"] / "no-mha" / "feedback.txt").read_text(encoding="utf-8")
    head = text.index("MultiHeadAttention: 0/20")
    block = text[head:text.index("\n\n", head)]
    assert "defines no `MultiHeadAttention`" in block
    assert "carried forward" not in block and "answering correctly" not in block


def test_what_the_student_and_instructor_read(graded):
    folder = graded["on_dir"] / "mask-off-by-one"
    data = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    assert data["extra_data"]["carry_forward"] == "on"
    carried = [t for t in data["tests"] if "carried_forward" in t]
    assert carried and all(t["status"] == "passed" and t["carried_forward"]["in"] and
                           "error carried forward" in t["output"] for t in carried)
    softmax = [t for t in carried if t["name"].startswith("masked_softmax: ")]
    assert softmax and all(t["carried_forward"]["in"] == ["sequence_mask"] and
                           t["carried_forward"]["answered"] == ["sequence_mask"] and
                           t["carried_forward"]["mistakes"] == ["mask-off-by-one"] and
                           t["carried_forward"]["parts"] == ["sequence_mask"] for t in softmax)
    # what failed with the old rule passed only as carried forward, and says so (the GPU
    # cases aside: a caller that does its work keeps its GPU share under both settings)
    before = json.loads((graded["off_dir"] / "mask-off-by-one" / "results.json").read_text(
        encoding="utf-8"))
    failed_before = {t["name"] for t in before["tests"] if t["status"] == "failed"
                     and t["tags"] != ["sequence_mask"] and not t["name"].startswith("GPU: ")}
    assert failed_before and failed_before == {t["name"] for t in carried
                                               if not t["name"].startswith("GPU: ")}
    text = (folder / "feedback.txt").read_text(encoding="utf-8")
    # its 12 cases all failed with the old rule (some degenerate ones only withheld)
    assert ("masked_softmax: 20/20 (passed: 12 of 12 cases, 12 of them carried forward)"
            in text)
    assert ("12 of 12 cases of this part give the right result once sequence_mask answers "
            "correctly, so masked_softmax's own code is right there and their points are kept "
            "(error carried forward): sequence_mask failed cases of its own in the "
            "sequence_mask part, which is where that costs points.") in text
    page = (folder / "feedback.html").read_text(encoding="utf-8")
    assert "so MultiHeadAttention&#x27;s own code is right there" in page or \
        "so MultiHeadAttention's own code is right there" in page
    row = json.loads((folder / "gradebook-row.json").read_text(encoding="utf-8"))
    assert row["carry_forward"] == "on"
    off = json.loads((graded["off_dir"] / "mask-off-by-one" / "results.json").read_text("utf-8"))
    assert off["extra_data"]["carry_forward"] == "off"
    result = graded["on"]["mask-off-by-one"]
    tests = [t for t in result.tests if t.part == "AdditiveAttention"]
    i18n.set_language("zh")
    try:
        said = carried_lines(tests)
    finally:
        i18n.set_language("en")
    assert said and "错误不重复扣分" in said[0] and "AdditiveAttention" in said[0]


def test_one_gradebook_never_mixes_the_settings(graded, tmp_path):
    assert suite_fingerprint(SuiteOptions(carry_forward="on")) != \
        suite_fingerprint(SuiteOptions(carry_forward="off"))
    # a row graded with "on" is kept in graded["on_dir"]; one more submission graded with
    # "off" into it would mix the two: refused before anything is graded
    path = tmp_path / "late.py"
    path.write_text(_source(), encoding="utf-8")
    with pytest.raises(MixedSettings, match="--carry-forward on"):
        grade_batch([str(path)], str(graded["on_dir"]), SuiteOptions(carry_forward="off"))
    assert not (graded["on_dir"] / "late").exists()


def test_a_report_entry_carries_only_what_the_declarations_know():
    """outcome.from_suite reads "carried" and "carry_note" from the trusted report and still
    checks them: functions are the api's (this assignment's, or an earlier module's the
    student provides), parts are the declaration's, mistake ids the catalog's; an unknown
    target, a failed test, or no known callee carries nothing."""
    from grader.grade.outcome import from_suite

    def entry(name, outcome, carried=None, note=None):
        return {"nodeid": name, "name": name, "part": "masked_softmax", "points": 1.0,
                "outcome": outcome, "blame": None if outcome == "passed" else "student",
                "target": "masked_softmax", "carried": carried, "carry_note": note}

    good = {"target": "masked_softmax", "in": ["sequence_mask", "evil"],
            "answered": ["sequence_mask", "os"], "mistakes": ["mask-off-by-one"],
            "parts": ["GPU"]}  # parts: the declaration's, below
    tests = from_suite({"tests": [
        entry("a", "passed", good),
        entry("b", "passed", dict(good, mistakes=["no-such-mistake"])),
        entry("c", "passed", dict(good, target="os.system")),
        entry("d", "failed", good),
        entry("e", "failed", None, {"why": "differs", "target": "masked_softmax",
                                    "callees": ["evil", "sequence_mask"]}),
        entry("f", "failed", None, {"why": "refused", "target": "masked_softmax",
                                    "callees": ["sequence_mask"], "error": "TypeError: x\x1b[2J"}),
        entry("g", "failed", None, {"why": "because", "target": "masked_softmax",
                                    "callees": ["sequence_mask"]}),
        entry("h", "passed", dict(good, **{"in": ["evil"]})),
    ]}, [])
    found = {t.name: t for t in tests}
    assert found["a"].carried == {"target": "masked_softmax", "in": ["sequence_mask"],
                                  "answered": ["sequence_mask"],
                                  "mistakes": ["mask-off-by-one"], "parts": ["sequence_mask"]}
    assert found["b"].carried["mistakes"] == []
    assert found["a"].score == 1.0 and found["d"].score == 0.0
    assert [found[n].carried for n in "cdh"] == [None, None, None]
    assert found["e"].carry_note == {"why": "differs", "target": "masked_softmax",
                                     "callees": ["sequence_mask"], "parts": ["sequence_mask"],
                                     "error": ""}
    assert found["f"].carry_note["error"] == "TypeError: x[2J"  # made safe: no escape
    assert found["g"].carry_note is None


@pytest.mark.skipif(torch.cuda.is_available(), reason="the device-discipline tier runs without CUDA")
def test_a_switched_off_device_check_costs_only_the_function_that_switched_it_off(graded):
    """tests/hostile_zoo.py's guard-popped: gpu-arange-no-device's edit, and sequence_mask
    pops the device check. sequence_mask's GPU share is lost ("could not watch"); its
    callers are judged on their own code, with sequence_mask answered (so the code that pops
    the check never runs in their cases), and keep theirs: the attack scores what the honest
    mistake does, no more."""
    result = graded["on"]["guard-popped"]
    gpu = {t.target: t for t in result.tests if t.part == "GPU" and t.status != "skipped"}
    assert gpu["sequence_mask"].status == "failed" and \
        "could not watch this call" in gpu["sequence_mask"].message
    assert all(t.status == "passed" for name, t in gpu.items() if name != "sequence_mask")
    assert _part(result, "GPU") == 8
    assert result.score == graded["on"]["gpu-arange-no-device"].score == 98


@pytest.mark.skipif(torch.cuda.is_available(), reason="the device-discipline tier runs without CUDA")
def test_the_gpu_part_graded_alone_scores_as_the_whole_run_does(tmp_path):
    """--parts gpu (grader/shards.py: the GPU part on its own node) has no other part's cases
    in its session; the hidden suite's conftest runs them unscored, so the GPU part knows
    which functions failed and scores as in a whole run: gpu-arange-no-device's 8/10, its
    callers judged with sequence_mask answered."""
    from grader import shards
    path = tmp_path / "gpu-arange-no-device.py"
    path.write_text(_source("gpu-arange-no-device"), encoding="utf-8")
    (result,) = grade_batch([str(path)], str(tmp_path / "out"), SuiteOptions(),
                            parts=shards.parse_parts("gpu"))
    assert result.status == "graded" and result.by_part() == {"GPU": (8.0, 10.0)}
    ran = {t.target: t for t in result.tests if t.status != "skipped"}
    assert ran["sequence_mask"].status == "failed" and not ran["sequence_mask"].carried
    for target in ("masked_softmax", "AdditiveAttention", "DotProductAttention",
                   "MultiHeadAttention"):
        assert ran[target].status == "passed" and ran[target].carried["in"], target
