"""Unpack a submitted zip without trusting it.

Nothing is written outside the extraction folder: entries with absolute paths, drive
letters or `..` components are refused, symlinks are skipped, and the sizes are capped
both as declared and as actually read (a zip bomb declares small sizes and inflates).
Archive junk (`__MACOSX/`, `.DS_Store`, `__pycache__`) is dropped. Names stored in GBK
by Chinese Windows zip tools are decoded. The archive itself is opened like any other
upload (safeio: a regular file, not through a link, at most MAX_ZIP_BYTES), and the
intake deadline is checked while it is unpacked.
"""
import dataclasses
import os
import stat
import zipfile
import zlib

from ..i18n import N_, _
from .errors import IntakeError
from .safeio import INTAKE_SECONDS, Deadline, kind_of, open_submitted, refusal, shown, too_large

try:
    from lzma import LZMAError
except ImportError:  # a Python built without lzma cannot open such entries at all
    LZMAError = NotImplementedError

MAX_ENTRIES = 2000
MAX_TOTAL_BYTES = 64 * 1024 * 1024
MAX_ENTRY_BYTES = 16 * 1024 * 1024
MAX_ZIP_BYTES = 64 * 1024 * 1024   # the archive as uploaded
READ_ERRORS = (zipfile.BadZipFile, zlib.error, LZMAError, EOFError, OSError, RuntimeError,
               NotImplementedError)  # what a damaged entry raises while it is read
JUNK = ("__MACOSX/", ".DS_Store", "__pycache__/", ".ipynb_checkpoints/", ".git/", "Thumbs.db")


def _entry_name(info):
    name = info.filename
    if not info.flag_bits & 0x800:  # not flagged UTF-8: stored as cp437, often really GBK
        try:                         # (or UTF-8 unflagged, as macOS Archive Utility writes)
            raw = name.encode("cp437")
        except UnicodeEncodeError:
            raw = None
        for encoding in ("utf-8", "gbk") if raw else ():
            try:
                name = raw.decode(encoding)
                break
            except UnicodeDecodeError:
                pass
    return name.replace("\\", "/")


def _is_junk(name):
    parts = name.split("/")
    return any(("/".join(parts[i:]) + ("/" if i < len(parts) - 1 else "")).startswith(JUNK)
               or part in (".DS_Store", "Thumbs.db") or part.startswith("._")
               for i, part in enumerate(parts))


def _safe_parts(name):
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if name.startswith("/") or (parts and len(parts[0]) == 2 and parts[0][1] == ":"):
        return None
    if any(p == ".." for p in parts):
        return None
    return parts


def extract(zip_path, dest, label, deadline=None, fd=None, limits=None):
    """Extract `zip_path` (already open as `fd`, if given) into `dest`; returns notes for
    the student. limits: (entries, total bytes, zip bytes) instead of a student's upload's
    (MAX_ENTRIES, MAX_TOTAL_BYTES, MAX_ZIP_BYTES), for an LMS's whole download."""
    entries, total, zip_bytes = limits or (MAX_ENTRIES, MAX_TOTAL_BYTES, MAX_ZIP_BYTES)
    deadline = deadline or Deadline(INTAKE_SECONDS, label)
    own = fd is None
    if own:
        fd, is_folder = open_submitted(os.path.normpath(zip_path), label)
        if is_folder:
            os.close(fd)
            raise IntakeError(_("{label} is a folder, not a zip archive.").format(label=label))
    try:
        info = os.fstat(fd)
        if kind_of(info.st_mode):
            raise IntakeError(refusal(label, kind_of(info.st_mode)))
        if info.st_size > zip_bytes:
            raise IntakeError(too_large(label, info.st_size, zip_bytes, N_("zip archive")))
        with open(os.dup(fd), "rb") as handle:
            handle.seek(0)
            return _extract(handle, dest, label, deadline, entries, total)
    finally:
        if own:
            os.close(fd)


