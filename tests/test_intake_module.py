"""A second assignment's file (issue 16): intake and the layouts look for the module the
declaration names (`transformer` here), never for attention.py.

Each test is built so that the default assignment's name would choose otherwise: the other
file is newer, or its name sorts later, or it is attention.py itself (a student's own
earlier module, handed in beside the new one). Expectations are literals, written by hand
from docs/how-to/canvas.md's rules (the file most like the assignment's, then the newest)."""
import json
import os
import zipfile

import pytest

from grader import platforms
from grader.intake import naming, stage, submission_names
from grading import run_grader

CODE = "import torch\nVALUE = 'transformer'\n"
OLD = "VALUE = 'attention'\n"
NOTEBOOK = json.dumps({"cells": [{"cell_type": "code", "source": "VALUE = 'notebook'"}],
                       "nbformat": 4}).encode()


def _write(path, data):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data if isinstance(data, bytes) else data.encode())
    return path


def _graded(batch):
    return {s.student_id: os.path.basename(s.path) for s in batch.submissions}


@pytest.mark.parametrize("suffixed", ["transformer-1.py", "Transformer (2).ipynb",
                                      "transformer_v3.py", "TRANSFORMER final copy.py"])
def test_lms_and_os_suffixes_are_read_for_any_module(suffixed):
    stem = suffixed.rsplit(".", 1)[0]
    assert naming.like("transformer").match(stem)
    assert not naming.like("attention").match(stem)
    # the name is escaped: a module's characters are never pattern syntax
    assert naming.like("a_b").match("a_b-2") and not naming.like("a_b").match("aXb")
    assert not naming.like("transformer").match("transformers")


def test_canvas_grades_the_transformer_file_over_a_newer_other_upload(tmp_path):
    canvas = tmp_path / "canvas"
    _write(canvas / "wangli_10000_90000_transformer-1.py", CODE)
    _write(canvas / "wangli_10000_90007_notes.py", OLD)           # newer attachment id
    _write(canvas / "liuyang_LATE_10001_90001_Transformer (2).ipynb", NOTEBOOK)
    batch = platforms.resolve([str(canvas)], "canvas", module="transformer")
    assert _graded(batch) == {"10000": "wangli_10000_90000_transformer-1.py",
                              "10001": "liuyang_LATE_10001_90001_Transformer (2).ipynb"}
    assert "wangli_10000: wangli_10000_90007_notes.py was not graded: " \
           "wangli_10000_90000_transformer-1.py is this student's latest or main file" in batch.notes
    # the same download for the attention assignment: neither is its file, the newest counts
    other = platforms.resolve([str(canvas)], "canvas", module="attention")
    assert _graded(other)["10000"] == "wangli_10000_90007_notes.py"


def test_moodle_files_grade_the_transformer_file_over_a_newer_other_one(tmp_path):
    moodle = tmp_path / "moodle"
    work = _write(moodle / "Fang Wu_10006_assignsubmission_file_transformer.py", CODE)
    newer = _write(moodle / "Fang Wu_10006_assignsubmission_file_attention.py", OLD)
    os.utime(work, (1_700_000_000, 1_700_000_000))
    os.utime(newer, (1_700_000_600, 1_700_000_600))
    batch = platforms.resolve([str(moodle)], "moodle", module="transformer")
    assert _graded(batch) == {"10006": "Fang Wu_10006_assignsubmission_file_transformer.py"}
    other = platforms.resolve([str(moodle)], "moodle", module="attention")
    assert _graded(other) == {"10006": "Fang Wu_10006_assignsubmission_file_attention.py"}


def test_nbgrader_student_folder_grades_the_transformer_assignment_folder(tmp_path):
    alice = tmp_path / "course" / "submitted" / "alice"
    _write(alice / "attention" / "attention.py", OLD)
    _write(alice / "attention" / "timestamp.txt", "2026-11-01 10:00:00")
    _write(alice / "transformer" / "transformer.ipynb", NOTEBOOK)
    _write(alice / "transformer" / "timestamp.txt", "2026-12-01 10:00:00")
    batch = platforms.resolve([str(alice)], "nbgrader", module="transformer")
    (sub,) = batch.submissions
    assert (sub.student_id, sub.path) == ("alice", str(alice / "transformer"))
    assert (sub.submitted_at, sub.time_source) == ("2026-12-01T10:00:00+00:00",
                                                   "nbgrader-timestamp")
    assert sub.flags == []
    staged = stage(sub.path, str(tmp_path / "staged"), sub.name, module="transformer")
    assert staged.error is None and os.path.basename(staged.file) == "transformer.py"
    assert "VALUE = 'notebook'" in open(staged.file, encoding="utf-8").read()
    # neither folder holds the assignment's file: the whole folder, no time, flagged
    lost = platforms.resolve([str(alice)], "nbgrader", module="rnn")
    assert lost.submissions[0].flags == [
        "nbgrader student alice has 2 assignment folders (attention, transformer) and none "
        "hold rnn.py: graded as the whole folder, without a submission time"]
    assert lost.submissions[0].path == str(alice)


