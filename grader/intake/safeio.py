"""Read an upload without trusting it: regular files only, never through a link.

Everything intake reads goes through here. The submitted path is looked at with lstat (a
command-line path that is a symbolic link is refused, not followed); a folder is walked
with directory file descriptors, each one opened with O_NOFOLLOW, so no folder on the way
can be a link; a file is opened relative to its folder with O_NOFOLLOW | O_NONBLOCK, and
fstat on the open descriptor must say it is the regular file the walk saw, so nothing can
be swapped in between the check and the read. Named pipes, sockets and devices are never
opened. At most `limit + 1` bytes are ever read. The walk is bounded (entries, depth) and
the whole intake of one submission has a wall-clock deadline, checked as it goes.
"""
import dataclasses
import errno
import os
import stat
import time

from ..i18n import N_, _
from ..textsafety import safe_text
from .errors import IntakeError
from .naming import file_names, module_name

INTAKE_SECONDS = 30          # one submission's intake, walk + unzip + reads
MAX_WALK_ENTRIES = 10_000    # files and folders visited in a submitted folder
MAX_DEPTH = 32               # folders deeper than this are not walked
CHUNK = 1 << 16

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY

SYMLINK = N_("a symbolic link")


class IntakeTimeout(IntakeError):
    """The deadline passed: the whole submission is refused, not one file skipped."""


class Deadline:
    """The time one submission's intake may take. `module_file`: the file the student was
    asked for (`<module>.py`), named when the messages tell them what to upload; None: the
    default assignment's."""

    def __init__(self, seconds, label, module_file=None):
        self.seconds, self.label = seconds, label
        self._module_file = module_file
        self.end = time.monotonic() + seconds

    @property
    def module_file(self):
        return self._module_file or file_names(module_name())[0]

    def check(self):
        if time.monotonic() > self.end:
            raise IntakeTimeout(
                _("{label}: reading the submission took longer than {seconds} s, the limit; "
                  "upload only your code ({module} and its helper files).").format(
                      label=self.label, seconds=f"{self.seconds:g}", module=self.module_file))


def shown(name, limit=200):
    """A name from the upload, fit for a message (surrogates, control characters removed)."""
    return safe_text(name, limit)


def kind_of(mode):
    """None for a regular file, else what it is, in words a student understands."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISLNK(mode):
        return SYMLINK
    if stat.S_ISDIR(mode):
        return N_("a folder")
    if stat.S_ISFIFO(mode):
        return N_("a named pipe")
    if stat.S_ISSOCK(mode):
        return N_("a socket")
    if stat.S_ISCHR(mode):
        return N_("a device")
    if stat.S_ISBLK(mode):
        return N_("a block device")
    return N_("not a regular file")


def kind_text(kind):
    """What kind_of said, in the student's language (kind_of's English is what code compares)."""
    return _(kind) if kind else kind


_EXPLAINED = {"a named pipe": N_("a named pipe (FIFO)"), "a device": N_("a device (like /dev/zero)"),
              "a block device": N_("a block device (a disk)")}


def refusal(label, kind):
    if kind == SYMLINK:
        return _("{label} is a symbolic link; upload the file itself.").format(label=label)
    if kind == "not a regular file":
        return _("{label} is not a regular file; upload the file itself.").format(label=label)
    return _("{label} is {kind}, not a file; the grader reads only regular files. Upload the "
             "file itself.").format(label=label, kind=_(_EXPLAINED.get(kind, kind)))


def _amount(size):
    return f"{size // 2**20} MB" if size >= 4 * 2**20 else f"{size // 1024} KB"


def too_large(label, size, limit, what=N_("file")):
    """`what`: marked with N_ by the caller ("zip archive", "notebook"...), translated here."""
    return _("{label} is {size}; a {what} over {limit} is not accepted.").format(
        label=label, size=_amount(size), what=_(what), limit=_amount(limit))


def _reason(error):
    return os.strerror(error.errno) if error.errno else type(error).__name__


def open_submitted(path, label):
    """(descriptor, is_folder) for the path given on the command line, never through a link."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        raise IntakeError(_("{path} does not exist.").format(path=shown(path, 500))) from None
    except OSError as error:
        raise IntakeError(_("{label} could not be read ({reason}).").format(
            label=label, reason=_reason(error))) from None
    except ValueError:  # a NUL in the name
        raise IntakeError(_("{label} could not be read (its name is not a valid file "
                            "name).").format(label=label)) from None
    kind = kind_of(info.st_mode)
    if kind not in (None, "a folder"):
        raise IntakeError(refusal(label, kind))
    is_folder = kind == "a folder"
    try:
        fd = os.open(path, DIR_FLAGS if is_folder else FILE_FLAGS)
    except OSError as error:
        raise IntakeError(_open_failure(label, error)) from None
    opened = os.fstat(fd)
    if (opened.st_dev, opened.st_ino) != (info.st_dev, info.st_ino) or \
            stat.S_IFMT(opened.st_mode) != stat.S_IFMT(info.st_mode):
        os.close(fd)
        raise IntakeError(_("{label} changed while the grader was reading it; upload it "
                            "again.").format(label=label))
    return fd, is_folder


