"""grader/intake/safeio.py at its edges (issue 19): the documented bounds (30 s, 10 000
entries, 32 levels, limit + 1 bytes) as literals and on both sides, every kind of file in
the words a student reads, each refusal by its whole text, and the swaps the module guards
against made for real (a folder or file replaced at the moment between its check and its
open, through the walk's own callback or right after the real lstat/stat)."""
import errno
import os
import socket
import stat

import pytest

from grader.intake import IntakeError, safeio


def _walk(root, deadline=None, skip=lambda name: False):
    fd = os.open(root, safeio.DIR_FLAGS)
    try:
        return safeio.walk(fd, "hw", deadline or safeio.Deadline(30, "hw"), skip)
    finally:
        os.close(fd)


def _raises(call, *args):
    with pytest.raises(IntakeError) as error:
        call(*args)
    return str(error.value)


def test_the_documented_bounds():
    assert safeio.INTAKE_SECONDS == 30
    assert safeio.MAX_WALK_ENTRIES == 10_000
    assert safeio.MAX_DEPTH == 32
    assert safeio.CHUNK == 65_536
    for flag in (os.O_NOFOLLOW, os.O_DIRECTORY, os.O_CLOEXEC):
        assert safeio.DIR_FLAGS & flag
    for flag in (os.O_NOFOLLOW, os.O_NONBLOCK, os.O_CLOEXEC, os.O_NOCTTY):
        assert safeio.FILE_FLAGS & flag
    assert not safeio.FILE_FLAGS & (os.O_WRONLY | os.O_RDWR | os.O_DIRECTORY)


def test_the_deadline_says_its_limit_and_passes_before_it():
    safeio.Deadline(30, "hw").check()       # well before the end: nothing
    error = _raises(safeio.Deadline(-0.5, "hw").check)
    assert error == ("hw: reading the submission took longer than -0.5 s, the limit; upload "
                     "only your code (attention.py and its helper files).")
    with pytest.raises(safeio.IntakeTimeout):
        safeio.Deadline(-1, "hw").check()


@pytest.mark.parametrize("mode, kind, refusal", [
    (stat.S_IFREG | 0o644, None, None),
    (stat.S_IFLNK | 0o777, "a symbolic link", "x is a symbolic link; upload the file itself."),
    (stat.S_IFDIR | 0o755, "a folder", "x is a folder, not a file; the grader reads only "
                                       "regular files. Upload the file itself."),
    (stat.S_IFIFO | 0o644, "a named pipe", "x is a named pipe (FIFO), not a file; the grader "
                                           "reads only regular files. Upload the file itself."),
    (stat.S_IFSOCK | 0o644, "a socket", "x is a socket, not a file; the grader reads only "
                                        "regular files. Upload the file itself."),
    (stat.S_IFCHR | 0o644, "a device", "x is a device (like /dev/zero), not a file; the grader "
                                       "reads only regular files. Upload the file itself."),
    (stat.S_IFBLK | 0o644, "a block device", "x is a block device (a disk), not a file; the "
                                             "grader reads only regular files. Upload the file "
                                             "itself."),
    (0o644, "not a regular file", "x is not a regular file; upload the file itself."),
])
def test_each_kind_in_words_and_its_refusal(mode, kind, refusal):
    assert safeio.kind_of(mode) == kind
    assert safeio.kind_text(kind) == kind
    if kind:
        assert safeio.refusal("x", kind) == refusal


@pytest.mark.parametrize("size, limit, said", [
    (4 * 2**20, 4 * 2**20 - 1, "x is 4 MB; a file over 4095 KB is not accepted."),
    (5 * 2**20 + 2**19, 2048, "x is 5 MB; a file over 2 KB is not accepted."),
    (1023, 1000, "x is 0 KB; a file over 0 KB is not accepted."),
])
def test_sizes_are_said_in_kb_below_4_mb_and_in_mb_from_it(size, limit, said):
    assert safeio.too_large("x", size, limit) == said


