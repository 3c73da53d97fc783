"""What the grader writes can never be broken or flooded by one submission: folder names
that cannot collide with the grader's files or with each other, atomic capped writes of
valid UTF-8 and valid JSON, neutralised spreadsheet formulas, and a batch that always ends
with a grades.csv holding every row."""
import csv
import dataclasses
import io
import json
import os
import shutil
import subprocess
import sys
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import KIT, SOLUTION
import grader.grade as grade
from grader.grade import outcome
from grader import files
from grader.report import folders
from grader.report.console import Table
from grader.report.gradebook import gradebook_text, safe_record, text_cell, write_gradebook
from grading import grades

CAP = folders.MAX_BYTES


def _safe_folder(name):
    assert name and name not in (".", "..")
    assert "/" not in name and "\\" not in name and "\x00" not in name
    assert not name.startswith((".", "-")) and not name.endswith((" ", "."))
    assert len(name.encode("utf-8")) <= CAP  # encodes: no surrogates
    for char in name:
        assert unicodedata.category(char)[0] in "LNM" or char in "-_.+@() ", repr(char)
    assert not folders.reserved(name)


# -- folder names ------------------------------------------------------------------------

def test_ordinary_names_are_their_own_folders():
    names = ["alice", "bob", "zhang_san", "张三", "attention (1)", "student-07", "li.wei", "Ærø"]
    assert folders.folder_names(names) == names


@pytest.mark.parametrize("name", ["grades.csv", "GRADES.CSV", "Grades.Csv", "report.html",
                                  "grader-errors.log", "ｇｒａｄｅｓ.csv", ".hidden", ".git",
                                  "..", ".", "", "con", "NUL.txt", "course.toml",
                                  "Overrides.JSON", "similarity.html", "Similarity.CSV"])
def test_reserved_and_dot_names_never_become_those_folders(name):
    (folder,) = folders.folder_names([name])
    _safe_folder(folder)
    assert folders.key(folder) not in folders.RESERVED
    assert not folder.startswith(".")


@pytest.mark.parametrize("written", ["grades.csv", "report.html", "grader-errors.log",
                                     "similarity.csv", "similarity.html", "shard.json",
                                     "merge.json", "course.toml", "overrides.json"])
def test_no_folder_takes_the_name_of_a_file_the_grader_writes_beside_it(written):
    """Listed here from what the commands write at the top of --out (grade, merge, similarity,
    the course file and the ledger), not from folders.RESERVED."""
    for name in (written, written.upper()):
        (folder,) = folders.folder_names([name])
        assert folders.key(folder) != folders.key(written), (name, folder)


def test_names_that_differ_only_in_case_or_unicode_form_get_different_folders():
    names = ["Alice", "alice", "ALICE", "ﬁle", "file", "café", "cafe\u0301", "Straße", "STRASSE"]
    result = folders.folder_names(names)
    assert result[0] == "Alice" and result[3] == "ﬁle" and result[5] == "café"  # first keeps it
    assert len({folders.key(f) for f in result}) == len(names)
    for folder in result:
        _safe_folder(folder)


def test_odd_characters_become_underscores_and_names_are_capped():
    odd = ["a/b", "x\x00\x1b[2J", "tab\there", os.fsdecode(b"\xff"), os.fsdecode(b"caf\xe9"),
           "=cmd|' /C calc'!A0", "a\u202eb", "é" * 300, "x" * 300, "x" * 300]
    result = folders.folder_names(odd)
    assert result[0] == "a_b" and result[4] == "caf_" and result[5] == "_cmd__ _C calc__A0"
    assert len({folders.key(f) for f in result}) == len(odd)
    for folder in result:
        _safe_folder(folder)
    assert result[8] != result[9] and len(result[9].encode()) <= CAP


def test_a_suffix_never_lands_on_a_name_taken_later():
    result = folders.folder_names(["a", "a", "a-2", "grades.csv", "grades.csv-2"])
    assert len({folders.key(f) for f in result}) == 5
    assert result[2] == "a-2" and result[4] == "grades.csv-2"  # unchanged names keep theirs


