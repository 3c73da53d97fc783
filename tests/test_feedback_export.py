"""What issue 27 added around the gradebook, at its edges and without grading anything: the
feedback returned through each LMS (grader/platforms/: canvas/comments.py, moodle.py), the
Canvas template (grader/platforms/canvas/scores.py), `grader show`, the console's final
scores, estimate and summary (grader/report/console.py) and release's given-code notice. Rows and files are written
directly; the round trips through each LMS's importer are in test_platforms.py."""
import csv
import io
import json
import os
import subprocess
import sys
import zipfile

import pytest

from grader import overrides
from grader.platforms import exports
from grader.platforms import feedback as platform_feedback
from grader.platforms.canvas import comments as canvas_comments
from grader.platforms.canvas import scores as canvas_scores
from grader.platforms.moodle import feedback_zip as moodle_feedback_zip
from grader.platforms.moodle import worksheet as moodle_worksheet
from grader.report import adjustments, console, gradebook
from grading import run_grader


def _row(name, student_id, layout="moodle", **more):
    row = {"name": name, "status": "graded", "total": 80.0, "max": 100.0,
           "parts": {"mask": [30.0, 40.0], "softmax": [50.0, 60.0]}, "reason": "",
           "source": "", "folder": name, "fingerprint": None, "student_id": student_id,
           "student_name": name.rsplit("_", 1)[0], "layout": layout}
    row.update(more)
    return row


def _gradebook(tmp_path, rows, feedback=None):
    """DIR with each row and its files as grader grade leaves them (the adjustment in sync)."""
    out = tmp_path / "grades"
    out.mkdir()
    for row in rows:
        folder = out / row["folder"]
        folder.mkdir()
        gradebook.save_record(row, str(out))
        (folder / "feedback.txt").write_text((feedback or {}).get(row["name"], f"{row['name']}: "
                                             f"80 / 100 points\n"), encoding="utf-8")
        (folder / "feedback.html").write_text(f"<!DOCTYPE html><title>{row['name']}</title>",
                                              encoding="utf-8")
        (folder / "results.json").write_text(json.dumps({"score": 80.0, "output": "",
                                                         "extra_data": {"lang": "en"}}),
                                             encoding="utf-8")
    return out


def test_a_students_feedback_is_returned_only_when_it_shows_the_exported_score(tmp_path):
    rows = [_row("Fang Wu_10006", "10006"), _row("Li Lei_10007", "10007")]
    out = _gradebook(tmp_path, rows)
    entry = overrides.entry_for(rows, "10007", "total", "95", "regrade")
    final = gradebook.final_rows(rows, None, [entry])
    # Li Lei's files were written before the override: his feedback says 80, the export 95
    text, notes = moodle_worksheet.moodle_rows(str(out), final, now=0)
    lines = list(csv.reader(io.StringIO(text)))
    assert lines[0][-1] == "Feedback comments" and lines[0].index("Feedback comments") > 0
    assert [line[:3] + [line[-1]] for line in lines[1:]] == [
        ["Participant 10006", "Fang Wu", "80", "<pre>Fang Wu_10006: 80 / 100 points\n</pre>"],
        ["Participant 10007", "Li Lei", "95", ""]]
    assert notes == ["left out Li Lei_10007's feedback: its feedback files do not show the final "
                     "score (run grader gradebook with the same course file, then export again)"]
    # the gradebook rebuilt: his files say 95, and his feedback goes with it
    adjustments.sync(str(out), final)
    text, notes = moodle_worksheet.moodle_rows(str(out), final, now=0)
    comment = list(csv.reader(io.StringIO(text)))[2][-1]
    assert notes == [] and "Final score: 95 of 100" in comment


def test_a_comment_is_escaped_html_with_no_quote_and_capped(tmp_path):
    said = 'x = "a\\"b" <b> & \u4e2d\n'
    assert moodle_worksheet.moodle_comment(said) == \
        "<pre>x = &quot;a\\&quot;b&quot; &lt;b&gt; &amp; \u4e2d\n</pre>"
    rows = [_row("Fang Wu_10006", "10006")]
    out = _gradebook(tmp_path, rows, {"Fang Wu_10006": "y" * (40 * 1024)})
    text, _page, why = platform_feedback.feedback_of(str(out), gradebook.final_rows(rows)[0])
    assert why is None and len(text.encode("utf-8")) <= platform_feedback.RETURN_BYTES == 32 * 1024
    assert text.startswith("y" * 1000) and "bytes" in text[-100:]


