"""Intake: whatever a student uploaded becomes one staged folder with a plain UTF-8
attention.py (plus their helper modules), a reason when it cannot, and notes on what changed.

Every test builds real files (text in odd encodings, nbformat-4 notebooks, zip archives,
folders) and stages them the way `grader grade` does.
"""
import codecs
import importlib.util
import json
import os
import shutil
import socket
import stat
import struct
import sys
import tempfile
import uuid
import zipfile
import zlib

import pytest

from grader.intake import IntakeError, archive, stage, submission_names
import io
import grader.intake as intake

ATTENTION = '''\
import math


def scale(d):
    """1 / sqrt(d), the scaling of dot-product attention."""
    return 1 / math.sqrt(d)


GREETING = "hello"
'''

CHINESE = '''\
# 缩放点积注意力（作业）
import math


def scale(d):
    """缩放因子：1 / sqrt(d)"""
    return 1 / math.sqrt(d)


LABEL = "注意力权重"
'''


# ----------------------------------------------------------------------------- helpers

def _stage(tmp_path, upload):
    return stage(str(upload), str(tmp_path / "staged"), "student")


def _stage_bytes(tmp_path, filename, data):
    folder = tmp_path / "upload"
    folder.mkdir(exist_ok=True)
    path = folder / filename
    path.write_bytes(data)
    return _stage(tmp_path, path)


def _import(path):
    """Import a staged module the way the worker does, with its folder on sys.path."""
    name = f"staged_{uuid.uuid4().hex}"
    folder = os.path.dirname(path)
    loaded = set(sys.modules)
    sys.path.insert(0, folder)
    try:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(folder)
        for helper in set(sys.modules) - loaded:  # the student's helpers, e.g. `helpers`
            if (getattr(sys.modules[helper], "__file__", None) or "").startswith(folder):
                del sys.modules[helper]


def _read_staged(staged):
    assert staged.error is None, staged.error
    assert os.path.basename(staged.file) == "attention.py"
    with open(staged.file, "rb") as handle:
        data = handle.read()
    text = data.decode("utf-8")  # strictly UTF-8, or this raises
    assert not data.startswith(codecs.BOM_UTF8) and "\r" not in text
    compile(text, staged.file, "exec")
    return text


def _notes(staged):
    return "\n".join(staged.notes)


def _notebook(cells, as_lines=True):
    """A real nbformat-4 notebook; `cells` are ("code" | "markdown", source) pairs."""
    out = []
    for i, (kind, source) in enumerate(cells):
        cell = {"cell_type": kind, "id": f"cell-{i}", "metadata": {},
                "source": source.splitlines(keepends=True) if as_lines else source}
        if kind == "code":
            cell.update(execution_count=None, outputs=[])
        out.append(cell)
    notebook = {"cells": out,
                "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python",
                                            "name": "python3"},
                             "language_info": {"name": "python", "version": "3.11.7"}},
                "nbformat": 4, "nbformat_minor": 5}
    return json.dumps(notebook, ensure_ascii=False, indent=1).encode("utf-8")


