"""Each submission's code as `grader grade` kept it (report/kept.py: DIR/<folder>/
submitted-code.py, and submitted-code.json saying whether it was a notebook and its cells),
read back for `grader similarity`. The report compares what that record says (a notebook's
cells, else the file), never what the text of the code claims to be: a plain .py that opens
like intake's converted notebooks is compared as the plain file it is. `read_code` reads both
back as hostile text: regular files only, never through a link, capped.
"""
import dataclasses
import hashlib
import json
import os
import stat

from ..i18n import N_, _
from ..outcomes import Kept  # noqa: F401 - what `keep` writes (bench.py, the tests)
from ..report.kept import (CODE_FILE, MAX_CELLS, RECORD_FILE, STORE_BYTES,  # noqa: F401
                           keep, staged_code)

MAX_CODE_BYTES = 128 * 1024       # what `grader similarity` reads; larger files are skipped (a
# real submission is under 10 KB; tokenizing 128 KB takes seconds)
REGRADE = N_("run `grader grade` on it again")


@dataclasses.dataclass
class Code:
    """A stored submission read back: `text` as the page shows it (a notebook's cells one
    after another, each headed `# cell N`), and `blocks`, [(source, line offset in text)],
    each parsed on its own."""
    text: str
    blocks: list
    notebook: bool = False


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