def test_a_file_of_exactly_the_limit_is_read_and_one_byte_more_is_refused(tmp_path):
    path = tmp_path / "a.py"
    path.write_bytes(b"x" * 100_000)
    fd = os.open(path, os.O_RDONLY)
    try:
        deadline = safeio.Deadline(30, "a.py")
        assert safeio.read_fd(fd, 100_000, "a.py", deadline) == b"x" * 100_000
        os.lseek(fd, 0, os.SEEK_SET)
        assert _raises(safeio.read_fd, fd, 99_999, "a.py", deadline, "notebook") == (
            "a.py is 97 KB; a notebook over 97 KB is not accepted.")
    finally:
        os.close(fd)


def test_a_file_longer_than_its_size_says_is_read_only_to_the_limit_plus_one(tmp_path):
    # /proc files say size 0 and hold more: what a file that grows while it is read looks like
    fd = os.open("/proc/self/maps", os.O_RDONLY)
    try:
        assert os.fstat(fd).st_size == 0
        error = _raises(safeio.read_fd, fd, 100, "maps", safeio.Deadline(30, "maps"))
        assert error == "maps is 0 KB; a file over 0 KB is not accepted."
        assert os.lseek(fd, 0, os.SEEK_CUR) == 101
    finally:
        os.close(fd)


def test_read_fd_refuses_a_descriptor_that_is_no_regular_file(tmp_path):
    fd = os.open(tmp_path, safeio.DIR_FLAGS)
    try:
        assert _raises(safeio.read_fd, fd, 10, "d", safeio.Deadline(30, "d")) == (
            "d is a folder, not a file; the grader reads only regular files. Upload the file "
            "itself.")
    finally:
        os.close(fd)


def test_a_read_past_the_deadline_is_refused(tmp_path):
    (tmp_path / "a.py").write_bytes(b"x")
    fd = os.open(tmp_path / "a.py", os.O_RDONLY)
    try:
        with pytest.raises(safeio.IntakeTimeout):
            safeio.read_fd(fd, 10, "a.py", safeio.Deadline(-1, "a.py"))
    finally:
        os.close(fd)


def test_open_submitted_says_what_each_path_is(tmp_path):
    (tmp_path / "a.py").write_bytes(b"x")
    fd, is_folder = safeio.open_submitted(str(tmp_path / "a.py"), "a.py")
    os.close(fd)
    assert is_folder is False
    fd, is_folder = safeio.open_submitted(str(tmp_path), "hw")
    os.close(fd)
    assert is_folder is True
    assert _raises(safeio.open_submitted, str(tmp_path / "gone\x1b.py"), "gone.py") == (
        f"{tmp_path}/gone.py does not exist.")
    assert _raises(safeio.open_submitted, "a\x00b", "ab") == (
        "ab could not be read (its name is not a valid file name).")
    assert _raises(safeio.open_submitted, str(tmp_path / ("n" * 300)), "n") == (
        "n could not be read (File name too long).")
    os.mkfifo(tmp_path / "pipe.py")
    assert _raises(safeio.open_submitted, str(tmp_path / "pipe.py"), "pipe.py") == (
        "pipe.py is a named pipe (FIFO), not a file; the grader reads only regular files. "
        "Upload the file itself.")
    os.symlink(tmp_path / "a.py", tmp_path / "link.py")
    assert _raises(safeio.open_submitted, str(tmp_path / "link.py"), "link.py") == (
        "link.py is a symbolic link; upload the file itself.")


def _swap_after(monkeypatch, name, when, swap):
    """Wrap safeio's os.<name>: after the real call on a path ending in `when`, `swap()` runs
    once (the file system really changes at the moment between a check and its use)."""
    real = getattr(os, name)
    done = []

    def call(path, *args, **kwargs):
        result = real(path, *args, **kwargs)
        if not done and os.fsdecode(path).endswith(when):
            done.append(True)
            swap()
        return result
    monkeypatch.setattr(safeio.os, name, call)
    return done


