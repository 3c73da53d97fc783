"""The exports (grader/platforms/: exports.py, canvas/, moodle.py) at their edges (issue
19): what reaches an LMS. A 0 only when earned (a grader error never, missing work only when asked or scored by the instructor), one row per
student id and LMS column, each id in the column its platform gave it, every text cell safe
for a spreadsheet, and the file with its byte order mark; each left-out row by its reason."""
import argparse
import csv
import datetime
import io
import json
import os

from grader import course
from grader.commands import export as export_command
from grader.platforms import exports
from grader.platforms.canvas import scores as canvas_scores
from grader.platforms.moodle import worksheet as moodle_worksheet
from grader.report import gradebook

CANVAS_HEADER = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
MOODLE_HEADER = ["Identifier", "Full name", "Grade", "Maximum Grade", "Last modified (grade)"]


def _row(name, sid="", **more):
    row = {"name": name, "status": "graded", "total": 85.0, "max": 100.0, "parts": {},
           "reason": "", "source": "", "folder": name, "fingerprint": None,
           "student_id": sid, "student_name": name, "layout": "canvas"}
    row.update(more)
    return row


def _lines(text):
    return list(csv.reader(io.StringIO(text)))


def test_the_documented_columns():
    assert canvas_scores.CANVAS_COLUMNS == CANVAS_HEADER
    assert moodle_worksheet.MOODLE_COLUMNS == MOODLE_HEADER
    assert moodle_worksheet.MOODLE_PARTICIPANT == "Participant "


def test_a_score_is_written_as_a_plain_number():
    assert [exports.score(v) for v in (85.0, 0, 0.5, "72.25", 100)] == \
        ["85", "0", "0.5", "72.25", "100"]


def test_a_group_gives_each_member_their_own_name_or_else_the_whole_name():
    assert exports.members(_row("g", "12346;12347", student_name="Li Lei; Han Meimei")) == \
        [("12346", "Li Lei"), ("12347", "Han Meimei")]
    assert exports.members(_row("g", "12346;;12347; ", student_name="Li Lei")) == \
        [("12346", "Li Lei"), ("12347", "Li Lei")]
    assert exports.members(_row("g", "12346;12347", student_name=None)) == \
        [("12346", ""), ("12347", "")]
    assert exports.members(_row("g", None)) == [] and exports.members(_row("g", " ; ")) == []
    assert exports.members({"student_id": 10000}) == [("10000", "")]
    assert exports.members(_row("g", " 12346 ; 12347", student_name="Li; Han")) == \
        [("12346", "Li"), ("12347", "Han")]


def test_ids_that_differ_only_in_spaces_are_one_student():
    # before: " 10000" and "10000" were two ids to the clash check, and both were written as
    # 10000 (a cell is stripped), so the LMS got two scores for one student
    keep, notes = exports.exportable([_row("a", "10000"), _row("b", " 10000 "), _row("c", "1")])
    assert [r["name"] for r in keep] == ["c"]
    assert notes == ["left out a, b: student id 10000 is in 2 rows; check which is theirs "
                     "(grader gradebook), then export again"]


def test_each_row_left_out_says_why_and_is_never_a_zero():
    rows = [_row("e_err", "1", status="grader error", total=None),
            _row("d_none", "2", total=None),
            _row("c_gone", "3", status="missing work", total=0.0),
            _row("b_noid", ""),
            _row("a_zero", "5", status="not gradable", total=0.0),
            _row("f_scored", "6", status="missing work", total=60.0,
                 overrides=[{"part": "total"}])]
    keep, notes = exports.exportable(rows)
    assert [r["name"] for r in keep] == ["a_zero", "f_scored"]
    assert notes == [
        "left out b_noid: no student id (grade it with --layout matching how the work arrived)",
        "left out c_gone: no gradable work was found in what was handed in (missing work; "
        "review it, or --export-missing-as-zero)",
        "left out d_none: the grader failed on it (see its grader-errors.log); regrade it, it "
        "is never exported as 0",
        "left out e_err: the grader failed on it (see its grader-errors.log); regrade it, it "
        "is never exported as 0"]
    keep, notes = exports.exportable(rows, missing_as_zero=True)
    assert [r["name"] for r in keep] == ["a_zero", "c_gone", "f_scored"] and len(notes) == 3
    # even asked for, a grader error with a zero total is no zero
    keep, notes = exports.exportable([_row("x", "1", status="grader error", total=0.0)], True)
    assert keep == [] and "the grader failed on it" in notes[0]


def test_a_left_out_name_is_cut_and_made_safe():
    long = "n" * 500 + "\x1b[2J"
    _keep, notes = exports.exportable([_row(long, "")])
    assert notes[0].startswith("left out " + "n" * 60) and "\x1b" not in notes[0]
    assert len(notes[0]) == len("left out : no student id (grade it with --layout matching how "
                                "the work arrived)") + 120


