"""An nbgrader course's folders, as its own config lays them out, and who submitted what.

The config is read the way nbgrader's apps read it: `nbgrader_config.py` in Jupyter's
config folders, then in the course folder (which wins). The course folder given on the
command line is the course's root. Submitted files are read as regular files only, never
through a link, and at most a notebook's size limit: they come from students.
"""
import dataclasses
import datetime
import fnmatch
import glob
import os
import secrets
import stat

from ..i18n import _
from ..intake.layouts import Submission, student_id
from ..intake.notebook import MAX_NOTEBOOK_BYTES
from ..textsafety import safe_text


@dataclasses.dataclass
class Submitted:
    student: str
    folder: str            # COURSE/submitted/<student>/<assignment>
    timestamp: str = None  # timestamp.txt, as nbgrader wrote it


def load_coursedir(root):
    """nbgrader's CourseDirectory for the course at `root`, configured as nbgrader would."""
    # nbgrader and Jupyter: an extra (heavy), imported only by the commands that need them
    from jupyter_core.paths import jupyter_config_path
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config import Config
    from traitlets.config.loader import PyFileConfigLoader

    config = Config()
    for folder in [*reversed(jupyter_config_path()), root]:
        if os.path.isfile(os.path.join(folder, "nbgrader_config.py")):
            config.merge(PyFileConfigLoader("nbgrader_config.py", path=folder).load_config())
    coursedir = CourseDirectory(config=config)
    coursedir.root = os.path.abspath(root)
    return coursedir


def _student_position(coursedir):
    """Which component of a formatted path is the student id."""
    from nbgrader.utils import full_split  # nbgrader: an extra (heavy), imported only here
    parts = full_split(coursedir.directory_structure)
    return parts.index("{student_id}"), len(parts)


def submitted(coursedir, assignment, students=()):
    """(the Submitted of every student who handed `assignment` in, notes); with `students`,
    only those, and a note for each of them who has no submission."""
    pattern = coursedir.format_path(coursedir.submitted_directory, "*", assignment)
    index, length = _student_position(coursedir)
    found, notes = {}, []
    for folder in sorted(glob.glob(pattern)):
        relative = os.path.relpath(folder, coursedir.root).split(os.sep)
        if len(relative) != length:
            continue
        student = relative[index]
        try:
            mode = os.lstat(folder).st_mode
        except OSError:
            continue
        if not stat.S_ISDIR(mode):
            notes.append(f"{student}: {folder} is not a folder (a link?); skipped")
            continue
        if coursedir.student_id not in ("", "*") and not fnmatch.fnmatch(student, coursedir.student_id):
            continue
        found[student] = Submitted(student, folder, read_timestamp(folder))
    if students:
        for student in students:
            if student not in found:
                notes.append(f"{student}: no submission of {assignment} in "
                             f"{coursedir.format_path(coursedir.submitted_directory, student, assignment)}")
        found = {s: found[s] for s in students if s in found}
    return list(found.values()), notes


def shown_student(student):
    """A student's folder name for one line of the console: the name comes from
    submitted/, which `nbgrader submit --student` lets a student choose."""
    return " ".join(safe_text(student, 100).split()) or "?"


def _iso(text):
    """timestamp.txt's time as ISO 8601 with its offset (nbgrader reads it as UTC)."""
    from nbgrader.utils import parse_utc  # nbgrader: an extra (heavy), imported only here
    moment = parse_utc(text)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.timezone.utc)
    return moment.isoformat()


def timestamp(text):
    """timestamp.txt's time when nbgrader can read it, else None (the submission keeps none)."""
    if not text:
        return None
    from nbgrader.utils import parse_utc  # nbgrader: an extra (heavy), imported only here
    try:
        parse_utc(text)
    except (ValueError, OverflowError, TypeError):
        return None
    return text


