"""grader/intake/text.py at its edges (issue 19): the 2 MB cap on both sides, each encoding
an editor writes (bytes built here with Python's own codecs) and the note it gives, the
coding line read and removed only in the first two lines, the binary check on its first
8192 bytes, and each refusal by its whole text."""
import codecs

import pytest

from grader.intake import IntakeError
from grader.intake.text import MAX_SOURCE_BYTES, decode_source

SOURCE = "# 注意力\nLABEL = '注意力'\n"


def _refused(data):
    with pytest.raises(IntakeError) as error:
        decode_source(data, "a.py")
    return str(error.value)


def test_2_mb_is_read_and_one_byte_more_is_refused():
    assert MAX_SOURCE_BYTES == 2_097_152
    body = b"#" * (2 * 2**20 - 1) + b"\n"
    assert decode_source(body, "a.py") == (body.decode(), [])
    assert _refused(body + b"\n") == "a.py is 2048 KB; a source file over 2048 KB is not accepted."


def test_plain_utf8_comes_back_unchanged_without_a_note():
    assert decode_source(SOURCE.encode("utf-8"), "a.py") == (SOURCE, [])


@pytest.mark.parametrize("codec, bom", [("utf-16-le", codecs.BOM_UTF16_LE),
                                        ("utf-16-be", codecs.BOM_UTF16_BE)])
def test_utf16_with_its_bom_is_converted_and_said(codec, bom):
    assert decode_source(bom + SOURCE.encode(codec), "a.py") == (SOURCE, [
        "a.py was saved as UTF-16; the grader converted it. Save as UTF-8 to be sure."])


def test_a_utf16_bom_before_bytes_that_are_not_utf16_is_binary():
    assert _refused(codecs.BOM_UTF16_LE + b"\x00\xd8x") == (
        "a.py is not a text file: it contains binary data. Upload the .py source itself, not a "
        ".pyc, an archive or a document.")


def test_a_utf8_bom_is_removed_and_said():
    assert decode_source(codecs.BOM_UTF8 + b"X = 1\n", "a.py") == ("X = 1\n", [
        "a.py starts with a UTF-8 byte-order mark; the grader removed it."])


@pytest.mark.parametrize("data", [b"", b" \t\r\n\x0b\x0c", codecs.BOM_UTF8 + b"\n"])
def test_an_empty_file_is_refused(data):
    assert _refused(data) == "a.py is empty: was the right file uploaded?"


def test_binary_is_looked_for_in_the_first_8192_bytes():
    assert _refused(b"PK\x03\x04\x00") == (
        "a.py is not a text file (it starts like a zip archive): it contains binary data. "
        "Upload the .py source itself, not a .pyc, an archive or a document.")
    assert _refused(b"P" + b"x" * 8190 + b"\x00").startswith("a.py is not a text file: it ")
    late = b"X = 1\n" + b"#" * 8186 + b"\x00"        # the NUL at offset 8192
    assert decode_source(late, "a.py") == (late.decode(), [])


def test_gb18030_is_read_and_said():
    assert decode_source(SOURCE.encode("gb18030"), "a.py") == (SOURCE, [
        "a.py is not UTF-8; the grader read it as GB18030 (the encoding of Chinese Windows "
        "editors). Save as UTF-8 to be sure."])


def test_a_declared_encoding_is_read_said_and_its_line_removed():
    data = "#!/usr/bin/env python\n# -*- coding: latin-1 -*-\nNAME = 'café'\n".encode("latin-1")
    assert decode_source(data, "a.py") == (
        "#!/usr/bin/env python\n# (coding line removed: the grader saved this file as UTF-8)\n"
        "NAME = 'café'\n",
        ["a.py declares the ISO8859-1 encoding in its coding line; the grader read it so and "
         "graded a UTF-8 copy."])


def test_a_coding_line_on_one_line_alone_is_removed():
    assert decode_source(b"# coding=gbk", "a.py") == (
        "# (coding line removed: the grader saved this file as UTF-8)",
        ["a.py declares the GBK encoding in its coding line; the grader read it so and graded "
         "a UTF-8 copy."])


def test_only_the_first_two_lines_declare():
    data = "X = 1\nY = 2\n# coding: latin-1\nNAME = '注意力'\n".encode("utf-8")
    assert decode_source(data, "a.py") == (data.decode(), [])
    both = b"# coding: utf-8\n# coding: utf-8\n# coding: utf-8\n"
    assert decode_source(both, "a.py") == (
        "# (coding line removed: the grader saved this file as UTF-8)\n" * 2 +
        "# coding: utf-8\n", [])


def test_an_unknown_or_wrong_declared_encoding_falls_back_to_utf8():
    unknown = "# coding: klingon\nNAME = '注意力'\n".encode("utf-8")
    assert decode_source(unknown, "a.py") == (unknown.decode(), [])
    wrong = "# coding: ascii\nNAME = '注意力'\n".encode("utf-8")
    assert decode_source(wrong, "a.py") == (
        "# (coding line removed: the grader saved this file as UTF-8)\nNAME = '注意力'\n", [])


def test_line_endings_become_lf_and_are_said():
    for data in (b"X = 1\r\nY = 2\r\n", b"X = 1\rY = 2\r"):
        assert decode_source(data, "a.py") == ("X = 1\nY = 2\n", [
            "a.py had Windows (CRLF) line endings; the grader converted them."])


def test_bytes_no_encoding_reads_are_refused_by_byte_and_position():
    assert _refused(b"X = 1\n\x80\n") == (
        "a.py could not be read as text: byte 0x80 at position 6 is not valid UTF-8, and the "
        "file is not GBK/GB18030 either. Save it as UTF-8 in your editor and upload it again.")
