"""Instructor overrides (grader/overrides.py) and what the gradebook derives from the kept
rows: overrides survive a real regrade with --force, removing one restores the graded score,
a change of the late policy recomputes every row without grading anything, the student's
files say what was adjusted, and the exports carry the final score (with a BOM)."""
import csv
import io
import json
import os
import shutil
import subprocess
import sys
import time

import pytest

from conftest import KIT, SOLUTION, SUBMISSIONS
from grader import overrides
from grader.overrides import OverrideError
from grader.platforms.canvas import scores as canvas_scores
from grader.platforms.moodle import worksheet as moodle_worksheet
from grader.report import gradebook
from grading import FAST, grades, run_grader

# imports that grading needs: with them blocked, a command that grades anything fails
NO_GRADING = ("import sys; [sys.modules.__setitem__(m, None) for m in ('torch', "
              "'grader.sandbox.client', 'grader.sandbox.template', 'grader.grade.trusted', "
              "'grader.grade.zygote')]; from grader.cli import main; sys.exit(main(sys.argv[1:]))")


def _row(name, student_id="", status="graded", total=80.0, parts=None, layout="canvas", **more):
    row = {"name": name, "status": status, "total": total, "max": 100.0,
           "parts": parts or {"mask": [30.0, 40.0], "softmax": [50.0, 60.0]},
           "reason": "", "source": "", "folder": name, "fingerprint": None,
           "student_id": student_id, "student_name": name, "layout": layout}
    row.update(more)
    return row


ROWS = [_row("wangli_10000", "10000"), _row("liu_10001", "10001"),
        _row("err_10002", "10002", status="grader error", total=None),
        _row("dup_a", "10005"), _row("dup_b", "10005")]


# -- recording: each refusal says why ------------------------------------------------------

@pytest.mark.parametrize("args, says", [
    (("carl", "mask", "3", "r"), "no row for student 'carl' in the gradebook (students: 10000, 10001"),
    (("10000", "attention", "3", "r"), "has no part 'attention' (parts: mask, softmax, total)"),
    (("10000", "mask", "41", "r"), "41 is more than mask's 40 points (--allow-bonus"),
    (("10000", "total", "101", "r"), "101 is more than total's 100 points"),
    (("10000", "mask", "-1", "r"), "points must be 0 or more"),
    (("10000", "mask", "nan", "r"), "points must be 0 or more"),
    (("10000", "mask", "ten", "r"), "points must be a number"),
    (("10000", "mask", "3", "  "), "give a --reason"),
    (("10002", "mask", "3", "r"), "is a grader error, not a score: regrade it first"),
    (("10005", "mask", "3", "r"), "matches 2 rows (dup_a, dup_b); give the submission name"),
])
def test_each_refusal_says_why(args, says):
    with pytest.raises(OverrideError) as error:
        overrides.entry_for(ROWS, *args)
    assert says in str(error.value)


def test_a_student_is_named_by_id_or_submission_name_and_bonus_needs_a_flag():
    by_id = overrides.entry_for(ROWS, "10000", "mask", "35", "regrade granted")
    by_name = overrides.entry_for(ROWS, "wangli_10000", "mask", "35", "regrade granted")
    assert by_id["student"] == by_name["student"] == "10000"
    # two rows with one student id: an override kept under that id would reach both, so
    # naming either is refused, with the reason (issue 27)
    with pytest.raises(OverrideError, match="'10005' is the student id of 2 rows \\(dup_b, dup_a\\): "
                                            "an override would reach each of them"):
        overrides.entry_for(ROWS, "dup_b", "total", "0", "integrity")
    assert overrides.entry_for(ROWS, "10000", "mask", "45", "bonus", allow_bonus=True)["points"] == 45


def test_an_override_names_exactly_one_student_never_a_part_of_another_id():
    """Issue 27: `1000` beside `10001`, and one member of a group's joined ids, never reach
    the other row: by the command (entry_for), by a ledger edited by hand (for_row) and in
    what is exported."""
    rows = [_row("a_1000", "1000"), _row("b_10001", "10001"),
            _row("group", "10002;10003", layout="gradescope", student_name="Li Lei;Han Meimei")]

    def totals(entries):
        return {r["name"]: r["total"] for r in gradebook.final_rows(rows, None, entries)}
    one = overrides.entry_for(rows, "1000", "total", "10", "integrity")
    assert one["student"] == "1000"
    assert totals([one]) == {"a_1000": 10.0, "b_10001": 80.0, "group": 80.0}
    exact = overrides.entry_for(rows, "10001", "mask", "0", "regrade")
    assert totals([exact]) == {"a_1000": 80.0, "b_10001": 50.0, "group": 80.0}
    # one member of a group: refused, with the group's id to name instead
    with pytest.raises(OverrideError) as refused:
        overrides.entry_for(rows, "10002", "total", "10", "r")
    assert str(refused.value).startswith(
        "'10002' is one member of the group submission 'group' (student ids 10002;10003): "
        "its score is every member's")
    assert "name the group as '10002;10003'" in str(refused.value)
    both = overrides.entry_for(rows, "10002;10003", "total", "60", "group regrade")
    assert totals([both]) == {"a_1000": 80.0, "b_10001": 80.0, "group": 60.0}
    # a ledger edited by hand: "100" and "10002" are keys of no row, reach none, and are said
    stray = [dict(one, student="100"), dict(one, student="10002")]
    assert totals(stray) == {"a_1000": 80.0, "b_10001": 80.0, "group": 80.0}
    assert len(gradebook.orphans(rows, stray)) == 2
    # exported: 1000's 10 goes to 1000 alone; the group's members keep the group's score
    text, notes = canvas_scores.canvas_text(gradebook.final_rows(rows, None, [one]), "A (1)")
    lines = list(csv.reader(io.StringIO(text)))[2:]
    assert sorted((line[1] or line[2] or line[3], line[-1]) for line in lines) == [
        ("1000", "10"), ("10001", "80"), ("10002", "80"), ("10003", "80")]


def test_the_last_action_per_student_and_part_is_in_effect():
    first = overrides.entry_for(ROWS, "10000", "mask", "35", "one")
    second = overrides.entry_for(ROWS, "10000", "mask", "20", "two")
    total = overrides.entry_for(ROWS, "10001", "total", "0", "integrity")
    gone = overrides.entry_for(ROWS, "10001", "total", None, "", action="remove")
    assert overrides.active([first, second, total]) == {("10000", "mask"): second,
                                                         ("10001", "total"): total}
    assert overrides.active([first, second, total, gone]) == {("10000", "mask"): second}
    # 20 + 50 = 70 (was 80): graded values stay in the row, final ones are derived
    final = gradebook.final_rows(ROWS[:2], None, [first, second, total])
    assert (final[0]["total"], final[0]["raw_total"], final[0]["graded_total"]) == (70.0, 70.0, 80.0)
    assert final[0]["parts"]["mask"] == [20.0, 40.0] and ROWS[0]["parts"]["mask"] == [30.0, 40.0]
    assert final[1]["total"] == 0.0


