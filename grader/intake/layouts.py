"""Student identity from the way work arrives: what an LMS hands over → one Submission
(the path to grade, the row's name, the student's id and display name, when it was handed
in) per student.

Identity comes only from the fixed-position part of a name the LMS itself writes, read
anchored from the left the way the LMS reads it back, never by backtracking into the part a
student chose (their own file name, or a full name they can edit). What a student chose
that *claims* another identity (an uploaded file named like another student's download
name, a file inside a folder named so) is graded as its uploader's and flagged
(`Submission.flags`, and the batch's notes); what cannot be cross-checked is flagged too.

`resolve(paths, layout, module)` takes the paths given to `grader grade`, a layout and the
assignment's module name (its declaration's `module`: students hand in `<module>.py` or
`<module>.ipynb`; None: the default assignment's):

- `canvas`: a Canvas bulk download ("Download Submissions"), one file per uploaded file.
  Canvas (lib/content_zipper.rb) writes `<name>[_LATE]_<user id>_<attachment id>_<file>`:
  the name is the student's sortable name, lower-cased, word characters only, with every
  `_<digits>_` in it collapsed, so the first two digits-only `_` segments are the ids (what
  Canvas's own re-upload of graded files reads); `-1`, `-2` are added to the file name
  when the student uploaded a file of that name again::

      wangli_10000_90000_<module>.py          → user 10000, name wangli
      liuyang_LATE_10001_90001_<module>.ipynb → user 10001, late (late_flag True)
      zhaomin_10002_90002_<module>-1.py       → user 10002 (the second upload: it counts)
      mallory_10005_90005__10000_90000_<module>.py → user 10005, flagged: it claims 10000
      anon_aB3xZ_90006_<module>.py            → anonymous grading: no student id, flagged

  Cross-checks within one download: a user id has one name (a user id seen under two names
  is flagged and its rows keep no student id, so nothing is exported for it until the
  instructor looks), an attachment id belongs to one user, and a name that splits two ways
  (`x_10000_10005_90005_a.py`, see _Resolver._ambiguous) never counts as the user's while
  they have a file that reads one way, else keeps no id. One file per student is graded:
  the one most like the assignment's file (`<module>.py`, `<module>.ipynb`, either with
  a resubmission suffix: intake/naming.py), then the newest attachment (Canvas's id, rising
  with each upload), then the resubmission number; the others are noted. For an
  assignment that builds on one whose module students provide (`resolve`'s `earlier`), a
  file named as that module rides along with the work instead (Submission.companions). Two downloads
  given together keep no ids (_Resolver._one_download_each). The download zip itself
  (`submissions.zip`) is accepted as it is: unpacked (archive.py's checks) into a
  temporary folder that lives as long as the process.
- `moodle`: a Moodle assignment's "Download all submissions", a folder (or, without
  "download submissions in folders", a file prefix) per student and plugin. Moodle writes
  `<full name>_<participant id>_assignsubmission_<plugin>_` and replaces every `_` in the
  full name with a space, so the first `_` ends the name::

      Fang Wu_10006_assignsubmission_file_/          → id 10006, name Fang Wu (graded)
      Fang Wu_10006_assignsubmission_onlinetext_/    → skipped (the online text)
      Fang Wu_10006_assignsubmission_file_<module>.py

  The id is Moodle's participant id, what the assignment's grading worksheet calls
  `Participant 10006`. A participant id seen under two names is flagged as above; of one
  participant's folders (two downloads given together) the one with the newest file time
  Moodle kept is graded.
- `gradescope`: a Gradescope "Export Submissions" folder: `submission_metadata.yml` and a
  folder `submission_<id>/` per submission. The metadata is read (safely: YAML's safe
  loader, or the small parser below where PyYAML is missing; at most METADATA_BYTES) for
  each submitter's `:name:`, `:sid:` and `:email:` and the submission's `:created_at:`; it
  is never graded. The id is the `:sid:` (else the email); a group submission lists its
  members joined by `;`. Checked against the folders: a folder the metadata does not list
  has no student id; metadata entries without a folder and an SID in two submissions are
  flagged.
- `nbgrader`: `submitted/<student>/<module>/` (a file, the assignment folder, the
  student's folder or `submitted` itself): the id is the student's folder name, which
  nbgrader writes; `timestamp.txt` there is the submission time. A student the course's
  gradebook.db (beside `submitted/`, read-only) does not list is flagged; a folder name
  that is an id only once cleaned (`-rf`, `alice` + a combining accent) keeps no id (so
  does such a Gradescope SID, `=12345`).
- `plain`: the file or folder name without its extension (intake.submission_names).
- `auto` (the default): each path is recognised by its name (and a folder holding
  `submission_metadata.yml`, a folder named `submitted`, or a folder all of whose entries
  have Canvas or all Moodle names, is opened); a name that matches no pattern is `plain`.
  A folder that is itself one student's (a Moodle student folder, a Gradescope
  `submission_<id>`, a folder inside nbgrader's `submitted/`) is never opened as a download,
  and rows named as an LMS names its downloads (files given, or a folder opened for what it
  holds) in a batch that also has plain submissions get no student id and are flagged (a
  student may have named a file or folder so).

Submission times (`submitted_at`, ISO 8601, and `time_source`): Gradescope's
`:created_at:` (gradescope-metadata), nbgrader's timestamp.txt (nbgrader-timestamp), the
newest file time in a Moodle folder (moodle-file-time: Moodle's zip keeps its files'
times, without a zone, so unzipping reads them in the local time; recorded as this machine's
wall clock, which course.toml's `timezone` reads in the Moodle server's zone), else the file's own time
(file-mtime, the last resort). A Moodle download zip unpacked here keeps its entries' times
(as unzip does); other files it unpacked have no time. A Canvas download's file
times are when the zip was made, so Canvas rows have no time; Canvas's own `LATE` is
`late_flag` (True/False) instead.

Files that are never a student's work (NON_SUBMISSIONS: `index.html`, `.DS_Store`,
`__MACOSX`, the metadata file, ...) are skipped with a one-line note, never given a row.

Everything here comes from names someone else chose, so: names are cut to MAX_NAME before
any pattern sees them, ids keep only ID_CHARS, display names pass textsafety.safe_text and
are capped; a folder is listed at most MAX_ENTRIES deep into; the only paths graded are
those given or entries listed in a folder given (a name from the metadata is only looked up
among the folders listed, never joined into a path).
"""
import atexit
import dataclasses
import os
import re
import shutil
import stat
import tempfile
import unicodedata