def _zip(path, entries, **kwargs):
    """entries: name -> bytes, or a ZipInfo -> bytes."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, **kwargs) as zf:
        for name, data in entries.items():
            zf.writestr(name, data)
    return path


def _zip_with_raw_names(path, entries):
    """A zip whose entry names are stored as the given raw bytes, without the UTF-8 flag
    (what Windows zip tools do with GBK names, and macOS Archive Utility with UTF-8).

    zipfile writes a non-ASCII name as UTF-8 and flags it, so each entry is written under an
    ASCII placeholder of the same byte length, then the placeholder is replaced in the local
    header and the central directory (the CRC covers the content, not the name).
    """
    placeholders = {}
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for i, (raw, data) in enumerate(entries.items()):
            stem = f"n{i}_".encode() + b"x" * len(raw)
            placeholder = stem[:len(raw)]
            assert len(placeholder) == len(raw), "name too short for a placeholder"
            placeholders[placeholder] = raw
            zf.writestr(placeholder.decode("ascii"), data)
    blob = path.read_bytes()
    for placeholder, raw in placeholders.items():
        assert blob.count(placeholder) == 2  # local header + central directory
        blob = blob.replace(placeholder, raw)
    path.write_bytes(blob)
    with zipfile.ZipFile(path) as zf:  # really stored without the UTF-8 flag
        assert all(not info.flag_bits & 0x800 for info in zf.infolist())
    return path


# ----------------------------------------------------------------------------- text files

def test_utf8_bom_and_crlf_become_the_plain_original(tmp_path):
    data = codecs.BOM_UTF8 + ATTENTION.replace("\n", "\r\n").encode("utf-8")
    staged = _stage_bytes(tmp_path, "attention.py", data)
    assert _read_staged(staged) == ATTENTION
    notes = _notes(staged)
    assert "byte-order mark" in notes
    assert "CRLF" in notes
    module = _import(staged.file)
    assert module.scale(4) == 0.5 and module.GREETING == "hello"


def test_old_mac_cr_line_endings_become_lf(tmp_path):
    staged = _stage_bytes(tmp_path, "attention.py", ATTENTION.replace("\n", "\r").encode())
    assert _read_staged(staged) == ATTENTION
    assert _import(staged.file).scale(16) == 0.25


def test_plain_utf8_is_staged_unchanged_without_notes(tmp_path):
    staged = _stage_bytes(tmp_path, "attention.py", CHINESE.encode("utf-8"))
    assert _read_staged(staged) == CHINESE
    assert staged.notes == []


def test_gb18030_file_with_chinese_comments_and_strings_is_decoded(tmp_path):
    data = CHINESE.encode("gb18030")
    with pytest.raises(UnicodeDecodeError):
        data.decode("utf-8")
    staged = _stage_bytes(tmp_path, "attention.py", data)
    text = _read_staged(staged)
    assert text == CHINESE
    assert "缩放点积注意力" in text
    assert "GB18030" in _notes(staged)
    module = _import(staged.file)
    assert module.LABEL == "注意力权重"
    assert module.scale.__doc__ == "缩放因子：1 / sqrt(d)"


@pytest.mark.parametrize("coding_line", ["# -*- coding: gbk -*-", "# vim: set fileencoding=gbk :"])
def test_gbk_coding_line_is_neutralised_in_the_utf8_output(tmp_path, coding_line):
    source = "#!/usr/bin/env python\n" + coding_line + "\n" + CHINESE
    staged = _stage_bytes(tmp_path, "attention.py", source.encode("gbk"))
    text = _read_staged(staged)
    first_two = text.split("\n")[:2]
    assert first_two[0] == "#!/usr/bin/env python"
    assert "gbk" not in first_two[1]  # Python would otherwise decode the UTF-8 file as GBK
    assert text.split("\n")[2:] == CHINESE.split("\n")  # line numbers are kept
    module = _import(staged.file)
    assert module.LABEL == "注意力权重"


def test_declared_latin1_is_read_as_python_would(tmp_path):
    source = "# -*- coding: latin-1 -*-\nNAME = 'café'\n"
    staged = _stage_bytes(tmp_path, "attention.py", source.encode("latin-1"))
    _read_staged(staged)
    assert _import(staged.file).NAME == "café"


def test_utf16_from_notepad_is_converted(tmp_path):
    # Windows Notepad's "Unicode" is UTF-16 with a byte-order mark: full of NUL bytes.
    for encoding in ("utf-16-le", "utf-16-be"):
        bom = codecs.BOM_UTF16_LE if encoding.endswith("le") else codecs.BOM_UTF16_BE
        staged = _stage_bytes(tmp_path, "attention.py", bom + CHINESE.encode(encoding))
        assert _read_staged(staged) == CHINESE
        assert "UTF-16" in _notes(staged)


@pytest.mark.parametrize("data", [b"# caf\xe9\nx = 1\n", b"x = 1\n\x80\n", b"NAME = '\xff\xfe'\n"])
def test_undecodable_bytes_are_refused_with_the_fix(tmp_path, data):
    for encoding in ("utf-8", "gb18030"):
        with pytest.raises(UnicodeDecodeError):
            data.decode(encoding)
    staged = _stage_bytes(tmp_path, "attention.py", data)
    assert staged.file is None
    bad = next(i for i in range(len(data)) if data[i] >= 0x80)
    assert f"0x{data[bad]:02x}" in staged.error and f"position {bad}" in staged.error
    assert "not valid UTF-8" in staged.error and "GB18030" in staged.error
    assert "Save it as UTF-8" in staged.error
    assert not (tmp_path / "staged" / "attention.py").exists()


@pytest.mark.parametrize("data", [b"", b"   \n\t\r\n  ", codecs.BOM_UTF8, codecs.BOM_UTF8 + b"\r\n \n"],
                         ids=["empty", "whitespace", "bom-only", "bom-and-blank-lines"])
def test_empty_files_are_refused(tmp_path, data):
    staged = _stage_bytes(tmp_path, "attention.py", data)
    assert staged.file is None
    assert "empty" in staged.error


def test_binary_file_is_not_text(tmp_path):
    pyc = b"\xa7\r\r\n\x00\x00\x00\x00" + bytes(range(256)) * 4
    staged = _stage_bytes(tmp_path, "attention.py", pyc)
    assert "not a text file" in staged.error
    assert "zip" not in staged.error


def test_zip_renamed_to_py_says_zip(tmp_path):
    archive_path = _zip(tmp_path / "real.zip", {"attention.py": ATTENTION})
    staged = _stage_bytes(tmp_path, "attention.py", archive_path.read_bytes())
    assert "not a text file" in staged.error and "zip" in staged.error


def test_oversized_source_is_refused_with_its_size(tmp_path):
    staged = _stage_bytes(tmp_path, "attention.py", b"x = 1\n" * 400_000)
    assert staged.file is None and "KB" in staged.error


def test_missing_path_and_unknown_kind_are_refused(tmp_path):
    missing = stage(str(tmp_path / "nothing.py"), str(tmp_path / "a"), "x")
    assert "does not exist" in missing.error
    text = _stage_bytes(tmp_path, "attention.txt", ATTENTION.encode())
    assert "not a .py file" in text.error


# ----------------------------------------------------------------------------- names

def test_lms_renamed_file_is_staged_as_attention_py(tmp_path):
    staged = _stage_bytes(tmp_path, "attention (1).py", ATTENTION.encode())
    assert _read_staged(staged) == ATTENTION
    assert staged.file == str(tmp_path / "staged" / "attention.py")
    assert submission_names([str(tmp_path / "upload" / "attention (1).py")]) == ["attention (1)"]


def test_submission_names_strip_extensions():
    assert submission_names(["in/alice.py", "in/bob.ipynb", "in/carol.zip", "in/Dave.PY"]) == \
        ["alice", "bob", "carol", "Dave"]


def test_submission_names_deduplicate_same_file_names(tmp_path):
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "attention.py").write_text(ATTENTION)
    names = submission_names([str(tmp_path / "a" / "attention.py"), str(tmp_path / "b" / "attention.py")])
    assert names == ["a-attention", "b-attention"]


def test_submission_names_for_nbgrader_layout_are_the_students(tmp_path):
    paths = []
    for student in ("alice", "bob"):
        folder = tmp_path / "submitted" / student / "attention"
        folder.mkdir(parents=True)
        (folder / "attention.ipynb").write_bytes(_notebook([("code", ATTENTION)]))
        paths.append(str(folder) + os.sep)  # a trailing slash, as a shell glob gives it
    assert submission_names(paths) == ["alice", "bob"]


def test_submission_names_are_always_unique(tmp_path):
    paths = ["d/x.py", "d/x.zip", "e/d-x-2.py", "f/x.ipynb", "f/x.py", "g/attention.py",
             "h/attention.py", "h/attention.zip"]
    names = submission_names([str(tmp_path / p) for p in paths])
    assert len(set(names)) == len(names), names


# ----------------------------------------------------------------------------- notebooks

MIXED_CELLS = [
    ("markdown", "# 注意力机制\n\n本节实现**缩放点积注意力**。"),
    ("code", "%matplotlib inline\n!pip install d2l\nimport math"),
    ("code", "def scale(d):\n    return 1 / math.sqrt(d)\n"),
    ("code", "%%time\nTOTAL = sum(range(10))\n"),
    ("code", "%%bash\necho this is not python\nexit 1\n"),
    ("markdown", "## 演示\n下面的单元格画热力图。"),
    ("code", "show_heatmaps(scale(4))  # a d2l helper the grader lacks\n"),
    ("code", "def double(x):\n    return 2 * x\n"),
]


def test_notebook_with_magics_and_a_failing_demo_defines_everything(tmp_path):
    staged = _stage_bytes(tmp_path, "attention.ipynb", _notebook(MIXED_CELLS))
    _read_staged(staged)
    module = _import(staged.file)
    assert module.scale(4) == 0.5
    assert module.TOTAL == 45
    assert module.double(21) == 42  # the cell after the failing demo still ran
    errors = module.__attnkit_cell_errors__
    assert [(n, kind) for n, kind, _ in errors] == [(7, "NameError")]
    assert "show_heatmaps" in errors[0][2]
    notes = _notes(staged)
    assert "%matplotlib inline" in notes
    assert "!pip install d2l" in notes
    assert "%%bash" in notes and "skipped" in notes
    assert "%%time" in notes
    assert "5 code cells" in notes


def test_notebook_source_as_list_or_string_gives_the_same_module(tmp_path):
    texts = []
    for as_lines in (True, False):
        data = _notebook(MIXED_CELLS, as_lines=as_lines)
        cells = json.loads(data)["cells"]
        assert isinstance(cells[2]["source"], list if as_lines else str)
        out = tmp_path / ("lines" if as_lines else "string")
        out.mkdir()
        staged = _stage_bytes(out, "attention.ipynb", data)
        texts.append(_read_staged(staged))
        assert _import(staged.file).scale(16) == 0.25
    assert texts[0] == texts[1]


def test_notebook_with_crlf_and_bom_is_read(tmp_path):
    data = codecs.BOM_UTF8 + _notebook([("code", "def scale(d):\r\n    return d\r\n")])
    staged = _stage_bytes(tmp_path, "attention.ipynb", data)
    _read_staged(staged)
    assert _import(staged.file).scale(3) == 3


@pytest.mark.parametrize("filename", ['my "final" attention.ipynb', "attention\\N.ipynb",
                                      "注意力 作业.ipynb"])
def test_notebook_with_an_odd_file_name_still_imports(tmp_path, filename):
    staged = _stage_bytes(tmp_path, filename, _notebook([("code", "VALUE = 1\n"), ("code", "1/0\n")]))
    _read_staged(staged)
    module = _import(staged.file)
    assert module.VALUE == 1
    assert [(n, kind) for n, kind, _ in module.__attnkit_cell_errors__] == [(2, "ZeroDivisionError")]


def test_notebook_cell_with_a_syntax_error_is_recorded_not_fatal(tmp_path):
    cells = [("code", "files = !ls\n"), ("code", "def ok():\n    return 1\n")]
    staged = _stage_bytes(tmp_path, "attention.ipynb", _notebook(cells))
    module = _import(staged.file)
    assert module.ok() == 1
    assert [n for n, _, _ in module.__attnkit_cell_errors__] == [1]


def test_invalid_notebook_json_names_line_and_column(tmp_path):
    data = b'{"cells": [\n  {"cell_type": "code",,}\n]}'
    staged = _stage_bytes(tmp_path, "attention.ipynb", data)
    assert staged.file is None
    assert "line 2, column 24" in staged.error
    assert "Jupyter" in staged.error


@pytest.mark.parametrize("data", [b'{"hello": 1}', b"[1, 2, 3]", b'"cells"'])
def test_json_that_is_not_a_notebook_is_refused(tmp_path, data):
    staged = _stage_bytes(tmp_path, "attention.ipynb", data)
    assert "not a Jupyter notebook" in staged.error


def test_notebook_without_code_is_refused(tmp_path):
    data = _notebook([("markdown", "# 只有说明"), ("code", "   \n")])
    staged = _stage_bytes(tmp_path, "attention.ipynb", data)
    assert "no code cells" in staged.error


def test_nbformat3_notebook_is_read(tmp_path):
    notebook = {"nbformat": 3, "nbformat_minor": 0, "metadata": {},
                "worksheets": [{"cells": [{"cell_type": "code", "language": "python",
                                           "input": ["def scale(d):\n", "    return d\n"],
                                           "outputs": []}]}]}
    staged = _stage_bytes(tmp_path, "attention.ipynb", json.dumps(notebook).encode())
    assert _import(staged.file).scale(2) == 2


# ----------------------------------------------------------------------------- zips

def test_zip_with_nested_folder_and_mac_junk_stages_the_right_file(tmp_path):
    upload = _zip(tmp_path / "alice.zip", {
        "__MACOSX/sub/dir/._attention.py": b"\x00\x05\x16\x07\x00\x02\x00\x00Mac OS X",
        "__MACOSX/._sub": b"\x00\x05\x16\x07",
        "sub/.DS_Store": b"\x00\x00\x00\x01Bud1" + b"\x00" * 64,
        "sub/dir/__pycache__/attention.cpython-311.pyc": b"\xa7\r\r\n\x00\x00",
        "sub/dir/attention.py": ATTENTION.replace("import math", "import math\nfrom helpers import twice"),
        "sub/dir/helpers.py": "def twice(x):\n    return 2 * x\n",
        "sub/readme.txt": "notes",
    })
    staged = _stage(tmp_path, upload)
    assert "from helpers import twice" in _read_staged(staged)
    assert sorted(os.listdir(tmp_path / "staged")) == ["attention.py", "helpers.py"]
    assert _import(staged.file).twice(3) == 6
    assert "junk" in _notes(staged)


def test_zip_holding_a_notebook_is_converted(tmp_path):
    upload = _zip(tmp_path / "bob.zip", {"hw/attention.ipynb": _notebook(MIXED_CELLS)})
    staged = _stage(tmp_path, upload)
    assert _import(staged.file).double(2) == 4


def test_zip_entries_pointing_outside_are_refused(tmp_path):
    evil = f"evil_{uuid.uuid4().hex}.py"
    bad_names = {f"../{evil}", f"../../{evil}", f"../../../{evil}", f"sub/../../{evil}",
                 f"..\\..\\{evil}", f"{tempfile.gettempdir()}/{evil}", f"/tmp/{evil}", f"C:/{evil}"}
    entries = {"attention.py": ATTENTION}
    entries.update((name, "raise SystemExit('escaped')\n") for name in sorted(bad_names))
    upload = _zip(tmp_path / "evil.zip", entries)
    with zipfile.ZipFile(upload) as zf:  # the names really are stored as written
        assert f"/tmp/{evil}" in zf.namelist() and f"../../{evil}" in zf.namelist()

    def escaped():
        places = [tmp_path, tmp_path.parent, tmp_path.parent.parent, "/tmp", tempfile.gettempdir(),
                  os.path.dirname(tempfile.gettempdir()), "/", os.getcwd()]
        return [p for p in places if os.path.exists(os.path.join(p, evil))]

    # straight into a folder deep in tmp_path, so every `..` would land somewhere checkable
    dest = tmp_path / "x" / "y" / "z"
    dest.mkdir(parents=True)
    notes = archive.extract(str(upload), str(dest), "evil.zip")
    assert escaped() == []
    written = [os.path.relpath(os.path.join(d, f), dest) for d, _, files in os.walk(dest) for f in files]
    assert written == ["attention.py"]
    assert f"refused {len(bad_names)} entries" in "\n".join(notes)

    staged = _stage(tmp_path, upload)
    assert _read_staged(staged) == ATTENTION
    assert escaped() == []
    assert os.listdir(tmp_path / "staged") == ["attention.py"]
    assert "refused" in _notes(staged) and "outside" in _notes(staged)


def test_zip_symlink_entry_is_skipped(tmp_path):
    upload = tmp_path / "links.zip"
    with zipfile.ZipFile(upload, "w") as zf:
        zf.writestr("attention.py", ATTENTION)
        for name in ("helpers.py", "secrets"):
            link = zipfile.ZipInfo(name)
            link.create_system = 3
            link.external_attr = (stat.S_IFLNK | 0o777) << 16
            zf.writestr(link, "/etc/passwd")
    dest = tmp_path / "out"
    dest.mkdir()
    notes = archive.extract(str(upload), str(dest), "links.zip")
    assert sorted(os.listdir(dest)) == ["attention.py"]
    assert "links" in "\n".join(notes) and "refused 2" in "\n".join(notes)

    staged = _stage(tmp_path, upload)
    assert _read_staged(staged) == ATTENTION
    assert os.listdir(tmp_path / "staged") == ["attention.py"]


def test_zip_bomb_is_refused_by_size(tmp_path):
    upload = tmp_path / "bomb.zip"
    with zipfile.ZipFile(upload, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("attention.py", ATTENTION)
        with zf.open("data/zeros.bin", "w") as out:
            chunk = bytes(1 << 20)
            for _ in range(100):  # 100 MB of zeros: about 100 KB compressed
                out.write(chunk)
    assert upload.stat().st_size < 1 << 20
    staged = _stage(tmp_path, upload)
    assert staged.file is None
    assert "MB" in staged.error and "100 MB" in staged.error


def _patch_declared_size(path, size, crc=None):
    """Rewrite the (only) entry's declared uncompressed size (and CRC) in both headers."""
    blob = bytearray(path.read_bytes())
    local = blob.index(b"PK\x03\x04")
    central = blob.index(b"PK\x01\x02")
    struct.pack_into("<I", blob, local + 22, size)
    struct.pack_into("<I", blob, central + 24, size)
    if crc is not None:
        struct.pack_into("<I", blob, local + 14, crc)
        struct.pack_into("<I", blob, central + 16, crc)
    path.write_bytes(bytes(blob))


