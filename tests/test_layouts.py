"""Student identity from the way work arrives (grader/platforms/), and `grader export`.

The name parsers are tested on many names, hostile ones included; one real `grader grade`
run over a class handed in four ways (a Canvas download with a late file and a resubmission,
a Moodle download, a Gradescope export, nbgrader's submitted/ tree) checks grades.csv's
student_id and name columns, that submission_metadata.yml is never graded, and the exact
CSVs `grader export canvas|moodle` writes from that gradebook."""
import csv
import io
import os
import shutil
import subprocess
import sys
import zipfile

import pytest

from conftest import KIT, SUBMISSIONS

from grader import platforms
from grader.intake import layouts, times
from grader.platforms import canvas as canvas_platform
from grader.platforms import moodle as moodle_platform
from grader.platforms import nbgrader as nbgrader_platform
from grader.platforms.canvas import scores as canvas_scores
from grader.platforms.gradescope import metadata as gradescope_metadata
from grader.platforms.moodle import worksheet as moodle_worksheet
from grader.report import gradebook

ALICE = os.path.join(KIT, "examples", "alice.py")
STUB = os.path.join(SUBMISSIONS, "zero_stub.py")
FAST = ["--jobs", "2", "--call-seconds", "8", "--import-seconds", "10"]

METADATA = """---
submission_31000001:
  :submitters:
  - :name: Jane Doe
    :sid: '12345'
    :email: jane@example.edu
  :created_at: 2026-11-30 12:00:00.000000000 -08:00
  :score: !ruby/object:BigDecimal 18:0.1e3
  :status: processed
submission_31000002:
  :submitters:
  - :name: "Li Lei"
    :sid: '12346'
    :email: lilei@example.edu
  - :name: Han Meimei
    :sid: '12347'
    :email: hanmm@example.edu
  :created_at: 2026-11-30 13:00:00.000000000 -08:00
"""


# --- the name parsers ----------------------------------------------------------------------

@pytest.mark.parametrize("name, user, who, late, resubmission", [
    ("wangli_10000_90000_attention.py", "10000", "wangli", False, 0),
    ("liuyang_LATE_10001_90001_attention.ipynb", "10001", "liuyang", True, 0),
    ("zhaomin_10002_90002_attention-1.py", "10002", "zhaomin", False, 1),
    ("zhaomin_LATE_10002_90002_attention-12.py", "10002", "zhaomin", True, 12),
    # Canvas writes LATE in capitals and names in lower case: "late" is part of the name
    ("zhaomin_late_10002_90002_attention-12.py", "10002", "zhaomin_late", False, 12),
    ("王力_10003_90003_attention.py", "10003", "王力", False, 0),
    ("wang_li_10004_90004_attention.zip", "10004", "wang_li", False, 0),
    ("teststudent_1_2_attention (1).py", "1", "teststudent", False, 0),
])
def test_canvas_names(name, user, who, late, resubmission):
    parts = canvas_platform.parse_canvas(name)
    assert (parts["user"], parts["name"], parts["late"], parts["resubmission"]) == \
        (user, who, late, resubmission)


@pytest.mark.parametrize("name", ["alice.py", "attention.py", "bob.ipynb", "erik", "dana.zip",
                                  "_10000_90000_attention.py", "wangli_10000_attention.py",
                                  "wangli_x_90000_attention.py", "submission_metadata.yml"])
def test_names_that_are_not_canvas(name):
    assert canvas_platform.parse_canvas(name) is None


@pytest.mark.parametrize("name, ident, who, plugin, file", [
    ("Fang Wu_10006_assignsubmission_file_", "10006", "Fang Wu", "file", ""),
    ("Fang Wu_10006_assignsubmission_onlinetext_", "10006", "Fang Wu", "onlinetext", ""),
    ("Fang Wu_10006_assignsubmission_file_attention.py", "10006", "Fang Wu", "file", "attention.py"),
    ("Group A-Zhou Tao_10007_assignsubmission_file_", "10007", "Group A-Zhou Tao", "file", ""),
    ("Participant_10008_assignsubmission_file_", "10008", "Participant", "file", ""),
    ("张 伟_10009_assignsubmission_file_", "10009", "张 伟", "file", ""),
])
def test_moodle_names(name, ident, who, plugin, file):
    parts = moodle_platform.parse_moodle(name)
    assert (parts["id"], parts["name"], parts["plugin"], parts["file"]) == (ident, who, plugin, file)


@pytest.mark.parametrize("name", ["alice.py", "Fang Wu_assignsubmission_file_", "Fang Wu_10006_file_",
                                  "wangli_10000_90000_attention.py"])
def test_names_that_are_not_moodle(name):
    assert moodle_platform.parse_moodle(name) is None


@pytest.mark.parametrize("name, user, attachment, file, claims", [
    # Mallory (10005) uploads a file whose own name imitates another student's download name
    ("mallory_10005_90005__10000_90000_attention.py", "10005", "90005",
     "_10000_90000_attention.py", ["10000"]),
    ("mallory_10005_90005_wangli_10000_90000_attention.py", "10005", "90005",
     "wangli_10000_90000_attention.py", ["10000"]),
    ("mallory_LATE_10005_90005_LATE_10001_1_attention.py", "10005", "90005",
     "LATE_10001_1_attention.py", ["10001"]),
    ("mallory_10005_90005_Zhou Tao_10007_assignsubmission_file_a.py", "10005", "90005",
     "Zhou Tao_10007_assignsubmission_file_a.py", ["10007"]),
    # her own download name re-uploaded claims nobody else
    ("mallory_10005_90007_mallory_10005_90005_attention.py", "10005", "90007",
     "mallory_10005_90005_attention.py", []),
    ("wangli_10000_90000_2024_hw_attention.py", "10000", "90000", "2024_hw_attention.py", []),
])
def test_canvas_ids_come_from_the_prefix_canvas_writes(name, user, attachment, file, claims):
    parts = canvas_platform.parse_canvas(name)
    assert (parts["user"], parts["attachment"], parts["file"], parts["claims"]) == \
        (user, attachment, file, claims)


def test_a_canvas_name_that_splits_two_ways_is_read_as_canvas_reads_it():
    # a name part ending in _<digits> (Canvas collapses only _<digits>_): Canvas's own reading
    parts = canvas_platform.parse_canvas("x_5_10000_90000_attention.py")
    assert (parts["user"], parts["attachment"], parts["ambiguous"]) == ("5", "10000", True)
    assert canvas_platform.parse_canvas("wangli_10000_90000_attention.py")["ambiguous"] is False


