"""Each LMS end to end: its download as the LMS writes it goes through `grader grade`, a
course file with a late policy, `grader override`, a forced regrade and `grader export`, and
the exported file has exactly the columns that LMS's import reads, with the final scores.

The nbgrader course goes through the same steps in tests/test_nbgrader.py (collected and
copied notebooks, course.toml, `grader override`, `grader nbgrader --force`, `nbgrader
export`), which needs the nbgrader extra.

Who is who comes from the LMS's fixed fields (grader/platforms/): Canvas's
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
import time
import zipfile

import pytest

from conftest import KIT, SKELETON
from grading import run_grader

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
    done = run_grader(*args, timeout=900)
    assert done.returncode == 0, f"grader {args}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


def _csv(path):
    with open(path, encoding="utf-8-sig", newline="") as handle:
        return list(csv.reader(handle))


def _through_the_course(download, out, student, export, course=COURSE):
    """grade -> course file -> override -> regrade (--force) -> export; returns the CSV's rows."""
    _grader("grade", str(download), "--out", str(out), "--jobs", "1")
    (out / "course.toml").write_text(course, encoding="utf-8")
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
    # Moodle's times carry no zone: a folder unzipped here holds the server's wall clock in
    # this machine's zone (as unzip writes it), and the course file names the server's zone
    late = DUE + datetime.timedelta(hours=33, minutes=30)
    early = DUE - datetime.timedelta(days=1)
    for path, when in ((fang / "作业.zip", late), (lei / "attention.py", early)):
        wall = time.mktime(when.timetuple()[:6] + (0, 0, -1))
        os.utime(path, (wall, wall))
    rows = _through_the_course(download, tmp_path / "grades", "10006", ["moodle"],
                               'timezone = "UTC"\n' + COURSE)
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


# -- issue 27: lateness from what the LMS says, feedback back through each LMS, the console --

EXTENDED = """due = 2026-03-01T00:00:00+00:00
[late_policy]
kind = "per_day"
percent = 10
[extensions]
"10001" = { days = 2 }
"""


def _rows(out):
    return {r["submission"]: r for r in csv.DictReader(
        open(out / "grades.csv", encoding="utf-8-sig", newline=""))}


def _console(stdout):
    """{submission: score cell} from grader grade's lines ("[  1/4  ] name  85/100 ...")."""
    import re
    found = {}
    for line in stdout.splitlines():
        match = re.match(r"^\[\s*\d+/\d+\s*\] (\S+)\s+(\S+)/(\S+) ", line)
        if match:
            found[match[1]] = match[2]
    return found


def _canvas_class(tmp_path):
    download = tmp_path / "submissions"
    download.mkdir()
    # Canvas marked both alice copies LATE; liuyang (10001) has two more days in course.toml,
    # which Canvas knows nothing of: his LATE may be inside them, so it is not charged
    shutil.copy(ALICE, download / "wangli_LATE_10000_90000_attention.py")
    shutil.copy(ALICE, download / "liuyang_LATE_10001_90001_attention.py")
    shutil.copy(SKELETON, download / "zhaomin_10002_90002_attention.py")
    (download / "mallory_10003_90003_essay.pdf").write_bytes(b"%PDF-1.4 not code")
    return download