def test_a_path_swapped_between_lstat_and_open_is_refused(tmp_path, monkeypatch):
    (tmp_path / "a.py").write_bytes(b"mine")
    (tmp_path / "other.py").write_bytes(b"theirs")
    done = _swap_after(monkeypatch, "lstat", "a.py",
                       lambda: os.replace(tmp_path / "other.py", tmp_path / "a.py"))
    assert _raises(safeio.open_submitted, str(tmp_path / "a.py"), "a.py") == (
        "a.py changed while the grader was reading it; upload it again.")
    assert done


def test_a_file_swapped_for_a_folder_between_lstat_and_open_is_refused(tmp_path, monkeypatch):
    (tmp_path / "a").write_bytes(b"mine")

    def swap():
        os.remove(tmp_path / "a")
        os.mkdir(tmp_path / "a")
    _swap_after(monkeypatch, "lstat", "/a", swap)
    # opened as a file (O_NOFOLLOW, no O_DIRECTORY) it is now a folder: not what was checked
    assert _raises(safeio.open_submitted, str(tmp_path / "a"), "a") == (
        "a changed while the grader was reading it; upload it again.")


def test_a_file_swapped_between_stat_and_open_in_a_folder_is_refused(tmp_path, monkeypatch):
    (tmp_path / "hw").mkdir()
    (tmp_path / "hw" / "attention.py").write_bytes(b"mine")
    (tmp_path / "hw" / "other.py").write_bytes(b"theirs")
    entries, _ = _walk(tmp_path)
    [entry] = [e for e in entries if e.name == "attention.py"]
    _swap_after(monkeypatch, "stat", "attention.py", lambda: os.replace(
        tmp_path / "hw" / "other.py", tmp_path / "hw" / "attention.py"))
    root = os.open(tmp_path, safeio.DIR_FLAGS)
    try:
        assert _raises(safeio.read_entry, root, entry, 100, "hw/attention.py",
                       safeio.Deadline(30, "x")) == (
            "hw/attention.py changed while the grader was reading it; upload it again.")
    finally:
        os.close(root)


def test_open_failures_in_words():
    def failure(code):
        return safeio._open_failure("x", OSError(code, os.strerror(code)))
    for code in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
        assert failure(code) == ("x is (or lies in a folder that is) a symbolic link; upload "
                                 "the file itself.")
    assert failure(errno.ENXIO) == ("x is a socket, not a file; the grader reads only regular "
                                    "files. Upload the file itself.")
    assert failure(errno.EACCES) == "x could not be read (Permission denied)."
    assert safeio._open_failure("x", OSError("no errno")) == "x could not be read (OSError)."


def test_an_entry_knows_its_name_depth_and_shown_path():
    entry = safeio.Entry(("a", "b\x1b", "c.py"))
    assert (entry.name, entry.depth, entry.shown, entry.kind, entry.size) == (
        "c.py", 2, "a/b/c.py", None, 0)
    long = safeio.Entry(("d" * 600,))
    assert len(long.shown) == 500 and long.depth == 0


def test_the_walk_lists_files_sorted_and_folders_after_them(tmp_path):
    for name in ("b.py", "a.py", "c.txt"):
        (tmp_path / name).write_bytes(b"12345")
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "z.py").write_bytes(b"")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "x.py").write_bytes(b"")
    os.mkfifo(tmp_path / "p")
    os.symlink(tmp_path / "a", tmp_path / "link")
    entries, notes = _walk(tmp_path, skip=lambda name: name == ".git")
    assert [(e.parts, e.kind) for e in entries] == [
        (("a.py",), None), (("b.py",), None), (("c.txt",), None), (("link",), "a symbolic link"),
        (("p",), "a named pipe"), (("a", "z.py"), None)]
    assert entries[0].size == 5 and notes == []


