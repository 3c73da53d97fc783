"""A submission as it arrived: the record each platform (grader/platforms/) fills for one
student (the path to grade, the row's name, the student's id and display name, when it was
handed in, what to flag) and what every platform reads a download with.

- `Submission`, `Batch`: what `grader.platforms.resolve` returns and grade_batch takes; a
  Submission's `provenance()` is what the result of grading it carries (outcomes.py).
- `student_id`, `display_name`: an id and a name from text someone else chose (a file
  name, an LMS's metadata), made safe and capped (MAX_ID, MAX_DISPLAY).
- `plain(paths, module)`: one Submission per path, named after it (the plain layout).
- `non_submission(name)`: files an LMS or an operating system adds (NON_SUBMISSIONS),
  never a student's work.
- An LMS's download given as its zip: `zip_names` lists it (opened like any upload),
  `unpack_download` unpacks it with archive.py's checks (entries hostile: no `..`, no links,
  capped sizes) into a temporary folder removed when the process ends, each file keeping the
  time its entry carries, read in local time as `unzip` does (`keep_entry_times`);
  `unpacked(path)` says a path lies in such a folder, and `shown_source` names a row's
  source as the zip and its entry, never that folder.
- `listing`, `lstat`, `is_dir`, `base_name`, `shown`: a folder listed at most MAX_ENTRIES
  deep, never through a link; a name cut to MAX_NAME before any pattern sees it; a name for
  one line of a note.
"""
import atexit
import dataclasses
import os
import re
import shutil
import stat
import tempfile
import time
import unicodedata
import zipfile

from ..outcomes import Provenance
from ..textsafety import safe_text
from . import submission_names
from .archive import _entry_name, _is_junk, _safe_parts, extract
from .errors import IntakeError
from .safeio import Deadline, open_submitted

MAX_NAME = 255               # characters of a file name any pattern looks at
MAX_ENTRIES = 10_000         # entries listed in one folder
MAX_ID = 100                 # characters of a student id
MAX_DISPLAY = 200            # characters of a display name
# what an LMS or an operating system adds (Gradescope's metadata is read, never graded)
NON_SUBMISSIONS = frozenset({"index.html", "submission_metadata.yml", ".ds_store", "__macosx",
                             "thumbs.db", "desktop.ini", ".ipynb_checkpoints", "__pycache__"})
ID_CHARS = re.compile(r"[^A-Za-z0-9._@+\-]")
DOWNLOAD_ZIP_BYTES = 1024 * 1024 * 1024   # an LMS's whole download, given as its zip
DOWNLOAD_ENTRIES = 20_000


@dataclasses.dataclass
class Submission:
    path: str                     # what intake stages
    name: str                     # the row's name (unique in the batch; the folder asks for it)
    student_id: str = ""
    student_name: str = ""
    layout: str = "plain"
    notes: list = dataclasses.field(default_factory=list)  # for the student's feedback too
    submitted_at: str = ""        # ISO 8601 with an offset, or "" when unknown
    time_source: str = ""         # gradescope-metadata | nbgrader-timestamp | moodle-file-time | file-mtime | ""
    late_flag: object = None      # True/False when the LMS itself said (Canvas's LATE), else None
    flags: list = dataclasses.field(default_factory=list)  # identity warnings, for the instructor
    companions: tuple = ()        # ((earlier module, path), ...): the student's own earlier
                                  # module, uploaded as a file of its own (resolve's `earlier`)

    def provenance(self):
        """Who and when, as the result of grading it carries them (outcomes.Provenance)."""
        return Provenance(self.student_id, self.student_name, self.layout,
                          self.submitted_at or "", self.time_source or "", self.late_flag,
                          list(self.flags or []))


@dataclasses.dataclass
class Batch:
    submissions: list
    notes: list                   # one line each: what was skipped, and why
    layouts: dict                 # {layout: how many submissions}


def student_id(value):
    """An id as an LMS matches it: letters, digits and `._@+-` only, capped, never starting
    with a character a spreadsheet reads as a formula.

        student_id("10000") == "10000";  student_id("=1+1") == "1+1";  student_id("a/../b") == "a..b"
    """
    # cut before safe_text, whose cut marker would otherwise be read as part of the id
    value = (value if isinstance(value, str) else safe_text(value))[:MAX_ID * 4]
    text = ID_CHARS.sub("", safe_text(value))[:MAX_ID]
    return text.lstrip("-+@.")


def display_name(value):
    """A person's name for the gradebook: one safe line, capped ("Fang Wu", "王力"), in NFC
    (a download unzipped on a Mac has decomposed names: the same row either way)."""
    value = (value if isinstance(value, str) else safe_text(value))[:MAX_DISPLAY * 2]  # as student_id
    lines = unicodedata.normalize("NFC", safe_text(value)).replace(
        "\t", " ").strip().splitlines()
    return " ".join(lines[0].split())[:MAX_DISPLAY] if lines else ""


