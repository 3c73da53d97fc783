"""Student identity from the way work arrives (grader/intake/layouts.py), and `grader export`.

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

import pytest

from conftest import KIT, SUBMISSIONS

from grader import export
from grader.intake import layouts
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
    ("zhaomin_late_10002_90002_attention-12.py", "10002", "zhaomin", True, 12),
    ("王力_10003_90003_attention.py", "10003", "王力", False, 0),
    ("wang_li_10004_90004_attention.zip", "10004", "wang_li", False, 0),
    ("teststudent_1_2_attention (1).py", "1", "teststudent", False, 0),
])
def test_canvas_names(name, user, who, late, resubmission):
    parts = layouts.parse_canvas(name)
    assert (parts["user"], parts["name"], parts["late"], parts["resubmission"]) == \
        (user, who, late, resubmission)


@pytest.mark.parametrize("name", ["alice.py", "attention.py", "bob.ipynb", "erik", "dana.zip",
                                  "_10000_90000_attention.py", "wangli_10000_attention.py",
                                  "wangli_x_90000_attention.py", "submission_metadata.yml"])
def test_names_that_are_not_canvas(name):
    assert layouts.parse_canvas(name) is None


@pytest.mark.parametrize("name, ident, who, plugin, file", [
    ("Fang Wu_10006_assignsubmission_file_", "10006", "Fang Wu", "file", ""),
    ("Fang Wu_10006_assignsubmission_onlinetext_", "10006", "Fang Wu", "onlinetext", ""),
    ("Fang Wu_10006_assignsubmission_file_attention.py", "10006", "Fang Wu", "file", "attention.py"),
    ("Group A-Zhou Tao_10007_assignsubmission_file_", "10007", "Group A-Zhou Tao", "file", ""),
    ("Participant_10008_assignsubmission_file_", "10008", "Participant", "file", ""),
    ("张 伟_10009_assignsubmission_file_", "10009", "张 伟", "file", ""),
])
def test_moodle_names(name, ident, who, plugin, file):
    parts = layouts.parse_moodle(name)
    assert (parts["id"], parts["name"], parts["plugin"], parts["file"]) == (ident, who, plugin, file)


@pytest.mark.parametrize("name", ["alice.py", "Fang Wu_assignsubmission_file_", "Fang Wu_10006_file_",
                                  "wangli_10000_90000_attention.py"])
def test_names_that_are_not_moodle(name):
    assert layouts.parse_moodle(name) is None


@pytest.mark.parametrize("hostile", [
    "=HYPERLINK(\"http://x\")_10000_90000_attention.py",
    "\x1b[2J\x1b[31mred_10000_90000_attention.py",
    "a\udcffb_10000_90000_attention.py",
    "\u202eevil_10000_90000_attention.py",
    "x" * 5000 + "_10000_90000_attention.py",
    "..\n.._10000_90000_attention.py",
])
def test_hostile_canvas_names_are_made_safe(hostile):
    parts = layouts.parse_canvas(hostile)
    if parts is None:  # too long to be a file name: it falls back to plain
        assert len(hostile) > layouts.MAX_NAME
        return
    name = parts["name"]
    assert len(name) <= layouts.MAX_DISPLAY and "\n" not in name and "\x1b" not in name
    assert "\udcff" not in name and "\u202e" not in name
    assert parts["user"] == "10000"
    assert not gradebook.text_cell(name).startswith("=")


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
    assert layouts.nbgrader_parts("c/submitted/alice/attention/attention.py") == \
        ("alice", ("attention", "attention.py"))
    assert layouts.nbgrader_parts("c/submitted/bob/attention") == ("bob", ("attention",))
    assert layouts.nbgrader_parts("c/submitted/bob") == ("bob", ())
    assert layouts.nbgrader_parts("subs/alice.py") is None
    assert layouts.nbgrader_parts("c/submitted/a/b/c/d/e.py") is None


def test_metadata_subset_parser_reads_what_pyyaml_reads():
    subset = layouts.parse_metadata_subset(METADATA)
    assert subset == {
        "submission_31000001": [{"name": "Jane Doe", "sid": "12345", "email": "jane@example.edu"}],
        "submission_31000002": [{"name": "Li Lei", "sid": "12346", "email": "lilei@example.edu"},
                                {"name": "Han Meimei", "sid": "12347", "email": "hanmm@example.edu"}]}
    loader = layouts._tolerant_loader()
    if loader is not None:
        import yaml
        data = yaml.load(METADATA, Loader=loader)
        assert {k: layouts._people(v) for k, v in data.items()} == subset


def test_metadata_never_runs_code_and_is_bounded(tmp_path):
    evil = tmp_path / "submission_metadata.yml"
    evil.write_text("submission_1: !!python/object/apply:os.system ['touch %s']\n"
                    % (tmp_path / "pwned"), encoding="utf-8")
    data, note = layouts.read_metadata(str(evil))
    assert not (tmp_path / "pwned").exists() and note is None and data == {"submission_1": []}
    big = tmp_path / "big" / "submission_metadata.yml"
    big.parent.mkdir()
    with open(big, "wb") as handle:
        handle.truncate(layouts.METADATA_BYTES + 1)
    data, note = layouts.read_metadata(str(big))
    assert data == {} and "could not be read" in note
    link = tmp_path / "link" / "submission_metadata.yml"
    link.parent.mkdir()
    os.symlink("/etc/passwd", link)
    data, note = layouts.read_metadata(str(link))
    assert data == {} and "could not be read" in note


def test_metadata_without_pyyaml_uses_the_subset_parser(tmp_path, monkeypatch):
    (tmp_path / "submission_metadata.yml").write_text(METADATA, encoding="utf-8")
    monkeypatch.setattr(layouts, "_tolerant_loader", lambda: None)
    data, note = layouts.read_metadata(str(tmp_path / "submission_metadata.yml"))
    assert note is None and data["submission_31000001"][0]["sid"] == "12345"


# --- fixtures: one class handed in four ways --------------------------------------------------

def _canvas(root):
    canvas = root / "canvas"
    canvas.mkdir()
    shutil.copy(ALICE, canvas / "wangli_10000_90000_attention.py")
    shutil.copy(ALICE, canvas / "liuyang_LATE_10001_90001_attention.py")
    shutil.copy(STUB, canvas / "zhaomin_10002_90002_attention.py")      # the first try
    shutil.copy(ALICE, canvas / "zhaomin_10002_90002_attention-1.py")   # the resubmission
    shutil.copy(ALICE, canvas / "sunqi_10003_90003_attention.py")
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
    batch = layouts.resolve(_paths(canvas, moodle, gradescope) + nb_files)
    got = {s.name: (s.student_id, s.student_name, s.layout) for s in batch.submissions}
    assert got == {
        "wangli_10000": ("10000", "wangli", "canvas"),
        "liuyang_10001": ("10001", "liuyang", "canvas"),
        "zhaomin_10002": ("10002", "zhaomin", "canvas"),
        "sunqi_10003": ("10003", "sunqi", "canvas"),
        "Fang Wu_10006": ("10006", "Fang Wu", "moodle"),
        "Zhou Tao_10007": ("10007", "Zhou Tao", "moodle"),
        "Chen Jing_10008": ("10008", "Chen Jing", "moodle"),
        "Jane Doe_12345": ("12345", "Jane Doe", "gradescope"),
        "Li Lei; Han Meimei_12346;12347": ("12346;12347", "Li Lei; Han Meimei", "gradescope"),
        "alice": ("alice", "alice", "nbgrader"),
        "bob": ("bob", "bob", "nbgrader")}
    zhaomin = next(s for s in batch.submissions if s.name == "zhaomin_10002")
    assert zhaomin.path.endswith("attention-1.py")
    assert any("zhaomin_10002_90002_attention.py was not graded" in n for n in zhaomin.notes)
    notes = "\n".join(batch.notes)
    for skipped in ("index.html", "submission_metadata.yml", "onlinetext"):
        assert f"skipped {skipped}" in notes or skipped in notes
    assert not any(s.path.endswith((".yml", ".html")) or "onlinetext" in s.path
                   for s in batch.submissions)
    # whole folders given: each is opened, with the same names
    again = layouts.resolve([str(canvas), str(moodle), str(gradescope), str(submitted)])
    assert {s.name: (s.student_id, s.layout) for s in again.submissions} == \
        {n: (i, lay) for n, (i, _, lay) in got.items()}


def test_explicit_layouts_and_fallbacks(tmp_path):
    canvas = _canvas(tmp_path)
    plain = layouts.resolve(_paths(canvas), "plain")
    assert {s.name for s in plain.submissions} == {
        "wangli_10000_90000_attention", "liuyang_LATE_10001_90001_attention",
        "zhaomin_10002_90002_attention", "zhaomin_10002_90002_attention-1",
        "sunqi_10003_90003_attention"}
    assert all(s.layout == "plain" for s in plain.submissions)
    odd = tmp_path / "alice.py"
    shutil.copy(ALICE, odd)
    moodle = layouts.resolve([str(odd)], "moodle")
    assert [(s.name, s.layout) for s in moodle.submissions] == [("alice", "plain")]
    assert "does not look like moodle" in "\n".join(moodle.notes)
    auto = layouts.resolve([str(odd), os.path.join(KIT, "examples", "erik")])
    assert [(s.name, s.student_id, s.layout) for s in auto.submissions] == \
        [("alice", "alice", "plain"), ("erik", "erik", "plain")]
    with pytest.raises(ValueError):
        layouts.resolve([str(odd)], "blackboard")
    loose = tmp_path / "submitted" / "carol.py"  # a file right in submitted/: not nbgrader's
    loose.parent.mkdir()
    shutil.copy(ALICE, loose)
    assert [(s.name, s.layout) for s in layouts.resolve([str(loose)]).submissions] == \
        [("carol", "plain")]


def test_hostile_paths_never_escape(tmp_path):
    export_dir = tmp_path / "export"
    export_dir.mkdir()
    (export_dir / "submission_metadata.yml").write_text(
        "../../etc:\n  :submitters:\n  - :name: \"=cmd|' /C calc'!A0\"\n    :sid: '../1'\n"
        "submission_7:\n  :submitters:\n  - :name: \"\\e[31mx\\u202e\"\n    :sid: '=7'\n",
        encoding="utf-8")
    (export_dir / "submission_7").mkdir()
    batch = layouts.resolve([str(export_dir)])
    (only,) = batch.submissions
    assert only.path == str(export_dir / "submission_7")
    assert only.student_id == "7" and "\x1b" not in only.student_name and "\u202e" not in only.student_name


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


def test_grades_csv_names_every_student_by_the_lms_id(graded):
    out, rows, run = graded
    got = {name: (row["student_id"], row["name"]) for name, row in rows.items()}
    assert got == {
        "wangli_10000": ("10000", "wangli"), "liuyang_10001": ("10001", "liuyang"),
        "zhaomin_10002": ("10002", "zhaomin"), "sunqi_10003": ("10003", "sunqi"),
        "Fang Wu_10006": ("10006", "Fang Wu"), "Zhou Tao_10007": ("10007", "Zhou Tao"),
        "Chen Jing_10008": ("10008", "Chen Jing"), "Jane Doe_12345": ("12345", "Jane Doe"),
        "Li Lei; Han Meimei_12346;12347": ("12346;12347", "Li Lei; Han Meimei"),
        "alice": ("alice", "alice"), "bob": ("bob", "bob")}
    assert all(row["total"] == "100" for row in rows.values()), rows  # zhaomin's resubmission
    assert rows["zhaomin_10002"]["source"].endswith("attention-1.py")
    header = open(out / "grades.csv", encoding="utf-8-sig").readline()
    assert header.startswith("submission,student_id,name,status,total,max,")
    assert "folder" in header and "source" in header
    row_file = gradebook.load_records(str(out))["wangli_10000"]
    assert (row_file["student_id"], row_file["student_name"], row_file["layout"]) == \
        ("10000", "wangli", "canvas")
    feedback = open(out / rows["zhaomin_10002"]["folder"] / "feedback.txt", encoding="utf-8").read()
    assert "zhaomin_10002_90002_attention.py was not graded" in feedback


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
        ["Jane Doe", "", "12345", "", "", "100"],
        ["Li Lei", "", "12346", "", "", "100"], ["Han Meimei", "", "12347", "", "", "100"],
        ["alice", "", "", "alice", "", "100"], ["bob", "", "", "bob", "", "100"]])
    assert done.stderr.count("a Moodle participant id") == 3


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
        ["Participant 10007", "Zhou Tao", "100", "100"]]
    assert all(line[4] for line in lines[1:])
    assert done.stderr.count("not from a Moodle download") == 8


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
    text, notes = export.canvas_text(rows, "@SUM(A1)")
    lines = list(csv.reader(io.StringIO(text)))
    assert lines[0][-1] == "'@SUM(A1)"
    assert lines[2:] == [["'=HYPERLINK(\"http://evil\")", "1", "", "", "", "85"],
                         ["Di", "4", "", "", "", "0"]]
    assert any("left out b" in n and "never exported as 0" in n for n in notes)
    assert any("left out c" in n and "no student id" in n for n in notes)
    moodle, notes = export.moodle_text([_row("m", student_id="9", student_name="-2+3",
                                             layout="moodle")], now=0)
    assert list(csv.reader(io.StringIO(moodle)))[1] == \
        ["Participant 9", "'-2+3", "85", "100", "1970-01-01 00:00:00 +0000"]


def test_export_usage_errors(tmp_path):
    done = _export(tmp_path / "nothing", "canvas", tmp_path / "x.csv")
    assert done.returncode == 2 and "not a gradebook folder" in done.stderr
    (tmp_path / "empty").mkdir()
    done = _export(tmp_path / "empty", "moodle", tmp_path / "x.csv")
    assert done.returncode == 2 and "no graded rows" in done.stderr