from ..i18n import _
from ..textsafety import safe_text
from . import times
from .errors import IntakeError
from .naming import file_names, like, module_name

LAYOUTS = ("auto", "plain", "nbgrader", "canvas", "moodle", "gradescope")
MAX_NAME = 255               # characters of a file name any pattern looks at
MAX_ENTRIES = 10_000         # entries listed in one folder
MAX_ID = 100                 # characters of a student id
MAX_DISPLAY = 200            # characters of a display name
MAX_CLAIMS_LISTED = 200      # entries of a student's folder looked at for claimed identities
METADATA = "submission_metadata.yml"
METADATA_BYTES = 16 * 1024 * 1024
METADATA_KEYS = 100_000      # submissions read from one metadata file
NON_SUBMISSIONS = frozenset({"index.html", METADATA, ".ds_store", "__macosx", "thumbs.db",
                             "desktop.ini", ".ipynb_checkpoints", "__pycache__"})
GRADEABLE = (".py", ".ipynb", ".zip")
ID_CHARS = re.compile(r"[^A-Za-z0-9._@+\-]")

# Canvas: the name part is word characters only (Canvas removes everything else: Ruby's
# [[:word:]], letters, marks, numbers and connector punctuation); an id is a digits-only
# segment between underscores
CANVAS_ID = re.compile(r"^[0-9]{1,20}$")
# the original name's resubmission suffix: <module>-1.py, <module>-12.ipynb
RESUBMISSION = re.compile(r"^(?P<base>.+?)-(?P<n>[0-9]{1,4})$", re.DOTALL)
# Moodle: <full name, no "_">_<participant id>_assign<submission|feedback>_<plugin>_[<file>]
MOODLE = re.compile(r"^(?P<name>[^_]{1,255})_(?P<id>[0-9]{1,20})_assign(?P<kind>submission|feedback)"
                    r"_(?P<plugin>[a-z0-9]{1,40})_(?P<file>.*)$", re.DOTALL)
# anything in a student-chosen name that reads as another student's Moodle prefix
MOODLE_CLAIM = re.compile(r"(?:^|_)(?P<id>[0-9]{1,20})_assign(?:submission|feedback)_")
GRADESCOPE_FOLDER = re.compile(r"^submission_(?P<id>[0-9]{1,20})$")
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


def _base(path):
    return os.path.basename(os.path.normpath(os.fsdecode(path)))[:MAX_NAME]


def _shown(name):
    """A name for one line of a note (a file name may hold a newline)."""
    return " ".join(safe_text(name, 120).split())


def _lstat(path):
    try:
        return os.lstat(path)
    except (OSError, ValueError):
        return None


def _is_dir(path):
    info = _lstat(path)
    return info is not None and stat.S_ISDIR(info.st_mode)


def _listing(folder, limit=MAX_ENTRIES):
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


def _stem(file_name):
    stem, ext = os.path.splitext(file_name)
    return (stem, ext.lower()) if ext.lower() in GRADEABLE else (file_name, ext.lower())


# --- one parser per layout: a name → its parts, or None -----------------------------------

# Canvas with anonymous grading writes `[LATE_]anon_<anonymous id>` instead of name and user id
CANVAS_ANONYMOUS = re.compile(r"^(?P<late>LATE_)?anon_(?P<anon>[A-Za-z0-9]{1,20})_(?P<att>[0-9]{1,20})_(?P<file>.+)$",
                              re.DOTALL)


def parse_canvas(name):
    """{"name", "user", "attachment", "late", "file", "base", "resubmission", "claims",
    "ambiguous"} for a Canvas bulk-download file name, else None.

    Read as Canvas reads it back: the first digits-only `_` segment is the user id, the
    next the attachment id, and everything after them is the student's own file name,
    whatever it looks like. `claims`: the other user ids the student's file name would give
    if it were read as a download name; `ambiguous`: the file name itself starts with a
    digits-only segment, so a name part ending in `_<digits>` would read differently.

        parse_canvas("wangli_10000_90000_hw.py")["user"] == "10000"
        parse_canvas("liuyang_LATE_10001_90001_hw.ipynb")["late"] is True
        parse_canvas("zhaomin_10002_90002_hw-2.py")["resubmission"] == 2
        parse_canvas("mallory_10005_90005__10000_90000_a.py")["claims"] == ["10000"]
        parse_canvas("alice.py") is None
    """
    segments = name[:MAX_NAME].split("_")
    # the ids are the first digits-only segment and the next; the name is never empty, so
    # they never start it, and a name that ends in digits may be followed by LATE
    # (`a_0_LATE_10005_...`): a name the student set to start or end with digits (`0_a`,
    # `a_0`, which Canvas leaves as they are) still reads
    first = next((i for i, s in enumerate(segments) if i and CANVAS_ID.match(s)), None)
    if first is not None and first + 3 < len(segments) and segments[first + 1] == "LATE" \
            and CANVAS_ID.match(segments[first + 2]) and CANVAS_ID.match(segments[first + 3]):
        first += 2
    if first is None or first + 2 >= len(segments) or not CANVAS_ID.match(segments[first + 1]):
        return None
    head = segments[:first]
    late = len(head) > 1 and head[-1] == "LATE"
    who = "_".join(head[:-1] if late else head)
    original = "_".join(segments[first + 2:])
    if not who or not all(unicodedata.category(c)[0] in "LMN" or unicodedata.category(c) == "Pc"
                          for c in who) or not original:
        return None
    user = segments[first]
    stem, ext = _stem(original)
    again = RESUBMISSION.match(stem)
    rest = segments[first + 2:]
    claims = [rest[i] for i in range(len(rest) - 1)
              if CANVAS_ID.match(rest[i]) and CANVAS_ID.match(rest[i + 1]) and rest[i] != user]
    claims += [m["id"] for m in MOODLE_CLAIM.finditer(original) if m["id"] != user]
    return {"name": display_name(who), "lms_name": who, "user": user,
            "attachment": segments[first + 1], "late": late, "file": original,
            "base": (again["base"] if again else stem) + ext,
            "resubmission": int(again["n"]) if again else 0,
            "claims": list(dict.fromkeys(claims)),
            "ambiguous": len(rest) > 1 and bool(CANVAS_ID.match(rest[0]))}


