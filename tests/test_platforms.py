"""Each LMS end to end: its download as the LMS writes it goes through `grader grade`, a
course file with a late policy, `grader override`, a forced regrade and `grader export`, and
the exported file has exactly the columns that LMS's import reads, with the final scores.

The nbgrader course goes through the same steps in tests/test_nbgrader.py (collected and
copied notebooks, course.toml, `grader override`, `grader nbgrader --force`, `nbgrader
export`), which needs the nbgrader extra.

Who is who comes from the LMS's fixed fields (grader/intake/layouts.py): Canvas's
`<name>[_LATE]_<user id>_<attachment id>_` prefix, Moodle's
`<full name>_<participant id>_assignsubmission_file_` folder, Gradescope's
submission_metadata.yml. Each download holds one complete submission (examples/alice.py,
100 points) and the released skeleton (0 points: every function raises
NotImplementedError), so every figure below is known without the grader.

The columns each import reads:

- Canvas, Grades > Import: the columns of Canvas's own gradebook export, `Student`, `ID`,
  `SIS User ID`, `SIS Login ID`, `Section`, then one column per assignment (Canvas Guides,
  "How do I import grades in the Gradebook?"; restated by Ohio State's CarmenCanvas guide,
  https://teaching.resources.osu.edu/toolsets/carmencanvas/guides/calculating-final-grades/import-csv-file-carmen-grades :
  "Student Name ... OR Student ID OR Student SIS User ID", "SIS Login ID", "Section",
  "Assignment Name", columns A-F).
- Moodle, the assignment's "Upload grading worksheet": moodle/moodle
  mod/assign/feedback/offline/importgradeslib.php, `init()`, refuses a file without the
  columns named get_string('recordid', 'assign') = `Identifier`, get_string('grade') =
  `Grade` and get_string('lastmodifiedgrade', 'assign') = `Last modified (grade)`, and
  `next()` strips get_string('hiddenuser', 'assign') = `Participant ` from the identifier
  to find the participant id; the worksheet Moodle hands out also has `Full name` and
  `Maximum Grade`.
"""
import csv
import datetime
import os
import shutil
import subprocess
import sys
import zipfile

import pytest

from conftest import KIT, SKELETON

pytestmark = pytest.mark.slow

ALICE = os.path.join(KIT, "examples", "alice.py")   # 100 points
ASSIGNMENT = "Attention (12345)"
CANVAS_COLUMNS = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", ASSIGNMENT]
MOODLE_COLUMNS = ["Identifier", "Full name", "Grade", "Maximum Grade", "Last modified (grade)"]
DUE = datetime.datetime(2026, 3, 1, tzinfo=datetime.timezone.utc)
COURSE = """due = 2026-03-01T00:00:00+00:00
[late_policy]
kind = "per_day"
percent = 10
"""
# the override every course makes: alice's MultiHeadAttention, 20 -> 15 (a part she copied)
OVERRIDE = ("MultiHeadAttention", "15")


def _grader(*args):
    done = subprocess.run([sys.executable, "-m", "grader", *args], cwd=KIT, capture_output=True,
                          text=True, timeout=900)
    assert done.returncode == 0, f"grader {args}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


def _csv(path):
    with open(path, encoding="utf-8-sig", newline="") as handle:
        return list(csv.reader(handle))


def _through_the_course(download, out, student, export):
    """grade -> course file -> override -> regrade (--force) -> export; returns the CSV's rows."""
    _grader("grade", str(download), "--out", str(out), "--jobs", "1")
    (out / "course.toml").write_text(COURSE, encoding="utf-8")
    _grader("override", "--out", str(out), student, *OVERRIDE, "--reason", "copied from a classmate")
    _grader("grade", str(download), "--out", str(out), "--jobs", "1", "--force")
    target = out.parent / "export.csv"
    _grader("export", *export, "--from", str(out), "--out", str(target))
    with open(target, "rb") as handle:
        assert handle.read(3) == b"\xef\xbb\xbf"  # a BOM: Excel on a Chinese Windows reads UTF-8
    return _csv(target)


def _final(days_late):
    """alice's final score: 100 graded, 5 points taken by the override, then 10 % of the
    assignment's 100 points per day started after the due date."""
    return 100 - 5 - 10 * days_late


