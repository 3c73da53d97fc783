"""Student identity from the way work arrives: the paths given to `grader grade` → one
Submission (intake/layouts.py) per student, each recognised by the platform whose download it
is (one module each in grader/platforms/; what each reads is in its docstring).

Identity comes only from the fixed-position part of a name the LMS itself writes, read
anchored from the left the way the LMS reads it back, never by backtracking into the part a
student chose (their own file name, or a full name they can edit). What a student chose
that *claims* another identity (an uploaded file named like another student's download
name, a file inside a folder named so) is graded as its uploader's and flagged
(`Submission.flags`, and the batch's notes); what cannot be cross-checked is flagged too.

`resolve(paths, layout, module)` takes the paths given to `grader grade`, a layout (`auto`,
or a platform's name: `layouts()`) and the assignment's module name (its declaration's
`module`: students hand in `<module>.py` or `<module>.ipynb`; None: the default
assignment's). With `auto` (the default) each path is recognised by its name (and a folder
that a platform's marker says is its whole download, or all of whose entries are named as
one platform's download names them, is opened); a name that matches no platform is `plain`.
A folder that is itself one student's (a Moodle student folder, a Gradescope
`submission_<id>`, a folder inside nbgrader's `submitted/`) is never opened as a download,
and rows named as an LMS names its downloads (files given, or a folder opened for what it
holds) in a batch that also has plain submissions get no student id and are flagged (a
student may have named a file or folder so); so do the rows of two downloads of one LMS
given together. The download zip itself (`submissions.zip`) is accepted as it is: unpacked
(archive.py's checks) into a temporary folder that lives as long as the process.

One submission per student: of a student's files the highest ranked is graded (each
platform's rank: the one most like the assignment's file, then the newest), the others are
noted; for an assignment that builds on one whose module students provide (`earlier`), a
file named as that module rides along with the work instead (Submission.companions). Files
that are never a student's work (intake/layouts.py NON_SUBMISSIONS: `index.html`,
`.DS_Store`, `__MACOSX`, the metadata file, ...) are skipped with a one-line note, never
given a row. The only paths graded are those given or entries listed in a folder given.
"""
import os

from ..i18n import _
from ..intake.errors import IntakeError
from ..intake.layouts import (MAX_ENTRIES, Batch, Submission, base_name, is_dir, listing,
                              non_submission, shown, unpack_download, zip_names)
from ..intake.naming import file_names, like, module_name
from ..textsafety import safe_text
from . import base

EARLIER_FILES = (".py", ".ipynb")   # what intake stages as an earlier module (never a zip)


def layouts():
    """`--layout`'s choices: auto, then each platform that recognises its downloads."""
    return ("auto",) + tuple(p.name for p in base.listed() if p.recognises)


def download_kind(names):
    """The name of the platform whose whole download these entries are (each a file at the
    top, or `name/` for a folder: a Canvas download is files named as Canvas names them, a
    Moodle one folders or files named as Moodle does), else None."""
    named = [p for p in base.tried() if p.download_title]
    names = [n.rstrip("/") for n in names if n.strip("/")]
    names = [n for n in names if not non_submission(n.split("/", 1)[0])
             or any(p.names_entry(n.split("/", 1)[0]) for p in named)]
    if not names:
        return None
    return next((p.name for p in named if p.download_of(names)), None)


def _earlier_module(file_name, module, earlier):
    """The earlier module of `earlier` that a student's uploaded file is named as
    (`attention.py`, `Attention-1.ipynb`), or None (also for one named as the work)."""
    stem, ext = base.stem(file_name)
    if ext not in EARLIER_FILES or like(module).match(stem):  # like(): re-upload suffixes too
        return None
    return next((e for e in earlier if like(e).match(stem)), None)


def _companions(group, module, earlier):
    """(the files that may be the work, in `group`'s order, ((earlier module, the Found
    used as it), ...), the others named as an earlier module) of one student's files. Each
    earlier module is the student's highest-ranked file named as it (the newest upload);
    with no other file, the group is all work candidates, as without `earlier`."""
    named = {}
    for found in group:
        which = _earlier_module(found.file, module, earlier) if found.file else None
        if which is not None:
            named.setdefault(which, []).append(found)
    taken = {id(f) for files in named.values() for f in files}
    work = [f for f in group if id(f) not in taken]
    if not work or not named:
        return group, (), []
    used, unused = [], []
    for which in earlier:
        files = sorted(named.get(which, []), key=lambda f: f.rank, reverse=True)
        if files:
            used.append((which, files[0]))
            unused += files[1:]
    return work, tuple(used), unused


