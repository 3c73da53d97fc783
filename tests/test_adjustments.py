"""grader/report/adjustments.py at its edges (issue 19): what a student reads when the final
score is not the graded one. The block's every sentence, said once whatever the order of
changes; results.json's score the final one with the graded one kept; each file read only
under its cap (4 x 1 MB, 4 x 256 KB, 16 x 1 MB) and written under its own; results.json cut
outputs first (1000 characters, then 200, then none) and stays valid JSON."""
import json
import os

import pytest

from grader import i18n
from grader import files
from grader.report import adjustments

RULE = "=" * 60
PAGE = "<!DOCTYPE html>\n<html>\n<head></head>\n<body>\n<h1>wang</h1>\n</body>\n</html>\n"
GRADED = "wang: 80 / 100 points\n"


@pytest.fixture(autouse=True)
def english():
    before = i18n.language()
    i18n.set_language("en")
    yield
    i18n.set_language(before)


def _final(total=80.0, penalty=0.0, overrides=(), graded=80.0, raw=None, days=2, **more):
    row = {"name": "wang", "folder": "wang", "status": "graded", "total": total, "max": 100.0,
           "graded_total": graded, "raw_total": raw if raw is not None else graded,
           "penalty": penalty, "late": bool(penalty), "days_late": days if penalty else None,
           "overrides": [dict(o, who="ta", time="t") for o in overrides]}
    row.update(more)
    return row


MASK = {"part": "mask", "graded": 30.0, "points": 40.0, "reason": "regrade <b>"}
TOTAL = {"part": "total", "graded": 90.0, "points": 95.5, "reason": "bonus"}


def test_a_row_carries_an_adjustment_only_when_its_score_was_changed():
    assert adjustments.wanted(_final()) is None
    assert adjustments.wanted(_final(penalty=None)) is None
    assert adjustments.wanted(_final(total=None, penalty=10.0, overrides=[MASK])) is None
    assert adjustments.wanted(_final(total=70.0, penalty=10.0)) == {
        "graded": 80.0, "raw_total": 80.0, "late": True, "days_late": 2, "basis": "",
        "penalty": 10.0, "final": 70.0, "max": 100.0, "overrides": []}
    assert adjustments.wanted(_final(total=70.0, penalty=10.0, late_basis="lms-flag"))["basis"] \
        == "lms-flag"
    found = adjustments.wanted(_final(total=90.0, raw=90.0, overrides=[MASK], penalty=None))
    assert found["penalty"] == 0.0 and found["overrides"] == [MASK]


def _both():
    return adjustments.wanted(_final(total=85.5, penalty=10.0, raw=95.5, overrides=[MASK, TOTAL]))


def test_the_block_says_each_change_and_the_final_score():
    assert adjustments.lines(_both()) == [
        "Instructor adjustment", "Graded score: 80 of 100",
        "mask: 30 changed to 40 by your instructor. Reason: regrade <b>",
        "the total: 90 changed to 95.5 by your instructor. Reason: bonus",
        "Late penalty: -10 (2 day(s) late, by the course's late policy)",
        "Final score: 85.5 of 100"]
    unknown = adjustments.wanted(_final(total=75.0, penalty=5.0, days=None))
    assert adjustments.lines(unknown)[2] == \
        "Late penalty: -5 (? day(s) late, by the course's late policy)"
    unknown["days_late"] = 0
    assert "(? day(s) late" in adjustments.lines(unknown)[2]
    # a penalty on the LMS's bare "late" says only that (issue 27): no time nobody saw
    flagged = adjustments.wanted(_final(total=70.0, penalty=10.0, days=1, late_basis="lms-flag"))
    assert adjustments.lines(flagged)[2] == (
        "Late penalty: -10 (the course's system marked your submission late without giving its "
        "time, which the course's late policy counts as 1 day(s) late)")
    cut = adjustments.lines(dict(_both(), overrides=[dict(MASK, reason="r" * 1500)]))[2]
    head = "mask: 30 changed to 40 by your instructor. Reason: "
    assert cut.startswith(head + "r" * 900) and len(cut) == len(head) + 1000
    i18n.set_language("zh")
    assert adjustments.lines(_both())[:4] == [
        "教师调整", "评分结果：80 / 100", "mask：教师将 30 分改为 40 分。原因：regrade <b>",
        "总分：教师将 90 分改为 95.5 分。原因：bonus"]


