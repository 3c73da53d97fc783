"""What a student reads: feedback.txt opens with one block per part (score, diagnosis,
experiment), says the same failure once with a count, holds to its line budget, says an
import error or a missing function once, and discloses no more of a hidden case than the
course's --feedback allows; results.json and grades.csv carry the diagnoses, the
disclosure and Gradescope's visibility."""
import csv
import dataclasses
import io
import json
import os
import zipfile

import pytest

from conftest import KIT
import grader.grade as grade
from grader.cli import build_parser
from grader.grade import outcome
from grader.platforms.gradescope.autograder import build
from grader.report import feedback as fb
from grader.report import summary
from grader.report.gradebook import gradebook_text, safe_record
from grader.report.gradescope import results_json, summary_text

T = outcome.TestOutcome
PARTS = ["sequence_mask", "masked_softmax", "MultiHeadAttention", "GPU"]

WEIGHTS = ("MultiHeadAttention.attention.attention_weights after MultiHeadAttention(key_size={k}, "
           "num_heads=2) in eval mode, forward(queries ({b}, 3, 6) float32, valid_lens ({b},) "
           "int64 = [{b}, 5]): wrong values.\n"
           "  30 of 60 entries differ, largest difference 0.{k}444.\n"
           "  Expected: [[0.25, 0.25], [0.{k}, 0.5]]\n"
           "  Got:      [[0.1, 0.4], [0.3, 0.2]]")
RAISED = ("calling MultiHeadAttention(num_heads={k}) in eval mode, forward(valid_lens ({b}, 2)) "
          "raised RuntimeError: expected shape ({b}, 4) but got ({k},)")
DIAGNOSIS = {"part": "MultiHeadAttention", "mistake": "mha-repeat",
             "text": "MultiHeadAttention: valid_lens is repeated as a whole, so head h of "
                     "example b gets another example's length.",
             "experiment": "Call MultiHeadAttention with 2 heads and valid_lens [1, 4] and look "
                           "at attention.attention_weights per head."}


def _result(tests, diagnoses=(), summary_data=None, name="kim", **extra):
    result = outcome.SubmissionResult(name, f"{name}.py", list(tests), summary=summary_data,
                                      diagnoses=list(diagnoses), **extra)
    result.folder = name
    return result


def _mha_result(diagnoses=(DIAGNOSIS,)):
    tests = [T(f"sequence_mask: case {i}", "sequence_mask", 1.0, "passed") for i in range(9)]
    tests += [T("masked_softmax: float64", "masked_softmax", 2.0, "passed")]
    tests += [T(f"MultiHeadAttention: weights {i}", "MultiHeadAttention", 2.0, "failed",
                WEIGHTS.format(k=i + 2, b=i + 2)) for i in range(5)]
    tests += [T(f"MultiHeadAttention: 2-D lengths {i}", "MultiHeadAttention", 1.0, "failed",
                RAISED.format(k=i + 2, b=i + 3)) for i in range(3)]
    tests += [T("MultiHeadAttention: one head", "MultiHeadAttention", 1.0, "passed")]
    tests += [T("GPU: MultiHeadAttention on CUDA", "GPU", 2.0, "skipped", "no CUDA here")]
    return _result(tests, diagnoses, {"api": {}, "stdout": "x = 1\n"})


# -- the summary first, then the failing cases grouped --------------------------------------

def test_feedback_opens_with_one_block_per_part_and_the_diagnosis():
    text = fb.feedback_text(_mha_result())
    lines = text.splitlines()
    assert lines[0] == "kim: 12 / 25 points" and lines[1] == ""
    assert lines[2] == "sequence_mask: 9/9 (passed: 9 of 9 cases)"
    assert lines[3] == "masked_softmax: 2/2 (passed: 1 of 1 cases)"
    assert lines[4] == "MultiHeadAttention: 1/14 (passed: 1 of 9 cases)"
    assert lines[5] == ("    valid_lens is repeated as a whole, so head h of example b gets "
                        "another example's length.")  # the part is said once, in the head
    assert lines[6].startswith("    Try this: Call MultiHeadAttention with 2 heads")
    assert text.index("Failing cases") > text.index("Try this")


def test_the_same_failure_in_several_cases_is_said_once_with_a_count():
    text = fb.feedback_text(_mha_result())
    assert text.count("[FAIL]") == 2  # 5 wrong weights and 3 raises: two kinds of failure
    assert "(and 4 more cases like this: weights 1; weights 2; weights 3; weights 4)" in text
    assert "(and 2 more cases like this: 2-D lengths 1; 2-D lengths 2)" in text
    assert text.count("30 of 60 entries differ") == 1
    assert "[PASS]" not in text and "one head" not in text  # passing cases: a count per part


