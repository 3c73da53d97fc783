"""grader/intake/__init__.py at its edges (issue 19): which file is the work (each rule of
docs/how-to/canvas.md's order, the shallowest copy, the names never taken), the names a batch gives
its submissions (computed by hand here), which helpers are staged beside it (2 MB on both
sides), each refusal by its whole text and what it makes of the row (missing work, not
gradable, grader error), on real folders, files and zips in tmp_path."""
import io
import os
import zipfile

import pytest

import grader.intake as intake
from grader.intake import stage, submission_names

CODE = "X = 1\n"


def _stage(tmp_path, upload, name="student"):
    return stage(str(upload), str(tmp_path / "staged"), name)


def _folder(tmp_path, files, name="hw"):
    root = tmp_path / name
    for rel, data in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data if isinstance(data, bytes) else data.encode())
    root.mkdir(exist_ok=True)
    return root


def _staged_source(staged):
    assert staged.error is None, staged.error
    with open(staged.file, encoding="utf-8") as handle:
        return handle.read()


def test_the_documented_limits_and_names():
    assert not hasattr(intake, "MODULE")   # the file's name is the assignment's (naming.py)
    assert intake.MAX_HELPER_BYTES == 2 * 1024 * 1024
    assert intake.SKIP_DIRS == {"__MACOSX", "__pycache__", ".git", ".ipynb_checkpoints",
                                "node_modules", ".venv", "venv"}


@pytest.mark.parametrize("files, chosen", [
    ({"attention.py": "A = 1\n", "attention.ipynb": b"{}", "attention_final.py": "B = 1\n"},
     "A = 1\n"),
    ({"sub/attention.py": "A = 1\n", "attention_v2.py": "B = 1\n"}, "A = 1\n"),
    ({"attention (1).py": "B = 1\n", "helpers.py": "C = 1\n"}, "B = 1\n"),
    ({"Attention-Final.PY": "B = 1\n", "x.py": "C = 1\n"}, "B = 1\n"),
    ({"attention copy 2.py": "B = 1\n", "y.py": "C = 1\n"}, "B = 1\n"),
    ({"deep/deeper/attention.py": "D = 1\n", "deep/attention.py": "A = 1\n"}, "A = 1\n"),
    ({"mine.py": "M = 1\n", "test_mine.py": "T = 1\n", "conftest.py": "", "setup.py": "",
      "mine_test.py": "", "sitecustomize.py": "", "usercustomize.py": "", "notes.txt": ""},
     "M = 1\n"),
])
def test_which_file_is_the_work(tmp_path, files, chosen):
    assert _staged_source(_stage(tmp_path, _folder(tmp_path, files))) == chosen


def test_a_notebook_is_chosen_by_name_and_then_as_the_only_one(tmp_path):
    nb = b'{"cells": [{"cell_type": "code", "source": "N = 1"}]}'
    for files in ({"attention.ipynb": nb, "attention_v3.py": "B = 1\n"},
                  {"attention_final.ipynb": nb, "other.ipynb": b"{}"},
                  {"work.ipynb": nb}):
        root = _folder(tmp_path, files)
        staged = _stage(tmp_path, root)
        assert "N = 1" in _staged_source(staged)
        for path in (root, tmp_path / "staged"):
            for name in os.listdir(path):
                os.remove(path / name)


def test_a_notebook_beside_a_module_is_not_guessed(tmp_path):
    root = _folder(tmp_path, {"work.ipynb": b"{}", "mine.py": "M = 1\n"})
    assert _staged_source(_stage(tmp_path, root)) == "M = 1\n"
    root = _folder(tmp_path, {"work.ipynb": b"{}", "a.ipynb": b"{}"}, "two")
    staged = _stage(tmp_path, root)
    assert staged.file is None and staged.missing is False
    assert staged.error == ("two has no attention.py (looked for attention.py or attention."
                            "ipynb, else one other .py or .ipynb file, also inside one zip; it "
                            "contains: a.ipynb, work.ipynb). Name your file attention.py.")


