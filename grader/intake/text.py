"""Read a student's source file as text, whatever editor saved it.

Handles UTF-8 with or without a BOM, UTF-16 with a BOM (Notepad's "Unicode"), a PEP 263
coding line, GBK/GB18030 (Chinese Windows editors), CRLF and CR line endings; refuses empty
and binary files with a reason.
The result is written back as UTF-8 with LF line endings, so the worker reads it plainly.
"""
import codecs
import re

from ..i18n import _
from .errors import IntakeError

MAX_SOURCE_BYTES = 2 * 1024 * 1024
CODING_LINE = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")


def _declared_encoding(data):
    for line in data.splitlines()[:2]:
        match = CODING_LINE.match(line)
        if match:
            name = match.group(1).decode("ascii", "replace")
            try:
                return codecs.lookup(name).name
            except LookupError:
                return None
    return None


def decode_source(data, label):
    """(text, notes) for the bytes of a Python source file called `label`."""
    notes = []
    if len(data) > MAX_SOURCE_BYTES:
        raise IntakeError(_("{label} is {size}; a {what} over {limit} is not accepted.").format(
            label=label, size=f"{len(data) // 1024} KB", what=_("source file"),
            limit=f"{MAX_SOURCE_BYTES // 1024} KB"))
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):  # Notepad's "Unicode"
        try:
            data = data.decode("utf-16").encode("utf-8")
            notes.append(_("{label} was saved as UTF-16; the grader converted it. Save as "
                           "UTF-8 to be sure.").format(label=label))
        except UnicodeDecodeError:
            pass
    bom = data.startswith(codecs.BOM_UTF8)
    if bom:
        data = data[len(codecs.BOM_UTF8):]
    if not data.strip():
        raise IntakeError(_("{label} is empty: was the right file uploaded?").format(label=label))
    if b"\x00" in data[:8192]:
        hint = _(" (it starts like a zip archive)") if data[:2] == b"PK" else ""
        raise IntakeError(_("{label} is not a text file{hint}: it contains binary data. Upload "
                            "the .py source itself, not a .pyc, an archive or a document.").format(
                                label=label, hint=hint))
    if bom:
        notes.append(_("{label} starts with a UTF-8 byte-order mark; the grader removed "
                       "it.").format(label=label))
    declared = _declared_encoding(data)
    candidates = ([declared] if declared else []) + ["utf-8", "gb18030"]
    text = None
    for encoding in dict.fromkeys(candidates):
        try:
            text = data.decode(encoding)
        except (UnicodeDecodeError, LookupError):
            continue
        if encoding == declared and encoding != "utf-8":
            notes.append(_("{label} declares the {encoding} encoding in its coding line; the "
                           "grader read it so and graded a UTF-8 copy.").format(
                               label=label, encoding=encoding.upper()))
        elif encoding != "utf-8":
            notes.append(_("{label} is not UTF-8; the grader read it as {encoding} (the encoding "
                           "of Chinese Windows editors). Save as UTF-8 to be sure.").format(
                               label=label, encoding=encoding.upper()))
        break
    if text is None:
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as error:
            raise IntakeError(
                _("{label} could not be read as text: byte {byte} at position {position} is not "
                  "valid UTF-8, and the file is not GBK/GB18030 either. Save it as UTF-8 in your "
                  "editor and upload it again.").format(
                      label=label, byte=f"0x{data[error.start]:02x}",
                      position=error.start)) from None
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
        notes.append(_("{label} had Windows (CRLF) line endings; the grader converted "
                       "them.").format(label=label))
    if declared:
        lines = text.split("\n")
        for i in range(min(2, len(lines))):
            if CODING_LINE.match(lines[i].encode("utf-8", "replace")):
                lines[i] = "# (coding line removed: the grader saved this file as UTF-8)"
        text = "\n".join(lines)
    return text, notes