def test_canvas_an_extended_late_student_is_not_charged_and_the_console_tells_the_final_scores(tmp_path):
    download, out = _canvas_class(tmp_path), tmp_path / "grades"
    out.mkdir()
    (out / "course.toml").write_text(EXTENDED, encoding="utf-8")
    _grader("grade", str(download), "--gradebook", str(out), "--jobs", "2")
    _grader("override", "--gradebook", str(out), "10000", *OVERRIDE, "--reason", "copied")
    done = _grader("grade", str(download), "--gradebook", str(out), "--jobs", "2", "--force")
    rows = _rows(out)
    # wangli: 100 graded, 95 after the override, 10 % for Canvas's LATE (1 day): 85
    # liuyang: LATE but extended: 100, not charged, flagged for the instructor
    assert {n: (r["total"], r["late"], r["penalty"]) for n, r in rows.items()} == {
        "wangli_10000": ("85", "yes", "10"), "liuyang_10001": ("100", "", "0"),
        "zhaomin_10002": ("0", "no", "0"), "mallory_10003": ("0", "no", "0")}
    assert "due date is extended to 2026-03-03T00:00:00+00:00: it may be inside the extension; " \
           "not charged" in rows["liuyang_10001"]["flags"]
    liuyang = (out / rows["liuyang_10001"]["folder"] / "feedback.txt").read_text(encoding="utf-8")
    assert "Late penalty" not in liuyang and "Instructor adjustment" not in liuyang
    wangli = (out / rows["wangli_10000"]["folder"] / "feedback.txt").read_text(encoding="utf-8")
    # what is known is said, not a time nobody saw
    assert "Late penalty: -10 (the course's system marked your submission late without giving " \
           "its time, which the course's late policy counts as 1 day(s) late)" in wangli
    # the course file's per_day policy meets a download without times: said once
    said = "counts days late, and 4 row(s) came from a download that carries no submission time"
    assert done.stdout.count(said) == 1
    assert (out / "report.html").read_text(encoding="utf-8").count(said) == 1

    # the console: each line's score is grades.csv's total, missing work says so
    shown = _console(done.stdout)
    assert shown == {"wangli_10000": "85", "liuyang_10001": "100", "zhaomin_10002": "0",
                     "mallory_10003": "missing"}
    for name, row in rows.items():
        assert shown[name] == ("missing" if row["status"] == "missing work" else row["total"])
    line = next(line for line in done.stdout.splitlines() if "] wangli_10000 " in line)
    assert "graded 100; overrides: 95; late -10" in line
    statuses = [r["status"] for r in rows.values()]
    summary = done.stdout[done.stdout.index("Summary: "):]
    assert summary.startswith("Summary: 4 submission(s) in ")
    assert (f"graded: {statuses.count('graded')}; not gradable: {statuses.count('not gradable')}; "
            f"missing work: {statuses.count('missing work')}; grader errors: "
            f"{statuses.count('grader error')}") in summary
    penalties = sum(r["penalty"] not in ("", "0") for r in rows.values())
    adjusted = sum(bool(r["overrides"]) or r["penalty"] not in ("", "0") for r in rows.values())
    assert (penalties, adjusted) == (1, 1)
    assert (f"flagged identities: 0; late penalties: {penalties}; adjusted (override or "
            f"penalty): {adjusted}") in summary

    # Canvas's gradebook as the instructor downloaded it is the template: only this
    # assignment's column is filled, for the students Canvas lists
    template = tmp_path / "canvas-gradebook.csv"
    template.write_text(
        "\ufeffStudent,ID,SIS User ID,SIS Login ID,Section,Quiz 1 (11111),Attention (12345),"
        "Current Points,Final Score\n"
        "    Points Possible,,,,,10,100,(read only),(read only)\n"
        "wangli,10000,s1,wl,A,9,,9,90\n"
        "liuyang,10001,s2,ly,A,8,,8,80\n"
        "zhaomin,10002,s3,zm,B,7,,7,70\n"
        "mallory,10003,s4,ml,B,6,,6,60\n"
        "Student Test,99999,,,A,,,,\n", encoding="utf-8")
    target = tmp_path / "import.csv"
    sent = _grader("export", "canvas", "--gradebook", str(out), "--template", str(template),
                   "--out", str(target))
    assert _csv(target) == [
        ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Attention (12345)"],
        ["Points Possible", "", "", "", "", "100"],
        ["wangli", "10000", "s1", "wl", "A", "85"],
        ["liuyang", "10001", "s2", "ly", "A", "100"],
        ["zhaomin", "10002", "s3", "zm", "B", "0"]]
    assert "left out mallory_10003: no gradable work was found" in sent.stderr
    assert "2 student(s) of the template have no row here" in sent.stderr

    # each student's feedback through Canvas's submission comments: the script the export
    # writes, run against a stand-in of the two documented requests
    _canvas_comments_round_trip(tmp_path, out, rows)


