"""Identity attacks on grader/platforms/, as a hostile student and a careless
instructor would try them (issue 14). Each test names the class it covers and what the code
did before its fix; the expectations are literal (which file was made for whom), never
computed by the code under test.

Classes: a Canvas name part ending in another student's id; two downloads of one class
given together (the latest file counts, whatever the order); a Gradescope metadata name
written over several lines (read without PyYAML); ids that only read as an id once cleaned
(nbgrader folders, Gradescope SIDs); digits that are not ASCII digits."""
import io
import os
import shutil
import subprocess
import time
import zipfile

import pytest

from conftest import KIT, SUBMISSIONS

from grader import platforms
from grader.intake import times
from grader.platforms import canvas as canvas_platform
from grader.platforms import gradescope as gradescope_platform
from grader.platforms import moodle as moodle_platform
from grader.platforms.canvas import scores as canvas_scores
from grader.platforms.gradescope import metadata as gradescope_metadata
from grader.platforms.moodle import worksheet as moodle_worksheet

ALICE = os.path.join(KIT, "examples", "alice.py")
STUB = os.path.join(SUBMISSIONS, "zero_stub.py")
NOV_20 = 1795132800   # 2026-11-20T00:00:00Z
NOV_30 = 1795996800   # 2026-11-30T00:00:00Z


def _files(folder, names, source=ALICE):
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        shutil.copy(source, folder / name)
    return folder


def _rows(batch):
    return {s.name: (s.student_id, os.path.basename(s.path), s.flags) for s in batch.submissions}


# --- a Canvas name part ending in _<another student's id> ------------------------------------

def test_a_name_ending_in_a_classmates_id_never_makes_a_row_for_them(tmp_path):
    # Mallory (user 10005) sets her Canvas name to "mallory 10000": Canvas collapses only
    # _<digits>_, so it writes mallory_10000_10005_<attachment>_<file>, which reads (as
    # Canvas reads it back) as user 10000. Wangli (10000) handed nothing in.
    # before: a row with student_id 10000 (exported to Canvas as 10000's grade), only flagged
    canvas = _files(tmp_path / "canvas", ["mallory_10000_10005_90005_attention.py",
                                          "sunqi_10003_90003_attention.py"])
    assert _rows(platforms.resolve([str(canvas)])) == {
        "unverified-mallory_10000": ("", "mallory_10000_10005_90005_attention.py", [
            "mallory_10000_10005_90005_attention.py splits two ways (user 10000, or user 10005 "
            "whose name ends in _10000): no student id is given until you check whose it is"]),
        "sunqi_10003": ("10003", "sunqi_10003_90003_attention.py", [])}


@pytest.mark.parametrize("attacker", ["wangli_10000_10005_95000_attention.py",
                                      "mallory_10000_10005_95000_attention.py"])
def test_a_name_ending_in_a_classmates_id_never_replaces_their_work(tmp_path, attacker):
    # the same with wangli's own file there: hers is graded, under her id
    # before: "wangli_10000..." (her name copied) replaced her graded file (a higher
    # attachment id); "mallory_10000..." put user 10000 under two names, so wangli lost her id
    canvas = _files(tmp_path / "canvas", ["wangli_10000_90000_attention.py"])
    _files(canvas, [attacker], STUB)
    batch = platforms.resolve([str(canvas)])
    wangli = [s for s in batch.submissions if s.student_id == "10000"]
    assert len(wangli) == 1 and wangli[0].path == str(canvas / "wangli_10000_90000_attention.py")
    assert [s.student_id for s in batch.submissions] == ["10000"]
    assert wangli[0].flags == [
        f"{attacker} splits two ways (user 10000, or user 10005 whose name ends in _10000): "
        f"not graded as user 10000's, who has a file that reads one way"]
    assert f"wangli_10000: {attacker} was not graded: wangli_10000_90000_attention.py is this " \
           f"student's latest or main file" in batch.notes