@pytest.mark.parametrize("hostile", [
    "=HYPERLINK(\"http://x\")_10000_90000_attention.py",
    "\x1b[2J\x1b[31mred_10000_90000_attention.py",
    "a\udcffb_10000_90000_attention.py",
    "\u202eevil_10000_90000_attention.py",
    "x" * 5000 + "_10000_90000_attention.py",
    "..\n.._10000_90000_attention.py",
    "Fang Wu_10000_90000_attention.py",
])
def test_names_canvas_never_writes_are_not_canvas(hostile):
    # Canvas keeps only word characters in the name part: anything else is not its download
    assert canvas_platform.parse_canvas(hostile) is None


def test_canvas_display_names_are_made_safe():
    parts = canvas_platform.parse_canvas("王力ｘ_10000_90000_attention.py")
    assert parts["name"] == "王力ｘ" and parts["user"] == "10000"
    long = canvas_platform.parse_canvas("x" * 240 + "_10000_90000_a.py")
    assert long["user"] == "10000" and len(long["name"]) == layouts.MAX_DISPLAY


@pytest.mark.parametrize("name, ident, who, file, claims", [
    # Moodle writes no "_" in a full name (it makes them spaces): the first "_" ends it
    ("Zhou Tao 10007 assignsubmission file _10006_assignsubmission_file_", "10006",
     "Zhou Tao 10007 assignsubmission file", "", []),
    ("Fang Wu_10006_assignsubmission_file_Zhou Tao_10007_assignsubmission_file_a.py", "10006",
     "Fang Wu", "Zhou Tao_10007_assignsubmission_file_a.py", ["10007"]),
    ("Fang Wu_10006_assignsubmission_file_wangli_10000_90000_a.py", "10006", "Fang Wu",
     "wangli_10000_90000_a.py", ["10000"]),
])
def test_moodle_ids_come_from_the_prefix_moodle_writes(name, ident, who, file, claims):
    parts = moodle_platform.parse_moodle(name)
    assert (parts["id"], parts["name"], parts["file"], parts["claims"]) == (ident, who, file, claims)
    assert moodle_platform.parse_moodle("Zhou_Tao_10007_assignsubmission_file_") is None


@pytest.mark.parametrize("raw, safe", [("10000", "10000"), ("=1+1", "1+1"), ("a/../b", "a..b"),
                                        ("-5", "5"), ("@cmd", "cmd"), ("jane@example.edu", "jane@example.edu"),
                                        ("x" * 500, "x" * layouts.MAX_ID), ("a\x00b", "ab"),
                                        ("名字", "")])
def test_student_ids_keep_only_what_an_lms_matches_on(raw, safe):
    assert layouts.student_id(raw) == safe


def test_non_submissions():
    for name in ("index.html", "submission_metadata.yml", ".DS_Store", "__MACOSX", "._attention.py",
                 "Thumbs.db"):
        assert layouts.non_submission(name), name
    for name in ("alice.py", "index.py", "wangli_10000_90000_attention.py"):
        assert not layouts.non_submission(name), name


def test_nbgrader_paths():
    assert nbgrader_platform.nbgrader_parts("c/submitted/alice/attention/attention.py") == \
        ("alice", ("attention", "attention.py"))
    assert nbgrader_platform.nbgrader_parts("c/submitted/bob/attention") == ("bob", ("attention",))
    assert nbgrader_platform.nbgrader_parts("c/submitted/bob") == ("bob", ())
    assert nbgrader_platform.nbgrader_parts("subs/alice.py") is None
    assert nbgrader_platform.nbgrader_parts("c/submitted/a/b/c/d/e.py") is None


def test_metadata_subset_parser_reads_what_pyyaml_reads():
    subset = gradescope_metadata.parse_metadata_subset(METADATA)
    assert subset == {
        "submission_31000001": {
            "people": [{"name": "Jane Doe", "sid": "12345", "email": "jane@example.edu"}],
            "created_at": "2026-11-30T12:00:00-08:00"},
        "submission_31000002": {
            "people": [{"name": "Li Lei", "sid": "12346", "email": "lilei@example.edu"},
                       {"name": "Han Meimei", "sid": "12347", "email": "hanmm@example.edu"}],
            "created_at": "2026-11-30T13:00:00-08:00"}}
    loader = gradescope_metadata._tolerant_loader()
    if loader is not None:
        import yaml
        data = yaml.load(METADATA, Loader=loader)
        assert {k: {"people": gradescope_metadata._people(v), "created_at": gradescope_metadata._created(v)}
                for k, v in data.items()} == subset


def test_metadata_never_runs_code_and_is_bounded(tmp_path):
    evil = tmp_path / "submission_metadata.yml"
    evil.write_text("submission_1: !!python/object/apply:os.system ['touch %s']\n"
                    % (tmp_path / "pwned"), encoding="utf-8")
    data, note = gradescope_metadata.read_metadata(str(evil))
    assert not (tmp_path / "pwned").exists() and note is None
    assert data == {"submission_1": {"people": [], "created_at": ""}}
    big = tmp_path / "big" / "submission_metadata.yml"
    big.parent.mkdir()
    with open(big, "wb") as handle:
        handle.truncate(gradescope_metadata.METADATA_BYTES + 1)
    data, note = gradescope_metadata.read_metadata(str(big))
    assert data == {} and "could not be read" in note
    link = tmp_path / "link" / "submission_metadata.yml"
    link.parent.mkdir()
    os.symlink("/etc/passwd", link)
    data, note = gradescope_metadata.read_metadata(str(link))
    assert data == {} and "could not be read" in note


def test_metadata_without_pyyaml_uses_the_subset_parser(tmp_path, monkeypatch):
    (tmp_path / "submission_metadata.yml").write_text(METADATA, encoding="utf-8")
    monkeypatch.setattr(gradescope_metadata, "_tolerant_loader", lambda: None)
    data, note = gradescope_metadata.read_metadata(str(tmp_path / "submission_metadata.yml"))
    assert note is None and data["submission_31000001"]["people"][0]["sid"] == "12345"
    assert data["submission_31000002"]["created_at"] == "2026-11-30T13:00:00-08:00"