def test_the_walk_enters_32_levels_and_not_33(tmp_path):
    deep = tmp_path.joinpath(*["d"] * 33)
    deep.mkdir(parents=True)
    (deep.parent / "at32.py").write_bytes(b"")      # in the 32nd folder: found
    (deep / "at33.py").write_bytes(b"")             # in the 33rd: not walked
    entries, notes = _walk(tmp_path)
    assert [e.depth for e in entries] == [32]
    assert notes == ["hw: folders nested deeper than 32 levels were not read "
                     f"({'/'.join(['d'] * 33)})."]


def test_the_walk_takes_10000_entries_and_refuses_10001(tmp_path):
    for i in range(10_000):
        open(tmp_path / f"{i}", "wb").close()
    entries, _ = _walk(tmp_path)
    assert len(entries) == 10_000
    open(tmp_path / "one-more", "wb").close()
    assert _raises(_walk, tmp_path) == (
        "hw holds more than 10000 files and folders; upload only your code (attention.py and "
        "its helper files).")


def test_the_walk_checks_the_deadline_every_64_entries(tmp_path):
    late = safeio.Deadline(-1, "hw")
    for i in range(63):
        open(tmp_path / f"{i}", "wb").close()
    assert len(_walk(tmp_path, late)[0]) == 63      # 63 entries, no folder: not checked yet
    open(tmp_path / "63", "wb").close()
    with pytest.raises(safeio.IntakeTimeout):
        _walk(tmp_path, late)


def test_a_folder_swapped_while_the_walk_lists_it_is_not_entered(tmp_path):
    for name in ("a", "b", "c", "d"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "x.py").write_bytes(b"")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "secret.py").write_bytes(b"")

    def skip(name):   # called as each folder is listed, before it is opened
        if name == "a":
            os.rename(tmp_path / "a", tmp_path / "old-a")
            os.symlink(tmp_path / "elsewhere", tmp_path / "a")      # a link now
        if name == "b":
            os.rename(tmp_path / "b", tmp_path / "old-b")
            os.rename(tmp_path / "elsewhere", tmp_path / "b")       # another folder now
        return name in ("old-a", "old-b")
    entries, notes = _walk(tmp_path, skip=skip)
    assert [e.parts for e in entries] == [("c", "x.py"), ("d", "x.py")]
    assert notes == ["hw: 2 folders could not be read (a, b)."]


def test_open_entry_refuses_what_is_no_longer_a_regular_file(tmp_path):
    (tmp_path / "hw").mkdir()
    (tmp_path / "hw" / "a.py").write_bytes(b"x")
    entries, _ = _walk(tmp_path)
    os.remove(tmp_path / "hw" / "a.py")
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(tmp_path / "hw" / "a.py"))
        root = os.open(tmp_path, safeio.DIR_FLAGS)
        try:
            assert _raises(safeio.open_entry, root, entries[0], "hw/a.py") == (
                "hw/a.py is a socket, not a file; the grader reads only regular files. Upload "
                "the file itself.")
            os.remove(tmp_path / "hw" / "a.py")
            assert _raises(safeio.open_entry, root, entries[0], "hw/a.py") == (
                "hw/a.py could not be read (No such file or directory).")
        finally:
            os.close(root)
    finally:
        server.close()


def test_open_entry_closes_every_folder_it_opened(tmp_path):
    deep = tmp_path.joinpath("a", "b", "c")
    deep.mkdir(parents=True)
    (deep / "x.py").write_bytes(b"data")
    entries, _ = _walk(tmp_path)
    root = os.open(tmp_path, safeio.DIR_FLAGS)
    before = len(os.listdir("/proc/self/fd"))
    try:
        assert safeio.read_entry(root, entries[0], 4, "x", safeio.Deadline(30, "x")) == b"data"
        assert len(os.listdir("/proc/self/fd")) == before
    finally:
        os.close(root)