def test_a_folder_named_after_the_module_is_named_after_its_parent(tmp_path):
    for name in ("alice", "bob"):
        (tmp_path / name / "transformer").mkdir(parents=True)
    paths = [str(tmp_path / "alice" / "transformer"), str(tmp_path / "bob" / "transformer")]
    assert submission_names(paths, "transformer") == ["alice", "bob"]
    assert submission_names(paths, "attention") == ["alice-transformer", "bob-transformer"]


def test_a_zip_holding_transformer_py_stages_it_and_keeps_attention_py_as_a_helper(tmp_path):
    upload = tmp_path / "wang.zip"
    with zipfile.ZipFile(upload, "w") as archive:
        archive.writestr("hw/attention.py", OLD)          # the student's earlier module
        archive.writestr("hw/transformer.py", CODE)
        archive.writestr("hw/zz_notes.py", "NOTE = 1\n")
    staged = stage(str(upload), str(tmp_path / "staged"), "wang", module="transformer")
    assert staged.error is None
    assert sorted(os.listdir(tmp_path / "staged")) == ["attention.py", "transformer.py",
                                                       "zz_notes.py"]
    assert staged.file == str(tmp_path / "staged" / "transformer.py")
    assert open(staged.file, encoding="utf-8").read() == CODE
    assert open(tmp_path / "staged" / "attention.py", encoding="utf-8").read() == OLD


def test_a_resubmitted_name_is_found_in_a_folder(tmp_path):
    folder = tmp_path / "li"
    _write(folder / "transformer (2).py", CODE)
    _write(folder / "helpers.py", OLD)
    staged = stage(str(folder), str(tmp_path / "staged"), "li", module="transformer")
    assert staged.error is None and open(staged.file, encoding="utf-8").read() == CODE


def test_the_refusal_names_the_assignments_file(tmp_path):
    folder = tmp_path / "hw"
    _write(folder / "a.py", OLD)
    _write(folder / "b.py", OLD)
    staged = stage(str(folder), str(tmp_path / "staged"), "hw", module="transformer")
    assert staged.file is None and staged.missing is False
    assert staged.error == (
        "hw has no transformer.py (looked for transformer.py or transformer.ipynb, else one "
        "other .py or .ipynb file, also inside one zip; it contains: a.py, b.py). Name your "
        "file transformer.py.")


def test_a_broken_notebook_is_told_to_upload_the_assignments_file(tmp_path):
    upload = _write(tmp_path / "transformer.ipynb", b"{not json")
    staged = stage(str(upload), str(tmp_path / "staged"), "s", module="transformer")
    assert staged.error.endswith("or upload the code as transformer.py.")


@pytest.mark.slow
def test_grade_names_the_transformer_file_end_to_end(tmp_path):
    """`grader grade --assignment transformer` over a Canvas download: the re-uploaded
    `transformer-1.py` is the work (over a newer notes.py), a broken one is told
    'transformer.py is not valid Python', and report.html carries the declaration's title."""
    import csv
    canvas = tmp_path / "canvas"
    _write(canvas / "wangli_10000_90000_transformer-1.py", "def broken(:\n")
    _write(canvas / "wangli_10000_90007_notes.py", OLD)
    out = tmp_path / "out"
    run = run_grader("grade", str(canvas), "--assignment", "transformer", "--out", str(out),
                     "--jobs", "1", "--no-gpu", timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    with open(out / "grades.csv", encoding="utf-8") as handle:
        (row,) = list(csv.DictReader(handle))
    assert (row["student_id"], row["total"]) == ("10000", "0")
    feedback = (out / row["folder"] / "feedback.txt").read_text(encoding="utf-8")
    assert "transformer.py is not valid Python, so nothing in it could be graded." in feedback
    assert "at transformer.py line 1" in feedback and "attention.py" not in feedback
    report = (out / "report.html").read_text(encoding="utf-8")
    assert ("<h1>The Transformer encoder block: positional encoding, position-wise FFN, add "
            "&amp; norm (d2l 10.6-10.7): the class</h1>") in report