def test_the_text_and_html_blocks():
    assert adjustments.text_block(_both()) == "\n".join([
        RULE, "Instructor adjustment", RULE, "Graded score: 80 of 100",
        "mask: 30 changed to 40 by your instructor. Reason: regrade <b>",
        "the total: 90 changed to 95.5 by your instructor. Reason: bonus",
        "Late penalty: -10 (2 day(s) late, by the course's late policy)",
        "Final score: 85.5 of 100", RULE, "", ""])
    assert adjustments.html_block(_both()) == (
        '<!-- instructor-adjustment --><section class="note"><h2>Instructor adjustment</h2><ul>'
        "<li>Graded score: 80 of 100</li>"
        "<li>mask: 30 changed to 40 by your instructor. Reason: regrade &lt;b&gt;</li>"
        "<li>the total: 90 changed to 95.5 by your instructor. Reason: bonus</li>"
        "<li>Late penalty: -10 (2 day(s) late, by the course&#x27;s late policy)</li>"
        "<li>Final score: 85.5 of 100</li></ul></section><!-- /instructor-adjustment -->\n")


def test_a_file_is_read_only_when_it_is_a_plain_file_within_its_limit(tmp_path):
    path = tmp_path / "f.txt"
    path.write_text("x" * 10, encoding="utf-8")
    assert adjustments._read(str(path), 10) == "x" * 10
    assert adjustments._read(str(path), 9) is None
    os.symlink(path, tmp_path / "link.txt")
    assert adjustments._read(str(tmp_path / "link.txt"), 100) is None
    assert adjustments._read(str(tmp_path), 100) is None
    assert adjustments._read(str(tmp_path / "none.txt"), 100) is None


def test_only_a_block_the_text_starts_with_is_taken_off():
    assert adjustments._strip_text("ABCdef", ["AB", "C"]) == "def"
    assert adjustments._strip_text("xABdef", ["AB", ""]) == "xABdef"
    assert adjustments._strip_text("CABdef", ["AB", "C"]) == "ABdef"


# -- results.json under its 1 MB cap ------------------------------------------------------------

def test_results_json_under_its_cap_is_left_whole_up_to_the_last_byte():
    assert files.RESULTS_BYTES == 1_048_576
    data = {"output": "", "tests": [{"output": "o" * 5000}]}
    pad = files.RESULTS_BYTES - len(files.dumps(data).encode("utf-8"))
    data["output"] = "p" * pad
    assert len(files.dumps(data).encode("utf-8")) == files.RESULTS_BYTES
    assert adjustments._fit(json.loads(json.dumps(data))) == files.dumps(data)


def test_results_json_over_its_cap_cuts_outputs_to_1000_then_200_then_0():
    fits_at_1000 = {"output": "s", "tests": [{"output": "x" * 10000} for _ in range(200)]}
    tests = json.loads(adjustments._fit(fits_at_1000))["tests"]
    assert [len(t["output"]) for t in tests] == [1000] * 200
    fits_at_200 = {"output": "s", "tests": [{"output": "x" * 2000} for _ in range(1500)]}
    tests = json.loads(adjustments._fit(fits_at_200))["tests"]
    assert [len(t["output"]) for t in tests] == [200] * 1500
    fits_at_0 = {"output": "s", "tests": [{"output": "x" * 300} for _ in range(6000)]
                 + ["odd", {"output": None}]}
    text = adjustments._fit(fits_at_0)
    assert len(text.encode("utf-8")) <= files.RESULTS_BYTES
    assert [t["output"] for t in json.loads(text)["tests"][:-2]] == [""] * 6000
    assert json.loads(text)["tests"][-2:] == ["odd", {"output": None}]