def test_the_moodle_zip_names_each_folder_so_moodle_finds_the_participant(tmp_path):
    rows = [_row("Anna_Maria Li_10006", "10006", student_name="Anna_Maria/Li"),
            _row(".hidden_10007", "10007", student_name="~.Zhou"),
            _row("wangli_10000", "10000", layout="canvas")]
    out = _gradebook(tmp_path, rows)
    count, notes = moodle_feedback_zip.moodle_zip(str(out), gradebook.final_rows(rows),
                                              str(tmp_path / "f.zip"))
    with zipfile.ZipFile(tmp_path / "f.zip") as archive:
        names = sorted(archive.namelist())
    # a `_` or `/` in a name would move the participant id (Moodle splits on `_`): spaces
    assert names == ["Anna Maria Li_10006_assignfeedback_file_/feedback.html",
                     "Anna Maria Li_10006_assignfeedback_file_/feedback.txt",
                     "Zhou_10007_assignfeedback_file_/feedback.html",
                     "Zhou_10007_assignfeedback_file_/feedback.txt"]
    assert count == 2 and notes == ["left out wangli_10000: not from a Moodle download, so it "
                                    "has no Moodle participant id"]


def test_canvas_comments_address_each_student_as_the_score_export_does(tmp_path):
    rows = [_row("wangli_10000", "10000", layout="canvas"),
            _row("group", "12346;12347", layout="gradescope", student_name="Li Lei;Han Meimei"),
            _row("zhoutao", "zhoutao", layout="nbgrader"),
            _row("Fang Wu_10006", "10006")]
    out = _gradebook(tmp_path, rows)
    comments, notes = canvas_comments.canvas_comments(str(out), gradebook.final_rows(rows),
                                                      str(tmp_path / "c"))
    assert sorted((c["user"], c["name"]) for c in comments) == [
        ("10000", "wangli"), ("sis_login_id:zhoutao", "zhoutao"),
        ("sis_user_id:12346", "Li Lei"), ("sis_user_id:12347", "Han Meimei")]
    assert notes == ["left out Fang Wu_10006: its id is a Moodle participant id, which Canvas "
                     "does not know"]
    script = tmp_path / "c" / "post_comments.py"
    assert os.access(script, os.X_OK)
    done = subprocess.run([sys.executable, str(script), "--canvas", "https://canvas.example.edu",
                           "--course", "1", "--assignment", "2"], capture_output=True,
                          text=True, timeout=60, env={"PATH": os.environ.get("PATH", "")})
    assert done.returncode == 2 and "set CANVAS_TOKEN" in done.stderr


TEMPLATE = [["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Attention (12345)",
             "Attention quiz (999)", "Transformer (777)", "Current Score"],
            ["    Points Possible", "", "", "", "", "100", "10", "100", "(read only)"]]


def test_the_template_column_is_the_one_asked_for_or_the_one_named_after_the_assignment():
    assert canvas_scores.template_column(TEMPLATE, None, "Attention") == "Attention (12345)"
    assert canvas_scores.template_column(TEMPLATE, "Transformer (777)", "Attention") == "Transformer (777)"
    with pytest.raises(exports.ExportError) as refused:
        canvas_scores.template_column(TEMPLATE, "Transformer (1)", "Attention")
    assert str(refused.value).startswith("--assignment 'Transformer (1)' is not a column of the "
                                         "template (its assignments: Attention (12345), ")
    with pytest.raises(exports.ExportError) as refused:
        canvas_scores.template_column(TEMPLATE, None, "Essay")
    assert str(refused.value).startswith("the template has 0 column(s) named 'Essay'; give the "
                                         "column with --assignment")
    doubled = [TEMPLATE[0] + ["Attention (4)"], TEMPLATE[1] + ["5"]]
    with pytest.raises(exports.ExportError, match=r"has 2 column\(s\) named 'Attention' "
                                                 r"\(Attention \(12345\), Attention \(4\)\)"):
        canvas_scores.template_column(doubled, None, "Attention")


