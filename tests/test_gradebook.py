"""The output folder is the course's gradebook: regrading some students keeps everyone
else's row, unchanged submissions are not graded twice, and Ctrl-C loses nothing."""
import csv
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from conftest import KIT, SOLUTION, SUBMISSIONS
import io
import json
from grader import course
from grader.grade.outcome import SubmissionResult
from grader.grade.outcome import TestOutcome as Outcome
from grader.outcomes import Provenance
from grader.grade import trusted
from grader.report import gradebook
from grader.report.gradebook import text_cell
from grader.report.rebuild import rebuild
from grading import FAST, grades, run_grader



def _run(paths, out, *extra):
    return run_grader("grade", *map(str, paths), "--out", str(out), *FAST, *extra, timeout=900)


def _class(tmp_path):
    subs = tmp_path / "subs"
    subs.mkdir()
    shutil.copy(SOLUTION, subs / "alice.py")
    shutil.copy(os.path.join(SUBMISSIONS, "zero_stub.py"), subs / "bob.py")
    source = open(SOLUTION, encoding="utf-8").read()
    broken = source.replace("torch.repeat_interleave(valid_lens, repeats=self.num_heads, dim=0)",
                            "valid_lens.repeat(self.num_heads)", 1)
    assert broken != source
    (subs / "carl.py").write_text(broken, encoding="utf-8")
    return subs


@pytest.mark.slow
def test_regrading_one_student_keeps_the_others_and_unchanged_ones_are_kept(tmp_path):
    subs, out = _class(tmp_path), tmp_path / "grades"
    first = _run(sorted(subs.iterdir()), out)
    assert first.returncode == 0, first.stderr
    before = grades(out)
    assert set(before) == {"alice", "bob", "carl"} and before["alice"]["total"] == "100"
    assert float(before["carl"]["total"]) < 100

    shutil.copy(SOLUTION, subs / "carl.py")  # carl fixes his work and hands it in again
    again = _run([subs / "carl.py"], out)
    assert again.returncode == 0, again.stderr
    after = grades(out)
    assert set(after) == {"alice", "bob", "carl"}, "regrading one student wiped the gradebook"
    assert after["carl"]["total"] == "100"
    assert after["alice"] == before["alice"] and after["bob"] == before["bob"]

    unchanged = _run(sorted(subs.iterdir()), out)
    assert unchanged.returncode == 0 and unchanged.stdout.count("unchanged since it was graded") == 3
    assert "3 unchanged" in unchanged.stdout and grades(out) == after
    forced = _run([subs / "bob.py"], out, "--force")
    assert "unchanged" not in forced.stdout and grades(out) == after