def _extract(handle, dest, label, deadline, max_entries=MAX_ENTRIES, max_total=MAX_TOTAL_BYTES):
    """The notes of unpacking the zip read from `handle` into the folder `dest` (`label`: its
    name as shown) before `deadline`: at most max_entries entries and max_total bytes, or
    IntakeError; entries that are junk, too big, links, outside it or unwritable are skipped."""
    try:
        archive = zipfile.ZipFile(handle)
    except Exception as error:  # BadZipFile, but also ValueError, UnicodeDecodeError, ... on damage
        raise IntakeError(_("{label} is not a readable zip archive ({reason}).").format(
            label=label, reason=shown(str(error) or type(error).__name__, 300))) from None
    with archive:
        entries = archive.infolist()
        if len(entries) > max_entries:
            raise IntakeError(_("{label} has {count} entries; at most {max} are accepted.").format(
                label=label, count=len(entries), max=max_entries))
        declared = sum(e.file_size for e in entries)
        if declared > max_total:
            raise IntakeError(_("{label} would unpack to {mb} MB; at most {max} MB are "
                                "accepted.").format(label=label, mb=declared // 2**20,
                                                    max=max_total // 2**20))
        tally = _Tally()
        root = os.path.realpath(dest)
        for info in entries:
            deadline.check()
            _unpack(archive, info, root, label, deadline, tally, max_total)
        notes = tally.notes(label)
    return notes


@dataclasses.dataclass
class _Tally:
    """What unpacking an archive skipped, by reason, and the bytes it wrote in all."""
    junk: int = 0
    refused: list = dataclasses.field(default_factory=list)
    too_big: list = dataclasses.field(default_factory=list)
    unwritable: list = dataclasses.field(default_factory=list)
    total: int = 0

    def notes(self, label):
        """The student's notes on what was skipped from the archive `label`."""
        notes = []
        if self.junk:
            notes.append(_("{label}: ignored {count} archive junk entries (__MACOSX, .DS_Store, "
                           "caches).").format(label=label, count=self.junk))
        if self.too_big:
            notes.append(_("{label}: skipped {count} files over {mb} MB ({files}); the grader "
                           "unpacks only smaller files.").format(
                               label=label, count=len(self.too_big), mb=MAX_ENTRY_BYTES // 2**20,
                               files=", ".join(self.too_big[:5])))
        if self.unwritable:
            notes.append(_("{label}: {count} entries could not be unpacked under their names "
                           "({files}); they were skipped.").format(
                               label=label, count=len(self.unwritable),
                               files=", ".join(self.unwritable[:5])))
        if self.refused:
            listed = ", ".join(self.refused[:5])
            notes.append(_("{label}: refused {count} entries that point outside the archive or "
                           "are links ({files}); nothing was written for them.").format(
                               label=label, count=len(self.refused), files=listed))
        return notes


def _unpack(archive, info, root, label, deadline, tally, max_total):
    """Unpack the entry `info` of `archive` under the folder `root` (its real path), or
    count it in `tally` as skipped: junk, a link, outside root, too big, unwritable."""
    name = _entry_name(info)
    if _is_junk(name):
        tally.junk += 1
        return
    parts = _safe_parts(name)
    mode = info.external_attr >> 16
    if parts is None or stat.S_ISLNK(mode):
        tally.refused.append(shown(name, 200))
        return
    if not parts:
        return
    target = os.path.realpath(os.path.join(root, *parts))
    if not target.startswith(root + os.sep):
        tally.refused.append(shown(name, 200))
        return
    if info.file_size > MAX_ENTRY_BYTES and not info.is_dir():  # a dataset beside the code
        tally.too_big.append(shown(name, 200))
        return
    try:  # names the file system refuses: too long, a file where a folder must go, ...
        if info.is_dir():
            os.makedirs(target, exist_ok=True)
            return
        os.makedirs(os.path.dirname(target), exist_ok=True)
        out = open(target, "wb")
    except (OSError, ValueError):
        tally.unwritable.append(shown(name, 200))
        return
    _inflate(archive, info, out, name, label, deadline, tally, max_total)


def _inflate(archive, info, out, name, label, deadline, tally, max_total):
    """Write the entry `info` (named `name`) of `archive` into the open file `out`, which it
    closes; IntakeError when it inflates past MAX_ENTRY_BYTES, the archive past max_total
    (tally.total: the bytes all entries wrote), or cannot be read."""
    written = 0
    try:
        with out, archive.open(info) as source:
            while True:
                deadline.check()
                chunk = source.read(1 << 16)
                if not chunk:
                    break
                written += len(chunk)
                tally.total += len(chunk)
                if written > MAX_ENTRY_BYTES or tally.total > max_total:
                    raise IntakeError(
                        _("{label} inflates far beyond the sizes it declares (a zip "
                          "bomb?); it was not unpacked.").format(label=label))
                out.write(chunk)
    except READ_ERRORS as error:
        raise IntakeError(_("{label}: the entry {entry} could not be read ({reason}).").format(
            label=label, entry=repr(shown(name, 200)),
            reason=shown(str(error) or type(error).__name__, 300))) from None