def test_catalog_mistakes_group_failures_whose_messages_differ():
    tests = [T(f"p: case {i}", "p", 1.0, "failed", f"message number {i}\nmore {'x' * i}",
               mistakes=["softmax-neg-inf"]) for i in range(4)]
    tests += [T("p: other", "p", 1.0, "failed", "another message", mistakes=["fill-zero"])]
    groups = fb.failure_groups(tests)
    assert [len(g) for g in groups] == [4, 1]
    text = fb.feedback_text(_result(tests))
    assert text.count("[FAIL]") == 2 and "(and 3 more cases like this:" in text


def test_group_keys_drop_numbers_and_bracketed_values():
    first = T("p: a", "p", 1, "failed", "f(x (2, 3) float32 = [1, 2]) gave 0.5 at [1, 0]")
    second = T("p: b", "p", 1, "failed", "f(x (7,) float64 = [[3]]) gave 1e-3 at [0, 2]")
    other = T("p: c", "p", 1, "failed", "f() raised ValueError: boom")
    assert fb.group_key(first) == fb.group_key(second) != fb.group_key(other)


def test_without_diagnoses_the_first_line_of_the_first_failure_is_the_observation():
    text = fb.feedback_text(_mha_result(diagnoses=()))
    block = text.split("MultiHeadAttention: 1/14 (passed: 1 of 9 cases)\n")[1].splitlines()[0]
    assert block.startswith("    8 of 9 cases fail; the first, \u201cweights 0\u201d: "
                            "MultiHeadAttention.attention.attention_weights after")
    assert "Try this" not in text


def test_a_message_naming_a_known_mistake_is_the_fallback_diagnosis():
    message = ("the output of masked_softmax(X (2, 3) float32): wrong values.\n"
               "  Your result is exactly what you get if masked scores are set to -inf.")
    result = _result([T("masked_softmax: zero", "masked_softmax", 2, "failed", message,
                        mistakes=["softmax-neg-inf"])])
    (block,) = summary.part_summaries(result, "summary")
    assert block["text"] == "Your result is exactly what you get if masked scores are set to -inf."
    assert block["mistake"] == "softmax-neg-inf"


def test_each_diagnosis_of_a_part_gets_its_own_lines_and_an_observation_only_at_full():
    named = [dict(DIAGNOSIS), {"part": "MultiHeadAttention", "mistake": "mha-no-output-projection",
                               "text": "MultiHeadAttention: the output projection W_o is left out.",
                               "experiment": ""},
             {"part": "MultiHeadAttention", "mistake": None,
              "text": "MultiHeadAttention: no catalog mistake explains the other 2 failing "
                      "case(s) of this part; the first, 2-D lengths 0: raised RuntimeError",
              "experiment": ""}]
    text = fb.feedback_text(_mha_result(diagnoses=named))
    block = text.split("MultiHeadAttention: 1/14 (passed: 1 of 9 cases)\n")[1].splitlines()[:4]
    assert block == [
        "    valid_lens is repeated as a whole, so head h of example b gets another example's "
        "length.",
        "    Try this: Call MultiHeadAttention with 2 heads and valid_lens [1, 4] and look at "
        "attention.attention_weights per head.",
        "    The output projection W_o is left out.",
        "    No catalog mistake explains the other 2 failing case(s) of this part; the first, "
        "2-D lengths 0: raised RuntimeError"]
    blocks = {b["part"]: b for b in summary.part_summaries(_mha_result(diagnoses=named),
                                                           "summary")}
    # below `full`, the observation (it quotes a case) is left out; the named ones stay
    assert [d["mistake"] for d in blocks["MultiHeadAttention"]["diagnoses"]] == [
        "mha-repeat", "mha-no-output-projection"]
    assert blocks["MultiHeadAttention"]["mistake"] == "mha-repeat"
    assert [(d["part"], d["mistake"]) for d in summary.diagnoses_data(
        _mha_result(diagnoses=named), "summary")] == [
        ("MultiHeadAttention", "mha-repeat"), ("MultiHeadAttention", "mha-no-output-projection")]


