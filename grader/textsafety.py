"""Text that came from a submission, made safe for a file, a terminal or a spreadsheet.

Every string a worker sends (an exception message, a printed line, a frame name) and every
name taken from an upload passes through `safe_text` before it reaches anything the grader
writes: lone surrogates (which UTF-8 cannot encode) become U+FFFD, NUL and control
characters (terminal escapes included) are dropped, and the length is capped with a
visible marker.

    safe_text("a\\udcffb\\x1b[2J", limit=100) == "a\\ufffdb[2J"
    capped("x" * 10_000, 100)                  # 100 characters, ending in a "cut" marker
"""
import re

from .i18n import N_, _

# C0 controls but TAB and LF, DEL, C1 controls, and the bidirectional overrides that can
# make a line read differently from what it holds
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_SURROGATE = re.compile("[\ud800-\udfff]")
CUT = N_("[... cut by the grader: {n} more characters]")  # in the feedback's language


def capped(text, limit, dropped=0):
    """`text` cut to at most `limit` characters, with a marker saying how much was cut
    (`dropped`: characters already cut before `text`)."""
    if limit is None or (len(text) <= limit and not dropped):
        return text
    marker = "\n" + _(CUT).format(n=len(text) + dropped - min(len(text), limit))
    keep = max(0, min(len(text), limit) - len(marker))
    return text[:keep] + marker[: limit - keep]


def safe_text(value, limit=None):
    """`value` as a str that encodes as UTF-8 and holds no control characters but \\t and \\n."""
    if not isinstance(value, str):
        try:
            value = str(value)
        except Exception:  # a hostile __str__
            value = f"<{type(value).__name__}>"
    dropped = 0
    if limit is not None and len(value) > 2 * limit + 64:  # bound the work below
        dropped = len(value) - (2 * limit + 64)
        value = value[: 2 * limit + 64]
    value = value.replace("\r\n", "\n").replace("\r", "\n")
    value = _SURROGATE.sub("\ufffd", value)
    value = _UNSAFE.sub("", value)
    return capped(value, limit, dropped)


def finite_number(value):
    """A cell or field read back from a file, as a finite float; None when it is not one
    (text, NaN, an infinity, a number too large for a float)."""
    try:
        value = float(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return value if value == value and abs(value) != float("inf") else None
