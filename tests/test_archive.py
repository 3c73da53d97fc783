"""grader/intake/archive.py at its edges (issue 19): each documented cap (2000 entries, 64 MB
declared, 16 MB an entry, 64 MB the zip itself) as a literal and on both sides, each refusal
and note by its whole text, and the names a zip may carry (junk, Windows separators, `.`
parts, drive letters), on real zips extracted into tmp_path."""
import io
import os
import stat
import zipfile

import pytest

from grader.intake import IntakeError, archive

CODE = b"X = 1\n"


def _zip(path, entries, method=zipfile.ZIP_DEFLATED):
    """entries: (name or ZipInfo, bytes) pairs, in order."""
    with zipfile.ZipFile(path, "w", method) as zf:
        for name, data in entries:
            zf.writestr(name, data)
    return str(path)


def _extract(tmp_path, upload, limits=None):
    dest = tmp_path / "out"
    dest.mkdir(exist_ok=True)
    return archive.extract(upload, str(dest), "hw.zip", limits=limits), dest


def _files(dest):
    return sorted(os.path.relpath(os.path.join(d, f), dest)
                  for d, _, files in os.walk(dest) for f in files)


def _refused(tmp_path, upload, limits=None):
    with pytest.raises(IntakeError) as error:
        _extract(tmp_path, upload, limits)
    return str(error.value)


def test_the_documented_caps():
    assert archive.MAX_ENTRIES == 2000
    assert archive.MAX_TOTAL_BYTES == 67_108_864        # 64 MB unpacked
    assert archive.MAX_ENTRY_BYTES == 16_777_216        # 16 MB one entry
    assert archive.MAX_ZIP_BYTES == 67_108_864          # 64 MB the upload


def test_2000_entries_are_accepted_and_2001_refused(tmp_path):
    junk = [(f"__MACOSX/._{i}", b"") for i in range(1999)]
    ok = _zip(tmp_path / "ok.zip", [("attention.py", CODE)] + junk)
    notes, dest = _extract(tmp_path, ok)
    assert _files(dest) == ["attention.py"]
    assert notes == ["hw.zip: ignored 1999 archive junk entries (__MACOSX, .DS_Store, caches)."]
    many = _zip(tmp_path / "many.zip", [("attention.py", CODE)] + junk + [("__MACOSX/._x", b"")])
    assert _refused(tmp_path, many) == "hw.zip has 2001 entries; at most 2000 are accepted."


