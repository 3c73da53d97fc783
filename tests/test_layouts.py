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
import sqlite3
import tempfile
from grader.platforms import base as platform_base
from grader.platforms import recognition
from grading import fast, grades, run_grader

ALICE = os.path.join(KIT, "examples", "alice.py")
STUB = os.path.join(SUBMISSIONS, "zero_stub.py")
FAST = fast(jobs=2)

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
    run = run_grader("grade", *paths, "--out", str(out), *FAST, timeout=900)
    assert run.returncode == 0, run.stdout + run.stderr
    rows = grades(out)
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
    return run_grader("export", lms, "--from", str(out), "--out", str(target), *extra, timeout=120)


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


# ---- at its edges (issue 19, from tests/test_mutants_layouts.py) ----------------------------
# grader/platforms/ (recognition.py and each platform's recognition) at its edges (issue 19): who each file belongs to.
#
# Every expectation here is written out by hand from the rule docs/explanation/identity.md (with the platform pages) and the module's
# docstring state (Canvas's `name[_LATE]_userid_attachmentid_file`, Moodle's
# `full name_id_assignsubmission_plugin_`, nbgrader's `submitted/<student>/`, Gradescope's
# metadata), never computed by the code under test; each cap is checked on both sides with
# its documented figure as a literal, and each flag and note by its whole text.

def _touch(folder, names, data=b"x = 1\n"):
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        (folder / name).write_bytes(data)
    return folder


def _rows(batch):
    return sorted((s.name, s.student_id, s.layout, os.path.basename(s.path)) for s in batch.submissions)


def _edge_canvas(name, user, attachment, file, base, who=None, late=False, again=0, claims=(),
            ambiguous=False):
    who = who if who is not None else name
    return {"name": who, "lms_name": who, "user": user, "attachment": attachment, "late": late,
            "file": file, "base": base, "resubmission": again, "claims": list(claims),
            "ambiguous": ambiguous}


@pytest.mark.parametrize("name, expected", [
    ("wangli_10000_90000_attention.py",
     _edge_canvas("wangli", "10000", "90000", "attention.py", "attention.py")),
    # a name that starts with digits: the first segment is never an id
    ("0_a_10000_90000_attention.py",
     _edge_canvas("0_a", "10000", "90000", "attention.py", "attention.py")),
    # a name that ends in digits, then LATE: the ids are the two after LATE
    ("a_0_LATE_10005_90005_x.py",
     _edge_canvas("a_0", "10005", "90005", "x.py", "x.py", late=True)),
    ("liuyang_LATE_10001_90001_attention-3.ipynb",
     _edge_canvas("liuyang", "10001", "90001", "attention-3.ipynb", "attention.ipynb", late=True,
             again=3)),
    # four digits are a resubmission number, five are part of the student's name
    ("z_1_2_attention-1234.py", _edge_canvas("z", "1", "2", "attention-1234.py", "attention.py", again=1234)),
    ("z_1_2_attention-12345.py", _edge_canvas("z", "1", "2", "attention-12345.py", "attention-12345.py")),
    # twenty digits are an id, twenty-one are not (then no two id segments follow the name)
    ("z_" + "1" * 20 + "_2_a.py", _edge_canvas("z", "1" * 20, "2", "a.py", "a.py")),
    # a student's file name with digit pairs: each pair's first is a claimed user, once
    ("m_10005_90005_1_2_1_2_x.py",
     _edge_canvas("m", "10005", "90005", "1_2_1_2_x.py", "1_2_1_2_x.py", claims=["1", "2"],
             ambiguous=True)),
    # a pair starting with the uploader's own id claims nobody
    ("m_10005_90005_10005_7_x.py",
     _edge_canvas("m", "10005", "90005", "10005_7_x.py", "10005_7_x.py", ambiguous=True)),
    # a pair at the very end of the file name claims too
    ("m_10005_90005_a_7_8", _edge_canvas("m", "10005", "90005", "a_7_8", "a_7_8", claims=["7"])),
    # a file name that is only digits does not split two ways: nothing follows it
    ("m_10005_90005_7", _edge_canvas("m", "10005", "90005", "7", "7")),
    ("m_10005_90005_7_a.py", _edge_canvas("m", "10005", "90005", "7_a.py", "7_a.py", ambiguous=True)),
    # a name that is LATE alone is a name (LATE needs a name before it)
    ("LATE_10000_90000_a.py", _edge_canvas("LATE", "10000", "90000", "a.py", "a.py")),
    # letters, marks, numbers and connector punctuation are word characters
    # (é decomposed, a connector), shown in NFC
    ("\u738b\u529bze\u0301\u203f_10000_90000_a.py",
     _edge_canvas("\u738b\u529bz\u00e9\u203f", "10000", "90000", "a.py", "a.py")
     | {"lms_name": "\u738b\u529bze\u0301\u203f"}),
])
def test_every_field_of_a_canvas_name(name, expected):
    assert canvas_platform.parse_canvas(name) == expected


@pytest.mark.parametrize("name", [
    "z_" + "1" * 21 + "_2_a.py",       # 21 digits: no id
    "a_0_LATE_10005",                   # no attachment id and no file after LATE's ids
    "a_0_LATE_10005_90005",             # the ids but no file
    "a_0_LATE_x_90005_f.py",            # LATE, then no id: the 0 is no user id either
    "x_10000_90000_",                   # an empty file name
    "x_10000_90000",                    # no file name at all
    "wang-li_10000_90000_a.py",         # "-" is no word character: Canvas never writes it
    "wang li_10000_90000_a.py",
])
def test_names_canvas_does_not_write(name):
    assert canvas_platform.parse_canvas(name) is None


def test_a_canvas_name_is_read_within_its_first_255_characters():
    # the ids and the first letter of the file fit in 255 characters; the rest is cut
    head = "x" * (255 - len("_10000_90000_a")) + "_10000_90000_a"
    assert len(head) == 255
    assert canvas_platform.parse_canvas(head + "bcdef.py")["file"] == "a"
    # the file name starts at the 256th character: cut to nothing
    ids = "x" * (255 - len("_10000_90000_")) + "_10000_90000_"
    assert len(ids) == 255 and canvas_platform.parse_canvas(ids + "a.py") is None


@pytest.mark.parametrize("name, expected", [
    ("Fang Wu_10006_assignsubmission_file_",
     {"name": "Fang Wu", "lms_name": "Fang Wu", "id": "10006", "plugin": "file", "file": "",
      "feedback": False, "claims": []}),
    ("Fang Wu_10006_assignfeedback_comments_",
     {"name": "Fang Wu", "lms_name": "Fang Wu", "id": "10006", "plugin": "comments", "file": "",
      "feedback": True, "claims": []}),
    # the file part claims a classmate twice over (a Canvas prefix and a Moodle prefix)
    ("Fang Wu_10006_assignsubmission_file_w_10000_90000_Li_10007_assignsubmission_file_a.py",
     {"name": "Fang Wu", "lms_name": "Fang Wu", "id": "10006", "plugin": "file",
      "file": "w_10000_90000_Li_10007_assignsubmission_file_a.py", "feedback": False,
      "claims": ["10000", "10007"]}),
    # a plugin name of 40 characters
    ("A_1_assignsubmission_" + "p" * 40 + "_",
     {"name": "A", "lms_name": "A", "id": "1", "plugin": "p" * 40, "file": "",
      "feedback": False, "claims": []}),
])
def test_every_field_of_a_moodle_name(name, expected):
    assert moodle_platform.parse_moodle(name) == expected


@pytest.mark.parametrize("name", [
    "A_1_assignsubmission_" + "p" * 41 + "_",     # a plugin of 41 characters
    "A_1_assignsubmission_File_",                 # Moodle's plugin names are lower case
    "A_" + "1" * 21 + "_assignsubmission_file_",  # an id of 21 digits
    "_1_assignsubmission_file_",                  # no name
    "A_1_assigngrade_file_",
])
def test_names_moodle_does_not_write(name):
    assert moodle_platform.parse_moodle(name) is None


def test_a_moodle_name_is_read_within_its_first_255_characters():
    prefix = "_10006_assignsubmission_file_"
    name = "F" * (255 - len(prefix)) + prefix
    assert moodle_platform.parse_moodle(name + "attention.py")["file"] == ""
    assert moodle_platform.parse_moodle(name[1:] + "attention.py")["file"] == "a"
    assert moodle_platform.parse_moodle("F" * 255 + prefix) is None     # the name alone fills 255


@pytest.mark.parametrize("file_name, own, claims", [
    ("wangli_10000_90000_attention.py", "10005", ["10000"]),
    ("wangli_10000_90000_attention.py", "10000", []),
    # not a Canvas name (no word characters before the ids), still a pair of digit segments
    ("-_10000_90000_attention.py", "10005", ["10000"]),
    ("a_1_2_3", "9", ["1"]),          # the pair must be followed by something: (2, 3) ends it
    ("a_1_2", "9", []),
    ("1_2_x", "9", ["1"]),            # at the very start too
    ("Li_10007_assignsubmission_file_a.py", "9", ["10007"]),
    ("x_10007_assignfeedback_a.py", "9", ["10007"]),
    ("10007_assignsubmission_a.py", "9", ["10007"]),
    ("x10007_assignsubmission_a.py", "9", []),   # the id must start at a "_" or the start
    ("attention.py", "9", []),
])
def test_claimed_ids(file_name, own, claims):
    assert platform_base.claimed_ids(file_name, own) == claims