def _open_failure(label, error):
    if error.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
        return _("{label} is (or lies in a folder that is) a symbolic link; upload the file "
                 "itself.").format(label=label)
    if error.errno == errno.ENXIO:
        return refusal(label, "a socket")  # what open() says of one
    return _("{label} could not be read ({reason}).").format(label=label, reason=_reason(error))


def read_fd(fd, limit, label, deadline, what="file"):
    """The bytes of the open regular file `fd`: at most `limit`, or IntakeError."""
    info = os.fstat(fd)
    kind = kind_of(info.st_mode)
    if kind:
        raise IntakeError(refusal(label, kind))
    if info.st_size > limit:
        raise IntakeError(too_large(label, info.st_size, limit, what))
    chunks, total = [], 0
    while True:
        deadline.check()
        try:
            chunk = os.read(fd, min(CHUNK, limit + 1 - total))
        except BlockingIOError:
            raise IntakeError(refusal(label, "not a regular file")) from None
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        total += len(chunk)
        if total > limit:  # it grew while it was read
            raise IntakeError(too_large(label, total, limit, what))


@dataclasses.dataclass
class Entry:
    """One thing found in a submitted folder (folders themselves are not entries)."""
    parts: tuple          # path components relative to the submitted folder
    kind: str = None      # None: a regular file; else what it is (kind_of)
    size: int = 0

    @property
    def name(self):
        return self.parts[-1]

    @property
    def depth(self):
        return len(self.parts) - 1

    @property
    def shown(self):
        return shown("/".join(self.parts), 500)


def walk(root_fd, label, deadline, skip_dir):
    """(entries, notes) for the folder open as `root_fd`: every non-folder entry, regular or
    not, in os.walk's top-down order; folders for which `skip_dir(name)` is true, links to
    folders and folders deeper than MAX_DEPTH are not entered."""
    entries, too_deep, unreadable = [], [], []
    visited = 0

    def visit(fd, prefix):
        nonlocal visited
        items = []
        with os.scandir(fd) as listing:
            for item in listing:
                visited += 1
                if visited > MAX_WALK_ENTRIES:
                    raise IntakeError(_("{label} holds more than {count} files and folders; "
                                        "upload only your code ({module} and its helper "
                                        "files).").format(label=label, count=MAX_WALK_ENTRIES,
                                                          module=deadline.module_file))
                if visited % 64 == 0:
                    deadline.check()
                items.append(item)
        folders = []
        for item in sorted(items, key=lambda i: i.name):
            try:
                info = item.stat(follow_symlinks=False)
            except OSError:  # gone since it was listed
                continue
            if stat.S_ISDIR(info.st_mode):
                if not skip_dir(item.name):
                    folders.append((item.name, info))
            else:
                entries.append(Entry(prefix + (item.name,), kind_of(info.st_mode), info.st_size))
        for name, info in folders:
            deadline.check()
            parts = prefix + (name,)
            if len(parts) > MAX_DEPTH:
                too_deep.append(parts)
                continue
            try:
                sub = os.open(name, DIR_FLAGS, dir_fd=fd)
            except OSError:  # swapped for a link, or unreadable
                unreadable.append(parts)
                continue
            try:
                opened = os.fstat(sub)
                if (opened.st_dev, opened.st_ino) != (info.st_dev, info.st_ino):
                    unreadable.append(parts)
                    continue
                visit(sub, parts)
            finally:
                os.close(sub)

    visit(root_fd, ())
    notes = []
    if too_deep:
        notes.append(_("{label}: folders nested deeper than {depth} levels were not read "
                       "({folders}).").format(
                           label=label, depth=MAX_DEPTH,
                           folders=", ".join(shown("/".join(p), 200) for p in too_deep[:3])))
    if unreadable:
        notes.append(_("{label}: {count} folders could not be read ({folders}).").format(
            label=label, count=len(unreadable),
            folders=", ".join(shown("/".join(p), 200) for p in unreadable[:3])))
    return entries, notes


def open_entry(root_fd, entry, label):
    """A descriptor of the regular file `entry` under the folder open as `root_fd`, opened
    component by component without following any link; IntakeError if it is not (any more)
    a regular file. The caller closes it."""
    opened = []
    try:
        fd = root_fd
        for part in entry.parts[:-1]:
            fd = os.open(part, DIR_FLAGS, dir_fd=fd)
            opened.append(fd)
        info = os.stat(entry.name, dir_fd=fd, follow_symlinks=False)
        kind = kind_of(info.st_mode)
        if kind:
            raise IntakeError(refusal(label, kind))
        handle = os.open(entry.name, FILE_FLAGS, dir_fd=fd)
        now = os.fstat(handle)
        if (now.st_dev, now.st_ino) != (info.st_dev, info.st_ino):
            os.close(handle)
            raise IntakeError(_("{label} changed while the grader was reading it; upload it "
                                "again.").format(label=label))
        return handle
    except OSError as error:
        raise IntakeError(_open_failure(label, error)) from None
    finally:
        for fd in reversed(opened):
            os.close(fd)


def read_entry(root_fd, entry, limit, label, deadline, what="file"):
    """The bytes of `entry` under the folder open as `root_fd` (see open_entry)."""
    handle = open_entry(root_fd, entry, label)
    try:
        return read_fd(handle, limit, label, deadline, what)
    except OSError as error:
        raise IntakeError(_open_failure(label, error)) from None
    finally:
        os.close(handle)
