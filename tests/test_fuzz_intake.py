"""Intake against generated hostile trees (Hypothesis).

Each example builds a real folder of regular files, folders, symbolic links (to files and
folders outside the submission, to /dev/zero, dangling, loops, back into the tree), named
pipes, and odd names (unicode, undecodable bytes, control characters, very long names,
names differing only in case or in normalisation, deep folders), then stages it as a
folder, as one of its own entries given on the command line, or zipped. Whatever the tree:

- stage() returns (never raises) within a few seconds, and says either a file or a reason;
- nothing behind a link is ever read: every link target carries SECRET (in its content and
  in its path), and SECRET appears in no staged file, reason or note;
- the staged folder holds regular files only, and every message encodes as UTF-8.

Hermetic: derandomized, no example database.
"""
import os
import shutil
import stat
import tempfile
import threading
import time
import zipfile

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grader.intake import stage

SECRET = "attnkit-fuzz-secret-91b2"
SECRET_SOURCE = f"LEAK = '{SECRET}'\n"
GOOD = b"def scale(d):\n    return 1 / d ** 0.5\n"
PER_EXAMPLE_SECONDS = 5
# thousands of small folders per run: a tmpfs where there is one (much faster than overlayfs)
SCRATCH = "/dev/shm" if os.access("/dev/shm", os.W_OK | os.X_OK) else None

NAMES = st.one_of(
    st.sampled_from([
        "attention.py", "attention.ipynb", "Attention.py", "ATTENTION.PY", "attention (1).py",
        "attention_final.py", "helpers.py", "Helpers.py", "utils.py", "conftest.py", "test_x.py",
        "注意力.py", "\u00e9.py", "e\u0301.py", "a\x1b[2J.py", "tab\there.py", "new\nline.py",
        os.fsdecode(b"\xff\xfe.py"), os.fsdecode(b"bad\x80name"), "x" * 250 + ".py", "y" * 255,
        "__MACOSX", ".hidden", "__pycache__", "hw", "sub", "data.bin", "notes.txt", "-rf",
        "\u202eyp.txt", " ", "..py"]),
    st.text(st.characters(blacklist_characters="/\x00", blacklist_categories=("Cs",)),
            min_size=1, max_size=30).filter(lambda n: n not in (".", "..") and len(os.fsencode(n)) < 250),
)

CONTENTS = st.one_of(
    st.just(b"def scale(d):\n    return d\n"),
    st.just(b'{"cells": [{"cell_type": "code", "source": "X = 1"}], "nbformat": 4}'),
    st.just(b""),
    st.just("# 注意力\nLABEL = '注意力'\n".encode("gbk")),
    st.binary(max_size=300),
)

KINDS = ["file", "file", "file", "dir", "dir", "link-secret-file", "link-secret-dir", "link-zero",
         "link-urandom", "link-dangling", "link-self", "link-parent", "link-root", "link-sibling", "fifo"]

ODD_KINDS = [k for k in KINDS if k not in ("file", "dir")]
PY_NAMES = st.sampled_from(["attention.py", "attention.ipynb", "attention (1).py", "helpers.py",
                            "utils.py", "Helpers.py", "注意力.py", os.fsdecode(b"h\xffelp.py"),
                            "z" * 252 + ".py"])
# what sits beside the planted attention.py: links, pipes (and a same-named file is left out)
BESIDE = st.lists(st.tuples(PY_NAMES, st.sampled_from(ODD_KINDS)), max_size=4)

NODE = st.tuples(st.lists(NAMES, min_size=1, max_size=4), st.sampled_from(KINDS), CONTENTS)
TREE = st.lists(NODE, max_size=25)


def _make(path, kind, content, outside):
    target = {"link-secret-file": os.path.join(outside, "secret.py"),
              "link-secret-dir": outside, "link-zero": "/dev/zero", "link-urandom": "/dev/urandom",
              "link-dangling": os.path.join(outside, "gone", "attention.py"),
              "link-self": os.path.basename(path), "link-parent": "..", "link-root": "/",
              "link-sibling": "attention.py"}.get(kind)
    if kind == "file":
        with open(path, "wb") as handle:
            handle.write(content)
    elif kind == "dir":
        os.mkdir(path)
    elif kind == "fifo":
        os.mkfifo(path)
    else:
        os.symlink(target, path)


def _build(root, tree, outside, deep):
    """Create what can be created of `tree` under `root` (a node whose parent is not a
    folder, or whose name is taken, is left out); returns the paths made."""
    made = []
    for parts, kind, content in tree:
        parent = root
        for part in parts[:-1]:
            parent = os.path.join(parent, part)
            if not os.path.lexists(parent):
                os.mkdir(parent)
            elif not stat.S_ISDIR(os.lstat(parent).st_mode):
                break
        else:
            path = os.path.join(parent, parts[-1])
            if not os.path.lexists(path):
                _make(path, kind, content, outside)
                made.append(path)
    if deep:
        chain = os.path.join(root, *["d"] * 40)
        os.makedirs(chain)
        with open(os.path.join(chain, "attention.py"), "w") as handle:
            handle.write("X = 1\n")
    return made


def _outside(base):
    outside = os.path.join(base, f"outside-{SECRET}")
    os.makedirs(os.path.join(outside, "hw"))
    for rel in ("secret.py", "attention.py", os.path.join("hw", "attention.py")):
        with open(os.path.join(outside, rel), "w") as handle:
            handle.write(SECRET_SOURCE)
    return outside