@pytest.mark.parametrize("raw, safe", [
    ("1" * 150, "1" * 100),                       # 100 characters
    ("-+@.x", "x"), (".5", "5"), ("x-", "x-"),    # never starting like a formula
    ("a_b c\td", "a_bcd"), ("a.b@c+d-e", "a.b@c+d-e"),
    # a very long value: only its first 400 characters are looked at (and no marker of
    # the cut is read as part of the id: it gave "cutbythegrader3morecharacters")
    ("\u540d" * 398 + "12345", "12"),
    ("\u540d" * 397 + "12345", "123"),
])
def test_student_id(raw, safe):
    assert layouts.student_id(raw) == safe


@pytest.mark.parametrize("raw, shown", [
    ("Fang\tWu", "Fang Wu"), ("  Fang   Wu  ", "Fang Wu"), ("Fang\nWu", "Fang"),
    ("\n\n  \nWu", "Wu"), ("", ""), ("\n", ""),
    ("e\u0301", "\u00e9"),
    ("x" * 250, "x" * 200),
    # a very long value: its first 400 characters (never the marker of a cut)
    (" " * 398 + "wu", "wu"), (" " * 399 + "wu", "w"),
])
def test_display_name(raw, shown):
    assert layouts.display_name(raw) == shown


def test_the_documented_caps():
    assert (layouts.MAX_NAME, layouts.MAX_ENTRIES, layouts.MAX_ID, layouts.MAX_DISPLAY) == \
        (255, 10_000, 100, 200)
    assert gradescope_metadata.METADATA_BYTES == 16 * 1024 * 1024 and gradescope_metadata.METADATA_KEYS == 100_000
    assert (layouts.DOWNLOAD_ZIP_BYTES, layouts.DOWNLOAD_ENTRIES) == (1024 ** 3, 20_000)


@pytest.mark.parametrize("path, parts", [
    ("c/submitted/alice/attention/attention.py", ("alice", ("attention", "attention.py"))),
    ("c/submitted/alice/attention/x/attention.py", None),     # four below submitted/
    ("c/submitted", None),                                      # submitted/ itself
    ("submitted/alice", ("alice", ())),
    # the innermost submitted/ counts
    ("c/submitted/submitted/alice", ("alice", ())),
    ("c/submitted/bob/submitted/alice/a.py", ("alice", ("a.py",))),
    ("/submitted/alice/attention", ("alice", ("attention",))),     # right under the root
])
def test_nbgrader_parts(path, parts):
    assert nbgrader_platform.nbgrader_parts(path) == parts


@pytest.mark.parametrize("files, graded", [
    # the file most like attention.py first, whatever its attachment id
    (["w_10000_90001_notes.pdf", "w_10000_90000_attention.py"], "w_10000_90000_attention.py"),
    (["w_10000_90001_helper.py", "w_10000_90000_attention.py"], "w_10000_90000_attention.py"),
    (["w_10000_90001_helper.py", "w_10000_90000_Attention_final.ipynb"],
     "w_10000_90000_Attention_final.ipynb"),
    (["w_10000_90001_helper.py", "w_10000_90000_attention (2).py"], "w_10000_90000_attention (2).py"),
    (["w_10000_90001_helper.py", "w_10000_90000_attention v3.py"], "w_10000_90000_attention v3.py"),
    (["w_10000_90001_helper.py", "w_10000_90000_attention-copy.zip"], "w_10000_90000_attention-copy.zip"),
    # code before anything else, then the newest attachment
    (["w_10000_90001_report.pdf", "w_10000_90000_mine.py"], "w_10000_90000_mine.py"),
    (["w_10000_90000_mine.py", "w_10000_90001_other.py"], "w_10000_90001_other.py"),
    (["w_10000_90002_attention.py", "w_10000_90001_attention-3.py"], "w_10000_90002_attention.py"),
    # one attachment id (never from Canvas, but a tie): the resubmission number, then the name
    (["w_10000_90000_attention.py", "w_10000_90000_attention-1.py"], "w_10000_90000_attention-1.py"),
    (["w_10000_90000_b.py", "w_10000_90000_a.py"], "w_10000_90000_b.py"),
    # "attention" inside a longer word is not the assignment's file
    (["w_10000_90001_helper.py", "w_10000_90000_myattention.py"], "w_10000_90001_helper.py"),
])
def test_of_a_students_canvas_files_the_main_then_newest_is_graded(tmp_path, files, graded):
    batch = platforms.resolve([str(_touch(tmp_path / "canvas", files))])
    assert [os.path.basename(s.path) for s in batch.submissions] == [graded]
    other = next(f for f in files if f != graded)
    assert batch.submissions[0].notes == [
        f"{other} was not graded: {graded} is this student's latest or main file"]
    assert f"w_10000: {other} was not graded: {graded} is this student's latest or main file" \
        in batch.notes


def test_a_resubmission_number_after_a_line_break_still_ranks_as_the_assignment(tmp_path):
    # `$` matches before a final line break, so "attention\n" is attention-like while
    # "attention\n-1" is not: the name without its resubmission number decides (the files of
    # an anonymous download are ranked by the file name as it is)
    files = ["anon_x_90001_helper.py", "anon_x_90000_attention\n-1.py"]
    batch = platforms.resolve([str(_touch(tmp_path / "canvas", files))])
    assert [os.path.basename(s.path) for s in batch.submissions] == ["anon_x_90000_attention\n-1.py"]


def test_moodle_files_given_with_prefixes_rank_like_canvas_files(tmp_path):
    moodle = _touch(tmp_path / "moodle", ["Fang Wu_10006_assignsubmission_file_notes.py",
                                          "Fang Wu_10006_assignsubmission_file_attention.py",
                                          "Fang Wu_10006_assignsubmission_file_report.pdf"])
    batch = platforms.resolve([str(moodle)])
    assert _rows(batch) == [("Fang Wu_10006", "10006", "moodle",
                             "Fang Wu_10006_assignsubmission_file_attention.py")]


def test_a_moodle_folder_ranks_as_the_students_work(tmp_path):
    # a folder and a prefixed file of one participant (the download made with and without
    # folders): the newer counts, the folder being as much the work as attention.py
    download = tmp_path / "moodle"
    folder = _touch(download / "Li_10006_assignsubmission_file_", ["mine.py"])
    _touch(download, ["Li_10006_assignsubmission_file_attention.py"])
    os.utime(download / "Li_10006_assignsubmission_file_attention.py", (1_764_000_000,) * 2)
    os.utime(folder / "mine.py", (1_764_000_100,) * 2)
    sub = platforms.resolve([str(download)]).submissions[0]
    assert (sub.student_id, sub.path) == ("10006", str(folder))


def test_a_students_folder_is_looked_at_for_claims_in_its_first_200_entries(tmp_path, monkeypatch):
    # which 200 of more entries a listing sees is the file system's order; the cap is the
    # one documented figure, passed to the real listing
    asked = []
    real = platform_base.listing
    monkeypatch.setattr(platform_base, "listing", lambda folder, limit=10_000: asked.append(limit)
                        or real(folder, limit))
    folder = _touch(tmp_path / "Li_10006_assignsubmission_file_", ["w_10000_90000_a.py"])
    assert platforms.resolve([str(folder)]).submissions[0].flags == [
        "the uploaded file's own name claims Moodle participant 10000; graded as user 10006's "
        "(w_10000_90000_a.py)"]
    assert asked == [200]


def test_moodle_text_and_feedback_are_skipped_by_name(tmp_path):
    download = tmp_path / "moodle"
    _touch(download / "Fang Wu_10006_assignsubmission_file_", ["attention.py"])
    _touch(download / "Fang Wu_10006_assignsubmission_onlinetext_", ["onlinetext.html"])
    _touch(download / "Fang Wu_10006_assignfeedback_file_", ["marked.py"])
    batch = platforms.resolve([str(download)])
    assert _rows(batch) == [("Fang Wu_10006", "10006", "moodle", "Fang Wu_10006_assignsubmission_file_")]
    assert batch.notes[:4] == [
        "moodle: a Moodle download, 3 entries",
        "skipped Fang Wu_10006_assignfeedback_file_: Moodle's file feedback, not a file submission",
        "skipped Fang Wu_10006_assignsubmission_onlinetext_: Moodle's onlinetext submission, "
        "not a file submission"]
    assert batch.layouts == {"moodle": 1}


def test_a_moodle_prefix_alone_is_no_moodle_file(tmp_path):
    # without "download submissions in folders" each file has a name after the prefix
    bare = _touch(tmp_path / "x", ["Fang Wu_10006_assignsubmission_file_"])
    batch = platforms.resolve([str(bare / "Fang Wu_10006_assignsubmission_file_")])
    assert [(s.layout, s.student_id) for s in batch.submissions] == [("plain", "")]


def test_a_file_claiming_eleven_classmates_names_five(tmp_path):
    name = "m_10005_90005_a_" + "_".join(str(i) for i in range(1, 13)) + "_x.py"
    assert canvas_platform.parse_canvas(name)["claims"] == [str(i) for i in range(1, 12)]
    batch = platforms.resolve([str(_touch(tmp_path / "c", [name, "m_10005_90004_attention.py"]))])
    assert batch.submissions[0].flags == [
        f"the uploaded file's own name claims Canvas user {i}; graded as user 10005's ({name})"
        for i in ("1", "2", "3", "4", "5")]
    assert batch.submissions[0].student_id == "10005"


