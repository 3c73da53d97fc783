"""Writing what the grader produces: atomically, as valid UTF-8, and never above a cap.

Every file is written to a temporary file in the same folder (its name starts with `.`,
which no submission's folder can: see report/folders.py) and moved into place with os.replace, so
a reader sees the old file or the new one, never half of one, and a failure leaves no
half-written file behind. Text goes through textsafety.safe_text first (lone surrogates,
NUL and control characters cannot reach a file) and is cut to a number of bytes with a
visible marker.

read_text reads a file an instructor names (a course file, an overrides import, a Canvas
template) no further than a bound, as UTF-8 text.
"""
import json
import math
import os
import tempfile

from .textsafety import CUT, safe_text

KB = 1024
MESSAGE_CHARS = 4 * KB          # one test's message (feedback.txt and results.json)
SUMMARY_CHARS = 64 * KB         # the summary at the top of both
FEEDBACK_BYTES = 256 * KB       # feedback.txt
RESULTS_BYTES = 1024 * KB       # results.json
LOG_BYTES = 1024 * KB           # grader-errors.log
GRADEBOOK_CELL_CHARS = 300      # one text cell of grades.csv


def size_text(limit):
    """`limit` bytes as a person reads it: 16 MB, 512 KB."""
    return f"{limit // (KB * KB)} MB" if limit % (KB * KB) == 0 else f"{limit // KB} KB"


def read_text(path, limit, error, name=None, hint=""):
    """The text of the file at `path` (UTF-8, a byte order mark dropped), read no further
    than `limit` bytes. When it cannot be read, is larger or is not UTF-8: `error` (an
    exception class) with `name` (the path by default) and what is wrong; `hint` follows
    the not-UTF-8 one (how to save it so)."""
    name = path if name is None else name
    try:
        with open(path, "rb") as handle:
            raw = handle.read(limit + 1)
    except OSError as failure:
        raise error(f"{name}: cannot read it ({failure.strerror or failure})") from None
    if len(raw) > limit:
        raise error(f"{name}: larger than {size_text(limit)}")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise error(f"{name}: not UTF-8 text{hint}") from None


def cap_bytes(text, limit):
    """`text` cut so that its UTF-8 encoding is at most `limit` bytes, with a marker."""
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    marker = "\n" + CUT.format(n=len(data) - limit).replace("characters", "bytes") + "\n"
    keep = max(0, limit - len(marker.encode("utf-8")))
    return data[:keep].decode("utf-8", errors="ignore") + marker


def clean(value):
    """A JSON-able structure with every string safe and every float finite."""
    if isinstance(value, str):
        return safe_text(value)
    if isinstance(value, bool) or value is None or isinstance(value, int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {safe_text(k): clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean(v) for v in value]
    return safe_text(value)


def dumps(data):
    """JSON text that cannot fail to encode (see clean) and is always valid JSON."""
    return json.dumps(clean(data), indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def write_text(path, text, limit=None):
    """Write `text` (made safe, cut to `limit` bytes) to `path` atomically."""
    text = safe_text(text)
    if limit is not None:
        text = cap_bytes(text, limit)
    write_bytes(path, text.encode("utf-8"))


def write_bytes(path, data):
    folder, base = os.path.split(os.path.abspath(path))
    descriptor, temporary = tempfile.mkstemp(prefix=f".{base[:40]}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    except BaseException:
        try:
            os.remove(temporary)
        except OSError:
            pass
        raise
