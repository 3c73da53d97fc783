"""Error carried forward (grader/catalog/carry.py), by real grading: catalog mistakes built
as `grader validate` builds them (the solution with the edit), graded in one batch per
setting through the real trusted processes and sandboxed workers.

The figures "before" are docs/mistakes.md's (a `grader validate` run before error carried
forward): what each mistake scored in all, and in its own part. Under the default policy a
mistake in a function others call costs its own part as before, and its callers nothing;
with --carry-forward off the old totals come back. `grader validate` (tests/test_zoo.py)
checks the callers' cases of every catalog mistake under the default."""
import json
import os

import pytest
import torch

from grader import assignment, i18n
from grader.catalog import Catalog
from grader.grade import MixedSettings, SuiteOptions, grade_batch
from grader.grade.fingerprint import suite_fingerprint
from grader.report.feedback import carried_lines

pytestmark = pytest.mark.slow
CATALOG = Catalog.of(assignment.load("attention"))
by_id, callers = CATALOG.by_id, CATALOG.callers

MAX = {"sequence_mask": 11, "masked_softmax": 20, "AdditiveAttention": 15,
       "DotProductAttention": 15, "transpose": 9, "MultiHeadAttention": 20, "GPU": 10}
# one mistake of each kind a caller can meet: wrong values, an error (the mask returned),
# a property check (dropout never applied), the transposes, a device verdict
BEFORE = {  # docs/mistakes.md: (points left in its own part, total /100)
    "mask-off-by-one": (0, 9),
    "mask-returns-mask": (0, 9),
    "dot-no-dropout": (14, 97),
    "transpose-no-permute": (3, 72),
    "gpu-arange-no-device": (0, 90),
}
# with error carried forward: the own part as before, but for the GPU part, which is every
# function's: it loses only sequence_mask's own 2 points (its callers' 8 are carried)
OWN_AFTER = dict({m: own for m, (own, _total) in BEFORE.items()}, **{"gpu-arange-no-device": 8})
# and of the GPU part, the own function's 2 points where none of its cases is right on the
# CPU (sequence_mask's for the first two)
AFTER = {"mask-off-by-one": 87, "mask-returns-mask": 87, "dot-no-dropout": 99,
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
        assert carried and all(t.carried["mistakes"] == [mistake_id] and t.carried["in"] ==
                               [mistake.target] for t in carried), mistake_id
        assert not any(t.carried for t in result.tests if t.target == mistake.target)


def test_off_brings_the_old_losses_back(graded):
    lost_before = lost_after = 0
    for mistake_id, (own_before, total) in BEFORE.items():
        off, on = graded["off"][mistake_id], graded["on"][mistake_id]
        assert off.carry_forward == "off" and off.score == total, mistake_id
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
    # DotProductAttention is judged against the solution with mask-off-by-one: its own
    # missing scale fails every case there, as dot-no-scale alone does (docs/mistakes.md: 0/15)
    assert _part(both, "DotProductAttention") == 0
    dot = [t for t in both.tests if t.part == "DotProductAttention" and t.status == "failed"]
    assert dot and all(t.carry_note["why"] == "differs" and t.carry_note["callees"] ==
                       ["sequence_mask"] for t in dot)
    # MultiHeadAttention calls both: judged on top of both mistakes, it keeps its points
    assert _part(both, "MultiHeadAttention") == 20
    assert {tuple(t.carried["mistakes"]) for t in both.tests
            if t.carried and t.part == "MultiHeadAttention"} == {("mask-off-by-one", "dot-no-scale")}
    assert _part(both, "masked_softmax") == 20 and _part(both, "sequence_mask") == 0
    text = (graded["on_dir"] / "mask-and-dot" / "feedback.txt").read_text(encoding="utf-8")
    assert ("do not give what a correct DotProductAttention gives on top of the mistake in "
            "sequence_mask named in the sequence_mask part") in text


def test_an_uncatalogued_callee_bug_is_not_carried(graded):
    on, off = graded["on"]["uncatalogued"], graded["off"]["uncatalogued"]
    assert not [d for d in on.diagnoses if d["part"] == "sequence_mask" and d["mistake"]]
    assert not any(t.carried for t in on.tests)
    assert on.by_part() == off.by_part()
    assert _part(on, "masked_softmax") < 20  # its length-0 cases fail as before
    text = (graded["on_dir"] / "uncatalogued" / "feedback.txt").read_text(encoding="utf-8")
    assert "cases of this part failed where they call sequence_mask, which failed cases of its " \
        "own part that no catalog mistake explains" in text


def test_a_missing_function_is_never_told_a_callee_could_fix_it(graded):
    """A part whose own function is not defined gets no "fix the callee and these cases may
    pass" note, even though a function it would call failed unexplained (the callee's part
    still says so)."""
    result = graded["on"]["no-mha"]
    assert _part(result, "MultiHeadAttention") == 0
    assert not [t.name for t in result.tests
                if t.carry_note and "MultiHeadAttention" in t.name]
    assert [t for t in result.tests if t.part == "masked_softmax" and t.carry_note]
    text = (graded["on_dir"] / "no-mha" / "feedback.txt").read_text(encoding="utf-8")
    head = text.index("MultiHeadAttention: 0/20")
    block = text[head:text.index("\n\n", head)]
    assert "defines no `MultiHeadAttention`" in block
    assert "could not be carried forward" not in block
    assert not [t.name for t in result.tests  # its GPU case neither
                if t.carry_note and t.carry_note.get("target") == "MultiHeadAttention"]


def test_what_the_student_and_instructor_read(graded):
    folder = graded["on_dir"] / "mask-off-by-one"
    data = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    assert data["extra_data"]["carry_forward"] == "on"
    carried = [t for t in data["tests"] if "carried_forward" in t]
    assert carried and all(t["status"] == "passed" and t["carried_forward"]["mistakes"] ==
                           ["mask-off-by-one"] and t["carried_forward"]["parts"] ==
                           ["sequence_mask"] and "error carried forward" in t["output"]
                           for t in carried)
    # what failed with the old rule passed only as carried forward, and says so
    before = json.loads((graded["off_dir"] / "mask-off-by-one" / "results.json").read_text(
        encoding="utf-8"))
    failed_before = {t["name"] for t in before["tests"] if t["status"] == "failed"
                     and t["tags"] != ["sequence_mask"] and t["name"] != "GPU: sequence_mask "
                     "makes no tensor on the default device"}
    assert failed_before and failed_before == {t["name"] for t in carried}
    text = (folder / "feedback.txt").read_text(encoding="utf-8")
    # its 12 cases all failed with the old rule (some degenerate ones only withheld)
    assert ("masked_softmax: 20/20 (passed: 12 of 12 cases, 12 of them carried forward)"
            in text)
    assert ("12 of 12 cases of this part gave what a correct masked_softmax gives on top of the "
            "mistake in sequence_mask named in the sequence_mask part; their points are kept "
            "(error carried forward).") in text
    page = (folder / "feedback.html").read_text(encoding="utf-8")
    assert "gave what a correct MultiHeadAttention gives on top of the mistake in sequence_mask" \
        in page
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


def test_a_report_entry_carries_only_what_the_catalog_knows():
    """outcome.from_suite reads "carried" from the trusted report and still checks it: the
    functions and parts come from the catalog, an unknown id or target, or a failed test,
    carries nothing."""
    from grader.grade.outcome import from_suite

    def entry(name, outcome, carried=None, note=None):
        return {"nodeid": name, "name": name, "part": "masked_softmax", "points": 1.0,
                "outcome": outcome, "blame": None if outcome == "passed" else "student",
                "target": "masked_softmax", "carried": carried, "carry_note": note}

    good = {"target": "masked_softmax", "mistakes": ["mask-off-by-one"],
            "in": ["MultiHeadAttention"], "parts": ["GPU"]}  # in/parts: the catalog's, below
    tests = from_suite({"tests": [
        entry("a", "passed", good),
        entry("b", "passed", dict(good, mistakes=["mask-off-by-one", "no-such-mistake"])),
        entry("c", "passed", dict(good, target="os.system")),
        entry("d", "failed", good),
        entry("e", "failed", None, {"why": "differs", "target": "masked_softmax",
                                    "mistakes": ["mask-off-by-one"], "callees": ["evil"]}),
        entry("f", "failed", None, {"why": "unnamed", "target": "masked_softmax",
                                    "callees": ["sequence_mask", "evil"]}),
        entry("g", "failed", None, {"why": "because", "target": "masked_softmax",
                                    "callees": ["sequence_mask"]}),
    ]}, [])
    found = {t.name: t for t in tests}
    assert found["a"].carried == {"target": "masked_softmax", "mistakes": ["mask-off-by-one"],
                                  "in": ["sequence_mask"], "parts": ["sequence_mask"]}
    assert found["a"].score == 1.0 and found["d"].score == 0.0
    assert [found[n].carried for n in "bcd"] == [None, None, None]
    assert found["e"].carry_note == {"why": "differs", "target": "masked_softmax",
                                     "callees": ["sequence_mask"], "parts": ["sequence_mask"],
                                     "mistakes": ["mask-off-by-one"]}
    assert found["f"].carry_note["callees"] == ["sequence_mask"] and found["g"].carry_note is None


@pytest.mark.skipif(torch.cuda.is_available(), reason="the device-discipline tier runs without CUDA")
def test_a_switched_off_device_check_is_never_carried(graded):
    """tests/hostile_zoo.py's guard-popped: gpu-arange-no-device's edit, and sequence_mask
    pops the device check. The GPU part names gpu-arange-no-device (the diagnosis compares
    verdicts as failed or not), but its callers' verdicts say "could not watch", not the
    mistake's tensor on the default device: nothing is carried (8 points were, before the
    verdicts were compared word for word)."""
    result = graded["on"]["guard-popped"]
    assert "gpu-arange-no-device" in [d["mistake"] for d in result.diagnoses
                                      if d["part"] == "GPU"]
    gpu = [t for t in result.tests if t.part == "GPU" and t.status != "skipped"]
    assert _part(result, "GPU") == 0 and not any(t.carried for t in gpu)
    assert [t.carry_note["why"] for t in gpu if t.target != "sequence_mask"] == ["differs"] * 4


@pytest.mark.skipif(torch.cuda.is_available(), reason="the device-discipline tier runs without CUDA")
def test_the_gpu_part_graded_alone_carries_as_the_whole_run_does(tmp_path):
    """--parts gpu (grader/shards.py: the GPU part on its own node) has no diagnosis of the
    other parts in its session; the hidden suite's conftest runs their cases unscored for
    it, so the GPU part scores as in a whole run (8/10 for mask-off-by-one, above)."""
    from grader import shards
    path = tmp_path / "mask-off-by-one.py"
    path.write_text(_source("mask-off-by-one"), encoding="utf-8")
    (result,) = grade_batch([str(path)], str(tmp_path / "out"), SuiteOptions(),
                            parts=shards.parse_parts("gpu"))
    assert result.status == "graded" and result.by_part() == {"GPU": (8.0, 10.0)}
    ran = {t.target: t for t in result.tests if t.status != "skipped"}
    assert ran["sequence_mask"].status == "failed" and not ran["sequence_mask"].carried
    for target in ("masked_softmax", "AdditiveAttention", "DotProductAttention",
                   "MultiHeadAttention"):
        assert ran[target].status == "passed" and ran[target].carried["mistakes"] == \
            ["mask-off-by-one"], target