def test_a_students_folder_with_many_claiming_files_gives_ten_flags(tmp_path):
    folder = _touch(tmp_path / "Li_10006_assignsubmission_file_",
                    [f"w_{10000 + i}_9000{i}_a.py" for i in range(12)])
    sub = platforms.resolve([str(folder)]).submissions[0]
    assert sub.student_id == "10006" and len(sub.flags) == 10
    assert all(f.startswith("the uploaded file's own name claims Moodle participant 100")
               and "graded as user 10006's" in f for f in sub.flags)


def test_a_row_keeps_twenty_flags(tmp_path):
    # 25 of one student's files each claim a classmate: 25 different flags, 20 kept, the
    # newest attachment's first
    files = [f"m_10005_{90000 + i}_a_{20000 + i}_1_x.py" for i in range(25)]
    batch = platforms.resolve([str(_touch(tmp_path / "c", files))])
    sub = batch.submissions[0]
    assert sub.student_id == "10005" and len(sub.flags) == 20
    assert sub.flags[0] == ("the uploaded file's own name claims Canvas user 20024; graded as "
                            "user 10005's (m_10005_90024_a_20024_1_x.py)")
    assert sub.flags[19].startswith("the uploaded file's own name claims Canvas user 20005; ")
    assert sum(n.startswith("m_10005: FLAG ") for n in batch.notes) == 20


def test_a_flag_is_cut_to_400_characters(tmp_path):
    # one user id under four long names: the flag lists them, 120 characters each
    files = [f"{c * 150}_10000_9000{i}_a.py" for i, c in enumerate("abcd")]
    rows = platforms.resolve([str(_touch(tmp_path / "c", files))]).submissions
    assert len(rows) == 4 and {s.student_id for s in rows} == {""}
    flag = rows[0].flags[0]
    assert flag.startswith("Canvas user 10000 appears under 4 names in this download (aaaa")
    assert len(flag) == 400 and flag.endswith(" more characters]")


def _gradebook(course, students):
    course.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(course / "gradebook.db") as db:
        db.execute("CREATE TABLE student (id VARCHAR(128) PRIMARY KEY)")
        db.executemany("INSERT INTO student VALUES (?)", [(s,) for s in students])
    return course / "gradebook.db"


def _submitted(course, students, files=("attention.py",)):
    for student in students:
        _touch(course / "submitted" / student / "attention", files)
    return course / "submitted"


def test_an_nbgrader_student_missing_from_gradebook_db_is_flagged(tmp_path):
    course = tmp_path / "course"
    submitted = _submitted(course, ["alice", "bob"])
    _gradebook(course, ["alice", "carol"])
    batch = platforms.resolve([str(submitted)])
    assert [(s.name, s.student_id, s.flags) for s in batch.submissions] == [
        ("alice", "alice", []),
        ("bob", "bob", ["nbgrader student bob is not in the course's gradebook.db"])]
    assert batch.notes[0] == "submitted: an nbgrader submitted/ folder, 2 entries"


@pytest.mark.parametrize("database", ["garbage", "link", "folder", "none"])
def test_a_gradebook_db_that_cannot_be_read_flags_nobody(tmp_path, database):
    course = tmp_path / "course"
    submitted = _submitted(course, ["bob"])
    db = course / "gradebook.db"
    if database == "garbage":
        db.write_bytes(b"not a database" * 100)
    elif database == "link":   # never read through a link, even to a real gradebook
        os.symlink(_gradebook(tmp_path / "elsewhere", ["alice"]), db)
    elif database == "folder":
        db.mkdir()
    assert nbgrader_platform.nbgrader_students(str(submitted / "bob" / "attention")) is None
    assert platforms.resolve([str(submitted)]).submissions[0].flags == []


def test_the_course_of_the_innermost_submitted_folder_is_asked(tmp_path):
    outer = tmp_path / "course"
    _gradebook(outer, ["alice"])
    inner = outer / "submitted" / "x" / "course"
    _gradebook(inner, ["bob"])
    assert nbgrader_platform.nbgrader_students(str(inner / "submitted" / "bob" / "attention")) == {"bob"}
    assert nbgrader_platform.nbgrader_students(str(outer / "submitted" / "alice")) == {"alice"}
    assert nbgrader_platform.nbgrader_students(str(tmp_path / "alice")) is None


def test_of_a_students_assignment_folders_the_one_holding_attention_is_graded(tmp_path):
    submitted = tmp_path / "course" / "submitted"
    _touch(submitted / "alice" / "rnn", ["rnn.py"])
    _touch(submitted / "alice" / "attention", ["attention.ipynb"])
    _touch(submitted / "bob" / "rnn", ["rnn.py"])
    _touch(submitted / "bob" / "cnn", ["cnn.py"])
    _touch(submitted / "carol" / "rnn", ["attention.py"])
    _touch(submitted / "carol" / "attention", ["attention.py"])
    _touch(submitted / "dan" / "homework", ["whatever.py"])       # one folder: that one
    for name in ("a1", "a2", "a3", "a4", "a5", "a6"):
        _touch(submitted / "eve" / name, ["x.py"])
    batch = platforms.resolve([str(submitted / s) for s in ("alice", "bob", "carol", "dan", "eve")])
    got = {s.name: (os.path.relpath(s.path, submitted), s.flags) for s in batch.submissions}
    assert got == {
        "alice": ("alice/attention", []),
        "bob": ("bob", ["nbgrader student bob has 2 assignment folders (cnn, rnn) and none hold "
                        "attention.py: graded as the whole folder, without a submission time"]),
        "carol": ("carol", ["nbgrader student carol has 2 assignment folders (attention, rnn) and "
                            "several hold attention.py: graded as the whole folder, without a "
                            "submission time"]),
        "dan": ("dan", []),
        "eve": ("eve", ["nbgrader student eve has 6 assignment folders (a1, a2, a3, a4, a5) and "
                        "none hold attention.py: graded as the whole folder, without a "
                        "submission time"])}


def test_a_checkpoints_folder_beside_the_assignment_keeps_its_timestamp(tmp_path):
    # before: the student's folder was graded with no time at all (timestamp.txt was looked
    # for beside .ipynb_checkpoints/, not in attention/), and nothing said so
    student = tmp_path / "course" / "submitted" / "alice"
    _touch(student / "attention", ["attention.py"])
    (student / "attention" / "timestamp.txt").write_text("2026-12-01 10:00:00")
    _touch(student / ".ipynb_checkpoints", ["attention-checkpoint.py"])
    for given in (student, student.parent):
        sub = platforms.resolve([str(given)]).submissions[0]
        assert (sub.name, sub.student_id, sub.submitted_at, sub.time_source, sub.flags) == \
            ("alice", "alice", "2026-12-01T10:00:00+00:00", "nbgrader-timestamp", [])


def test_a_file_right_in_submitted_is_no_students(tmp_path):
    submitted = _touch(tmp_path / "submitted", ["attention.py"])
    sub = platforms.resolve([str(submitted / "attention.py")]).submissions[0]
    assert (sub.layout, sub.student_id, sub.name) == ("plain", "attention", "attention")


def _person(name="", sid="", email=""):
    return {"name": name, "sid": sid, "email": email}


# (metadata as Psych writes it, in the forms it uses, and what it says, worked out by hand)
METADATA_FORMS = [
    # quoted keys, escapes in double quotes, '' in single quotes, a comment, a document start
    ("---\n'submission_1':\n  :submitters:\n  - :name: \"Li \\\"Lei\\\"\\tX\\u00e9\\x41\"\n"
     "    :sid: 'O''Brien'\n    :email: li@example.edu # the school's\n"
     "  :created_at: 2026-11-30 12:00:00.000000000 -08:00\n"
     "# a comment line\n\"submission_2\":\n  :submitters:\n  - :sid: \"12346\"\n",
     {"submission_1": {"people": [_person("Li \"Lei\"\tX\u00e9A", "O'Brien", "li@example.edu")],
                       "created_at": "2026-11-30T12:00:00-08:00"},
      "submission_2": {"people": [_person(sid="12346")], "created_at": ""}}),
    # block scalars: literal with and without the final line break, folded
    ("submission_1:\n  :submitters:\n  - :name: |-\n      Jane\n      Doe\n    :sid: |\n"
     "      123\n    :email: >\n      a\n      b\n\n      c\n",
     {"submission_1": {"people": [_person("Jane\nDoe", "123\n", "a b\nc\n")], "created_at": ""}}),
    # a long plain value folded over lines, with a blank line in it
    ("submission_1:\n  :submitters:\n  - :name: Jane\n      Doe\n\n      Smith\n    :sid: '5'\n",
     {"submission_1": {"people": [_person("Jane Doe\nSmith", "5")], "created_at": ""}}),
    # nothing, a tilde, null; a tag before a value; the list indented under its key
    ("submission_1:\n  :submitters:\n    - :name: ~\n      :sid: !ruby/string '77'\n"
     "      :email: null\n  :created_at: '2026-12-01 10:00:00 +08:00'\n"
     "submission_2:\n  :submitters: []\n  :created_at:\n",
     {"submission_1": {"people": [_person(sid="77")], "created_at": "2026-12-01T10:00:00+08:00"},
      "submission_2": {"people": [], "created_at": ""}}),
    # the submission time before the submitters; fields in another order; one submitter's own
    # :created_at: is not the submission's
    ("submission_1:\n  :created_at: 2026-11-30 12:00:00 +00:00\n  :submitters:\n"
     "  - :email: a@x.edu\n    :created_at: 2020-01-01 00:00:00 +00:00\n    :name: A\n"
     "  - :sid: '2'\n  :score: 10.0\n",
     {"submission_1": {"people": [_person("A", email="a@x.edu"), _person(sid="2")],
                       "created_at": "2026-11-30T12:00:00+00:00"}}),
    # Windows line endings
    ("submission_1:\r\n  :submitters:\r\n  - :name: Jane\r\n    :sid: '9'\r\n",
     {"submission_1": {"people": [_person("Jane", "9")], "created_at": ""}}),
]