def test_a_file_name_starting_with_digits_stays_its_uploaders(tmp_path):
    # the honest case of the same shape: wangli also uploads 2024_hw.py
    canvas = _files(tmp_path / "canvas", ["wangli_10000_90000_2024_hw.py",
                                          "wangli_10000_90001_attention.py"])
    assert _rows(platforms.resolve([str(canvas)])) == {"wangli_10000": (
        "10000", "wangli_10000_90001_attention.py",
        ["wangli_10000_90000_2024_hw.py splits two ways (user 10000, or user 90000 whose name "
         "ends in _10000): not graded as user 10000's, who has a file that reads one way"])}


# --- two downloads of one class given together -------------------------------------------------

TOGETHER = ("2 {lms} downloads were given together ({where}); one may be a student's own, so "
            "no student id is given (grade the newest download on its own)")


@pytest.mark.parametrize("forged", ["eve.zip", "eve"])
def test_a_students_zip_or_folder_named_as_a_download_beside_the_download(tmp_path, forged):
    # a careless instructor adds Eve's emailed zip (or folder) to the class's download: it
    # holds only Canvas-named files, so it is opened as a download too
    # before: her wangli_10000_99999_attention.py replaced wangli's graded file, and
    # zhang_10009_... made a row (exported) for 10009, who handed nothing in; nothing flagged
    canvas = _files(tmp_path / "canvas", ["wangli_10000_90000_attention.py",
                                          "eve_10005_90005_attention.py"])
    names = ["wangli_10000_99999_attention.py", "zhang_10009_99998_attention.py"]
    if forged == "eve.zip":
        with zipfile.ZipFile(tmp_path / "eve.zip", "w") as archive:
            for name in names:
                archive.write(STUB, name)
    else:
        _files(tmp_path / "eve", names, STUB)
    batch = platforms.resolve([str(canvas), str(tmp_path / forged)])
    assert [s.student_id for s in batch.submissions] == ["", "", ""]
    flag = TOGETHER.format(lms="Canvas", where=f"canvas, {forged}")
    assert sorted((s.name, s.flags) for s in batch.submissions) == [
        ("unverified-eve_10005", [flag]), ("unverified-wangli_10000", [flag]),
        ("unverified-zhang_10009", [flag])]


def test_of_two_canvas_downloads_the_newest_attachment_is_graded(tmp_path):
    # the student's own file name may carry -2 (she named it so, or re-uploaded it);
    # Canvas's attachment id rises with every upload
    # before: attention-2.py of the older download was graded (its -2 outranked the newer id)
    old = _files(tmp_path / "old", ["wangli_10000_90000_attention-2.py"], STUB)
    new = _files(tmp_path / "new", ["wangli_10000_90500_attention.py"])
    for order in ([old, new], [new, old]):
        assert _rows(platforms.resolve([str(p) for p in order])) == {
            "unverified-wangli_10000": ("", "wangli_10000_90500_attention.py",
                                        [TOGETHER.format(lms="Canvas", where="new, old")])}


def test_of_two_moodle_downloads_the_newest_is_graded_whatever_the_order(tmp_path):
    # Moodle's zip keeps each file's time; the folder given first used to win
    # before: `grader grade new/ old/` graded the new work, `old/ new/` the old one
    folders = {}
    for label, moment in (("old", NOV_20), ("new", NOV_30)):
        folder = _files(tmp_path / label / "Fang Wu_10006_assignsubmission_file_",
                        ["attention.py"], STUB if label == "old" else ALICE)
        os.utime(folder / "attention.py", (moment, moment))
        folders[label] = str(tmp_path / label)
    for order in (["old", "new"], ["new", "old"]):
        batch = platforms.resolve([folders[k] for k in order])
        [sub] = batch.submissions
        assert (sub.student_id, sub.path, sub.submitted_at, sub.time_source, sub.flags) == (
            "", os.path.join(folders["new"], "Fang Wu_10006_assignsubmission_file_"),
            "2026-11-30T00:00:00+00:00", "moodle-file-time",
            [TOGETHER.format(lms="Moodle", where="new, old")])