def test_results_json_cut_to_no_output_at_exactly_its_cap_keeps_the_summary():
    data = {"output": "", "tests": [{"output": "xxxxx"} for _ in range(100)]}
    empty = {"output": "", "tests": [{"output": ""} for _ in range(100)]}
    pad = files.RESULTS_BYTES - len(files.dumps(empty).encode("utf-8"))
    data["output"] = empty["output"] = "p" * pad
    text = adjustments._fit(data)
    assert text == files.dumps(empty) and len(text.encode("utf-8")) == files.RESULTS_BYTES


def test_a_summary_too_large_for_results_json_is_cut_to_half_of_it():
    text = adjustments._fit({"output": "s" * (3 * files.RESULTS_BYTES), "tests": []})
    assert len(json.loads(text)["output"].encode("utf-8")) == 524_288
    assert len(text.encode("utf-8")) <= files.RESULTS_BYTES


# -- one student's files ----------------------------------------------------------------------

def _folder(tmp_path, lang=None, page=PAGE, plain=GRADED):
    folder = tmp_path / "wang"
    folder.mkdir()
    if plain is not None:
        (folder / "feedback.txt").write_text(plain, encoding="utf-8")
    if page is not None:
        (folder / "feedback.html").write_text(page, encoding="utf-8")
    extra = {"lang": lang} if lang else {}
    (folder / "results.json").write_text(json.dumps(
        {"score": 80.0, "output": GRADED, "extra_data": extra}), encoding="utf-8")
    return folder


def _read(folder, name):
    return (folder / name).read_text(encoding="utf-8")


def test_a_change_of_adjustment_is_said_once_and_the_graded_score_kept(tmp_path):
    folder = _folder(tmp_path, page=PAGE.replace("</body>", "<body>\n</body>"))
    first = _final(total=70.0, penalty=10.0)
    assert adjustments.apply(str(folder), first) is True
    block = adjustments.text_block(adjustments.wanted(first))
    assert _read(folder, "feedback.txt") == block + GRADED
    page = _read(folder, "feedback.html")
    assert page.count("<!-- instructor-adjustment -->") == 1
    assert page.startswith("<!DOCTYPE html>\n<html>\n<head></head>\n<body>\n"
                           "<!-- instructor-adjustment -->")
    data = json.loads(_read(folder, "results.json"))
    assert (data["score"], data["extra_data"]["raw_score"], data["output"]) == (
        70.0, 80.0, block + GRADED)
    assert data["extra_data"]["adjustment"] == adjustments.wanted(first)
    # unchanged: nothing rewritten
    os.utime(folder / "results.json", (0, 0))
    assert adjustments.apply(str(folder), first) is False
    assert os.stat(folder / "results.json").st_mtime == 0
    # the penalty doubled: one block, the new one; the graded score still 80
    second = _final(total=60.0, penalty=20.0)
    assert adjustments.apply(str(folder), second) is True
    block = adjustments.text_block(adjustments.wanted(second))
    assert _read(folder, "feedback.txt") == block + GRADED
    data = json.loads(_read(folder, "results.json"))
    assert (data["score"], data["extra_data"]["raw_score"], data["output"]) == (
        60.0, 80.0, block + GRADED)
    assert _read(folder, "feedback.html").count("<!-- instructor-adjustment -->") == 1
    # taken away: the files as graded
    assert adjustments.apply(str(folder), _final()) is True
    assert _read(folder, "feedback.txt") == GRADED
    assert _read(folder, "feedback.html") == PAGE.replace("</body>", "<body>\n</body>")
    data = json.loads(_read(folder, "results.json"))
    assert data == {"score": 80.0, "output": GRADED, "extra_data": {}}
    assert adjustments.apply(str(folder), _final()) is False


def test_the_block_is_in_the_language_the_files_were_written_in(tmp_path):
    folder = _folder(tmp_path, lang="zh")
    assert adjustments.apply(str(folder), _final(total=70.0, penalty=10.0)) is True
    assert _read(folder, "feedback.txt").startswith(RULE + "\n教师调整\n" + RULE + "\n")
    assert i18n.language() == "en"