# --- fixtures: one class handed in four ways --------------------------------------------------

def _canvas(root):
    canvas = root / "canvas"
    canvas.mkdir()
    shutil.copy(ALICE, canvas / "wangli_10000_90000_attention.py")
    shutil.copy(ALICE, canvas / "liuyang_LATE_10001_90001_attention.py")
    shutil.copy(STUB, canvas / "zhaomin_10002_90002_attention.py")      # the first try
    shutil.copy(ALICE, canvas / "zhaomin_10002_90002_attention-1.py")   # the resubmission
    shutil.copy(ALICE, canvas / "sunqi_10003_90003_attention.py")
    # Mallory (10005) uploaded "_10000_99999_attention-9.py": it imitates wangli's prefix
    shutil.copy(STUB, canvas / "mallory_10005_90005__10000_99999_attention-9.py")
    (canvas / "index.html").write_text("<html></html>", encoding="utf-8")
    return canvas


def _moodle(root):
    moodle = root / "moodle"
    moodle.mkdir()
    for who, ident in (("Fang Wu", 10006), ("Zhou Tao", 10007), ("Chen Jing", 10008)):
        folder = moodle / f"{who}_{ident}_assignsubmission_file_"
        folder.mkdir()
        shutil.copy(ALICE, folder / "attention.py")
    text = moodle / "Fang Wu_10006_assignsubmission_onlinetext_"
    text.mkdir()
    (text / "onlinetext.html").write_text("<p>see my file</p>", encoding="utf-8")
    zipped = moodle / "Sun Li_10009_assignsubmission_file_"   # the work as a zip: found
    zipped.mkdir()
    with zipfile.ZipFile(zipped / "作业.zip", "w") as archive:
        archive.write(ALICE, "作业/attention.py")
    nothing = moodle / "Wu Kong_10010_assignsubmission_file_"  # no code at all: missing work
    nothing.mkdir()
    (nothing / "report.pdf").write_bytes(b"%PDF-1.4")
    return moodle


def _gradescope(root):
    export_dir = root / "assignment_4242_export"
    export_dir.mkdir()
    (export_dir / "submission_metadata.yml").write_text(METADATA, encoding="utf-8")
    for ident in ("31000001", "31000002"):
        folder = export_dir / f"submission_{ident}"
        folder.mkdir()
        shutil.copy(ALICE, folder / "attention.py")
    return export_dir


def _nbgrader(root):
    submitted = root / "course" / "submitted"
    for student in ("alice", "bob"):
        folder = submitted / student / "attention"
        folder.mkdir(parents=True)
        shutil.copy(ALICE, folder / "attention.py")
        (folder / "timestamp.txt").write_text("2026-12-01 10:00:00", encoding="utf-8")
    return submitted


def _paths(*folders):
    return [str(p) for f in folders for p in sorted(f.iterdir())]


def test_resolve_names_each_layout(tmp_path):
    canvas, moodle = _canvas(tmp_path), _moodle(tmp_path)
    gradescope, submitted = _gradescope(tmp_path), _nbgrader(tmp_path)
    nb_files = [str(submitted / s / "attention" / "attention.py") for s in ("alice", "bob")]
    batch = platforms.resolve(_paths(canvas, moodle, gradescope) + nb_files)
    got = {s.name: (s.student_id, s.student_name, s.layout) for s in batch.submissions}
    assert got == {
        "wangli_10000": ("10000", "wangli", "canvas"),
        "liuyang_10001": ("10001", "liuyang", "canvas"),
        "zhaomin_10002": ("10002", "zhaomin", "canvas"),
        "sunqi_10003": ("10003", "sunqi", "canvas"),
        "mallory_10005": ("10005", "mallory", "canvas"),
        "Fang Wu_10006": ("10006", "Fang Wu", "moodle"),
        "Zhou Tao_10007": ("10007", "Zhou Tao", "moodle"),
        "Chen Jing_10008": ("10008", "Chen Jing", "moodle"),
        "Sun Li_10009": ("10009", "Sun Li", "moodle"),
        "Wu Kong_10010": ("10010", "Wu Kong", "moodle"),
        "Jane Doe_12345": ("12345", "Jane Doe", "gradescope"),
        "Li Lei; Han Meimei_12346;12347": ("12346;12347", "Li Lei; Han Meimei", "gradescope"),
        "alice": ("alice", "alice", "nbgrader"),
        "bob": ("bob", "bob", "nbgrader")}
    wangli = next(s for s in batch.submissions if s.name == "wangli_10000")
    assert wangli.path.endswith("wangli_10000_90000_attention.py") and not wangli.notes
    zhaomin = next(s for s in batch.submissions if s.name == "zhaomin_10002")
    assert zhaomin.path.endswith("attention-1.py")
    assert any("zhaomin_10002_90002_attention.py was not graded" in n for n in zhaomin.notes)
    notes = "\n".join(batch.notes)
    for skipped in ("index.html", "submission_metadata.yml", "onlinetext"):
        assert f"skipped {skipped}" in notes or skipped in notes
    assert not any(s.path.endswith((".yml", ".html")) or "onlinetext" in s.path
                   for s in batch.submissions)
    # whole folders given: each is opened, with the same names
    again = platforms.resolve([str(canvas), str(moodle), str(gradescope), str(submitted)])
    assert {s.name: (s.student_id, s.layout) for s in again.submissions} == \
        {n: (i, lay) for n, (i, _, lay) in got.items()}


def test_explicit_layouts_and_fallbacks(tmp_path):
    canvas = _canvas(tmp_path)
    plain = platforms.resolve(_paths(canvas), "plain")
    assert {s.name for s in plain.submissions} == {
        "wangli_10000_90000_attention", "liuyang_LATE_10001_90001_attention",
        "zhaomin_10002_90002_attention", "zhaomin_10002_90002_attention-1",
        "sunqi_10003_90003_attention", "mallory_10005_90005__10000_99999_attention-9"}
    assert all(s.layout == "plain" for s in plain.submissions)
    odd = tmp_path / "alice.py"
    shutil.copy(ALICE, odd)
    moodle = platforms.resolve([str(odd)], "moodle")
    assert [(s.name, s.layout) for s in moodle.submissions] == [("alice", "plain")]
    assert "does not look like moodle" in "\n".join(moodle.notes)
    auto = platforms.resolve([str(odd), os.path.join(KIT, "examples", "erik")])
    assert [(s.name, s.student_id, s.layout) for s in auto.submissions] == \
        [("alice", "alice", "plain"), ("erik", "erik", "plain")]
    with pytest.raises(ValueError):
        platforms.resolve([str(odd)], "blackboard")
    loose = tmp_path / "submitted" / "carol.py"  # a file right in submitted/: not nbgrader's
    loose.parent.mkdir()
    shutil.copy(ALICE, loose)
    assert [(s.name, s.layout) for s in platforms.resolve([str(loose)]).submissions] == \
        [("carol", "plain")]