def test_one_download_given_as_files_keeps_its_ids(tmp_path):
    # `grader grade canvas/*`: one download, its files given one by one
    canvas = _files(tmp_path / "canvas", ["wangli_10000_90000_attention.py",
                                          "wangli_10000_90001_attention-1.py",
                                          "eve_10005_90005_attention.py"])
    batch = platforms.resolve([str(p) for p in sorted(canvas.iterdir())])
    assert _rows(batch) == {"wangli_10000": ("10000", "wangli_10000_90001_attention-1.py", []),
                            "eve_10005": ("10005", "eve_10005_90005_attention.py", [])}


# --- Gradescope metadata written over several lines, read without PyYAML --------------------

# what Psych (Ruby's YAML, Gradescope's writer) writes for names a student chose: a name
# with a line break as a literal block (|-), a long one folded over lines
HOSTILE_METADATA = """---
submission_1:
  :submitters:
  - :name: |-
      Eve
      :submitters:
      - :sid: '10000'
    :sid: '10005'
    :email: eve@example.edu
  :created_at: 2026-11-30 12:00:00.000000000 -08:00
submission_2:
  :submitters:
  - :name: 'Bob x x x x x x x x x x x x x x x x x x x x x x x x x x x x x x x x x :sid:
      ''10000'' y y y y y y y y y y y y y y y y y y y y y y y y y y y y y y y y

      :created_at: 2020-01-01 00:00:00 +00:00'
    :sid: '10006'
  - :name: >-
      Folded
      - :sid: '10001'
    :sid: '10009'
  :created_at: 2026-12-30 12:00:00.000000000 -08:00
  :score: !ruby/object:BigDecimal 18:0.1e3
"""


def test_a_metadata_name_over_several_lines_adds_no_submitter(tmp_path, monkeypatch):
    # before (no PyYAML): submission_1's submitters were [{"name": "|-"}, {"sid": "10000"}]:
    # Eve's work graded and exported as student 10000's, her own SID lost
    expected = {
        "submission_1": {"people": [{"name": "Eve\n:submitters:\n- :sid: '10000'",
                                     "sid": "10005", "email": "eve@example.edu"}],
                         "created_at": "2026-11-30T12:00:00-08:00"},
        "submission_2": {"people": [
            {"name": "Bob" + " x" * 33 + " :sid: '10000'" + " y" * 32
             + "\n:created_at: 2020-01-01 00:00:00 +00:00", "sid": "10006", "email": ""},
            {"name": "Folded - :sid: '10001'", "sid": "10009", "email": ""}],
            "created_at": "2026-12-30T12:00:00-08:00"}}
    assert gradescope_metadata.parse_metadata_subset(HOSTILE_METADATA) == expected
    loader = gradescope_metadata._tolerant_loader()
    if loader is not None:   # and PyYAML reads it the same
        import yaml
        data = yaml.load(HOSTILE_METADATA, Loader=loader)
        assert {k: {"people": gradescope_metadata._people(v), "created_at": gradescope_metadata._created(v)}
                for k, v in data.items()} == expected
    export = tmp_path / "export"
    export.mkdir()
    (export / "submission_metadata.yml").write_text(HOSTILE_METADATA, encoding="utf-8")
    for folder in ("submission_1", "submission_2"):
        _files(export / folder, ["attention.py"])
    monkeypatch.setattr(gradescope_metadata, "_tolerant_loader", lambda: None)   # a lean install
    batch = platforms.resolve([str(export)])
    assert sorted(s.student_id for s in batch.submissions) == ["10005", "10006;10009"]


# --- ids that are ids only once cleaned ------------------------------------------------------