def test_an_import_is_all_or_nothing_and_a_broken_ledger_is_an_error(tmp_path):
    good = tmp_path / "good.csv"
    good.write_text("\ufeffstudent,part,points,reason\n10000,mask,35,regrade\n"
                    "liu_10001,total,0,\"integrity, case 7\"\n", encoding="utf-8")
    entries = overrides.read_import(str(good), ROWS)
    assert [(e["student"], e["part"], e["points"]) for e in entries] == \
        [("10000", "mask", 35.0), ("10001", "total", 0.0)]
    bad = tmp_path / "bad.csv"
    bad.write_text("student,part,points,reason\n10000,mask,35,ok\n10000,mask,99,too many\n",
                   encoding="utf-8")
    with pytest.raises(OverrideError, match="nothing imported: line 3: 99 is more than mask's 40"):
        overrides.read_import(str(bad), ROWS)
    (tmp_path / "cols.csv").write_text("who,part,points\n", encoding="utf-8")
    with pytest.raises(OverrideError, match="columns must be student,part,points,reason"):
        overrides.read_import(str(tmp_path / "cols.csv"), ROWS)
    overrides.append(str(tmp_path), entries)
    assert overrides.load(str(tmp_path)) == entries
    (tmp_path / "overrides.json").write_text('{"entries": [{"action": "set"}]}')
    with pytest.raises(OverrideError, match="entry 1: time must be text"):
        overrides.load(str(tmp_path))


# -- exports: final scores, missing work, BOM ----------------------------------------------

def _gradebook_dir(tmp_path, rows):
    out = tmp_path / "grades"
    out.mkdir()
    for row in rows:
        (out / row["folder"]).mkdir()
        gradebook.save_record(row, str(out))
    return out


def _export(out, lms, target, *extra):
    return run_grader("export", lms, "--from", str(out), "--out", str(target), *extra, timeout=120)


def test_exports_send_final_scores_and_leave_missing_work_out_unless_asked(tmp_path):
    rows = [_row("王丽_10000", "10000", student_name="王丽"),
            _row("gone_10003", "10003", status="missing work", total=0.0,
                 parts={"mask": [0.0, 40.0], "softmax": [0.0, 60.0]}),
            _row("late_10004", "10004", submitted_at="2026-12-03T12:00:00+08:00",
                 time_source="canvas-file-time", late_flag=True),
            _row("err_10002", "10002", status="grader error", total=None)]
    out = _gradebook_dir(tmp_path, rows)
    (out / "course.toml").write_text('due = 2026-12-01T23:59:00+08:00\n[late_policy]\n'
                                     'kind = "per_day"\npoints = 5\n', encoding="utf-8")
    target = tmp_path / "canvas.csv"
    done = _export(out, "canvas", target, "--assignment", "Attention (12345)")
    assert done.returncode == 0, done.stderr
    data = target.read_bytes()
    assert data.startswith(b"\xef\xbb\xbf")                       # Excel reads the names
    lines = list(csv.reader(io.StringIO(data.decode("utf-8-sig"))))
    assert lines[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section",
                        "Attention (12345)"]
    # 10004: submitted 1 day 12 hours late, 2 days at 5 points: 80 - 10
    assert lines[2:] == [["late_10004", "10004", "", "", "", "70"], ["王丽", "10000", "", "", "", "80"]]
    assert "left out gone_10003: no gradable work was found" in done.stderr
    assert "left out err_10002: the grader failed on it" in done.stderr
    both = _export(out, "canvas", target, "--export-missing-as-zero", "--assignment", "A (1)")
    rows_out = list(csv.reader(io.StringIO(target.read_text(encoding="utf-8-sig"))))[2:]
    assert ["gone_10003", "10003", "", "", "", "0"] in rows_out and len(rows_out) == 3
    assert "err_10002" in both.stderr and "gone_10003" not in both.stderr
    # an instructor's score makes missing work exportable without the flag
    overrides.append(str(out), [overrides.entry_for(rows, "10003", "total", "60", "emailed work")])
    _export(out, "canvas", target, "--assignment", "A (1)")
    assert ["gone_10003", "10003", "", "", "", "60"] in \
        list(csv.reader(io.StringIO(target.read_text(encoding="utf-8-sig"))))
    moodle, notes = moodle_worksheet.moodle_text(gradebook.final_rows(
        [_row("Fang Wu_10006", "10006", layout="moodle", status="missing work", total=0.0)]), now=0)
    assert moodle.count("\n") == 1 and "missing work" in notes[0]


# -- end to end: a real grader grade, overrides, --force, the policy, the student's files -------

def _grade(paths, out, *extra):
    return run_grader("grade", *map(str, paths), "--out", str(out), *FAST, *extra, timeout=900)


def _cli(*args, no_grading=False):
    head = [sys.executable, "-c", NO_GRADING] if no_grading else [sys.executable, "-m", "grader"]
    return subprocess.run(head + list(map(str, args)), cwd=KIT, capture_output=True, text=True,
                          timeout=300)