def parse_moodle(name):
    """{"name", "id", "plugin", "file", "feedback", "claims"} for a Moodle download name (a
    folder `Fang Wu_10006_assignsubmission_file_` or a file
    `..._assignsubmission_file_hw.py`), else None. Moodle writes no `_` in the full
    name, so the name ends at the first `_`; `claims`: other ids the file name part would
    give if it were read as a download name.

        parse_moodle("Fang Wu_10006_assignsubmission_file_")["id"] == "10006"
        parse_moodle("Fang Wu_10006_assignsubmission_onlinetext_")["plugin"] == "onlinetext"
    """
    match = MOODLE.match(name[:MAX_NAME])
    if not match:
        return None
    return {"name": display_name(match["name"]), "lms_name": match["name"], "id": match["id"],
            "plugin": match["plugin"], "file": match["file"], "feedback": match["kind"] == "feedback",
            "claims": claimed_ids(match["file"], match["id"])}


def claimed_ids(file_name, own):
    """The student ids a student-chosen name claims: what it would give if it were read as
    a Canvas or Moodle download name, other than `own`.

        claimed_ids("wangli_10000_90000_hw.py", "10005") == ["10000"]
        claimed_ids("hw.py", "10005") == []
    """
    found = []
    canvas = parse_canvas(file_name)
    if canvas:
        found += [canvas["user"]] + canvas["claims"]
    else:
        segments = file_name[:MAX_NAME].split("_")
        found += [segments[i] for i in range(len(segments) - 2)
                  if CANVAS_ID.match(segments[i]) and CANVAS_ID.match(segments[i + 1])]
    found += [m["id"] for m in MOODLE_CLAIM.finditer(file_name[:MAX_NAME])]
    return [i for i in dict.fromkeys(found) if i != own]


def nbgrader_parts(path):
    """(student, rest) when `path` lies in nbgrader's `submitted/<student>/...`, else None.

        nbgrader_parts("course/submitted/alice/hw/hw.py") == ("alice", ("hw", "hw.py"))
        nbgrader_parts("subs/alice.py") is None
    """
    parts = os.path.normpath(os.path.abspath(os.fsdecode(path))).split(os.sep)
    for i in range(len(parts) - 2, -1, -1):
        if parts[i] == "submitted" and len(parts) - i - 1 <= 3:
            return parts[i + 1], tuple(parts[i + 2:])
    return None


# --- reading Gradescope's metadata, safely -------------------------------------------------

def _read_metadata_bytes(path):
    from .safeio import Deadline, open_submitted, read_fd
    fd, is_folder = open_submitted(os.path.normpath(path), METADATA)
    try:
        if is_folder:
            raise IntakeError(f"{METADATA} is a folder.")
        return read_fd(fd, METADATA_BYTES, METADATA, Deadline(30, METADATA), "metadata file")
    finally:
        os.close(fd)


def _tolerant_loader():
    """PyYAML's safe loader (the C one where there is one) that reads an unknown tag (a Ruby
    object, say) as the plain data under it instead of failing; None without PyYAML."""
    try:
        import yaml
    except ImportError:
        return None
    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class Loader(base):
        pass

    def plain(loader, suffix, node):
        if isinstance(node, yaml.MappingNode):
            return loader.construct_mapping(node)
        if isinstance(node, yaml.SequenceNode):
            return loader.construct_sequence(node)
        return loader.construct_scalar(node)

    Loader.add_multi_constructor("!", plain)
    Loader.add_multi_constructor("tag:", plain)
    return Loader


def _scalar(text):
    """One YAML scalar as Gradescope (Ruby's Psych) writes it: plain, 'single' or "double"."""
    text = text.strip()
    if not text or text in ("~", "null"):
        return ""
    if text[0] == "'":
        end = text.rfind("'")
        return text[1:end].replace("''", "'") if end > 0 else text[1:]
    if text[0] == '"':
        end = text.rfind('"')
        body = text[1:end] if end > 0 else text[1:]
        def unescape(match):
            code = match.group(1)
            simple = {"n": "\n", "t": "\t", '"': '"', "\\": "\\", "/": "/", "0": "", "r": ""}
            if code in simple:
                return simple[code]
            try:
                return chr(int(code[1:], 16))
            except (ValueError, OverflowError):
                return ""
        return re.sub(r'\\(x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|.)', unescape, body)
    if text.startswith("!"):  # a tag before the value
        text = text.split(None, 1)[1] if " " in text else ""
        return _scalar(text)
    return re.split(r"\s+#", text, 1)[0].strip()


_TOP_KEY = re.compile(r"^(?P<key>'[^']*'|\"[^\"]*\"|[^\s'\"#][^:]*):\s*$")
_ITEM = re.compile(r"^(?P<indent> *)- +(?P<key>:?[A-Za-z_]+):(?: +(?P<value>.*))?$")
_FIELD = re.compile(r"^(?P<indent> *)(?P<key>:?[A-Za-z_]+):(?: +(?P<value>.*))?$")


_BLOCK = re.compile(r"^[|>][0-9+-]{0,2}(\s+#.*)?$")


def _scalar_lines(first, more):
    """One YAML scalar that starts on a key's line (`first`) and continues on the more
    deeply indented lines after it (`more`): a block scalar (`|-`, `>`: what Psych writes
    for a value with a line break) or a plain or quoted one folded over lines (a long
    value)."""
    head = first.strip()
    if _BLOCK.match(head):
        lines = [line for line in more]
        while lines and not lines[-1].strip():
            lines.pop()
        depth = min((len(line) - len(line.lstrip(" ")) for line in lines if line.strip()), default=0)
        lines = [line[depth:] for line in lines]
        if head[0] == ">":
            body, gap = "", False
            for line in lines:
                if not line.strip():
                    body, gap = body + "\n", True
                else:
                    body += ("" if not body or gap else " ") + line
                    gap = False
        else:
            body = "\n".join(lines)
        chomp = head[1:3]
        return body if "-" in chomp else body + "\n"
    joined, gap = head, False
    for line in more:
        if not line.strip():
            joined, gap = joined + "\n", True
            continue
        joined += ("" if gap else " ") + line.strip()
        gap = False
    return _scalar(joined)