def test_an_nbgrader_folder_that_is_not_an_id_as_it_is_keeps_none(tmp_path):
    # `nbgrader submit --student` lets a student choose the folder's name
    # before: "alice\u0301" (alicé, decomposed) and ".alice" became student id "alice",
    # "-rf" became "rf", "a\nb" became "ab" (and a row name with a line break)
    submitted = tmp_path / "course" / "submitted"
    for student in ("alice", "alice\u0301", ".alice", "-rf", "a\nb"):
        _files(submitted / student / "attention", ["attention.py"])
    batch = platforms.resolve([str(submitted)])
    got = sorted((s.name, s.student_id) for s in batch.submissions)
    assert got == [("alice", "alice"), ("unverified--rf", ""), ("unverified-.alice", ""),
                   ("unverified-a b", ""), ("unverified-alice\u0301", "")]
    flags = {s.name: s.flags for s in batch.submissions}
    assert flags["unverified-alice\u0301"] == [
        "nbgrader student folder 'alice\\u0301' is not a student id as it is (it would read "
        "as 'alice'); no student id is given"]
    assert all("\n" not in note for note in batch.notes)


def test_a_gradescope_sid_that_is_not_an_id_as_it_is_keeps_none(tmp_path):
    # before: "=12345" and "12345\n" read as SID 12345 (Jane's), fullwidth digits as nothing
    export = tmp_path / "export"
    export.mkdir()
    (export / "submission_metadata.yml").write_text(
        "submission_1:\n  :submitters:\n  - :name: Jane Doe\n    :sid: '12345'\n"
        "submission_2:\n  :submitters:\n  - :name: Eve\n    :sid: '=12345'\n"
        "submission_3:\n  :submitters:\n  - :name: Eve Two\n    :sid: \"12345\\n\"\n"
        "submission_4:\n  :submitters:\n  - :name: Eve Three\n    :sid: '\uff11\uff12'\n",
        encoding="utf-8")
    for folder in ("submission_1", "submission_2", "submission_3", "submission_4"):
        _files(export / folder, ["attention.py"])
    batch = platforms.resolve([str(export)])
    assert sorted((s.name, s.student_id) for s in batch.submissions) == [
        ("Jane Doe_12345", "12345"), ("unverified-Eve", ""), ("unverified-Eve Three", ""),
        ("unverified-Eve Two", "")]
    eve = next(s for s in batch.submissions if s.name == "unverified-Eve")
    assert eve.flags == ["submission_2: SID '=12345' in submission_metadata.yml is not an id "
                         "as it is (it would read as '12345'); no student id is given"]


# --- digits that are not ASCII digits --------------------------------------------------------

@pytest.mark.parametrize("name", ["submission_\u0661\u0662\u0663", "submission_\uff11\uff12"])
def test_a_gradescope_folder_id_is_ascii_digits(name):
    # before: submission_١٢٣ was a Gradescope folder (int() reads Arabic-Indic digits)
    assert gradescope_platform.GRADESCOPE_FOLDER.match(name) is None


@pytest.mark.parametrize("name", ["wangli_\u0661\u0660\u0660\u0660\u0660_90000_attention.py",
                                  "wangli_\uff11\uff10\uff10\uff10\uff10_90000_attention.py",
                                  "Fang Wu_\u0661\u0660\u0660\u0660\u0666_assignsubmission_file_"])
def test_lookalike_digits_are_no_lms_id(name):
    assert canvas_platform.parse_canvas(name) is None and moodle_platform.parse_moodle(name) is None


def test_lookalike_digits_in_a_resubmission_number_are_the_students_text():
    # before: attention-٩.py was resubmission 9
    parts = canvas_platform.parse_canvas("wangli_10000_90000_attention-\u0669.py")
    assert (parts["resubmission"], parts["base"]) == (0, "attention-\u0669.py")


@pytest.mark.parametrize("text", ["\uff12\uff10\uff12\uff16-11-30 12:00:00",
                                  "\u0662\u0660\u0662\u0666-11-30 12:00:00 UTC",
                                  "2026-11-30 12:00:00 +\u0660\u0668:00"])