def test_entry_that_inflates_beyond_its_declared_size_is_not_unpacked(tmp_path):
    upload = _zip(tmp_path / "liar.zip", {"attention.py": bytes(20 * 2**20)})  # 20 MB of zeros
    _patch_declared_size(upload, 1000)
    with zipfile.ZipFile(upload) as zf:
        assert zf.getinfo("attention.py").file_size == 1000
    staged = _stage(tmp_path, upload)
    assert staged.file is None
    assert "could not be read" in staged.error or "zip bomb" in staged.error

    # Even with a CRC that matches its first 1000 bytes, no more than declared is written.
    _patch_declared_size(upload, 1000, crc=zlib.crc32(bytes(1000)))
    dest = tmp_path / "out"
    dest.mkdir()
    archive.extract(str(upload), str(dest), "liar.zip")
    assert (dest / "attention.py").stat().st_size == 1000


def test_large_data_file_beside_the_code_does_not_sink_the_submission(tmp_path):
    # a student zips their whole folder, with a 20 MB dataset next to attention.py
    upload = _zip(tmp_path / "carol.zip", {"attention.py": ATTENTION, "data/big.npy": bytes(20 * 2**20)})
    staged = _stage(tmp_path, upload)
    assert _read_staged(staged) == ATTENTION
    assert "big.npy" in _notes(staged)


@pytest.mark.parametrize("kind", ["garbage", "truncated", "empty"])
def test_corrupt_zip_is_refused(tmp_path, kind):
    good = _zip(tmp_path / "good.zip", {"attention.py": ATTENTION * 50}).read_bytes()
    data = {"garbage": b"this is not a zip at all" * 10, "truncated": good[: len(good) // 2],
            "empty": b""}[kind]
    upload = tmp_path / "broken.zip"
    upload.write_bytes(data)
    staged = _stage(tmp_path, upload)
    assert staged.file is None
    assert "zip" in staged.error


@pytest.mark.parametrize("method", [zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA],
                         ids=["deflate", "bzip2", "lzma"])
def test_zip_entry_with_corrupt_data_is_refused(tmp_path, method):
    upload = tmp_path / "bad.zip"
    with zipfile.ZipFile(upload, "w", method) as zf:
        zf.writestr("attention.py", ATTENTION * 50)
    blob = bytearray(upload.read_bytes())
    start = 30 + len("attention.py")
    blob[start + 10: start + 40] = b"\xff" * 30  # inside the compressed data
    upload.write_bytes(bytes(blob))
    staged = _stage(tmp_path, upload)
    assert staged.file is None
    assert "attention.py" in staged.error and "could not be read" in staged.error


def test_zip_names_stored_in_gbk_are_decoded(tmp_path):
    upload = _zip_with_raw_names(tmp_path / "gbk.zip", {
        "作业/attention.py".encode("gbk"): "import 工具\nVALUE = 工具.LABEL\n",
        "作业/工具.py".encode("gbk"): "LABEL = '注意力'\n",
    })
    dest = tmp_path / "out"
    dest.mkdir()
    archive.extract(str(upload), str(dest), "gbk.zip")
    assert sorted(os.listdir(dest / "作业")) == ["attention.py", "工具.py"]

    staged = _stage(tmp_path, upload)
    assert sorted(os.listdir(tmp_path / "staged")) == ["attention.py", "工具.py"]
    assert _import(staged.file).VALUE == "注意力"


def test_zip_names_stored_in_utf8_without_the_flag_are_decoded(tmp_path):
    # macOS Archive Utility stores UTF-8 names without setting the UTF-8 flag
    upload = _zip_with_raw_names(tmp_path / "mac.zip", {
        "作业/attention.py".encode("utf-8"): "import 辅助函数\nVALUE = 辅助函数.LABEL\n",
        "作业/辅助函数.py".encode("utf-8"): "LABEL = '注意力'\n",
    })
    dest = tmp_path / "out"
    dest.mkdir()
    archive.extract(str(upload), str(dest), "mac.zip")
    assert sorted(os.listdir(dest)) == ["作业"]
    assert sorted(os.listdir(dest / "作业")) == ["attention.py", "辅助函数.py"]

    staged = _stage(tmp_path, upload)
    assert _import(staged.file).VALUE == "注意力"


def test_zip_names_flagged_utf8_are_kept(tmp_path):
    upload = _zip(tmp_path / "utf8.zip", {"attention.py": "from 工具 import LABEL\n",
                                          "工具.py": "LABEL = 'ok'\n"})
    staged = _stage(tmp_path, upload)
    assert sorted(os.listdir(tmp_path / "staged")) == ["attention.py", "工具.py"]
    assert _import(staged.file).LABEL == "ok"


def test_zip_extraction_folder_is_removed(tmp_path, monkeypatch):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))  # where stage() unpacks
    good = _zip(tmp_path / "a.zip", {"attention.py": ATTENTION})
    assert _stage(tmp_path, good).error is None
    bad = _zip(tmp_path / "b.zip", {"attention.py": "x = 1\n" * 10, "c.bin": bytes(100 * 2**20)})
    assert _stage(tmp_path, bad).error
    assert os.listdir(scratch) == []