def test_the_file_holds_to_its_line_and_byte_budget_with_a_visible_cut():
    tests = [T(f"p: case {i}", "p", 1.0, "failed",
               f"failure kind {'abcdefghijklmnopqrstuvwxyz'[i % 26] * (i + 1)}\n"
               + "\n".join(f"  detail line {j}: " + "y" * 150 for j in range(9)))
             for i in range(60)]
    text = fb.feedback_text(_result(tests))
    lines = text.splitlines()
    assert len(lines) <= fb.MAX_LINES and len(text.encode("utf-8")) <= fb.MAX_BYTES
    shown = text.count("[FAIL]")
    assert 0 < shown < 60
    assert lines[-1] == f"... {60 - shown} more failing cases not shown"


# -- one message for a file that did not import, once for a missing function ----------------

IMPORT_ERROR = ("importing attention.py failed: it imports `d2l`, which the grading machine "
                "does not have.\nModuleNotFoundError: No module named 'd2l'")


def _import_failure(with_load_error=True):
    tests = [T(f"{p}: case {i}", p, 1.0, "failed", IMPORT_ERROR) for p in PARTS[:3]
             for i in range(20)]
    tests += [T(f"GPU: {p}", "GPU", 2.0, "failed",
                f"none of the {p} cases is right on the CPU yet, so how it behaves on a GPU "
                f"cannot be graded: fix {p} first (see its own part).") for p in PARTS[:3]]
    return _result(tests, summary_data={"load_error": IMPORT_ERROR} if with_load_error else {})


@pytest.mark.parametrize("with_load_error", [True, False])
def test_an_import_error_is_said_once_with_one_line_for_the_cases(with_load_error):
    text = fb.feedback_text(_import_failure(with_load_error))
    assert text.count("No module named 'd2l'") == 1
    assert ("Not run: 63 of 63 cases, because attention.py could not be imported" if
            with_load_error else "Failed: 63 of 63 cases, with the message above") in text
    assert "fix " not in text and "[FAIL]" not in text
    assert "GPU: 0/6\n" in text and len(text.splitlines()) < 25


def test_a_missing_function_is_said_once_per_part_not_per_case():
    missing = ("attention.py defines no `MultiHeadAttention` (or importing it failed). Check "
               "the spelling: the grader looks for exactly this name.")
    tests = [T("sequence_mask: a", "sequence_mask", 1.0, "passed")]
    tests += [T(f"MultiHeadAttention: {i}", "MultiHeadAttention", 1.0, "failed", missing)
              for i in range(12)]
    tests += [T("GPU: MultiHeadAttention", "GPU", 2.0, "failed",
                "none of the MultiHeadAttention cases is right on the CPU yet, so how it behaves "
                "on a GPU cannot be graded: fix MultiHeadAttention first (see its own part).")]
    result = _result(tests, summary_data={"api": {"MultiHeadAttention": "missing",
                                                  "sequence_mask": "function"}})
    text = fb.feedback_text(result)
    assert text.count("defines no `MultiHeadAttention`") == 3  # two parts, one not-run line
    assert "Not run: 13 cases (MultiHeadAttention, GPU), because attention.py defines no " \
           "`MultiHeadAttention`." in text
    assert "[FAIL]" not in text and "fix MultiHeadAttention first" not in text


# -- a second assignment's file is named as it is (issue 16) -----------------------------------

def _transformer_missing():
    """A transformer.py without TransformerEncoderBlock: its cases stopped at the lookup,
    with the message the harness writes for it (ProbeResult, given the module's file)."""
    from grader.harness.failures import StudentFailure
    from grader.harness.results import ProbeResult
    with pytest.raises(StudentFailure) as stopped:
        ProbeResult({"ok": False, "stage": "lookup"}, {"target": "TransformerEncoderBlock"},
                    "submission", "", module_file="transformer.py").check_ran()
    message = str(stopped.value)
    tests = [T("AddNorm: a", "AddNorm", 1.0, "passed")]
    tests += [T(f"TransformerEncoderBlock: {i}", "TransformerEncoderBlock", 1.0, "failed",
                message) for i in range(4)]
    result = _result(tests, summary_data={"api": {"TransformerEncoderBlock": "missing",
                                                  "AddNorm": "class"}}, name="wang")
    return message, result