def test_which_lms_column_a_rows_ids_go_to():
    assert [exports.column({"layout": layout}) for layout in
            ("canvas", "moodle", "gradescope", "nbgrader", "plain", "", None)] == \
        ["canvas", "moodle", "sis", "login", "login", "login", "login"]


def test_one_id_in_two_rows_of_one_column_leaves_out_both_by_name():
    rows = [_row(f"w{i}", "10000", total=float(i)) for i in range(6)] + [_row("ok", "10001")]
    keep, notes = exports.exportable(rows)
    assert [r["name"] for r in keep] == ["ok"]
    assert notes == ["left out w0, w1, w2, w3, w4: student id 10000 is in 6 rows; check which "
                     "is theirs (grader gradebook), then export again"]
    # a member of a group and the same SID alone clash; the same id under two platforms not
    group = [_row("jane", "12345", layout="gradescope"),
             _row("pair", "12345;12346", layout="gradescope", student_name="Jane; Li"),
             _row("canvas", "12345"), _row("nb", "12345", layout="nbgrader")]
    keep, notes = exports.exportable(group)
    assert [r["name"] for r in keep] == ["canvas", "nb"]
    assert notes == ["left out jane, pair: student id 12345 is in 2 rows; check which is "
                     "theirs (grader gradebook), then export again"]
    # an nbgrader student and a plain file of the same name are both SIS Login IDs
    keep, notes = exports.exportable([_row("alice", "alice", layout="nbgrader"),
                                     _row("alice.py", "alice", layout="plain")])
    assert keep == [] and "student id alice is in 2 rows" in notes[0]
    # a long id and long names are cut in the note: 100 and 120 characters
    keep, notes = exports.exportable([_row("a" * 300, "9" * 300), _row("b" * 300, "9" * 300)])
    cut_name = "[... cut by the grader: 180 more characters]"
    cut_id = "[... cut by the grader: 200 more characters]"
    assert notes == [f"left out {'a' * 75}\n{cut_name}, {'b' * 75}\n{cut_name}: student id "
                     f"{'9' * 55}\n{cut_id} is in 2 rows; check which is theirs (grader "
                     f"gradebook), then export again"]


def test_the_canvas_file_puts_each_id_in_its_platforms_column():
    rows = [_row("wang", "10000", student_name="=wang"),
            _row("jane", "12345", layout="gradescope", total=72.5, max=120.0),
            _row("pair", "12346;12347", layout="gradescope", student_name="Li; Han", total=60),
            _row("alice", "alice", layout="nbgrader", total=0.0),
            _row("bob", "bob", layout="", total=10.0),
            _row("fang", "10006", layout="moodle", max=300.0),
            _row("zz_err", "9", status="grader error", total=None, max=500.0)]
    text, notes = canvas_scores.canvas_text(rows, "=Attention (12345)")
    assert _lines(text) == [
        CANVAS_HEADER + ["'=Attention (12345)"],
        ["Points Possible", "", "", "", "", "300"],
        ["alice", "", "", "alice", "", "0"],
        ["bob", "", "", "bob", "", "10"],
        ["jane", "", "12345", "", "", "72.5"],
        ["Li", "", "12346", "", "", "60"],
        ["Han", "", "12347", "", "", "60"],
        ["'=wang", "10000", "", "", "", "85"]]
    assert notes == [
        "left out zz_err: the grader failed on it (see its grader-errors.log); regrade it, it "
        "is never exported as 0",
        "left out fang: its id is a Moodle participant id, which Canvas does not know"]
    text, notes = canvas_scores.canvas_text([])
    assert _lines(text) == [CANVAS_HEADER + ["Attention"], ["Points Possible", "", "", "", "",
                                                             "0"]] and notes == []
    text, _ = canvas_scores.canvas_text([_row("a", "1", max=None)])
    assert _lines(text)[1][-1] == "0"
    text, _ = canvas_scores.canvas_text([_row("a", "1", max=None), _row("b", "2", max=40.0)])
    assert _lines(text)[1][-1] == "40" and _lines(text)[2] == ["a", "1", "", "", "", "85"]


