"""Gradescope's submission_metadata.yml, read safely: YAML's safe loader where PyYAML is
installed (an optional dependency; a tag it does not know, a Ruby object, read as the plain
data under it), else the small parser below (`parse_metadata_subset`, which reads only what
the kit needs); at most METADATA_BYTES and METADATA_KEYS submissions. Never raises: a file
that cannot be read is a note, and names then come from the folders.
"""
import os
import re

from ...intake import times
from ...intake.errors import IntakeError
from ...intake.layouts import MAX_NAME
from ...intake.safeio import Deadline, open_submitted, read_fd
from ...textsafety import safe_text

try:
    import yaml   # optional (the test extra has it); without it the subset parser reads the file
except ImportError:
    yaml = None

METADATA = "submission_metadata.yml"
METADATA_BYTES = 16 * 1024 * 1024
METADATA_KEYS = 100_000      # submissions read from one metadata file


def _read_metadata_bytes(path):
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
    if yaml is None:
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