def test_a_second_assignments_feedback_names_its_own_file():
    message, result = _transformer_missing()
    assert message == ("transformer.py defines no `TransformerEncoderBlock` (or importing it "
                       "failed). Check the spelling: the grader looks for exactly this name.")
    text = fb.feedback_text(result, module_file="transformer.py")
    assert ("    transformer.py defines no `TransformerEncoderBlock`, so these cases could not "
            "run: check the spelling (the grader looks for exactly this name).") in text
    assert ("Not run: 4 cases (TransformerEncoderBlock), because transformer.py defines no "
            "`TransformerEncoderBlock`.") in text
    data = json.dumps(results_json(result, module_file="transformer.py"))
    assert "transformer.py defines no `TransformerEncoderBlock`, so these" in data
    assert "attention" not in text + data
    broken = _result([T("AddNorm: a", "AddNorm", 1.0, "failed", "x"),
                      T("AddNorm: b", "AddNorm", 1.0, "failed", "x")],
                     summary_data={"load_error": "transformer.py is not valid Python"})
    assert "Not run: 2 of 2 cases, because transformer.py could not be imported (see above)." \
        in fb.feedback_text(broken, module_file="transformer.py")


def test_the_harness_names_the_file_and_the_attribute_it_looked_for():
    from grader.harness.failures import StudentFailure
    from grader.harness.results import ProbeResult
    probe = {"target": "AddNorm", "init": {"norm_shape": 4}}
    raised = {"ok": False, "stage": "lookup"}
    with pytest.raises(StudentFailure) as lookup:
        ProbeResult(raised, probe, "submission", "AddNorm(X, Y)", "transformer.py").check_ran()
    assert str(lookup.value).startswith("transformer.py defines no `AddNorm`")
    for which, attribute in (("attention.attention_weights", "attention_weights"),
                             ("pos_encoding.P", "P")):
        missing = {"kind": "missing", "repr": "AttributeError"}
        result = ProbeResult({"ok": True, "calls": [{"captured": {which: missing}}]},
                             probe, "submission", "block(X)", "transformer.py")
        with pytest.raises(StudentFailure) as stopped:
            result.tensor(which)
        assert str(stopped.value).endswith(
            f"Store it as an attribute in forward, e.g. self.{attribute} = ...")


def test_an_import_failure_names_the_assignments_file():
    from grader.harness.implementations import explain_import_error
    d2l = {"type": "ModuleNotFoundError", "message": "No module named 'd2l'"}
    assert explain_import_error(d2l, module_file="transformer.py").startswith(
        "importing transformer.py failed: it imports `d2l`, which the grading machine does not "
        "have (it has Python's standard library and torch). Copy what you need from it into "
        "transformer.py instead of importing it.\nModuleNotFoundError: No module named 'd2l'")
    syntax = {"type": "SyntaxError", "message": "invalid syntax"}
    assert explain_import_error(syntax, module_file="transformer.py").startswith(
        "transformer.py is not valid Python, so nothing in it could be graded.\n")
    # no file named: the default assignment's (attention.py), as before issue 16
    assert explain_import_error(syntax).startswith("attention.py is not valid Python")


def test_the_console_heads_its_columns_with_the_parts_short_names():
    from grader.report.console import Table
    stream = io.StringIO()
    Table(["PositionalEncoding", "AddNorm"], 2, stream=stream,
          short={"PositionalEncoding": "posenc", "AddNorm": "addnorm"}).header()
    assert stream.getvalue().rstrip().endswith("   posenc   addnorm  time  note")
    stream = io.StringIO()
    Table(["sequence_mask", "transpose", "GPU"], 1, stream=stream).header()  # the default's
    assert stream.getvalue().rstrip().endswith("     mask    transp       gpu  time  note")


# -- disclosure: full, summary, score -----------------------------------------------------

def _catalog_observation():
    """A part the catalog only observed: its text quotes the case's first line (inputs)."""
    return {"part": "MultiHeadAttention", "mistake": None, "experiment": "Try 2 heads.",
            "text": "MultiHeadAttention: “weights 0” fails: " + WEIGHTS.format(k=2, b=2)[:120]}


@pytest.mark.parametrize("diagnoses", [(DIAGNOSIS,), (_catalog_observation(),), ()])
def test_summary_shows_no_inputs_or_expected_values(diagnoses):
    result = _mha_result(diagnoses)
    text = fb.feedback_text(result, "summary")
    data = results_json(result, feedback="summary")
    shown = text + json.dumps(data)
    for leak in ("Expected", "expected shape", "valid_lens (", "key_size", "x = 1", "0.25"):
        assert leak not in shown, leak
    assert "MultiHeadAttention: 1/14" in text and "[FAIL]" not in text
    outputs = {t["output"] for t in data["tests"] if t["status"] == "failed"}
    assert len(outputs) == 1 and outputs.pop()  # every failing case: its part's diagnosis
    assert data["extra_data"]["feedback"] == "summary"


