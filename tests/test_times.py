"""grader/intake/times.py at its edges (issue 19): each time format platforms write and
each way it can be out of range (expected values worked out by hand), the 100-character
and 1024-byte bounds on both sides, the one-day slack for a timestamp.txt after now, and
which files' modification times count, on real files in tmp_path."""
import datetime
import os

import pytest

from grader.intake import times

UTC = datetime.timezone.utc


def test_the_documented_bounds():
    assert times.TIMESTAMP == "timestamp.txt"
    assert times.TIMESTAMP_BYTES == 1024
    assert times.MAX_LISTED == 1000
    assert times.FUTURE_SLACK == datetime.timedelta(days=1)


@pytest.mark.parametrize("text, expected", [
    ("2026-11-30 12:00", "2026-11-30T12:00:00+00:00"),
    ("2026-1-2T3:04:05Z", "2026-01-02T03:04:05+00:00"),
    ("2026-11-30t12:00:00z", "2026-11-30T12:00:00+00:00"),
    ("2026-11-30 12:00:00 GMT", "2026-11-30T12:00:00+00:00"),
    ("2026-11-30 12:00:00,5 UTC", "2026-11-30T12:00:00.500000+00:00"),
    ("2026-11-30 12:00:00.1234567", "2026-11-30T12:00:00.123456+00:00"),
    ("2026-11-30 12:00:00.000000001 +08", "2026-11-30T12:00:00+08:00"),
    ("2026-11-30 12:00:00 -0930", "2026-11-30T12:00:00-09:30"),
    ("2026-11-30 12:00:00+23:59", "2026-11-30T12:00:00+23:59"),
    ("2026-11-30 12:00:00 +24:00", ""),
    ("2026-11-30 12:00:00 +05:60", ""),
    ("2026-11-30 12:00:00.1234567890", ""),
    ("2026-11-30", ""),
    ("２０２６-11-30 12:00", ""),
    ("2026-11-30 24:00", ""),
])
def test_each_format_and_range_by_hand(text, expected):
    assert times.parse_time(text) == expected


def test_a_text_of_100_characters_is_read_and_101_is_not():
    text = "2026-11-30 12:00:00 UTC"
    assert times.parse_time(text + " " * (100 - len(text))) == "2026-11-30T12:00:00+00:00"
    assert times.parse_time(text + " " * (101 - len(text))) == ""


def test_what_is_not_text_and_what_is_a_datetime():
    assert times.parse_time(None) == "" and times.parse_time(20261130) == ""
    assert times.parse_time(datetime.datetime(2026, 11, 30, 12)) == "2026-11-30T12:00:00+00:00"
    plus8 = datetime.timezone(datetime.timedelta(hours=8))
    assert times.parse_time(datetime.datetime(2026, 11, 30, 12, tzinfo=plus8)) == (
        "2026-11-30T12:00:00+08:00")
    assert times.iso(datetime.datetime(2026, 1, 1)) == "2026-01-01T00:00:00+00:00"


def _timestamp(tmp_path, data):
    (tmp_path / "timestamp.txt").write_bytes(data)
    return times.nbgrader_time(str(tmp_path))


def test_timestamp_txt_of_1024_bytes_is_read_and_1025_is_not(tmp_path):
    line = b"2026-11-30 12:00:00.000000 UTC"
    assert _timestamp(tmp_path, line + b" " * (1024 - len(line))) == (
        "2026-11-30T12:00:00+00:00", None)
    assert _timestamp(tmp_path, line + b" " * (1025 - len(line))) == (
        "", "timestamp.txt could not be read (timestamp.txt is 1 KB; a timestamp over 1 KB is "
            "not accepted.)")


def test_timestamp_txt_missing_a_folder_a_link_or_not_a_time(tmp_path):
    assert times.nbgrader_time(str(tmp_path)) == ("", None)
    (tmp_path / "timestamp.txt").mkdir()
    assert times.nbgrader_time(str(tmp_path)) == ("", "timestamp.txt could not be read (it is a "
                                                      "folder)")
    os.rmdir(tmp_path / "timestamp.txt")
    (tmp_path / "real").write_text("2026-11-30 12:00:00")
    os.symlink(tmp_path / "real", tmp_path / "timestamp.txt")
    assert times.nbgrader_time(str(tmp_path)) == (
        "", "timestamp.txt could not be read (timestamp.txt is a symbolic link; upload the file "
            "itself.)")
    os.remove(tmp_path / "timestamp.txt")
    assert _timestamp(tmp_path, b"  last tuesday, " + b"x" * 100 + b"\n") == (
        "", "timestamp.txt does not hold a time the grader reads ('last tuesday, xx\\n[... cut "
            "by the grader: 54 more characters]')")   # 114 characters cut to 60
    assert times.nbgrader_time(str(tmp_path / "a\x00b")) == ("", None)


