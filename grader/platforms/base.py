"""What a platform is, and what every platform's recognition of a download shares.

A platform is one object (`Platform`) in one module (or package) of grader/platforms/,
registered when its module is imported (`register`; grader/platforms/__init__.py imports
every module of the package, so the registry is whole whenever any platform code runs).
It answers, for the paths given to `grader grade` (platforms/recognition.py asks each in turn,
`tried` order): is this file one of mine (`own_file`: Gradescope's metadata), is this folder
one student's (`one_students`), is this folder a whole download of mine (`marked_download`:
by a marker; `download_of`: by its entries' names), whose is this file (`find`: a `Found`,
False to skip it, None when not mine), what does my download say twice (`cross_check`),
when was it handed in (`when`) and what is its row called (`row_name`). For the exports it
says which column of an LMS's import its ids belong in (`id_kind`) and which exports it
writes (`exports`: platforms/exports.py).

Everything here comes from names someone else chose, so names are cut to MAX_NAME before
any pattern sees them, ids keep only ID_CHARS, display names are made safe and capped
(intake/layouts.py), and a folder is listed at most MAX_ENTRIES deep into.
"""
import dataclasses
import os
import re
import unicodedata

from ..intake import times
from ..intake.layouts import listing, shown, unpacked
from ..intake.naming import like

MAX_CLAIMS_LISTED = 200      # entries of a student's folder looked at for claimed identities
GRADEABLE = (".py", ".ipynb", ".zip")
# the original name's resubmission suffix: <module>-1.py, <module>-12.ipynb
RESUBMISSION = re.compile(r"^(?P<base>.+?)-(?P<n>[0-9]{1,4})$", re.DOTALL)


@dataclasses.dataclass
class Found:
    """One file or folder a platform recognised: whose it is and how it ranks among the
    student's files (platforms/recognition.py groups them by `key` and grades the highest)."""
    path: str
    layout: str
    key: str = ""                 # who: one student's files share it
    student_id: str = ""
    student_name: str = ""
    rank: tuple = ()              # the highest counts among one student's files
    label: str = ""               # the file's name, for notes
    lms_name: str = ""            # the name part as the LMS wrote it (cross-checked per id)
    attachment: str = ""          # Canvas's attachment id
    flags: list = dataclasses.field(default_factory=list)
    late_flag: object = None
    submitted_at: str = ""
    time_source: str = ""
    origin: str = ""              # the folder given that was opened as a download, if any
    row_prefix: str = ""          # set when its identity is withheld for where it came from
    ambiguous: bool = False       # a Canvas name that splits two ways (see canvas.py)
    outranked: bool = False       # never graded while its student has another file
    file: str = ""                # the student's own file name, as the LMS kept it (a file)


class Platform:
    """A course platform: the defaults are a platform that recognises nothing, exports
    nothing and gives its rows the file's own time (a subclass overrides what it does)."""
    name = ""              # the layout's name: --layout, grades.csv's `layout` column
    title = ""             # as a sentence names it ("Canvas")
    listed = 100           # its place in lists (--layout's choices, the export kinds); the
                           # kit's are 10 to 60, so one that says none comes after them
    tried = 100            # its turn: the first platform a path fits takes it (the kit's:
                           # 10 to 40; plain, which takes anything, 1000)
    recognises = True      # a --layout choice (False: it takes no downloads of its own)
    download_names = False  # its names are an LMS's download names, which a student could
                            # copy: cross-checked when given beside plain work or twice over
    arrives_as = ""        # what `--layout auto` recognises by its names ("a Canvas download")
    download_title = ""    # "a Canvas download": a folder (or zip) all of whose entries are
                           # named as its download names them is opened (`download_of`)
    id_kind = "login"      # which id column of an LMS's import its ids go to: "own" (an id
                           # only this LMS knows), "sis" (the institution's id) or "login"
    id_name = "student"    # what its id is called in a flag ("Canvas user")
    exports = ()           # platforms/exports.py Export objects (`grader export KIND`)
    export_inputs = ()     # (flag, dest) of the files its export options name (read: checked
                           # before anything runs)

    def own_file(self, ctx, path, name):
        """Handle a file of the platform's own (read, never graded); True when it was one."""
        return False

    def names_entry(self, name):
        """Is `name` named as an entry of this platform's download?"""
        return False

    def download_entry(self, name):
        """`names_entry`, or any other form an entry of its download takes."""
        return self.names_entry(name)

    def download_of(self, names):
        """Are these entries (a folder's, `name/` for a folder; a zip's) its whole download?"""
        return False

    def one_students(self, path, name):
        """Is the folder one student's work (never opened as a download)?"""
        return False

    def marked_download(self, ctx, path, name, names):
        """What the folder is (a note's words) when a marker says it is this platform's
        whole download, else None."""
        return None

    def claims(self, name):
        """The ids a student-chosen name would give if read as this platform's download name."""
        return []

    def find(self, ctx, path, name, is_dir):
        """A Found for a path of this platform, False to skip it (with a note), else None."""
        return None

    def cross_check(self, ctx, found):
        """Flag what its download (`found`: this platform's files) says twice."""

    def when(self, found):
        """(submitted_at, time_source, note) of the file graded: the file's own time, the
        last resort (none for a file unpacked here from a download zip)."""
        if unpacked(found.path):
            return "", "", None   # unpacked here: only the zip's entry times are kept
        moment = times.file_time(found.path)
        return moment, "file-mtime" if moment else "", None

    def add_export_arguments(self, parser):
        """Add the options its exports take to `grader export`'s parser."""

    def row_name(self, found, key):
        """The row's name: `<name>_<id>`, the id alone, or, when the id is withheld, the name
        and what the LMS said it was."""
        ident, who = found.student_id or "", found.student_name or ""
        if not ident:
            return f"{who}_{key.split(':')[1]}" if who else key
        return f"{who}_{ident}" if who else ident


