"""nbgrader: a course's `submitted/` folder as `grader grade` reads it. The course itself
(`grader nbgrader`, commands/nbgrader.py), its source notebook (`grader release
--notebook`), its gradebook.db and its feedback folders are grader/nbgrader_bridge/'s.

`submitted/<student>/<module>/` (a file, the assignment folder, the student's folder or
`submitted` itself): the id is the student's folder name, which nbgrader writes;
`timestamp.txt` there is the submission time (nbgrader-timestamp; a time without a zone is
UTC, as nbgrader reads it; one that cannot be read, or more than a day after the time it is
graded, is not used, flagged). Of a student's several assignment folders, the one holding
the assignment's `<module>.py` (or `.ipynb`) is graded; without exactly one, the whole
folder, without a time (flagged). A student the course's gradebook.db (beside
`submitted/`, read-only) does not list is flagged; a folder name that is an id only once
cleaned (`-rf`, `alice` + a combining accent) keeps no id. Its ids are logins: an LMS's
export puts them in its login column. `timestamp.txt` is written by `nbgrader submit`, which
runs as the student: where students run it themselves it is only as trustworthy as they are.
"""
import os
import sqlite3
import stat
from urllib.parse import quote

from ..intake import times
from ..intake.layouts import (base_name, display_name, is_dir, listing, lstat, non_submission,
                              shown, student_id, unpacked)
from ..intake.naming import file_names
from . import base

SUBMITTED = "submitted"


def nbgrader_parts(path):
    """(student, rest) when `path` lies in nbgrader's `submitted/<student>/...`, else None.

        nbgrader_parts("course/submitted/alice/hw/hw.py") == ("alice", ("hw", "hw.py"))
        nbgrader_parts("subs/alice.py") is None
    """
    parts = os.path.normpath(os.path.abspath(os.fsdecode(path))).split(os.sep)
    for i in range(len(parts) - 2, -1, -1):
        if parts[i] == SUBMITTED and len(parts) - i - 1 <= 3:
            return parts[i + 1], tuple(parts[i + 2:])
    return None


def nbgrader_students(path):
    """The student ids of the nbgrader course whose `submitted/` holds `path` (its
    gradebook.db beside `submitted/`, opened read-only, never through a link), or None when
    there is no such database or it cannot be read."""
    parts = os.path.normpath(os.path.abspath(os.fsdecode(path))).split(os.sep)
    if SUBMITTED not in parts:
        return None
    root = os.sep.join(parts[:len(parts) - 1 - parts[::-1].index(SUBMITTED)]) or os.sep
    database = os.path.join(root, "gradebook.db")
    info = lstat(database)
    if info is None or not stat.S_ISREG(info.st_mode):
        return None
    try:
        connection = sqlite3.connect(f"file:{quote(database)}?mode=ro", uri=True, timeout=5)
        try:
            rows = connection.execute("SELECT id FROM student LIMIT 100000").fetchall()
        finally:
            connection.close()
    except (sqlite3.Error, ValueError):
        return None
    return {str(row[0]) for row in rows}


def _assignment_of(folder, module):
    """(path, note): a student's folder in submitted/ holding several assignment folders
    (one per assignment: nbgrader keeps them all) is graded as the one holding
    `<module>.py` or `<module>.ipynb`, whose timestamp.txt is then the time; without exactly
    one such, the folder itself, and a note (its time is then unknown: flagged, never
    guessed from another assignment's)."""
    names, _cut = listing(folder, 50)
    inner = [n for n in names if is_dir(os.path.join(folder, n)) and not non_submission(n)]
    if len(inner) < 2:
        return folder, None
    holding = [n for n in inner if any(lstat(os.path.join(folder, n, m)) is not None
                                       for m in file_names(module))]
    if len(holding) == 1:
        return os.path.join(folder, holding[0]), None
    return folder, (f"nbgrader student {shown(base_name(folder))} has {len(inner)} assignment "
                    f"folders ({', '.join(shown(n) for n in inner[:5])}) and "
                    f"{'none' if not holding else 'several'} hold {shown(module)}.py: "
                    f"graded as the "
                    f"whole folder, without a submission time")


def _assignment_folder(path):
    """The nbgrader assignment folder `path` is (a file: its folder; a student's folder: its
    one assignment folder), or `path` itself."""
    folder = path if is_dir(path) else os.path.dirname(path)
    found = nbgrader_parts(folder)
    if found is not None and not found[1]:     # submitted/<student>: its one subfolder
        names, _cut = listing(folder, 50)
        # as _assignment_of counts them (.ipynb_checkpoints, __MACOSX are no assignment)
        inner = [n for n in names if is_dir(os.path.join(folder, n)) and not non_submission(n)]
        if len(inner) == 1:
            return os.path.join(folder, inner[0])
    return folder


class Nbgrader(base.Platform):
    name = "nbgrader"
    title = "nbgrader"
    arrives_as = "nbgrader's submitted/ folder"
    listed = 20
    tried = 20

    def one_students(self, path, name):
        return name != SUBMITTED and bool((nbgrader_parts(path) or (None,))[0])

    def marked_download(self, ctx, path, name, names):
        return "an nbgrader submitted/ folder" if name == SUBMITTED else None

    def find(self, ctx, path, name, is_dir):
        found = nbgrader_parts(path)
        if found is None or not found[0] or non_submission(found[0]) or (not found[1] and not is_dir):
            return None  # a file right in submitted/ is no student's folder
        student = found[0]
        ident = student_id(student)
        flags = []
        if is_dir and not found[1]:   # submitted/<student>: the assignment folder, among several
            path, note = _assignment_of(path, ctx.module)
            if note:
                flags.append(note)
        flags += base.folder_claims(path, ident, self.id_name) if is_dir else []
        known = nbgrader_students(path)
        if known is not None and student not in known:
            flags.append(f"nbgrader student {shown(student)} is not in the course's gradebook.db")
        prefix = ""
        if ident != student:   # "-rf", "alice\u0301", ".alice": never read as "rf", "alice"
            flags.append(f"nbgrader student folder {ascii(student)[:120]} is not a student id as "
                         f"it is (it would read as {ident or 'nothing'!r}); no student id is given")
            ident, prefix = "", "unverified"
        return base.Found(path, "nbgrader", "nbgrader:" + student, ident,
                          display_name(student), (True, True, 0, 0, base_name(path)),
                          base_name(path), student, flags=flags, row_prefix=prefix)

    def when(self, found):
        """timestamp.txt in the assignment folder, else the file's own time (with the note
        why timestamp.txt was not used)."""
        if unpacked(found.path):
            return "", "", None
        path = _assignment_folder(found.path)
        moment, note = times.nbgrader_time(path)
        if moment:
            return moment, "nbgrader-timestamp", None
        moment = times.file_time(path)
        return moment, "file-mtime" if moment else "", note

    def row_name(self, found, key):
        return found.student_id or found.lms_name or found.label   # the student's folder


PLATFORM = base.register(Nbgrader())