def test_hostile_paths_never_escape(tmp_path):
    export_dir = tmp_path / "export"
    export_dir.mkdir()
    (export_dir / "submission_metadata.yml").write_text(
        "../../etc:\n  :submitters:\n  - :name: \"=cmd|' /C calc'!A0\"\n    :sid: '../1'\n"
        "submission_7:\n  :submitters:\n  - :name: \"\\e[31mx\\u202e\"\n    :sid: '=7'\n",
        encoding="utf-8")
    (export_dir / "submission_7").mkdir()
    batch = platforms.resolve([str(export_dir)])
    (only,) = batch.submissions
    assert only.path == str(export_dir / "submission_7")
    assert "\x1b" not in only.student_name and "\u202e" not in only.student_name
    # an SID that is an id only once cleaned ("=7" -> "7") is nobody's (test_layouts_attacks)
    assert only.student_id == "" and only.flags == [
        "submission_7: SID '=7' in submission_metadata.yml is not an id as it is (it would "
        "read as '7'); no student id is given"]


# --- identity only from what the LMS controls ----------------------------------------------

def _files(folder, names, source=ALICE):
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        shutil.copy(source, folder / name)
    return folder


def _by_id(batch):
    return {s.student_id: s for s in batch.submissions}


def test_a_file_named_like_a_classmates_download_name_stays_its_uploaders(tmp_path):
    # before: Mallory's upload "_10000_99999_attention-9.py" was read as user 10000, replaced
    # wangli's graded file; "_10002_..." made a row for 10002, who handed nothing in
    canvas = _files(tmp_path / "canvas", ["wangli_10000_90000_attention.py",
                                          "mallory_10005_90005_attention.py"])
    _files(canvas, ["mallory_10005_90006__10000_99999_attention-9.py",
                    "mallory_10005_90007__10002_99999_attention.py"], STUB)
    batch = platforms.resolve([str(canvas)])
    got = _by_id(batch)
    assert sorted(got) == ["10000", "10005"]
    assert got["10000"].path == str(canvas / "wangli_10000_90000_attention.py")
    assert got["10000"].flags == []
    assert got["10005"].path == str(canvas / "mallory_10005_90005_attention.py")
    assert got["10005"].flags == [   # in the order her files rank (the newest attachment first)
        "the uploaded file's own name claims Canvas user 10002; graded as user 10005's "
        "(mallory_10005_90007__10002_99999_attention.py)",
        "the uploaded file's own name claims Canvas user 10000; graded as user 10005's "
        "(mallory_10005_90006__10000_99999_attention-9.py)"]
    assert sum("FLAG the uploaded file's own name claims" in n for n in batch.notes) == 2


def test_one_canvas_user_under_two_names_is_flagged_never_merged(tmp_path):
    canvas = _files(tmp_path / "canvas", ["wangli_10000_90000_attention.py",
                                          "mallory_10000_90001_attention-3.py",
                                          "sunqi_10003_90003_attention.py"])
    batch = platforms.resolve([str(canvas)])
    rows = {s.name: s for s in batch.submissions}
    assert set(rows) == {"wangli_10000", "mallory_10000", "sunqi_10003"}
    for name in ("wangli_10000", "mallory_10000"):   # both kept, neither with an id to export
        assert rows[name].student_id == "" and rows[name].path.endswith(
            {"wangli_10000": "90000_attention.py", "mallory_10000": "attention-3.py"}[name])
        assert rows[name].flags == ["Canvas user 10000 appears under 2 names in this download "
                                    "(mallory, wangli); no student id is given until you check "
                                    "which is theirs"]
    assert rows["sunqi_10003"].student_id == "10003" and rows["sunqi_10003"].flags == []


def test_canvas_anonymous_grading_gives_no_student_id(tmp_path):
    # Canvas writes "[LATE_]anon_<anonymous id>": that id is no user id, even all digits
    canvas = _files(tmp_path / "canvas", ["anon_12345_90000_attention.py",
                                          "LATE_anon_aB3xZ_90001_attention.py"])
    batch = platforms.resolve([str(canvas)])
    assert sorted((s.name, s.student_id, s.late_flag, s.flags) for s in batch.submissions) == [
        ("anon_12345", "", False, ["Canvas anonymous grading: anon_12345 is not a user id; no "
                                   "student id is given (match it in Canvas)"]),
        ("anon_aB3xZ", "", True, ["Canvas anonymous grading: anon_aB3xZ is not a user id; no "
                                  "student id is given (match it in Canvas)"])]


@pytest.mark.slow
def test_nbgrader_students_are_checked_against_the_course_database(tmp_path):
    api = pytest.importorskip("nbgrader.api")
    submitted = _nbgrader(tmp_path)          # alice and bob handed in
    with api.Gradebook(f"sqlite:///{tmp_path / 'course' / 'gradebook.db'}") as book:
        book.add_student("alice", first_name="Alice", last_name="Wang")
    batch = platforms.resolve([str(submitted)])
    flags = {s.student_id: s.flags for s in batch.submissions}
    assert flags == {"alice": [], "bob": ["nbgrader student bob is not in the course's gradebook.db"]}