# ----------------------------------------------------------------------------- folders

def test_folder_helpers_are_staged_beside_attention(tmp_path):
    folder = tmp_path / "alice"
    folder.mkdir()
    (folder / "attention.py").write_text("from helpers import twice\nfrom masks import MASK\n",
                                         encoding="utf-8")
    (folder / "helpers.py").write_bytes("# 辅助函数\ndef twice(x):\r\n    return 2 * x\r\n".encode("gbk"))
    (folder / "masks.py").write_text("MASK = -1e9\n")
    (folder / "notes.txt").write_text("not code")
    staged = _stage(tmp_path, folder)
    _read_staged(staged)
    assert sorted(os.listdir(tmp_path / "staged")) == ["attention.py", "helpers.py", "masks.py"]
    helper = (tmp_path / "staged" / "helpers.py").read_bytes().decode("utf-8")
    assert helper.startswith("# 辅助函数\n") and "\r" not in helper
    module = _import(staged.file)
    assert module.twice(4) == 8 and module.MASK == -1e9


def test_folder_tests_and_conftest_are_not_the_submission(tmp_path):
    folder = tmp_path / "bob"
    folder.mkdir()
    (folder / "conftest.py").write_text("import pytest\n")
    (folder / "test_my_attention.py").write_text("def test_x():\n    assert True\n")
    (folder / "my_attention_test.py").write_text("def test_y():\n    assert True\n")
    (folder / "setup.py").write_text("from setuptools import setup\n")
    (folder / "my_attention.py").write_text(ATTENTION)
    staged = _stage(tmp_path, folder)
    assert _read_staged(staged) == ATTENTION


def test_folder_prefers_attention_py_and_the_shallowest_copy(tmp_path):
    folder = tmp_path / "carol"
    (folder / "old").mkdir(parents=True)
    (folder / "old" / "attention.py").write_text("OLD = True\n")
    (folder / "attention.py").write_text(ATTENTION)
    (folder / "attention.ipynb").write_bytes(_notebook([("code", "NOTEBOOK = True\n")]))
    (folder / "scratch.py").write_text("x = 1\n")
    assert _read_staged(_stage(tmp_path, folder)) == ATTENTION


def test_folder_skips_checkpoints_and_hidden_folders(tmp_path):
    folder = tmp_path / "dave"
    (folder / ".ipynb_checkpoints").mkdir(parents=True)
    (folder / ".ipynb_checkpoints" / "attention-checkpoint.ipynb").write_bytes(_notebook([("code", "A = 0\n")]))
    (folder / ".venv" / "lib").mkdir(parents=True)
    (folder / ".venv" / "lib" / "attention.py").write_text("A = 1\n")
    (folder / "attention.ipynb").write_bytes(_notebook([("code", "A = 2\n")]))
    staged = _stage(tmp_path, folder)
    assert _import(staged.file).A == 2


@pytest.mark.parametrize("layout", [("a/attention.py", "b/attention.py"),
                                    ("attention (1).py", "attention (2).py")])
def test_folder_with_two_candidates_at_the_same_depth_is_an_error(tmp_path, layout):
    folder = tmp_path / "eve"
    for relative in layout:
        (folder / relative).parent.mkdir(parents=True, exist_ok=True)
        (folder / relative).write_text(ATTENTION)
    staged = _stage(tmp_path, folder)
    assert staged.file is None
    assert "several candidate files" in staged.error and "keep only one" in staged.error
    for relative in layout:
        assert os.path.normpath(relative) in staged.error


def test_folder_with_two_unrelated_modules_asks_for_attention_py(tmp_path):
    folder = tmp_path / "frank"
    folder.mkdir()
    (folder / "one.py").write_text("x = 1\n")
    (folder / "two.py").write_text("y = 2\n")
    staged = _stage(tmp_path, folder)
    assert "one.py" in staged.error and "two.py" in staged.error
    assert "Name your file attention.py" in staged.error


def test_folder_without_python_lists_its_contents(tmp_path):
    folder = tmp_path / "grace"
    (folder / "docs").mkdir(parents=True)
    (folder / "report.pdf").write_bytes(b"%PDF-1.4")
    (folder / "docs" / "readme.txt").write_text("hi")
    staged = _stage(tmp_path, folder)
    assert staged.file is None
    assert "no attention.py" in staged.error
    assert "report.pdf" in staged.error and os.path.join("docs", "readme.txt") in staged.error
    # nothing gradable was found: "missing work", never an earned zero
    assert staged.missing is True
    assert "looked for attention.py or attention.ipynb" in staged.error


def test_empty_folder_says_so(tmp_path):
    folder = tmp_path / "heidi"
    folder.mkdir()
    staged = _stage(tmp_path, folder)
    assert "contains: nothing" in staged.error and staged.missing is True


# ----------------------------------------------------------------------------- trust boundary
# Links, named pipes, sockets and devices (issue "trust boundary", classes 2 and 3): intake
# reads regular files only and never follows a link. Every link here points at something
# holding SECRET; none of it may reach the staged folder, the reason or the notes.

SECRET = "attnkit-link-target-5e3c"
SECRET_SOURCE = f"LEAK = '{SECRET}'\n\n\ndef scale(d):\n    return 100\n"


@pytest.fixture
def outside(tmp_path):
    """A folder outside every submission: a source file, a notebook and a folder holding
    attention.py, all carrying SECRET (and SECRET in the folder's own name)."""
    root = tmp_path / f"outside-{SECRET}"
    (root / "folder").mkdir(parents=True)
    (root / "secret.py").write_text(SECRET_SOURCE)
    (root / "secret.ipynb").write_bytes(_notebook([("code", SECRET_SOURCE)]))
    (root / "folder" / "attention.py").write_text(SECRET_SOURCE)
    return root


def _no_leak(tmp_path, staged):
    assert SECRET not in (staged.error or "") and SECRET not in _notes(staged)
    staged_dir = tmp_path / "staged"
    for folder, dirs, names in os.walk(staged_dir):
        for name in dirs + names:
            path = os.path.join(folder, name)
            assert stat.S_ISREG(os.lstat(path).st_mode) or stat.S_ISDIR(os.lstat(path).st_mode), path
            if os.path.isfile(path):
                with open(path, "rb") as handle:
                    assert SECRET.encode() not in handle.read(), path
    for text in [staged.error or ""] + staged.notes:
        text.encode("utf-8")  # writable as is


def _stage_within(tmp_path, upload, wait=10, **kwargs):
    """stage() in a thread: a blocking open or an endless read fails the test, never hangs it."""
    import threading
    box = {}

    def run():
        box["staged"] = stage(str(upload), str(tmp_path / "staged"), "student", **kwargs)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(wait)
    assert not worker.is_alive(), f"stage() did not return within {wait} s"
    return box["staged"]


def _refused(tmp_path, upload, reason):
    staged = _stage_within(tmp_path, upload)
    assert staged.file is None and staged.error, staged
    assert reason in staged.error, staged.error
    assert not (tmp_path / "staged" / "attention.py").exists()
    _no_leak(tmp_path, staged)
    return staged


def _folder(tmp_path, files=None):
    folder = tmp_path / "student"
    folder.mkdir()
    for name, text in (files or {}).items():
        (folder / name).write_text(text)
    return folder


@pytest.mark.parametrize("target", ["secret.py", "solution", "/etc/passwd", "/dev/zero", "/dev/urandom",
                                    "dangling", "self"])
