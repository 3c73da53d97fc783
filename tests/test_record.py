"""One record per submission (grader/outcomes.py, issue 30): the result of grading a
download carries who handed each file in, when, what to flag, its folder and the code intake
staged as fields, filled where they were learnt (the layout's resolution, intake), and its
gradebook row says the same. Expectations are computed here from the download's own names
and the times set on its files, not by the code under test."""
import csv
import datetime
import io
import os
import shutil

import pytest

from conftest import KIT
from grader import platforms
from grader.grade import SuiteOptions, grade_batch
from grader.outcomes import Kept, Provenance
from grader.report.gradebook import ROW_FILE

EXAMPLES = os.path.join(KIT, "examples")
FANG = "Fang Wu_10006_assignsubmission_file_"
EVE = "Eve Li_10008_assignsubmission_file_"
# Eve's upload is named as Fang's would be: the name claims participant 10006
EVE_FILE = "Fang Wu_10006_assignsubmission_file_attention.py"


def _moodle_download(root):
    """A Moodle "Download all submissions": Fang's attention.py handed in at a set time,
    Eve's file named as if it were Fang's."""
    (root / FANG).mkdir(parents=True)
    (root / EVE).mkdir()
    shutil.copy(os.path.join(EXAMPLES, "alice.py"), root / FANG / "attention.py")
    shutil.copy(os.path.join(EXAMPLES, "chen.py"), root / EVE / EVE_FILE)
    fang_time = datetime.datetime(2026, 12, 1, 10, 30, 0)  # this machine's wall clock
    os.utime(root / FANG / "attention.py", (fang_time.timestamp(),) * 2)
    eve_time = datetime.datetime(2026, 12, 2, 23, 5, 9)
    os.utime(root / EVE / EVE_FILE, (eve_time.timestamp(),) * 2)
    return fang_time, eve_time


@pytest.mark.slow
def test_a_moodle_downloads_results_carry_who_when_flags_folder_and_code_as_fields(tmp_path):
    download, out = tmp_path / "download", tmp_path / "book"
    fang_time, eve_time = _moodle_download(download)
    out.mkdir()
    (out / "course.toml").write_text('due = 2026-12-02T23:59:00+08:00\ntimezone = "Asia/Shanghai"\n',
                                     encoding="utf-8")
    batch = platforms.resolve([str(download)], "auto", module="attention")
    results = grade_batch(batch.submissions, str(out), SuiteOptions(), jobs=1,
                          stream=io.StringIO())
    by_name = {r.name: r for r in results}
    assert sorted(by_name) == ["Eve Li_10008", "Fang Wu_10006"]  # Moodle's <name>_<id>

    def stamp(moment):  # how a zoneless Moodle time is kept: the local wall clock, its offset
        return moment.astimezone().isoformat(timespec="seconds")

    fang, eve = by_name["Fang Wu_10006"], by_name["Eve Li_10008"]
    assert fang.provenance == Provenance("10006", "Fang Wu", "moodle", stamp(fang_time),
                                         "moodle-file-time", None, [])
    assert eve.provenance == Provenance(
        "10008", "Eve Li", "moodle", stamp(eve_time), "moodle-file-time", None,
        ["the uploaded file's own name claims Moodle participant 10006; graded as user "
         f"10008's ({EVE_FILE})"])
    assert (fang.folder, eve.folder) == ("Fang Wu_10006", "Eve Li_10008")
    assert (fang.source, eve.source) == (str(download / FANG), str(download / EVE))
    with open(os.path.join(EXAMPLES, "alice.py"), encoding="utf-8") as handle:
        assert fang.staged_code == Kept(handle.read().replace("\r\n", "\n"))
    assert (fang.status, fang.score, eve.status) == ("graded", 100.0, "graded")

    # the row kept beside the result and grades.csv say the same, with the course's zone
    assert (out / "Fang Wu_10006" / ROW_FILE).is_file() and (out / "Eve Li_10008" / ROW_FILE).is_file()
    with open(out / "grades.csv", encoding="utf-8-sig", newline="") as handle:
        rows = {row["submission"]: row for row in csv.DictReader(handle)}
    assert (rows["Fang Wu_10006"]["student_id"], rows["Fang Wu_10006"]["name"],
            rows["Fang Wu_10006"]["time_source"], rows["Fang Wu_10006"]["time_zone"]) == (
        "10006", "Fang Wu", "moodle-file-time",
        "Asia/Shanghai (course.toml timezone; moodle-file-time carries no zone)")
    assert rows["Eve Li_10008"]["flags"].startswith(
        "the uploaded file's own name claims Moodle participant 10006")
    assert (out / "Fang Wu_10006" / "submitted-code.py").read_text(encoding="utf-8") == \
        fang.staged_code.text


def test_a_gradebook_reads_its_course_and_ledger_once_and_the_ledger_again_only_when_it_changed(
        tmp_path, monkeypatch):
    from grader import course, overrides
    from grader.outcomes import SubmissionResult, TestOutcome
    from grader.report import book as books, gradebook
    out = str(tmp_path)
    row = gradebook.record(SubmissionResult(
        "wang", "wang.py", [TestOutcome("a", "mask", 10.0, "passed")], folder="wang",
        provenance=Provenance("10000", "Wang Li", "canvas")))
    (tmp_path / "wang").mkdir()
    gradebook.save_record(row, out)
    (tmp_path / "course.toml").write_text("due = 2026-12-01T23:59:00+08:00\n", encoding="utf-8")
    reads = []
    real_course, real_ledger = course.load, overrides.load
    monkeypatch.setattr(course, "load", lambda path: reads.append("course") or real_course(path))
    monkeypatch.setattr(overrides, "load", lambda d: reads.append("ledger") or real_ledger(d))

    book = books.Gradebook.open(out)
    assert (list(book.rows), book.policy is not None, book.entries) == (["wang"], True, [])
    final, _ = book.rebuild(["mask"])
    final, _ = book.rebuild(["mask"])
    assert reads == ["course", "ledger"] and final[0]["total"] == 10.0

    # another process records an override meanwhile (grader override: it reads the ledger
    # under its lock to append): the next rebuild reads the ledger again, and applies it
    overrides.append(out, [overrides.entry_for([row], "10000", "mask", "7", "by hand")])
    final, _ = book.rebuild(["mask"])
    assert reads == ["course", "ledger", "ledger", "ledger"] and final[0]["total"] == 7.0

    # a ledger that no longer reads: no override applied, and every row says so
    (tmp_path / overrides.FILE).write_text("{not json", encoding="utf-8")
    final, _ = book.rebuild(["mask"])
    assert final[0]["total"] == 10.0
    assert final[0]["flags"] == ["overrides.json does not read: no override applied"]
    assert reads.count("course") == 1
