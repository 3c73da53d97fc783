"""grader/files.py: the documented caps as literals, and the exact cut (issue 19: a cap ten
times too large passed every test that compared a file with files.FEEDBACK_BYTES itself)."""
import json
import os
import stat

import pytest

import grader.grade as grade
from grader.grade import outcome
from grader import files
from grader.course import CourseError
from grader.platforms.canvas.scores import read_template
from grader.platforms.exports import ExportError

KB = 1024
MB = 1024 * 1024


def test_the_documented_caps():
    """docs/explanation/isolation.md, "what crosses": 4 KB per test message, 256 KB feedback.txt,
    1 MB results.json; the log is held to 1 MB, the summary to 64 KB, a gradebook cell to
    300 characters."""
    assert files.MESSAGE_CHARS == 4096
    assert files.FEEDBACK_BYTES == 262_144
    assert files.RESULTS_BYTES == 1_048_576
    assert files.LOG_BYTES == 1_048_576
    assert files.SUMMARY_CHARS == 65_536
    assert files.GRADEBOOK_CELL_CHARS == 300


def _result(message, tests=3, distinct=False, **extra):
    cases = [outcome.TestOutcome(f"case {i}", "masked_softmax", 1.0, "failed",
                                 f"{i}: {message}" if distinct else message)
             for i in range(tests)]
    result = outcome.SubmissionResult("kim", "kim.py", cases, **extra)
    result.folder = "kim"
    return result


def test_a_long_test_message_is_cut_to_exactly_4_kb_in_results_json(tmp_path):
    grade.write_result(_result("m" * 100_000), str(tmp_path))
    data = (tmp_path / "kim" / "results.json").read_bytes()
    assert len(data) < 64 * KB  # small: no further shrinking happened
    outputs = [t["output"] for t in json.loads(data)["tests"]]
    marker = "\n[... cut by the grader: 95904 more characters]"  # 100000 - 4096
    assert outputs == ["m" * (4096 - len(marker)) + marker] * 3


def test_a_message_of_exactly_4_kb_is_whole(tmp_path):
    grade.write_result(_result("m" * 4096), str(tmp_path))
    outputs = [t["output"] for t in json.loads((tmp_path / "kim" / "results.json").read_bytes())["tests"]]
    assert outputs == ["m" * 4096] * 3


def test_results_json_stays_under_1_mb_with_every_test(tmp_path):
    """(feedback.txt's 256 KB is a backstop: the feedback text is summarised to about
    12 KB before it is written, so only the literal above guards that figure)"""
    grade.write_result(_result("f" * (3 * MB), tests=300, distinct=True), str(tmp_path))
    results = (tmp_path / "kim" / "results.json").read_bytes()
    assert len(results) <= 1 * MB
    assert len(json.loads(results)["tests"]) == 300


def test_the_grader_error_log_is_cut_at_1_mb(tmp_path):
    result = _result("x", tests=100, grader_error="e" * (3 * MB))
    for test in result.tests:
        test.status, test.grader_traceback = "grader-error", "t" * 20_000
    grade.write_result(result, str(tmp_path))
    log = (tmp_path / "kim" / "grader-errors.log").read_bytes()
    assert 1 * MB - 3 <= len(log) <= 1 * MB
    assert log.decode("utf-8").endswith(" more bytes]\n")


def test_cap_bytes_keeps_what_fits_and_cuts_exactly():
    assert files.cap_bytes("a" * 1000, 1000) == "a" * 1000
    marker = "\n[... cut by the grader: 1000 more bytes]\n"
    out = files.cap_bytes("a" * 2000, 1000)
    assert out == "a" * (1000 - len(marker)) + marker
    assert len(out.encode("utf-8")) == 1000


def test_cap_bytes_never_splits_a_character():
    out = files.cap_bytes("张" * 1000, 100)  # 3 bytes each
    marker = "\n[... cut by the grader: 2900 more bytes]\n"
    kept = (100 - len(marker)) // 3
    assert out == "张" * kept + marker