def test_canvas_download_late_policy_override_regrade_export(tmp_path):
    download = tmp_path / "submissions"
    download.mkdir()
    # Canvas's names: alice's upload is marked LATE (no time: Canvas's file times are when the
    # zip was made), so the course charges unknown_days = 1 day
    shutil.copy(ALICE, download / "wangli_LATE_10000_90000_attention.py")
    shutil.copy(SKELETON, download / "liuyang_10001_90001_attention.py")
    rows = _through_the_course(download, tmp_path / "grades", "10000",
                               ["canvas", "--assignment", ASSIGNMENT])
    assert rows[0] == CANVAS_COLUMNS
    assert rows[1][0] == "Points Possible" and rows[1][-1] == "100"
    scores = {row[1]: row[-1] for row in rows[2:]}
    assert scores == {"10000": f"{_final(1):g}", "10001": "0"}
    names = {row[1]: row[0] for row in rows[2:]}
    assert names["10000"] == "wangli"


def test_moodle_download_with_a_zip_inside_late_policy_override_regrade_export(tmp_path):
    download = tmp_path / "moodle"
    fang = download / "Fang Wu_10006_assignsubmission_file_"
    lei = download / "Li Lei_10007_assignsubmission_file_"
    fang.mkdir(parents=True)
    lei.mkdir()
    # Fang Wu handed in a zip (named in Chinese) holding attention.py, 33.5 hours late:
    # 2 days started; Li Lei handed in the skeleton the day before the due date
    with zipfile.ZipFile(fang / "作业.zip", "w") as archive:
        archive.write(ALICE, "attention.py")
    shutil.copy(SKELETON, lei / "attention.py")
    late = DUE + datetime.timedelta(hours=33, minutes=30)
    os.utime(fang / "作业.zip", (late.timestamp(), late.timestamp()))
    early = (DUE - datetime.timedelta(days=1)).timestamp()
    os.utime(lei / "attention.py", (early, early))
    rows = _through_the_course(download, tmp_path / "grades", "10006", ["moodle"])
    assert rows[0] == MOODLE_COLUMNS
    by_id = {row[0]: row for row in rows[1:]}
    assert set(by_id) == {"Participant 10006", "Participant 10007"}
    assert by_id["Participant 10006"][1:4] == ["Fang Wu", f"{_final(2):g}", "100"]
    assert by_id["Participant 10007"][1:4] == ["Li Lei", "0", "100"]
    graded = datetime.datetime.strptime(by_id["Participant 10006"][4], "%Y-%m-%d %H:%M:%S %z")
    assert graded > late  # newer than any grade already there, or Moodle skips the row


def test_gradescope_export_late_policy_override_regrade_export(tmp_path):
    download = tmp_path / "gradescope-export"
    for folder, source in (("submission_1001", ALICE), ("submission_1002", SKELETON)):
        (download / folder).mkdir(parents=True)
        shutil.copy(source, download / folder / "attention.py")
    # Gradescope's own metadata: 2026-03-03 12:00 +08:00 is 52 hours after the due date
    # (3 days started); 2026-02-28 10:00 +08:00 is on time
    (download / "submission_metadata.yml").write_text(
        "submission_1001:\n"
        "  :submitters:\n"
        "  - :name: Alice Wang\n"
        "    :sid: '20260001'\n"
        "    :email: alice@example.edu\n"
        "  :created_at: 2026-03-03 12:00:00.000000000 +08:00\n"
        "  :score: 100.0\n"
        "submission_1002:\n"
        "  :submitters:\n"
        "  - :name: Li Lei\n"
        "    :sid: '20260002'\n"
        "    :email: lei@example.edu\n"
        "  :created_at: 2026-02-28 10:00:00.000000000 +08:00\n"
        "  :score: 0.0\n", encoding="utf-8")
    rows = _through_the_course(download, tmp_path / "grades", "20260001",
                               ["canvas", "--assignment", ASSIGNMENT])
    assert rows[0] == CANVAS_COLUMNS
    # Canvas matches a Gradescope row on the SID, its SIS User ID
    scores = {row[2]: row[-1] for row in rows[2:]}
    assert scores == {"20260001": f"{_final(3):g}", "20260002": "0"}
    names = {row[2]: row[0] for row in rows[2:]}
    assert names == {"20260001": "Alice Wang", "20260002": "Li Lei"}