def test_show_prints_one_students_final_row(tmp_path):
    rows = [_row("wangli_10000", "10000", layout="canvas", late_flag=True,
                 diagnoses=["mha-repeat"]), _row("liu_10001", "10001", layout="canvas")]
    out = _gradebook(tmp_path, rows)
    (out / "course.toml").write_text('due = 2026-12-01T23:59:00+08:00\n[late_policy]\n'
                                     'kind = "per_day"\npercent = 10\n', encoding="utf-8")
    overrides.append(str(out), [overrides.entry_for(rows, "10000", "mask", "40", "regrade")])
    (out / "wangli_10000" / "results.json").write_text(json.dumps({"extra_data": {
        "diagnoses": [{"part": "softmax", "mistake": "mha-repeat", "text": "repeat\nmore"}]}}),
        encoding="utf-8")
    done = run_grader("show", "10000", "--gradebook", str(out), timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "wangli_10000: wangli (student id 10000, canvas)",
        "  status: graded; final score 80/100 (graded 80; overrides: 90; late -10)",
        "  parts:", "    mask: 40/40 (graded 30; override)", "    softmax: 50/60",
        "  submitted: no time; due 2026-12-01T23:59:00+08:00",
        "  late: yes, 1 day(s); penalty -10 (on the LMS's late mark)",
        f"  override: mask 30 -> 40 (regrade; {overrides.who()}, "
        f"{overrides.load(str(out))[0]['time']})",
        "  diagnosis: softmax: mha-repeat: repeat",
        "  flag: the LMS marked it late without a time: charged as 1 day(s) late",
        "  source: ", f"  feedback: {out / 'wangli_10000' / 'feedback.txt'}"]
    # exactly one student, as an override names one: 1000 is nobody here
    done = run_grader("show", "1000", "--out", str(out), timeout=120)
    assert done.returncode == 2 and "no row for student '1000'" in done.stderr


def test_the_console_shows_final_scores_missing_work_and_the_time_left():
    from grader.outcomes import Provenance, SubmissionResult, TestOutcome

    def result(name, score, **extra):
        return SubmissionResult(name, f"{name}.py", [TestOutcome("c", "p", score, "passed"),
                                                     TestOutcome("d", "p", 10 - score, "failed")],
                                seconds=2.0, provenance=Provenance(name, late_flag=True), **extra)
    ticks = iter([0.0, 30.0, 90.0])
    stream = io.StringIO()
    from grader import course
    policy = course.from_data({"due": "2026-12-01T23:59:00+08:00",
                               "late_policy": {"kind": "per_day", "points": 1}})
    table = console.Table(["p"], 3, stream=stream, short={"p": "p"}, course=policy,
                          entries=[], clock=lambda: next(ticks))
    table.row(result("ann", 8.0))
    table.row(result("bob", 0.0, intake_error="nothing gradable: essay.pdf", missing_work=True))
    lines = stream.getvalue().splitlines()
    # ann: 8 graded, 1 point for the LMS's LATE: 7; bob: nothing was found
    assert lines[0].startswith("[  1/3  ] ann") and "     7/10 " in lines[0]
    assert lines[0].endswith("graded 8; late -1  (about 1 min left)")   # 30 s a submission, 2 left
    assert "missing/10" in lines[1] and "0/10" not in lines[1]
    assert lines[1].endswith("(about 45 s left)")                      # 45 s a submission, 1 left
    assert [console.duration(s) for s in (0, 0.2, 59, 60, 61, 3599, 3601)] == [
        "0 s", "1 s", "59 s", "1 min", "2 min", "1 h", "1 h 1 min"]
    summary = console.summary([{"status": "graded", "total": 7.0, "penalty": 1.0, "flags": ["x"]},
                               {"status": "missing work", "total": 0.0},
                               {"status": "grader error", "total": None}], 61, unchanged=2)
    assert summary == ["Summary: 3 submission(s) in 2 min",
                       "  graded: 1; not gradable: 0; missing work: 1; grader errors: 1",
                       "  flagged identities: 1; late penalties: 1; adjusted (override or "
                       "penalty): 1",
                       "  2 unchanged since their last grading, rows kept"]


def test_release_says_which_given_modules_hold_an_earlier_solution(tmp_path):
    done = run_grader("release", "--assignment", "transformer", "--out", str(tmp_path / "tf"),
                      timeout=300)
    assert done.returncode == 0, done.stderr
    assert (f"Given code in {tmp_path / 'tf'}: attention.py (the assignment attention's full "
            f"solution). Students read it whole: hand this folder out only after the earlier "
            f"assignment's deadline") in done.stdout
    assert (tmp_path / "tf" / "attention.py").is_file()
    done = run_grader("release", "--out", str(tmp_path / "at"), timeout=300)
    assert done.returncode == 0 and "Given code" not in done.stdout