_ANY_CHAR = st.one_of(st.characters(codec=None, exclude_categories=()),
                      st.characters(categories=["Cs", "Cc", "Cf", "Zs", "Mn"]),  # surrogates too
                      st.sampled_from(list("/.\x00\x1b\r\n\t -_ ") + ["\ud800", "\udcff",
                                                                        "\u202e", "ﬁ", "Ｇ"]))
_ANY_NAME = st.one_of(st.text(_ANY_CHAR, max_size=120),
                      st.sampled_from(["grades.csv", "GRADES.CSV", ".", "..", "con", "a", "A",
                                       "report.html", "x" * 200]))


@settings(max_examples=300, deadline=None, database=None, derandomize=True)
@given(st.lists(_ANY_NAME, max_size=30))
def test_folder_names_property(names):
    result = folders.folder_names(names)
    assert len(result) == len(names)
    assert len({folders.key(f) for f in result}) == len(result)
    for folder in result:
        _safe_folder(folder)


# -- capped, atomic, valid writes ---------------------------------------------------------

HUGE = "\udcff\x00\x1b[2J\r\n" + ("x\udc80\n" * (10 * 2**20 // 3))  # ~10 MB of trouble


def _hostile_result(name="caf\udce9"):
    tests = [outcome.TestOutcome(f"case {i}", "masked_softmax", 1.0, "failed", HUGE)
             for i in range(72)]
    result = outcome.SubmissionResult(name, "src\udcff", tests, notes=[HUGE], grader_error=HUGE,
                                      summary={"stdout": HUGE, "load_error": HUGE,
                                               "api": {"x\udcff" * 1000: "missing"},
                                               "cell_errors": [[1, "E\udcff", HUGE]]})
    result.console = HUGE
    result.folder = "hostile"
    return result


def _read_valid(path):
    data = open(path, "rb").read()
    text = data.decode("utf-8")  # strict: valid UTF-8
    assert "\x00" not in text and "\x1b" not in text
    return data, text


def test_a_huge_hostile_result_is_written_capped_and_valid(tmp_path):
    result = _hostile_result()
    grade.write_result(result, str(tmp_path))
    folder = tmp_path / "hostile"
    data, text = _read_valid(folder / "results.json")
    assert len(data) <= files.RESULTS_BYTES
    parsed = json.loads(text)
    assert len(parsed["tests"]) == 72 and parsed["score"] == 0
    assert all(len(t["output"]) <= files.MESSAGE_CHARS for t in parsed["tests"])
    assert "cut by the grader" in parsed["tests"][0]["output"]
    data, text = _read_valid(folder / "feedback.txt")
    assert len(data) <= files.FEEDBACK_BYTES and "cut by the grader" in text
    data, _ = _read_valid(folder / "grader-errors.log")
    assert len(data) <= files.LOG_BYTES
    assert not [p for p in os.listdir(folder) if p.startswith(".")]  # no temporary file left


def test_results_json_stays_under_its_cap_when_outputs_are_all_wide_characters(tmp_path):
    wide = "𝔘\n" * 100_000  # 4 bytes + an escaped newline each
    tests = [outcome.TestOutcome(f"case {i}", "p", 1.0, "failed", wide) for i in range(500)]
    result = outcome.SubmissionResult("wide", "wide.py", tests)
    result.folder = "wide"
    grade.write_result(result, str(tmp_path))
    data, text = _read_valid(tmp_path / "wide" / "results.json")
    assert len(data) <= files.RESULTS_BYTES and len(json.loads(text)["tests"]) == 500


def test_json_never_fails_on_odd_values():
    text = files.dumps({"a\udcff": ["\ud800", float("nan"), float("inf"), 1, None, True],
                        "b": object()})
    assert json.loads(text)["a\ufffd"] == ["\ufffd", None, None, 1, None, True]
    text.encode("utf-8")


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    path = tmp_path / "feedback.txt"
    files.write_text(str(path), "old\n")

    def broken(src, dst):
        raise OSError("disk full")
    monkeypatch.setattr(files.os, "replace", broken)
    with pytest.raises(OSError):
        files.write_text(str(path), "new\n")
    assert path.read_text() == "old\n" and os.listdir(tmp_path) == ["feedback.txt"]


def test_cap_bytes_cuts_at_a_character_boundary_with_a_marker():
    text = files.cap_bytes("张" * 10_000, 1000)
    assert len(text.encode("utf-8")) <= 1000 and "cut by the grader" in text
    assert files.cap_bytes("short", 1000) == "short"


# -- grades.csv and the console -----------------------------------------------------------

@pytest.mark.parametrize("value", ["=cmd|' /C calc'!A0", "+1+1", "-2+3", "@SUM(A1)", "\t=1",
                                   "\r=1", "\x00=1"])
def test_formulas_are_neutralised(value):
    cell = text_cell(value)
    assert cell.startswith("'") and "\t" not in cell and "\r" not in cell


def test_plain_cells_are_left_alone():
    assert text_cell("alice") == "alice" and text_cell("张三") == "张三"
    assert text_cell("line one\nline two") == "line one"


def _result(name, score_status="passed", folder=None, **extra):
    tests = [outcome.TestOutcome("case", "p", 10.0, score_status, "=1+1 boom")]
    result = outcome.SubmissionResult(name, f"{name}.py", tests, **extra)
    result.folder = folder or name
    return result


def test_gradebook_neutralises_text_cells_but_not_scores(tmp_path):
    rows = [_result("=evil", "failed"), _result("-bob"), _result("caf\udce9", folder="caf_")]
    path = tmp_path / "grades.csv"
    write_gradebook([safe_record(r) for r in rows], ["p"], str(path))
    _read_valid(path)
    table = grades(path)
    assert set(table) == {"'=evil", "'-bob", "caf\ufffd"}
    assert table["'=evil"]["reason"].startswith("first failure") and table["'=evil"]["total"] == "0"
    assert table["'-bob"]["total"] == "10" and table["caf\ufffd"]["folder"] == "caf_"


def test_gradebook_is_written_even_with_an_odd_row():
    class Odd:
        name, source, folder = "odd", "odd.py", "odd"

        def by_part(self):
            raise RuntimeError("odd")
    text = gradebook_text([safe_record(_result("alice")), safe_record(Odd())], ["p"])
    rows = list(csv.DictReader(text.splitlines()))
    assert [r["submission"] for r in rows] == ["alice", "odd"]
    assert rows[1]["status"] == "grader error"


def test_console_rows_carry_no_terminal_escapes():
    stream = io.StringIO()
    table = Table(["p"], 1, stream=stream)
    result = _result("\x1b]0;pwned\x07\x1b[2J" + "evil\udcff", "failed",
                     intake_error="\x1b[31mred\nsecond line")
    table.row(result)
    printed = stream.getvalue()
    assert "\x1b" not in printed and "\x07" not in printed and "second line" not in printed
    printed.encode("utf-8")


# -- the batch goes on: a raising future, a folder that cannot be written -----------------

CATALOG = [{"name": "case", "part": "p", "points": 10.0, "nodeid": "t::case"}]



def test_a_batch_always_writes_every_row(tmp_path, monkeypatch):
    def fake_grade_one(job, catalog, options, workdir, zygote=None, *rest):
        name = job.submission.name
        if name == "crash":
            raise RuntimeError("a bug of ours")
        # in the folder the batch settled for it, as grade_one's results are (Job.result)
        return dataclasses.replace(_result(name, "passed" if name == "alice" else "failed"),
                                   folder=job.folder)
    monkeypatch.setattr(grade, "grade_one", fake_grade_one)
    monkeypatch.setattr(grade.trusted, "start_zygote", lambda *_: None)
    monkeypatch.setattr(grade.trusted, "catalog", lambda options, zygote=None: CATALOG)
    monkeypatch.setattr(grade.isolation, "choose", lambda level: grade.isolation.Isolation("none"))
    out = tmp_path / "out"
    out.mkdir()
    (out / "blocked").write_text("a file where the folder should go")
    paths = [str(tmp_path / f"{n}.py") for n in ("alice", "crash", "blocked", "grades.csv")]
    # the batch's parts are its declaration's (issue 16): one that declares the fake part p
    from grader import assignment
    declared = dataclasses.replace(assignment.load(), parts=(
        assignment.Part("p", 10.0, ("sequence_mask",), "p"),))
    results = grade.grade_batch(paths, str(out), grade.SuiteOptions(assignment=declared),
                                stream=io.StringIO())
    rows = grades(out)
    assert set(rows) == {"alice", "crash", "blocked", "grades.csv"}
    assert rows["alice"]["total"] == "10"
    assert rows["crash"]["status"] == "grader error" and rows["crash"]["total"] == ""
    assert rows["blocked"]["status"] == "grader error"
    assert "could not write its results" in rows["blocked"]["reason"]
    assert rows["grades.csv"]["folder"] == "grades.csv-2"
    assert json.loads((out / "grades.csv-2" / "results.json").read_text())["score"] == 0
    assert [r.name for r in results] == ["alice", "crash", "blocked", "grades.csv"]


# -- end to end: `grader grade` on a batch built to break its outputs ---------------------

HUGE_MESSAGES = '''import torch
from torch import nn

_MESSAGE = "\\n" * (2 << 20) + "\\udcff\\x00\\x1b[2J" * 1000


def _boom(*args, **kwargs):
    raise ValueError(_MESSAGE)


sequence_mask = masked_softmax = transpose_qkv = transpose_output = _boom


class _Module(nn.Module):
    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, *args, **kwargs):
        _boom()


AdditiveAttention = DotProductAttention = MultiHeadAttention = _Module
'''


@pytest.mark.slow
def test_grader_grade_survives_a_batch_built_to_break_its_outputs(tmp_path):
    subs = tmp_path / "subs"
    subs.mkdir()
    names = {"correct.py": None, "grades.csv.py": None, "GRADES.csv.py": None,
             os.fsdecode(b"caf\xe9.py"): None, "=cmd|' -C calc'!A0.py": None,
             "huge.py": HUGE_MESSAGES}
    for name, text in names.items():
        if text is None:
            shutil.copy(SOLUTION, subs / name)
        else:
            (subs / name).write_text(text, encoding="utf-8")
    paths = [str(subs / n) for n in names]
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "grader", "grade", *paths, "--out", str(out),
                           "--jobs", "2", "--call-seconds", "4", "--import-seconds", "10"],
                          cwd=KIT, capture_output=True, timeout=900)
    said = (done.stdout + done.stderr).decode("utf-8", "replace")[-4000:]
    assert done.returncode == 0, said
    rows = grades(out)
    assert set(rows) == {"correct", "grades.csv", "GRADES.csv", "caf\ufffd",
                         "'=cmd|' -C calc'!A0", "huge"}, said
    assert rows["correct"]["total"] == "100"
    assert rows["grades.csv"]["total"] == "100" and rows["GRADES.csv"]["total"] == "100"
    assert rows["huge"]["total"] == "0"
    folders_used = {r["folder"] for r in rows.values()}
    assert len(folders_used) == 6 and "grades.csv" not in folders_used
    assert os.path.isfile(out / "grades.csv")
    for row in rows.values():
        folder = out / row["folder"]
        data, text = _read_valid(folder / "results.json")
        assert len(data) <= files.RESULTS_BYTES
        json.loads(text)
        data, _ = _read_valid(folder / "feedback.txt")
        assert len(data) <= files.FEEDBACK_BYTES
    assert "ValueError" in (out / "huge" / "feedback.txt").read_text(encoding="utf-8")
    assert b"\x1b" not in done.stdout