def test_results_json_alone_is_enough_and_nothing_else_is_needed(tmp_path):
    folder = _folder(tmp_path, page=None, plain=None)
    assert adjustments.apply(str(folder), _final(total=70.0, penalty=10.0)) is True
    assert json.loads(_read(folder, "results.json"))["score"] == 70.0
    assert sorted(os.listdir(folder)) == ["results.json"]


def test_files_past_their_read_limits_are_left_alone(tmp_path):
    assert files.FEEDBACK_BYTES == 262_144
    folder = _folder(tmp_path)
    (folder / "feedback.txt").write_text("t" * (4 * 262_144 + 1), encoding="utf-8")
    (folder / "feedback.html").write_text("<body>\n" + "h" * (16 * 1_048_576 - 6),
                                          encoding="utf-8")
    assert adjustments.apply(str(folder), _final(total=70.0, penalty=10.0)) is True
    assert os.path.getsize(folder / "feedback.txt") == 4 * 262_144 + 1
    assert os.path.getsize(folder / "feedback.html") == 16 * 1_048_576 + 1
    assert json.loads(_read(folder, "results.json"))["score"] == 70.0
    big = tmp_path / "big"
    big.mkdir()
    (big / "results.json").write_text(json.dumps({"score": 80.0, "output": "o" * (4 * 1_048_576)}),
                                      encoding="utf-8")
    assert adjustments.apply(str(big), _final(total=70.0, penalty=10.0)) is False
    # 4 MB exactly is read (and written back under 1 MB)
    head = json.dumps({"score": 80.0, "output": ""})
    (big / "results.json").write_text(head[:-2] + "o" * (4 * 1_048_576 - len(head)) + '"}',
                                      encoding="utf-8")
    assert os.path.getsize(big / "results.json") == 4 * 1_048_576
    assert adjustments.apply(str(big), _final(total=70.0, penalty=10.0)) is True
    assert os.path.getsize(big / "results.json") <= 1_048_576
    assert json.loads(_read(big, "results.json"))["score"] == 70.0


def test_files_at_their_read_limits_are_rewritten_under_their_caps(tmp_path):
    folder = _folder(tmp_path)
    (folder / "feedback.txt").write_text("t" * (4 * 262_144), encoding="utf-8")
    (folder / "feedback.html").write_text("<body>\n" + "h" * (16 * 1_048_576 - 7),
                                          encoding="utf-8")
    assert adjustments.apply(str(folder), _final(total=70.0, penalty=10.0)) is True
    assert os.path.getsize(folder / "feedback.txt") == 262_144
    assert _read(folder, "feedback.txt").startswith(RULE)
    assert _read(folder, "feedback.html").startswith("<body>\n<!-- instructor-adjustment -->")


def test_a_student_file_that_does_not_read_never_raises(tmp_path):
    folder = tmp_path / "wang"
    folder.mkdir()
    assert adjustments.apply(str(folder), _final(total=70.0, penalty=10.0)) is False
    (folder / "results.json").write_text("{", encoding="utf-8")
    assert adjustments.apply(str(folder), _final(total=70.0, penalty=10.0)) is False
    assert _read(folder, "results.json") == "{"


def test_sync_rewrites_only_real_folders_of_the_gradebook(tmp_path):
    out = tmp_path / "grades"
    out.mkdir()
    _folder(out)
    (out / "inner").mkdir()
    _folder(out / "inner")
    rows = [_final(total=70.0, penalty=10.0, folder=folder)
            for folder in ("inner/wang", "..", ".", "", None, 5, "gone")]
    assert adjustments.sync(str(out), rows) == 0
    assert "raw_score" not in json.loads(_read(out / "inner" / "wang", "results.json"))[
        "extra_data"]
    rows.append(_final(total=70.0, penalty=10.0, folder="wang"))
    assert adjustments.sync(str(out), rows) == 1
    assert adjustments.sync(str(out), rows) == 0