def test_folder_whose_attention_py_is_a_link_is_refused(tmp_path, outside, target):
    from conftest import SOLUTION
    folder = _folder(tmp_path)
    real = {"secret.py": str(outside / "secret.py"), "solution": SOLUTION,
            "dangling": str(tmp_path / "no-such-file"), "self": "attention.py"}.get(target, target)
    os.symlink(real, folder / "attention.py")
    staged = _refused(tmp_path, folder, "attention.py is a symbolic link; upload the file itself")
    if target == "solution":  # the kit's own solution would have scored 100
        with open(SOLUTION, encoding="utf-8") as handle:
            assert "class MultiHeadAttention" in handle.read()
        assert "MultiHeadAttention" not in staged.error + _notes(staged)


def test_notebook_that_is_a_link_is_refused(tmp_path, outside):
    folder = _folder(tmp_path)
    os.symlink(outside / "secret.ipynb", folder / "attention.ipynb")
    _refused(tmp_path, folder, "attention.ipynb is a symbolic link")


@pytest.mark.parametrize("name", ["attention.py", "alice.py", "alice.ipynb", "alice.zip", "alice"])
def test_command_line_path_that_is_a_link_is_refused(tmp_path, outside, name):
    target = {"attention.py": outside / "secret.py", "alice.py": outside / "secret.py",
              "alice.ipynb": outside / "secret.ipynb", "alice.zip": _zip(
                  tmp_path / "real.zip", {"attention.py": SECRET_SOURCE}),
              "alice": outside / "folder"}[name]
    link = tmp_path / "uploads" / name
    link.parent.mkdir()
    os.symlink(target, link)
    _refused(tmp_path, link, f"{name} is a symbolic link")
    if name == "alice":  # a trailing slash, as a shell glob gives it, must not follow the link
        shutil.rmtree(tmp_path / "staged")
        _refused(tmp_path, str(link) + os.sep, "alice is a symbolic link")


def test_folder_on_the_way_that_is_a_link_is_not_entered(tmp_path, outside):
    folder = _folder(tmp_path)
    os.symlink(outside / "folder", folder / "hw")  # the only attention.py is behind the link
    staged = _refused(tmp_path, folder, "no attention.py")
    assert "hw (a symbolic link)" in staged.error


def test_linked_folder_beside_the_real_one_is_skipped_with_a_note(tmp_path, outside):
    folder = _folder(tmp_path)
    (folder / "hw").mkdir()
    (folder / "hw" / "attention.py").write_text(ATTENTION)
    os.symlink(outside / "folder", folder / "also")   # same depth: would be a second candidate
    os.symlink(folder / "hw", folder / "loop")        # a link back into the submission
    staged = _stage_within(tmp_path, folder)
    assert _read_staged(staged) == ATTENTION
    assert "also: a symbolic link" in _notes(staged) and "loop: a symbolic link" in _notes(staged)
    _no_leak(tmp_path, staged)


@pytest.mark.parametrize("kind", ["link-outside", "link-zero", "fifo", "socket", "device"])
def test_odd_helper_beside_attention_is_skipped_with_a_note(tmp_path, outside, monkeypatch, kind):
    folder = _folder(tmp_path, {"attention.py": ATTENTION, "masks.py": "MASK = -1e6\n"})
    helper = folder / "helpers.py"
    if kind == "link-outside":
        os.symlink(outside / "secret.py", helper)
    elif kind == "link-zero":
        os.symlink("/dev/zero", helper)
    elif kind == "fifo":
        os.mkfifo(helper)
    elif kind == "socket":
        monkeypatch.chdir(folder)  # AF_UNIX paths are short: bind by a relative name
        server = socket.socket(socket.AF_UNIX)
        server.bind("helpers.py")
        server.listen(1)
    else:
        _mknod_zero(helper)
    staged = _stage_within(tmp_path, folder)
    assert _read_staged(staged) == ATTENTION
    assert sorted(os.listdir(tmp_path / "staged")) == ["attention.py", "masks.py"]
    said = {"link-outside": "symbolic link", "link-zero": "symbolic link", "fifo": "named pipe",
            "socket": "socket", "device": "a device"}[kind]
    assert f"helpers.py: {said}" in _notes(staged) or f"helpers.py: a {said}" in _notes(staged)
    _no_leak(tmp_path, staged)


def _mknod_zero(path):
    """A real character device node, the same device as /dev/zero (root only)."""
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 5))
    except (PermissionError, AttributeError):
        pytest.skip("making a device node needs root")


def test_fifo_named_attention_py_is_refused_without_blocking(tmp_path):
    folder = _folder(tmp_path)
    os.mkfifo(folder / "attention.py")
    _refused(tmp_path, folder, "attention.py is a named pipe (FIFO)")


@pytest.mark.parametrize("name", ["alice.py", "alice.ipynb", "alice.zip"])
def test_fifo_as_the_command_line_path_is_refused(tmp_path, name):
    (tmp_path / "uploads").mkdir()
    os.mkfifo(tmp_path / "uploads" / name)
    _refused(tmp_path, tmp_path / "uploads" / name, f"{name} is a named pipe")


def test_socket_named_attention_py_is_refused(tmp_path, monkeypatch):
    folder = _folder(tmp_path)
    monkeypatch.chdir(folder)
    server = socket.socket(socket.AF_UNIX)
    server.bind("attention.py")
    try:
        _refused(tmp_path, folder, "attention.py is a socket")
    finally:
        server.close()


def test_device_named_attention_py_is_refused(tmp_path):
    folder = _folder(tmp_path)
    _mknod_zero(folder / "attention.py")
    _refused(tmp_path, folder, "attention.py is a device (like /dev/zero)")


def test_device_as_the_command_line_path_is_refused(tmp_path):
    _refused(tmp_path, "/dev/zero", "zero is a device")


def test_huge_sparse_file_is_refused_by_its_size_without_reading_it(tmp_path):
    import time
    folder = _folder(tmp_path)
    for name in ("attention.py", "attention.ipynb"):
        with open(folder / name, "wb") as handle:
            handle.truncate(8 * 2**30)  # 8 GB of holes: reading it would take a while
    start = time.monotonic()
    _refused(tmp_path, folder, "attention.py is 8192 MB; a source file over 2048 KB is not accepted")
    os.remove(folder / "attention.py")
    shutil.rmtree(tmp_path / "staged")
    _refused(tmp_path, folder, "attention.ipynb is 8192 MB; a notebook over 20 MB is not accepted")
    assert time.monotonic() - start < 5


def test_huge_helper_is_skipped_unread(tmp_path):
    folder = _folder(tmp_path, {"attention.py": ATTENTION})
    with open(folder / "helpers.py", "wb") as handle:
        handle.truncate(8 * 2**30)
    staged = _stage_within(tmp_path, folder)
    assert _read_staged(staged) == ATTENTION
    assert os.listdir(tmp_path / "staged") == ["attention.py"]


def test_zip_that_is_too_large_is_refused_before_it_is_opened(tmp_path):
    upload = tmp_path / "alice.zip"
    with open(upload, "wb") as handle:
        handle.truncate(archive.MAX_ZIP_BYTES + 1)
    _refused(tmp_path, upload, "a zip archive over 64 MB is not accepted")


def test_the_deadline_refuses_the_submission(tmp_path):
    folder = _folder(tmp_path, {"attention.py": ATTENTION})
    staged = _stage_within(tmp_path, folder, seconds=-1)
    assert staged.file is None and "took longer than" in staged.error
    upload = _zip(tmp_path / "a.zip", {"attention.py": ATTENTION})
    shutil.rmtree(tmp_path / "staged")
    staged = _stage_within(tmp_path, upload, seconds=-1)
    assert staged.file is None and "took longer than" in staged.error


def test_the_walk_is_bounded_in_entries_and_depth(tmp_path, monkeypatch):
    from grader.intake import safeio
    monkeypatch.setattr(safeio, "MAX_WALK_ENTRIES", 50)
    monkeypatch.setattr(safeio, "MAX_DEPTH", 4)
    folder = _folder(tmp_path, {"attention.py": ATTENTION})
    deep = folder.joinpath(*["d"] * 8)
    deep.mkdir(parents=True)
    (deep / "attention.py").write_text(SECRET_SOURCE)
    staged = _stage_within(tmp_path, folder)
    assert _read_staged(staged) == ATTENTION
    assert "deeper than 4 levels" in _notes(staged)
    for i in range(60):
        (folder / f"data{i}.txt").write_text("x")
    shutil.rmtree(tmp_path / "staged")
    _refused(tmp_path, folder, "more than 50 files and folders")