@pytest.mark.parametrize("text, value", [
    ("", ""), ("  ", ""), ("~", ""), ("null", ""), ("Null", "Null"),
    ("'a''b'", "a'b"), ("'", ""), ("''", ""), ("'abc", "abc"), ("'a' # c", "a"),
    ('"abc', "abc"), ('"', ""), ('""', ""), ('"a\\0b\\rc\\/d\\\\e\\nf"', "abc/d\\e\nf"),
    ('"\\U0001F600\\u00e9\\x41\\t"', "\U0001F600\u00e9A\t"),
    ('"\\U00110000x"', "x"),                      # no such character: dropped
    ("!ruby/string 123", "123"), ("!tag", ""), ("!a !b 'c'", "c"),
    ("plain # comment", "plain"), ("a#b", "a#b"), ("a\t#b", "a"),
])
def test_a_yaml_scalar_as_psych_writes_it(text, value):
    assert gradescope_metadata._scalar(text) == value


@pytest.mark.parametrize("first, more, value", [
    ("|-", ["    a", "    b", "", ""], "a\nb"),
    ("|", ["  a", "    b"], "a\n  b\n"),
    ("|2-", ["  a"], "a"),
    ("|+", ["  a"], "a\n"),
    ("| # note", ["  a"], "a\n"),
    (">", ["  a", "  b", "", "  c", ""], "a b\nc\n"),
    (">-", ["  a", "", "", "  b"], "a\n\nb"),
    (">", ["  a", "   ", "  b"], "a\nb\n"),          # a line of spaces is an empty line
    ("Jane", ["  Doe", "", "  Smith"], "Jane Doe\nSmith"),
    ("'Jane", ["  O''Doe'"], "Jane O'Doe"),
    ("|x", ["  a"], "|x a"),                        # not a block scalar: a plain value
])
def test_a_yaml_value_over_lines(first, more, value):
    assert gradescope_metadata._scalar_lines(first, more) == value


def test_the_subset_parser_reads_only_the_submissions_keys():
    text = ("# a comment\n:orphan: 1\n  - :sid: '666'\n"      # nothing before the first key
            "submission_1:\n  :submitters:\n  - :name: A\n    :sid: '1'\n"
            "      :email: not a field\n"                      # deeper: the value goes on
            "  - :sid: '2'\n"
            "  :other:\n  - :sid: '3'\n"                      # a list under another key
            "---\n"
            "submission_2:\n  :created_at: yesterday\n  :submitters:\n    - :sid: '4'\n")
    assert gradescope_metadata.parse_metadata_subset(text) == {
        "submission_1": {"people": [_person("A", "1"), _person(sid="2")],
                         "created_at": ""},
        "submission_2": {"people": [_person(sid="4")], "created_at": ""}}


@pytest.mark.parametrize("text, people", [
    # a value passed over is passed over whole, lines that look like submitters included
    ("submission_1:\n  :submitters:\n  - :name: Eve\n    :sid: '5'\n   :x: |-\n"
     "    - :sid: '10000'\n", [_person("Eve", "5")]),
    # :submitters: with a value on its line starts no list
    ("submission_1:\n  :submitters: x\n  - :sid: '10000'\n", []),
    # nothing before the first submission is anyone's
    ("  :submitters:\n  - :sid: '10000'\nsubmission_1:\n  :submitters:\n  - :sid: '5'\n",
     [_person(sid="5")]),
])
def test_the_subset_parser_adds_no_submitter_from_a_value(text, people):
    assert gradescope_metadata.parse_metadata_subset(text) == {"submission_1": {"people": people,
                                                                    "created_at": ""}}


def _as_read(data):
    """read_metadata's answer with each field as the grader uses it (str(), None as "")."""
    return {k: {"people": [{f: "" if v is None else str(v) for f, v in p.items()}
                           for p in entry["people"]], "created_at": entry["created_at"]}
            for k, entry in data.items()}


@pytest.mark.parametrize("text, expected", METADATA_FORMS)
def test_metadata_reads_the_same_with_and_without_pyyaml(tmp_path, monkeypatch, text, expected):
    pytest.importorskip("yaml")
    path = tmp_path / "submission_metadata.yml"
    path.write_bytes(text.encode("utf-8"))
    with_yaml, note = gradescope_metadata.read_metadata(str(path))
    assert note is None and _as_read(with_yaml) == expected
    assert gradescope_metadata.parse_metadata_subset(text) == expected
    monkeypatch.setattr(gradescope_metadata, "_tolerant_loader", lambda: None)
    assert gradescope_metadata.read_metadata(str(path)) == (expected, None)


def test_metadata_with_ruby_tags_on_mappings_and_lists(tmp_path):
    pytest.importorskip("yaml")
    text = ("submission_1: !ruby/hash:ActiveSupport::HashWithIndifferentAccess\n"
            "  :submitters: !ruby/array:Array\n  - !ruby/object:Submitter\n    :name: Jane\n"
            "    :sid: !!str 12\n  :created_at: !ruby/object:Time 2026-11-30 12:00:00 +00:00\n"
            "submission_2:\n  submitters:\n  - name: Li\n    sid: '13'\n    email: li@x.edu\n"
            "  created_at: 2026-11-30 13:00:00 +00:00\n"
            "submission_3: [1, 2]\nsubmission_4:\n  :submitters: 5\n"
            "submission_5:\n  :submitters:\n  - just text\n  - :sid: '14'\n"
            "7: {}\n1.5: {}\n")   # a float is no folder name
    path = tmp_path / "submission_metadata.yml"
    path.write_text(text, encoding="utf-8")
    data, note = gradescope_metadata.read_metadata(str(path))
    assert note is None and _as_read(data) == {
        "submission_1": {"people": [_person("Jane", "12")], "created_at": "2026-11-30T12:00:00+00:00"},
        "submission_2": {"people": [_person("Li", "13", "li@x.edu")],
                         "created_at": "2026-11-30T13:00:00+00:00"},
        "submission_3": {"people": [], "created_at": ""},
        "submission_4": {"people": [], "created_at": ""},
        "submission_5": {"people": [_person(sid="14")], "created_at": ""},
        "7": {"people": [], "created_at": ""}}


def test_metadata_that_is_not_a_mapping_has_no_submissions(tmp_path):
    path = tmp_path / "submission_metadata.yml"
    path.write_text("- submission_1\n- submission_2\n", encoding="utf-8")
    assert gradescope_metadata.read_metadata(str(path)) == ({}, None)
    folder = tmp_path / "f"
    (folder / "submission_metadata.yml").mkdir(parents=True)
    assert gradescope_metadata.read_metadata(str(folder / "submission_metadata.yml")) == (
        {}, "submission_metadata.yml could not be read (submission_metadata.yml is a folder.); "
            "names come from the folders.")


def test_metadata_pyyaml_refuses_is_read_by_the_subset_parser(tmp_path):
    # a tab where YAML wants spaces: PyYAML refuses the file, the subset parser reads it
    text = "submission_1:\n  :submitters:\n  - :name: Jane\n    :sid: '9'\n\t:junk: 1\n"
    path = tmp_path / "submission_metadata.yml"
    path.write_text(text, encoding="utf-8")
    assert gradescope_metadata.read_metadata(str(path)) == (
        {"submission_1": {"people": [_person("Jane", "9")], "created_at": ""}}, None)


def test_metadata_keeps_fifty_submitters(tmp_path, monkeypatch):
    people = "".join(f"  - :name: P{i}\n    :sid: '{i}'\n" for i in range(51))
    text = "submission_1:\n  :submitters:\n" + people
    expected = {"submission_1": {"people": [_person(f"P{i}", str(i)) for i in range(50)],
                                 "created_at": ""}}
    path = tmp_path / "submission_metadata.yml"
    path.write_text(text, encoding="utf-8")
    assert _as_read(gradescope_metadata.read_metadata(str(path))[0]) == expected
    monkeypatch.setattr(gradescope_metadata, "_tolerant_loader", lambda: None)
    assert gradescope_metadata.read_metadata(str(path))[0] == expected


def test_listing_stops_at_its_limit(tmp_path):
    folder = _touch(tmp_path / "f", ["a", "b", "c"])
    assert layouts.listing(str(folder), 3) == (["a", "b", "c"], False)
    names, cut = layouts.listing(str(folder), 2)
    assert cut is True and len(names) == 2 and set(names) < {"a", "b", "c"}
    assert layouts.listing(str(tmp_path / "missing")) == ([], False)


def test_a_folder_not_all_named_by_an_lms_is_one_submission_and_says_why(tmp_path):
    mixed = _touch(tmp_path / "eve", ["w_10000_90000_a.py", "notes.txt", "index.html"])
    batch = platforms.resolve([str(mixed)])
    assert _rows(batch) == [("eve", "eve", "plain", "eve")]
    assert batch.notes == ["eve: not opened as a download: not all its entries are named as an "
                           "LMS names them (e.g. notes.txt)"]
    # an explicit layout says so even when no entry has an LMS's name
    batch = platforms.resolve([str(_touch(tmp_path / "bob", ["x.py", "y.py"]))], "canvas")
    assert batch.notes == ["bob: not opened as a download: not all its entries are named as an "
                           "LMS names them (e.g. x.py)",
                           "bob does not look like canvas's layout: named after the file"]
    # a student's folder with attention.py is their work, whatever else is in it
    own = _touch(tmp_path / "w_10000_90000_a", ["attention.py", "w_10000_90000_a.py"])
    batch = platforms.resolve([str(own)])
    assert [(s.layout, s.student_id) for s in batch.submissions] == [("plain", "w_10000_90000_a")]
    assert batch.notes == []