def submission(entry, path, name, known=True):
    """The kit's Submission for one Submitted `entry` of `grader nbgrader`, staged at `path`: the student is the folder under submitted/
    (nbgrader's own id; the command writes only the students gradebook.db already has),
    their name from gradebook.db, and the time is timestamp.txt's ("nbgrader-timestamp"),
    which only `nbgrader collect` writes; a submission copied there by hand has none (no
    time, so no lateness is charged)."""
    when = timestamp(entry.timestamp)
    return Submission(
        path=path, name=entry.student, student_id=student_id(entry.student), student_name=name,
        layout="nbgrader", submitted_at=_iso(when) if when else "",
        time_source="nbgrader-timestamp" if when else "",
        flags=[] if known else [f"{shown_student(entry.student)} is not a student in "
                                f"nbgrader's database: nothing written there"])


def read_regular(path, limit):
    """The bytes of `path` if it is a regular file (not a link) of at most `limit` bytes,
    else None."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return None if size > limit else b"".join(chunks)
    finally:
        os.close(fd)


def read_timestamp(folder):
    data = read_regular(os.path.join(folder, "timestamp.txt"), 1000)
    text = data.decode("utf-8", "replace").strip() if data else ""
    return text or None


def stage(entry, notebook, dest, earlier=()):
    """Copy what the kit grades of one submission into the new folder `dest`: the
    assignment's notebook `<notebook>.ipynb`, or, when the student renamed it, every
    notebook in their folder (intake then takes the only one, or says why not). Returns
    notes for the student's feedback.

    earlier: (module, folder) for each earlier assignment whose module the student provides
    (`builds_on` with provide = "student"); folder: the same student's submission of it
    (COURSE/submitted/<student>/<earlier>). Their `<module>.py` or `<module>.ipynb` is copied
    from beside the notebook, else from that folder (intake converts a notebook)."""
    os.makedirs(dest)
    wanted = f"{notebook}.ipynb"
    try:
        names = sorted(os.listdir(entry.folder))
    except OSError:
        names = []
    theirs = {f"{module}{suffix}" for module, _ in earlier for suffix in (".py", ".ipynb")}
    notebooks = [n for n in names if n.endswith(".ipynb") and not n.startswith(".")
                 and n not in theirs]
    chosen = [wanted] if wanted in notebooks else notebooks
    notes = [] if wanted in notebooks else [
        _("{notebook} was not found in the submission (it holds: {names})").format(
            notebook=wanted, names=", ".join(names[:10]) or _("nothing"))]
    for name in chosen:
        data = read_regular(os.path.join(entry.folder, name), MAX_NOTEBOOK_BYTES)
        if data is None:
            notes.append(_("{file} is not a regular file of at most {size} MB; it was not "
                           "graded").format(file=name, size=MAX_NOTEBOOK_BYTES // 2**20))
            continue
        with open(os.path.join(dest, name), "wb") as handle:
            handle.write(data)
    for module, folder in earlier:
        notes += _stage_earlier(entry, module, folder, names, dest)
    return notes


def _stage_earlier(entry, module, folder, names, dest):
    """Copy the student's own `<module>.py` (or, without one, `<module>.ipynb`) into `dest`:
    from beside the notebook, else from `folder`, their submission of the earlier assignment
    (never through a link, at most a notebook's size). Notes say where it came from, or
    that it was found nowhere (the import of it then fails with its own explanation)."""
    candidates = [f"{module}.py", f"{module}.ipynb"]
    places = [(entry.folder, names, None)]
    try:
        if stat.S_ISDIR(os.lstat(folder).st_mode):
            places.append((folder, sorted(os.listdir(folder)), folder))
    except OSError:
        pass
    for where, present, other in places:
        for name in candidates:
            if name not in present:
                continue
            data = read_regular(os.path.join(where, name), MAX_NOTEBOOK_BYTES)
            if data is None:
                return [_("{file} is not a regular file of at most {size} MB; it was not "
                          "used").format(file=name, size=MAX_NOTEBOOK_BYTES // 2**20)]
            with open(os.path.join(dest, name), "wb") as handle:
                handle.write(data)
            return [] if other is None else [
                _("{file} was taken from your submission of the earlier assignment "
                  "({assignment}), because it was not handed in with this one").format(
                      file=name, assignment=os.path.basename(other))]
    return [_("{file}, your module of the earlier assignment, was found neither beside this "
              "notebook nor in your submission of the earlier assignment ({assignment})").format(
                  file=f"{module}.py", assignment=os.path.basename(folder))]



# what nbgrader's own steps carry along from submitted/: `nbgrader release_feedback` needs
# both beside the feedback, and formgrader and generate_feedback read the autograded copy
SUBMISSION_FILES = ("timestamp.txt", "submission_secret.txt")


def copy_submission_files(entry, target, notebook=None):
    """Copy timestamp.txt, submission_secret.txt and (given `notebook`) the notebook from
    the submission into `target`, regular files only. With the notebook, `target` is
    COURSE/autograded/<student>/<assignment>/ as `nbgrader autograde` would leave it (not
    run: the kit graded it in its sandbox); without, the feedback folder."""
    os.makedirs(target, exist_ok=True)
    wanted = [(name, 4096) for name in SUBMISSION_FILES]
    if notebook:
        wanted.append((f"{notebook}.ipynb", MAX_NOTEBOOK_BYTES))
    for name, limit in wanted:
        data = read_regular(os.path.join(entry.folder, name), limit)
        if data is not None:
            with open(os.path.join(target, name), "wb") as handle:
                handle.write(data)


def collected(entry):
    """Whether the submission came through `nbgrader submit` and `nbgrader collect`: its
    folder holds the submission_secret.txt (a regular file) that only they write."""
    return read_regular(os.path.join(entry.folder, "submission_secret.txt"), 4096) is not None


def write_release_files(entry, notebook, targets):
    """For a submission copied into submitted/ by hand (not `collected`): put in each of
    `targets` (its autograded/ and feedback/ folders) the two files `nbgrader
    release_feedback` opens for every feedback page, where the submission has none, so that
    it runs for the whole class instead of stopping at this student:

        submission_secret.txt  a fresh secret, as `nbgrader submit` makes one (the same in
                               both folders, kept from an earlier run), since the student has
                               no secret the released page could be named after
        timestamp.txt          the notebook file's modification time in nbgrader's format
                               (release_feedback only prints it; the gradebook's timestamp
                               stays empty, as nbgrader leaves it for such a submission)

    autograded/ gets them too because `nbgrader generate_feedback` rebuilds feedback/ from
    there. A student who never ran `nbgrader submit` cannot fetch a released page: the
    instructor hands feedback/<student>/<assignment>/ out (command.py says so)."""
    secret = None
    for target in targets:
        data = read_regular(os.path.join(target, "submission_secret.txt"), 4096)
        if data and data.strip():
            secret = data
            break
    secret = secret or secrets.token_hex(64).encode("ascii")
    when = _file_time(os.path.join(entry.folder, f"{notebook}.ipynb"))
    for target in targets:
        os.makedirs(target, exist_ok=True)
        for name, data in (("submission_secret.txt", secret), ("timestamp.txt", when)):
            path = os.path.join(target, name)
            if name == "timestamp.txt" and read_regular(path, 4096):
                continue  # one the submission had, or an earlier run wrote
            if os.path.lexists(path):
                os.remove(path)  # never written through a link
            with open(path, "xb") as handle:
                handle.write(data)


def _file_time(path):
    """A file's modification time (UTC) as nbgrader writes timestamp.txt; now without one."""
    try:
        moment = datetime.datetime.fromtimestamp(os.lstat(path).st_mtime, datetime.timezone.utc)
    except (OSError, OverflowError, ValueError):
        moment = datetime.datetime.now(datetime.timezone.utc)
    return moment.strftime("%Y-%m-%d %H:%M:%S.%f UTC").encode("ascii")