def test_a_file_swapped_for_a_link_after_the_walk_is_refused(tmp_path, outside):
    from grader.intake import safeio
    folder = _folder(tmp_path)
    (folder / "hw").mkdir()
    (folder / "hw" / "attention.py").write_text(ATTENTION)
    root = os.open(folder, safeio.DIR_FLAGS)
    try:
        deadline = safeio.Deadline(30, "student")
        entries, _ = safeio.walk(root, "student", deadline, lambda name: False)
        [entry] = entries
        assert safeio.read_entry(root, entry, 10_000, "x", deadline) == ATTENTION.encode()
        # the file becomes a link to the secret
        os.remove(folder / "hw" / "attention.py")
        os.symlink(outside / "secret.py", folder / "hw" / "attention.py")
        with pytest.raises(IntakeError, match="symbolic link"):
            safeio.read_entry(root, entry, 10_000, "hw/attention.py", deadline)
        # the folder on the way becomes a link to a folder holding the secret
        os.rename(folder / "hw", tmp_path / "old-hw")
        os.symlink(outside / "folder", folder / "hw")
        with pytest.raises(IntakeError, match="symbolic link"):
            safeio.read_entry(root, entry, 10_000, "hw/attention.py", deadline)
    finally:
        os.close(root)


def test_odd_names_in_reasons_are_made_safe(tmp_path):
    folder = _folder(tmp_path)
    for sub in ("a\x1b[2J", os.fsdecode(b"b\xff\xfe")):
        (folder / sub).mkdir()
        (folder / sub / "attention.py").write_text(ATTENTION)
    staged = _stage_within(tmp_path, folder)
    assert "several candidate files" in staged.error
    assert "\x1b" not in staged.error and "\ufffd" in staged.error
    staged.error.encode("utf-8")


def test_helper_with_an_unusable_name_is_not_copied(tmp_path):
    folder = _folder(tmp_path, {"attention.py": ATTENTION})
    (folder / os.fsdecode(b"h\xffelp.py")).write_text("X = 1\n")
    staged = _stage_within(tmp_path, folder)
    assert _read_staged(staged) == ATTENTION
    assert os.listdir(tmp_path / "staged") == ["attention.py"]
    assert "cannot use" in _notes(staged)


def test_zip_entries_that_cannot_be_written_are_skipped(tmp_path):
    upload = _zip(tmp_path / "odd.zip", {"attention.py": ATTENTION, "x": "a file", "x/y.py": "Y = 1\n",
                                         "n" * 300 + ".py": "Z = 1\n"})
    staged = _stage_within(tmp_path, upload)
    assert _read_staged(staged) == ATTENTION
    assert "2 entries could not be unpacked" in _notes(staged)


def test_stage_never_raises_on_odd_arguments(tmp_path):
    for path in ["", "\x00bad", str(tmp_path / ("n" * 5000)), os.fsdecode(b"\xff.py")]:
        staged = stage(path, str(tmp_path / "staged"), "student")
        assert staged.file is None and staged.error
        staged.error.encode("utf-8")


# ----------------------------------------------------------------------------- found, not guessed

def _zip_bytes(entries):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive_file:
        for name, data in entries:
            archive_file.writestr(name, data)
    return buffer.getvalue()


def test_a_folder_whose_work_is_a_zip_is_opened(tmp_path):
    # a Moodle student folder holding 作业.zip (with a helper): graded, not "not gradable"
    folder = tmp_path / "Fang Wu_10006_assignsubmission_file_"
    folder.mkdir()
    (folder / "作业.zip").write_bytes(_zip_bytes([
        ("作业/attention.py", "from helpers import X\n" + ATTENTION),
        ("作业/helpers.py", "X = 1\n"), ("__MACOSX/._attention.py", "junk")]))
    staged = _stage(tmp_path, folder)
    assert staged.error is None and staged.missing is False
    assert open(staged.file, encoding="utf-8").read() == "from helpers import X\n" + ATTENTION
    assert open(os.path.join(os.path.dirname(staged.file), "helpers.py")).read() == "X = 1\n"
    assert any("the work was in 作业.zip, which was opened" in n for n in staged.notes)


def test_a_zip_inside_a_folder_is_opened_one_level_only(tmp_path):
    inner = _zip_bytes([("attention.py", ATTENTION)])
    folder = tmp_path / "nested"
    folder.mkdir()
    (folder / "outer.zip").write_bytes(_zip_bytes([("inner.zip", inner)]))
    staged = _stage(tmp_path, folder)
    assert staged.file is None and staged.missing is True
    assert "outer.zip has no attention.py" in staged.error and "inner.zip" in staged.error
    # two zips: which is the work is not guessed
    two = tmp_path / "two"
    two.mkdir()
    for name in ("a.zip", "b.zip"):
        (two / name).write_bytes(_zip_bytes([("attention.py", ATTENTION)]))
    staged = _stage(tmp_path, two)
    assert staged.file is None and "a.zip" in staged.error and "b.zip" in staged.error


def test_a_zip_inside_a_folder_gets_the_archive_checks(tmp_path):
    folder = tmp_path / "evil"
    folder.mkdir()
    (folder / "work.zip").write_bytes(_zip_bytes([("../../escape.py", "X = 1\n"),
                                                  ("attention.py", ATTENTION)]))
    staged = _stage(tmp_path, folder)
    assert staged.error is None
    assert not (tmp_path / "escape.py").exists()
    assert any("refused 1 entries" in n for n in staged.notes)
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "work.zip").write_bytes(b"PK\x03\x04 not really a zip")
    staged = _stage(tmp_path, broken)
    # found but broken: "not gradable" (its earned 0), not missing work
    assert staged.file is None and staged.missing is False
    assert "not a readable zip archive" in staged.error


def test_missing_work_is_told_from_broken_work(tmp_path):
    pdf = _stage_bytes(tmp_path, "report.pdf", b"%PDF-1.4")
    assert pdf.missing is True and "not a .py file" in pdf.error
    syntax = _stage_bytes(tmp_path, "attention.py", b"def f(:\n")
    assert syntax.error is None and syntax.missing is False   # found: the grader runs it
    binary = _stage_bytes(tmp_path, "attention.ipynb", b"\x00\x01 not json")
    assert binary.file is None and binary.missing is False
    several = tmp_path / "several"
    several.mkdir()
    (several / "one.py").write_text(ATTENTION)
    (several / "two.py").write_text(ATTENTION)
    staged = _stage(tmp_path, several)
    assert staged.file is None and staged.missing is False   # code found, but which is it?
    linked = tmp_path / "linked"
    linked.mkdir()
    os.symlink(tmp_path, linked / "hw")   # something refused was handed in: not missing
    staged = _stage(tmp_path, linked)
    assert staged.file is None and staged.missing is False and "symbolic link" in staged.error


def test_status_of_a_result_with_nothing_found():
    from grader.grade.outcome import SubmissionResult
    assert SubmissionResult("a", "a", [], intake_error="x", missing_work=True).status == "missing work"
    assert SubmissionResult("a", "a", [], intake_error="x").status == "not gradable"
    assert SubmissionResult("a", "a", [], intake_error="x", missing_work=True,
                            grader_error="boom").status == "grader error"


def _graded_status(staged):
    """The row status grading gives what intake staged (nothing runs: intake refused it)."""
    from grader import grade
    from grader.intake.layouts import Submission
    catalog = [{"name": "test_mask", "part": "sequence_mask", "points": 10}]
    job = grade.Job(Submission("upload", "student"), "student")
    return grade._grade_staged(job, staged, None, None, catalog, grade.SuiteOptions(), None, None,
                               0.0).status


def test_a_notebook_whose_cell_source_is_not_text_is_the_students_broken_file(tmp_path):
    # before: TypeError inside intake, "the grader could not take in this submission ...
    # tell your instructor", and a row "not gradable" (an unexplained 0 in the export)
    for source in ([1, None], {"a": 1}, 7):
        notebook = {"cells": [{"cell_type": "code", "source": source}], "nbformat": 4,
                    "nbformat_minor": 5, "metadata": {}}
        staged = _stage_bytes(tmp_path, "attention.ipynb", json.dumps(notebook).encode())
        assert staged.error == ("attention.ipynb is not a valid notebook: the source of cell 1 "
                                "is not text. Open it in Jupyter, save it again, and re-upload; "
                                "or upload the code as attention.py.")
        assert (staged.missing, staged.grader_failed, _graded_status(staged)) == \
            (False, False, "not gradable")
    old = {"worksheets": [7, {"cells": "x"}, {"cells": [{"cell_type": "code", "input": "x = 1"}]}],
           "nbformat": 3}
    staged = _stage_bytes(tmp_path, "attention.ipynb", json.dumps(old).encode())
    assert staged.error is None and "x = 1" in open(staged.file, encoding="utf-8").read()