def test_a_students_own_folder_is_never_opened_as_a_download(tmp_path):
    # a Moodle student folder, or an nbgrader one, holding files named like Canvas downloads
    moodle = tmp_path / "moodle" / "Mallory Li_10005_assignsubmission_file_"
    _files(moodle, ["wangli_10000_90000_attention.py", "zhaomin_10002_90002_attention.py"])
    nb = tmp_path / "course" / "submitted" / "mallory" / "attention"
    _files(nb, ["wangli_10000_90000_attention.py"])
    batch = platforms.resolve([str(moodle), str(nb)])
    assert [(s.student_id, s.layout, s.path) for s in batch.submissions] == [
        ("10005", "moodle", str(moodle)), ("mallory", "nbgrader", str(nb))]
    assert batch.submissions[0].flags == [
        "the uploaded file's own name claims Moodle participant 10000; graded as user 10005's "
        "(wangli_10000_90000_attention.py)",
        "the uploaded file's own name claims Moodle participant 10002; graded as user 10005's "
        "(zhaomin_10002_90002_attention.py)"]
    assert batch.submissions[1].flags == [
        "the uploaded file's own name claims student 10000; graded as user mallory's "
        "(wangli_10000_90000_attention.py)"]
    # a folder only some of whose entries have Canvas names is one submission, not a download
    mixed = _files(tmp_path / "mallory", ["helper.py", "wangli_10000_90000_attention.py"])
    batch = platforms.resolve([str(mixed)])
    assert [(s.name, s.student_id, s.layout) for s in batch.submissions] == \
        [("mallory", "mallory", "plain")]
    assert any("not opened as a download" in n and "helper.py" in n for n in batch.notes)
    # a student's folder holding only Canvas-named files, graded beside plain folders
    alice = _files(tmp_path / "subs" / "alice", ["attention.py"])
    dressed = _files(tmp_path / "subs" / "eve", ["wangli_10000_90000_attention.py"])
    batch = platforms.resolve([str(alice), str(dressed)])
    said = ("is named as Canvas names its downloads but was given beside plain submissions: no "
            "student id is given (grade an LMS's download on its own, and students' folders "
            "with --layout plain)")
    assert [(s.name, s.student_id, s.flags) for s in batch.submissions] == [
        ("alice", "alice", []), ("eve-wangli_10000", "", ["eve " + said])]
    # the same with a file a student named so, given beside plain ones
    emailed = tmp_path / "emailed" / "wangli_10000_90000_attention.py"
    _files(emailed.parent, [emailed.name])
    batch = platforms.resolve([str(alice), str(emailed)])
    assert [(s.name, s.student_id, s.flags) for s in batch.submissions] == [
        ("alice", "alice", []), ("unverified-wangli_10000", "", [emailed.name + " " + said])]


def test_canvas_late_flag_and_no_file_time(tmp_path):
    canvas = _files(tmp_path / "canvas", ["liuyang_LATE_10001_90001_attention.py",
                                          "wangli_10000_90000_attention.py"])
    got = _by_id(platforms.resolve([str(canvas)]))
    assert (got["10001"].late_flag, got["10000"].late_flag) == (True, False)
    # the files' times are when Canvas made the zip, not when they were handed in
    assert (got["10001"].submitted_at, got["10001"].time_source) == ("", "")


def test_gradescope_times_and_cross_checks(tmp_path):
    export_dir = _gradescope(tmp_path)
    extra = METADATA + ("submission_31000003:\n  :submitters:\n  - :name: Jane Again\n"
                        "    :sid: '12345'\n  :created_at: 2026-12-01 09:30:00.5 +08:00\n"
                        "submission_31000009:\n  :submitters:\n  - :name: No Folder\n"
                        "    :sid: '99999'\n")
    (export_dir / "submission_metadata.yml").write_text(extra, encoding="utf-8")
    _files(export_dir / "submission_31000003", ["attention.py"])
    _files(export_dir / "submission_31000004", ["attention.py"])   # not in the metadata
    batch = platforms.resolve([str(export_dir)])
    rows = {s.path.rsplit("/", 1)[1]: s for s in batch.submissions}
    assert (rows["submission_31000002"].submitted_at, rows["submission_31000002"].time_source) == \
        ("2026-11-30T13:00:00-08:00", "gradescope-metadata")
    jane = rows["submission_31000003"]   # the later of Jane's two: one row, both flagged
    assert "submission_31000001" not in rows and jane.student_id == "12345"
    assert jane.submitted_at == "2026-12-01T09:30:00.500000+08:00"
    assert jane.flags == ["SID 12345 is in more than one submission of submission_metadata.yml"]
    loose = rows["submission_31000004"]
    assert loose.student_id == "" and loose.flags == [
        "submission_31000004: not in submission_metadata.yml; named after its folder, no student id"]
    assert loose.time_source == "file-mtime"
    assert any("1 submissions have no folder here (submission_31000009)" in n for n in batch.notes)


@pytest.mark.parametrize("text, expected", [
    ("2026-11-30 12:00:00.000000 UTC", "2026-11-30T12:00:00+00:00"),
    ("2026-11-30 12:00:00.123456 UTC\n", "2026-11-30T12:00:00.123456+00:00"),
    ("2026-12-01 10:00:00", "2026-12-01T10:00:00+00:00"),
    ("2026-11-30T20:00:00+08:00", "2026-11-30T20:00:00+08:00"),
    ("2026-11-30 12:00:00.000000000 -08:00", "2026-11-30T12:00:00-08:00"),
    ("2026-11-30 12:00:00 +0530", "2026-11-30T12:00:00+05:30"),
    ("2026-02-30 12:00:00 UTC", ""), ("2026-11-30 12:00:00 CST", ""), ("yesterday", ""),
    ("2026-11-30 12:00:00 +99:00", ""), ("", ""), ("9" * 5000, ""),
])
def test_submission_times_as_platforms_write_them(text, expected):
    assert times.parse_time(text) == expected


@pytest.mark.parametrize("text", [   # what nbgrader writes ("%Y-%m-%d %H:%M:%S.%f %Z", UTC)
    "2026-11-30 12:00:00.000000 UTC", "2026-12-01 10:00:00", "2026-11-30T20:00:00+08:00",
    "2026-11-30 12:00:00.123456+08:00", "2026-11-30 23:59:59.999999 UTC"])
def test_timestamps_read_as_nbgrader_reads_them(text):
    # (nbgrader's parse_utc reads "12:00:00 -08:00", with a space, as 12:00 UTC; this reads
    # the offset, as Gradescope's created_at needs)
    utils = pytest.importorskip("nbgrader.utils")
    import datetime
    expected = utils.parse_utc(text).replace(tzinfo=datetime.timezone.utc)  # naive UTC
    assert datetime.datetime.fromisoformat(times.parse_time(text)) == expected