def _results(out, name):
    return json.loads((out / name / "results.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = tmp_path_factory.mktemp("overrides")
    subs = root / "subs"
    subs.mkdir()
    shutil.copy(SOLUTION, subs / "alice.py")
    shutil.copy(os.path.join(SUBMISSIONS, "zero_stub.py"), subs / "bob.py")
    out = root / "grades"
    done = _grade([subs / "alice.py", subs / "bob.py"], out)
    assert done.returncode == 0, done.stdout + done.stderr
    return subs, out


@pytest.mark.slow
def test_overrides_survive_a_real_regrade_with_force_and_removal_restores(graded):
    subs, out = graded
    assert grades(out)["alice"]["total"] == "100"
    done = _cli("override", "--out", out, "alice", "sequence_mask", "5", "--reason",
                "the mask was copied from a classmate")
    assert done.returncode == 0, done.stderr
    assert _cli("override", "--out", out, "bob", "total", "50", "--reason",
                "regrade request granted").returncode == 0
    refused = _cli("override", "--out", out, "alice", "GPU", "11", "--reason", "x")
    assert refused.returncode == 2 and "11 is more than GPU's 10 points" in refused.stderr
    row = grades(out)["alice"]
    # 100 graded, sequence_mask 11 -> 5: 94
    assert (row["total"], row["raw_total"], row["sequence_mask (/11)"]) == ("94", "94", "5")
    assert row["overrides"] == "sequence_mask 5 (the mask was copied from a classmate)"
    assert grades(out)["bob"]["total"] == "50"

    forced = _grade([subs / "alice.py"], out, "--force")
    assert forced.returncode == 0 and "unchanged" not in forced.stdout
    assert grades(out)["alice"]["total"] == "94"            # regraded: the override stays
    feedback = (out / "alice" / "feedback.txt").read_text(encoding="utf-8")
    assert feedback.splitlines()[1] == "Instructor adjustment"
    assert "sequence_mask: 11 changed to 5 by your instructor. Reason: the mask was copied " \
           "from a classmate" in feedback and "Final score: 94 of 100" in feedback
    results = _results(out, "alice")
    assert (results["score"], results["extra_data"]["raw_score"]) == (94.0, 100.0)
    assert results["output"].startswith(feedback[:200])
    assert "Instructor adjustment" in (out / "alice" / "feedback.html").read_text(encoding="utf-8")

    listed = _cli("override", "--out", out, "--list")
    assert "2 override(s) in effect, 2 entries" in listed.stdout
    assert _cli("override", "--out", out, "--remove", "alice", "sequence_mask").returncode == 0
    assert grades(out)["alice"]["total"] == "100" and grades(out)["alice"]["overrides"] == ""
    assert "Instructor adjustment" not in (out / "alice" / "feedback.txt").read_text(encoding="utf-8")
    assert "instructor-adjustment" not in (out / "alice" / "feedback.html").read_text(encoding="utf-8")
    assert _results(out, "alice")["score"] == 100.0 and "raw_score" not in _results(out, "alice")["extra_data"]
    ledger = json.loads((out / "overrides.json").read_text(encoding="utf-8"))["entries"]
    assert [(e["action"], e["student"], e["part"]) for e in ledger] == [
        ("set", "alice", "sequence_mask"), ("set", "bob", "total"),
        ("remove", "alice", "sequence_mask")]
    assert all(e["who"] and e["time"].endswith("+00:00") for e in ledger)
    again = _cli("override", "--out", out, "--remove", "alice", "sequence_mask")
    assert again.returncode == 2 and "no override of sequence_mask in effect" in again.stderr


@pytest.mark.slow
def test_a_policy_change_recomputes_every_row_without_grading(graded):
    subs, out = graded
    # when the work arrived, as a layout records it (canvas-file-time: charged)
    for name, when in (("alice", "2026-12-03T12:00:00+08:00"), ("bob", "2026-12-01T20:00:00+08:00")):
        path = out / name / gradebook.ROW_FILE
        row = json.loads(path.read_text(encoding="utf-8"))
        row.update(submitted_at=when, time_source="canvas-file-time")
        path.write_text(json.dumps(row), encoding="utf-8")
    kept = {n: (out / n / gradebook.ROW_FILE).read_bytes() for n in ("alice", "bob")}
    bob = grades(out)["bob"]["total"]
    course = out / "course.toml"
    course.write_text('due = 2026-12-01T23:59:00+08:00\n[late_policy]\nkind = "per_day"\n'
                      'percent = 10\n', encoding="utf-8")
    done = _cli("gradebook", "--out", out, no_grading=True)  # torch and the sandbox blocked
    assert done.returncode == 0, done.stderr
    rows = grades(out)
    # alice: 1 day 12 hours late, 2 days at 10% of 100
    assert (rows["alice"]["late"], rows["alice"]["days_late"], rows["alice"]["penalty"],
            rows["alice"]["total"]) == ("yes", "2", "20", "80")
    assert (rows["bob"]["late"], rows["bob"]["penalty"], rows["bob"]["total"]) == ("no", "0", bob)
    assert "Late penalty: -20 (2 day(s) late" in (out / "alice" / "feedback.txt").read_text(encoding="utf-8")
    assert _results(out, "alice")["score"] == 80.0

    course.write_text('due = 2026-12-01T23:59:00+08:00\n[late_policy]\nkind = "per_day"\n'
                      'points = 3\n[extensions]\n"alice" = { days = 1 }\n', encoding="utf-8")
    assert _cli("gradebook", "--out", out, no_grading=True).returncode == 0
    assert (grades(out)["alice"]["days_late"], grades(out)["alice"]["total"]) == ("1", "97")
    assert _results(out, "alice")["score"] == 97.0
    assert {n: (out / n / gradebook.ROW_FILE).read_bytes() for n in kept} == kept  # not regraded
    report = (out / "report.html").read_text(encoding="utf-8")
    assert '<th><button type="button">late</button></th>' in report and "late, 1 day(s)" in report and "on time" in report

    course.write_text('due = 2026-12-01T23:59:00+08:00\nlate_policy = "strict"\n', encoding="utf-8")
    broken = _cli("gradebook", "--out", out, no_grading=True)
    assert broken.returncode == 2 and "late_policy must be a table" in broken.stderr
    assert len(broken.stderr.strip().splitlines()) == 1
    course.unlink()
    assert _cli("gradebook", "--out", out, no_grading=True).returncode == 0
    assert grades(out)["alice"]["total"] == "100" and grades(out)["alice"]["penalty"] == "0"
    assert "Late penalty" not in (out / "alice" / "feedback.txt").read_text(encoding="utf-8")


def test_the_layouts_times_and_flags_reach_the_row():
    from grader import grade
    from grader.intake.layouts import Submission
    who = Submission("x.py", "x_10009", "10009", "X", "canvas")
    who.submitted_at, who.time_source = "2026-12-02T01:00:00+08:00", "canvas-file-time"
    who.late_flag, who.flags = True, ["the file's own name claims Canvas user 10000"]
    result = grade.Job(who, "x_10009").result([])
    row = gradebook.record(result)
    assert (row["submitted_at"], row["time_source"], row["late_flag"], row["flags"]) == (
        "2026-12-02T01:00:00+08:00", "canvas-file-time", True,
        ["the file's own name claims Canvas user 10000"])
    text = gradebook.gradebook_text(gradebook.final_rows([row]), [])
    line = next(csv.DictReader(io.StringIO(text)))
    assert (line["late"], line["submitted_at"], line["flags"]) == (
        "yes", "2026-12-02T01:00:00+08:00", "the file's own name claims Canvas user 10000")


def test_the_adjustment_is_said_once_in_the_students_language_and_removed_cleanly(tmp_path):
    from grader.report import adjustments
    folder = tmp_path / "wang"
    folder.mkdir()
    graded_text = "wang: 80 / 100 points\n"
    page = "<!DOCTYPE html>\n<html>\n<head></head>\n<body>\n<h1>wang</h1>\n</body>\n</html>\n"
    (folder / "feedback.txt").write_text(graded_text, encoding="utf-8")
    (folder / "feedback.html").write_text(page, encoding="utf-8")
    (folder / "results.json").write_text(json.dumps(
        {"score": 80.0, "output": graded_text, "extra_data": {"lang": "zh"}}), encoding="utf-8")
    row = _row("wang", "10000", submitted_at="2026-12-03T12:00:00+08:00",
               time_source="canvas-file-time")
    entry = overrides.entry_for([row], "10000", "mask", "40", "评分有误")
    from grader import course
    policy = course.from_data({"due": "2026-12-01T23:59:00+08:00",
                               "late_policy": {"kind": "per_day", "points": 5}})
    final = gradebook.final_rows([row], policy, [entry])[0]
    assert (final["raw_total"], final["penalty"], final["total"]) == (90.0, 10.0, 80.0)
    assert adjustments.apply(str(folder), final) is True
    assert adjustments.apply(str(folder), final) is False        # unchanged: not rewritten
    text = (folder / "feedback.txt").read_text(encoding="utf-8")
    assert "教师调整" in text and "mask：教师将 30 分改为 40 分。原因：评分有误" in text
    assert "迟交扣分：-10（迟交 2 天" in text and "最终得分：80 / 100" in text
    assert text.endswith(graded_text) and text.count("教师调整") == 1
    data = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    assert (data["score"], data["extra_data"]["raw_score"]) == (80.0, 80.0)
    # the override removed: only the penalty is left, said once
    final = gradebook.final_rows([row], policy, [])[0]
    assert adjustments.apply(str(folder), final) is True
    text = (folder / "feedback.txt").read_text(encoding="utf-8")
    assert text.count("教师调整") == 1 and "评分有误" not in text and "最终得分：70 / 100" in text
    assert (folder / "feedback.html").read_text(encoding="utf-8").count("<!-- instructor-adjustment -->") == 1
    # no adjustment at all: the files are as graded again
    assert adjustments.apply(str(folder), gradebook.final_rows([row], None, [])[0]) is True
    assert (folder / "feedback.txt").read_text(encoding="utf-8") == graded_text
    assert (folder / "feedback.html").read_text(encoding="utf-8") == page
    data = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    assert data["score"] == 80.0 and data["output"] == graded_text and "raw_score" not in data["extra_data"]


def test_report_lists_lateness_penalties_overrides_flags_and_what_to_review():
    from grader import course
    from grader.report import html as pages
    policy = course.from_data({"due": "2026-12-01T23:59:00+08:00",
                               "late_policy": {"kind": "per_day", "percent": 10}})
    rows = [_row("late_10004", "10004", submitted_at="2026-12-03T12:00:00+08:00",
                 time_source="canvas-file-time"),
            _row("gone_10003", "10003", status="missing work", total=0.0),
            _row("claim_10005", "10005", flags=["the file's own name claims Canvas user 10000"]),
            _row("err_10002", "10002", status="grader error", total=None, reason="worker died")]
    entry = overrides.entry_for(rows, "10005", "mask", "40", "regrade <granted>")
    page = pages.report_html(gradebook.final_rows(rows, policy, [entry]), charts=False)
    table = page[page.index("<h2>Submissions</h2>"):]
    assert '<td class="wrap">late, 2 day(s)</td><td class="num">-20</td>' in table
    assert "mask: 30 &rarr; 40 (regrade &lt;granted&gt;" in table
    review = page[page.index("<h2>To review</h2>"):page.index("<h2>Submissions</h2>")]
    assert "<strong>gone_10003</strong>: missing work" in review
    assert "<strong>claim_10005</strong>: the file&#x27;s own name claims Canvas user 10000" in review
    assert "<strong>err_10002</strong>: grader error: worker died" in review
    # 80 - 20 and 80 + 10: the statistics use the final scores, without missing work
    assert "mean 75.0" in page and "1 missing work, left out" in page


@pytest.mark.slow
def test_the_command_imports_lists_and_removes_without_grading(tmp_path):
    out = _gradebook_dir(tmp_path, [_row("wangli_10000", "10000"), _row("liu_10001", "10001")])
    sheet = tmp_path / "changes.csv"
    sheet.write_text("student,part,points,reason\n10000,mask (/40),40,regrade\n"
                     "liu_10001,total,0,integrity case 7\n", encoding="utf-8")
    done = _cli("override", "--out", out, "--import", sheet, no_grading=True)
    assert done.returncode == 0, done.stderr
    assert "imported 2 override(s)" in done.stdout
    rows = grades(out)
    assert (rows["wangli_10000"]["total"], rows["liu_10001"]["total"]) == ("90", "0")
    assert rows["wangli_10000"]["overrides"] == "mask 40 (regrade)"
    listed = _cli("override", "--out", out, "--list", no_grading=True).stdout
    assert "2 override(s) in effect, 2 entries" in listed and "set 10001 total 0: integrity case 7" in listed
    assert _cli("override", "--out", out, "--remove", "liu_10001", "total",
                no_grading=True).returncode == 0
    assert grades(out)["liu_10001"]["total"] == "80"
    usage = _cli("override", "--out", out, "10000", "mask", no_grading=True)
    assert usage.returncode == 2 and "give STUDENT PART POINTS" in usage.stderr
    missing = _cli("override", "--out", tmp_path / "nowhere", "10000", "mask", "1", "--reason", "r")
    assert missing.returncode == 2 and "is not a gradebook folder" in missing.stderr


GRADESCOPE_METADATA = """---
submission_31000001:
  :submitters:
  - :name: Jane Doe
    :sid: '12345'
  :created_at: 2026-12-01 09:00:00.000000000 -08:00
submission_31000002:
  :submitters:
  - :name: Li Lei
    :sid: '12346'
  - :name: Han Meimei
    :sid: '12347'
  :created_at: 2026-12-02 13:00:00.000000000 -08:00
"""


@pytest.mark.slow
def test_canvas_moodle_and_gradescope_through_policy_override_regrade_and_export(tmp_path):
    source = open(SOLUTION, encoding="utf-8").read()
    zero = open(os.path.join(SUBMISSIONS, "zero_stub.py"), encoding="utf-8").read()
    canvas = tmp_path / "canvas"
    canvas.mkdir()
    (canvas / "wangli_10000_90000_attention.py").write_text(source, encoding="utf-8")
    (canvas / "liuyang_LATE_10001_90001_attention.py").write_text(source, encoding="utf-8")
    (canvas / "zhaomin_10002_90002_attention.py").write_text(zero, encoding="utf-8")
    moodle = tmp_path / "moodle"
    fang = moodle / "Fang Wu_10006_assignsubmission_file_"
    fang.mkdir(parents=True)
    (fang / "attention.py").write_text(source, encoding="utf-8")
    # Moodle's zip says 2026-12-03 12:00 (no zone; the server is in Shanghai); unzip writes
    # that wall clock in this machine's zone, as time.mktime reads it
    late = time.mktime((2026, 12, 3, 12, 0, 0, 0, 0, -1))
    os.utime(fang / "attention.py", (late, late))
    empty = moodle / "Zhou Tao_10007_assignsubmission_file_"
    empty.mkdir()
    (empty / "notes.txt").write_text("I will send it by email", encoding="utf-8")
    gradescope = tmp_path / "assignment_4242_export"
    gradescope.mkdir()
    (gradescope / "submission_metadata.yml").write_text(GRADESCOPE_METADATA, encoding="utf-8")
    for ident in ("31000001", "31000002"):
        (gradescope / f"submission_{ident}").mkdir()
        (gradescope / f"submission_{ident}" / "attention.py").write_text(source, encoding="utf-8")
    out = tmp_path / "grades"
    out.mkdir()
    (out / "course.toml").write_text('due = 2026-12-01T23:59:00+08:00\ntimezone = "Asia/Shanghai"\n'
                                     '[late_policy]\nkind = "per_day"\npercent = 10\n'
                                     'unknown_days = 1\n[extensions]\n"12347" = { days = 3 }\n',
                                     encoding="utf-8")
    done = _grade([canvas, moodle, gradescope], out)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = {r["student_id"]: r for r in grades(out).values()}
    # Canvas's LATE without a time: 1 day at 10%; Fang Wu's Moodle file time: 2 days
    assert {i: (r["late"], r["penalty"], r["total"]) for i, r in rows.items()} == {
        "10000": ("no", "0", "100"), "10001": ("yes", "10", "90"), "10002": ("no", "0", "0"),
        "10006": ("yes", "20", "80"), "10007": ("yes", "0", "0"),  # notes.txt was written today
        # Gradescope's created_at: Jane 1 hour late (1 day); the group has a member's extension
        "12345": ("yes", "10", "90"), "12346;12347": ("no", "0", "100")}
    assert rows["12345"]["time_source"] == "gradescope-metadata"
    assert rows["10006"]["time_source"] == "moodle-file-time"
    assert rows["10007"]["status"] == "missing work"
    assert "late without a time" in rows["10001"]["flags"]

    assert _cli("override", "--out", out, "10002", "total", "50", "--reason",
                "partial credit after a meeting").returncode == 0
    forced = _grade([canvas], out, "--force")
    assert forced.returncode == 0 and "unchanged" not in forced.stdout
    rows = {r["student_id"]: r for r in grades(out).values()}
    assert (rows["10002"]["total"], rows["10001"]["total"], rows["10006"]["total"]) == ("50", "90", "80")
    # the two ways of building the gradebook agree: grader grade's and grader gradebook's
    graded = (out / "grades.csv").read_bytes()
    assert _cli("gradebook", "--out", out, no_grading=True).returncode == 0
    assert (out / "grades.csv").read_bytes() == graded

    target = tmp_path / "canvas.csv"
    assert _export(out, "canvas", target, "--assignment", "Attention (12345)").returncode == 0
    lines = list(csv.reader(io.StringIO(target.read_text(encoding="utf-8-sig"))))
    assert sorted(lines[2:]) == [["Han Meimei", "", "12347", "", "", "100"],
                                 ["Jane Doe", "", "12345", "", "", "90"],
                                 ["Li Lei", "", "12346", "", "", "100"],
                                 ["liuyang", "10001", "", "", "", "90"],
                                 ["wangli", "10000", "", "", "", "100"],
                                 ["zhaomin", "10002", "", "", "", "50"]]
    sheet = tmp_path / "moodle.csv"
    left = _export(out, "moodle", sheet)
    assert [line[:4] for line in csv.reader(io.StringIO(sheet.read_text(encoding="utf-8-sig")))][1:] \
        == [["Participant 10006", "Fang Wu", "80", "100"]]
    assert "no gradable work was found" in left.stderr
    _export(out, "moodle", sheet, "--export-missing-as-zero")
    assert [line[:3] for line in csv.reader(io.StringIO(sheet.read_text(encoding="utf-8-sig")))][1:] \
        == [["Participant 10006", "Fang Wu", "80"], ["Participant 10007", "Zhou Tao", "0"]]


def test_an_adjustment_keeps_a_full_results_json_valid_and_under_its_cap(tmp_path):
    from grader import files
    from grader.report import adjustments
    folder = tmp_path / "big"
    folder.mkdir()
    tests = [{"name": f"t{i}", "score": 0, "max_score": 1, "output": "x" * 9000} for i in range(115)]
    data = {"score": 80.0, "output": "summary\n", "tests": tests, "extra_data": {"lang": "en"}}
    text = files.dumps(data)
    assert files.RESULTS_BYTES - 20000 < len(text.encode("utf-8")) <= files.RESULTS_BYTES
    (folder / "results.json").write_text(text, encoding="utf-8")
    row = _row("big", "1")
    entry = overrides.entry_for([row], "1", "total", "90", "r" * 1000)
    assert adjustments.apply(str(folder), gradebook.final_rows([row], None, [entry])[0])
    raw = (folder / "results.json").read_bytes()
    assert len(raw) <= files.RESULTS_BYTES
    assert json.loads(raw)["score"] == 90.0 and len(json.loads(raw)["tests"]) == 115


@pytest.mark.slow
def test_an_override_that_applies_to_no_row_is_said_everywhere(tmp_path):
    rows = [_row("wangli_10000", "10000"), _row("liu_10001", "10001")]
    out = _gradebook_dir(tmp_path, rows)
    assert _cli("override", "--out", out, "10001", "total", "0", "--reason", "integrity case 7",
                no_grading=True).returncode == 0
    # a later download says liu's id is not to be trusted: the row keeps no student id
    gradebook.save_record(dict(rows[1], student_id=""), str(out))
    done = _cli("gradebook", "--out", out, no_grading=True)
    said = "the override of 10001's total (0, integrity case 7) applies to no row"
    assert done.returncode == 0 and said in done.stderr
    assert said.replace("'", "&#x27;") in (out / "report.html").read_text(encoding="utf-8")
    assert grades(out)["liu_10001"]["total"] == "80"
    exported = _export(out, "canvas", tmp_path / "c.csv", "--assignment", "A (1)")
    assert said in exported.stderr
    # ended by the ledger's own key, though no row has it any more
    done = _cli("override", "--out", out, "--remove", "10001", "total", no_grading=True)
    assert done.returncode == 0 and "applies to no row" not in done.stderr
    assert json.loads((out / "overrides.json").read_text(encoding="utf-8"))["entries"][-1]["action"] == "remove"


@pytest.mark.slow
def test_an_override_of_a_part_the_row_no_longer_has_can_still_be_removed(tmp_path):
    rows = [_row("wangli_10000", "10000")]
    out = _gradebook_dir(tmp_path, rows)
    assert _cli("override", "--out", out, "10000", "mask", "35", "--reason", "r",
                no_grading=True).returncode == 0
    # regraded against a suite whose part is now called sequence_mask
    gradebook.save_record(dict(rows[0], parts={"sequence_mask": [30.0, 40.0],
                                               "softmax": [50.0, 60.0]}), str(out))
    assert _cli("gradebook", "--out", out, no_grading=True).returncode == 0
    assert "an override names a part this row no longer has: mask" in grades(out)["wangli_10000"]["flags"]
    assert _cli("override", "--out", out, "--remove", "10000", "mask", no_grading=True).returncode == 0
    assert grades(out)["wangli_10000"]["flags"] == ""


# ---- at its edges (issue 19, from tests/test_mutants_overrides.py) --------------------------
# grader/overrides.py at its edges (issue 19): the documented caps as literals, each bound
# on both sides, each refusal by its whole reason, and a ledger that does not read is an
# error with the entry and the field it names.

def _edge_row(name, student_id="", status="graded", total=80.0, parts=None):
    return {"name": name, "status": status, "total": total, "max": 100.0,
            "parts": parts or {"mask": [30.0, 40.0], "softmax": [50.0, 60.0]},
            "student_id": student_id}


EDGE_ROWS = [_edge_row("wangli_10000", "10000"), _edge_row("liu_10001", "10001"),
             _edge_row("pair", "20001;20002"), _edge_row("noid")]


def test_the_documented_caps():
    assert overrides.FILE == "overrides.json"
    assert overrides.MAX_BYTES == 16 * 1_048_576
    assert overrides.MAX_IMPORT_BYTES == 1_048_576
    assert overrides.MAX_IMPORT_ROWS == 10000
    assert overrides.MAX_POINTS == 1_000_000
    assert overrides.TOTAL == "total"


def test_who_is_sudo_user_then_user(monkeypatch):
    monkeypatch.setenv("SUDO_USER", "prof")
    monkeypatch.setenv("USER", "root")
    assert overrides.who() == "prof"
    monkeypatch.delenv("SUDO_USER")
    assert overrides.who() == "root"
    monkeypatch.setenv("USER", "ta\x1b[31m")
    assert "\x1b" not in overrides.who()


def test_now_is_utc_to_the_second():
    stamp = overrides.now()
    assert stamp.endswith("+00:00") and len(stamp) == len("2026-12-01T23:59:00+00:00")


def test_a_row_is_found_by_its_name_or_its_whole_id_never_by_one_member_of_a_group():
    assert overrides.find_row(EDGE_ROWS, " pair ")["name"] == "pair"
    # issue 27: one member's id is not the group's (its score is both members')
    with pytest.raises(OverrideError, match="'20002' is one member of the group submission 'pair'"):
        overrides.find_row(EDGE_ROWS, "20002")
    assert overrides.find_row(EDGE_ROWS, "20001;20002")["name"] == "pair"
    assert overrides.find_row(EDGE_ROWS, "noid")["name"] == "noid"
    # a row without an id is recorded under its name
    assert overrides.entry_for(EDGE_ROWS, "noid", "mask", 1, "r")["student"] == "noid"
    assert overrides.row_key({"student_id": None, "name": "x"}) == "x"
    assert overrides.row_key({}) == ""


def test_no_row_lists_at_most_20_students_and_says_how_many_more():
    rows = [_edge_row(f"s{i:02d}", f"1{i:04d}") for i in range(23)]
    with pytest.raises(OverrideError) as error:
        overrides.find_row(rows, "carl")
    shown = ", ".join(f"1{i:04d}" for i in range(20))
    assert str(error.value) == f"no row for student 'carl' in the gradebook (students: {shown} and 3 more)"
    with pytest.raises(OverrideError) as error:
        overrides.find_row(rows[:20], "carl")
    assert str(error.value).endswith(f"(students: {shown})")


def test_many_matches_name_at_most_10():
    rows = [_edge_row(f"d{i:02d}", "7") for i in range(12)]
    with pytest.raises(OverrideError) as error:
        overrides.find_row(rows, "7")
    names = ", ".join(f"d{i:02d}" for i in range(10))
    assert str(error.value) == f"'7' matches 12 rows ({names}); give the submission name as in grades.csv"


def test_points_bounds_are_inclusive():
    assert overrides.entry_for(EDGE_ROWS, "10000", "mask", "40", "r")["points"] == 40.0
    assert overrides.entry_for(EDGE_ROWS, "10000", "mask", "0", "r")["points"] == 0.0
    assert overrides.entry_for(EDGE_ROWS, "10000", "total", "100", "r")["points"] == 100.0
    assert overrides.entry_for(EDGE_ROWS, "10000", "mask", "1000000", "r", allow_bonus=True)["points"] == 1e6
    with pytest.raises(OverrideError) as error:
        overrides.entry_for(EDGE_ROWS, "10000", "mask", "1000000.5", "r", allow_bonus=True)
    assert str(error.value) == "points above 1e+06"
    with pytest.raises(OverrideError) as error:
        overrides.entry_for(EDGE_ROWS, "10000", "mask", "-0.5", "r")
    assert str(error.value) == "points must be 0 or more, got -0.5"
    with pytest.raises(OverrideError) as error:
        overrides.entry_for(EDGE_ROWS, "10000", "mask", "inf", "r", allow_bonus=True)
    assert str(error.value) == "points must be 0 or more, got inf"
    with pytest.raises(OverrideError) as error:
        overrides.entry_for(EDGE_ROWS, "10000", "mask", "40.5", "r")
    assert str(error.value) == "40.5 is more than mask's 40 points (--allow-bonus to give more)"
    assert overrides.entry_for(EDGE_ROWS, "10000", "mask", "1.234567", "r")["points"] == 1.2346


def test_an_entry_has_every_field_and_a_one_line_reason(monkeypatch):
    monkeypatch.setenv("SUDO_USER", "prof")
    entry = overrides.entry_for(EDGE_ROWS, "wangli_10000", "mask (/40)", "35", " re-marked\nby hand ",
                                at="2026-12-05T00:00:00+00:00")
    assert entry == {"time": "2026-12-05T00:00:00+00:00", "who": "prof", "action": "set",
                     "student": "10000", "submission": "wangli_10000", "part": "mask",
                     "reason": "re-marked by hand", "points": 35.0}
    # a header of a part the row does not have is kept as given (and refused for a set)
    with pytest.raises(OverrideError) as error:
        overrides.entry_for(EDGE_ROWS, "10000", "attention (/5)", "1", "r")
    assert str(error.value) == "wangli_10000 has no part 'attention (/5)' (parts: mask, softmax, total)"
    # a remove needs no points and no reason, and names no part it checks
    gone = overrides.entry_for(EDGE_ROWS, "10000", "renamed", None, None, action="remove")
    assert gone["part"] == "renamed" and "points" not in gone and gone["reason"] == ""


def test_a_remove_of_a_grader_error_row_is_allowed():
    rows = [_edge_row("err", "1", status="grader error", total=None)]
    assert overrides.entry_for(rows, "1", "mask", None, "", action="remove")["action"] == "remove"
    with pytest.raises(OverrideError) as error:
        overrides.entry_for(rows, "1", "mask", "1", "r")
    assert str(error.value) == "err is a grader error, not a score: regrade it first (grader grade ... --force)"


def _ledger(tmp_path, data):
    path = tmp_path / "overrides.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return str(tmp_path)


GOOD = {"time": "t", "who": "w", "action": "set", "student": "1", "part": "mask",
        "points": 3, "reason": "r"}


@pytest.mark.parametrize("entry, says", [
    ({**GOOD, "extra": 1}, "entry 2: not an override entry"),
    ([GOOD], "entry 2: not an override entry"),
    ({**GOOD, "who": 5}, "entry 2: who must be text"),
    ({**GOOD, "student": None}, "entry 2: student must be text"),
    ({**GOOD, "part": ["mask"]}, "entry 2: part must be text"),
    ({**GOOD, "reason": None}, "entry 2: reason must be text"),
    ({**GOOD, "action": "delete"}, "entry 2: action must be set or remove"),
    ({**GOOD, "points": True}, "entry 2: points must be a number from 0 to 1e+06"),
    ({**GOOD, "points": "3"}, "entry 2: points must be a number from 0 to 1e+06"),
    ({**GOOD, "points": -1}, "entry 2: points must be a number from 0 to 1e+06"),
    ({**GOOD, "points": 1000001}, "entry 2: points must be a number from 0 to 1e+06"),
])
def test_a_ledger_entry_that_does_not_check_is_an_error(tmp_path, entry, says):
    out = _ledger(tmp_path, {"entries": [GOOD, entry]})
    with pytest.raises(OverrideError) as error:
        overrides.load(out)
    assert str(error.value) == f"overrides.json: {says}"


def test_a_ledger_at_its_bounds_loads(tmp_path):
    edge = [{**GOOD, "points": 0}, {**GOOD, "points": 1000000},
            {**GOOD, "action": "remove", "points": None}]
    assert overrides.load(_ledger(tmp_path, {"entries": edge})) == edge


def test_a_ledger_that_does_not_read_says_why(tmp_path):
    path = tmp_path / "overrides.json"
    for text, says in (('{"entries": {}}', "no entries list"), ("[]", "no entries list"),
                       ("{", "does not read as the overrides ledger")):
        path.write_text(text, encoding="utf-8")
        with pytest.raises(OverrideError) as error:
            overrides.load(str(tmp_path))
        assert str(error.value).startswith(f"{path}: {says}")
    path.write_bytes(b"{" + b" " * (16 * 1_048_576 - 2) + b"}")
    with pytest.raises(OverrideError) as error:
        overrides.load(str(tmp_path))
    assert str(error.value).startswith(f"{path}: no entries list")   # 16 MB exactly: read
    path.write_bytes(b"{" + b" " * (16 * 1_048_576 - 1) + b"}")
    with pytest.raises(OverrideError) as error:
        overrides.load(str(tmp_path))
    assert str(error.value) == f"{path}: larger than 16 MB"
    os.remove(path)
    os.symlink(tmp_path / "elsewhere.json", path)
    with pytest.raises(OverrideError) as error:
        overrides.load(str(tmp_path))
    assert str(error.value) == f"{path}: not a regular file"


def test_append_keeps_what_was_there(tmp_path):
    first = overrides.entry_for(EDGE_ROWS, "10000", "mask", "1", "one", at="t1")
    second = overrides.entry_for(EDGE_ROWS, "10001", "mask", "2", "two", at="t2")
    overrides.append(str(tmp_path), [first])
    assert overrides.append(str(tmp_path), [second]) == [first, second]
    assert overrides.load(str(tmp_path)) == [first, second]


def test_an_import_checks_its_size_columns_and_lines(tmp_path):
    path = tmp_path / "in.csv"
    head = b"student,part,points,reason\n" + (b"10000,mask,3," + b"r" * 100_000 + b"\n") * 10
    last = b"10000,mask,3,"
    path.write_bytes(head + last + b"r" * (1_048_576 - len(head) - len(last) - 1) + b"\n")
    assert path.stat().st_size == 1_048_576
    assert len(overrides.read_import(str(path), EDGE_ROWS)) == 11     # 1 MB exactly
    path.write_bytes(head + last + b"r" * (1_048_576 - len(head) - len(last)) + b"\n")
    with pytest.raises(OverrideError) as error:
        overrides.read_import(str(path), EDGE_ROWS)
    assert str(error.value) == f"{path}: larger than 1 MB"
    # a field over csv's own limit (128 KB) is the file's fault, said as such (it crashed)
    path.write_bytes(b"student,part,points,reason\n10000,mask,3," + b"r" * 200_000 + b"\n")
    with pytest.raises(OverrideError) as error:
        overrides.read_import(str(path), EDGE_ROWS)
    assert str(error.value) == (f"{path}: not CSV as expected "
                                f"(field larger than field limit (131072))")
    path.write_bytes(b"student,part,points,reason\n10000,mask,3,\xff\n")
    with pytest.raises(OverrideError) as error:
        overrides.read_import(str(path), EDGE_ROWS)
    assert str(error.value) == f"{path}: not UTF-8 text"
    # headers in any case and spacing
    path.write_text(" Student , PART,points,Reason\n10000,mask,3,r\n", encoding="utf-8")
    assert overrides.read_import(str(path), EDGE_ROWS)[0]["part"] == "mask"
    with pytest.raises(OverrideError) as error:
        overrides.read_import(str(tmp_path / "none.csv"), EDGE_ROWS)
    assert str(error.value).startswith(f"{tmp_path / 'none.csv'}: cannot read it (")


def test_an_import_of_10000_lines_is_read_and_one_more_is_refused(tmp_path):
    path = tmp_path / "in.csv"
    path.write_text("student,part,points,reason\n" + "10000,mask,3,r\n" * 10000, encoding="utf-8")
    assert len(overrides.read_import(str(path), EDGE_ROWS)) == 10000
    path.write_text("student,part,points,reason\n" + "10000,mask,3,r\n" * 10001, encoding="utf-8")
    with pytest.raises(OverrideError) as error:
        overrides.read_import(str(path), EDGE_ROWS)
    assert str(error.value) == f"{path}: more than 10000 lines"


def test_an_import_lists_the_first_5_problems_and_how_many_more(tmp_path):
    path = tmp_path / "in.csv"
    path.write_text("student,part,points,reason\n10000,mask,3,ok\n" + "10000,mask,99,no\n" * 7,
                    encoding="utf-8")
    with pytest.raises(OverrideError) as error:
        overrides.read_import(str(path), EDGE_ROWS)
    says = "; ".join(f"line {n}: 99 is more than mask's 40 points (--allow-bonus to give more)"
                     for n in range(3, 8))
    assert str(error.value) == f"{path}: nothing imported: {says} (and 2 more)"
    path.write_text("student,part,points,reason\n" + "10000,mask,99,no\n" * 5, encoding="utf-8")
    with pytest.raises(OverrideError) as error:
        overrides.read_import(str(path), EDGE_ROWS)
    assert str(error.value).endswith("line 6: 99 is more than mask's 40 points (--allow-bonus to give more)")
    # a short line: empty fields, refused by reason, not by a crash
    path.write_text("student,part,points,reason\n10000\n", encoding="utf-8")
    with pytest.raises(OverrideError, match="line 2: 10000 has no part ''|line 2: wangli_10000 has no part ''"):
        overrides.read_import(str(path), EDGE_ROWS)
    # --allow-bonus reaches every line of an import
    path.write_text("student,part,points,reason\n10000,mask,45,bonus\n", encoding="utf-8")
    assert overrides.read_import(str(path), EDGE_ROWS, allow_bonus=True)[0]["points"] == 45.0


def test_what_a_person_typed_is_cut_at_its_documented_length(monkeypatch):
    """who: 100 characters; the reason: 1000 (one line); a submission name in a refusal: 100;
    points that do not read, in a refusal: 40."""
    monkeypatch.delenv("SUDO_USER", raising=False)
    monkeypatch.setenv("USER", "u" * 150)
    assert len(overrides.who()) == 100
    entry = overrides.entry_for(EDGE_ROWS, "10000", "mask", "3", "r" * 1500)
    assert len(entry["reason"]) == 1000 and "\n" not in entry["reason"]
    assert entry["reason"].startswith("r" * 900)
    rows = [_edge_row("e" * 150, "1", status="grader error", total=None)]
    with pytest.raises(OverrideError) as error:
        overrides.entry_for(rows, "1", "mask", "1", "r")
    tail = " is a grader error, not a score: regrade it first (grader grade ... --force)"
    assert str(error.value).endswith(tail) and len(str(error.value)) == 100 + len(tail)
    with pytest.raises(OverrideError) as error:
        overrides.entry_for(EDGE_ROWS, "10000", "mask", "-" + "1" * 60, "r")
    assert len(str(error.value)) == len("points must be 0 or more, got ") + 40


def test_each_name_in_a_refusal_is_cut_at_its_length():
    """A student as typed: 100 characters; a row's name: 100 (60 in a list of matches); a
    part: 100; points that do not read: 40."""
    with pytest.raises(OverrideError) as error:
        overrides.find_row(EDGE_ROWS, "c" * 150)
    assert str(error.value).startswith(f"no row for student {overrides.safe_text('c' * 150, 100)!r} in")
    rows = [_edge_row("n" * 150 + str(i), "7") for i in range(2)]
    with pytest.raises(OverrideError) as error:
        overrides.find_row(rows, "7")
    cut = overrides.safe_text("n" * 151, 60)
    assert str(error.value) == f"'7' matches 2 rows ({cut}, {cut}); give the submission name as in grades.csv"
    long = [_edge_row("m" * 150, "8")]
    with pytest.raises(OverrideError) as error:
        overrides.entry_for(long, "8", "p" * 150, "1", "r")
    name, part = overrides.safe_text("m" * 150, 100), overrides.safe_text("p" * 150, 100)
    assert str(error.value) == f"{name} has no part {part!r} (parts: mask, softmax, total)"
    with pytest.raises(OverrideError) as error:
        overrides.entry_for(EDGE_ROWS, "10000", "mask", "x" * 60, "r")
    assert str(error.value) == f"points must be a number, got {overrides.safe_text('x' * 60, 40)!r}"
    assert len(overrides.safe_text("x" * 60, 40)) == 40


def test_a_row_without_a_maximum_takes_no_total_above_0():
    row = _edge_row("nomax", "9")
    row["max"] = None
    with pytest.raises(OverrideError) as error:
        overrides.entry_for([row], "9", "total", "1", "r")
    assert str(error.value) == "1 is more than total's 0 points (--allow-bonus to give more)"


def test_a_link_or_a_folder_is_no_ledger(tmp_path):
    real = tmp_path / "real.json"
    real.write_text('{"entries": []}', encoding="utf-8")
    os.symlink(real, tmp_path / "overrides.json")
    with pytest.raises(OverrideError) as error:
        overrides.load(str(tmp_path))
    assert str(error.value) == f"{tmp_path / 'overrides.json'}: not a regular file"
    os.remove(tmp_path / "overrides.json")
    os.mkdir(tmp_path / "overrides.json")
    with pytest.raises(OverrideError) as error:
        overrides.load(str(tmp_path))
    assert str(error.value) == f"{tmp_path / 'overrides.json'}: not a regular file"


def test_the_ledger_keeps_chinese_readable(tmp_path):
    rows = [_edge_row("王丽_10000", "10000")]
    overrides.append(str(tmp_path), [overrides.entry_for(rows, "10000", "mask", "3", "重新评分")])
    assert "重新评分" in (tmp_path / "overrides.json").read_text(encoding="utf-8")


def test_six_problems_say_one_more(tmp_path):
    path = tmp_path / "in.csv"
    path.write_text("student,part,points,reason\n" + "10000,mask,99,no\n" * 6, encoding="utf-8")
    with pytest.raises(OverrideError) as error:
        overrides.read_import(str(path), EDGE_ROWS)
    assert str(error.value).endswith("line 6: 99 is more than mask's 40 points (--allow-bonus to give more) (and 1 more)")


def test_a_ledger_that_is_a_regular_file_but_does_not_open_says_why(tmp_path):
    """A ledger its reader may not open (mode 000; root reads anything, so as root the load
    runs in a forked child that has become `nobody`): the reason names the file and the
    system's error; it is not a crash."""
    import shutil
    import tempfile

    as_root = os.geteuid() == 0
    # as root: a folder `nobody` can enter (pytest's own tmp_path is root's alone)
    folder = tempfile.mkdtemp(prefix="attnkit-ledger-") if as_root else str(tmp_path)
    try:
        os.chmod(folder, 0o755)
        path = os.path.join(folder, "overrides.json")
        with open(path, "w", encoding="utf-8") as handle:
            handle.write('{"entries": []}')
        os.chmod(path, 0)
        expected = (f"{path}: does not read as the overrides ledger "
                    f"([Errno 13] Permission denied: '{path}')")
        said = _load_as_nobody(folder) if as_root else _load(folder)
        assert said == "refused: " + expected
    finally:
        if as_root:
            shutil.rmtree(folder, ignore_errors=True)


def _load(folder):
    try:
        return f"loaded {overrides.load(folder)}"
    except OverrideError as error:
        return f"refused: {error}"
    except Exception as error:  # what the test must not see
        return f"crashed: {type(error).__name__}: {error}"


def _load_as_nobody(folder):
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: nobody, then the load, its outcome down the pipe
        try:
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            said = _load(folder)
        except BaseException as error:
            said = f"child failed: {error}"
        os.write(write, said.encode("utf-8"))
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        said = pipe.read().decode("utf-8")
    os.waitpid(pid, 0)
    return said