def test_a_time_with_lookalike_digits_is_not_read(text):
    # before: "２０２６-11-30 12:00:00" read as 2026-11-30T12:00:00+00:00
    assert times.parse_time(text) == ""


# --- submission times: the platform's, in any form the download arrives ----------------------

def _moodle_zip(path, entries):
    """A Moodle download zip: (name, data, date_time) per entry, as Moodle's zip keeps them."""
    with zipfile.ZipFile(path, "w") as archive:
        for name, data, when in entries:
            archive.writestr(zipfile.ZipInfo(name, when), data)
    return path


def _inner_zip(entries):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data, when in entries:
            archive.writestr(zipfile.ZipInfo(name, when), data)
    return buffer.getvalue()


@pytest.fixture
def shanghai(monkeypatch):
    """The grading machine in the Moodle server's zone (Asia/Shanghai, UTC+8)."""
    monkeypatch.setenv("TZ", "Asia/Shanghai")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def test_a_moodle_download_zip_keeps_moodles_times_as_unzip_does(tmp_path, shanghai):
    # Moodle's zip keeps each file's time in Moodle (12:00 and 13:30 in Shanghai); the
    # student's own zip inside carries times she chose (1980, 2107): never read
    # before: the zip given as downloaded gave no time at all (the folder unzipped by hand
    # gave moodle-file-time): a fallback weaker than the main path
    source = open(ALICE, "rb").read()
    download = _moodle_zip(tmp_path / "Course-Attention-123.zip", [
        ("Fang Wu_10006_assignsubmission_file_/attention.py", source, (2026, 11, 30, 12, 0, 0)),
        ("Li Lei_10007_assignsubmission_file_/作业.zip",
         _inner_zip([("attention.py", source, (1980, 1, 1, 0, 0, 0)),
                     ("notes.txt", b"x", (2107, 12, 31, 0, 0, 0))]), (2026, 11, 30, 13, 30, 0))])
    # kept as this machine's wall clock (issue 27: course.toml's timezone reads it)
    expected = {"10006": ("2026-11-30T12:00:00+08:00", "moodle-file-time"),
                "10007": ("2026-11-30T13:30:00+08:00", "moodle-file-time")}
    batch = platforms.resolve([str(download)])
    assert {s.student_id: (s.submitted_at, s.time_source) for s in batch.submissions} == expected
    if shutil.which("unzip"):   # the same download unzipped by hand: the same times
        by_hand = tmp_path / "by-hand"
        subprocess.run(["unzip", "-q", str(download), "-d", str(by_hand)], check=True)
        batch = platforms.resolve([str(by_hand)])
        assert {s.student_id: (s.submitted_at, s.time_source)
                for s in batch.submissions} == expected


# --- what reaches an LMS (grader/platforms/) ---------------------------------------------------

def _row(name, **fields):
    row = {"name": name, "status": "graded", "total": 85.0, "max": 100.0, "parts": {},
           "reason": "", "source": "", "folder": name, "fingerprint": None,
           "student_id": "", "student_name": "", "layout": "canvas"}
    row.update(fields)
    return row


def test_one_student_id_in_two_rows_is_never_exported_twice():
    # a Canvas name changed between two downloads graded into one --out (wangli_10000 kept,
    # wang_10000 added), or a Gradescope SID alone and in a group
    # before: both rows exported for 10000 with two scores (0 and 95); the LMS keeps either
    rows = [_row("wangli_10000", student_id="10000", student_name="wangli", total=0.0),
            _row("wang_10000", student_id="10000", student_name="wang", total=95.0),
            _row("sunqi_10003", student_id="10003", student_name="sunqi")]
    text, notes = canvas_scores.canvas_text(rows, "Attention (1)")
    ids = [line.split(",")[1] for line in text.splitlines()[2:]]
    assert ids == ["10003"]
    assert any("10000" in note and "wangli_10000" in note and "wang_10000" in note
               for note in notes)
    moodle, notes = moodle_worksheet.moodle_text(
        [_row("Fang Wu_10006", student_id="10006", student_name="Fang Wu", layout="moodle"),
         _row("Fang Wu_10006-2", student_id="10006", student_name="Fang Wu", layout="moodle"),
         _row("Li Lei_10007", student_id="10007", student_name="Li Lei", layout="moodle")], now=0)
    assert [line.split(",")[0] for line in moodle.splitlines()[1:]] == ["Participant 10007"]
    # ids in different columns never clash: Canvas user 10006 beside Moodle participant 10006
    text, notes = canvas_scores.canvas_text(
        [_row("fang_10006", student_id="10006", student_name="fang"),
         _row("Fang Wu_10006", student_id="10006", student_name="Fang Wu", layout="moodle")])
    assert [line.split(",")[1] for line in text.splitlines()[2:]] == ["10006"]