def parse_metadata_subset(text):
    """{submission folder: {"people": [{"name", "sid", "email"}, ...], "created_at": ISO or
    ""}} from the part of a Gradescope submission_metadata.yml this needs, for a machine
    without PyYAML. Reads the top-level keys, each one's `:submitters:` list and its
    `:created_at:`; everything else is passed over::

        submission_123:
          :submitters:
          - :name: Jane Doe
            :sid: '12345'
            :email: jane@example.edu
          :created_at: 2026-11-30 12:00:00.000000000 -08:00

    A value continues on every following line indented more deeply than its key (a block
    scalar, a folded long value): those lines are the value's text, never read as keys, so
    a name a student chose (`|-` with `- :sid: '10000'` on its second line) cannot add a
    submitter or change one's SID.
    """
    found, created, current, submitters, item, item_indent = {}, {}, None, None, None, None
    pending = None   # (store, first line's value, the key's indent, continuation lines)

    def finish():
        store, first, _indent, more = pending
        store(_scalar_lines(first, more) if more else _scalar(first))

    for line in text.splitlines():
        indent = len(line) - len(line.lstrip(" "))
        if pending is not None:
            if not line.strip() or indent > pending[2]:
                pending[3].append(line)
                continue
            finish()
            pending = None
        if not line.strip() or line.lstrip().startswith("#") or line.startswith("---"):
            continue
        top = _TOP_KEY.match(line)
        if top:
            if len(found) >= METADATA_KEYS:
                break
            current, submitters, item = _scalar(top["key"]), None, None
            found[current] = []
            continue
        if current is None:
            continue
        listed = _ITEM.match(line)
        if submitters is not None and listed and indent <= submitters + 2:
            item, item_indent = {}, indent + 2
            found[current].append(item)
            key = listed["key"].lstrip(":")
            item[key] = ""
            pending = (lambda value, item=item, key=key: item.__setitem__(key, value),
                       listed["value"] or "", item_indent, [])
            continue
        field = _FIELD.match(line)
        if field and item is not None and indent == item_indent:
            key = field["key"].lstrip(":")
            item[key] = ""
            pending = (lambda value, item=item, key=key: item.__setitem__(key, value),
                       field["value"] or "", indent, [])
            continue
        if field and field["key"].lstrip(":") == "submitters" and not (field["value"] or "").strip():
            submitters, item = indent, None
            continue
        if submitters is not None and indent <= submitters and not listed:
            submitters, item = None, None
        if field and submitters is None and field["key"].lstrip(":") == "created_at":
            pending = (lambda value, key=current: created.__setitem__(key, times.parse_time(value)),
                       field["value"] or "", indent, [])
        elif field and (field["value"] or "").strip():
            pending = (lambda value: None, field["value"], indent, [])   # passed over, whole
    if pending is not None:
        finish()
    return {key: {"people": [{k: s.get(k, "") for k in ("name", "sid", "email")}
                             for s in people[:50]],
                  "created_at": created.get(key, "")}
            for key, people in found.items()}


def _people(value):
    """The submitters of one metadata entry (from PyYAML's data), as plain dicts."""
    if not isinstance(value, dict):
        return []
    people = value.get(":submitters", value.get("submitters"))
    if not isinstance(people, list):
        return []
    out = []
    for person in people[:50]:
        if isinstance(person, dict):
            out.append({k: person.get(":" + k, person.get(k, "")) for k in ("name", "sid", "email")})
    return out


def _created(value):
    if not isinstance(value, dict):
        return ""
    return times.parse_time(value.get(":created_at", value.get("created_at")))


def read_metadata(path):
    """({submission folder: {"people": [{"name", "sid", "email"}], "created_at"}}, note or
    None) from a Gradescope submission_metadata.yml: PyYAML's safe loader where it is
    installed, else (or when it refuses the file) the subset parser; at most METADATA_BYTES.
    Never raises."""
    try:
        data = _read_metadata_bytes(path)
    except IntakeError as error:
        return {}, f"{METADATA} could not be read ({safe_text(str(error), 300)}); names come from the folders."
    except Exception as error:  # noqa: BLE001 - the metadata must never stop the batch
        return {}, f"{METADATA} could not be read ({type(error).__name__}); names come from the folders."
    text = data.decode("utf-8", errors="replace")
    loader = _tolerant_loader()
    if loader is not None:
        try:
            import yaml
            parsed = yaml.load(text, Loader=loader)  # noqa: S506 - a safe loader (above)
            if isinstance(parsed, dict):
                keys = list(parsed)[:METADATA_KEYS]
                return {safe_text(k, MAX_NAME): {"people": _people(parsed[k]),
                                                 "created_at": _created(parsed[k])}
                        for k in keys if isinstance(k, (str, int))}, None
        except Exception:  # noqa: BLE001 - a file PyYAML refuses: the subset parser tries
            pass
    try:
        return parse_metadata_subset(text), None
    except Exception as error:  # noqa: BLE001
        return {}, f"{METADATA} could not be parsed ({type(error).__name__}); names come from the folders."


# --- an LMS's download zip, as it was downloaded -------------------------------------------

def _zip_names(path):
    """The entry names of the zip at `path` (opened like any upload), or None."""
    import zipfile
    from .archive import _entry_name, _is_junk, _safe_parts
    from .safeio import open_submitted
    try:
        fd, is_folder = open_submitted(os.path.normpath(path), _base(path))
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


def download_kind(names):
    """"canvas" when every entry is a file at the top with a Canvas download name, "moodle"
    when every entry lies under (or is) a Moodle download name, else None."""
    names = [n.rstrip("/") for n in names if n.strip("/")]
    names = [n for n in names if not non_submission(n.split("/", 1)[0])
             or parse_moodle(n.split("/", 1)[0]) or parse_canvas(n.split("/", 1)[0])]
    tops = [n.split("/", 1)[0] for n in names]
    if not names:
        return None
    if all("/" not in n and (parse_canvas(n) or CANVAS_ANONYMOUS.match(n)) for n in names):
        return "canvas"
    if all(parse_moodle(t) for t in tops):
        return "moodle"
    return None


_UNPACKED = []
_ORIGINS = {}   # an unpacked download's folder -> the zip it came from


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


def _unpack_download(path, label):
    """Unpack an LMS's download zip with archive.py's checks (entries hostile: no `..`, no
    links, capped sizes) into a temporary folder removed when the process ends."""
    from .archive import extract
    from .safeio import Deadline
    folder = tempfile.mkdtemp(prefix="attnkit-download-")
    _UNPACKED.append(folder)
    target = os.path.join(folder, os.path.splitext(label)[0] or "download")
    os.mkdir(target)
    _ORIGINS[target] = path
    notes = extract(path, target, label, deadline=Deadline(300, label),
                    limits=(DOWNLOAD_ENTRIES, DOWNLOAD_ZIP_BYTES, DOWNLOAD_ZIP_BYTES))
    _keep_entry_times(path, target)
    return target, notes


def _keep_entry_times(path, target):
    """Give each file unpacked from an LMS's download zip the time its entry carries, read
    in local time as `unzip` reads it: Moodle's zip keeps each file's time in Moodle, so a
    download given as its zip has the same times as the folder unzipped by hand. Only the
    download's own entries; never a student's zip inside it."""
    import time
    import zipfile
    from .archive import _entry_name, _safe_parts
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
        info_stat = _lstat(file)
        if info_stat is None or not stat.S_ISREG(info_stat.st_mode):
            continue
        try:
            moment = time.mktime(tuple(info.date_time) + (0, 0, -1))
            os.utime(file, (moment, moment), follow_symlinks=False)
        except (OverflowError, OSError, ValueError):
            continue


