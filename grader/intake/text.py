"""Read a student's source file as text, whatever editor saved it.

Handles UTF-8 with or without a BOM, UTF-16 with a BOM (Notepad's "Unicode"), a PEP 263
coding line, GBK/GB18030 (Chinese Windows editors), CRLF and CR line endings; refuses empty
and binary files with a reason.
The result is written back as UTF-8 with LF line endings, so the worker reads it plainly.
"""
import codecs
import re

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
        raise IntakeError(f"{label} is {len(data) // 1024} KB; a source file over "
                          f"{MAX_SOURCE_BYTES // 1024} KB is not accepted.")
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):  # Notepad's "Unicode"
        try:
            data = data.decode("utf-16").encode("utf-8")
            notes.append(f"{label} was saved as UTF-16; the grader converted it. Save as UTF-8 "
                         f"to be sure.")
        except UnicodeDecodeError:
            pass
    bom = data.startswith(codecs.BOM_UTF8)
    if bom:
        data = data[len(codecs.BOM_UTF8):]
    if not data.strip():
        raise IntakeError(f"{label} is empty: was the right file uploaded?")
    if b"\x00" in data[:8192]:
        hint = " (it starts like a zip archive)" if data[:2] == b"PK" else ""
        raise IntakeError(f"{label} is not a text file{hint}: it contains binary data. Upload "
                          f"the .py source itself, not a .pyc, an archive or a document.")
    if bom:
        notes.append(f"{label} starts with a UTF-8 byte-order mark; the grader removed it.")
    declared = _declared_encoding(data)
    candidates = ([declared] if declared else []) + ["utf-8", "gb18030"]
    text = None
    for encoding in dict.fromkeys(candidates):
        try:
            text = data.decode(encoding)
        except (UnicodeDecodeError, LookupError):
            continue
        if encoding == declared and encoding != "utf-8":
            notes.append(f"{label} declares the {encoding.upper()} encoding in its coding line; "
                         f"the grader read it so and graded a UTF-8 copy.")
        elif encoding != "utf-8":
            notes.append(f"{label} is not UTF-8; the grader read it as {encoding.upper()} "
                         f"(the encoding of Chinese Windows editors). Save as UTF-8 to be sure.")
        break
    if text is None:
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as error:
            raise IntakeError(
                f"{label} could not be read as text: byte 0x{data[error.start]:02x} at position "
                f"{error.start} is not valid UTF-8, and the file is not GBK/GB18030 either. "
                f"Save it as UTF-8 in your editor and upload it again.") from None
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
        notes.append(f"{label} had Windows (CRLF) line endings; the grader converted them.")
    if declared:
        lines = text.split("\n")
        for i in range(min(2, len(lines))):
            if CODING_LINE.match(lines[i].encode("utf-8", "replace")):
                lines[i] = "# (coding line removed: the grader saved this file as UTF-8)"
        text = "\n".join(lines)
    return text, notes