def test_a_failure_of_intake_itself_is_a_grader_error_never_an_earned_0(tmp_path, monkeypatch):
    # an intake bug (fault injected: the notebook converter raising where nothing should)
    # before: the row was "not gradable" and `grader export` sent its 0 to the LMS
    import grader.intake as intake_module

    def broken(data, label, module_file=None):
        raise TypeError("a bug of ours")
    monkeypatch.setattr(intake_module, "notebook_to_module", broken)
    staged = _stage_bytes(tmp_path, "attention.ipynb", b'{"cells": []}')
    assert staged.grader_failed is True and staged.missing is False
    assert staged.error == ("the grader could not take in this submission (TypeError: a bug of "
                            "ours); tell your instructor.")
    assert _graded_status(staged) == "grader error"


def test_a_failing_cell_says_the_students_cell_and_line(tmp_path):
    # cell 2 calls a function of cell 1 that raises: the deepest cell frame is cell 1, line 3
    cells = [("code", "def half(x):\n    y = x\n    return y / 0\n"),
             ("code", "A = 1\nB = half(A)\n"), ("code", "C = 3\nD = undefined_name\n")]
    staged = _stage_bytes(tmp_path, "attention.ipynb", _notebook(cells))
    module = _import(staged.file)
    assert module.A == 1 and module.C == 3
    assert module.__attnkit_cell_errors__ == [
        (2, "ZeroDivisionError", "division by zero (attention.ipynb, cell 1, line 3)"),
        (3, "NameError", "name 'undefined_name' is not defined (attention.ipynb, cell 3, line 2)")]


def test_a_notebooks_traceback_in_grading_shows_the_students_cell_line_and_code(tmp_path):
    from conftest import SOLUTION
    from grader.grade import grade_batch
    with open(SOLUTION, encoding="utf-8") as handle:
        source = handle.read()
    last = "    return nn.functional.softmax(X.reshape(shape), dim=-1)  # (B, Q, K)"
    raising = "        raise IndexError('no float64 here')"
    source = source.replace(last, "    if X.dtype == torch.float64:\n" + raising + "\n" + last)
    line = source.splitlines().index(raising) + 1  # counted in the cell, independently
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "nb.ipynb").write_bytes(_notebook([("markdown", "# 作业"), ("code", source)]))
    [result] = grade_batch([str(folder / "nb.ipynb")], str(tmp_path / "out"), jobs=1,
                           force=True)
    case = next(t for t in result.tests if t.name == "masked_softmax: float64 scores")
    assert case.status == "failed"
    assert case.message.splitlines()[1:] == [
        f"  at nb.ipynb, cell 2 line {line}, in masked_softmax: "
        "raise IndexError('no float64 here')"]
    assert "__attnkit" not in case.message and "attention.py" not in case.message


# ---- at its edges (issue 19, from tests/test_mutants_intake.py) -----------------------------
# grader/intake/__init__.py at its edges (issue 19): which file is the work (each rule of
# docs/how-to/canvas.md's order, the shallowest copy, the names never taken), the names a batch gives
# its submissions (computed by hand here), which helpers are staged beside it (2 MB on both
# sides), each refusal by its whole text and what it makes of the row (missing work, not
# gradable, grader error), on real folders, files and zips in tmp_path.

CODE = "X = 1\n"


def _edge_stage(tmp_path, upload, name="student"):
    return stage(str(upload), str(tmp_path / "staged"), name)


def _edge_folder(tmp_path, files, name="hw"):
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
    assert _staged_source(_edge_stage(tmp_path, _edge_folder(tmp_path, files))) == chosen


def test_a_notebook_is_chosen_by_name_and_then_as_the_only_one(tmp_path):
    nb = b'{"cells": [{"cell_type": "code", "source": "N = 1"}]}'
    for files in ({"attention.ipynb": nb, "attention_v3.py": "B = 1\n"},
                  {"attention_final.ipynb": nb, "other.ipynb": b"{}"},
                  {"work.ipynb": nb}):
        root = _edge_folder(tmp_path, files)
        staged = _edge_stage(tmp_path, root)
        assert "N = 1" in _staged_source(staged)
        for path in (root, tmp_path / "staged"):
            for name in os.listdir(path):
                os.remove(path / name)


def test_a_notebook_beside_a_module_is_not_guessed(tmp_path):
    root = _edge_folder(tmp_path, {"work.ipynb": b"{}", "mine.py": "M = 1\n"})
    assert _staged_source(_edge_stage(tmp_path, root)) == "M = 1\n"
    root = _edge_folder(tmp_path, {"work.ipynb": b"{}", "a.ipynb": b"{}"}, "two")
    staged = _edge_stage(tmp_path, root)
    assert staged.file is None and staged.missing is False
    assert staged.error == ("two has no attention.py (looked for attention.py or attention."
                            "ipynb, else one other .py or .ipynb file, also inside one zip; it "
                            "contains: a.ipynb, work.ipynb). Name your file attention.py.")


@pytest.mark.parametrize("name", ["attentions.py", "my_attention.py", "attention_v.py",
                                  "attention_draft.py", "attention.PY.txt"])
def test_names_that_only_look_like_the_work_are_not_it(tmp_path, name):
    root = _edge_folder(tmp_path, {name: "B = 1\n", "other.py": "C = 1\n", "more.py": ""})
    staged = _edge_stage(tmp_path, root)
    assert staged.file is None and staged.missing is False
    assert "has no attention.py" in staged.error


def test_two_copies_at_the_same_depth_are_named_not_guessed(tmp_path):
    root = _edge_folder(tmp_path, {f"v{i}/attention.py": CODE for i in range(12)})
    staged = _edge_stage(tmp_path, root)
    listed = ", ".join(f"v{i}/attention.py" for i in sorted(range(12), key=str)[:10])
    assert staged.error == f"hw holds several candidate files ({listed}); keep only one."


def test_the_listing_of_what_was_found_shows_ten_entries_and_their_kinds(tmp_path):
    root = _edge_folder(tmp_path, {f"f{i:02}.txt": "" for i in range(12)})
    os.mkfifo(root / "a-pipe")
    staged = _edge_stage(tmp_path, root)
    found = ", ".join(["a-pipe (a named pipe)"] + [f"f{i:02}.txt" for i in range(9)])
    assert staged.error == ("hw has no attention.py (looked for attention.py or attention."
                            "ipynb, else one other .py or .ipynb file, also inside one zip; it "
                            f"contains: {found}). Name your file attention.py.")
    assert staged.missing is False   # something refused was handed in: not missing work


def test_nothing_that_could_be_code_is_missing_work(tmp_path):
    staged = _edge_stage(tmp_path, _edge_folder(tmp_path, {"report.pdf": b"%PDF", "a/notes.md": ""}))
    assert staged.missing is True and staged.grader_failed is False and staged.file is None
    assert "it contains: report.pdf, a/notes.md)" in staged.error


def test_hidden_and_tool_folders_are_not_walked(tmp_path):
    files = {f"{d}/attention.py": "S = 1\n" for d in
             ("__MACOSX", "__pycache__", ".git", ".ipynb_checkpoints", "node_modules", ".venv",
              "venv", ".hidden")}
    files["work/attention.py"] = "W = 1\n"
    assert _staged_source(_edge_stage(tmp_path, _edge_folder(tmp_path, files))) == "W = 1\n"


def test_helpers_beside_the_work_are_copied_up_to_2_mb(tmp_path):
    limit = 2 * 2**20
    body = "# " + "x" * (limit - 3) + "\n"          # exactly 2 MB: copied
    root = _edge_folder(tmp_path, {"hw/attention.py": CODE, "hw/big.py": body,
                              "hw/bigger.py": body + "\n", "hw/util.py": "U = 1\n",
                              "hw/test_util.py": "T = 1\n", "hw/notes.txt": "n",
                              "hw/sub/deep.py": "D = 1\n", "other.py": "O = 1\n",
                              "hw/bad.py": b"\x00\x01binary"})
    staged = _edge_stage(tmp_path, root)
    assert _staged_source(staged) == CODE
    assert sorted(os.listdir(tmp_path / "staged")) == ["attention.py", "big.py", "test_util.py",
                                                       "util.py"]
    assert os.path.getsize(tmp_path / "staged" / "big.py") == limit
    assert staged.notes == []


def test_a_helper_named_attention_py_elsewhere_never_replaces_the_work(tmp_path):
    root = _edge_folder(tmp_path, {"attention_final.py": "F = 1\n", "util.py": "U = 1\n"})
    staged = _edge_stage(tmp_path, root)
    assert _staged_source(staged) == "F = 1\n"
    assert sorted(os.listdir(tmp_path / "staged")) == ["attention.py", "util.py"]