# --- resolving a batch ---------------------------------------------------------------------

@dataclasses.dataclass
class _Found:
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
    ambiguous: bool = False       # a Canvas name that splits two ways (see _cross_check)
    outranked: bool = False       # never graded while its student has another file
    file: str = ""                # the student's own file name, as the LMS kept it (a file)


def _module_rank(file_name, module):
    """(gradeable, named as the assignment's file): how much a student's file looks like
    their work (`<module>.py`, `<Module> (2).ipynb`, `<module>-1.py` rank highest)."""
    stem, ext = _stem(file_name)
    again = RESUBMISSION.match(stem)
    base = again["base"] if again else stem
    pattern = like(module)
    return (ext in GRADEABLE, bool(pattern.match(base)) or bool(pattern.match(stem)))


def _claim_flags(label, claims, layout, own):
    lms = {"canvas": "Canvas user", "moodle": "Moodle participant"}.get(layout, "student")
    return [f"the uploaded file's own name claims {lms} {_shown(c)}; graded as user "
            f"{_shown(own)}'s ({_shown(label)})" for c in claims[:5]]


def _canvas_anonymous(path, name, module):
    """A file of an anonymously graded Canvas download: its id is Canvas's anonymous id, not
    a user id, so the row keeps no student id (and is flagged)."""
    match = CANVAS_ANONYMOUS.match(name[:MAX_NAME])
    if not match:
        return None
    anon = match["anon"]
    rank = _module_rank(match["file"], module) + (0, int(match["att"]), name)
    return _Found(path, "canvas", "canvas-anonymous:" + anon, "", "anon_" + anon, rank, name,
                  "anon", match["att"],
                  [f"Canvas anonymous grading: anon_{anon} is not a user id; no student id is "
                   f"given (match it in Canvas)"], late_flag=bool(match["late"]),
                  file=match["file"])


def _canvas(path, name, module):
    anonymous = _canvas_anonymous(path, name, module)
    if anonymous is not None:
        return anonymous
    parts = parse_canvas(name)
    if parts is None:
        return None
    rank = _module_rank(parts["base"], module) + (int(parts["attachment"]), parts["resubmission"],
                                                  name)
    found = _Found(path, "canvas", "canvas:" + parts["user"], student_id(parts["user"]),
                   parts["name"], rank, name, parts["lms_name"], parts["attachment"],
                   _claim_flags(name, parts["claims"], "canvas", parts["user"]),
                   late_flag=parts["late"], file=parts["file"])
    found.ambiguous = parts["ambiguous"]
    return found


def _folder_claims(path, own, layout):
    """Flags for entries of a student's own folder whose names claim another identity."""
    names, _cut = _listing(path, MAX_CLAIMS_LISTED)
    flags = []
    for entry in names:
        claims = claimed_ids(entry, own)
        if claims:
            flags += _claim_flags(entry, claims, layout, own)
    return flags[:10]


def _moodle(path, name, is_dir, notes, module):
    parts = parse_moodle(name)
    if parts is None:
        return None
    if parts["feedback"] or parts["plugin"] != "file":
        notes.append(f"skipped {_shown(name)}: Moodle's {parts['plugin']} "
                     f"{'feedback' if parts['feedback'] else 'submission'}, not a file submission")
        return False
    if not is_dir and not parts["file"]:
        return None
    rank = (True, True) if is_dir else _module_rank(parts["file"], module)
    flags = (_folder_claims(path, parts["id"], "moodle") if is_dir
             else _claim_flags(name, parts["claims"], "moodle", parts["id"]))
    # the newest file time Moodle kept (two downloads given together: the later one counts)
    return _Found(path, "moodle", "moodle:" + parts["id"], student_id(parts["id"]), parts["name"],
                  rank + (times.file_time(path), 0, name), name, parts["lms_name"], flags=flags,
                  file="" if is_dir else parts["file"])


def nbgrader_students(path):
    """The student ids of the nbgrader course whose `submitted/` holds `path` (its
    gradebook.db beside `submitted/`, opened read-only, never through a link), or None when
    there is no such database or it cannot be read."""
    parts = os.path.normpath(os.path.abspath(os.fsdecode(path))).split(os.sep)
    if "submitted" not in parts:
        return None
    root = os.sep.join(parts[:len(parts) - 1 - parts[::-1].index("submitted")]) or os.sep
    database = os.path.join(root, "gradebook.db")
    info = _lstat(database)
    if info is None or not stat.S_ISREG(info.st_mode):
        return None
    import sqlite3
    from urllib.parse import quote
    try:
        connection = sqlite3.connect(f"file:{quote(database)}?mode=ro", uri=True, timeout=5)
        try:
            rows = connection.execute("SELECT id FROM student LIMIT 100000").fetchall()
        finally:
            connection.close()
    except (sqlite3.Error, ValueError):
        return None
    return {str(row[0]) for row in rows}


def _nbgrader(path, is_dir, module):
    found = nbgrader_parts(path)
    if found is None or not found[0] or non_submission(found[0]) or (not found[1] and not is_dir):
        return None  # a file right in submitted/ is no student's folder
    student = found[0]
    ident = student_id(student)
    flags = []
    if is_dir and not found[1]:   # submitted/<student>: the assignment folder, among several
        path, note = _nbgrader_assignment(path, module)
        if note:
            flags.append(note)
    flags += _folder_claims(path, ident, "nbgrader") if is_dir else []
    known = nbgrader_students(path)
    if known is not None and student not in known:
        flags.append(f"nbgrader student {_shown(student)} is not in the course's gradebook.db")
    prefix = ""
    if ident != student:   # "-rf", "alice\u0301", ".alice": never read as "rf", "alice"
        flags.append(f"nbgrader student folder {ascii(student)[:120]} is not a student id as it "
                     f"is (it would read as {ident or 'nothing'!r}); no student id is given")
        ident, prefix = "", "unverified"
    return _Found(path, "nbgrader", "nbgrader:" + student, ident,
                  display_name(student), (True, True, 0, 0, _base(path)), _base(path),
                  student, flags=flags, row_prefix=prefix)