def plain(paths, module=None):
    """The plain layout, for callers that pass bare paths: one Submission per path, named
    after it (intake.submission_names); its id is the name when the name is one as it is."""
    names = submission_names(list(paths), module)
    return [Submission(p, n, student_id(n) if student_id(n) == n else "", display_name(n), "plain")
            for p, n in zip(paths, names)]


def base_name(path):
    """The last name of `path`, cut to MAX_NAME: what every pattern looks at."""
    return os.path.basename(os.path.normpath(os.fsdecode(path)))[:MAX_NAME]


def shown(name):
    """A name for one line of a note (a file name may hold a newline)."""
    return " ".join(safe_text(name, 120).split())


def lstat(path):
    try:
        return os.lstat(path)
    except (OSError, ValueError):
        return None


def is_dir(path):
    info = lstat(path)
    return info is not None and stat.S_ISDIR(info.st_mode)


def listing(folder, limit=MAX_ENTRIES):
    """(names, cut): the entries of `folder` (never through a link), at most `limit`."""
    names = []
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                if len(names) >= limit:
                    return sorted(names), True
                names.append(entry.name)
    except (OSError, ValueError):
        return [], False
    return sorted(names), False


def non_submission(name):
    """Files an LMS or an operating system adds that are never a student's work.

        non_submission("index.html") and non_submission("._hw.py")
        not non_submission("wangli_10000_90000_hw.py")
    """
    folded = name.casefold()
    return folded in NON_SUBMISSIONS or folded.startswith("._")


# --- an LMS's download zip, as it was downloaded -------------------------------------------

def zip_names(path):
    """The entry names of the zip at `path` (opened like any upload), or None."""
    try:
        fd, is_folder = open_submitted(os.path.normpath(path), base_name(path))
    except IntakeError:
        return None
    try:
        if is_folder or os.fstat(fd).st_size > DOWNLOAD_ZIP_BYTES:
            return None
        with open(os.dup(fd), "rb") as handle, zipfile.ZipFile(handle) as archive:
            infos = archive.infolist()
            if len(infos) > DOWNLOAD_ENTRIES:
                return None
            # junk and entries extraction refuses (`..`, absolute) do not decide what it is
            return [n for n in (_entry_name(i) for i in infos)
                    if not _is_junk(n) and _safe_parts(n) is not None]
    except Exception:  # noqa: BLE001 - not a zip this can read: intake says why later
        return None
    finally:
        os.close(fd)


_UNPACKED = []
_ORIGINS = {}   # an unpacked download's folder -> the zip it came from


def unpacked(path):
    """Does `path` lie in a download zip unpacked here (whose files carry no time of the
    student's, only what the zip kept)?"""
    return any(path.startswith(folder + os.sep) for folder in _UNPACKED)


def shown_source(path):
    """What a row's `source` says of `path`: the path itself, or, for an entry of a
    download zip unpacked into a temporary folder (gone when the process ends), the zip and
    the entry ("subs/submissions.zip (entry wangli_10000_90000_attention.py)")."""
    text = os.fspath(path) if isinstance(path, (str, os.PathLike)) else ""
    for target, zip_path in _ORIGINS.items():
        if text.startswith(target + os.sep):
            entry = os.path.relpath(text, target).replace(os.sep, "/")
            return f"{zip_path} (entry {entry})"
    return text


def _cleanup():
    for folder in _UNPACKED:
        shutil.rmtree(folder, ignore_errors=True)


atexit.register(_cleanup)


def unpack_download(path, label):
    """Unpack an LMS's download zip with archive.py's checks (entries hostile: no `..`, no
    links, capped sizes) into a temporary folder removed when the process ends; returns
    (the folder, archive's notes)."""
    folder = tempfile.mkdtemp(prefix="attnkit-download-")
    _UNPACKED.append(folder)
    target = os.path.join(folder, os.path.splitext(label)[0] or "download")
    os.mkdir(target)
    _ORIGINS[target] = path
    notes = extract(path, target, label, deadline=Deadline(300, label),
                    limits=(DOWNLOAD_ENTRIES, DOWNLOAD_ZIP_BYTES, DOWNLOAD_ZIP_BYTES))
    keep_entry_times(path, target)
    return target, notes


def keep_entry_times(path, target):
    """Give each file unpacked from an LMS's download zip the time its entry carries, read
    in local time as `unzip` reads it: Moodle's zip keeps each file's time in Moodle, so a
    download given as its zip has the same times as the folder unzipped by hand. Only the
    download's own entries; never a student's zip inside it."""
    try:
        with zipfile.ZipFile(path) as archive:
            infos = archive.infolist()[:DOWNLOAD_ENTRIES]
    except Exception:  # noqa: BLE001 - unpacked already; without times then
        return
    for info in infos:
        parts = _safe_parts(_entry_name(info))
        if not parts or info.is_dir():
            continue
        file = os.path.join(target, *parts)
        info_stat = lstat(file)
        if info_stat is None or not stat.S_ISREG(info_stat.st_mode):
            continue
        try:
            moment = time.mktime(tuple(info.date_time) + (0, 0, -1))
            os.utime(file, (moment, moment), follow_symlinks=False)
        except (OverflowError, OSError, ValueError):
            continue