def test_helpers_with_names_the_grader_cannot_use_are_counted_and_named(tmp_path):
    root = _edge_folder(tmp_path, {"attention.py": CODE, "a\x1bb.py": "A = 1\n",
                              "c\x07.py": "C = 1\n"})
    staged = _edge_stage(tmp_path, root)
    assert os.listdir(tmp_path / "staged") == ["attention.py"]
    assert staged.notes == ["2 helper files have names the grader cannot use (ab.py, c.py) and "
                            "were not copied; rename them."]


def test_entries_that_are_not_files_are_skipped_with_one_note(tmp_path):
    root = _edge_folder(tmp_path, {"attention.py": CODE})
    for i in range(7):
        os.mkfifo(root / f"p{i}")
    staged = _edge_stage(tmp_path, root)
    listed = "; ".join(f"p{i}: a named pipe" for i in range(5))
    assert staged.notes == [f"hw: skipped 7 entries that are not regular files ({listed}; and 2 "
                            "more); the grader reads only regular files, never links, pipes or "
                            "devices."]
    for i in range(1, 7):
        os.remove(root / f"p{i}")
    staged = _edge_stage(tmp_path, root)
    assert staged.notes == ["hw: skipped 1 entry that is not a regular file (p0: a named pipe); "
                            "the grader reads only regular files, never links, pipes or devices."]


def test_the_work_that_is_not_a_file_is_refused_by_what_it_is(tmp_path):
    root = _edge_folder(tmp_path, {})
    os.mkfifo(root / "attention.py")
    staged = _edge_stage(tmp_path, root)
    assert staged.error == ("attention.py is a named pipe (FIFO), not a file; the grader reads "
                            "only regular files. Upload the file itself.")
    assert staged.missing is False and staged.file is None


def test_a_single_file_is_read_with_its_own_limit(tmp_path):
    big = tmp_path / "attention.py"
    big.write_bytes(b"#" * (2 * 2**20 + 1))
    assert _edge_stage(tmp_path, big).error == ("attention.py is 2048 KB; a source file over 2048 KB "
                                           "is not accepted.")
    nb = tmp_path / "work.IPYNB"
    nb.write_bytes(b" " * (2 * 2**20 + 1) + b'{"cells": [{"cell_type": "code", "source": "N=1"}]}')
    assert "N=1" in _staged_source(_edge_stage(tmp_path, nb))   # a notebook may be 20 MB
    with open(nb, "wb") as handle:
        handle.truncate(20 * 2**20 + 1)
    assert _edge_stage(tmp_path, nb).error == ("work.IPYNB is 20 MB; a notebook over 20 MB is not "
                                          "accepted.")
    upper = tmp_path / "MINE.PY"
    upper.write_bytes(b"P = 1\n")
    assert _staged_source(_edge_stage(tmp_path, upper)) == "P = 1\n"


def test_what_is_no_code_file_is_missing_work_and_says_so(tmp_path):
    for name in ("report.pdf", "attention.txt"):
        (tmp_path / name).write_bytes(b"x")
        staged = _edge_stage(tmp_path, tmp_path / name)
        assert staged.error == f"{name} is not a .py file, a notebook, a zip or a folder."
        assert staged.missing is True and staged.file is None
    staged = stage("", str(tmp_path / "staged"), "x")
    assert staged.error == "no submission path was given." and staged.missing is False


def test_a_path_given_with_a_trailing_slash_is_named_by_its_folder(tmp_path):
    root = _edge_folder(tmp_path, {"attention.py": CODE})
    os.symlink(root, tmp_path / "link")
    staged = _edge_stage(tmp_path, str(tmp_path / "link") + "/")
    assert staged.error == "link is a symbolic link; upload the file itself."


def test_a_zip_is_opened_case_blind_and_its_folder_removed(tmp_path, monkeypatch):
    import tempfile
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    upload = tmp_path / "HW.ZIP"
    upload.write_bytes(_zip_bytes([("hw/attention.py", CODE), ("hw/h.py", "H = 1\n")]))
    staged = _edge_stage(tmp_path, upload)
    assert _staged_source(staged) == CODE and staged.notes == []
    assert sorted(os.listdir(tmp_path / "staged")) == ["attention.py", "h.py"]
    assert os.listdir(scratch) == []


def test_the_one_zip_in_a_folder_is_opened_and_said(tmp_path):
    root = _edge_folder(tmp_path, {"readme.txt": "hi", "old.ZIP.bak": "x"})
    (root / "作业.Zip").write_bytes(_zip_bytes([("attention.py", CODE)]))
    staged = _edge_stage(tmp_path, root)
    assert _staged_source(staged) == CODE
    assert staged.notes == ["hw: the work was in 作业.Zip, which was opened."]
    # a zip given as the upload itself is not searched for another zip inside
    upload = tmp_path / "outer.zip"
    upload.write_bytes(_zip_bytes([("inner.zip", _zip_bytes([("attention.py", CODE)]))]))
    staged = _edge_stage(tmp_path, upload)
    assert staged.missing is True and "outer.zip has no attention.py" in staged.error


def test_a_zip_that_is_a_link_in_a_folder_is_not_opened(tmp_path):
    real = tmp_path / "real.zip"
    real.write_bytes(_zip_bytes([("attention.py", "SECRET = 1\n")]))
    root = _edge_folder(tmp_path, {"notes.txt": ""})
    os.symlink(real, root / "work.zip")
    staged = _edge_stage(tmp_path, root)
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
    staged = _edge_stage(tmp_path, tmp_path / "a.py")
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
    staged = _edge_stage(tmp_path, tmp_path / "a.py")
    assert staged.error == f"a.py could not be read ({reason})."
    assert (staged.grader_failed, staged.missing, staged.file) == (False, False, None)


def test_a_reason_is_cut_at_4000_and_a_note_at_2000_characters(tmp_path, monkeypatch):
    def failing(data, label):
        raise ValueError("v" * 5000)
    monkeypatch.setattr(intake, "decode_source", failing)
    (tmp_path / "a.py").write_bytes(b"A = 1\n")
    staged = _edge_stage(tmp_path, tmp_path / "a.py")
    assert staged.error.startswith("a.py could not be read (ValueError: vvv")
    assert len(staged.error) == len("a.py could not be read (ValueError: ).") + 300

    def noisy(data, label):
        return "A = 1\n", ["n" * 3000, "short"]
    monkeypatch.setattr(intake, "decode_source", noisy)
    staged = _edge_stage(tmp_path, tmp_path / "a.py")
    assert [len(note) for note in staged.notes] == [2000, 5]


def test_an_intake_error_text_longer_than_4000_is_cut(tmp_path, monkeypatch):
    from grader.intake import IntakeError

    def failing(data, label):
        raise IntakeError("e" * 5000)
    monkeypatch.setattr(intake, "decode_source", failing)
    (tmp_path / "a.py").write_bytes(b"A = 1\n")
    staged = _edge_stage(tmp_path, tmp_path / "a.py")
    assert len(staged.error) == 4000 and staged.error.startswith("eee")
    assert staged.error.endswith("[... cut by the grader: 1000 more characters]")


def test_the_one_code_file_that_is_not_a_regular_file_is_refused_by_what_it_is(tmp_path):
    root = _edge_folder(tmp_path, {"notes.txt": ""})
    os.mkfifo(root / "mine.py")
    staged = _edge_stage(tmp_path, root)
    assert staged.error == ("mine.py is a named pipe (FIFO), not a file; the grader reads only "
                            "regular files. Upload the file itself.")
    # beside a module, a lone odd notebook is not the work: the module is
    os.remove(root / "mine.py")
    (root / "mine.py").write_text(CODE)
    os.mkfifo(root / "work.ipynb")
    assert _staged_source(_edge_stage(tmp_path, root, "again")) == CODE


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
    root = _edge_folder(tmp_path, {"attention.py": CODE, "util.py": "U = 1\n"})
    staged = stage(str(root), str(tmp_path / "staged"), "student", seconds=2)
    assert staged.file is None and staged.missing is False and staged.grader_failed is False
    assert staged.error == ("hw: reading the submission took longer than 2 s, the limit; upload "
                            "only your code (attention.py and its helper files).")


def test_a_name_that_is_no_file_name_is_still_named():
    assert submission_names(["x/a\x00b.py", "y/attention"]) == ["a\x00b", "attention"]


def test_the_one_regular_module_beside_an_odd_one_is_the_work(tmp_path):
    root = _edge_folder(tmp_path, {"mine.py": "M = 1\n"})
    os.symlink("/etc/hostname", root / "odd.py")
    staged = _edge_stage(tmp_path, root)
    assert _staged_source(staged) == "M = 1\n"
    assert staged.notes == ["hw: skipped 1 entry that is not a regular file (odd.py: a symbolic "
                            "link); the grader reads only regular files, never links, pipes or "
                            "devices."]