def _nbgrader_assignment(folder, module):
    """(path, note): a student's folder in submitted/ holding several assignment folders
    (one per assignment: nbgrader keeps them all) is graded as the one holding
    `<module>.py` or `<module>.ipynb`, whose timestamp.txt is then the time; without exactly
    one such, the folder itself, and a note (its time is then unknown: flagged, never
    guessed from another assignment's)."""
    names, _cut = _listing(folder, 50)
    inner = [n for n in names if _is_dir(os.path.join(folder, n)) and not non_submission(n)]
    if len(inner) < 2:
        return folder, None
    holding = [n for n in inner if any(_lstat(os.path.join(folder, n, m)) is not None
                                       for m in file_names(module))]
    if len(holding) == 1:
        return os.path.join(folder, holding[0]), None
    return folder, (f"nbgrader student {_shown(_base(folder))} has {len(inner)} assignment "
                    f"folders ({', '.join(_shown(n) for n in inner[:5])}) and "
                    f"{'none' if not holding else 'several'} hold {_shown(module)}.py: "
                    f"graded as the "
                    f"whole folder, without a submission time")


def _assignment_folder(path):
    """The nbgrader assignment folder `path` is (a file: its folder; a student's folder: its
    one assignment folder), or `path` itself."""
    folder = path if _is_dir(path) else os.path.dirname(path)
    found = nbgrader_parts(folder)
    if found is not None and not found[1]:     # submitted/<student>: its one subfolder
        names, _cut = _listing(folder, 50)
        # as _nbgrader_assignment counts them (.ipynb_checkpoints, __MACOSX are no assignment)
        inner = [n for n in names if _is_dir(os.path.join(folder, n)) and not non_submission(n)]
        if len(inner) == 1:
            return os.path.join(folder, inner[0])
    return folder


def _earlier_module(file_name, module, earlier):
    """The earlier module of `earlier` that a student's uploaded file is named as
    (`attention.py`, `Attention-1.ipynb`), or None (also for one named as the work)."""
    stem, ext = _stem(file_name)
    if ext not in EARLIER_FILES or like(module).match(stem):  # like(): re-upload suffixes too
        return None
    return next((e for e in earlier if like(e).match(stem)), None)


EARLIER_FILES = (".py", ".ipynb")   # what intake stages as an earlier module (never a zip)