def test_nbgrader_timestamp_and_the_last_resort(tmp_path):
    submitted = _nbgrader(tmp_path)   # alice's and bob's timestamp.txt: 2026-12-01 10:00:00
    (submitted / "bob" / "attention" / "timestamp.txt").write_text("last tuesday", encoding="utf-8")
    carol = _files(submitted / "carol" / "attention", ["attention.py"])
    os.symlink("/etc/hostname", carol / "timestamp.txt")     # never read through a link
    os.utime(carol / "attention.py", (1_796_000_000, 1_796_000_000))
    plain = tmp_path / "dan.py"
    shutil.copy(ALICE, plain)
    os.utime(plain, (1_796_083_200, 1_796_083_200))
    batch = platforms.resolve([str(submitted), str(plain)])
    got = {s.name: (s.submitted_at, s.time_source) for s in batch.submissions}
    assert got == {"alice": ("2026-12-01T10:00:00+00:00", "nbgrader-timestamp"),
                   "bob": (got["bob"][0] or "no time", "file-mtime"),   # its files' own time
                   "carol": ("2026-11-30T00:53:20+00:00", "file-mtime"),
                   "dan": ("2026-12-01T00:00:00+00:00", "file-mtime")}
    notes = "\n".join(batch.notes)
    assert "bob: timestamp.txt does not hold a time the grader reads ('last tuesday')" in notes
    assert "carol: timestamp.txt could not be read" in notes


def _zip(path, entries):
    import zipfile
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in entries:
            if name.endswith("@link"):
                info = zipfile.ZipInfo(name[:-5])
                info.external_attr = (0o120777 << 16)
                archive.writestr(info, data)
            else:
                archive.writestr(name, data)
    return path


def test_canvas_download_zip_given_as_downloaded(tmp_path):
    alice = open(ALICE, "rb").read()
    download = _zip(tmp_path / "submissions.zip", [
        ("wangli_10000_90000_attention.py", alice),
        ("liuyang_LATE_10001_90001_attention.ipynb", b"{}"),
        ("mallory_10005_90005__10000_99999_attention.py", b"x = 1\n"),
        ("__MACOSX/._wangli_10000_90000_attention.py", b"junk"),
        ("sunqi_10003_90003_x.py@link", b"/etc/passwd")])
    batch = platforms.resolve([str(download)])
    got = _by_id(batch)
    assert sorted(got) == ["10000", "10001", "10005"]
    assert open(got["10000"].path, "rb").read() == alice
    assert got["10000"].path.endswith("/wangli_10000_90000_attention.py")
    assert got["10001"].late_flag is True and got["10005"].flags
    notes = "\n".join(batch.notes)
    assert "submissions.zip: canvas's download zip, unpacked to a temporary folder" in notes
    assert "refused 1 entries" in notes and "sunqi_10003_90003_x.py" in notes
    assert (got["10000"].submitted_at, got["10000"].time_source) == ("", "")
    # Moodle's, with folders: each folder its participant's, with the times its entries keep
    # (test_layouts_attacks checks them against unzip)
    moodle = _zip(tmp_path / "moodle.zip", [
        ("Fang Wu_10006_assignsubmission_file_/attention.py", alice),
        ("Zhou Tao 10006 assignsubmission file _10007_assignsubmission_file_/a.zip", b"PK"),
        ("Fang Wu_10006_assignsubmission_onlinetext_/onlinetext.html", b"<p>"),
        ("../Chen Jing_10008_assignsubmission_file_/attention.py", alice)])
    batch = platforms.resolve([str(moodle)])
    assert [(s.student_id, s.name, s.path.rsplit("/", 1)[1], s.time_source)
            for s in batch.submissions] == [
        ("10006", "Fang Wu_10006", "Fang Wu_10006_assignsubmission_file_", "moodle-file-time"),
        ("10007", "Zhou Tao 10006 assignsubmission file_10007",
         "Zhou Tao 10006 assignsubmission file _10007_assignsubmission_file_", "moodle-file-time")]
    assert "refused 1 entries" in "\n".join(batch.notes)
    # a student's own zip is not a download
    own = _zip(tmp_path / "dana.zip", [("dana/attention.py", alice)])
    assert [(s.name, s.layout) for s in platforms.resolve([str(own)]).submissions] == \
        [("dana", "plain")]


# --- a real run, and the exports -------------------------------------------------------------