def test_score_shows_the_scores_only():
    result = _mha_result()
    text = fb.feedback_text(result, "score")
    assert text == ("kim: 12 / 25 points\n\nsequence_mask: 9/9\nmasked_softmax: 2/2\n"
                    "MultiHeadAttention: 1/14\n")
    data = results_json(result, feedback="score")
    assert all(t["output"] == "" for t in data["tests"])
    assert data["output"] == "sequence_mask: 9/9\nmasked_softmax: 2/2\nMultiHeadAttention: 1/14"


def test_an_unknown_level_is_refused():
    with pytest.raises(ValueError):
        fb.feedback_text(_mha_result(), "everything")
    with pytest.raises(ValueError):
        results_json(_mha_result(), visibility="students")


# -- results.json and grades.csv ------------------------------------------------------------

def test_results_json_carries_diagnoses_disclosure_and_visibility():
    result = _mha_result()
    data = results_json(result, feedback="full", visibility="after_due_date")
    assert data["visibility"] == "visible"  # the total score stays visible
    assert {t["visibility"] for t in data["tests"]} == {"after_due_date"}
    assert data["extra_data"]["diagnoses"] == [
        {"part": "MultiHeadAttention", "mistake": "mha-repeat",
         "text": "valid_lens is repeated as a whole, so head h of example b gets another "
                 "example's length."}]
    assert data["extra_data"]["feedback"] == "full"
    assert data["extra_data"]["visibility"] == "after_due_date"
    # the failing tests keep their messages (hidden until the deadline) ...
    assert any("Expected" in t["output"] for t in data["tests"])
    # ... while the always visible top-level output says no more than the summary
    assert "Expected" not in data["output"] and "x = 1" not in data["output"]
    assert data["output"].startswith("sequence_mask: 9/9 (passed: 9 of 9 cases)")
    visible = results_json(result, visibility="visible")
    assert "x = 1" in visible["output"]  # what the code printed: full and visible only


def test_the_summary_text_leads_with_the_parts_when_diagnoses_are_empty():
    text = summary_text(_mha_result(diagnoses=()))
    assert text.startswith("sequence_mask: 9/9")
    assert "8 of 9 cases fail" in text


def test_grades_csv_has_a_diagnoses_column_of_ids():
    second = dict(DIAGNOSIS, part="masked_softmax", mistake="softmax-neg-inf")
    rows = [safe_record(_mha_result((DIAGNOSIS, second))),
            safe_record(_result([T("p: a", "p", 1.0, "passed")], name="alice")),
            safe_record(_result([T("p: a", "p", 1.0, "failed", "x")], name="zoe",
                                diagnoses=[{**DIAGNOSIS, "part": "p", "mistake": None}]))]
    assert rows[0]["diagnoses"] == ["mha-repeat", "softmax-neg-inf"]
    table = {r["submission"]: r for r in csv.DictReader(io.StringIO(
        gradebook_text(rows, ["p"])))}
    assert table["kim"]["diagnoses"] == "mha-repeat softmax-neg-inf"
    assert table["alice"]["diagnoses"] == "" and table["zoe"]["diagnoses"] == ""


# -- plumbing: the command line, the batch, the Gradescope zip --------------------------------

def test_command_line_takes_feedback_and_visibility():
    parser = build_parser()
    args = parser.parse_args(["grade", "a.py", "--out", "o", "--feedback", "summary",
                              "--visibility", "after_published"])
    assert (args.feedback, args.visibility) == ("summary", "after_published")
    args = parser.parse_args(["grade", "a.py", "--out", "o"])
    assert (args.feedback, args.visibility) == ("full", "visible")
    args = parser.parse_args(["gradescope", "--feedback", "score", "--visibility", "hidden"])
    assert (args.feedback, args.visibility) == ("score", "hidden")
    with pytest.raises(SystemExit):
        parser.parse_args(["grade", "a.py", "--out", "o", "--feedback", "all"])


def test_the_autograder_passes_the_disclosure_to_grader_grade(tmp_path):
    archive = build(str(tmp_path / "a.zip"), "2.13.0", feedback="summary",
                    visibility="after_due_date")
    with zipfile.ZipFile(archive) as z:
        script = z.read("run_autograder").decode()
    assert "--feedback summary --visibility after_due_date" in script
    with pytest.raises(ValueError):
        build(str(tmp_path / "b.zip"), "2.13.0", visibility="later")