def _companions(group, module, earlier):
    """(the files that may be the work, in `group`'s order, ((earlier module, the _Found
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


class _Resolver:
    def __init__(self, layout, module, earlier=()):
        if layout not in LAYOUTS:
            raise ValueError(f"unknown layout {layout!r}: one of {', '.join(LAYOUTS)}")
        self.layout = layout
        self.module = module      # the assignment's module name: <module>.py is the work
        self.earlier = tuple(earlier)  # earlier modules the student uploads beside the work
        self.notes = []
        self.found = []
        self.metadata = {}        # folder → (its metadata, or None when it has none)
        self.origin = ""          # the download zip being opened, if any
        self.gradescope_seen = {}  # folder → the submission folders found in it

    def allows(self, layout):
        return self.layout in ("auto", layout)

    def skip(self, name, why):
        self.notes.append(f"skipped {_shown(name)}: {why}")

    # a path given, or an entry of a folder given
    def add(self, path, depth=0, origin=""):
        name = _base(path)
        is_dir = _is_dir(path)
        if name == METADATA:
            if self.layout in ("auto", "gradescope"):
                self._metadata_for(os.path.dirname(os.path.abspath(path)))
            self.skip(name, "Gradescope's metadata (read for names, never graded)")
            return
        if non_submission(name) and not (parse_moodle(name) or parse_canvas(name)):
            self.skip(name, "not a submission (added by an LMS or an operating system)")
            return
        if depth == 0 and is_dir and not self._one_students(path, name) and self._expand(path, name):
            return
        if depth == 0 and not is_dir and name.lower().endswith(".zip") and self._download_zip(path, name):
            return
        for attempt in self._attempts(path, name, is_dir):
            found = attempt()
            if found is False:
                return
            if found is not None:
                found.origin = origin
                self.found.append(found)
                return
        if self.layout not in ("auto", "plain"):
            self.notes.append(f"{_shown(name)} does not look like {self.layout}'s layout: "
                              f"named after the file")
        self.found.append(_Found(path, "plain", label=name, origin=origin))

    def _one_students(self, path, name):
        """Is the folder one student's work (never a download to open)?"""
        return bool(parse_moodle(name) or GRADESCOPE_FOLDER.match(name)
                    or (name != "submitted" and (nbgrader_parts(path) or (None,))[0]))

    def _attempts(self, path, name, is_dir):
        if self.allows("gradescope"):
            yield lambda: self._gradescope(path, name, is_dir)
        if self.allows("nbgrader"):
            yield lambda: _nbgrader(path, is_dir, self.module)
        if self.allows("canvas") and not is_dir:
            yield lambda: _canvas(path, name, self.module)
        if self.allows("moodle"):
            yield lambda: _moodle(path, name, is_dir, self.notes, self.module)

    def _expand(self, path, name):
        """A folder that holds a whole download (not one student's work): its entries."""
        names, cut = _listing(path)
        own = {n.lower() for n in file_names(self.module)}   # a student's folder: its work
        if self.allows("gradescope") and METADATA in names:
            kind = "a Gradescope export"
        elif self.allows("nbgrader") and name == "submitted":
            kind = "an nbgrader submitted/ folder"
        elif any(n.lower() in own for n in names):
            return False
        else:
            listed = [n + "/" if _is_dir(os.path.join(path, n)) else n for n in names]
            found = download_kind(listed)
            if found is None or not self.allows(found):
                if self.layout in ("canvas", "moodle") or any(parse_canvas(n) or parse_moodle(n)
                                                              for n in names):
                    odd = [n for n in names if not non_submission(n) and not
                           (parse_canvas(n) or parse_moodle(n) or CANVAS_ANONYMOUS.match(n))]
                    self.notes.append(f"{_shown(name)}: not opened as a download: not all its "
                                      f"entries are named as an LMS names them"
                                      + (f" (e.g. {_shown(odd[0])})" if odd else ""))
                return False
            kind = {"canvas": "a Canvas download", "moodle": "a Moodle download"}[found]
        if cut:
            self.notes.append(f"{_shown(name)}: only its first {MAX_ENTRIES} entries were read")
        self.notes.append(f"{_shown(name)}: {kind}, {len(names)} entries")
        for entry in names:
            self.add(os.path.join(path, entry), depth=1, origin=self.origin or path)
        return True

    def _download_zip(self, path, name):
        """An LMS's download zip given as it was downloaded: unpacked, then opened."""
        if parse_canvas(name) or parse_moodle(name) or not (self.allows("canvas") or self.allows("moodle")):
            return False
        names = _zip_names(path)
        kind = download_kind(names) if names else None
        if kind is None or not self.allows(kind):
            return False
        try:
            folder, notes = _unpack_download(path, name)
        except IntakeError as error:
            self.notes.append(f"{_shown(name)}: looks like {kind}'s download zip but could not be "
                              f"unpacked ({safe_text(str(error), 300)})")
            return False
        self.notes.append(f"{_shown(name)}: {kind}'s download zip, unpacked to a temporary folder")
        self.notes += [safe_text(n, 300) for n in notes]
        self.origin = path
        try:
            if not self._expand(folder, name):
                self.add(folder, depth=1, origin=path)
        finally:
            self.origin = ""
        return True

    def _metadata_for(self, folder):
        if folder not in self.metadata:
            meta_path = os.path.join(folder, METADATA)
            info = _lstat(meta_path)
            if info is None:
                self.metadata[folder] = None
            else:
                data, note = read_metadata(meta_path)
                if note:
                    self.notes.append(note)
                self.metadata[folder] = data
        return self.metadata[folder]

    def _gradescope(self, path, name, is_dir):
        match = GRADESCOPE_FOLDER.match(name)
        if not match:
            return None
        folder = os.path.dirname(os.path.abspath(path))
        meta = self._metadata_for(folder)
        if meta is None and self.layout != "gradescope":
            return None
        self.gradescope_seen.setdefault(folder, set()).add(name)
        entry = (meta or {}).get(name) or {}
        people = entry.get("people") or []
        raw = [str(p.get("sid") or p.get("email") or "") for p in people]
        ids = [student_id(r) for r in raw]
        names = [display_name(p.get("name") or "") for p in people]
        flags = [f"{_shown(name)}: SID {ascii(r)[:60]} in {METADATA} is not an id as it is "
                 f"(it would read as {i or 'nothing'!r}); no student id is given"
                 for r, i in zip(raw, ids) if r and i != r]
        prefix = ""
        if flags:   # "=10000", "10000\n", "１００００": never read as someone's "10000"
            ids, prefix = [], "unverified"
        ids = [i for i in ids if i]
        if len(";".join(ids)) > MAX_ID * 4:   # never cut an SID short (export splits at ";")
            flags.append(f"{_shown(name)}: {len(ids)} SIDs in {METADATA} are more than one row "
                         f"holds ({MAX_ID * 4} characters); no student id is given")
            ids, prefix = [], "unverified"
        if not people:
            note = f"{_shown(name)}: not in {METADATA}; named after its folder, no student id"
            self.notes.append(note)
            flags.append(note)
        key = "gradescope:" + (";".join(ids) if ids else name)
        when = entry.get("created_at") or ""
        return _Found(path, "gradescope", key, ";".join(ids)[:MAX_ID * 4],
                      "; ".join(n for n in names if n)[:MAX_DISPLAY * 2],
                      (True, True, 0, int(match["id"]), name), name, flags=flags,
                      submitted_at=when, time_source="gradescope-metadata" if when else "",
                      row_prefix=prefix)

    def _cross_check(self):
        """Flag what one download says twice: an LMS id under two names (those rows keep no
        student id), a Canvas attachment under two users, an SID in two Gradescope
        submissions, metadata entries without a folder."""
        names, owners, sids, keys = {}, {}, {}, {}
        self._ambiguous()
        for found in self.found:
            if found.layout in ("canvas", "moodle") and not found.ambiguous:
                names.setdefault(found.key, set()).add(unicodedata.normalize("NFC", found.lms_name))
            if found.layout == "canvas":
                owners.setdefault(found.attachment, set()).add(found.key)
            if found.layout == "gradescope" and found.student_id:
                for sid in found.student_id.split(";"):
                    sids.setdefault(sid, set()).add(found.label)
                    keys.setdefault(sid, set()).add(found.key)
        for found in self.found:
            seen = names.get(found.key, ()) if not found.ambiguous else ()
            if len(seen) > 1:
                lms = "Canvas user" if found.layout == "canvas" else "Moodle participant"
                found.flags.append(f"{lms} {found.student_id} appears under {len(seen)} names in "
                                   f"this download ({', '.join(sorted(_shown(n) for n in seen)[:4])}); "
                                   f"no student id is given until you check which is theirs")
                found.key = f"{found.key}:{found.lms_name}"   # never merged into another's
                found.student_id = ""
            if found.layout == "canvas" and len(owners.get(found.attachment, ())) > 1:
                found.flags.append(f"Canvas attachment {found.attachment} belongs to more than one "
                                   f"user in this download ({_shown(found.label)})")
            if found.layout == "gradescope":
                twice = [s for s in found.student_id.split(";") if len(sids.get(s, ())) > 1]
                if twice:
                    found.flags.append(f"SID {', '.join(twice[:3])} is in more than one submission "
                                       f"of {METADATA}")
                if any(len(keys.get(s, ())) > 1 for s in twice):
                    # alone and in a group (or in two groups): two rows would carry the SID,
                    # each with its own score; which is theirs is the instructor's to say
                    found.flags.append("those submissions have different submitters, so no "
                                       "student id is given until you check which is theirs")
                    found.student_id = ""
                    found.row_prefix = "unverified"
        # beside plain submissions, an LMS name (of a file given, or of the entries of a folder
        # opened as a download for what it holds) may be one a student chose: a file or folder
        # dressed up as a download is no evidence of identity. nbgrader's is the folder
        # submitted/ itself, named by whoever gave it.
        if any(f.layout == "plain" and not f.origin for f in self.found):
            for found in self.found:
                if found.layout not in ("canvas", "moodle", "gradescope"):
                    continue
                where = _shown(_base(found.origin)) if found.origin else _shown(found.label)
                found.flags.append(f"{where} is named as {found.layout.capitalize()} names its "
                                   f"downloads but was given beside plain submissions: no "
                                   f"student id is given (grade an LMS's download on its own, "
                                   f"and students' folders with --layout plain)")
                found.key = f"{found.key}:{found.origin or found.path}"
                found.student_id = ""
                found.row_prefix = _base(found.origin) if found.origin else "unverified"
        self._one_download_each()
        for folder, meta in self.metadata.items():
            missing = sorted(set(meta or {}) - self.gradescope_seen.get(folder, set()))
            if missing:
                self.notes.append(f"{METADATA}: {len(missing)} submissions have no folder here "
                                  f"({', '.join(_shown(m) for m in missing[:5])})")

    def _one_download_each(self):
        """Two downloads of one LMS given together (two folders or zips opened as downloads,
        or files given one by one from two folders): one of them may be a student's own zip or
        folder named as the LMS names its downloads, which would replace a classmate's file
        (a newer attachment id) or make a row for one who handed nothing in. Nothing in the
        names tells them apart, so their rows keep no student id (flagged); each student's
        newest file is still the one graded. Grade the newest download on its own."""
        sources = {}
        for found in self.found:   # a file given by itself: the folder it was given from
            if found.layout in ("canvas", "moodle", "gradescope") and found.student_id:
                sources.setdefault(found.layout, set()).add(
                    found.origin or os.path.dirname(os.path.abspath(found.path)))
        for layout, origins in sources.items():
            if len(origins) < 2:
                continue
            shown = ", ".join(sorted(_shown(_base(o)) for o in origins)[:4])
            for found in self.found:
                if found.layout != layout or not found.student_id:
                    continue
                found.flags.append(f"{len(origins)} {layout.capitalize()} downloads were given "
                                   f"together ({shown}); one may be a student's own, so no "
                                   f"student id is given (grade the newest download on its own)")
                found.student_id = ""
                found.row_prefix = found.row_prefix or "unverified"

    def _ambiguous(self):
        """A Canvas name with three digits-only segments in a row (`x_10000_10005_90005_a.py`)
        splits two ways: a name part ending in `_10000` (Canvas collapses only `_<digits>_`,
        and a student may set their own name), or a file name starting with digits. Read as
        Canvas reads it, it is user 10000's, but it may be user 10005's. Such a file is never
        graded as the user's while that user has a file that reads one way (it is noted), and
        one that only has such files keeps no student id (flagged), so a student whose name
        ends in another's id can neither replace that student's work nor make a row for
        them."""
        clear = {f.key for f in self.found if f.layout == "canvas" and not f.ambiguous}
        for found in self.found:
            if found.layout != "canvas" or not found.ambiguous:
                continue
            user, other = found.key.split(":", 1)[1], found.attachment
            if found.key in clear:
                found.outranked = True
                found.flags.append(f"{_shown(found.label)} splits two ways (user {user}, or user "
                                   f"{other} whose name ends in _{user}): not graded as user "
                                   f"{user}'s, who has a file that reads one way")
            else:
                found.flags.append(f"{_shown(found.label)} splits two ways (user {user}, or user "
                                   f"{other} whose name ends in _{user}): no student id is given "
                                   f"until you check whose it is")
                found.key = f"{found.key}:split:{found.lms_name}"
                found.student_id = ""
                found.row_prefix = "unverified"

    def _when(self, found):
        """(submitted_at, time_source, note) for the file that is graded."""
        if found.submitted_at:
            return found.submitted_at, found.time_source, None
        if found.layout == "canvas":
            return "", "", None   # its file time is when the zip was made; LATE says instead
        if found.layout != "moodle" and any(found.path.startswith(folder + os.sep)
                                            for folder in _UNPACKED):
            return "", "", None   # unpacked here: only Moodle's entry times are kept
        note = None
        path = found.path
        if found.layout == "nbgrader":
            path = _assignment_folder(found.path)
            when, note = times.nbgrader_time(path)
            if when:
                return when, "nbgrader-timestamp", None
        # Moodle's times carry no zone: kept as this machine's wall clock (course.py reads
        # them in course.toml's timezone); any other file time is an instant
        when = times.file_time(path, local=found.layout == "moodle")
        source = "moodle-file-time" if found.layout == "moodle" else "file-mtime"
        return when, source if when else "", note

    def batch(self):
        from . import submission_names
        self._cross_check()
        chosen, order = {}, []
        for found in self.found:   # one submission per student: the highest rank counts
            key = found.key or ("plain", len(order))
            if key not in chosen:
                chosen[key] = [found]
                order.append(key)
            else:
                chosen[key].append(found)
        submissions, counts = [], {}
        plain_paths = [chosen[k][0].path for k in order if chosen[k][0].layout == "plain"]
        plain_names = iter(submission_names(plain_paths, self.module)) if plain_paths else iter(())
        for key in order:
            ranked = sorted(chosen[key], key=lambda f: (not f.outranked, f.rank), reverse=True)
            group, companions, unused = _companions(ranked, self.module, self.earlier)
            best = group[0]
            notes = []
            for other in group[1:] + unused:
                notes.append(_("{file} was not graded: {chosen} is this student's latest or "
                               "main file").format(file=_shown(other.label),
                                                   chosen=_shown(best.label)))
            if best.layout == "plain":
                name = next(plain_names)
                sub = Submission(best.path, name, student_id(name) if student_id(name) == name else "",
                                 display_name(name), "plain")
            else:
                ident = best.student_id or ""
                who = best.student_name or ""
                if best.layout == "nbgrader":
                    name = ident or best.lms_name or best.label   # the student's folder
                elif best.layout == "gradescope":
                    name = f"{who}_{ident}" if who and ident else (ident or who or best.label)
                elif key.startswith("canvas-anonymous:"):
                    name = who
                elif not ident:   # withheld (see _cross_check): the name and what it said
                    name = f"{who}_{key.split(':')[1]}" if who else key
                else:
                    name = f"{who}_{ident}" if who else ident
                if best.row_prefix:   # never the name a real download's row would have
                    name = f"{best.row_prefix}-{name}"
                # one line: a folder name may hold a newline or a tab
                name = " ".join(safe_text(name, 400).split()) or _shown(best.label) or "unnamed"
                sub = Submission(best.path, name, ident, who, best.layout, notes)
            flags = list(dict.fromkeys(f for found in ranked for f in found.flags))
            sub.flags = [safe_text(f, 400) for f in flags[:20]]
            sub.companions = tuple((which, found.path) for which, found in companions)
            sub.late_flag = best.late_flag
            sub.submitted_at, sub.time_source, when_note = self._when(best)
            self.notes.extend(f"{sub.name}: {note}" for note in notes)
            if when_note:
                self.notes.append(f"{sub.name}: {when_note}; no submission time from nbgrader")
                sub.flags.append(safe_text(f"{when_note}; no submission time from nbgrader", 400))
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
    resolver = _Resolver(layout, module_name(module), earlier)
    for path in paths:
        resolver.add(os.fsdecode(path))
    return resolver.batch()


def plain(paths, module=None):
    """The current naming, for callers that pass bare paths: one Submission per path."""
    from . import submission_names
    names = submission_names(list(paths), module)
    return [Submission(p, n, student_id(n) if student_id(n) == n else "", display_name(n), "plain")
            for p, n in zip(paths, names)]
