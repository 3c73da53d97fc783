"""Student identity from the way work arrives: what an LMS hands over → one Submission
(the path to grade, the row's name, the student's id and display name) per student.

`resolve(paths, layout)` takes the paths given to `grader grade` and a layout:

- `canvas`: a Canvas bulk download ("Download Submissions"), one file per uploaded file,
  named `<name>_<userid>_<submissionid>_<original file name>`, with `LATE` after the name
  when Canvas marked it late, and `-1`, `-2` added to the original name when the student
  uploaded a file of the same name again::

      wangli_10000_90000_attention.py          → id 10000, name wangli
      liuyang_LATE_10001_90001_attention.ipynb → id 10001, name liuyang
      zhaomin_10002_90002_attention-1.py       → id 10002 (the second upload: it counts)

  The student id is Canvas's user id (the `ID` column of Canvas's gradebook). One file per
  student is graded: the one that looks most like the assignment's file, then the highest
  resubmission number; the others are noted.
- `moodle`: a Moodle assignment's "Download all submissions", a folder (or, without
  "download submissions in folders", a file prefix) per student and plugin::

      Fang Wu_10006_assignsubmission_file_/          → id 10006, name Fang Wu (graded)
      Fang Wu_10006_assignsubmission_onlinetext_/    → skipped (the online text)
      Fang Wu_10006_assignsubmission_file_attention.py

  The id is Moodle's participant id, what the assignment's grading worksheet calls
  `Participant 10006`.
- `gradescope`: a Gradescope "Export Submissions" folder: `submission_metadata.yml` and a
  folder `submission_<id>/` per submission. The metadata is read (safely: YAML's safe
  loader, or the small parser below where PyYAML is missing; at most METADATA_BYTES) for
  each submitter's `:name:`, `:sid:` and `:email:`; it is never graded. The id is the
  `:sid:` (else the email); a group submission lists its members joined by `;`.
- `nbgrader`: `submitted/<student>/<assignment>/` (a file, the assignment folder, the
  student's folder or `submitted` itself): the id is the student's folder name.
- `plain`: the file or folder name without its extension (intake.submission_names).
- `auto` (the default): each path is recognised by its name (and a folder holding
  `submission_metadata.yml`, a folder named `submitted`, or a folder of Canvas/Moodle names
  is opened); a name that matches no pattern is `plain`.

Files that are never a student's work (NON_SUBMISSIONS: `index.html`, `.DS_Store`,
`__MACOSX`, the metadata file, ...) are skipped with a one-line note, never given a row.

Everything here comes from names someone else chose, so: names are cut to MAX_NAME before
any pattern sees them, ids keep only ID_CHARS, display names pass textsafety.safe_text and
are capped; a folder is listed at most MAX_ENTRIES deep into; the only paths graded are
those given or entries listed in a folder given (a name from the metadata is only looked up
among the folders listed, never joined into a path).
"""
import dataclasses
import os
import re
import stat

from ..textsafety import safe_text
from .errors import IntakeError

LAYOUTS = ("auto", "plain", "nbgrader", "canvas", "moodle", "gradescope")
MAX_NAME = 255               # characters of a file name any pattern looks at
MAX_ENTRIES = 10_000         # entries listed in one folder
MAX_ID = 100                 # characters of a student id
MAX_DISPLAY = 200            # characters of a display name
METADATA = "submission_metadata.yml"
METADATA_BYTES = 16 * 1024 * 1024
METADATA_KEYS = 100_000      # submissions read from one metadata file
NON_SUBMISSIONS = frozenset({"index.html", METADATA, ".ds_store", "__macosx", "thumbs.db",
                             "desktop.ini", ".ipynb_checkpoints", "__pycache__"})
GRADEABLE = (".py", ".ipynb", ".zip")
ID_CHARS = re.compile(r"[^A-Za-z0-9._@+\-]")

# <name>[_LATE]_<user id>_<submission id>_<original file name>
CANVAS = re.compile(r"^(?P<name>[^_].*?)(?:_(?P<late>LATE))?_(?P<user>\d{1,20})_(?P<sub>\d{1,20})"
                    r"_(?P<file>[^_].*)$", re.IGNORECASE | re.DOTALL)