def test_clean_keeps_plain_values_and_cleans_the_rest():
    assert files.clean(True) is True and files.clean(False) is False
    assert files.clean(None) is None and files.clean(7) == 7 and files.clean(-2) == -2
    assert files.clean(1.5) == 1.5
    assert files.clean(float("nan")) is None and files.clean(float("-inf")) is None
    assert files.clean(("a\x9bb", ["\x1b"])) == ["ab", [""]]
    assert files.clean({"k\x00": {"v": "\udcff"}}) == {"k": {"v": "\ufffd"}}
    assert files.clean(b"x") == "b'x'"


def test_dumps_is_indented_utf8_json_with_a_final_newline():
    assert files.dumps({"name": "张三", "n": [1]}) == '{\n  "name": "张三",\n  "n": [\n    1\n  ]\n}\n'


def test_write_text_cleans_caps_and_leaves_a_readable_file_only(tmp_path):
    path = tmp_path / "feedback.txt"
    os.umask(0o077)
    try:
        files.write_text(str(path), "ok\x9b\x1b\r\n" + "z" * 500, limit=100)
    finally:
        os.umask(0o022)
    data = path.read_bytes()
    marker = b"\n[... cut by the grader: 403 more bytes]\n"  # 503 bytes after cleaning
    assert data == b"ok\n" + b"z" * (100 - 3 - len(marker)) + marker
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o644  # the web server and students read it
    assert os.listdir(tmp_path) == ["feedback.txt"]
    files.write_text(str(path), "short")
    assert path.read_bytes() == b"short"


def test_a_failed_write_removes_its_temporary(tmp_path):
    folder = tmp_path / "gone"
    with pytest.raises(OSError):
        files.write_bytes(str(folder / "x.txt"), b"data")  # the folder does not exist
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "x.txt").mkdir()  # a folder where the file should go: replace fails
    with pytest.raises(OSError):
        files.write_bytes(str(tmp_path / "d" / "x.txt"), b"data")
    assert os.listdir(tmp_path / "d") == ["x.txt"]


def test_a_cap_shorter_than_the_marker_keeps_only_the_marker():
    assert files.cap_bytes("a" * 100, 10) == "\n[... cut by the grader: 90 more bytes]\n"


def test_the_first_error_of_a_failed_write_is_the_one_raised(tmp_path, monkeypatch):
    """When the temporary cannot be removed either, the caller still learns why the write
    failed (a full disk), not that the cleanup failed."""
    def replace(src, dst):
        raise OSError("disk full")

    def remove(path):
        raise PermissionError("cannot remove")
    monkeypatch.setattr(files.os, "replace", replace)
    monkeypatch.setattr(files.os, "remove", remove)
    with pytest.raises(OSError, match="disk full"):
        files.write_text(str(tmp_path / "feedback.txt"), "x")


# -- read_text: a file an instructor names, read no further than its bound ------------------

def test_size_text_says_megabytes_where_whole_and_kilobytes_otherwise():
    assert files.size_text(16 * 1024 * 1024) == "16 MB"
    assert files.size_text(1024 * 1024) == "1 MB"
    assert files.size_text(512 * 1024) == "512 KB"


def test_read_text_takes_exactly_its_bound_drops_the_bom_and_refuses_one_byte_more(tmp_path):
    path = tmp_path / "f.csv"
    path.write_bytes(b"\xef\xbb\xbf" + b"a" * 1021)      # 1,024 bytes with the BOM
    assert files.read_text(str(path), 1024, ValueError) == "a" * 1021
    path.write_bytes(b"a" * 1025)
    with pytest.raises(ValueError) as error:
        files.read_text(str(path), 1024, ValueError)
    assert str(error.value) == f"{path}: larger than 1 KB"


def test_read_text_says_what_is_wrong_with_the_name_and_hint_it_is_given(tmp_path):
    path = tmp_path / "gradebook.csv"
    path.write_bytes(b"Student,ID\n\xff\n")
    with pytest.raises(ExportError) as error:
        read_template(str(path))
    assert str(error.value) == f"--template {path}: not UTF-8 text (save it as CSV UTF-8)"
    with pytest.raises(CourseError) as error:
        files.read_text(str(tmp_path / "missing.toml"), 10, CourseError)
    assert str(error.value) == f"{tmp_path / 'missing.toml'}: cannot read it (No such file or directory)"
    assert type(error.value) is CourseError