@pytest.mark.parametrize("name", ["attentions.py", "my_attention.py", "attention_v.py",
                                  "attention_draft.py", "attention.PY.txt"])
def test_names_that_only_look_like_the_work_are_not_it(tmp_path, name):
    root = _folder(tmp_path, {name: "B = 1\n", "other.py": "C = 1\n", "more.py": ""})
    staged = _stage(tmp_path, root)
    assert staged.file is None and staged.missing is False
    assert "has no attention.py" in staged.error


def test_two_copies_at_the_same_depth_are_named_not_guessed(tmp_path):
    root = _folder(tmp_path, {f"v{i}/attention.py": CODE for i in range(12)})
    staged = _stage(tmp_path, root)
    listed = ", ".join(f"v{i}/attention.py" for i in sorted(range(12), key=str)[:10])
    assert staged.error == f"hw holds several candidate files ({listed}); keep only one."


def test_the_listing_of_what_was_found_shows_ten_entries_and_their_kinds(tmp_path):
    root = _folder(tmp_path, {f"f{i:02}.txt": "" for i in range(12)})
    os.mkfifo(root / "a-pipe")
    staged = _stage(tmp_path, root)
    found = ", ".join(["a-pipe (a named pipe)"] + [f"f{i:02}.txt" for i in range(9)])
    assert staged.error == ("hw has no attention.py (looked for attention.py or attention."
                            "ipynb, else one other .py or .ipynb file, also inside one zip; it "
                            f"contains: {found}). Name your file attention.py.")
    assert staged.missing is False   # something refused was handed in: not missing work


def test_nothing_that_could_be_code_is_missing_work(tmp_path):
    staged = _stage(tmp_path, _folder(tmp_path, {"report.pdf": b"%PDF", "a/notes.md": ""}))
    assert staged.missing is True and staged.grader_failed is False and staged.file is None
    assert "it contains: report.pdf, a/notes.md)" in staged.error


def test_hidden_and_tool_folders_are_not_walked(tmp_path):
    files = {f"{d}/attention.py": "S = 1\n" for d in
             ("__MACOSX", "__pycache__", ".git", ".ipynb_checkpoints", "node_modules", ".venv",
              "venv", ".hidden")}
    files["work/attention.py"] = "W = 1\n"
    assert _staged_source(_stage(tmp_path, _folder(tmp_path, files))) == "W = 1\n"


def test_helpers_beside_the_work_are_copied_up_to_2_mb(tmp_path):
    limit = 2 * 2**20
    body = "# " + "x" * (limit - 3) + "\n"          # exactly 2 MB: copied
    root = _folder(tmp_path, {"hw/attention.py": CODE, "hw/big.py": body,
                              "hw/bigger.py": body + "\n", "hw/util.py": "U = 1\n",
                              "hw/test_util.py": "T = 1\n", "hw/notes.txt": "n",
                              "hw/sub/deep.py": "D = 1\n", "other.py": "O = 1\n",
                              "hw/bad.py": b"\x00\x01binary"})
    staged = _stage(tmp_path, root)
    assert _staged_source(staged) == CODE
    assert sorted(os.listdir(tmp_path / "staged")) == ["attention.py", "big.py", "test_util.py",
                                                       "util.py"]
    assert os.path.getsize(tmp_path / "staged" / "big.py") == limit
    assert staged.notes == []


def test_a_helper_named_attention_py_elsewhere_never_replaces_the_work(tmp_path):
    root = _folder(tmp_path, {"attention_final.py": "F = 1\n", "util.py": "U = 1\n"})
    staged = _stage(tmp_path, root)
    assert _staged_source(staged) == "F = 1\n"
    assert sorted(os.listdir(tmp_path / "staged")) == ["attention.py", "util.py"]


