"""report/folders.py: folder names computed independently of folders.key, documented
figures as literals (issue 19: a wrong key passed the tests that checked uniqueness with
folders.key itself)."""
import unicodedata

import pytest

from grader.report import folders


def fold(name):
    """What macOS/Windows file systems would treat as the same name, computed here."""
    return unicodedata.normalize("NFKC", name).casefold()


def test_names_that_one_file_system_would_merge_get_numbered_folders():
    names = ["Alice", "alice", "ALICE", "ａｌｉｃｅ", "Straße", "STRASSE", "e\u0301", "\u00e9"]
    result = folders.folder_names(names)
    assert result == ["Alice", "alice-2", "ALICE-3", "ａｌｉｃｅ-4", "Straße", "STRASSE-2",
                      "e\u0301", "\u00e9-2"]
    assert len({fold(f) for f in result}) == len(names)


def test_the_first_free_suffix_skips_names_taken_later_in_the_list():
    assert folders.folder_names(["a", "a", "a-2", "a"]) == ["a", "a-3", "a-2", "a-4"]


@pytest.mark.parametrize("name, folder", [
    ("grades.csv", "grades.csv-2"), ("REPORT.HTML", "REPORT.HTML-2"),
    ("results.json", "results.json-2"), ("feedback.txt", "feedback.txt-2"),
    ("grader-errors.log", "grader-errors.log-2"), ("index.html", "index.html-2"),
    ("CON", "CON-2"), ("con.txt", "_con.txt-2"), ("nul", "nul-2"), ("aux.py", "_aux.py-2"),
    ("com0", "com0-2"), ("com9", "com9-2"), ("lpt1.x", "_lpt1.x-2"), ("lpt9", "lpt9-2"),
    ("prn", "prn-2"),
])
def test_names_the_grader_or_windows_own_are_never_folders(name, folder):
    assert folders.folder_names([name]) == [folder]


@pytest.mark.parametrize("name", ["com10", "lpt10", "console", "conx", "grades.csv.py",
                                  "results", "auxiliary", "nul_"])
def test_their_neighbours_are_ordinary_names(name):
    assert folders.folder_names([name]) == [name]
    assert not folders.reserved(name)


@pytest.mark.parametrize("name, folder", [
    (".git", "_git"), ("..", "_"), ("...", "_"), ("-rf", "_rf"), (" .x. ", "_x"),
    ("a. . ", "a"), ("", "submission"), ("   ", "submission"), ("a/b\\c", "a_b_c"),
    ("x\x00y\x1b[2J\x9b", "x_y__2J_"), ("caf\udce9", "caf_"), ("€5!#😀", "_5___"),
    ("attention (1)", "attention (1)"), ("a+b@c.d_e-f", "a+b@c.d_e-f"),
    ("张三", "张三"), ("٣e\u0301", "٣e\u0301"), (7, "7"),
])
def test_a_name_asks_for_a_safe_folder(name, folder):
    assert folders.candidate(name) == folder
    assert folders.folder_names([name]) == [folder]


def test_names_are_cut_at_80_bytes_of_utf8_and_keep_room_for_the_suffix():
    assert folders.candidate("a" * 100) == "a" * 80
    assert folders.candidate("a" * 80) == "a" * 80
    assert folders.candidate("张" * 40) == "张" * 26  # 78 bytes: a 27th would make 81
    assert folders.folder_names(["b" * 100, "B" * 90]) == ["b" * 80, "B" * 78 + "-2"]
    assert folders.candidate("a" * 79 + ".") == "a" * 79


def test_a_kept_folder_stays_and_no_new_name_takes_it():
    """A regrade: alice's row already lives in "Bob" (say, an old rename); a new student
    whose name asks for "bob" must not land in it, on any file system."""
    result = folders.folder_names(["bob", "alice", "BOB"], kept={"alice": "Bob"})
    assert result == ["bob-2", "Bob", "BOB-3"]
    assert folders.folder_names(["alice"], kept={"alice": "grades.csv-2"}) == ["grades.csv-2"]
    assert folders.folder_names(["zoe"], kept={"alice": "alice"}) == ["zoe"]
    # a kept name first in the list: the names after it still keep their own folders
    assert folders.folder_names(["alice", "zoe", "Zoe"], kept={"alice": "alice"}) == \
        ["alice", "zoe", "Zoe-2"]