def test_the_moodle_worksheet_holds_only_moodle_rows_with_the_time_of_the_export():
    now = 1796292600     # 2026-12-03 10:10:00 UTC
    stamp = datetime.datetime.fromtimestamp(now, datetime.timezone.utc).strftime(
        "%Y-%m-%d %H:%M:%S +0000")
    assert stamp == "2026-12-03 10:10:00 +0000"
    rows = [_row("fang", "10006", layout="moodle", student_name="@Fang Wu", total=72.5),
            _row("zhou", "10007", layout="moodle", student_name="Zhou Tao", max=None),
            _row("wang", "10000"), _row("gone", "10008", layout="moodle",
                                        status="missing work", total=0.0)]
    text, notes = moodle_worksheet.moodle_text(rows, now=now)
    assert _lines(text) == [MOODLE_HEADER,
                            ["Participant 10006", "'@Fang Wu", "72.5", "100", stamp],
                            ["Participant 10007", "Zhou Tao", "85", "0", stamp]]
    assert notes == [
        "left out gone: no gradable work was found in what was handed in (missing work; review "
        "it, or --export-missing-as-zero)",
        "left out wang: not from a Moodle download, so it has no Moodle participant id"]
    text, _ = moodle_worksheet.moodle_text(rows, now=now, missing_as_zero=True)
    assert ["Participant 10008", "gone", "0", "100", stamp] in _lines(text)
    text, _ = canvas_scores.canvas_text(rows, missing_as_zero=True)
    assert _lines(text)[2:] == [["wang", "10000", "", "", "", "85"]]
    text, notes = canvas_scores.canvas_text([_row("gone", "1", status="missing work", total=0.0)])
    assert _lines(text)[2:] == [] and "left out gone: no gradable work" in notes[0]


def _cut(text, limit):
    """`text` as the grader cuts it: `limit` characters, the last of them a marker line."""
    if len(text) <= limit:
        return text
    marker = f"\n[... cut by the grader: {len(text) - limit} more characters]"
    return text[:limit - len(marker)] + marker


def test_a_long_name_left_out_by_its_platform_is_cut_to_120_characters():
    moodle = _row("m" * 300, "1", layout="moodle")
    canvas = _row("c" * 300, "2")
    _text, notes = canvas_scores.canvas_text([moodle])
    assert notes == [f"left out {_cut('m' * 300, 120)}: its id is a Moodle participant id, "
                     f"which Canvas does not know"]
    _text, notes = moodle_worksheet.moodle_text([canvas], now=0)
    assert notes == [f"left out {_cut('c' * 300, 120)}: not from a Moodle download, so it has "
                     f"no Moodle participant id"]


# -- the command --------------------------------------------------------------------------

def _args(source, out, lms="canvas", **more):
    return argparse.Namespace(source=str(source), out=str(out), lms=lms,
                              assignment="Attention (1)", course=None,
                              export_missing_as_zero=False, **more)


def _gradebook(tmp_path, rows):
    out = tmp_path / "grades"
    for row in rows:
        os.makedirs(out / row["folder"])
        gradebook.save_record(row, str(out))
    return out


def test_the_command_writes_the_final_scores_with_a_byte_order_mark(tmp_path, capsys):
    out = _gradebook(tmp_path, [
        _row("王丽_10000", "10000", student_name="王丽", submitted_at="2026-12-03T12:00:00+08:00",
             time_source="canvas-file-time"),
        _row("liu_10001", "10001"), _row("err", "10002", status="grader error", total=None),
        _row("fang", "10006", layout="moodle", student_name="Fang")])
    (out / "course.toml").write_text('due = 2026-12-01T23:59:00+08:00\n[late_policy]\n'
                                     'kind = "per_day"\npoints = 5\n', encoding="utf-8")
    (out / "overrides.json").write_text(json.dumps({"entries": [
        {"time": "2026-12-04T10:00:00+00:00", "who": "ta", "action": "set", "student": "10001",
         "submission": "liu_10001", "part": "total", "points": 90.0, "reason": "regrade"},
        {"time": "2026-12-04T10:00:00+00:00", "who": "ta", "action": "set", "student": "10099",
         "submission": "", "part": "total", "points": 1.0, "reason": "gone"}]}),
        encoding="utf-8")
    target = tmp_path / "canvas.csv"
    assert export_command.run(_args(out, target)) == 0
    said = capsys.readouterr()
    data = target.read_bytes()
    assert data.startswith(b"\xef\xbb\xbfStudent,")
    # 王丽: 2 days started late at 5 points: 85 - 10; liu: the instructor's 90
    assert _lines(data.decode("utf-8-sig"))[2:] == [["liu_10001", "10001", "", "", "", "90"],
                                                   ["王丽", "10000", "", "", "", "75"]]
    assert said.out == (f"Wrote {target}: 2 student(s) for canvas in the column 'Attention (1)', "
                        f"2 row(s) left out (see above)\n")
    assert said.err.splitlines() == [
        "grader export: warning: the override of 10099's total (1, gone) applies to no row in "
        "the gradebook: not applied",
        "grader export: left out err: the grader failed on it (see its grader-errors.log); "
        "regrade it, it is never exported as 0",
        "grader export: left out fang: its id is a Moodle participant id, which Canvas does "
        "not know"]
    moodle = tmp_path / "moodle.csv"
    assert export_command.run(_args(out, moodle, lms="moodle")) == 0
    said = capsys.readouterr()
    assert moodle.read_bytes().startswith(b"\xef\xbb\xbfIdentifier,")
    assert said.out == f"Wrote {moodle}: 1 student(s) for moodle, 3 row(s) left out (see above)\n"
    rows = _lines(moodle.read_text(encoding="utf-8-sig"))
    assert [r[:4] for r in rows[1:]] == [["Participant 10006", "Fang", "85", "100"]]