# the original name's resubmission suffix: attention-1.py, attention-12.ipynb
RESUBMISSION = re.compile(r"^(?P<base>.+?)-(?P<n>\d{1,4})$", re.DOTALL)
# <full name>_<participant id>_assign<submission|feedback>_<plugin>_[<file name>]
MOODLE = re.compile(r"^(?P<name>.+?)_(?P<id>\d{1,20})_assign(?P<kind>submission|feedback)"
                    r"_(?P<plugin>[a-z]{1,40})_(?P<file>.*)$", re.DOTALL)
GRADESCOPE_FOLDER = re.compile(r"^submission_(?P<id>\d{1,20})$")
ATTENTION_LIKE = re.compile(r"^attention([ _-]*(\(\d+\)|\d+|v\d+|final|copy))*$", re.IGNORECASE)


@dataclasses.dataclass
class Submission:
    path: str                     # what intake stages
    name: str                     # the row's name (unique in the batch; the folder asks for it)
    student_id: str = ""
    student_name: str = ""
    layout: str = "plain"
    notes: list = dataclasses.field(default_factory=list)  # for the student's feedback too


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
    text = ID_CHARS.sub("", safe_text(value, MAX_ID * 4))[:MAX_ID]
    return text.lstrip("-+@.")


def display_name(value):
    """A person's name for the gradebook: one safe line, capped ("Fang Wu", "王力")."""
    lines = safe_text(value, MAX_DISPLAY * 2).replace("\t", " ").strip().splitlines()
    return " ".join(lines[0].split())[:MAX_DISPLAY] if lines else ""


def _base(path):
    return os.path.basename(os.path.normpath(os.fsdecode(path)))[:MAX_NAME]


def _lstat(path):
    try:
        return os.lstat(path)
    except (OSError, ValueError):
        return None


def _is_dir(path):
    info = _lstat(path)
    return info is not None and stat.S_ISDIR(info.st_mode)


def _listing(folder):
    """(names, cut): the entries of `folder` (never through a link), at most MAX_ENTRIES."""
    names = []
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                if len(names) >= MAX_ENTRIES:
                    return sorted(names), True
                names.append(entry.name)
    except (OSError, ValueError):
        return [], False
    return sorted(names), False


def non_submission(name):
    """Files an LMS or an operating system adds that are never a student's work.

        non_submission("index.html") and non_submission("._attention.py")
        not non_submission("wangli_10000_90000_attention.py")
    """
    folded = name.casefold()
    return folded in NON_SUBMISSIONS or folded.startswith("._")


def _stem(file_name):
    stem, ext = os.path.splitext(file_name)
    return (stem, ext.lower()) if ext.lower() in GRADEABLE else (file_name, ext.lower())


# --- one parser per layout: a name → its parts, or None -----------------------------------

def parse_canvas(name):
    """{"name", "user", "submission", "late", "file", "base", "resubmission"} for a Canvas
    bulk-download file name, else None.

        parse_canvas("wangli_10000_90000_attention.py")["user"] == "10000"
        parse_canvas("liuyang_LATE_10001_90001_attention.ipynb")["late"] is True
        parse_canvas("zhaomin_10002_90002_attention-2.py")["resubmission"] == 2
        parse_canvas("alice.py") is None
    """
    match = CANVAS.match(name[:MAX_NAME])
    if not match:
        return None
    original = match["file"]
    stem, ext = _stem(original)
    again = RESUBMISSION.match(stem)
    number = int(again["n"]) if again else 0
    return {"name": display_name(match["name"]), "user": match["user"],
            "submission": match["sub"], "late": bool(match["late"]), "file": original,
            "base": (again["base"] if again else stem) + ext, "resubmission": number}


def parse_moodle(name):
    """{"name", "id", "plugin", "file", "feedback"} for a Moodle download name (a folder
    `Fang Wu_10006_assignsubmission_file_` or a file `..._assignsubmission_file_attention.py`),
    else None.

        parse_moodle("Fang Wu_10006_assignsubmission_file_")["id"] == "10006"
        parse_moodle("Fang Wu_10006_assignsubmission_onlinetext_")["plugin"] == "onlinetext"
    """
    match = MOODLE.match(name[:MAX_NAME])
    if not match:
        return None
    return {"name": display_name(match["name"]), "id": match["id"], "plugin": match["plugin"],
            "file": match["file"], "feedback": match["kind"] == "feedback"}