def test_helpers_with_names_the_grader_cannot_use_are_counted_and_named(tmp_path):
    root = _folder(tmp_path, {"attention.py": CODE, "a\x1bb.py": "A = 1\n",
                              "c\x07.py": "C = 1\n"})
    staged = _stage(tmp_path, root)
    assert os.listdir(tmp_path / "staged") == ["attention.py"]
    assert staged.notes == ["2 helper files have names the grader cannot use (ab.py, c.py) and "
                            "were not copied; rename them."]


def test_entries_that_are_not_files_are_skipped_with_one_note(tmp_path):
    root = _folder(tmp_path, {"attention.py": CODE})
    for i in range(7):
        os.mkfifo(root / f"p{i}")
    staged = _stage(tmp_path, root)
    listed = "; ".join(f"p{i}: a named pipe" for i in range(5))
    assert staged.notes == [f"hw: skipped 7 entries that are not regular files ({listed}; and 2 "
                            "more); the grader reads only regular files, never links, pipes or "
                            "devices."]
    for i in range(1, 7):
        os.remove(root / f"p{i}")
    staged = _stage(tmp_path, root)
    assert staged.notes == ["hw: skipped 1 entry that is not a regular file (p0: a named pipe); "
                            "the grader reads only regular files, never links, pipes or devices."]


def test_the_work_that_is_not_a_file_is_refused_by_what_it_is(tmp_path):
    root = _folder(tmp_path, {})
    os.mkfifo(root / "attention.py")
    staged = _stage(tmp_path, root)
    assert staged.error == ("attention.py is a named pipe (FIFO), not a file; the grader reads "
                            "only regular files. Upload the file itself.")
    assert staged.missing is False and staged.file is None


def test_a_single_file_is_read_with_its_own_limit(tmp_path):
    big = tmp_path / "attention.py"
    big.write_bytes(b"#" * (2 * 2**20 + 1))
    assert _stage(tmp_path, big).error == ("attention.py is 2048 KB; a source file over 2048 KB "
                                           "is not accepted.")
    nb = tmp_path / "work.IPYNB"
    nb.write_bytes(b" " * (2 * 2**20 + 1) + b'{"cells": [{"cell_type": "code", "source": "N=1"}]}')
    assert "N=1" in _staged_source(_stage(tmp_path, nb))   # a notebook may be 20 MB
    with open(nb, "wb") as handle:
        handle.truncate(20 * 2**20 + 1)
    assert _stage(tmp_path, nb).error == ("work.IPYNB is 20 MB; a notebook over 20 MB is not "
                                          "accepted.")
    upper = tmp_path / "MINE.PY"
    upper.write_bytes(b"P = 1\n")
    assert _staged_source(_stage(tmp_path, upper)) == "P = 1\n"


def test_what_is_no_code_file_is_missing_work_and_says_so(tmp_path):
    for name in ("report.pdf", "attention.txt"):
        (tmp_path / name).write_bytes(b"x")
        staged = _stage(tmp_path, tmp_path / name)
        assert staged.error == f"{name} is not a .py file, a notebook, a zip or a folder."
        assert staged.missing is True and staged.file is None
    staged = stage("", str(tmp_path / "staged"), "x")
    assert staged.error == "no submission path was given." and staged.missing is False


def test_a_path_given_with_a_trailing_slash_is_named_by_its_folder(tmp_path):
    root = _folder(tmp_path, {"attention.py": CODE})
    os.symlink(root, tmp_path / "link")
    staged = _stage(tmp_path, str(tmp_path / "link") + "/")
    assert staged.error == "link is a symbolic link; upload the file itself."


def _zip_bytes(entries):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        for name, data in entries:
            zf.writestr(name, data)
    return buffer.getvalue()