@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = tmp_path_factory.mktemp("class")
    canvas, moodle = _canvas(root), _moodle(root)
    gradescope, submitted = _gradescope(root), _nbgrader(root)
    out = root / "grades"
    paths = _paths(canvas, moodle, gradescope) + [str(submitted / s / "attention")
                                                  for s in ("alice", "bob")]
    run = subprocess.run([sys.executable, "-m", "grader", "grade", *paths, "--out", str(out),
                          *FAST], cwd=KIT, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stdout + run.stderr
    with open(out / "grades.csv", encoding="utf-8-sig") as handle:
        rows = {row["submission"]: row for row in csv.DictReader(handle)}
    return out, rows, run


@pytest.mark.slow
def test_grades_csv_names_every_student_by_the_lms_id(graded):
    out, rows, run = graded
    got = {name: (row["student_id"], row["name"]) for name, row in rows.items()}
    assert got == {
        "wangli_10000": ("10000", "wangli"), "liuyang_10001": ("10001", "liuyang"),
        "zhaomin_10002": ("10002", "zhaomin"), "sunqi_10003": ("10003", "sunqi"),
        "mallory_10005": ("10005", "mallory"),
        "Fang Wu_10006": ("10006", "Fang Wu"), "Zhou Tao_10007": ("10007", "Zhou Tao"),
        "Chen Jing_10008": ("10008", "Chen Jing"), "Sun Li_10009": ("10009", "Sun Li"),
        "Wu Kong_10010": ("10010", "Wu Kong"), "Jane Doe_12345": ("12345", "Jane Doe"),
        "Li Lei; Han Meimei_12346;12347": ("12346;12347", "Li Lei; Han Meimei"),
        "alice": ("alice", "alice"), "bob": ("bob", "bob")}
    # wangli keeps her own correct file: Mallory's imitation of her prefix is Mallory's 0
    assert {n: (r["status"], r["total"]) for n, r in rows.items()
            if r["total"] != "100"} == {"mallory_10005": ("graded", "0"),
                                         "Wu Kong_10010": ("missing work", "0")}, rows
    assert rows["wangli_10000"]["source"].endswith("wangli_10000_90000_attention.py")
    assert "claims Canvas user 10000; graded as user 10005's" in rows["mallory_10005"]["flags"]
    assert rows["Sun Li_10009"]["status"] == "graded"          # its 作业.zip was opened
    assert "looked for attention.py" in rows["Wu Kong_10010"]["reason"]
    assert rows["zhaomin_10002"]["source"].endswith("attention-1.py")
    header = open(out / "grades.csv", encoding="utf-8-sig").readline()
    assert header.startswith("submission,student_id,name,status,total,max,")
    assert "folder" in header and "source" in header
    row_file = gradebook.load_records(str(out))["wangli_10000"]
    assert (row_file["student_id"], row_file["student_name"], row_file["layout"]) == \
        ("10000", "wangli", "canvas")
    feedback = open(out / rows["zhaomin_10002"]["folder"] / "feedback.txt", encoding="utf-8").read()
    assert "zhaomin_10002_90002_attention.py was not graded" in feedback


@pytest.mark.slow
def test_metadata_and_junk_are_never_graded(graded):
    out, rows, run = graded
    assert not any("metadata" in name or "index" in name or "onlinetext" in name
                   for name in rows), rows
    assert not any(row["source"].endswith((".yml", ".html")) for row in rows.values())
    assert "skipped submission_metadata.yml" in run.stdout and "skipped index.html" in run.stdout
    assert not any("metadata" in entry.name for entry in os.scandir(out))


def _export(out, lms, target, *extra):
    return subprocess.run([sys.executable, "-m", "grader", "export", lms, "--from", str(out),
                           "--out", str(target), *extra], cwd=KIT, capture_output=True,
                          text=True, timeout=120)


@pytest.mark.slow
def test_export_canvas(graded, tmp_path):
    out, rows, _ = graded
    target = tmp_path / "canvas.csv"
    done = _export(out, "canvas", target, "--assignment", "Attention (12345)")
    assert done.returncode == 0, done.stderr
    lines = list(csv.reader(io.StringIO(target.read_text(encoding="utf-8-sig"))))
    assert lines[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section",
                        "Attention (12345)"]
    assert lines[1] == ["Points Possible", "", "", "", "", "100"]
    assert sorted(lines[2:]) == sorted([
        ["wangli", "10000", "", "", "", "100"], ["liuyang", "10001", "", "", "", "100"],
        ["zhaomin", "10002", "", "", "", "100"], ["sunqi", "10003", "", "", "", "100"],
        ["mallory", "10005", "", "", "", "0"], ["Jane Doe", "", "12345", "", "", "100"],
        ["Li Lei", "", "12346", "", "", "100"], ["Han Meimei", "", "12347", "", "", "100"],
        ["alice", "", "", "alice", "", "100"], ["bob", "", "", "bob", "", "100"]])
    assert done.stderr.count("a Moodle participant id") == 4
    assert done.stderr.count("missing work") == 1 and "left out Wu Kong" in done.stderr


@pytest.mark.slow
def test_export_moodle(graded, tmp_path):
    out, rows, _ = graded
    target = tmp_path / "moodle.csv"
    done = _export(out, "moodle", target)
    assert done.returncode == 0, done.stderr
    lines = list(csv.reader(io.StringIO(target.read_text(encoding="utf-8-sig"))))
    assert lines[0] == ["Identifier", "Full name", "Grade", "Maximum Grade", "Last modified (grade)"]
    assert [line[:4] for line in lines[1:]] == [
        ["Participant 10008", "Chen Jing", "100", "100"],
        ["Participant 10006", "Fang Wu", "100", "100"],
        ["Participant 10009", "Sun Li", "100", "100"],
        ["Participant 10007", "Zhou Tao", "100", "100"]]
    assert all(line[4] for line in lines[1:])
    assert done.stderr.count("not from a Moodle download") == 9
    assert "left out Wu Kong_10010: no gradable work was found" in done.stderr


def _row(name, **fields):
    row = {"name": name, "status": "graded", "total": 85.0, "max": 100.0, "parts": {},
           "reason": "", "source": "", "folder": name, "fingerprint": None,
           "student_id": "", "student_name": "", "layout": "canvas"}
    row.update(fields)
    return row


def test_export_leaves_out_grader_errors_and_neutralises_cells():
    rows = [_row("a", student_id="1", student_name="=HYPERLINK(\"http://evil\")"),
            _row("b", student_id="2", student_name="Bo", status="grader error", total=None),
            _row("c", student_id="", student_name="Cy"),
            _row("d", student_id="4", student_name="Di", status="not gradable", total=0.0)]
    text, notes = canvas_scores.canvas_text(rows, "@SUM(A1)")
    lines = list(csv.reader(io.StringIO(text)))
    assert lines[0][-1] == "'@SUM(A1)"
    assert lines[2:] == [["'=HYPERLINK(\"http://evil\")", "1", "", "", "", "85"],
                         ["Di", "4", "", "", "", "0"]]
    assert any("left out b" in n and "never exported as 0" in n for n in notes)
    assert any("left out c" in n and "no student id" in n for n in notes)
    moodle, notes = moodle_worksheet.moodle_text([_row("m", student_id="9", student_name="-2+3",
                                             layout="moodle")], now=0)
    assert list(csv.reader(io.StringIO(moodle)))[1] == \
        ["Participant 9", "'-2+3", "85", "100", "1970-01-01 00:00:00 +0000"]


def test_export_usage_errors(tmp_path):
    done = _export(tmp_path / "nothing", "canvas", tmp_path / "x.csv")
    assert done.returncode == 2 and "not a gradebook folder" in done.stderr
    (tmp_path / "empty").mkdir()
    done = _export(tmp_path / "empty", "moodle", tmp_path / "x.csv")
    assert done.returncode == 2 and "no graded rows" in done.stderr


# --- an earlier assignment's module uploaded as a file of its own (builds_on, "student") -------

def _class(folder, names):
    folder.mkdir(parents=True)
    for name in names:
        (folder / name).write_text(f"# {name}\n", encoding="utf-8")
    return folder


def test_an_earlier_module_uploaded_on_its_own_rides_with_the_work_of_the_same_student(tmp_path):
    """Canvas keeps each uploaded file apart: with earlier=("attention",), a student's
    attention.py is no candidate for the work but its companion (the newest upload of it);
    another student's file never is, whatever it is named; a student who uploaded only
    attention.py has it graded as the work, as without `earlier`."""
    canvas = _class(tmp_path / "canvas", [
        "wangli_10000_90000_transformer.py", "wangli_10000_90001_attention.py",
        "wangli_10000_90004_Attention-1.py",              # the newer upload of it
        "wangli_10000_90005_attention.txt",               # not code: no companion
        "wangli_10000_90003_attention",                   # nor is a file without a suffix
        "zhaomin_10002_90002_transformer.ipynb",
        "liuyang_10001_90003_attention.ipynb",             # no transformer at all
        "mallory_10005_90005__10000_90006_attention.py"])  # claims wangli's id
    batch = platforms.resolve([str(canvas)], module="transformer", earlier=("attention",))
    rows = {s.name: s for s in batch.submissions}
    assert sorted(rows) == ["liuyang_10001", "mallory_10005", "wangli_10000", "zhaomin_10002"]
    assert os.path.basename(rows["wangli_10000"].path) == "wangli_10000_90000_transformer.py"
    assert [(m, os.path.basename(p)) for m, p in rows["wangli_10000"].companions] == [
        ("attention", "wangli_10000_90004_Attention-1.py")]
    assert rows["wangli_10000"].notes == [
        "wangli_10000_90005_attention.txt was not graded: wangli_10000_90000_transformer.py is "
        "this student's latest or main file",
        "wangli_10000_90003_attention was not graded: wangli_10000_90000_transformer.py is "
        "this student's latest or main file",
        "wangli_10000_90001_attention.py was not graded: wangli_10000_90000_transformer.py is "
        "this student's latest or main file"]   # intake says whether the companion was used
    assert rows["zhaomin_10002"].companions == ()
    assert os.path.basename(rows["liuyang_10001"].path) == "liuyang_10001_90003_attention.ipynb"
    assert rows["liuyang_10001"].companions == ()
    assert rows["mallory_10005"].companions == () and rows["mallory_10005"].flags
    # without `earlier` (provide = "given", or no builds_on): one file, the others noted
    plain = {s.name: s for s in platforms.resolve([str(canvas)], module="transformer").submissions}
    assert plain["wangli_10000"].companions == ()
    assert len(plain["wangli_10000"].notes) == 4


def test_moodle_files_without_folders_carry_the_earlier_module_too(tmp_path):
    moodle = _class(tmp_path / "moodle", [
        "Fang Wu_10006_assignsubmission_file_transformer.py",
        "Fang Wu_10006_assignsubmission_file_attention.ipynb",
        "Li Lei_10007_assignsubmission_file_transformer.py"])
    batch = platforms.resolve([str(moodle)], "moodle", module="transformer", earlier=("attention",))
    rows = {s.name: s for s in batch.submissions}
    assert [(m, os.path.basename(p)) for m, p in rows["Fang Wu_10006"].companions] == [
        ("attention", "Fang Wu_10006_assignsubmission_file_attention.ipynb")]
    assert os.path.basename(rows["Fang Wu_10006"].path) == \
        "Fang Wu_10006_assignsubmission_file_transformer.py"
    assert rows["Li Lei_10007"].companions == ()


def test_a_work_named_like_the_earlier_module_stays_the_work(tmp_path):
    """A course's `attention2` builds on `attention`: attention2.py also reads as a re-upload
    of attention.py (`-2`, `2`), but what is named as the work is the work."""
    canvas = _class(tmp_path / "canvas", ["wangli_10000_90000_attention2.py",
                                          "wangli_10000_90001_attention.py"])
    [sub] = platforms.resolve([str(canvas)], "canvas", module="attention2",
                            earlier=("attention",)).submissions
    assert os.path.basename(sub.path) == "wangli_10000_90000_attention2.py"
    assert [(m, os.path.basename(p)) for m, p in sub.companions] == [
        ("attention", "wangli_10000_90001_attention.py")]


def test_what_a_student_is_told_of_their_files_is_in_their_language(tmp_path):
    """The notes that reach a student's feedback (which file was graded, which one is their
    earlier module) in a `--lang zh` run are Chinese."""
    from grader import i18n
    canvas = _class(tmp_path / "canvas", ["wangli_10000_90000_transformer.py",
                                          "wangli_10000_90001_attention.py",
                                          "wangli_10000_90002_notes.py"])
    before = i18n.language()
    try:
        i18n.set_language("zh")
        [sub] = platforms.resolve([str(canvas)], "canvas", module="transformer",
                                earlier=("attention",)).submissions
    finally:
        i18n.set_language(before)
    assert sub.notes == [
        "wangli_10000_90002_notes.py 没有评分：wangli_10000_90000_transformer.py 才是该学生最新的"
        "或主要的文件"]


def test_a_long_run_of_digits_in_an_upload_name_is_read_in_one_pass(tmp_path):
    """`attention` + 60 digits + `x`: read as a re-upload suffix, a digit run once split
    two ways each had 2^60 ways to fail (25 digits took 4 s); it is now no companion and
    no work name, at once (a regression hangs until pytest-timeout)."""
    canvas = _class(tmp_path / "canvas", ["wangli_10000_90000_transformer.py",
                                          "wangli_10000_90001_attention" + "1" * 60 + "x.py",
                                          "wangli_10000_90002_transformer" + "2" * 60 + "x.py"])
    [sub] = platforms.resolve([str(canvas)], "canvas", module="transformer",
                            earlier=("attention",)).submissions
    assert os.path.basename(sub.path) == "wangli_10000_90000_transformer.py"
    assert sub.companions == ()
    from grader.intake.naming import like
    assert like("attention").match("attention" + "1" * 5000 + "-2 (3)_v4 final copy")
    assert not like("attention").match("attention" + "1" * 5000 + "x")


def test_a_zip_named_as_the_earlier_module_is_the_work_not_its_companion(tmp_path):
    """Intake stages an earlier module from a .py or a notebook only, so an upload
    `attention.zip` (which may hold everything) stays a candidate for the work."""
    canvas = _class(tmp_path / "canvas", ["bobli_10001_90002_attention.zip",
                                          "bobli_10001_90003_README.md"])
    [sub] = platforms.resolve([str(canvas)], "canvas", module="transformer",
                            earlier=("attention",)).submissions
    assert os.path.basename(sub.path) == "bobli_10001_90002_attention.zip"
    assert sub.companions == ()