@pytest.mark.slow
def test_ctrl_c_writes_the_gradebook_for_what_was_graded_and_a_rerun_finishes(tmp_path):
    subs, out = _class(tmp_path), tmp_path / "grades"
    # dana and erik are right but slow to import (4 s each, under the 10 s limit), so the batch
    # is still running when Ctrl-C comes, however late a loaded machine lets this test send it
    # (a batch of five fast files once finished before it: exit 0)
    slow = "import time\ntime.sleep(4)\n" + open(SOLUTION, encoding="utf-8").read()
    for name in ("dana", "erik"):
        (subs / f"{name}.py").write_text(slow, encoding="utf-8")
    paths = sorted(subs.iterdir())
    # Ctrl-C as a terminal delivers it: a test run started in the background of a shell
    # without job control inherits SIGINT ignored, and Python then leaves it ignored
    proc = subprocess.Popen([sys.executable, "-m", "grader", "grade", *map(str, paths), "--out",
                             str(out), *FAST], cwd=KIT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 600
    for line in proc.stdout:  # wait for the first graded row, then press Ctrl-C
        if line.startswith("[  1/5"):
            break
        assert time.monotonic() < deadline
    proc.send_signal(signal.SIGINT)
    rest, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr and "interrupted:" in stderr
    assert len(stderr.strip().splitlines()) == 1, stderr
    graded = grades(out)
    assert 1 <= len(graded) < 5 and all(r["status"] == "graded" for r in graded.values())

    rerun = _run(paths, out, "--jobs", "2")  # dana's and erik's 4 s imports side by side
    assert rerun.returncode == 0, rerun.stderr
    assert rerun.stdout.count("unchanged since it was graded") == len(graded)
    final = grades(out)
    assert set(final) == {"alice", "bob", "carl", "dana", "erik"}
    assert final["dana"]["total"] == final["erik"]["total"] == "100"


SLOW_CALLS = '''
import functools as _functools
import time as _time


def _slow(function):
    @_functools.wraps(function)
    def slowly(*args, **kwargs):
        _time.sleep(2)
        return function(*args, **kwargs)
    return slowly


sequence_mask = _slow(sequence_mask)
masked_softmax = _slow(masked_softmax)
for _cls in (AdditiveAttention, DotProductAttention, MultiHeadAttention):
    _cls.forward = _slow(_cls.forward)
'''


@pytest.mark.slow
def test_ctrl_c_in_the_middle_of_a_submission_stops_it_at_once_asking_its_worker_nothing_more(
        tmp_path):
    """Ctrl-C lands in the middle of an exchange with bob's worker (each of his calls takes
    2 s, so his tests take minutes). The interrupted trusted process asks that worker
    nothing more (not the parts it did not reach, nor a carried-forward rerun: each would
    wait on replies of calls no one reads, and a reply could be taken for another's), and
    the grader exits well before the grace after which it would kill it (10 s)."""
    subs, out = tmp_path / "subs", tmp_path / "grades"
    subs.mkdir()
    shutil.copy(SOLUTION, subs / "alice.py")
    (subs / "bob.py").write_text(open(SOLUTION, encoding="utf-8").read() + SLOW_CALLS,
                                 encoding="utf-8")
    proc = subprocess.Popen([sys.executable, "-m", "grader", "grade", str(subs / "alice.py"),
                             str(subs / "bob.py"), "--out", str(out), *FAST], cwd=KIT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    for line in proc.stdout:  # alice graded: bob's turn has come
        if line.startswith("[  1/2"):
            break
    time.sleep(6)  # bob's worker has loaded and is answering his batch of calls, 2 s each
    pressed = time.monotonic()
    proc.send_signal(signal.SIGINT)
    try:
        rest, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()  # its fork server and trusted processes then hear EOF and end
    took = time.monotonic() - pressed
    assert proc.returncode == 130, stderr
    assert "interrupted: 1 of 2 submissions graded" in stderr, stderr
    assert took < trusted.INTERRUPT_GRACE_SECONDS - 1, took
    assert set(grades(out)) == {"alice"}


# ---- at its edges (issue 19, from tests/test_mutants_gradebook.py) --------------------------
# grader/report/gradebook.py at its edges (issue 19): the rows kept in the gradebook folder
# (a row file that does not read costs only its own row), each row's final score (overrides,
# then the late policy; figures worked out by hand), grades.csv cell by cell, and text cells
# no spreadsheet reads as a formula. Rows and row files are built directly: nothing is graded.

DUE = "2026-12-01T23:59:00+08:00"


EXTRA = ["late", "days_late", "submitted_at", "time_source", "time_zone", "raw_total",
         "penalty", "overrides", "flags"]


def _row(name, **more):
    row = {"name": name, "status": "graded", "total": 80.0, "max": 100.0,
           "parts": {"mask": [30.0, 40.0], "softmax": [50.0, 60.0]}, "reason": "",
           "source": "", "folder": name, "fingerprint": None, "student_id": "",
           "student_name": name, "layout": "canvas"}
    row.update(more)
    return row


def _entry(student, part, points, reason="r", action="set"):
    return {"time": "2026-12-04T10:00:00+00:00", "who": "ta", "action": action,
            "student": student, "submission": "", "part": part, "points": points,
            "reason": reason}


def _per_day(**policy):
    return course.from_data({"due": DUE, "late_policy": {"kind": "per_day", **policy}})


@pytest.mark.parametrize("value, cell", [
    (None, ""), ("", ""), (" \n ", ""), (0, "0"), ("a\tb", "a b"), ("  =1+1", "'=1+1"),
    ("\t=1", "'=1"), ("\r=1", "'=1"), ("-5", "'-5"), ("+5", "'+5"), ("@x", "'@x"),
    ("first\nsecond", "first"), ("x=1", "x=1"), ("it's", "it's"), ("张三", "张三"),
])
def test_a_text_cell_is_one_safe_line(value, cell):
    assert text_cell(value) == cell


def test_a_text_cell_is_cut_at_300_characters_by_default():
    # safe_text keeps 300 characters: 255 x, then "\n" and a 44-character marker (100 more
    # characters), which the cell's first line leaves out
    assert text_cell("x" * 400) == "x" * 255
    assert text_cell("x" * 300) == "x" * 300
    assert text_cell("x" * 400, 1000) == "x" * 400


def _result(tests, name="wang", **extra):
    return SubmissionResult(name, f"{name}.py", tests, **extra)


def test_a_row_rounds_each_score_to_four_places_and_names_the_first_failure():
    tests = [Outcome("a1", "mask", 0.123456, "passed"),
             Outcome("a2", "mask", 5.0, "passed"),
             Outcome("b1", "softmax", 2.5, "failed", "boom\nline two"),
             Outcome("b2", "softmax", 2.0, "failed", "second failure"),
             Outcome("s", "softmax", 3.0, "skipped")]
    row = gradebook.record(_result(tests), fingerprint="f1")
    assert row["status"] == "graded" and row["total"] == 5.1235 and row["max"] == 9.6235
    assert row["parts"] == {"mask": [5.1235, 5.1235], "softmax": [0.0, 4.5]}
    assert row["reason"] == "first failure: b1: boom"
    assert (row["name"], row["source"], row["folder"], row["fingerprint"]) == (
        "wang", "wang.py", "wang", "f1")
    silent = gradebook.record(_result([Outcome("c", "p", 1.0, "failed")]))
    assert silent["reason"] == "first failure: c: "
    # a message of exactly 2000 characters is taken whole, then the reason cut at 1200
    long = gradebook.record(_result([Outcome("b", "p", 1.0, "failed", "m" * 2000)]))
    assert long["reason"] == ("first failure: b: " + "m" * 2000)[:1155] + \
        "\n[... cut by the grader: 818 more characters]"
    passed = gradebook.record(_result([Outcome("c", "p", 1.0, "passed")]))
    assert passed["reason"] == "" and passed["total"] == 1.0


def test_a_rows_reason_comes_from_what_went_wrong_first():
    failed = Outcome("b", "p", 1.0, "failed", "wrong")
    assert gradebook.record(_result([failed], grader_error="worker died"))["reason"] == \
        "worker died"
    crashed = gradebook.record(_result([failed, Outcome("c", "p", 2.0, "grader-error"),
                                        Outcome("d", "p", 2.0, "grader-error")]))
    assert (crashed["status"], crashed["total"], crashed["max"]) == ("grader error", None, 5.0)
    assert crashed["reason"] == "2 tests failed inside the grader"
    missing = gradebook.record(_result([], intake_error="looked for attention.py",
                                       missing_work=True))
    assert (missing["status"], missing["total"], missing["reason"]) == (
        "missing work", 0.0, "looked for attention.py")
    loaded = gradebook.record(_result([failed], summary={"load_error": "SyntaxError line 3"}))
    assert loaded["reason"] == "SyntaxError line 3"


def test_a_rows_text_is_cut_at_its_documented_length():
    result = _result([Outcome("b", "p", 1.0, "failed")], name="n" * 3000,
                     grader_error="e" * 5000)
    result.source = "s" * 5000
    row = gradebook.record(result)
    assert len(row["name"]) == 1000 and len(row["reason"]) == 1200  # 4 x 300
    assert len(row["source"]) == 2000 and len(row["folder"]) == 200
    assert row["name"].startswith("n" * 900) and row["reason"].startswith("e" * 1100)
    result.folder = "kept_folder"
    assert gradebook.record(result)["folder"] == "kept_folder"


def _Who(**fields):
    return SubmissionResult("w", "w.py", [], provenance=Provenance(**fields))


def test_identity_caps_each_field_and_takes_only_a_true_boolean_and_a_list():
    who = _Who(student_id="1" * 500, student_name="w" * 500, layout="l" * 30,
               submitted_at="t" * 50, time_source="s" * 50, late_flag=True,
               flags=[f"flag {i}" for i in range(25)])
    found = gradebook.identity(who)
    assert [len(found[k]) for k in ("student_id", "student_name", "layout", "submitted_at",
                                    "time_source")] == [400, 400, 20, 40, 40]
    assert found["late_flag"] is True
    assert found["flags"] == [f"flag {i}" for i in range(20)]
    assert gradebook.identity(_Who(late_flag=False))["late_flag"] is False
    odd = gradebook.identity(_Who(late_flag="yes", flags="not a list", student_id=None))
    assert (odd["late_flag"], odd["flags"], odd["student_id"]) == (None, [], "")
    assert len(gradebook.identity(_Who(flags=["f" * 500]))["flags"][0]) == 400


def test_a_result_too_odd_to_read_becomes_a_grader_error_row():
    class Odd(SubmissionResult):
        def by_part(self):
            raise RuntimeError("odd")
    row = gradebook.safe_record(Odd("n" * 200, "odd.py", []))
    assert (row["status"], row["total"], row["max"], row["parts"]) == ("grader error", None, 0, {})
    assert row["reason"] == "the grader could not write this row: RuntimeError('odd')"
    assert row["folder"] == "n" * 80 and row["name"] == "n" * 200

    class Huge(Odd):
        def by_part(self):
            raise RuntimeError("x" * 2000)
    row = gradebook.safe_record(Huge("n" * 3000, "s" * 3000, []))
    assert len(row["reason"]) == 1000 and row["reason"].endswith("x" * 900)
    assert len(row["name"]) == 1000 and len(row["source"]) == 2000


def _save(row, out):
    os.makedirs(out / row["folder"], exist_ok=True)
    gradebook.save_record(row, str(out))


def _write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)


def test_a_row_that_does_not_read_costs_only_itself(tmp_path):
    out = tmp_path / "grades"
    _save(_row("王丽", folder="a_first", student_id="10000"), out)
    _write(str(out / "aa_file.txt"), "a file, not a folder")
    _write(str(out / "b_json" / gradebook.ROW_FILE), "{")
    _write(str(out / "c_list" / gradebook.ROW_FILE), "[1, 2]")
    _write(str(out / "d_elsewhere" / gradebook.ROW_FILE), json.dumps(_row("d", folder="other")))
    _write(str(out / "e_parts" / gradebook.ROW_FILE),
           json.dumps(_row("e", folder="e_parts", parts=[[1, 2]])))
    _write(str(out / "f_name" / gradebook.ROW_FILE), json.dumps(dict(_row("f"), name=5,
                                                                      folder="f_name")))
    os.makedirs(out / "g_dir" / gradebook.ROW_FILE)
    os.makedirs(out / "h_bytes")
    (out / "h_bytes" / gradebook.ROW_FILE).write_bytes(b'{"name": "\xff"}')
    os.makedirs(out / "i_empty")
    elsewhere = tmp_path / "elsewhere"
    _write(str(elsewhere / gradebook.ROW_FILE), json.dumps(_row("linked", folder="j_link")))
    os.symlink(elsewhere, out / "j_link")
    _save(_row("zhou", folder="z_last"), out)
    rows = gradebook.load_records(str(out))
    assert sorted(rows) == ["zhou", "王丽"]
    assert rows["王丽"] == _row("王丽", folder="a_first", student_id="10000")
    # the row file keeps Chinese readable (UTF-8, not \\u escapes)
    assert '"name": "王丽"'.encode("utf-8") in (out / "a_first" / gradebook.ROW_FILE).read_bytes()
    assert gradebook.load_records(str(tmp_path / "nothing")) == {}


def test_without_overrides_the_final_score_is_the_graded_total_not_the_sum_of_rounded_parts():
    # three parts of 1/3 point each, all passed: graded 1.0; each part rounds to 0.3333
    tests = [Outcome(f"t{p}", p, 1 / 3, "passed") for p in ("a", "b", "c")]
    row = gradebook.record(_result(tests))
    assert row["parts"] == {"a": [0.3333, 0.3333], "b": [0.3333, 0.3333], "c": [0.3333, 0.3333]}
    final = gradebook.final_row(row)
    assert (final["raw_total"], final["penalty"], final["total"]) == (1.0, 0.0, 1.0)
    assert (final["graded_total"], final["overrides"], final["review"]) == (1.0, [], [])
    assert (final["late"], final["days_late"], final["due"]) == (None, None, "")
    # with an override the final score is the parts' sum: 1 + 0.3333 + 0.3333
    current = {("wang", "a"): _entry("wang", "a", 1.0)}
    assert gradebook.final_row(row, None, current)["total"] == 1.6666


def test_overrides_replace_parts_then_the_total_in_that_order():
    row = _row("wang", student_id="10000")
    current = {("10000", "mask"): _entry("10000", "mask", 40.0, "regrade"),
               ("10000", "total"): _entry("10000", "total", 95.5, "bonus")}
    final = gradebook.final_row(row, None, current)
    assert final["parts"] == {"mask": [40.0, 40.0], "softmax": [50.0, 60.0]}
    assert final["overrides"] == [
        {"part": "mask", "graded": 30.0, "points": 40.0, "reason": "regrade", "who": "ta",
         "time": "2026-12-04T10:00:00+00:00"},
        {"part": "total", "graded": 90.0, "points": 95.5, "reason": "bonus", "who": "ta",
         "time": "2026-12-04T10:00:00+00:00"}]
    assert (final["graded_total"], final["raw_total"], final["total"]) == (80.0, 95.5, 95.5)
    assert row["parts"]["mask"] == [30.0, 40.0] and row["total"] == 80.0   # the kept row as kept
    # an override of another student or of a part the row no longer has changes nothing
    other = {("10001", "mask"): _entry("10001", "mask", 0.0),
             ("10000", "attention"): _entry("10000", "attention", 5.0)}
    final = gradebook.final_row(row, None, other)
    assert (final["total"], final["overrides"]) == (80.0, [])
    assert final["review"] == ["an override names a part this row no longer has: attention"]
    # a row without a student id is keyed by its name
    named = gradebook.final_row(_row("liu"), None, {("liu", "total"): _entry("liu", "total", 1.0)})
    assert named["total"] == 1.0


def test_the_total_is_rounded_to_four_places_and_never_below_zero():
    current = {("w", "mask"): _entry("w", "mask", 10.123456)}
    final = gradebook.final_row(_row("w"), None, current)
    assert (final["raw_total"], final["total"]) == (60.1235, 60.1235)
    current[("w", "total")] = _entry("w", "total", 50.0)
    assert gradebook.final_row(_row("w"), None, current)["overrides"][1]["graded"] == 60.1235
    assert gradebook.final_row(_row("w", total=0.5))["total"] == 0.5
    assert gradebook.final_row(_row("w", total=0.25))["total"] == 0.25


def test_a_late_penalty_comes_after_the_overrides():
    # submitted 1 day 12 h 1 min after the due date: 2 days started, 5 points a day
    late = dict(submitted_at="2026-12-03T12:00:00+08:00", time_source="canvas-file-time",
                student_id="10000")
    policy = _per_day(points=5)
    final = gradebook.final_row(_row("w", **late), policy)
    assert (final["late"], final["days_late"], final["due"]) == (True, 2, DUE)
    assert (final["raw_total"], final["penalty"], final["total"]) == (80.0, 10.0, 70.0)
    current = {("10000", "mask"): _entry("10000", "mask", 40.0)}
    final = gradebook.final_row(_row("w", **late), policy, current)
    assert (final["raw_total"], final["penalty"], final["total"]) == (90.0, 10.0, 80.0)
    # 50 points a day take all of the 80, not more
    final = gradebook.final_row(_row("w", **late), _per_day(points=50))
    assert (final["penalty"], final["total"]) == (80.0, 0.0)
    # a percentage of a row without a maximum takes nothing (0 % of 0)
    final = gradebook.final_row(_row("w", max=None, **late), _per_day(percent=10))
    assert (final["penalty"], final["total"]) == (0.0, 80.0)
    flagged = gradebook.final_row(_row("w", late_flag=True, student_id="1"), policy)
    assert flagged["review"] == ["the LMS marked it late without a time: charged as 1 day(s) late"]
    assert flagged["total"] == 75.0


def test_a_row_the_grader_failed_on_keeps_an_empty_total_and_no_override():
    current = {("10002", "mask"): _entry("10002", "mask", 40.0)}
    for row in (_row("e", student_id="10002", status="grader error", total=None),
                _row("e", student_id="10002", status="grader error", total=80.0),
                _row("e", student_id="10002", total=None)):
        final = gradebook.final_row(row, _per_day(points=5), current)
        assert (final["total"], final["raw_total"], final["penalty"]) == (None, None, None)
        assert final["overrides"] == [] and final["parts"]["mask"] == [30.0, 40.0]
        assert final["review"] == ["overrides not applied: the grader failed on this row "
                                   "(regrade it)"]
    final = gradebook.final_row(_row("e", status="grader error", total=None))
    assert final["review"] == [] and final["graded_total"] is None


def test_a_score_cell_is_a_finite_number_or_empty():
    assert [gradebook._number(v) for v in (0, "1.5", 2.25, None, "x", [1], float("nan"),
                                           float("inf"), float("-inf"), 10 ** 400)] == \
        [0.0, 1.5, 2.25, None, None, None, None, None, None, None]
    assert [gradebook._score_cell(v) for v in (85.0, "72.5", None, "x", float("nan"))] == \
        ["85", "72.5", "", "", ""]


def test_only_score_pairs_are_kept_as_parts():
    row = _row("w", parts={"mask": [30.0, 40.0], "odd": "x", "three": [1, 2, 3], "one": [1],
                           "pair": (5.0, 10.0)})
    assert gradebook.final_row(row)["parts"] == {"mask": [30.0, 40.0], "pair": [5.0, 10.0]}


def test_a_row_whose_final_score_cannot_be_computed_is_a_grader_error_not_a_zero():
    rows = [_row("a"), _row("b", total="eighty"), _row("c", total=float("nan")),
            _row("d", total=float("inf")), _row("e")]
    final = gradebook.final_rows(rows, None, [_entry("e", "total", 7.0)])
    assert [(r["name"], r["status"], r["total"]) for r in final] == [
        ("a", "graded", 80.0), ("b", "grader error", None), ("c", "grader error", None),
        ("d", "grader error", None), ("e", "graded", 7.0)]
    assert final[1]["reason"] == ("the grader could not compute this row's final score: "
                                  "ValueError(\"could not convert string to float: 'eighty'\")")
    assert (final[1]["raw_total"], final[1]["penalty"]) == (None, None)
    # before: a NaN total passed max(0.0, nan) as a final score of 0
    assert final[2]["reason"] == ("the grader could not compute this row's final score: "
                                  "ValueError('the total nan is not a finite number')")
    assert final[3]["reason"].endswith("ValueError('the total inf is not a finite number')")
    # an instructor's total stands in for a graded total that is not a number
    assert gradebook.final_rows([_row("c", total=float("nan"))], None,
                                [_entry("c", "total", 7.0)])[0]["total"] == 7.0
    # removed overrides are not in effect
    assert gradebook.final_rows([_row("e")], None, [_entry("e", "total", 7.0),
                                                     _entry("e", "total", 0, action="remove")])[0][
        "total"] == 80.0


def _table(text):
    return list(csv.reader(io.StringIO(text)))


def test_grades_csv_says_each_column_of_a_final_row():
    row = _row("wang_10000", student_id="10000", student_name="王丽", submitted_at=
               "2026-12-03T12:00:00+08:00", time_source="canvas-file-time", reason="=bad",
               source="wang/attention.py", diagnoses=["mha-repeat", "softmax-neg-inf"],
               flags=["the name claims 10001", 7])
    final = gradebook.final_row(row, _per_day(points=5),
                                {("10000", "mask"): _entry("10000", "mask", 40.0, "r" * 500)})
    lines = _table(gradebook.gradebook_text([final], ["mask", "softmax", "gone"]))
    assert lines[0] == ["submission", "student_id", "name", "status", "total", "max",
                        "mask (/40)", "softmax (/60)", "gone (/0)", "diagnoses", "reason",
                        "source", "folder"] + EXTRA
    assert lines[1] == ["wang_10000", "10000", "王丽", "graded", "80", "100", "40", "50", "0",
                        "mha-repeat softmax-neg-inf", "'=bad", "wang/attention.py",
                        "wang_10000", "yes", "2", "2026-12-03T12:00:00+08:00",
                        "canvas-file-time", "UTC+08:00 (written with the time by canvas-file-time)",
                        "90", "10", "mask 40 (" + "r" * 500 + ")",
                        "the name claims 10001"]
    assert len(lines) == 2
    # the overrides and flags cells hold 1000 characters: 955 and the cut marker's line
    final["overrides"][0]["reason"] = "r" * 1200
    final["flags"] = ["f" * 1200]
    line = _table(gradebook.gradebook_text([final], []))[1]
    assert line[-2] == "mask 40 (" + "r" * 946 and line[-1] == "f" * 955


def test_grades_csv_of_kept_rows_sorts_by_name_and_takes_the_largest_maximum():
    rows = [_row("b", parts={"mask": [1.0, 45.0]}, late=False, days_late=None),
            _row("a", parts={"mask": [2.5, 40.0], "odd": ["x", "y"], "short": [1],
                             "none": [1, None]},
                 overrides="not a list", flags=["f" * 400], review=["look", None],
                 penalty=float("nan"))]
    lines = _table(gradebook.gradebook_text(rows, ["mask"]))
    assert lines[0][6] == "mask (/45)"
    small = _table(gradebook.gradebook_text([_row("s", parts={"bonus": [0.0, 0.5]})], ["bonus"]))
    assert small[0][6] == "bonus (/0.5)"
    bare = _row("m")
    del bare["max"]
    assert _table(gradebook.gradebook_text([bare], []))[1][3:6] == ["graded", "80", "0"]
    assert [line[0] for line in lines[1:]] == ["a", "b"]
    a, b = lines[1], lines[2]
    assert (a[6], a[-4], a[-3], a[-2], a[-1]) == ("2.5", "80", "", "", "f" * 400 + "; look")
    assert (b[11], b[12], b[16], b[17]) == ("no", "", "80", "")
    assert a[11] == "" and a[12] == ""


def test_a_row_that_cannot_be_written_is_a_grader_error_line_of_the_same_width():
    rows = [_row("=odd", student_id="7", max="many", source="s", folder="odd"), _row("ok")]
    lines = _table(gradebook.gradebook_text(rows, ["mask", "softmax"]))
    width = 6 + 2 + 1 + 3 + len(EXTRA)
    assert [len(line) for line in lines] == [width] * 3
    assert lines[1] == ["'=odd", "7", "'=odd", "grader error", "", "", "", "", "",
                        "the grader could not write this row: ValueError(\"could not convert "
                        "string to float: 'many'\")", "s", "odd"] + [""] * len(EXTRA)
    assert lines[2][:6] == ["ok", "", "ok", "graded", "80", "100"]


def test_grades_csv_starts_with_a_byte_order_mark(tmp_path):
    path = tmp_path / "grades.csv"
    gradebook.write_gradebook([_row("王丽")], ["mask"], str(path))
    data = path.read_bytes()
    assert gradebook.BOM == "\ufeff" and data.startswith(b"\xef\xbb\xbfsubmission,")
    assert "王丽" in data.decode("utf-8")


def test_parts_come_in_the_order_they_first_appear():
    rows = [_row("a", parts={"b": [1, 2], "a": [1, 2]}), _row("n", parts=None),
            _row("c", parts={"c": [1, 2], "a": [1, 2]})]
    assert gradebook.parts_of(rows) == ["b", "a", "c"]


def test_an_override_that_applies_to_no_row_is_named_once():
    rows = [_row("wang", student_id="10000"), _row("liu")]
    entries = [_entry("10000", "mask", 40.0), _entry("liu", "total", 5.0),
               _entry("10099", "total", 0.0, "integrity case 7"),
               _entry("10098", "mask", 1.5), _entry("10097", "mask", 1.0),
               _entry("10097", "mask", 1.0, action="remove")]
    assert gradebook.orphans(rows, entries) == [
        "the override of 10098's mask (1.5, r) applies to no row in the gradebook: not applied",
        "the override of 10099's total (0, integrity case 7) applies to no row in the "
        "gradebook: not applied"]
    assert gradebook.orphans(rows, None) == []


def test_rebuild_writes_the_final_scores_and_each_changed_students_files(tmp_path):
    out = tmp_path / "grades"
    rows = [_row("wang", student_id="10000"), _row("liu", student_id="10001")]
    for row in rows:
        _save(row, out)
        _write(str(out / row["folder"] / "results.json"),
               json.dumps({"score": 80.0, "output": "", "extra_data": {"lang": "en"}}))
    final, changed = rebuild(str(out), rows, None, None,
                             [_entry("10000", "total", 90.0)])
    assert changed == 1 and [r["total"] for r in final] == [90.0, 80.0]
    table = grades(out)
    assert (table["wang"]["total"], table["liu"]["total"]) == ("90", "80")
    assert "mask (/40)" in table["wang"] and "softmax (/60)" in table["wang"]
    assert json.loads((out / "wang" / "results.json").read_text(encoding="utf-8"))["score"] == 90.0
    assert (out / "report.html").is_file()
    # the same again: nobody's files change
    assert rebuild(str(out), rows, ["mask"], None,
                   [_entry("10000", "total", 90.0)])[1] == 0
