"""The attention assignment grades, teaches and validates exactly as it did before issue 16.

Issue 16 makes the assignment data ("the attention assignment's grades, feedback and
validate results are unchanged (a test compares them with today's)"). The goldens in
tests/golden/attention/ were recorded from commit 04d18a4, before that refactor, by
tools/golden.py:

- the class, 16: the six examples, read from examples/ (alice.py, bob.ipynb, chen.py,
  dana.zip, erik/, fatima.py), and in class/ ten submissions built from catalog mistakes: one or more in every
  part, a notebook (softmax-fill-small.ipynb), one whose import fails (import-fails.py),
  one with two mistakes in two parts (two-mistakes.py: error carried forward).
- en/ and zh/: the class graded with `grader grade --jobs 1 --no-gpu` (`--lang zh` for
  zh/): grades.csv, and per student feedback.txt and results.json. `--no-gpu` makes the
  goldens the same on a machine with CUDA. Every file is staged with one fixed modification
  time, so the submission time grades.csv shows is fixed too.
- validate.json: `grader validate --jobs 1 --no-gpu`'s table (kind, ok, detail) and, per
  entry, its status, total, every part's score and each part's diagnosis: all 68 entries.

Normalized before comparing (tools/golden.py, `normalize_results` and the functions beside
it, each field and why): results.json loses `execution_time` (wall time),
`extra_data.isolation` (the machine's sandbox level) and `extra_data.case_results` (cache
counters); in every file the temporary folders the class is staged and graded in read
<class> and <out>. Everything else is compared exactly: every grade, every sentence of
feedback.txt and of results.json, every diagnosis, in both languages.

validate in full takes 95 s on an idle 2-core machine at --jobs 1 (measured; several
minutes when the machine is shared), so this test grades a deterministic sample of it,
the list `sample` in validate.json: the solution, the skeleton, the six correct
alternatives, and two catalog mistakes of each part (13 mistakes; `choose_sample`), built
by the tree's own `grader.validate.expectations` and graded as validate grades them (one
batch, default settings). `python tools/golden.py --check` compares every entry of the
full run, the table's wording too.

The slow tests took 56 s (en), 60 s (zh) and 83 s (the sample), 3.4 min in all, on this
2-core machine while others' runs held its load at 6 to 8, and 8.3 min at load 14 (about
85 s of CPU in all, so under 2 minutes on an idle machine).

An intentional change (a new case, a reworded sentence) is one command that rewrites the
goldens from the current tree, to be reviewed in the diff and committed:

    python tools/golden.py
"""
import importlib.util
import json
import os

import pytest

from conftest import KIT

_SPEC = importlib.util.spec_from_file_location("attnkit_golden", os.path.join(KIT, "tools",
                                                                              "golden.py"))
golden = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(golden)

PARTS = {"sequence_mask", "masked_softmax", "AdditiveAttention", "DotProductAttention",
         "transpose", "MultiHeadAttention", "GPU"}


def _validate_golden():
    with open(golden.VALIDATE, encoding="utf-8") as handle:
        return json.load(handle)


# ---- the goldens say what the README and docs/mistakes.md say (recorded right) -------------

def test_golden_class_scores_are_the_documented_ones():
    """The README's table of the examples (100, 83, 93, 69, 0, 0) and docs/mistakes.md's
    totals for the single-mistake submissions, read from the golden grades.csv; two-mistakes
    (74: each of its mistakes costs its own part, the GPU part nothing, issue 26) and
    import-fails (0) are as recorded."""
    import csv
    import io
    for lang in golden.LANGS:
        text = golden.load_golden(lang)["grades.csv"]
        assert text.startswith("\ufeff")
        rows = {r["submission"]: r for r in csv.DictReader(io.StringIO(text[1:]))}
        totals = {name: rows[name]["total"] for name in rows}
        assert totals == {
            "alice": "100", "bob": "83", "chen": "93", "dana": "69", "erik": "0", "fatima": "0",
            "mask-maxlen-from-batch": "91", "softmax-fill-small": "80", "additive-bias": "83",
            "dot-scale-by-ndim": "92", "transpose-output-head-major": "97",
            "mha-head-major": "74", "gpu-arange-no-device": "98", "softmax-repeat": "93",
            "two-mistakes": "74", "import-fails": "0"}, lang
        assert rows["bob"]["diagnoses"] == "mha-repeat"
        assert rows["two-mistakes"]["diagnoses"] == "mask-off-by-one dot-no-scale"
        assert rows["bob"]["source"] == "<class>/bob.ipynb"