# The stand-in of Canvas's Submissions API, from its documentation (Canvas LMS REST API,
# "Submissions": GET /api/v1/courses/:course_id/assignments/:assignment_id/submissions/:user_id
# with include[]=submission_comments answers the Submission with its `submission_comments`,
# each a SubmissionComment whose `comment` is the text; PUT on the same path with the form
# field comment[text_comment] adds a comment, "Grade or comment on a submission"), with
# Canvas's own limit on a comment (app/models/submission_comment.rb:
# validates :comment, length: { maximum: maximum_text_length }, 64 KB - 1).
def _canvas_stand_in(students, token):
    import http.server
    import json
    import re
    import threading
    import urllib.parse
    stored = {user: [] for user in students}
    path = re.compile(r"^/api/v1/courses/(\d+)/assignments/(\d+)/submissions/([^/?]+)$")

    class Handler(http.server.BaseHTTPRequestHandler):
        def _answer(self, status, data):
            body = json.dumps(data).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _user(self):
            if self.headers.get("Authorization") != f"Bearer {token}":
                self._answer(401, {"errors": [{"message": "Invalid access token."}]})
                return None
            url = urllib.parse.urlsplit(self.path)
            match = path.match(url.path)
            if not match or (match[1], match[2]) != ("777", "888"):
                self._answer(404, {"errors": [{"message": "The specified resource does not exist."}]})
                return None
            user = urllib.parse.unquote(match[3])
            if user not in stored:
                self._answer(404, {"errors": [{"message": "The specified resource does not exist."}]})
                return None
            return user, urllib.parse.parse_qs(url.query)

        def do_GET(self):
            found = self._user()
            if found:
                user, query = found
                listed = [{"id": i, "comment": c} for i, c in enumerate(stored[user])]
                self._answer(200, {"user_id": user, **({"submission_comments": listed}
                                   if query.get("include[]") == ["submission_comments"] else {})})

        def do_PUT(self):
            found = self._user()
            if not found:
                return
            if self.headers.get("Content-Type") != "application/x-www-form-urlencoded":
                self._answer(400, {"errors": [{"message": "form-encoded parameters expected"}]})
                return
            form = urllib.parse.parse_qs(self.rfile.read(int(self.headers["Content-Length"]))
                                         .decode("utf-8"), keep_blank_values=True)
            text = form.get("comment[text_comment]", [""])[0]
            if not text or len(text) > 64 * 1024 - 1:
                self._answer(400, {"errors": {"comment": [{"message": "too long"}]}})
                return
            stored[found[0]].append(text)
            self._answer(200, {"user_id": found[0]})

        def log_message(self, *args):
            pass
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, stored


def _canvas_comments_round_trip(tmp_path, out, rows):
    import json
    folder = tmp_path / "comments"
    _grader("export", "canvas-comments", "--gradebook", str(out), "--out", str(folder))
    data = json.loads((folder / "comments.json").read_text(encoding="utf-8"))
    assert sorted(c["user"] for c in data["comments"]) == ["10000", "10001", "10002"]
    server, stored = _canvas_stand_in(["10000", "10001", "10002", "10003"], "t0ken")
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        env = dict(os.environ, CANVAS_TOKEN="t0ken")

        def post(*extra):
            return subprocess.run([sys.executable, str(folder / "post_comments.py"), "--canvas",
                                   base, "--course", "777", "--assignment", "888", *extra],
                                  capture_output=True, text=True, timeout=120, env=env)
        dry = post()
        assert dry.returncode == 0 and all(not v for v in stored.values())
        assert "3 student(s): 0 posted, 0 already there, 0 not reached" in dry.stdout
        first = post("--post")
        assert first.returncode == 0, first.stdout + first.stderr
        # what Canvas keeps is each student's own feedback.txt, word for word
        for name, user in (("wangli_10000", "10000"), ("liuyang_10001", "10001"),
                           ("zhaomin_10002", "10002")):
            expected = (out / rows[name]["folder"] / "feedback.txt").read_text(encoding="utf-8")
            assert stored[user] == [expected]
        assert stored["10003"] == []        # missing work: no score, no comment
        again = post("--post")               # a second run posts nothing twice
        assert "0 posted, 3 already there" in again.stdout
        assert [len(v) for v in stored.values()] == [1, 1, 1, 0]
        wrong = subprocess.run([sys.executable, str(folder / "post_comments.py"), "--canvas",
                                base, "--course", "777", "--assignment", "888", "--post"],
                               capture_output=True, text=True, timeout=120,
                               env=dict(os.environ, CANVAS_TOKEN="stolen"))
        assert wrong.returncode == 1 and "not reached: 401" in wrong.stdout
        insecure = post("--post", "--canvas", "http://canvas.example.edu")
        assert insecure.returncode == 2 and "must be an https:// address" in insecure.stderr
    finally:
        server.shutdown()