def test_a_download_with_junk_and_anonymous_files_is_opened(tmp_path):
    canvas = _touch(tmp_path / "canvas", ["w_10000_90000_a.py", "anon_x1_90001_a.py",
                                          "index.html", ".DS_Store"])
    batch = platforms.resolve([str(canvas)])
    assert _rows(batch) == [("anon_x1", "", "canvas", "anon_x1_90001_a.py"),
                            ("w_10000", "10000", "canvas", "w_10000_90000_a.py")]
    assert batch.notes[:3] == ["canvas: a Canvas download, 4 entries",
                               "skipped .DS_Store: not a submission (added by an LMS or an "
                               "operating system)",
                               "skipped index.html: not a submission (added by an LMS or an "
                               "operating system)"]


@pytest.mark.parametrize("names, kind", [
    (["w_10000_90000_a.py", "index.html"], "canvas"),
    (["w_10000_90000_a.py", "anon_x_90001_a.py"], "canvas"),
    (["w_10000_90000_a.py", "sub/w_10000_90000_a.py"], None),     # Canvas's files are at the top
    (["Li_1_assignsubmission_file_/a.py", "Li_1_assignsubmission_file_/b/c.py",
      "__MACOSX/x"], "moodle"),
    (["Li_1_assignsubmission_file_a.py", "Li_1_assignsubmission_onlinetext_/t.html"], "moodle"),
    (["Li_1_assignsubmission_file_/a.py", "w_10000_90000_a.py"], None),
    (["index.html"], None), ([], None), (["/", "//"], None),
])
def test_download_kind(names, kind):
    assert recognition.download_kind(names) == kind


def test_a_canvas_download_zip_is_unpacked_and_each_file_graded_as_its_users(tmp_path):
    download = tmp_path / "submissions.zip"
    with zipfile.ZipFile(download, "w") as archive:
        archive.writestr("w_10000_90000_attention.py", "x = 1\n")
        archive.writestr("l_LATE_10001_90001_attention.py", "x = 2\n")
    batch = platforms.resolve([str(download)])
    assert [(s.name, s.student_id, s.late_flag, s.submitted_at, s.time_source)
            for s in batch.submissions] == [("l_10001", "10001", True, "", ""),
                                            ("w_10000", "10000", False, "", "")]
    assert batch.notes[0] == "submissions.zip: canvas's download zip, unpacked to a temporary folder"
    assert "submissions.zip: a Canvas download, 2 entries" in batch.notes
    with open(batch.submissions[0].path, encoding="utf-8") as handle:
        assert handle.read() == "x = 2\n"
    # a zip of one student's work, and a zip named as Canvas names a file, are not downloads
    own = tmp_path / "w_10000_90000_attention.zip"
    own.write_bytes(download.read_bytes())
    assert [(s.layout, s.student_id) for s in platforms.resolve([str(own)]).submissions] == \
        [("canvas", "10000")]
    # --layout moodle never opens a Canvas download zip
    batch = platforms.resolve([str(download)], "moodle")
    assert [(s.layout, s.name, s.path) for s in batch.submissions] == \
        [("plain", "submissions", str(download))]
    assert batch.notes == ["submissions.zip does not look like moodle's layout: named after the file"]
    # a download zip named in capitals is one too
    upper = tmp_path / "SUBMISSIONS.ZIP"
    upper.write_bytes(download.read_bytes())
    assert [s.student_id for s in platforms.resolve([str(upper)]).submissions] == ["10001", "10000"]


def test_a_moodle_download_zip_with_only_a_folder_per_student(tmp_path):
    download = tmp_path / "moodle.zip"
    with zipfile.ZipFile(download, "w") as archive:
        archive.writestr("Fang Wu_10006_assignsubmission_file_/attention.py", "x = 1\n")
    batch = platforms.resolve([str(download)], "moodle")
    assert [(s.name, s.student_id, s.layout) for s in batch.submissions] == \
        [("Fang Wu_10006", "10006", "moodle")]
    assert batch.notes[0] == "moodle.zip: moodle's download zip, unpacked to a temporary folder"


def test_a_download_zip_that_does_not_unpack_is_graded_as_one_file_and_says_why(tmp_path):
    download = tmp_path / "submissions.zip"
    with zipfile.ZipFile(download, "w") as archive:   # stored: its bytes are in the file as is
        archive.writestr("w_10000_90000_a.py", "x = 1 # the first student's work\n")
    data = download.read_bytes()
    download.write_bytes(data.replace(b"first student", b"FIRST student"))   # the CRC fails
    batch = platforms.resolve([str(download)])
    assert [(s.name, s.layout) for s in batch.submissions] == [("submissions", "plain")]
    assert batch.notes == [
        "submissions.zip: looks like canvas's download zip but could not be unpacked "
        "(submissions.zip: the entry 'w_10000_90000_a.py' could not be read (Bad CRC-32 for "
        "file 'w_10000_90000_a.py').)"]


def test_the_reason_a_download_zip_did_not_unpack_is_cut_at_300_characters(tmp_path):
    download = tmp_path / "submissions.zip"
    entry = "w_10000_90000_" + "a" * 150 + ".py"
    with zipfile.ZipFile(download, "w") as archive:
        archive.writestr(entry, "x = 1 # the first student's work\n")
    download.write_bytes(download.read_bytes().replace(b"first student", b"FIRST student"))
    note = platforms.resolve([str(download)]).notes[0]
    head = "submissions.zip: looks like canvas's download zip but could not be unpacked ("
    assert note.startswith(head + "submissions.zip: the entry 'w_10000_90000_aaa")
    assert len(note) == len(head) + 300 + 1 and note.endswith(" more characters])")


def test_what_unpacking_a_download_says_is_cut_at_300_characters(tmp_path):
    download = tmp_path / "submissions.zip"
    with zipfile.ZipFile(download, "w") as archive:
        archive.writestr("w_10000_90000_a.py", "x = 1\n")
        for c in "xyz":
            archive.writestr("../" + c * 150 + ".py", "x = 1\n")
    batch = platforms.resolve([str(download)])
    said = [n for n in batch.notes if "refused" in n]
    assert len(said) == 1 and len(said[0]) == 300 and said[0].endswith(" more characters]")
    assert [s.student_id for s in batch.submissions] == ["10000"]


def test_a_link_named_as_a_zip_is_no_download(tmp_path):
    download = tmp_path / "real.zip"
    with zipfile.ZipFile(download, "w") as archive:
        archive.writestr("w_10000_90000_a.py", "x = 1\n")
    os.symlink(download, tmp_path / "submissions.zip")
    batch = platforms.resolve([str(tmp_path / "submissions.zip")])
    assert [(s.name, s.layout) for s in batch.submissions] == [("submissions", "plain")]
    assert layouts.zip_names(str(tmp_path / "submissions.zip")) is None


def test_an_unknown_layout_is_refused_by_name():
    with pytest.raises(ValueError) as error:
        platforms.resolve([], "blackboard")
    assert str(error.value) == ("unknown layout 'blackboard': one of auto, plain, nbgrader, "
                                "canvas, moodle, gradescope")


def test_a_download_given_with_another_layout_is_not_opened(tmp_path):
    canvas = _touch(tmp_path / "canvas", ["w_10000_90000_a.py"])
    batch = platforms.resolve([str(canvas)], "moodle")
    assert _rows(batch) == [("canvas", "canvas", "plain", "canvas")]
    assert batch.notes == ["canvas: not opened as a download: not all its entries are named as an "
                           "LMS names them",
                           "canvas does not look like moodle's layout: named after the file"]
    batch = platforms.resolve([str(_touch(tmp_path / "bob", ["x.py"]))], "moodle")
    assert batch.notes[0] == ("bob: not opened as a download: not all its entries are named as "
                              "an LMS names them (e.g. x.py)")
    export = _edge_gradescope(tmp_path, "submission_1:\n" + _submitters(5), ["submission_1"])
    batch = platforms.resolve([str(export)], "canvas")
    assert [(s.name, s.layout) for s in batch.submissions] == [("export", "plain")]
    submitted = _submitted(tmp_path / "course", ["alice"])
    batch = platforms.resolve([str(submitted)], "canvas")
    assert [(s.name, s.layout) for s in batch.submissions] == [("submitted", "plain")]


def test_a_folder_holding_attention_in_capitals_is_one_students_without_a_note(tmp_path):
    own = _touch(tmp_path / "eve", ["Attention.PY", "w_10000_90000_a.py"])
    batch = platforms.resolve([str(own)])
    assert _rows(batch) == [("eve", "eve", "plain", "eve")] and batch.notes == []


def test_a_submitted_folder_inside_submitted_is_opened(tmp_path):
    inner = _submitted(tmp_path / "course" / "submitted", ["alice"])
    assert inner == tmp_path / "course" / "submitted" / "submitted"
    batch = platforms.resolve([str(inner)])
    assert [(s.name, s.student_id, s.layout) for s in batch.submissions] == [
        ("alice", "alice", "nbgrader")]