def test_a_gradescope_sid_alone_and_in_a_group_gives_no_row_an_id(tmp_path):
    # before: two rows carried SID 12345 ("Jane Doe_12345" and the group's "12345;12346"),
    # each exported with its own score
    export_dir = tmp_path / "export"
    export_dir.mkdir()
    (export_dir / "submission_metadata.yml").write_text(
        "submission_1:\n  :submitters:\n  - :name: Jane Doe\n    :sid: '12345'\n"
        "submission_2:\n  :submitters:\n  - :name: Jane Doe\n    :sid: '12345'\n"
        "  - :name: Li Lei\n    :sid: '12346'\n"
        "submission_3:\n  :submitters:\n  - :name: Han Meimei\n    :sid: '12347'\n",
        encoding="utf-8")
    for folder in ("submission_1", "submission_2", "submission_3"):
        _files(export_dir / folder, ["attention.py"])
    batch = platforms.resolve([str(export_dir)])
    flags = ["SID 12345 is in more than one submission of submission_metadata.yml",
             "those submissions have different submitters, so no student id is given until "
             "you check which is theirs"]
    assert sorted((s.name, s.student_id, s.flags) for s in batch.submissions) == [
        ("Han Meimei_12347", "12347", []),
        ("unverified-Jane Doe", "", flags), ("unverified-Jane Doe; Li Lei", "", flags)]


# --- nbgrader: a student with several assignments in submitted/ -------------------------------

def test_an_nbgrader_student_with_several_assignments_keeps_the_attention_time(tmp_path):
    # nbgrader keeps submitted/<student>/<assignment>/ per assignment; a student who also
    # submitted "rnn" (or made such a folder) must not lose the attention submission's time
    # before: alice's row had no submission time (never charged late), and no flag
    submitted = tmp_path / "course" / "submitted"
    for assignment, stamp in (("attention", "2026-12-02 10:00:00 UTC"),
                              ("rnn", "2026-11-01 10:00:00 UTC")):
        folder = _files(submitted / "alice" / assignment,
                        ["attention.py" if assignment == "attention" else "rnn.py"])
        (folder / "timestamp.txt").write_text(stamp, encoding="utf-8")
    both = _files(submitted / "bob" / "attention", ["attention.py"])
    _files(submitted / "bob" / "attention-copy", ["attention.py"])
    (both / "timestamp.txt").write_text("2026-12-01 10:00:00 UTC", encoding="utf-8")
    batch = platforms.resolve([str(submitted)])
    got = {s.name: (s.student_id, os.path.relpath(s.path, submitted), s.submitted_at,
                    s.time_source, s.flags) for s in batch.submissions}
    assert got == {
        "alice": ("alice", "alice/attention", "2026-12-02T10:00:00+00:00", "nbgrader-timestamp", []),
        "bob": ("bob", "bob", "", "", [
            "nbgrader student bob has 2 assignment folders (attention, attention-copy) and "
            "several hold attention.py: graded as the whole folder, without a submission time"])}


# --- one student, one row, however the download was unzipped ----------------------------------