@pytest.mark.slow
def test_a_row_written_with_another_disclosure_is_written_again(tmp_path, monkeypatch):
    seen = []

    def fake_grade_one(job, catalog, options, workdir, zygote=None, suite=None):
        seen.append(job.previous)
        if job.previous == "mark":
            return job.result([], unchanged=True, fingerprint="mark")
        return dataclasses.replace(_mha_result(), name=job.submission.name, folder=job.folder,
                                   fingerprint="mark")
    monkeypatch.setattr(grade, "grade_one", fake_grade_one)
    monkeypatch.setattr(grade.trusted, "start_zygote", lambda *_: None)
    monkeypatch.setattr(grade.trusted, "catalog", lambda options, zygote=None: [
        {"name": "x", "part": p, "points": 1.0, "nodeid": p} for p in PARTS])
    monkeypatch.setattr(grade.isolation, "choose", lambda level: grade.isolation.Isolation("none"))
    monkeypatch.setattr(grade.fingerprint, "suite_fingerprint", lambda options: "suite")
    out, path = tmp_path / "out", str(tmp_path / "kim.py")
    grade.grade_batch([path], str(out), stream=io.StringIO())
    full = (out / "kim" / "feedback.txt").read_text()
    grade.grade_batch([path], str(out), stream=io.StringIO())  # unchanged: kept
    grade.grade_batch([path], str(out), stream=io.StringIO(), feedback="summary",
                      visibility="hidden")
    assert seen == [None, "mark", None]
    shown = (out / "kim" / "feedback.txt").read_text()
    assert "Expected" in full and "Expected" not in shown
    data = json.loads((out / "kim" / "results.json").read_text())
    assert data["extra_data"]["feedback"] == "summary"
    assert {t["visibility"] for t in data["tests"]} == {"hidden"}


# -- real grading: the example notebook and the syntax error ---------------------------------

@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    out = tmp_path_factory.mktemp("feedback")
    paths = [os.path.join(KIT, "examples", n) for n in ("bob.ipynb", "erik")]
    results = grade.grade_batch(paths, str(out), jobs=2, stream=io.StringIO())
    return {r.name: r for r in results}, out


@pytest.mark.slow
def test_bob_opens_with_the_summary_and_groups_his_failures(graded):
    results, out = graded
    text = (out / "bob" / "feedback.txt").read_text(encoding="utf-8")
    lines = text.splitlines()
    assert lines[0] == "bob: 83 / 100 points"
    assert lines[2:7] == ["sequence_mask: 11/11 (passed: 10 of 10 cases)",
                          "masked_softmax: 20/20 (passed: 12 of 12 cases)",
                          "AdditiveAttention: 15/15 (passed: 10 of 10 cases)",
                          "DotProductAttention: 15/15 (passed: 11 of 11 cases)",
                          "transpose: 9/9 (passed: 7 of 7 cases)"]
    assert lines[7] == "MultiHeadAttention: 3/20 (passed: 3 of 12 cases)"
    assert lines[8].startswith("    ") and lines[8].strip()  # what is wrong
    failed = [t for t in results["bob"].tests if t.part == "MultiHeadAttention"
              and t.status == "failed"]
    shown = text.count("[FAIL]")
    counted = sum(int(part.split(" more cases")[0]) for part in text.split("(and ")[1:])
    assert shown < len(failed) and shown + counted == len(failed)
    assert len(lines) <= fb.MAX_LINES and "[PASS]" not in text


@pytest.mark.slow
def test_erik_gets_one_message_and_one_line_for_the_cases(graded):
    results, out = graded
    text = (out / "erik" / "feedback.txt").read_text(encoding="utf-8")
    assert text.count("SyntaxError") == 1 and "line 59" in text
    assert "Not run: 67 of 67 cases, because attention.py could not be imported" in text
    assert "fix " not in text and len(text.splitlines()) < 25


@pytest.mark.slow
def test_bob_at_summary_and_score_shows_no_hidden_case(graded, tmp_path):
    results, _ = graded
    for level in ("summary", "score"):
        grade.write_result(results["bob"], str(tmp_path / level), feedback=level,
                           visibility="after_due_date")
        text = (tmp_path / level / "bob" / "feedback.txt").read_text(encoding="utf-8")
        data = json.loads((tmp_path / level / "bob" / "results.json").read_text("utf-8"))
        shown = text + json.dumps(data, ensure_ascii=False)
        for leak in ("Expected:", "expected shape", "expected 0.", "valid_lens (2,)",
                     "key_size=", "[[[0.5000"):
            assert leak not in shown, (level, leak)
        assert data["extra_data"]["feedback"] == level
        assert {t["visibility"] for t in data["tests"]} == {"after_due_date"}
        assert "MultiHeadAttention: 3/20" in text
    score = (tmp_path / "score" / "bob" / "feedback.txt").read_text(encoding="utf-8")
    assert len(score.splitlines()) == 9