def _declaring(path, sizes):
    """A zip of entries of zeros of these sizes (deflated: a few KB each)."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for i, size in enumerate(sizes):
            with zf.open(f"d{i}.bin", "w", force_zip64=True) as out:
                for start in range(0, size, 1 << 22):
                    out.write(bytes(min(1 << 22, size - start)))
    return str(path)


def test_64_mb_declared_in_all_is_the_cap(tmp_path):
    # 4 x 16 MB + 1 byte: each entry within its own cap, the sum one byte over 64 MB
    upload = _declaring(tmp_path / "big.zip", [16 * 2**20] * 4 + [1])
    assert _refused(tmp_path, upload) == ("hw.zip would unpack to 64 MB; at most 64 MB are "
                                          "accepted.")
    assert os.listdir(tmp_path / "out") == []  # refused before anything was written


def test_an_entry_of_16_mb_is_unpacked_and_one_byte_more_skipped(tmp_path):
    upload = _declaring(tmp_path / "data.zip", [16 * 2**20, 16 * 2**20 + 1])
    notes, dest = _extract(tmp_path, upload)
    assert _files(dest) == ["d0.bin"] and os.path.getsize(dest / "d0.bin") == 16 * 2**20
    assert notes == ["hw.zip: skipped 1 files over 16 MB (d1.bin); the grader unpacks only "
                     "smaller files."]


def test_each_cap_given_as_limits_holds_on_both_sides(tmp_path):
    # an LMS download passes its own (entries, total bytes, zip bytes)
    three = _zip(tmp_path / "three.zip", [("a.py", b"a" * 40), ("b.py", b"b" * 40),
                                          ("c.py", b"c" * 20)], zipfile.ZIP_STORED)
    size = os.path.getsize(three)
    notes, dest = _extract(tmp_path, three, limits=(3, 100, size))
    assert _files(dest) == ["a.py", "b.py", "c.py"] and notes == []
    assert _refused(tmp_path, three, (2, 100, size)) == (
        "hw.zip has 3 entries; at most 2 are accepted.")
    assert _refused(tmp_path, three, (3, 99, size)) == (
        "hw.zip would unpack to 0 MB; at most 0 MB are accepted.")
    assert _refused(tmp_path, three, (3, 100, size - 1)) == (
        f"hw.zip is {size // 1024} KB; a zip archive over {(size - 1) // 1024} KB is not "
        "accepted.")


def test_a_zip_of_exactly_64_mb_is_opened_and_one_byte_more_is_not(tmp_path):
    upload = tmp_path / "sparse.zip"
    with open(upload, "wb") as handle:
        handle.truncate(64 * 2**20)          # at the cap: opened (and found not to be a zip)
    assert _refused(tmp_path, str(upload)) == ("hw.zip is not a readable zip archive (File is "
                                               "not a zip file).")
    with open(upload, "wb") as handle:
        handle.truncate(64 * 2**20 + 1)
    assert _refused(tmp_path, str(upload)) == ("hw.zip is 64 MB; a zip archive over 64 MB is "
                                               "not accepted.")


def test_a_folder_or_a_link_given_as_the_zip_is_refused_by_name(tmp_path):
    (tmp_path / "folder.zip").mkdir()
    assert _refused(tmp_path, str(tmp_path / "folder.zip")) == (
        "hw.zip is a folder, not a zip archive.")
    real = _zip(tmp_path / "real.zip", [("attention.py", CODE)])
    os.symlink(real, tmp_path / "link.zip")
    assert _refused(tmp_path, str(tmp_path / "link.zip")) == (
        "hw.zip is a symbolic link; upload the file itself.")


def test_an_open_descriptor_that_is_not_a_file_is_refused(tmp_path):
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        with pytest.raises(IntakeError) as error:
            archive.extract(None, str(tmp_path), "hw.zip", fd=fd)
    finally:
        os.close(fd)
    assert str(error.value) == ("hw.zip is a folder, not a file; the grader reads only regular "
                                "files. Upload the file itself.")


def test_junk_is_counted_and_never_written(tmp_path):
    junk = ["__MACOSX/._attention.py", "hw/__MACOSX/x.py", ".DS_Store", "hw/.DS_Store",
            "hw/Thumbs.db", "hw/._attention.py", "hw/__pycache__/a.pyc", "__pycache__/b.pyc",
            ".ipynb_checkpoints/attention-checkpoint.ipynb", "hw/.git/config"]
    kept = ["hw/attention.py", "hw/git/config.py", "hw/__MACOSX", "hw/pycache.py",
            "hw/my.DS.py", "hw/_attention.py"]
    upload = _zip(tmp_path / "j.zip", [(name, CODE) for name in junk + kept])
    notes, dest = _extract(tmp_path, upload)
    assert _files(dest) == sorted(kept)
    assert notes == ["hw.zip: ignored 10 archive junk entries (__MACOSX, .DS_Store, caches)."]


def test_names_are_read_as_the_tools_wrote_them(tmp_path):
    upload = _zip(tmp_path / "n.zip", [("hw\\sub\\attention.py", CODE), ("./hw/./b.py", CODE),
                                       ("hw/empty/", b""), ("./", b""), ("c:evil.py", CODE)])
    notes, dest = _extract(tmp_path, upload)
    assert _files(dest) == ["c:evil.py", "hw/b.py", "hw/sub/attention.py"]
    assert os.path.isdir(dest / "hw" / "empty") and notes == []


def test_refusals_list_the_first_five_names_and_count_all(tmp_path):
    bad = ["/abs.py", "../up.py", "C:/drive.py", "d:\\x.py", "a/../../b.py", "z/../../../c.py"]
    link = zipfile.ZipInfo("link.py")
    link.create_system = 3
    link.external_attr = (stat.S_IFLNK | 0o777) << 16
    upload = _zip(tmp_path / "r.zip", [(name, CODE) for name in bad] + [(link, b"/etc/passwd"),
                                                                          ("attention.py", CODE)])
    notes, dest = _extract(tmp_path, upload)
    assert _files(dest) == ["attention.py"]
    assert notes == ["hw.zip: refused 7 entries that point outside the archive or are links "
                     "(/abs.py, ../up.py, C:/drive.py, d:/x.py, a/../../b.py); nothing was "
                     "written for them."]


def test_a_refused_name_is_cut_at_200_characters(tmp_path):
    upload = _zip(tmp_path / "long.zip", [("../" + "x" * 300, CODE)])
    notes, _ = _extract(tmp_path, upload)
    listed = notes[0].split("(", 1)[1].rsplit("); nothing", 1)[0]
    assert len(listed) == 200 and listed.startswith("../xxx")
    assert listed.endswith("[... cut by the grader: 103 more characters]")


def test_unwritable_entries_are_noted_five_by_name(tmp_path):
    entries = [("f", CODE)] + [(f"f/{i}.py", CODE) for i in range(6)] + [("attention.py", CODE)]
    notes, dest = _extract(tmp_path, _zip(tmp_path / "u.zip", entries))
    assert _files(dest) == ["attention.py", "f"]
    assert notes == ["hw.zip: 6 entries could not be unpacked under their names (f/0.py, "
                     "f/1.py, f/2.py, f/3.py, f/4.py); they were skipped."]


def test_a_damaged_archive_and_a_damaged_entry_say_what_failed(tmp_path):
    garbage = tmp_path / "g.zip"
    garbage.write_bytes(b"PK\x05\x06" + b"\x00" * 10)
    assert _refused(tmp_path, str(garbage)).startswith("hw.zip is not a readable zip archive (")
    stored = _zip(tmp_path / "s.zip", [("attention.py", b"A" * 100)], zipfile.ZIP_STORED)
    blob = bytearray(open(stored, "rb").read())
    blob[30 + len("attention.py") + 5] ^= 0xFF     # one byte of the stored content
    open(stored, "wb").write(bytes(blob))
    assert _refused(tmp_path, stored) == ("hw.zip: the entry 'attention.py' could not be read "
                                          "(Bad CRC-32 for file 'attention.py').")


def test_the_zip_is_read_from_its_start_whatever_the_descriptor_did(tmp_path):
    upload = _zip(tmp_path / "a.zip", [("attention.py", CODE)])
    fd = os.open(upload, os.O_RDONLY)
    try:
        os.read(fd, 7)   # the caller's descriptor is not at 0
        dest = tmp_path / "out"
        dest.mkdir()
        assert archive.extract(None, str(dest), "a.zip", fd=fd) == []
        assert (dest / "attention.py").read_bytes() == CODE
    finally:
        os.close(fd)


def test_a_zip_inside_a_bytes_buffer_reads_the_same(tmp_path):
    # the lower level takes any binary handle (what extract opens from its descriptor)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        zf.writestr("attention.py", CODE)
    dest = tmp_path / "out"
    dest.mkdir()
    deadline = archive.Deadline(30, "b.zip")
    assert archive._extract(buffer, str(dest), "b.zip", deadline) == []
    assert (dest / "attention.py").read_bytes() == CODE


def _declare_sizes(path, size):
    """Rewrite every entry's declared uncompressed size in the central directory (what
    infolist() reads) to `size`; the data stays small."""
    blob = bytearray(open(path, "rb").read())
    at = blob.find(b"PK\x01\x02")
    while at != -1:
        blob[at + 24: at + 28] = size.to_bytes(4, "little")
        at = blob.find(b"PK\x01\x02", at + 4)
    open(path, "wb").write(bytes(blob))


def test_files_over_16_mb_are_listed_five_by_name_each_cut_at_200(tmp_path):
    names = ["L" * 250 + ".npy"] + [f"d{i}.npy" for i in range(5)]
    upload = _zip(tmp_path / "big.zip", [(name, b"0") for name in names])
    _declare_sizes(upload, 16 * 2**20 + 1)
    notes, dest = _extract(tmp_path, upload, limits=(2000, 2**30, 2**30))
    assert _files(dest) == []
    long = "L" * 156 + "\n[... cut by the grader: 54 more characters]"
    assert len(long) == 200
    assert notes == [f"hw.zip: skipped 6 files over 16 MB ({long}, d0.npy, d1.npy, d2.npy, "
                     "d3.npy); the grader unpacks only smaller files."]


def test_a_damaged_entry_with_a_long_name_is_named_in_200_and_its_reason_in_300(tmp_path):
    name = "N" * 200 + "/" + "M" * 199      # 400 characters, each part a valid file name
    stored = _zip(tmp_path / "s.zip", [(name, b"A" * 100)], zipfile.ZIP_STORED)
    blob = bytearray(open(stored, "rb").read())
    blob[30 + len(name) + 5] ^= 0xFF
    open(stored, "wb").write(bytes(blob))
    entry = "N" * 155 + "\n[... cut by the grader: 200 more characters]"
    reason = ("Bad CRC-32 for file '" + "N" * 200 + "/" + "M" * 33 +
              "\n[... cut by the grader: 122 more characters]")
    assert len(entry) == 200 and len(reason) == 300
    assert _refused(tmp_path, stored) == (f"hw.zip: the entry {entry!r} could not be read "
                                          f"({reason}).")


def test_a_link_already_in_the_destination_is_never_written_through(tmp_path):
    # the second guard: whatever the names, nothing is written where the resolved path
    # leaves the destination (here a link some earlier step left in it)
    outside = tmp_path / "outside"
    outside.mkdir()
    dest = tmp_path / "out"
    dest.mkdir()
    os.symlink(outside, dest / "hw")
    long = "hw/" + "n" * 250
    upload = _zip(tmp_path / "l.zip", [("hw/attention.py", CODE), (long, CODE), ("ok.py", CODE)])
    notes = archive.extract(upload, str(dest), "hw.zip")
    assert os.listdir(outside) == [] and (dest / "ok.py").read_bytes() == CODE
    cut = long[:156] + "\n[... cut by the grader: 53 more characters]"   # 253 cut to 200
    assert notes == [f"hw.zip: refused 2 entries that point outside the archive or are links "
                     f"(hw/attention.py, {cut}); nothing was written for them."]


def test_an_unwritable_name_is_noted_cut_at_200(tmp_path):
    long = "f/" + "x" * 250
    notes, dest = _extract(tmp_path, _zip(tmp_path / "w.zip", [("f", CODE), (long, CODE)]))
    assert _files(dest) == ["f"]
    cut = long[:156] + "\n[... cut by the grader: 52 more characters]"   # 252 cut to 200
    assert notes == [f"hw.zip: 1 entries could not be unpacked under their names ({cut}); they "
                     "were skipped."]