def test_an_lms_download_zip_beside_plain_work_names_the_zip(tmp_path):
    download = tmp_path / "submissions.zip"
    with zipfile.ZipFile(download, "w") as archive:
        archive.writestr("w_10000_90000_a.py", "x = 1\n")
    _touch(tmp_path, ["alice.py"])
    batch = platforms.resolve([str(tmp_path / "alice.py"), str(download)])
    assert [(s.name, s.student_id) for s in batch.submissions] == [
        ("alice", "alice"), ("submissions.zip-w_10000", "")]
    assert batch.submissions[1].flags == [
        "submissions.zip is named as Canvas names its downloads but was given beside plain "
        "submissions: no student id is given (grade an LMS's download on its own, and "
        "students' folders with --layout plain)"]


def test_gradescope_exports_are_checked_like_the_other_downloads(tmp_path):
    one = _edge_gradescope(tmp_path / "a", "submission_1:\n" + _submitters(5), ["submission_1"])
    two = _edge_gradescope(tmp_path / "b", "submission_2:\n" + _submitters(6), ["submission_2"])
    batch = platforms.resolve([str(one), str(two)])
    assert [(s.name, s.student_id) for s in batch.submissions] == [
        ("unverified-N5", ""), ("unverified-N6", "")]
    assert batch.submissions[0].flags == [
        "2 Gradescope downloads were given together (export, export); one may be a student's "
        "own, so no student id is given (grade the newest download on its own)"]
    _touch(tmp_path, ["alice.py"])
    batch = platforms.resolve([str(tmp_path / "alice.py"), str(one / "submission_1")])
    assert [(s.name, s.student_id) for s in batch.submissions] == [
        ("alice", "alice"), ("unverified-N5", "")]
    assert batch.submissions[1].flags == [
        "submission_1 is named as Gradescope names its downloads but was given beside plain "
        "submissions: no student id is given (grade an LMS's download on its own, and "
        "students' folders with --layout plain)"]


def test_a_row_name_is_cut_to_400_characters(tmp_path):
    people = "".join(f"  - :name: {c * 150}\n    :sid: '{i}'\n" for i, c in enumerate("abc"))
    export = _edge_gradescope(tmp_path, "submission_1:\n  :submitters:\n" + people, ["submission_1"])
    sub = platforms.resolve([str(export)]).submissions[0]
    assert sub.student_id == "0;1;2" and sub.name.startswith("a" * 150 + "; " + "b" * 150)
    assert len(sub.name) == 400 and sub.name.endswith(" more characters]") and "\n" not in sub.name


def test_one_attachment_under_two_users_is_flagged_on_both(tmp_path):
    canvas = _touch(tmp_path / "canvas", ["w_10000_90000_a.py", "l_10001_90000_a.py",
                                          "s_10002_90002_a.py"])
    got = {s.student_id: s.flags for s in platforms.resolve([str(canvas)]).submissions}
    assert got == {
        "10000": ["Canvas attachment 90000 belongs to more than one user in this download "
                  "(w_10000_90000_a.py)"],
        "10001": ["Canvas attachment 90000 belongs to more than one user in this download "
                  "(l_10001_90000_a.py)"],
        "10002": []}


def test_one_moodle_participant_under_two_names_keeps_no_id(tmp_path):
    moodle = tmp_path / "moodle"
    _touch(moodle / "Fang Wu_10006_assignsubmission_file_", ["attention.py"])
    _touch(moodle / "Eve_10006_assignsubmission_file_", ["attention.py"])
    batch = platforms.resolve([str(moodle)])
    flag = ("Moodle participant 10006 appears under 2 names in this download (Eve, Fang Wu); "
            "no student id is given until you check which is theirs")
    assert sorted((s.name, s.student_id, s.flags) for s in batch.submissions) == [
        ("Eve_10006", "", [flag]), ("Fang Wu_10006", "", [flag])]


def test_the_same_name_decomposed_is_one_name(tmp_path):
    # a download unzipped on a Mac: é decomposed in one file's name, composed in another's
    canvas = _touch(tmp_path / "canvas", ["ze\u0301_10000_90000_a.py", "z\u00e9_10000_90001_b.py"])
    batch = platforms.resolve([str(canvas)])
    assert [(s.name, s.student_id, s.flags) for s in batch.submissions] == \
        [("z\u00e9_10000", "10000", [])]


def test_two_canvas_downloads_keep_no_ids(tmp_path):
    old = _touch(tmp_path / "old", ["w_10000_90000_a.py", "s_10002_90002_a.py"])
    new = _touch(tmp_path / "new", ["w_10000_90005_a.py"])
    batch = platforms.resolve([str(old), str(new)])
    flag = ("2 Canvas downloads were given together (new, old); one may be a student's own, so "
            "no student id is given (grade the newest download on its own)")
    assert [(s.name, s.student_id, s.flags, os.path.relpath(s.path, tmp_path))
            for s in batch.submissions] == [
        ("unverified-s_10002", "", [flag], "old/s_10002_90002_a.py"),
        ("unverified-w_10000", "", [flag], "new/w_10000_90005_a.py")]


def test_an_lms_name_beside_plain_work_keeps_no_id(tmp_path):
    plain = _touch(tmp_path / "subs", ["alice.py"])
    moodle = _touch(tmp_path / "Fang Wu_10006_assignsubmission_file_", ["attention.py"])
    batch = platforms.resolve([str(plain / "alice.py"), str(moodle)])
    assert [(s.name, s.student_id, s.flags) for s in batch.submissions] == [
        ("alice", "alice", []),
        ("unverified-Fang Wu_10006", "", [
            "Fang Wu_10006_assignsubmission_file_ is named as Moodle names its downloads but was "
            "given beside plain submissions: no student id is given (grade an LMS's download on "
            "its own, and students' folders with --layout plain)"])]


def test_five_downloads_given_together_name_four(tmp_path):
    folders = [_touch(tmp_path / f"d{i}", [f"s_{10000 + i}_{90000 + i}_a.py"]) for i in range(5)]
    batch = platforms.resolve([str(f) for f in folders])
    assert {s.student_id for s in batch.submissions} == {""}
    assert {tuple(s.flags) for s in batch.submissions} == {(
        "5 Canvas downloads were given together (d0, d1, d2, d3); one may be a student's own, so "
        "no student id is given (grade the newest download on its own)",)}


def _edge_gradescope(root, metadata, folders):
    export = root / "export"
    export.mkdir(parents=True)
    (export / "submission_metadata.yml").write_text(metadata, encoding="utf-8")
    for folder in folders:
        _touch(export / folder, ["attention.py"])
    return export


def _submitters(*sids):
    return "  :submitters:\n" + "".join(f"  - :name: N{s}\n    :sid: '{s}'\n" for s in sids)


def test_a_group_whose_four_sids_are_also_alone_names_three_and_keeps_no_id(tmp_path):
    metadata = ("submission_1:\n" + _submitters(1, 2, 3, 4) + "".join(
        f"submission_{s + 1}:\n" + _submitters(s) for s in (1, 2, 3, 4)))
    export = _edge_gradescope(tmp_path, metadata, [f"submission_{i}" for i in range(1, 6)])
    rows = {os.path.basename(s.path): s for s in platforms.resolve([str(export)]).submissions}
    assert (rows["submission_1"].name, rows["submission_1"].student_id) == \
        ("unverified-N1; N2; N3; N4", "")
    assert rows["submission_1"].flags == [
        "SID 1, 2, 3 is in more than one submission of submission_metadata.yml",
        "those submissions have different submitters, so no student id is given until you "
        "check which is theirs"]
    assert (rows["submission_2"].name, rows["submission_2"].student_id, rows["submission_2"].flags) == (
        "unverified-N1", "", [
            "SID 1 is in more than one submission of submission_metadata.yml",
            "those submissions have different submitters, so no student id is given until you "
            "check which is theirs"])


def test_a_gradescope_row_by_email_and_by_folder(tmp_path):
    metadata = ("submission_1:\n  :submitters:\n  - :name: Jane\n    :email: jane@x.edu\n"
                "submission_2:\n  :submitters:\n  - :sid: '7'\n"
                "submission_3:\n  :submitters:\n  - :name: Nobody\n")
    export = _edge_gradescope(tmp_path, metadata, ["submission_1", "submission_2", "submission_3",
                                              "submission_4"])
    batch = platforms.resolve([str(export)])
    assert [(s.name, s.student_id, s.student_name, s.layout) for s in batch.submissions] == [
        ("Jane_jane@x.edu", "jane@x.edu", "Jane", "gradescope"),
        ("7", "7", "", "gradescope"),
        ("Nobody", "", "Nobody", "gradescope"),
        ("submission_4", "", "", "gradescope")]
    assert batch.notes[0] == "export: a Gradescope export, 5 entries"
    assert "skipped submission_metadata.yml: Gradescope's metadata (read for names, never graded)" \
        in batch.notes