def test_a_zip_is_opened_case_blind_and_its_folder_removed(tmp_path, monkeypatch):
    import tempfile
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    upload = tmp_path / "HW.ZIP"
    upload.write_bytes(_zip_bytes([("hw/attention.py", CODE), ("hw/h.py", "H = 1\n")]))
    staged = _stage(tmp_path, upload)
    assert _staged_source(staged) == CODE and staged.notes == []
    assert sorted(os.listdir(tmp_path / "staged")) == ["attention.py", "h.py"]
    assert os.listdir(scratch) == []


def test_the_one_zip_in_a_folder_is_opened_and_said(tmp_path):
    root = _folder(tmp_path, {"readme.txt": "hi", "old.ZIP.bak": "x"})
    (root / "作业.Zip").write_bytes(_zip_bytes([("attention.py", CODE)]))
    staged = _stage(tmp_path, root)
    assert _staged_source(staged) == CODE
    assert staged.notes == ["hw: the work was in 作业.Zip, which was opened."]
    # a zip given as the upload itself is not searched for another zip inside
    upload = tmp_path / "outer.zip"
    upload.write_bytes(_zip_bytes([("inner.zip", _zip_bytes([("attention.py", CODE)]))]))
    staged = _stage(tmp_path, upload)
    assert staged.missing is True and "outer.zip has no attention.py" in staged.error


def test_a_zip_that_is_a_link_in_a_folder_is_not_opened(tmp_path):
    real = tmp_path / "real.zip"
    real.write_bytes(_zip_bytes([("attention.py", "SECRET = 1\n")]))
    root = _folder(tmp_path, {"notes.txt": ""})
    os.symlink(real, root / "work.zip")
    staged = _stage(tmp_path, root)
    assert staged.file is None and staged.missing is False
    assert "work.zip (a symbolic link)" in staged.error


def test_submission_names_by_hand(tmp_path):
    (tmp_path / "alice").mkdir()
    (tmp_path / "s" / "bob" / "attention").mkdir(parents=True)
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "attention.py").write_text(CODE)
    paths = [str(tmp_path / "alice"), "up/Carol.IPYNB", "up/dan.Zip", "notes.txt",
             str(tmp_path / "s" / "bob" / "attention"), str(tmp_path / "x" / "attention.py"),
             "a/eve.py", "b/eve.py", "eve"]
    here = os.path.basename(os.getcwd())   # "eve" is relative: its parent is the cwd
    assert submission_names(paths) == ["alice", "Carol", "dan", "notes.txt", "bob", "attention",
                                       "a-eve", "b-eve", f"{here}-eve"]


def test_names_still_clashing_get_a_counter(tmp_path):
    assert submission_names(["a/x.py", "a/x.ipynb", "a/x.zip", "a-x"]) == [
        "a-x", "a-x-2", "a-x-3", "a-x-4"]
    assert submission_names(["/x.py", "/x.zip"]) == ["x", "x-2"]


def test_an_unexpected_failure_is_the_graders_and_notes_are_capped(tmp_path, monkeypatch):
    def broken(data, label):
        raise TypeError("bug")
    monkeypatch.setattr(intake, "decode_source", broken)
    (tmp_path / "a.py").write_bytes(b"A = 1\n")
    staged = _stage(tmp_path, tmp_path / "a.py")
    assert staged.grader_failed is True and staged.missing is False and staged.file is None
    assert staged.error == ("the grader could not take in this submission (TypeError: bug); "
                            "tell your instructor.")


@pytest.mark.parametrize("error, reason", [
    (ValueError("bad value"), "ValueError: bad value"),
    (UnicodeError("odd"), "UnicodeError: odd"),
    (RecursionError("deep"), "RecursionError: deep"),
    (LookupError("codec"), "LookupError: codec"),
    (MemoryError(), "MemoryError: "),
    (OSError(5, "Input/output error"), "Input/output error"),
    (OSError("no errno"), "OSError"),
])
def test_errors_while_reading_are_the_submissions_with_their_reason(tmp_path, monkeypatch,
                                                                   error, reason):
    def failing(data, label):
        raise error
    monkeypatch.setattr(intake, "decode_source", failing)
    (tmp_path / "a.py").write_bytes(b"A = 1\n")
    staged = _stage(tmp_path, tmp_path / "a.py")
    assert staged.error == f"a.py could not be read ({reason})."
    assert (staged.grader_failed, staged.missing, staged.file) == (False, False, None)