_REGISTERED = []


def register(platform):
    """Add a platform to the registry (each module does, for its one object); returns it."""
    _REGISTERED.append(platform)
    return platform


def tried():
    """Every registered platform, in the order they are tried."""
    return sorted(_REGISTERED, key=lambda p: (p.tried, p.name))


def listed():
    """Every registered platform, in the order lists show them."""
    return sorted(_REGISTERED, key=lambda p: (p.listed, p.name))


def named(layout):
    """The registered platform of that layout name, or None."""
    return next((p for p in _REGISTERED if p.name == layout), None)


def claimed_ids(file_name, own):
    """The student ids a student-chosen name claims: what it would give if it were read as
    any platform's download name (Canvas's, Moodle's), other than `own`.

        claimed_ids("wangli_10000_90000_hw.py", "10005") == ["10000"]
        claimed_ids("hw.py", "10005") == []
    """
    found = [ident for platform in tried() for ident in platform.claims(file_name)]
    return [i for i in dict.fromkeys(found) if i != own]


def claimed_by_others(file_name, own, platform):
    """`claimed_ids`, asking every platform but `platform` (which reads the name itself)."""
    found = [ident for other in tried() if other is not platform
             for ident in other.claims(file_name)]
    return [i for i in found if i != own]


def claim_flags(label, claims, id_name, own):
    """The flags of a file whose own name claims other students' ids."""
    return [f"the uploaded file's own name claims {id_name} {shown(c)}; graded as user "
            f"{shown(own)}'s ({shown(label)})" for c in claims[:5]]


def folder_claims(path, own, id_name):
    """Flags for entries of a student's own folder whose names claim another identity."""
    names, _cut = listing(path, MAX_CLAIMS_LISTED)
    flags = []
    for entry in names:
        claims = claimed_ids(entry, own)
        if claims:
            flags += claim_flags(entry, claims, id_name, own)
    return flags[:10]


def one_name_per_id(found, id_name):
    """An LMS id seen under two names in one download is flagged, and those rows keep no
    student id (so nothing is exported for it until the instructor looks); `found`: one
    platform's files, `id_name`: what its id is called ("Canvas user")."""
    names = {}
    for item in found:
        if not item.ambiguous:
            names.setdefault(item.key, set()).add(unicodedata.normalize("NFC", item.lms_name))
    for item in found:
        seen = names.get(item.key, ()) if not item.ambiguous else ()
        if len(seen) > 1:
            item.flags.append(f"{id_name} {item.student_id} appears under {len(seen)} names in "
                              f"this download ({', '.join(sorted(shown(n) for n in seen)[:4])}); "
                              f"no student id is given until you check which is theirs")
            item.key = f"{item.key}:{item.lms_name}"   # never merged into another's
            item.student_id = ""


def stem(file_name):
    """(stem, extension) of a gradeable file (`.py`, `.ipynb`, `.zip`); else (name, extension)."""
    base, ext = os.path.splitext(file_name)
    return (base, ext.lower()) if ext.lower() in GRADEABLE else (file_name, ext.lower())


def module_rank(file_name, module):
    """(gradeable, named as the assignment's file): how much a student's file looks like
    their work (`<module>.py`, `<Module> (2).ipynb`, `<module>-1.py` rank highest)."""
    base, ext = stem(file_name)
    again = RESUBMISSION.match(base)
    pattern = like(module)
    return (ext in GRADEABLE, bool(pattern.match(again["base"] if again else base))
            or bool(pattern.match(base)))
