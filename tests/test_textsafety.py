"""textsafety: exactly which characters a student's string loses, and exactly where a
long one is cut (issue 19: these behaviours had no test; the figures are literals)."""
import pytest

from grader.textsafety import capped, safe_text

CUT_10 = "\n[... cut "  # the first 10 characters of every marker


@pytest.mark.parametrize("code", [*range(0x00, 0x09), *range(0x0b, 0x20), 0x7f, *range(0x80, 0xa0)])
def test_every_c0_c1_control_and_del_is_dropped(code):
    """C1 controls too: "\\x9b" is a one-character terminal escape (CSI) in many terminals."""
    char = chr(code)
    expected = "a\nb" if char in "\r" else "ab"  # a lone CR ends a line
    assert safe_text(f"a{char}b") == expected


def test_a_csi_escape_loses_its_introducer_only():
    assert safe_text("x\x9b2Jy\x1b[31mz") == "x2Jy[31mz"


@pytest.mark.parametrize("char", ["\u202a", "\u202b", "\u202c", "\u202d", "\u202e",
                                  "\u2066", "\u2067", "\u2068", "\u2069"])
def test_bidirectional_overrides_are_dropped(char):
    assert safe_text(f"grade{char}A") == "gradeA"


@pytest.mark.parametrize("char", ["\t", "\n", "\xa0", "\u2029", "\u202f", "\u2065", "\u206a",
                                  " ", "~", "é", "张"])
def test_the_neighbours_of_what_is_dropped_are_kept(char):
    assert safe_text(f"a{char}b") == f"a{char}b"


def test_line_ends_become_one_newline_each():
    assert safe_text("a\r\nb\rc\n\nd") == "a\nb\nc\n\nd"


def test_lone_surrogates_become_the_replacement_character():
    assert safe_text("a\udcffb\ud800c") == "a\ufffdb\ufffdc"
    assert safe_text("a\udcffb").encode("utf-8") == b"a\xef\xbf\xbdb"


def test_not_a_string():
    class Hostile:
        def __str__(self):
            raise RuntimeError("no")
    assert safe_text(Hostile()) == "<Hostile>"
    assert safe_text(12) == "12"
    assert safe_text(None) == "None"


def test_a_string_of_exactly_the_limit_is_not_cut():
    assert capped("x" * 100, 100) == "x" * 100
    assert safe_text("y" * 100, limit=100) == "y" * 100
    assert capped("x" * 5, None) == "x" * 5


def test_the_cut_is_exact_and_says_how_much_went():
    marker = "\n[... cut by the grader: 9900 more characters]"  # 10000 - 100
    out = capped("x" * 10_000, 100)
    assert out == "x" * (100 - len(marker)) + marker
    assert len(out) == 100
    out = capped("x" * 101, 100)
    assert out.endswith("\n[... cut by the grader: 1 more characters]") and len(out) == 100


def test_characters_cut_earlier_are_counted():
    assert capped("x" * 200, 100, dropped=50).endswith("cut by the grader: 150 more characters]")


def test_a_limit_shorter_than_the_marker_gives_the_marker_cut():
    assert capped("x" * 50, 10) == CUT_10
    assert capped("x" * 50, 0) == ""


def test_a_huge_string_is_cut_before_cleaning_at_twice_the_limit_plus_64():
    """The work is bounded: only the first 2 * limit + 64 characters are cleaned; what lies
    beyond is counted as cut even when the controls before it vanish."""
    assert safe_text("\x00" * 84 + "abc", limit=10) == CUT_10  # 84 = 2 * 10 + 64
    assert safe_text("\x00" * 84, limit=10) == ""
    assert safe_text("\x00" * 83 + "a", limit=10) == "a"
    # the exact point: 264 characters (2 * 100 + 64) are cleaned, 180 NULs vanish, 84 "y"
    # remain and 1000 "z" count as cut; 38 "y" fit beside the 46-character marker
    out = safe_text("\x00" * 180 + "y" * 84 + "z" * 1000, limit=100)
    assert out == "y" * 38 + "\n[... cut by the grader: 1000 more characters]"
    # one character past 264: it is cut uncleaned (and counted), even where it would stay
    assert safe_text("\x00" * 264 + "a", limit=100) == "\n[... cut by the grader: 1 more characters]"
    assert safe_text("a" * 200, limit=100).endswith("\n[... cut by the grader: 100 more characters]")
    out = safe_text("z" * 1_000_000, limit=100)
    assert out.endswith("\n[... cut by the grader: 999900 more characters]") and len(out) == 100


def test_cleaning_happens_before_the_cut():
    assert safe_text("\x00" * 50 + "abc", limit=5) == "abc"
    assert safe_text("a\r\nb", limit=3) == "a\nb"