def _stage_bounded(path, dest, **earlier):
    box = {}

    def run():
        try:
            box["staged"] = stage(path, dest, "student", **earlier)
        except BaseException as error:  # the property: nothing escapes stage()
            box["raised"] = error

    start = time.monotonic()
    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(PER_EXAMPLE_SECONDS * 4)
    assert not worker.is_alive(), f"stage({path!r}) blocked"
    assert "raised" not in box, f"stage() raised {box['raised']!r}"
    return box["staged"], time.monotonic() - start


def _check(staged, dest, elapsed):
    assert elapsed < PER_EXAMPLE_SECONDS, f"stage() took {elapsed:.1f} s"
    assert (staged.file is None) != (staged.error is None), staged
    for text in [staged.error or ""] + list(staged.notes):
        assert isinstance(text, str)
        text.encode("utf-8")
        assert SECRET not in text, text
    for folder, dirs, files in os.walk(dest):
        assert not dirs, dirs
        for name in files:
            path = os.path.join(folder, name)
            assert stat.S_ISREG(os.lstat(path).st_mode), path
            with open(path, "rb") as handle:
                assert SECRET.encode() not in handle.read(), path
    if staged.file:
        with open(staged.file, "rb") as handle:
            handle.read().decode("utf-8")


def _fresh(base, name):
    path = os.path.join(base, name)
    if os.path.lexists(path):
        shutil.rmtree(path)
    return path


HERMETIC = settings(max_examples=300, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@HERMETIC
@given(tree=TREE, plant=st.sampled_from(["none", "top", "top", "sub"]), beside=BESIDE,
       deep=st.booleans(), pick=st.integers(min_value=-1, max_value=30), as_zip=st.booleans())
def test_stage_survives_any_tree_and_never_reads_through_a_link(tree, plant, beside, deep, pick,
                                                                as_zip):
    base = tempfile.mkdtemp(prefix="attnkit-fuzz-", dir=SCRATCH)
    try:
        outside = _outside(base)
        root = os.path.join(base, "student")
        os.mkdir(root)
        folder = ["hw"] if plant == "sub" else []
        neighbours = [(folder + [name], kind, b"") for name, kind in beside]
        if plant != "none":  # a real attention.py, so the links and pipes are its neighbours
            neighbours.insert(0, (folder + ["attention.py"], "file", GOOD))
        tree = neighbours + tree
        made = _build(root, tree, outside, deep and pick < 0)
        targets = [root, root + os.sep]
        if 0 <= pick < len(made):  # one entry of the tree given on the command line
            targets = [made[pick]]
        for target in targets:
            dest = _fresh(base, "staged")
            staged, elapsed = _stage_bounded(target, dest)
            _check(staged, dest, elapsed)
        if as_zip:  # the regular files of the tree, zipped (a zip cannot hold a pipe)
            upload = os.path.join(base, "student.zip")
            with zipfile.ZipFile(upload, "w") as archive:
                for path in made:
                    if stat.S_ISREG(os.lstat(path).st_mode):
                        try:
                            archive.write(path, os.path.relpath(path, root))
                        except (UnicodeEncodeError, ValueError):  # names a zip cannot hold
                            pass
                link = zipfile.ZipInfo("helpers.py")
                link.external_attr = (stat.S_IFLNK | 0o777) << 16
                archive.writestr(link, os.path.join(outside, "secret.py"))
            dest = _fresh(base, "staged")
            staged, elapsed = _stage_bounded(upload, dest)
            _check(staged, dest, elapsed)
    finally:
        shutil.rmtree(base, ignore_errors=True)


# an assignment building on one whose module students provide (`builds_on`, "student"):
# here the earlier module is `helpers`, which NAMES and PY_NAMES already plant as files,
# links, pipes and folders
EARLIER_NAMES = st.sampled_from(["helpers.py", "helpers.ipynb", "Helpers.py", "helpers (1).py"])


@settings(max_examples=120, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(tree=TREE, beside=st.lists(st.tuples(EARLIER_NAMES, st.sampled_from(KINDS)), max_size=3),
       contents=CONTENTS, pick=st.integers(min_value=-1, max_value=30))
def test_an_earlier_module_beside_or_apart_is_as_safe_as_the_work(tree, beside, contents, pick):
    """The earlier module handed in beside the work (converted from a notebook) or as an
    upload of its own (a companion: any entry of the tree, link, pipe or folder included):
    the same properties as the work's, and the work is always staged."""
    base = tempfile.mkdtemp(prefix="attnkit-fuzz-", dir=SCRATCH)
    try:
        outside = _outside(base)
        root = os.path.join(base, "student")
        os.mkdir(root)
        planted = [(["attention.py"], "file", GOOD)]
        planted += [([name], kind, contents) for name, kind in beside]
        made = _build(root, planted + tree, outside, False)
        apart = os.path.join(base, "apart_helpers.py")   # else: an upload that is a link
        os.symlink(os.path.join(outside, "secret.py"), apart)
        apart = made[pick] if 0 <= pick < len(made) else apart
        dest = _fresh(base, "staged")
        staged, elapsed = _stage_bounded(root, dest, earlier=("helpers",),
                                         companions=(("helpers", apart),))
        _check(staged, dest, elapsed)
        assert staged.file and os.path.basename(staged.file) == "attention.py", staged.error
        with open(staged.file, "rb") as handle:
            assert handle.read().endswith(GOOD)
    finally:
        shutil.rmtree(base, ignore_errors=True)