# -- Moodle: its zoneless times, and the feedback read back as Moodle's importers read it ----

# Moodle's server is in Shanghai; the due date is 23:59 there on 1 March
MOODLE_COURSE = """due = 2026-03-01T23:59:00+08:00
{zone}[late_policy]
kind = "per_day"
percent = 10
"""
# what Moodle's zip says of each file: wall-clock times of the server, without a zone
MOODLE_ENTRIES = [
    # Fang Wu: 23:30 in Shanghai, on time (read in UTC it would be 07:30 the next day, late)
    ("Fang Wu_10006_assignsubmission_file_/attention.py", ALICE, (2026, 3, 1, 23, 30, 0)),
    # Li Lei: noon on 3 March in Shanghai, 36 h 1 min late: 2 days started, 20 %
    ("Li Lei_10007_assignsubmission_file_/attention.py", ALICE, (2026, 3, 3, 12, 0, 0)),
    # Zhou Tao: the skeleton, handed in the day before
    ("Zhou Tao_10008_assignsubmission_file_/attention.py", SKELETON, (2026, 2, 28, 10, 0, 0)),
]


def _moodle_zip(path):
    with zipfile.ZipFile(path, "w") as archive:
        for name, source, when in MOODLE_ENTRIES:
            info = zipfile.ZipInfo(name, date_time=when)
            with open(source, "rb") as handle:
                archive.writestr(info, handle.read())