def test_the_autograder_grades_in_the_language_it_was_built_for(tmp_path):
    archive = build(str(tmp_path / "zh.zip"), "2.13.0", lang="zh")
    with zipfile.ZipFile(archive) as z:
        assert "--layout plain --lang zh" in z.read("run_autograder").decode()
    with zipfile.ZipFile(build(str(tmp_path / "en.zip"), "2.13.0")) as z:
        assert "--lang en" in z.read("run_autograder").decode()
    with pytest.raises(ValueError):
        build(str(tmp_path / "fr.zip"), "2.13.0", lang="fr")


# -- every diagnosis of a part, in every place a student reads it ----------------------------

SECOND = {"part": "MultiHeadAttention", "mistake": "mha-no-output-projection",
          "text": "MultiHeadAttention: the heads' outputs are concatenated but W_o is never "
                  "applied.",
          "experiment": "Print the module's output next to W_o of the concatenation."}


def test_results_json_shows_every_diagnosis_of_a_part():
    data = results_json(_mha_result((DIAGNOSIS, SECOND)), feedback="summary")
    outputs = [t["output"] for t in data["tests"] if t["status"] == "failed"]
    assert outputs and len(set(outputs)) == 1
    assert outputs[0] == (
        "valid_lens is repeated as a whole, so head h of example b gets another example's "
        "length.\nTry this: Call MultiHeadAttention with 2 heads and valid_lens [1, 4] and "
        "look at attention.attention_weights per head.\n\n"
        "The heads' outputs are concatenated but W_o is never applied.\n"
        "Try this: Print the module's output next to W_o of the concatenation.")


def test_feedback_page_shows_every_diagnosis_of_a_part():
    from grader.report import html as pages
    page = pages.feedback_html(_mha_result((DIAGNOSIS, SECOND)), "summary")
    first = page.index("valid_lens is repeated as a whole")
    second = page.index("concatenated but W_o is never applied")
    assert first < page.index("look at attention.attention_weights per head") < second
    assert second < page.index("Print the module&#x27;s output next to W_o")


# -- template sentences only with their evidence: real grading --------------------------------

def _solution(*edits, mistake=None):
    from conftest import SOLUTION
    from grader import assignment
    from grader.catalog import Catalog
    by_id = Catalog.of(assignment.load("attention")).by_id
    with open(SOLUTION, encoding="utf-8") as handle:
        text = handle.read()
    if mistake:
        text = by_id(mistake).apply(text)
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new)
    return text


SOFTMAX_LAST = "return nn.functional.softmax(X.reshape(shape), dim=-1)  # (B, Q, K)"
EVIDENCE = {
    # masks inside masked_softmax under another name: attention.py has no sequence_mask
    "no_sequence_mask": lambda: _solution(("sequence_mask(", "_mask_past(")),
    # the catalog's masking after the softmax
    "zero_after": lambda: _solution(mistake="softmax-zero-after"),
    # rows that do not sum to 1 for another reason: scaled after the softmax
    "scale_after": lambda: _solution(mistake="dot-scale-after-softmax"),
    # stops on import: nothing of it can run
    "does_not_import": lambda: "import torch\nraise RuntimeError('not finished')\n",
    # a row whose valid length is 0 comes back all 0 instead of uniform; every other row right
    "empty_row_zero": lambda: _solution((SOFTMAX_LAST, SOFTMAX_LAST.replace(
        "  # (B, Q, K)", " * (valid_lens > 0).reshape(shape[0], shape[1], 1).to(X.dtype)"))),
    # a shortcut: weights that ignore the scores (uniform over the valid keys)
    "ignores_scores": lambda: _solution(("    X = sequence_mask(X.reshape(-1, shape[-1]), "
                                         "valid_lens, value=-1e6)",
                                         "    X = sequence_mask(torch.zeros_like(X).reshape("
                                         "-1, shape[-1]), valid_lens, value=-1e6)")),
}