def test_a_name_is_shown_cut_at_200_characters_unless_told():
    assert safeio.shown("x" * 200) == "x" * 200
    assert safeio.shown("x" * 201) == "x" * 157 + "\n[... cut by the grader: 1 more characters]"
    assert len(safeio.shown("a" * 600, 500)) == 500
    assert safeio.shown("a\x1b" * 300, 500) == "a" * 300


def test_a_missing_path_is_named_in_500_characters(tmp_path):
    path = str(tmp_path / ("p" * 200) / ("q" * 200) / ("r" * 200))
    said = _raises(safeio.open_submitted, path, "r")
    assert said.endswith(" more characters] does not exist.")
    assert len(said) == 500 + len(" does not exist.") and said.startswith(str(tmp_path))


def test_an_entry_gone_between_the_listing_and_its_stat_is_left_out(tmp_path):
    (tmp_path / "a").mkdir()
    for name in ("b.py", "c.py"):
        (tmp_path / name).write_bytes(b"")

    def skip(name):     # called for "a" after the listing, before "b.py" is looked at
        if name == "a" and (tmp_path / "b.py").exists():
            os.remove(tmp_path / "b.py")
        return False
    entries, notes = _walk(tmp_path, skip=skip)
    assert [e.parts for e in entries] == [("c.py",)] and notes == []


def test_an_entry_swapped_for_a_link_to_a_file_is_refused_as_a_link(tmp_path):
    (tmp_path / "attention.py").write_bytes(b"mine")
    (tmp_path / "secret.py").write_bytes(b"SECRET")
    entries, _ = _walk(tmp_path)
    [entry] = [e for e in entries if e.name == "attention.py"]
    os.remove(tmp_path / "attention.py")
    os.symlink(tmp_path / "secret.py", tmp_path / "attention.py")
    root = os.open(tmp_path, safeio.DIR_FLAGS)
    try:
        assert _raises(safeio.read_entry, root, entry, 100, "attention.py",
                       safeio.Deadline(30, "x")) == (
            "attention.py is a symbolic link; upload the file itself.")
    finally:
        os.close(root)


def test_a_file_that_would_block_is_refused_not_waited_for(tmp_path, monkeypatch):
    # fault injected: only a regular file on a network or FUSE file system answers EAGAIN
    # to a non-blocking read, and there is none here
    (tmp_path / "a.py").write_bytes(b"x")
    fd = os.open(tmp_path / "a.py", os.O_RDONLY)

    def would_block(fd, size):
        raise BlockingIOError(errno.EAGAIN, "Resource temporarily unavailable")
    monkeypatch.setattr(safeio.os, "read", would_block)
    try:
        assert _raises(safeio.read_fd, fd, 10, "a.py", safeio.Deadline(30, "a.py")) == (
            "a.py is not a regular file; upload the file itself.")
    finally:
        os.close(fd)


def test_a_path_swapped_for_a_link_between_lstat_and_open_is_refused_as_one(tmp_path,
                                                                             monkeypatch):
    (tmp_path / "a.py").write_bytes(b"mine")
    (tmp_path / "secret.py").write_bytes(b"SECRET")

    def swap():
        os.remove(tmp_path / "a.py")
        os.symlink(tmp_path / "secret.py", tmp_path / "a.py")
    _swap_after(monkeypatch, "lstat", "a.py", swap)
    assert _raises(safeio.open_submitted, str(tmp_path / "a.py"), "a.py") == (
        "a.py is (or lies in a folder that is) a symbolic link; upload the file itself.")


def test_folders_too_deep_are_named_three_at_most(tmp_path):
    for top in ("a", "b", "c", "d"):
        tmp_path.joinpath(top, *["d"] * 32).mkdir(parents=True)
    entries, notes = _walk(tmp_path)
    deep = "/".join(["d"] * 32)
    assert entries == [] and notes == [
        f"hw: folders nested deeper than 32 levels were not read (a/{deep}, b/{deep}, c/{deep})."]
