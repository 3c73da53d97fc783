"""Each submission's code as intake staged it, kept in the gradebook for `grader similarity`.

`grader grade` keeps what it graded in DIR/<folder>/submitted-code.py (`keep`): the
plain <module>.py intake made of the upload (a notebook's cells wrapped in intake's
runner, an odd encoding decoded, CRLF gone), written atomically, made safe and capped
like every other file of the gradebook. Beside it, DIR/<folder>/submitted-code.json says
what intake recorded about the upload: whether it was a notebook, and its code cells
(number and source, as intake ran them), with the sha256 of the .py it describes. The
report compares what that record says (a notebook's cells, else the file), never what the
text of the code claims to be: a plain .py that opens like intake's converted notebooks is
compared as the plain file it is. `read_code` reads both back as hostile text: regular
files only, never through a link, capped.
"""
import dataclasses
import hashlib
import json
import os
import stat

from ..i18n import N_, _
from .. import files
from ..textsafety import safe_text

CODE_FILE = "submitted-code.py"
RECORD_FILE = "submitted-code.json"
STORE_BYTES = 2 * 1024 * 1024     # intake's own cap on a .py file (intake/text.py)
MAX_CODE_BYTES = 128 * 1024       # what `grader similarity` reads; larger files are skipped (a
# real submission is under 10 KB; tokenizing 128 KB takes seconds)
MAX_CELLS = 5000
REGRADE = N_("run `grader grade` on it again")


@dataclasses.dataclass
class Kept:
    """What `grader grade` keeps of one submission: the staged module's text, and the code
    cells intake converted ([(number, source)]) when the upload was a notebook (else None)."""
    text: str
    cells: list = None


@dataclasses.dataclass
class Code:
    """A stored submission read back: `text` as the page shows it (a notebook's cells one
    after another, each headed `# cell N`), and `blocks`, [(source, line offset in text)],
    each parsed on its own."""
    text: str
    blocks: list
    notebook: bool = False


def staged_code(staged):
    """What intake staged (None when it refused the upload), as Kept; never raises."""
    if getattr(staged, "error", None) or not getattr(staged, "file", None):
        return None
    try:
        with open(staged.file, "rb") as handle:
            data = handle.read(STORE_BYTES + 1)
        cells = getattr(staged, "cells", None)
        return Kept(data.decode("utf-8", errors="replace"),
                    None if cells is None else [(int(n), str(s)) for n, s in cells])
    except (OSError, TypeError, ValueError):
        return None


def attach(result, code):
    """`result` (a SubmissionResult) carrying the staged code (Kept or None) for `keep`."""
    result.staged_code = code
    return result


def keep(out_dir, result):
    """Write the result's staged code to DIR/<folder>/submitted-code.py and what intake
    recorded of it to submitted-code.json, or remove both when intake refused the upload; a
    result that carries none (the grader failed before intake) leaves them as they are.
    Never raises: a copy for review is not worth a row."""
    if not hasattr(result, "staged_code"):
        return
    try:
        folder = os.path.join(out_dir, result.folder)
        kept = result.staged_code
        if isinstance(kept, str):
            kept = Kept(kept)
        if kept is None:
            for name in (RECORD_FILE, CODE_FILE):
                if os.path.lexists(os.path.join(folder, name)):
                    os.remove(os.path.join(folder, name))
            return
        os.makedirs(folder, exist_ok=True)
        data = files.cap_bytes(safe_text(kept.text), STORE_BYTES).encode("utf-8")
        record = {"form": "file" if kept.cells is None else "notebook",
                  "code_sha256": hashlib.sha256(data).hexdigest()}
        if kept.cells is not None:   # held to the code's own cap, as the .py is
            record["cells"], size = [], 0
            for number, source in kept.cells[:MAX_CELLS]:
                size += len(source.encode("utf-8", "replace"))
                if size > STORE_BYTES:
                    break
                record["cells"].append([number, safe_text(source)])
        files.write_bytes(os.path.join(folder, CODE_FILE), data)
        files.write_text(os.path.join(folder, RECORD_FILE), json.dumps(record, ensure_ascii=False))
    except Exception:
        pass


class Unreadable(Exception):
    """A stored code file that is not read; the message is the reason shown."""


def _read(path, limit, what):
    """The bytes of a regular file, not a link, of at most `limit` bytes; Unreadable."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        raise
    except OSError as error:
        raise Unreadable(_("{what} not read ({why})").format(
            what=what, why=os.strerror(error.errno or 0) or "link")) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise Unreadable(_("{what} is not a regular file").format(what=what))
        if info.st_size > limit:
            raise Unreadable(_("{what} is {size} KB, over the {cap} KB cap").format(
                what=what, size=info.st_size // 1024, cap=limit // 1024))
        data = os.read(fd, limit + 1)
        if len(data) > limit:
            raise Unreadable(_("{what} is over the {cap} KB cap").format(what=what, cap=limit // 1024))
    finally:
        os.close(fd)
    return data


def read_code(folder, limit=MAX_CODE_BYTES):
    """The Code stored in a row's folder: submitted-code.py as submitted-code.json says it
    is (a notebook's cells, or the file as it is); Unreadable with the reason otherwise."""
    try:
        data = _read(os.path.join(folder, CODE_FILE), limit, _("stored code"))
    except FileNotFoundError:
        raise Unreadable(_("no stored code (graded before the kit kept it, or intake refused "
                           "the upload): {regrade}").format(regrade=_(REGRADE))) from None
    try:   # JSON escapes can make the cells' text up to 6 times longer than the code
        raw = _read(os.path.join(folder, RECORD_FILE), 6 * limit + 65536, _("the code's record"))
    except FileNotFoundError:
        raise Unreadable(_("the stored code has no {record} saying whether it was a notebook "
                           "(graded before the kit recorded it): {regrade}").format(
                               record=RECORD_FILE, regrade=_(REGRADE))) from None
    record = _record(raw)
    if record is None:
        raise Unreadable(_("{record} does not read as the kit writes it: {regrade}").format(
            record=RECORD_FILE, regrade=_(REGRADE)))
    if record["code_sha256"] != hashlib.sha256(data).hexdigest():
        raise Unreadable(_("{record} describes other code than {code} (written by another "
                           "run): {regrade}").format(record=RECORD_FILE, code=CODE_FILE,
                                                     regrade=_(REGRADE)))
    return code_of(data.decode("utf-8", errors="replace"),
                   None if record["form"] == "file" else record["cells"])


def code_of(text, cells=None):
    """The Code compared: `cells` ([(number, source)], what intake recorded of a notebook)
    one after another, each headed `# cell N`; without cells, `text` as it is."""
    if cells is None:
        return Code(text, [(text, 0)])
    shown, blocks, line = [], [], 0
    for number, source in cells:
        body = source.rstrip()
        shown.append(f"# cell {number}\n{body}\n")
        blocks.append((body, line + 1))
        line += 3 + body.count("\n")    # the header, the body, the blank line between cells
    return Code("\n".join(shown), blocks, notebook=True)


def _record(raw):
    """submitted-code.json checked field by field, or None."""
    try:
        record = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    if not isinstance(record, dict) or record.get("form") not in ("file", "notebook") \
            or not isinstance(record.get("code_sha256"), str):
        return None
    if record["form"] == "notebook":
        cells = record.get("cells")
        if not isinstance(cells, list) or len(cells) > MAX_CELLS or not all(
                isinstance(c, list) and len(c) == 2 and isinstance(c[0], int)
                and not isinstance(c[0], bool) and isinstance(c[1], str) for c in cells):
            return None
    return record