def nbgrader_parts(path):
    """(student, rest) when `path` lies in nbgrader's `submitted/<student>/...`, else None.

        nbgrader_parts("course/submitted/alice/attention/attention.py") == ("alice", ("attention", "attention.py"))
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


def parse_metadata_subset(text):
    """{submission folder: [{"name", "sid", "email"}, ...]} from the part of a Gradescope
    submission_metadata.yml this needs, for a machine without PyYAML. Reads the top-level
    keys and each one's `:submitters:` list; everything else is passed over::

        submission_123:
          :submitters:
          - :name: Jane Doe
            :sid: '12345'
            :email: jane@example.edu
          :created_at: 2026-11-30 12:00:00.000000000 -08:00
    """
    found, current, submitters, item, item_indent = {}, None, None, None, None
    for line in text.splitlines():
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
        indent = len(line) - len(line.lstrip(" "))
        listed = _ITEM.match(line)
        if submitters is not None and listed and indent <= submitters + 2:
            item, item_indent = {}, indent + 2
            found[current].append(item)
            item[listed["key"].lstrip(":")] = _scalar(listed["value"] or "")
            continue
        field = _FIELD.match(line)
        if field and item is not None and indent == item_indent:
            item[field["key"].lstrip(":")] = _scalar(field["value"] or "")
            continue
        if field and field["key"].lstrip(":") == "submitters" and not (field["value"] or "").strip():
            submitters, item = indent, None
            continue
        if submitters is not None and indent <= submitters and not listed:
            submitters, item = None, None
    return {key: [{k: s.get(k, "") for k in ("name", "sid", "email")} for s in people[:50]]
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


def read_metadata(path):
    """({submission folder: [{"name", "sid", "email"}]}, note or None) from a Gradescope
    submission_metadata.yml: PyYAML's safe loader where it is installed, else (or when it
    refuses the file) the subset parser; at most METADATA_BYTES. Never raises."""
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
                return {safe_text(k, MAX_NAME): _people(parsed[k]) for k in keys
                        if isinstance(k, (str, int))}, None
        except Exception:  # noqa: BLE001 - a file PyYAML refuses: the subset parser tries
            pass
    try:
        return parse_metadata_subset(text), None
    except Exception as error:  # noqa: BLE001
        return {}, f"{METADATA} could not be parsed ({type(error).__name__}); names come from the folders."


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


def _attention_rank(file_name):
    stem, ext = _stem(file_name)
    again = RESUBMISSION.match(stem)
    base = again["base"] if again else stem
    return (ext in GRADEABLE, bool(ATTENTION_LIKE.match(base)) or bool(ATTENTION_LIKE.match(stem)))


def _canvas(path, name):
    parts = parse_canvas(name)
    if parts is None:
        return None
    rank = _attention_rank(parts["base"]) + (parts["resubmission"], int(parts["submission"]), name)
    return _Found(path, "canvas", "canvas:" + parts["user"], student_id(parts["user"]),
                  parts["name"], rank, name)


def _moodle(path, name, is_dir, notes):
    parts = parse_moodle(name)
    if parts is None:
        return None
    if parts["feedback"] or parts["plugin"] != "file":
        notes.append(f"skipped {safe_text(name, 120)}: Moodle's {parts['plugin']} "
                     f"{'feedback' if parts['feedback'] else 'submission'}, not a file submission")
        return False
    if not is_dir and not parts["file"]:
        return None
    rank = (True, True) if is_dir else _attention_rank(parts["file"])
    return _Found(path, "moodle", "moodle:" + parts["id"], student_id(parts["id"]), parts["name"],
                  rank + (0, 0, name), name)


def _nbgrader(path, is_dir):
    found = nbgrader_parts(path)
    if found is None or not found[0] or non_submission(found[0]) or (not found[1] and not is_dir):
        return None  # a file right in submitted/ is no student's folder
    student = found[0]
    return _Found(path, "nbgrader", "nbgrader:" + student, student_id(student),
                  display_name(student), (True, True, 0, 0, _base(path)), _base(path))


class _Resolver:
    def __init__(self, layout):
        if layout not in LAYOUTS:
            raise ValueError(f"unknown layout {layout!r}: one of {', '.join(LAYOUTS)}")
        self.layout = layout
        self.notes = []
        self.found = []
        self.metadata = {}        # folder → (its metadata, or None when it has none)

    def allows(self, layout):
        return self.layout in ("auto", layout)

    def skip(self, name, why):
        self.notes.append(f"skipped {safe_text(name, 120)}: {why}")

    # a path given, or an entry of a folder given
    def add(self, path, depth=0):
        name = _base(path)
        is_dir = _is_dir(path)
        if name == METADATA:
            if self.layout in ("auto", "gradescope"):
                self._metadata_for(os.path.dirname(os.path.abspath(path)))
            self.skip(name, "Gradescope's metadata (read for names, never graded)")
            return
        if non_submission(name):
            self.skip(name, "not a submission (added by an LMS or an operating system)")
            return
        if is_dir and depth == 0 and self._expand(path, name):
            return
        for attempt in self._attempts(path, name, is_dir):
            found = attempt()
            if found is False:
                return
            if found is not None:
                self.found.append(found)
                return
        if self.layout not in ("auto", "plain"):
            self.notes.append(f"{safe_text(name, 120)} does not look like {self.layout}'s layout: "
                              f"named after the file")
        self.found.append(_Found(path, "plain", label=name))

    def _attempts(self, path, name, is_dir):
        if self.allows("gradescope"):
            yield lambda: self._gradescope(path, name, is_dir)
        if self.allows("nbgrader"):
            yield lambda: _nbgrader(path, is_dir)
        if self.allows("canvas") and not is_dir:
            yield lambda: _canvas(path, name)
        if self.allows("moodle"):
            yield lambda: _moodle(path, name, is_dir, self.notes)

    def _expand(self, path, name):
        """A folder that holds a whole download (not one student's work): its entries."""
        names, cut = _listing(path)
        if self.allows("gradescope") and METADATA in names:
            kind = "a Gradescope export"
        elif self.allows("nbgrader") and name == "submitted":
            kind = "an nbgrader submitted/ folder"
        elif any(n.lower() in ("attention.py", "attention.ipynb") for n in names):
            return False
        elif self.allows("canvas") and any(parse_canvas(n) for n in names):
            kind = "a Canvas download"
        elif self.allows("moodle") and any(parse_moodle(n) for n in names):
            kind = "a Moodle download"
        else:
            return False
        if cut:
            self.notes.append(f"{safe_text(name, 120)}: only its first {MAX_ENTRIES} entries were read")
        self.notes.append(f"{safe_text(name, 120)}: {kind}, {len(names)} entries")
        for entry in names:
            self.add(os.path.join(path, entry), depth=1)
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
        meta = self._metadata_for(os.path.dirname(os.path.abspath(path)))
        if meta is None and self.layout != "gradescope":
            return None
        people = (meta or {}).get(name) or []
        ids = [student_id(p.get("sid") or p.get("email") or "") for p in people]
        names = [display_name(p.get("name") or "") for p in people]
        ids = [i for i in ids if i]
        if not people:
            self.notes.append(f"{safe_text(name, 120)}: not in {METADATA}; named after its folder")
        key = "gradescope:" + (";".join(ids) if ids else name)
        return _Found(path, "gradescope", key, ";".join(ids)[:MAX_ID * 4],
                      "; ".join(n for n in names if n)[:MAX_DISPLAY * 2],
                      (True, True, 0, int(match["id"]), name), name)

    def batch(self):
        from . import submission_names
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
        plain_names = iter(submission_names(plain_paths)) if plain_paths else iter(())
        for key in order:
            group = sorted(chosen[key], key=lambda f: f.rank, reverse=True)
            best = group[0]
            notes = []
            for other in group[1:]:
                notes.append(f"{safe_text(other.label, 120)} was not graded: {safe_text(best.label, 120)} "
                             f"is this student's latest or main file")
            if best.layout == "plain":
                name = next(plain_names)
                sub = Submission(best.path, name, student_id(name) if student_id(name) == name else "",
                                 display_name(name), "plain")
            else:
                ident = best.student_id or ""
                who = best.student_name or ""
                if best.layout == "nbgrader":
                    name = ident or best.label
                elif best.layout == "gradescope":
                    name = f"{who}_{ident}" if who and ident else (ident or who or best.label)
                else:
                    name = f"{who}_{ident}" if who else ident
                sub = Submission(best.path, safe_text(name, 400), ident, who, best.layout, notes)
            self.notes.extend(f"{sub.name}: {note}" for note in notes)
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
        return Batch(submissions, self.notes, counts)


def resolve(paths, layout="auto"):
    """The Batch for the paths given to `grader grade` (see the module's docstring)."""
    resolver = _Resolver(layout)
    for path in paths:
        resolver.add(os.fsdecode(path))
    return resolver.batch()


def plain(paths):
    """The current naming, for callers that pass bare paths: one Submission per path."""
    from . import submission_names
    names = submission_names(list(paths))
    return [Submission(p, n, student_id(n) if student_id(n) == n else "", display_name(n), "plain")
            for p, n in zip(paths, names)]