def _grade_in_zone(download, out, zone, course, *extra):
    """grader grade with TZ=zone (the grading machine's zone), then the course file."""
    out.mkdir()
    (out / "course.toml").write_text(course, encoding="utf-8")
    done = run_grader("grade", str(download), "--gradebook", str(out), "--jobs", "2", *extra,
                      env=dict(os.environ, TZ=zone), timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done


def test_moodle_times_read_in_the_servers_zone_give_the_same_scores_on_any_machine(tmp_path):
    download = tmp_path / "moodle-download.zip"
    _moodle_zip(download)
    finals = {}
    for zone, extra in (("UTC", ()), ("America/Los_Angeles", ("--lang", "zh"))):
        out = tmp_path / f"grades-{zone.replace('/', '-')}"
        # without the server's zone: no zoneless time is charged unless it is on time in
        # every zone, and each such row is flagged; the console and report.html say why once
        done = _grade_in_zone(download, out, zone, MOODLE_COURSE.format(zone=""), *extra)
        rows = _rows(out)
        assert {n: (r["total"], r["late"], r["penalty"]) for n, r in rows.items()} == {
            "Fang Wu_10006": ("100", "", "0"), "Li Lei_10007": ("100", "", "0"),
            "Zhou Tao_10008": ("0", "no", "0")}
        for name in ("Fang Wu_10006", "Li Lei_10007"):
            assert "carries no time zone and course.toml gives none" in rows[name]["flags"]
            assert rows[name]["time_zone"].startswith("this machine's, UTC")
        assert rows["Zhou Tao_10008"]["flags"] == ""
        said = ("3 row(s) have times written without a time zone (Moodle's file times)"
                if zone == "UTC" else "有 3 行的时间没有写明时区（Moodle 的文件时间）")
        assert done.stdout.count(said) == 1
        # with the server's zone: the same final scores under either machine zone
        (out / "course.toml").write_text(MOODLE_COURSE.format(zone='timezone = "Asia/Shanghai"\n'),
                                         encoding="utf-8")
        _grader("gradebook", "--gradebook", str(out))
        rows = _rows(out)
        finals[zone] = {n: (r["total"], r["late"], r["days_late"], r["submitted_at"], r["flags"])
                        for n, r in rows.items()}
        assert {r["time_zone"] for r in rows.values()} == {
            "Asia/Shanghai (course.toml timezone; moodle-file-time carries no zone)"}
    assert finals["UTC"] == finals["America/Los_Angeles"] == {
        "Fang Wu_10006": ("100", "no", "", "2026-03-01T23:30:00+08:00", ""),
        "Li Lei_10007": ("80", "yes", "2", "2026-03-03T12:00:00+08:00", ""),
        "Zhou Tao_10008": ("0", "no", "", "2026-02-28T10:00:00+08:00", "")}
    # the Chinese class's feedback back through Moodle, both ways
    out = tmp_path / "grades-America-Los_Angeles"
    _moodle_worksheet_round_trip(tmp_path, out, _rows(out))
    _moodle_zip_round_trip(tmp_path, out, _rows(out))


def _php_fgetcsv(text):
    """The rows PHP's fgetcsv($fp, 0, ',', '"') reads from `text`, with its default escape
    character `\\`: inside a quoted field a backslash keeps the character after it (a quote
    then does not close the field, and both characters stay); a doubled quote is one quote.
    A blank line reads as one empty field (fgetcsv's array(null))."""
    rows, row, field, quoted, i = [], [], [], False, 0
    while i < len(text):
        char = text[i]
        if quoted:
            if char == "\\" and i + 1 < len(text):
                field += [char, text[i + 1]]
                i += 2
                continue
            if char == '"':
                if text[i + 1:i + 2] == '"':
                    field.append('"')
                    i += 2
                    continue
                quoted = False
            else:
                field.append(char)
        elif char == '"' and not field:
            quoted = True
        elif char == ",":
            row.append("".join(field))
            field = []
        elif char == "\n":
            rows.append(row + ["".join(field)])
            row, field = [], []
        else:
            field.append(char)
        i += 1
    if row or field:
        rows.append(row + ["".join(field)])
    return rows


def _moodle_worksheet(data):
    """{participant id: (grade, feedback comment)} as Moodle reads an uploaded grading
    worksheet, written from its source (moodle/moodle):
    - lib/csvlib.class.php, csv_import_reader::load_csv_content: the content converted to
      UTF-8, core_text::trim_utf8_bom, every \\r\\n or \\r made \\n, trim(), then fgetcsv row
      by row (a row of one null field, a blank line, skipped); every row must have the
      header's number of columns (else 'csvweirdcolumns');
    - mod/assign/feedback/offline/importgradeslib.php, init(): the columns named
      get_string('recordid', 'assign') = "Identifier", get_string('grade') = "Grade" and
      get_string('lastmodifiedgrade', 'assign') = "Last modified (grade)" are required, and
      each enabled feedback plugin's get_editor_fields() descriptions are looked up:
      assignfeedback_comments's is get_string('pluginname') = "Feedback comments"
      (mod/assign/feedback/comments/locallib.php);
    - next(): the participant id is the identifier after strlen(get_string('hiddenuser',
      'assign')) = "Participant ", and a feedback column is read only `if
      (!empty($details['index']))`: at index 0 it is never read;
    - set_editor_text stores the value as the comment's text, in FORMAT_HTML."""
    text = data.decode("utf-8")
    if text.startswith("\ufeff"):
        text = text[1:]
    text = text.replace("\r\n", "\n").replace("\r", "\n").strip()
    rows = [r for r in _php_fgetcsv(text) if r != [""]]
    header = rows[0]
    assert all(len(r) == len(header) for r in rows), "csvweirdcolumns"
    ident, grade = header.index("Identifier"), header.index("Grade")
    assert "Last modified (grade)" in header
    comments = header.index("Feedback comments") if "Feedback comments" in header else 0
    found = {}
    for row in rows[1:]:
        participant = row[ident][len("Participant "):]
        found[participant] = (row[grade], row[comments] if comments else None)
    return found


def _shown_comment(value):
    """The text a student reads of a Feedback comments value (HTML, FORMAT_HTML): the one
    <pre> block's text (a <pre> keeps the lines)."""
    import html
    import re
    match = re.fullmatch(r"<pre>([^<>]*)</pre>", value, re.DOTALL)
    assert match, value[:200]
    return html.unescape(match[1])


def _moodle_worksheet_round_trip(tmp_path, out, rows):
    sheet = tmp_path / "worksheet.csv"
    _grader("export", "moodle", "--with-comments", "--gradebook", str(out), "--out", str(sheet))
    read = _moodle_worksheet(sheet.read_bytes())
    assert {p: g for p, (g, _c) in read.items()} == {"10006": "100", "10007": "80", "10008": "0"}
    for name, participant in (("Fang Wu_10006", "10006"), ("Li Lei_10007", "10007"),
                              ("Zhou Tao_10008", "10008")):
        expected = (out / rows[name]["folder"] / "feedback.txt").read_text(encoding="utf-8")
        assert _shown_comment(read[participant][1]) == expected
    # Li Lei's comment is the Chinese feedback with its late penalty (2 days, by the time)
    assert "迟交扣分：-20（迟交 2 天，按课程的迟交规定）" in _shown_comment(read["10007"][1])


def _moodle_feedback_files(path, participants):
    """[(participant, plugin, filename, bytes)] as Moodle's "Upload multiple feedback files in
    a zip" takes them, written from mod/assign/feedback/file/importziplib.php,
    is_valid_filename_for_import: directories and files whose name starts with '.' or '~'
    are skipped; each part of the path is split with explode('_', $part, 5) (at most 5
    pieces); a part of fewer than 4 pieces is passed over; the second piece must be numeric
    and a participant of the assignment, the third and fourth name the plugin
    (get_plugin_by_type); what follows (the fifth piece and the rest of the path) is the
    file's name."""
    found = []
    with zipfile.ZipFile(path) as archive:
        for info in archive.infolist():
            name = info.filename
            if info.is_dir() or name.rsplit("/", 1)[-1].startswith((".", "~")):
                continue
            parts = name.split("/")
            while parts:
                piece = parts.pop(0).split("_", 4)
                if len(piece) < 4 or not piece[1].isdigit() or int(piece[1]) not in participants:
                    continue
                rest = "/".join([piece[4] if len(piece) == 5 else ""] + parts)
                found.append((int(piece[1]), (piece[2], piece[3]), rest, archive.read(info)))
                break
    return found


def _moodle_zip_round_trip(tmp_path, out, rows):
    target = tmp_path / "feedback.zip"
    _grader("export", "moodle-feedback-zip", "--gradebook", str(out), "--out", str(target))
    found = _moodle_feedback_files(target, {10006, 10007, 10008})
    assert sorted((p, plugin, name) for p, plugin, name, _data in found) == [
        (p, ("assignfeedback", "file"), name) for p in (10006, 10007, 10008)
        for name in ("/feedback.html", "/feedback.txt")]
    for name, participant in (("Fang Wu_10006", 10006), ("Li Lei_10007", 10007),
                              ("Zhou Tao_10008", 10008)):
        folder = out / rows[name]["folder"]
        for file in ("feedback.html", "feedback.txt"):
            assert [d for p, _plugin, n, d in found if (p, n) == (participant, "/" + file)] \
                == [(folder / file).read_bytes()]