@pytest.mark.parametrize("form", ["NFD", "NFC"])
def test_a_download_unzipped_on_a_mac_names_the_same_rows(tmp_path, form):
    # macOS stores names decomposed: josé is "jose" + U+0301. The same class graded twice
    # into one gradebook (once unzipped on a Mac, once on Linux) must give the same row
    # names, or each accented student gets two rows (two scores in an export).
    # before: the decomposed download's rows were named "jose\u0301_10000" and
    # "Jose\u0301 Li_10006", and one participant under both forms lost its id
    import unicodedata
    canvas = _files(tmp_path / "canvas", [unicodedata.normalize(form, "josé_10000_90000_attention.py")])
    moodle = tmp_path / "moodle"
    _files(moodle / unicodedata.normalize(form, "José Li_10006_assignsubmission_file_"),
           ["attention.py"])
    _files(moodle / "José Li_10006_assignsubmission_file_", ["notes.py"]) if form == "NFD" else None
    rows = {s.student_id: s.name for s in platforms.resolve([str(canvas)]).submissions}
    assert rows == {"10000": "josé_10000"}
    batch = platforms.resolve([str(moodle)])
    assert [(s.student_id, s.name, s.flags) for s in batch.submissions] == \
        [("10006", "José Li_10006", [])]


# --- names a student may give themselves that start or end with digits -----------------------

@pytest.mark.parametrize("name, user, who, late", [
    ("0_a_10005_90005_attention.py", "10005", "0_a", False),
    ("0_10005_90005_attention.py", "10005", "0", False),
    ("a_0_LATE_10005_90005_attention.py", "10005", "a_0", True),
])
def test_a_name_starting_or_ending_in_digits_still_reads(tmp_path, name, user, who, late):
    # before: None, so the whole download was not opened (one student's name made every
    # classmate's row "not gradable"), or, given file by file, a plain row that withheld
    # every Canvas id in the batch
    parts = canvas_platform.parse_canvas(name)
    assert (parts["user"], parts["name"], parts["late"]) == (user, who, late)
    canvas = _files(tmp_path / "canvas", [name, "sunqi_10003_90003_attention.py"])
    batch = platforms.resolve([str(canvas)])
    assert sorted(s.student_id for s in batch.submissions) == ["10003", "10005"]


def test_an_nbgrader_timestamp_after_now_is_not_charged(tmp_path):
    # a wrong clock on the hub, or an edited timestamp.txt: 2099 would be ~26 000 days late
    # before: submitted_at 2099-01-01 (nbgrader-timestamp), charged by the late policy
    submitted = tmp_path / "course" / "submitted"
    folder = _files(submitted / "alice" / "attention", ["attention.py"])
    (folder / "timestamp.txt").write_text("2099-01-01 00:00:00 UTC", encoding="utf-8")
    os.utime(folder / "attention.py", (NOV_30, NOV_30))
    [sub] = platforms.resolve([str(submitted)]).submissions
    assert (sub.submitted_at, sub.time_source) == ("2026-11-30T00:00:00+00:00", "file-mtime")
    assert sub.flags == ["timestamp.txt says 2099-01-01T00:00:00+00:00, after the time it was "
                         "graded; not used; no submission time from nbgrader"]


def test_files_given_one_by_one_from_two_folders_are_two_downloads(tmp_path):
    # `grader grade canvas/* late/*`: Eve's wangli_10000_99999_attention.py in late/
    # before: it replaced wangli's graded file, unflagged (both given one by one)
    canvas = _files(tmp_path / "canvas", ["wangli_10000_90000_attention.py"])
    late = _files(tmp_path / "late", ["wangli_10000_99999_attention.py"], STUB)
    batch = platforms.resolve([str(canvas / "wangli_10000_90000_attention.py"),
                             str(late / "wangli_10000_99999_attention.py")])
    assert _rows(batch) == {"unverified-wangli_10000": (
        "", "wangli_10000_99999_attention.py", [TOGETHER.format(lms="Canvas", where="canvas, late")])}