def test_a_group_whose_sids_fill_more_than_400_characters_keeps_no_id(tmp_path):
    # before: the joined SIDs were cut at 400 characters, so the last member's SID 12345678
    # became "1234", which grader export would send as a grade for student 1234
    sids = ["a" * 98] * 4 + ["12345678"]
    assert len(";".join(sids[:4])) + 1 + 4 == 400
    people = "".join(f"  - :name: P{i}\n    :sid: '{sid}'\n" for i, sid in enumerate(sids))
    fits = "".join(f"  - :name: Q{i}\n    :sid: '{sid}'\n" for i, sid in enumerate(sids[:4] + ["1234"]))
    export = _edge_gradescope(tmp_path, "submission_1:\n  :submitters:\n" + people
                         + "submission_2:\n  :submitters:\n" + fits,
                         ["submission_1", "submission_2"])
    rows = {os.path.basename(s.path): s for s in platforms.resolve([str(export)]).submissions}
    assert (rows["submission_1"].student_id, rows["submission_1"].flags) == ("", [
        "submission_1: 5 SIDs in submission_metadata.yml are more than one row holds (400 "
        "characters); no student id is given"])
    assert rows["submission_1"].name == "unverified-P0; P1; P2; P3; P4"
    # 400 characters exactly: every SID whole
    assert rows["submission_2"].student_id == ";".join(sids[:4] + ["1234"])
    assert len(rows["submission_2"].student_id) == 400 and rows["submission_2"].flags == []


def test_what_an_export_holds_is_never_opened_as_another_download(tmp_path):
    # a folder or zip inside a Gradescope export, named as Canvas names its downloads, is one
    # submission: only what was given is opened as a download
    export = _edge_gradescope(tmp_path, "submission_1:\n" + _submitters(5), ["submission_1"])
    _touch(export / "extra", ["w_10000_90000_a.py"])
    with zipfile.ZipFile(export / "dl.zip", "w") as archive:
        archive.writestr("l_10001_90001_a.py", "x = 1\n")
    batch = platforms.resolve([str(export)])
    assert [(s.name, s.student_id, s.layout) for s in batch.submissions] == [
        ("dl", "dl", "plain"), ("extra", "extra", "plain"), ("N5_5", "5", "gradescope")]


def test_metadata_is_read_once_and_what_has_no_folder_is_named_five_at_most(tmp_path):
    metadata = "".join(f"submission_{i}:\n" + _submitters(i) for i in range(1, 9))
    export = _edge_gradescope(tmp_path, metadata, ["submission_1", "submission_2"])
    batch = platforms.resolve([str(export)])
    assert batch.notes[-1] == ("submission_metadata.yml: 6 submissions have no folder here "
                               "(submission_3, submission_4, submission_5, submission_6, "
                               "submission_7)")
    # one that cannot be read is said once, however many folders ask for it
    (export / "submission_metadata.yml").unlink()
    (export / "submission_metadata.yml").mkdir()
    batch = platforms.resolve([str(export)])
    assert [n for n in batch.notes if "could not be read" in n] == [
        "submission_metadata.yml could not be read (submission_metadata.yml is a folder.); "
        "names come from the folders."]


def test_a_gradescope_folder_without_metadata_is_plain_unless_said(tmp_path):
    folder = _touch(tmp_path / "submission_5", ["attention.py"])
    assert [(s.layout, s.student_id) for s in platforms.resolve([str(folder)]).submissions] == \
        [("plain", "submission_5")]
    batch = platforms.resolve([str(folder)], "gradescope")
    assert [(s.layout, s.name, s.student_id, s.flags) for s in batch.submissions] == [
        ("gradescope", "submission_5", "", [
            "submission_5: not in submission_metadata.yml; named after its folder, no student id"])]


def test_canvas_anonymous_files_rank_and_keep_no_id(tmp_path):
    canvas = _touch(tmp_path / "canvas", ["anon_x1_90001_notes.txt", "anon_x1_90000_attention.py",
                                          "LATE_anon_y2_90003_b.py", "LATE_anon_y2_90004_c.py"])
    batch = platforms.resolve([str(canvas)])
    assert [(s.name, s.student_id, s.late_flag, os.path.basename(s.path))
            for s in batch.submissions] == [
        ("anon_y2", "", True, "LATE_anon_y2_90004_c.py"),
        ("anon_x1", "", False, "anon_x1_90000_attention.py")]
    # an anonymous id of 20 characters at most
    assert canvas_platform.CANVAS_ANONYMOUS.match("anon_" + "z" * 20 + "_1_a.py")["anon"] == "z" * 20
    assert canvas_platform.CANVAS_ANONYMOUS.match("anon_" + "z" * 21 + "_1_a.py") is None


def test_a_name_that_splits_two_ways_says_both_readings(tmp_path):
    # x_10000_10005_90005: user 10000 as Canvas reads it, or user 10005 named "x_10000"
    alone = _touch(tmp_path / "alone", ["x_10000_10005_90005_a.py"])
    sub = platforms.resolve([str(alone)]).submissions[0]
    assert (sub.name, sub.student_id, sub.flags) == ("unverified-x_10000", "", [
        "x_10000_10005_90005_a.py splits two ways (user 10000, or user 10005 whose name ends in "
        "_10000): no student id is given until you check whose it is"])
    both = _touch(tmp_path / "both", ["x_10000_10005_90005_a.py", "x_10000_90000_attention.py"])
    rows = platforms.resolve([str(both)]).submissions
    assert [(s.name, s.student_id, os.path.basename(s.path), s.flags) for s in rows] == [
        ("x_10000", "10000", "x_10000_90000_attention.py", [
            "x_10000_10005_90005_a.py splits two ways (user 10000, or user 10005 whose name ends "
            "in _10000): not graded as user 10000's, who has a file that reads one way"])]
    assert rows[0].notes == ["x_10000_10005_90005_a.py was not graded: x_10000_90000_attention.py "
                             "is this student's latest or main file"]


def test_a_name_that_splits_two_ways_never_outranks_a_clear_one(tmp_path):
    # read as Canvas reads it, x_10000_99999_90005_a.py is user 10000's newest attachment
    # (99999): it still loses to the file that reads one way
    canvas = _touch(tmp_path / "c", ["x_10000_99999_90005_a.py", "x_10000_90000_b.py"])
    sub = platforms.resolve([str(canvas)]).submissions[0]
    assert (sub.student_id, os.path.basename(sub.path)) == ("10000", "x_10000_90000_b.py")


def test_times_by_layout(tmp_path):
    moodle = _touch(tmp_path / "Li_10006_assignsubmission_file_", ["attention.py"])
    os.utime(moodle / "attention.py", (1_764_000_000, 1_764_000_000))
    plain = _touch(tmp_path / "subs", ["bob.py"])
    os.utime(plain / "bob.py", (1_764_000_100, 1_764_000_100))
    got = {s.layout: (s.submitted_at, s.time_source)
           for s in platforms.resolve([str(moodle)]).submissions + platforms.resolve(
               [str(plain / "bob.py")]).submissions}
    assert got == {"moodle": ("2025-11-24T16:00:00+00:00", "moodle-file-time"),
                   "plain": ("2025-11-24T16:01:40+00:00", "file-mtime")}
    # a Moodle download given as its zip keeps its entries' times
    download = tmp_path / "moodle.zip"
    with zipfile.ZipFile(download, "w") as archive:
        archive.writestr("Li_10006_assignsubmission_file_/attention.py", "x = 1\n")
        archive.writestr("Wu_10007_assignsubmission_file_/attention.py", "x = 1\n")
    batch = platforms.resolve([str(download)])
    assert [(s.student_id, s.time_source) for s in batch.submissions] == \
        [("10006", "moodle-file-time"), ("10007", "moodle-file-time")]


def test_nbgrader_timestamp_is_the_time_and_a_bad_one_falls_back(tmp_path):
    submitted = tmp_path / "course" / "submitted"
    _touch(submitted / "alice" / "attention", ["attention.py"])
    (submitted / "alice" / "attention" / "timestamp.txt").write_text("2026-12-01 10:00:00")
    _touch(submitted / "bob" / "attention", ["attention.py"])
    (submitted / "bob" / "attention" / "timestamp.txt").write_text("not a time")
    os.utime(submitted / "bob" / "attention" / "attention.py", (1_764_000_000, 1_764_000_000))
    os.utime(submitted / "bob" / "attention" / "timestamp.txt", (1_764_000_000, 1_764_000_000))
    batch = platforms.resolve([str(submitted)])
    got = {s.name: (s.submitted_at, s.time_source) for s in batch.submissions}
    assert got == {"alice": ("2026-12-01T10:00:00+00:00", "nbgrader-timestamp"),
                   "bob": ("2025-11-24T16:00:00+00:00", "file-mtime")}
    bob = next(s for s in batch.submissions if s.name == "bob")
    assert len(bob.flags) == 1 and bob.flags[0].endswith("; no submission time from nbgrader")
    assert f"bob: {bob.flags[0]}" in batch.notes


def test_the_metadata_file_given_alone_is_read_never_graded(tmp_path):
    export = _edge_gradescope(tmp_path, "submission_1:\n" + _submitters(5), ["submission_1"])
    batch = platforms.resolve([str(export / "submission_metadata.yml"), str(export / "submission_1")])
    assert [(s.name, s.student_id) for s in batch.submissions] == [("N5_5", "5")]
    assert batch.notes == ["skipped submission_metadata.yml: Gradescope's metadata (read for "
                           "names, never graded)"]
    # given alone it is still read, and what it lists without a folder is said
    for layout in ("auto", "gradescope"):
        batch = platforms.resolve([str(export / "submission_metadata.yml")], layout)
        assert batch.submissions == [] and batch.notes == [
            "skipped submission_metadata.yml: Gradescope's metadata (read for names, never graded)",
            "submission_metadata.yml: 1 submissions have no folder here (submission_1)"]
    # --layout plain never reads it: the folder is named after itself
    batch = platforms.resolve([str(export / "submission_metadata.yml"), str(export / "submission_1")],
                            "plain")
    assert [(s.name, s.layout) for s in batch.submissions] == [("submission_1", "plain")]