def test_a_reason_is_cut_at_4000_and_a_note_at_2000_characters(tmp_path, monkeypatch):
    def failing(data, label):
        raise ValueError("v" * 5000)
    monkeypatch.setattr(intake, "decode_source", failing)
    (tmp_path / "a.py").write_bytes(b"A = 1\n")
    staged = _stage(tmp_path, tmp_path / "a.py")
    assert staged.error.startswith("a.py could not be read (ValueError: vvv")
    assert len(staged.error) == len("a.py could not be read (ValueError: ).") + 300

    def noisy(data, label):
        return "A = 1\n", ["n" * 3000, "short"]
    monkeypatch.setattr(intake, "decode_source", noisy)
    staged = _stage(tmp_path, tmp_path / "a.py")
    assert [len(note) for note in staged.notes] == [2000, 5]


def test_an_intake_error_text_longer_than_4000_is_cut(tmp_path, monkeypatch):
    from grader.intake import IntakeError

    def failing(data, label):
        raise IntakeError("e" * 5000)
    monkeypatch.setattr(intake, "decode_source", failing)
    (tmp_path / "a.py").write_bytes(b"A = 1\n")
    staged = _stage(tmp_path, tmp_path / "a.py")
    assert len(staged.error) == 4000 and staged.error.startswith("eee")
    assert staged.error.endswith("[... cut by the grader: 1000 more characters]")


def test_the_one_code_file_that_is_not_a_regular_file_is_refused_by_what_it_is(tmp_path):
    root = _folder(tmp_path, {"notes.txt": ""})
    os.mkfifo(root / "mine.py")
    staged = _stage(tmp_path, root)
    assert staged.error == ("mine.py is a named pipe (FIFO), not a file; the grader reads only "
                            "regular files. Upload the file itself.")
    # beside a module, a lone odd notebook is not the work: the module is
    os.remove(root / "mine.py")
    (root / "mine.py").write_text(CODE)
    os.mkfifo(root / "work.ipynb")
    assert _staged_source(_stage(tmp_path, root, "again")) == CODE


def test_the_deadline_passing_while_helpers_are_read_refuses_the_submission(tmp_path,
                                                                            monkeypatch):
    # the work is read, then its conversion outlasts the 2 s given (a real sleep, no clock
    # faked); the helper read next must stop the whole submission, not be skipped quietly
    import time
    real = intake.decode_source

    def slow(data, label):
        if label == "attention.py":
            time.sleep(2.5)
        return real(data, label)
    monkeypatch.setattr(intake, "decode_source", slow)
    root = _folder(tmp_path, {"attention.py": CODE, "util.py": "U = 1\n"})
    staged = stage(str(root), str(tmp_path / "staged"), "student", seconds=2)
    assert staged.file is None and staged.missing is False and staged.grader_failed is False
    assert staged.error == ("hw: reading the submission took longer than 2 s, the limit; upload "
                            "only your code (attention.py and its helper files).")


def test_a_name_that_is_no_file_name_is_still_named():
    assert submission_names(["x/a\x00b.py", "y/attention"]) == ["a\x00b", "attention"]


def test_the_one_regular_module_beside_an_odd_one_is_the_work(tmp_path):
    root = _folder(tmp_path, {"mine.py": "M = 1\n"})
    os.symlink("/etc/hostname", root / "odd.py")
    staged = _stage(tmp_path, root)
    assert _staged_source(staged) == "M = 1\n"
    assert staged.notes == ["hw: skipped 1 entry that is not a regular file (odd.py: a symbolic "
                            "link); the grader reads only regular files, never links, pipes or "
                            "devices."]