def test_the_command_says_nothing_was_left_out_when_nothing_was(tmp_path, capsys):
    out = _gradebook(tmp_path, [_row("wang", "10000")])
    assert export_command.run(_args(out, tmp_path / "c.csv")) == 0
    said = capsys.readouterr()
    assert said.out == f"Wrote {tmp_path / 'c.csv'}: 1 student(s) for canvas in the column " \
        f"'Attention (1)'\n" and said.err == ""
    out = _gradebook(tmp_path / "m", [_row("fang", "10006", layout="moodle"),
                                      _row("gone", "10007", layout="moodle",
                                           status="missing work", total=0.0)])
    args = _args(out, tmp_path / "m.csv", lms="moodle")
    args.export_missing_as_zero = True
    assert export_command.run(args) == 0
    assert capsys.readouterr().out == f"Wrote {tmp_path / 'm.csv'}: 2 student(s) for moodle\n"


def test_each_refusal_of_the_command_says_why_and_writes_nothing(tmp_path, capsys):
    target = tmp_path / "c.csv"
    assert export_command.run(_args(tmp_path / "nothing", target)) == 2
    assert capsys.readouterr().err == (f"grader export: --gradebook {tmp_path / 'nothing'} is not "
                                       f"a gradebook folder (the --gradebook of grader grade)\n")
    (tmp_path / "empty").mkdir()
    assert export_command.run(_args(tmp_path, tmp_path / "empty")) == 2
    assert capsys.readouterr().err == f"grader export: --out {tmp_path / 'empty'} is a folder\n"
    assert export_command.run(_args(tmp_path / "empty", target)) == 2
    assert capsys.readouterr().err == f"grader export: no graded rows in {tmp_path / 'empty'}\n"
    out = _gradebook(tmp_path, [_row("wang", "10000")])
    (out / "course.toml").write_text("due = 3\n", encoding="utf-8")
    assert export_command.run(_args(out, target)) == 2
    assert capsys.readouterr().err.startswith("grader export: ") and not target.exists()
    (out / "course.toml").unlink()
    (out / "overrides.json").write_text("{", encoding="utf-8")
    assert export_command.run(_args(out, target)) == 2
    assert "overrides.json" in capsys.readouterr().err and not target.exists()


def test_a_long_path_or_error_in_a_refusal_is_cut(tmp_path, capsys):
    source = tmp_path / ("d" * 250)
    assert export_command.run(_args(source, tmp_path / "c.csv")) == 2
    assert capsys.readouterr().err == (f"grader export: --gradebook {_cut(str(source), 200)} is "
                                       f"not a gradebook folder (the --gradebook of grader grade)\n")
    folder = tmp_path / ("o" * 250)
    folder.mkdir()
    assert export_command.run(_args(tmp_path, folder)) == 2
    assert capsys.readouterr().err == f"grader export: --out {_cut(str(folder), 200)} is a folder\n"
    assert export_command.run(_args(folder, tmp_path / "c.csv")) == 2
    assert capsys.readouterr().err == f"grader export: no graded rows in {_cut(str(folder), 200)}\n"
    deep = _gradebook(tmp_path / ("a" * 250) / ("b" * 250), [_row("wang", "10000")])
    (deep / "course.toml").write_text("due = 3\n", encoding="utf-8")
    try:
        course.find(str(deep), None)
    except course.CourseError as error:
        said = str(error)
    assert len(said) > 500
    assert export_command.run(_args(deep, tmp_path / "c.csv")) == 2
    assert capsys.readouterr().err == f"grader export: {_cut(said, 500)}\n"


def test_missing_work_is_left_out_when_the_command_is_not_told_otherwise(tmp_path, capsys):
    out = _gradebook(tmp_path, [_row("gone", "1", status="missing work", total=0.0),
                                _row("wang", "2")])
    args = _args(out, tmp_path / "c.csv")
    del args.export_missing_as_zero
    assert export_command.run(args) == 0
    assert "left out gone: no gradable work" in capsys.readouterr().err
    rows = _lines((tmp_path / "c.csv").read_text(encoding="utf-8-sig"))
    assert rows[2:] == [["wang", "2", "", "", "", "85"]]