def test_a_junk_name_that_is_an_lms_name_is_not_skipped(tmp_path):
    # "._" starts a Mac's resource file, and also Moodle's name for participant "."
    folder = _touch(tmp_path / "._10006_assignsubmission_file_", ["attention.py"])
    batch = platforms.resolve([str(folder)])
    assert [(s.name, s.student_id, s.layout) for s in batch.submissions] == [
        ("._10006", "10006", "moodle")]
    junk = _touch(tmp_path / "__MACOSX", ["attention.py"])
    batch = platforms.resolve([str(junk)])
    assert batch.submissions == [] and batch.notes == [
        "skipped __MACOSX: not a submission (added by an LMS or an operating system)"]


def test_a_folder_inside_a_download_is_never_opened_as_one(tmp_path):
    # depth 1: a student's folder in a Moodle download holding Canvas-named files is theirs
    download = tmp_path / "moodle"
    _touch(download / "Li_10006_assignsubmission_file_" / "sub", ["w_10000_90000_a.py"])
    batch = platforms.resolve([str(download)])
    assert _rows(batch) == [("Li_10006", "10006", "moodle", "Li_10006_assignsubmission_file_")]


def test_a_path_that_cannot_exist_is_nothing(tmp_path):
    assert layouts.lstat("a\x00b") is None and layouts.is_dir("a\x00b") is False
    assert layouts.listing("a\x00b") == ([], False)
    assert nbgrader_platform.nbgrader_students("c/submitted/a\x00b/x") is None


def test_a_zip_that_is_no_download(tmp_path):
    broken = tmp_path / "submissions.zip"
    broken.write_bytes(b"PK\x03\x04 not really")
    folder = tmp_path / "folder.zip"
    _touch(folder, ["attention.py"])
    batch = platforms.resolve([str(broken), str(folder)])
    assert [(s.name, s.layout, s.student_id) for s in batch.submissions] == [
        ("submissions", "plain", "submissions"), ("folder", "plain", "folder")]
    # junk and entries extraction refuses do not decide what a download is
    download = tmp_path / "dl.zip"
    with zipfile.ZipFile(download, "w") as archive:
        archive.writestr("__MACOSX/._w_10000_90000_a.py", "junk")
        archive.writestr("../evil.py", "x = 1\n")
        archive.writestr("w_10000_90000_a.py", "x = 1\n")
    assert layouts.zip_names(str(download)) == ["w_10000_90000_a.py"]
    assert [(s.name, s.student_id) for s in platforms.resolve([str(download)]).submissions] == \
        [("w_10000", "10000")]


@pytest.mark.parametrize("given, name, ident", [
    ("bob.py", "bob", "bob"), ("a b.py", "a b", ""), ("=1+1.py", "=1+1", ""),
    ("jane@x.edu.ipynb", "jane@x.edu", "jane@x.edu"),
])
def test_a_plain_row_is_an_id_only_when_its_name_is_one_as_it_is(tmp_path, given, name, ident):
    _touch(tmp_path, [given])
    sub = platforms.resolve([str(tmp_path / given)]).submissions[0]
    assert (sub.name, sub.student_id, sub.student_name, sub.layout) == (name, ident, name, "plain")
    old = layouts.plain([str(tmp_path / given)])[0]   # the same row without a time
    assert (old.name, old.student_id, old.student_name, old.layout) == (name, ident, name, "plain")


def test_row_names_stay_unique_in_the_batch(tmp_path):
    # rows of two layouts that ask for one name: the second gets -2, a third -3
    nb = tmp_path / "course" / "submitted"
    _touch(nb / "w_10000" / "attention", ["attention.py"])
    canvas = _touch(tmp_path / "canvas", ["w_10000_90000_a.py"])
    moodle = _touch(tmp_path / "w_10000_assignsubmission_file_", ["attention.py"])
    batch = platforms.resolve([str(canvas / "w_10000_90000_a.py"), str(nb / "w_10000"),
                             str(moodle)])
    assert [(s.name, s.layout) for s in batch.submissions] == [
        ("w_10000", "canvas"), ("w_10000-2", "nbgrader"), ("w_10000-3", "moodle")]


SCRATCH = "/dev/shm" if os.access("/dev/shm", os.W_OK | os.X_OK) else None


def test_a_download_of_10001_files_is_read_to_its_first_10000():
    with tempfile.TemporaryDirectory(dir=SCRATCH) as scratch:   # in memory where there is one
        folder = os.path.join(scratch, "canvas")
        os.mkdir(folder)
        for i in range(10_001):
            open(os.path.join(folder, f"s_{i}_{i}_a.py"), "wb").close()
        batch = platforms.resolve([folder])
        assert batch.notes[:2] == ["canvas: only its first 10000 entries were read",
                                   "canvas: a Canvas download, 10000 entries"]
        assert len(batch.submissions) == 10_000 and batch.layouts == {"canvas": 10_000}


def test_metadata_keeps_100000_submissions(tmp_path, monkeypatch):
    text = "".join(f"submission_{i}:\n" for i in range(100_001))
    subset = gradescope_metadata.parse_metadata_subset(text + "  :submitters:\n  - :sid: '7'\n")
    assert len(subset) == 100_000 and "submission_99999" in subset and "submission_100000" not in subset
    # what follows the last key read is not read either (never given to the key before it)
    assert subset["submission_99999"] == {"people": [], "created_at": ""}
    # PyYAML's reading is cut the same way (shown on a lower cap: 100 001 entries take PyYAML
    # seconds)
    monkeypatch.setattr(gradescope_metadata, "METADATA_KEYS", 3)
    path = tmp_path / "submission_metadata.yml"
    path.write_text(text[:200], encoding="utf-8")
    assert list(gradescope_metadata.read_metadata(str(path))[0]) == ["submission_0", "submission_1", "submission_2"]


def test_metadata_of_16_mb_is_read_and_one_byte_more_is_not(tmp_path):
    head = b"submission_1:\n  :submitters:\n  - :name: Jane\n    :sid: '9'\n"
    path = tmp_path / "submission_metadata.yml"
    path.write_bytes(head + b"#" * (16 * 1024 * 1024 - len(head)))
    assert gradescope_metadata.read_metadata(str(path))[0]["submission_1"]["people"] == [_person("Jane", "9")]
    path.write_bytes(head + b"#" * (16 * 1024 * 1024 + 1 - len(head)))
    data, note = gradescope_metadata.read_metadata(str(path))
    assert (data, note) == ({}, "submission_metadata.yml could not be read (submission_metadata."
                                "yml is 16 MB; a metadata file over 16 MB is not accepted.); "
                                "names come from the folders.")


def test_a_download_zip_of_20000_entries_is_read_and_one_more_is_not():
    with tempfile.TemporaryDirectory(dir=SCRATCH) as scratch:
        path = os.path.join(scratch, "submissions.zip")
        with zipfile.ZipFile(path, "w") as archive:
            for i in range(20_000):
                archive.writestr(f"s_{i}_{i}_a.py", "")
        assert len(layouts.zip_names(path)) == 20_000
        with zipfile.ZipFile(path, "a") as archive:
            archive.writestr("s_x_1_2_a.py", "")
        assert layouts.zip_names(path) is None


def test_a_download_zip_over_1_gb_is_not_read():
    # sparse: 1 GiB of nothing before a real zip (zipfile reads a zip with data before it)
    with tempfile.TemporaryDirectory(dir=SCRATCH) as scratch:
        small = os.path.join(scratch, "small.zip")
        with zipfile.ZipFile(small, "w") as archive:
            archive.writestr("w_10000_90000_a.py", "x = 1\n")
        data = open(small, "rb").read()
        for size, names in ((1024 ** 3, ["w_10000_90000_a.py"]), (1024 ** 3 + 1, None)):
            path = os.path.join(scratch, f"{size}.zip")
            with open(path, "wb") as handle:
                handle.seek(size - len(data))
                handle.write(data)
            assert os.path.getsize(path) == size
            assert layouts.zip_names(path) == names


def test_the_platforms_are_tried_and_listed_in_their_documented_order():
    # tried: a Gradescope export's submission folder before nbgrader's submitted/ (an export
    # kept in a folder named submitted), Canvas before Moodle, plain last: it takes anything
    assert [p.name for p in platform_base.tried()] == [
        "gradescope", "nbgrader", "canvas", "moodle", "classroom", "plain"]
    assert [p.name for p in platform_base.listed()] == [
        "plain", "nbgrader", "canvas", "moodle", "gradescope", "classroom"]
    # a platform that says neither is listed after the kit's and tried before plain: 100
    assert (platform_base.Platform.listed, platform_base.Platform.tried) == (100, 100)
    assert platform_base.named("plain").tried == 1000 and platform_base.named("nope") is None


def test_a_block_scalars_comment_is_no_chomping_indicator():
    # `| #-x`: a literal block with a comment that starts with "-", clipped like any `|`
    text = "submission_1:\n  :submitters:\n  - :name: | #-x\n      Jane\n    :sid: '1'\n"
    person = gradescope_metadata.parse_metadata_subset(text)["submission_1"]["people"][0]
    assert (person["name"], person["sid"]) == ("Jane\n", "1")
    yaml = pytest.importorskip("yaml")   # as PyYAML reads it
    assert yaml.safe_load(text)["submission_1"][":submitters"][0][":name"] == "Jane\n"