def test_the_golden_class_keeps_only_what_it_built_and_reads_the_examples():
    """class/ holds the ten built submissions and nothing copied from examples/: the six
    examples are staged from examples/ itself."""
    built = sorted(name for name, _, _ in golden.BUILT)
    assert len(built) == 10 and sorted(os.listdir(golden.CLASS)) == built
    assert sorted(golden.EXAMPLES) == sorted(os.listdir(os.path.join(KIT, "examples")))
    assert golden.class_source("alice.py") == os.path.join(KIT, "examples", "alice.py")
    assert golden.class_source("two-mistakes.py") == os.path.join(golden.CLASS, "two-mistakes.py")
    assert len(golden.class_names()) == 16


def test_golden_validate_holds_and_sample_covers_every_part():
    data = _validate_golden()
    entries = data["entries"]
    assert len(entries) == 68 and all(e["ok"] for e in entries.values())
    assert entries["mha-head-major"]["parts"]["transpose"] == [0.0, 9.0]
    assert entries["mha-head-major"]["diagnoses"]["MultiHeadAttention"] == ["mha-head-major"]
    sample = data["sample"]
    mistakes = [n for n in sample if entries[n]["kind"] == "mistake"]
    assert len(mistakes) >= 12
    assert {entries[n]["detail"].split(" ", 1)[0] for n in mistakes} == PARTS
    assert {n for n, e in entries.items() if e["kind"] != "mistake"} <= set(sample)
    assert sum(entries[n]["kind"] == "alternative" for n in sample) == 6
    assert sample == golden.choose_sample(entries)


# ---- the comparison is sharp (no grading) ---------------------------------------------------

def test_normalizer_strips_only_what_varies():
    data = {"score": 83.0, "execution_time": 4.01, "output": "at /tmp/x/class/bob.ipynb",
            "tests": [{"name": "t", "score": 1.0, "output": "o"}],
            "extra_data": {"isolation": {"level": "bwrap"}, "case_results": {"reference": 1},
                           "lang": "zh", "status": "graded", "diagnoses": [{"part": "p"}]}}
    got = golden.normalize_results(data, "/tmp/x/class", "/tmp/x/out")
    assert got == {"score": 83.0, "output": "at <class>/bob.ipynb",
                   "tests": [{"name": "t", "score": 1.0, "output": "o"}],
                   "extra_data": {"lang": "zh", "status": "graded",
                                  "diagnoses": [{"part": "p"}]}}
    assert golden.normalize_feedback("a /tmp/x/out/b c", "/tmp/x/class", "/tmp/x/out") == \
        "a <out>/b c"


def test_a_changed_point_sentence_or_diagnosis_is_reported():
    found = golden.load_golden("en")
    assert golden.differences(golden.load_golden("en"), found, "en") == []
    flipped = dict(found, **{"grades.csv": found["grades.csv"].replace(
        "bob,bob,bob,graded,83,", "bob,bob,bob,graded,84,")})
    assert flipped["grades.csv"] != found["grades.csv"]
    assert any("83" in line for line in golden.differences(found, flipped, "en"))
    reworded = dict(found, **{"bob/feedback.txt": found["bob/feedback.txt"].replace(
        "repeated as a whole", "repeated whole")})
    assert any(line.startswith("-") and "repeated as a whole" in line
               for line in golden.differences(found, reworded, "en"))
    entries = _validate_golden()["entries"]
    other = json.loads(json.dumps(entries))
    other["softmax-log"]["diagnoses"]["masked_softmax"] = ["softmax-neg-inf"]
    [line] = golden.entry_differences(entries, other)
    assert line.startswith("validate softmax-log diagnoses: golden {")
    assert "'masked_softmax': ['softmax-log']" in line.split(", now")[0]
    assert "'masked_softmax': ['softmax-neg-inf']" in line.split(", now")[1]
    other["loops"]["parts"]["transpose"] = [8.0, 9.0]
    assert [l.split(":")[0] for l in golden.entry_differences(entries, other)] == [
        "validate loops parts", "validate softmax-log diagnoses"]


# ---- the current tree against the goldens (grades whole batches) ----------------------------

@pytest.mark.slow
@pytest.mark.parametrize("lang", golden.LANGS)
def test_class_grades_and_feedback_unchanged(lang, tmp_path):
    found = golden.grade_class(KIT, lang, str(tmp_path))
    expected = golden.load_golden(lang)
    assert len(expected) == 1 + 2 * 16
    problems = golden.differences(expected, found, lang)
    assert not problems, ("the grades or feedback changed; if intended, run "
                          "`python tools/golden.py` and review the diff:\n" + "\n".join(problems))


@pytest.mark.slow
def test_validate_sample_unchanged(tmp_path):
    data = _validate_golden()
    found = golden.grade_validate_sample(KIT, data["sample"], str(tmp_path))
    problems = golden.entry_differences({n: data["entries"][n] for n in data["sample"]}, found)
    assert not problems, ("validate's results changed; if intended, run "
                          "`python tools/golden.py` and review the diff:\n" + "\n".join(problems))