@pytest.fixture(scope="module")
def evidence(tmp_path_factory):
    folder = tmp_path_factory.mktemp("evidence")
    paths = []
    for name, make in EVIDENCE.items():
        path = folder / f"{name}.py"
        path.write_text(make(), encoding="utf-8")
        paths.append(str(path))
    results = grade.grade_batch(paths, str(folder / "out"), jobs=1, force=True)
    return {r.name: {t.name: t for t in r.tests} for r in results}


@pytest.mark.slow
def test_the_gpu_part_of_a_function_the_file_does_not_define_says_so(evidence):
    tests = evidence["no_sequence_mask"]
    gpu = [t for t in tests.values() if t.part == "GPU" and "sequence_mask" in t.name
           and t.status != "skipped"]  # the CUDA case is skipped on a machine without one
    assert gpu and all(t.status == "failed" for t in gpu)
    for test in gpu:
        assert test.message.startswith(
            "attention.py defines no `sequence_mask`, so how it behaves on a GPU cannot be "
            "graded: define it under exactly this name."), test.message
        assert "fix sequence_mask first" not in test.message
    # a file that did not import: the import error is the reason, not the function
    stopped = [t for t in evidence["does_not_import"].values()
               if t.part == "GPU" and t.status != "skipped"]
    assert stopped and all(t.message.startswith("attention.py could not be imported, so how ")
                           and "fix " not in t.message for t in stopped)
    # a function that is there and does its work, but wrong, keeps its GPU share (its
    # mistake costs its own part); one that skips work is sent to its own part
    wrong = [t for t in evidence["zero_after"].values()
             if t.part == "GPU" and "masked_softmax" in t.name and t.status != "skipped"]
    assert wrong and all(t.status == "passed" for t in wrong)
    skips = [t for t in evidence["ignores_scores"].values()
             if t.part == "GPU" and "masked_softmax" in t.name and t.status != "skipped"]
    assert skips and all(t.status == "failed" and t.message.startswith(
        "masked_softmax is right on the CPU only in cases that cannot tell working code from a "
        "shortcut (no key is masked") and t.message.endswith(
        "and in its other cases its result does not change with every input it should use, so "
        "how it behaves on a GPU cannot be graded yet: fix masked_softmax first (see its own "
        "part).") for t in skips), [t.message for t in skips]


@pytest.mark.slow
def test_mask_before_the_softmax_is_said_only_with_its_evidence(evidence):
    advice = "Mask the scores before the softmax."
    zeroed = [t for t in evidence["zero_after"].values()
              if t.part == "masked_softmax" and t.status == "failed"]
    assert zeroed and any(advice in t.message for t in zeroed)
    assert all(advice in t.message for t in zeroed if "should sum to 1" in t.message)
    scaled = [t for t in evidence["scale_after"].values() if t.status == "failed"]
    assert any("should sum to 1" in t.message for t in scaled)  # the observation stays
    assert not any(advice in t.message or "before the softmax (not the" in t.message
                   for t in scaled)


@pytest.mark.slow
def test_the_row_sum_check_follows_the_dtype_and_names_the_row_most_off(evidence):
    # bfloat16 scores (2, 2, 5), lengths [[2, 5], [0, 4]]: row [1, 0] has length 0 and comes
    # back all 0; the other rows are right, and in bfloat16 sum to 1 only within rounding
    case = evidence["empty_row_zero"]["masked_softmax: bfloat16 scores"]
    assert case.status == "failed"
    sums = [line for line in case.message.splitlines() if "should sum to 1" in line]
    assert sums == ["  Each row of attention weights should sum to 1; row [1, 0] sums to 0."]
    assert "Mask the scores" not in case.message


def test_the_row_sum_tolerance_is_the_dtypes_and_the_worst_row_is_named():
    import torch
    from grader.harness import compare
    assert [compare.row_sum_tolerance(d) for d in (torch.float64, torch.float32, torch.float16,
                                                   torch.bfloat16)] == [1e-3, 1e-3, 5e-3, 4e-2]
    expected = torch.full((3, 4), 0.25, dtype=torch.bfloat16)
    got = expected.clone()
    got[0, 0] = 0.2539  # bfloat16 rounding of a healthy row: 1.0039, within 0.04
    got[1] = torch.tensor([0.25, 0.25, 0.25, 0.125])  # 0.875
    got[2] = torch.tensor([0.25, 0.25, 0.25, 0.0])  # 0.75: the worst
    lines = [line for line in compare._symptoms(got, expected, True) if "sum to 1" in line]
    assert lines == ["  Each row of attention weights should sum to 1; row [2] sums to 0.75."]