def test_a_timestamp_up_to_a_day_after_now_is_used_and_later_is_not(tmp_path):
    now = datetime.datetime.now(UTC).replace(microsecond=0)
    soon = now + datetime.timedelta(hours=23)
    assert _timestamp(tmp_path, soon.strftime("%Y-%m-%d %H:%M:%S UTC").encode()) == (
        soon.isoformat(), None)
    later = now + datetime.timedelta(hours=25)
    assert _timestamp(tmp_path, later.strftime("%Y-%m-%d %H:%M:%S UTC").encode()) == (
        "", f"timestamp.txt says {later.isoformat()}, after the time it was graded; not used")


def test_the_last_resort_is_the_newest_regular_file_directly_in_the_folder(tmp_path):
    folder = tmp_path / "hw"
    (folder / "sub").mkdir(parents=True)
    for name, when in (("a.py", 1_796_000_000), ("b.py", 1_796_000_500.75),
                       ("timestamp.txt", 1_797_000_000), ("sub/c.py", 1_798_000_000)):
        (folder / name).write_text("x")
        os.utime(folder / name, (when, when))
    os.symlink(folder / "sub" / "c.py", folder / "link.py")
    os.utime(folder / "link.py", (1_799_000_000, 1_799_000_000), follow_symlinks=False)
    # 1796000000 s after the epoch is 2026-11-30T00:53:20 UTC; + 500.75 s, the fraction dropped
    assert times.file_time(str(folder)) == "2026-11-30T01:01:40+00:00"
    assert times.file_time(str(folder / "a.py")) == "2026-11-30T00:53:20+00:00"
    assert times.file_time(str(folder / "link.py")) == ""
    assert times.file_time(str(folder / "sub" / "missing")) == ""
    assert times.file_time(str(tmp_path / "x\x00")) == ""
    (tmp_path / "empty").mkdir()
    assert times.file_time(str(tmp_path / "empty")) == ""


def test_the_oldest_file_first_does_not_hide_a_newer_one(tmp_path):
    for i, when in enumerate((1_796_000_000, 1_700_000_000, 1_796_000_100)):
        (tmp_path / f"{i}.py").write_text("x")
        os.utime(tmp_path / f"{i}.py", (when, when))
    assert times.file_time(str(tmp_path)) == "2026-11-30T00:55:00+00:00"


def test_only_the_first_1000_entries_of_a_folder_are_looked_at(tmp_path):
    for i in range(1001):
        (tmp_path / f"{i}.py").write_bytes(b"")
        os.utime(tmp_path / f"{i}.py", (1_796_000_000, 1_796_000_000))
    with os.scandir(tmp_path) as listing:       # the order file_time will see them in
        order = [entry.name for entry in listing]
    os.utime(tmp_path / order[1000], (1_797_000_000, 1_797_000_000))   # the 1001st: not seen
    assert times.file_time(str(tmp_path)) == "2026-11-30T00:53:20+00:00"
    os.utime(tmp_path / order[999], (1_797_000_000, 1_797_000_000))    # the 1000th: seen
    assert times.file_time(str(tmp_path)) == "2026-12-11T14:40:00+00:00"


@pytest.fixture
def tmpfs():
    """A folder on tmpfs, which keeps any 64-bit modification time (ext4 clamps them)."""
    import shutil
    import tempfile
    if not os.access("/dev/shm", os.W_OK | os.X_OK):
        pytest.skip("no writable /dev/shm (tmpfs) here")
    folder = tempfile.mkdtemp(prefix="attnkit-times-", dir="/dev/shm")
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.parametrize("when", [1e12, -1e12, 1e17])   # year 33658, before year 1, beyond
def test_a_modification_time_no_calendar_holds_gives_no_time(tmpfs, when):
    path = os.path.join(tmpfs, "a.py")
    open(path, "wb").close()
    os.utime(path, (when, when))
    if os.lstat(path).st_mtime != when:
        pytest.skip("this /dev/shm does not keep such a time")
    assert times.file_time(path) == ""
    assert times.file_time(tmpfs) == ""


def test_a_folder_gone_between_its_lstat_and_its_listing_gives_no_time(tmp_path, monkeypatch):
    folder = tmp_path / "hw"
    folder.mkdir()
    (folder / "a.py").write_text("x")
    real = os.lstat

    def lstat_then_remove(path, *args, **kwargs):   # the folder really goes, at that moment
        result = real(path, *args, **kwargs)
        if os.fspath(path) == str(folder):
            os.remove(folder / "a.py")
            os.rmdir(folder)
        return result
    monkeypatch.setattr(times.os, "lstat", lstat_then_remove)
    assert times.file_time(str(folder)) == ""