class Resolver:
    """One batch being recognised: what each platform found, and the batch's notes."""

    def __init__(self, layout, module, earlier=()):
        if layout not in layouts():
            raise ValueError(f"unknown layout {layout!r}: one of {', '.join(layouts())}")
        self.layout = layout
        self.module = module      # the assignment's module name: <module>.py is the work
        self.earlier = tuple(earlier)  # earlier modules the student uploads beside the work
        self.notes = []
        self.found = []
        self.origin = ""          # the download zip being opened, if any
        self.platforms = [p for p in base.tried() if p.recognises]
        self.plain = base.named("plain")
        self._state = {}

    def allows(self, layout):
        return self.layout in ("auto", layout)

    def state(self, platform):
        """What a platform keeps while this batch is recognised (Gradescope's metadata)."""
        return self._state.setdefault(platform.name, {})

    def skip(self, name, why):
        self.notes.append(f"skipped {shown(name)}: {why}")

    def _named(self):
        """The platforms that open a folder all of whose entries are named as theirs."""
        return [p for p in self.platforms if p.download_title]

    # a path given, or an entry of a folder given
    def add(self, path, depth=0, origin=""):
        name = base_name(path)
        folder = is_dir(path)
        if any(p.own_file(self, path, name) for p in self.platforms):
            return
        if non_submission(name) and not any(p.names_entry(name) for p in self.platforms):
            self.skip(name, "not a submission (added by an LMS or an operating system)")
            return
        if depth == 0 and folder and not self._one_students(path, name) and self._expand(path, name):
            return
        if depth == 0 and not folder and name.lower().endswith(".zip") and self._download_zip(path, name):
            return
        for platform in self.platforms:
            if not self.allows(platform.name):
                continue
            found = platform.find(self, path, name, folder)
            if found is False:
                return
            if found is not None:
                found.origin = origin
                self.found.append(found)
                return
        self.notes.append(f"{shown(name)} does not look like {self.layout}'s layout: "
                          f"named after the file")
        found = self.plain.find(self, path, name, folder)
        found.origin = origin
        self.found.append(found)

    def _one_students(self, path, name):
        """Is the folder one student's work (never a download to open)?"""
        return any(p.one_students(path, name) for p in self.platforms)

    def _expand(self, path, name):
        """A folder that holds a whole download (not one student's work): its entries."""
        names, cut = listing(path)
        kind = next((k for p in self.platforms if self.allows(p.name)
                     for k in [p.marked_download(self, path, name, names)] if k), None)
        own = {n.lower() for n in file_names(self.module)}   # a student's folder: its work
        if kind is None and any(n.lower() in own for n in names):
            return False
        if kind is None:
            listed = [n + "/" if is_dir(os.path.join(path, n)) else n for n in names]
            found = base.named(download_kind(listed) or "")
            if found is None or not self.allows(found.name):
                self._not_a_download(name, names)
                return False
            kind = found.download_title
        if cut:
            self.notes.append(f"{shown(name)}: only its first {MAX_ENTRIES} entries were read")
        self.notes.append(f"{shown(name)}: {kind}, {len(names)} entries")
        for entry in names:
            self.add(os.path.join(path, entry), depth=1, origin=self.origin or path)
        return True

    def _not_a_download(self, name, names):
        """Say why a folder named like a download, or given as one, was not opened."""
        named = self._named()
        if self.layout in {p.name for p in named} or any(p.names_entry(n) for n in names
                                                         for p in named):
            odd = [n for n in names if not non_submission(n)
                   and not any(p.download_entry(n) for p in named)]
            self.notes.append(f"{shown(name)}: not opened as a download: not all its "
                              f"entries are named as an LMS names them"
                              + (f" (e.g. {shown(odd[0])})" if odd else ""))

    def _download_zip(self, path, name):
        """An LMS's download zip given as it was downloaded: unpacked, then opened."""
        named = self._named()
        if any(p.names_entry(name) for p in named) or not any(self.allows(p.name) for p in named):
            return False
        names = zip_names(path)
        kind = download_kind(names) if names else None
        if kind is None or not self.allows(kind):
            return False
        try:
            folder, notes = unpack_download(path, name)
        except IntakeError as error:
            self.notes.append(f"{shown(name)}: looks like {kind}'s download zip but could not be "
                              f"unpacked ({safe_text(str(error), 300)})")
            return False
        self.notes.append(f"{shown(name)}: {kind}'s download zip, unpacked to a temporary folder")
        self.notes += [safe_text(n, 300) for n in notes]
        self.origin = path
        try:
            if not self._expand(folder, name):
                self.add(folder, depth=1, origin=path)
        finally:
            self.origin = ""
        return True

    def _cross_check(self):
        """Each platform flags what its download says twice; then the LMS names given beside
        plain work, and two downloads of one LMS given together."""
        for platform in self.platforms:
            platform.cross_check(self, [f for f in self.found if f.layout == platform.name])
        self._beside_plain()
        self._one_download_each()

    def _imitable(self, found):
        platform = base.named(found.layout)
        return platform is not None and platform.download_names

    def _beside_plain(self):
        """Beside plain submissions, an LMS name (of a file given, or of the entries of a
        folder opened as a download for what it holds) may be one a student chose: a file or
        folder dressed up as a download is no evidence of identity. nbgrader's is the folder
        submitted/ itself, named by whoever gave it."""
        if not any(f.layout == "plain" and not f.origin for f in self.found):
            return
        for found in self.found:
            if not self._imitable(found):
                continue
            where = shown(base_name(found.origin)) if found.origin else shown(found.label)
            found.flags.append(f"{where} is named as {base.named(found.layout).title} names its "
                               f"downloads but was given beside plain submissions: no "
                               f"student id is given (grade an LMS's download on its own, "
                               f"and students' folders with --layout plain)")
            found.key = f"{found.key}:{found.origin or found.path}"
            found.student_id = ""
            found.row_prefix = base_name(found.origin) if found.origin else "unverified"

    def _one_download_each(self):
        """Two downloads of one LMS given together (two folders or zips opened as downloads,
        or files given one by one from two folders): one of them may be a student's own zip or
        folder named as the LMS names its downloads, which would replace a classmate's file
        (a newer attachment id) or make a row for one who handed nothing in. Nothing in the
        names tells them apart, so their rows keep no student id (flagged); each student's
        newest file is still the one graded. Grade the newest download on its own."""
        sources = {}
        for found in self.found:   # a file given by itself: the folder it was given from
            if self._imitable(found) and found.student_id:
                sources.setdefault(found.layout, set()).add(
                    found.origin or os.path.dirname(os.path.abspath(found.path)))
        for layout, origins in sources.items():
            if len(origins) < 2:
                continue
            shown_origins = ", ".join(sorted(shown(base_name(o)) for o in origins)[:4])
            for found in self.found:
                if found.layout != layout or not found.student_id:
                    continue
                found.flags.append(f"{len(origins)} {base.named(layout).title} downloads were "
                                   f"given together ({shown_origins}); one may be a student's "
                                   f"own, so no student id is given (grade the newest download "
                                   f"on its own)")
                found.student_id = ""
                found.row_prefix = found.row_prefix or "unverified"

    def _when(self, found):
        """(submitted_at, time_source, note) for the file that is graded."""
        if found.submitted_at:
            return found.submitted_at, found.time_source, None
        return base.named(found.layout).when(found)

    def _submission(self, key, ranked, plain_rows):
        """The Submission of one student's files (`ranked`, best first)."""
        group, companions, unused = _companions(ranked, self.module, self.earlier)
        best = group[0]
        notes = [_("{file} was not graded: {chosen} is this student's latest or main "
                   "file").format(file=shown(other.label), chosen=shown(best.label))
                 for other in group[1:] + unused]
        if best.layout == "plain":
            sub = plain_rows[id(best)]
        else:
            name = base.named(best.layout).row_name(best, key)
            if best.row_prefix:   # never the name a real download's row would have
                name = f"{best.row_prefix}-{name}"
            # one line: a folder name may hold a newline or a tab
            name = " ".join(safe_text(name, 400).split()) or shown(best.label) or "unnamed"
            sub = Submission(best.path, name, best.student_id or "", best.student_name or "",
                             best.layout, notes)
        flags = list(dict.fromkeys(f for found in ranked for f in found.flags))
        sub.flags = [safe_text(f, 400) for f in flags[:20]]
        sub.companions = tuple((which, found.path) for which, found in companions)
        sub.late_flag = best.late_flag
        sub.submitted_at, sub.time_source, when_note = self._when(best)
        self.notes.extend(f"{sub.name}: {note}" for note in notes)
        if when_note:
            self.notes.append(f"{sub.name}: {when_note}; no submission time from nbgrader")
            sub.flags.append(safe_text(f"{when_note}; no submission time from nbgrader", 400))
        return sub

    def batch(self):
        self._cross_check()
        chosen, order = {}, []
        for found in self.found:   # one submission per student: the highest rank counts
            key = found.key or ("plain", len(order))
            if key not in chosen:
                chosen[key] = [found]
                order.append(key)
            else:
                chosen[key].append(found)
        plain = [chosen[k][0] for k in order if chosen[k][0].layout == "plain"]
        plain_rows = {id(f): s for f, s in zip(plain, self.plain.submissions(plain, self.module))}
        submissions, counts = [], {}
        for key in order:
            ranked = sorted(chosen[key], key=lambda f: (not f.outranked, f.rank), reverse=True)
            sub = self._submission(key, ranked, plain_rows)
            counts[sub.layout] = counts.get(sub.layout, 0) + 1
            submissions.append(sub)
        taken = set()
        for sub in submissions:   # names stay unique in the batch
            unique, counter = sub.name, 1
            while unique in taken:
                counter += 1
                unique = f"{sub.name}-{counter}"
            taken.add(unique)
            sub.name = unique
            self.notes.extend(f"{sub.name}: FLAG {flag}" for flag in sub.flags)
        return Batch(submissions, self.notes, counts)


def resolve(paths, layout="auto", module=None, earlier=()):
    """The Batch for the paths given to `grader grade` (see the module's docstring);
    module: the assignment's module name (None: the default assignment's); earlier: the
    module names of the earlier assignments students upload beside their work (`builds_on`
    with provide = "student"): where an LMS keeps each uploaded file apart (Canvas, Moodle
    without folders), a student's file named as one of them is not a candidate for the work
    but rides along with it (Submission.companions), the newest upload of it."""
    resolver = Resolver(layout, module_name(module), earlier)
    for path in paths:
        resolver.add(os.fsdecode(path))
    return resolver.batch()
