"""grader/overrides.py at its edges (issue 19): the documented caps as literals, each bound
on both sides, each refusal by its whole reason, and a ledger that does not read is an
error with the entry and the field it names."""
import json
import os

import pytest

from grader import overrides
from grader.overrides import OverrideError


def _row(name, student_id="", status="graded", total=80.0, parts=None):
    return {"name": name, "status": status, "total": total, "max": 100.0,
            "parts": parts or {"mask": [30.0, 40.0], "softmax": [50.0, 60.0]},
            "student_id": student_id}


ROWS = [_row("wangli_10000", "10000"), _row("liu_10001", "10001"),
        _row("pair", "20001;20002"), _row("noid")]


def test_the_documented_caps():
    assert overrides.FILE == "overrides.json"
    assert overrides.MAX_BYTES == 16 * 1_048_576
    assert overrides.MAX_IMPORT_BYTES == 1_048_576
    assert overrides.MAX_IMPORT_ROWS == 10000
    assert overrides.MAX_POINTS == 1_000_000
    assert overrides.TOTAL == "total"


def test_who_is_sudo_user_then_user(monkeypatch):
    monkeypatch.setenv("SUDO_USER", "prof")
    monkeypatch.setenv("USER", "root")
    assert overrides.who() == "prof"
    monkeypatch.delenv("SUDO_USER")
    assert overrides.who() == "root"
    monkeypatch.setenv("USER", "ta\x1b[31m")
    assert "\x1b" not in overrides.who()


def test_now_is_utc_to_the_second():
    stamp = overrides.now()
    assert stamp.endswith("+00:00") and len(stamp) == len("2026-12-01T23:59:00+00:00")


def test_a_row_is_found_by_its_name_or_its_whole_id_never_by_one_member_of_a_group():
    assert overrides.find_row(ROWS, " pair ")["name"] == "pair"
    # issue 27: one member's id is not the group's (its score is both members')
    with pytest.raises(OverrideError, match="'20002' is one member of the group submission 'pair'"):
        overrides.find_row(ROWS, "20002")
    assert overrides.find_row(ROWS, "20001;20002")["name"] == "pair"
    assert overrides.find_row(ROWS, "noid")["name"] == "noid"
    # a row without an id is recorded under its name
    assert overrides.entry_for(ROWS, "noid", "mask", 1, "r")["student"] == "noid"
    assert overrides.row_key({"student_id": None, "name": "x"}) == "x"
    assert overrides.row_key({}) == ""


def test_no_row_lists_at_most_20_students_and_says_how_many_more():
    rows = [_row(f"s{i:02d}", f"1{i:04d}") for i in range(23)]
    with pytest.raises(OverrideError) as error:
        overrides.find_row(rows, "carl")
    shown = ", ".join(f"1{i:04d}" for i in range(20))
    assert str(error.value) == f"no row for student 'carl' in the gradebook (students: {shown} and 3 more)"
    with pytest.raises(OverrideError) as error:
        overrides.find_row(rows[:20], "carl")
    assert str(error.value).endswith(f"(students: {shown})")


def test_many_matches_name_at_most_10():
    rows = [_row(f"d{i:02d}", "7") for i in range(12)]
    with pytest.raises(OverrideError) as error:
        overrides.find_row(rows, "7")
    names = ", ".join(f"d{i:02d}" for i in range(10))
    assert str(error.value) == f"'7' matches 12 rows ({names}); give the submission name as in grades.csv"


def test_points_bounds_are_inclusive():
    assert overrides.entry_for(ROWS, "10000", "mask", "40", "r")["points"] == 40.0
    assert overrides.entry_for(ROWS, "10000", "mask", "0", "r")["points"] == 0.0
    assert overrides.entry_for(ROWS, "10000", "total", "100", "r")["points"] == 100.0
    assert overrides.entry_for(ROWS, "10000", "mask", "1000000", "r", allow_bonus=True)["points"] == 1e6
    with pytest.raises(OverrideError) as error:
        overrides.entry_for(ROWS, "10000", "mask", "1000000.5", "r", allow_bonus=True)
    assert str(error.value) == "points above 1e+06"
    with pytest.raises(OverrideError) as error:
        overrides.entry_for(ROWS, "10000", "mask", "-0.5", "r")
    assert str(error.value) == "points must be 0 or more, got -0.5"
    with pytest.raises(OverrideError) as error:
        overrides.entry_for(ROWS, "10000", "mask", "inf", "r", allow_bonus=True)
    assert str(error.value) == "points must be 0 or more, got inf"
    with pytest.raises(OverrideError) as error:
        overrides.entry_for(ROWS, "10000", "mask", "40.5", "r")
    assert str(error.value) == "40.5 is more than mask's 40 points (--allow-bonus to give more)"
    assert overrides.entry_for(ROWS, "10000", "mask", "1.234567", "r")["points"] == 1.2346


def test_an_entry_has_every_field_and_a_one_line_reason(monkeypatch):
    monkeypatch.setenv("SUDO_USER", "prof")
    entry = overrides.entry_for(ROWS, "wangli_10000", "mask (/40)", "35", " re-marked\nby hand ",
                                at="2026-12-05T00:00:00+00:00")
    assert entry == {"time": "2026-12-05T00:00:00+00:00", "who": "prof", "action": "set",
                     "student": "10000", "submission": "wangli_10000", "part": "mask",
                     "reason": "re-marked by hand", "points": 35.0}
    # a header of a part the row does not have is kept as given (and refused for a set)
    with pytest.raises(OverrideError) as error:
        overrides.entry_for(ROWS, "10000", "attention (/5)", "1", "r")
    assert str(error.value) == "wangli_10000 has no part 'attention (/5)' (parts: mask, softmax, total)"
    # a remove needs no points and no reason, and names no part it checks
    gone = overrides.entry_for(ROWS, "10000", "renamed", None, None, action="remove")
    assert gone["part"] == "renamed" and "points" not in gone and gone["reason"] == ""


def test_a_remove_of_a_grader_error_row_is_allowed():
    rows = [_row("err", "1", status="grader error", total=None)]
    assert overrides.entry_for(rows, "1", "mask", None, "", action="remove")["action"] == "remove"
    with pytest.raises(OverrideError) as error:
        overrides.entry_for(rows, "1", "mask", "1", "r")
    assert str(error.value) == "err is a grader error, not a score: regrade it first (grader grade ... --force)"


def _ledger(tmp_path, data):
    path = tmp_path / "overrides.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return str(tmp_path)


GOOD = {"time": "t", "who": "w", "action": "set", "student": "1", "part": "mask",
        "points": 3, "reason": "r"}


@pytest.mark.parametrize("entry, says", [
    ({**GOOD, "extra": 1}, "entry 2: not an override entry"),
    ([GOOD], "entry 2: not an override entry"),
    ({**GOOD, "who": 5}, "entry 2: who must be text"),
    ({**GOOD, "student": None}, "entry 2: student must be text"),
    ({**GOOD, "part": ["mask"]}, "entry 2: part must be text"),
    ({**GOOD, "reason": None}, "entry 2: reason must be text"),
    ({**GOOD, "action": "delete"}, "entry 2: action must be set or remove"),
    ({**GOOD, "points": True}, "entry 2: points must be a number from 0 to 1e+06"),
    ({**GOOD, "points": "3"}, "entry 2: points must be a number from 0 to 1e+06"),
    ({**GOOD, "points": -1}, "entry 2: points must be a number from 0 to 1e+06"),
    ({**GOOD, "points": 1000001}, "entry 2: points must be a number from 0 to 1e+06"),
])
def test_a_ledger_entry_that_does_not_check_is_an_error(tmp_path, entry, says):
    out = _ledger(tmp_path, {"entries": [GOOD, entry]})
    with pytest.raises(OverrideError) as error:
        overrides.load(out)
    assert str(error.value) == f"overrides.json: {says}"


def test_a_ledger_at_its_bounds_loads(tmp_path):
    edge = [{**GOOD, "points": 0}, {**GOOD, "points": 1000000},
            {**GOOD, "action": "remove", "points": None}]
    assert overrides.load(_ledger(tmp_path, {"entries": edge})) == edge


def test_a_ledger_that_does_not_read_says_why(tmp_path):
    path = tmp_path / "overrides.json"
    for text, says in (('{"entries": {}}', "no entries list"), ("[]", "no entries list"),
                       ("{", "does not read as the overrides ledger")):
        path.write_text(text, encoding="utf-8")
        with pytest.raises(OverrideError) as error:
            overrides.load(str(tmp_path))
        assert str(error.value).startswith(f"{path}: {says}")
    path.write_bytes(b"{" + b" " * (16 * 1_048_576 - 2) + b"}")
    with pytest.raises(OverrideError) as error:
        overrides.load(str(tmp_path))
    assert str(error.value).startswith(f"{path}: no entries list")   # 16 MB exactly: read
    path.write_bytes(b"{" + b" " * (16 * 1_048_576 - 1) + b"}")
    with pytest.raises(OverrideError) as error:
        overrides.load(str(tmp_path))
    assert str(error.value) == f"{path}: larger than 16 MB"
    os.remove(path)
    os.symlink(tmp_path / "elsewhere.json", path)
    with pytest.raises(OverrideError) as error:
        overrides.load(str(tmp_path))
    assert str(error.value) == f"{path}: not a regular file"


def test_append_keeps_what_was_there(tmp_path):
    first = overrides.entry_for(ROWS, "10000", "mask", "1", "one", at="t1")
    second = overrides.entry_for(ROWS, "10001", "mask", "2", "two", at="t2")
    overrides.append(str(tmp_path), [first])
    assert overrides.append(str(tmp_path), [second]) == [first, second]
    assert overrides.load(str(tmp_path)) == [first, second]


def test_an_import_checks_its_size_columns_and_lines(tmp_path):
    path = tmp_path / "in.csv"
    head = b"student,part,points,reason\n" + (b"10000,mask,3," + b"r" * 100_000 + b"\n") * 10
    last = b"10000,mask,3,"
    path.write_bytes(head + last + b"r" * (1_048_576 - len(head) - len(last) - 1) + b"\n")
    assert path.stat().st_size == 1_048_576
    assert len(overrides.read_import(str(path), ROWS)) == 11     # 1 MB exactly
    path.write_bytes(head + last + b"r" * (1_048_576 - len(head) - len(last)) + b"\n")
    with pytest.raises(OverrideError) as error:
        overrides.read_import(str(path), ROWS)
    assert str(error.value) == f"{path}: larger than 1024 KB"
    # a field over csv's own limit (128 KB) is the file's fault, said as such (it crashed)
    path.write_bytes(b"student,part,points,reason\n10000,mask,3," + b"r" * 200_000 + b"\n")
    with pytest.raises(OverrideError) as error:
        overrides.read_import(str(path), ROWS)
    assert str(error.value) == (f"{path}: not CSV as expected "
                                f"(field larger than field limit (131072))")
    path.write_bytes(b"student,part,points,reason\n10000,mask,3,\xff\n")
    with pytest.raises(OverrideError) as error:
        overrides.read_import(str(path), ROWS)
    assert str(error.value) == f"{path}: not UTF-8 text"
    # headers in any case and spacing
    path.write_text(" Student , PART,points,Reason\n10000,mask,3,r\n", encoding="utf-8")
    assert overrides.read_import(str(path), ROWS)[0]["part"] == "mask"
    with pytest.raises(OverrideError) as error:
        overrides.read_import(str(tmp_path / "none.csv"), ROWS)
    assert str(error.value).startswith(f"{tmp_path / 'none.csv'}: cannot read it (")


def test_an_import_of_10000_lines_is_read_and_one_more_is_refused(tmp_path):
    path = tmp_path / "in.csv"
    path.write_text("student,part,points,reason\n" + "10000,mask,3,r\n" * 10000, encoding="utf-8")
    assert len(overrides.read_import(str(path), ROWS)) == 10000
    path.write_text("student,part,points,reason\n" + "10000,mask,3,r\n" * 10001, encoding="utf-8")
    with pytest.raises(OverrideError) as error:
        overrides.read_import(str(path), ROWS)
    assert str(error.value) == f"{path}: more than 10000 lines"


def test_an_import_lists_the_first_5_problems_and_how_many_more(tmp_path):
    path = tmp_path / "in.csv"
    path.write_text("student,part,points,reason\n10000,mask,3,ok\n" + "10000,mask,99,no\n" * 7,
                    encoding="utf-8")
    with pytest.raises(OverrideError) as error:
        overrides.read_import(str(path), ROWS)
    says = "; ".join(f"line {n}: 99 is more than mask's 40 points (--allow-bonus to give more)"
                     for n in range(3, 8))
    assert str(error.value) == f"{path}: nothing imported: {says} (and 2 more)"
    path.write_text("student,part,points,reason\n" + "10000,mask,99,no\n" * 5, encoding="utf-8")
    with pytest.raises(OverrideError) as error:
        overrides.read_import(str(path), ROWS)
    assert str(error.value).endswith("line 6: 99 is more than mask's 40 points (--allow-bonus to give more)")
    # a short line: empty fields, refused by reason, not by a crash
    path.write_text("student,part,points,reason\n10000\n", encoding="utf-8")
    with pytest.raises(OverrideError, match="line 2: 10000 has no part ''|line 2: wangli_10000 has no part ''"):
        overrides.read_import(str(path), ROWS)
    # --allow-bonus reaches every line of an import
    path.write_text("student,part,points,reason\n10000,mask,45,bonus\n", encoding="utf-8")
    assert overrides.read_import(str(path), ROWS, allow_bonus=True)[0]["points"] == 45.0


def test_what_a_person_typed_is_cut_at_its_documented_length(monkeypatch):
    """who: 100 characters; the reason: 1000 (one line); a submission name in a refusal: 100;
    points that do not read, in a refusal: 40."""
    monkeypatch.delenv("SUDO_USER", raising=False)
    monkeypatch.setenv("USER", "u" * 150)
    assert len(overrides.who()) == 100
    entry = overrides.entry_for(ROWS, "10000", "mask", "3", "r" * 1500)
    assert len(entry["reason"]) == 1000 and "\n" not in entry["reason"]
    assert entry["reason"].startswith("r" * 900)
    rows = [_row("e" * 150, "1", status="grader error", total=None)]
    with pytest.raises(OverrideError) as error:
        overrides.entry_for(rows, "1", "mask", "1", "r")
    tail = " is a grader error, not a score: regrade it first (grader grade ... --force)"
    assert str(error.value).endswith(tail) and len(str(error.value)) == 100 + len(tail)
    with pytest.raises(OverrideError) as error:
        overrides.entry_for(ROWS, "10000", "mask", "-" + "1" * 60, "r")
    assert len(str(error.value)) == len("points must be 0 or more, got ") + 40


def test_each_name_in_a_refusal_is_cut_at_its_length():
    """A student as typed: 100 characters; a row's name: 100 (60 in a list of matches); a
    part: 100; points that do not read: 40."""
    with pytest.raises(OverrideError) as error:
        overrides.find_row(ROWS, "c" * 150)
    assert str(error.value).startswith(f"no row for student {overrides.safe_text('c' * 150, 100)!r} in")
    rows = [_row("n" * 150 + str(i), "7") for i in range(2)]
    with pytest.raises(OverrideError) as error:
        overrides.find_row(rows, "7")
    cut = overrides.safe_text("n" * 151, 60)
    assert str(error.value) == f"'7' matches 2 rows ({cut}, {cut}); give the submission name as in grades.csv"
    long = [_row("m" * 150, "8")]
    with pytest.raises(OverrideError) as error:
        overrides.entry_for(long, "8", "p" * 150, "1", "r")
    name, part = overrides.safe_text("m" * 150, 100), overrides.safe_text("p" * 150, 100)
    assert str(error.value) == f"{name} has no part {part!r} (parts: mask, softmax, total)"
    with pytest.raises(OverrideError) as error:
        overrides.entry_for(ROWS, "10000", "mask", "x" * 60, "r")
    assert str(error.value) == f"points must be a number, got {overrides.safe_text('x' * 60, 40)!r}"
    assert len(overrides.safe_text("x" * 60, 40)) == 40


def test_a_row_without_a_maximum_takes_no_total_above_0():
    row = _row("nomax", "9")
    row["max"] = None
    with pytest.raises(OverrideError) as error:
        overrides.entry_for([row], "9", "total", "1", "r")
    assert str(error.value) == "1 is more than total's 0 points (--allow-bonus to give more)"


def test_a_link_or_a_folder_is_no_ledger(tmp_path):
    real = tmp_path / "real.json"
    real.write_text('{"entries": []}', encoding="utf-8")
    os.symlink(real, tmp_path / "overrides.json")
    with pytest.raises(OverrideError) as error:
        overrides.load(str(tmp_path))
    assert str(error.value) == f"{tmp_path / 'overrides.json'}: not a regular file"
    os.remove(tmp_path / "overrides.json")
    os.mkdir(tmp_path / "overrides.json")
    with pytest.raises(OverrideError) as error:
        overrides.load(str(tmp_path))
    assert str(error.value) == f"{tmp_path / 'overrides.json'}: not a regular file"


def test_the_ledger_keeps_chinese_readable(tmp_path):
    rows = [_row("王丽_10000", "10000")]
    overrides.append(str(tmp_path), [overrides.entry_for(rows, "10000", "mask", "3", "重新评分")])
    assert "重新评分" in (tmp_path / "overrides.json").read_text(encoding="utf-8")


def test_six_problems_say_one_more(tmp_path):
    path = tmp_path / "in.csv"
    path.write_text("student,part,points,reason\n" + "10000,mask,99,no\n" * 6, encoding="utf-8")
    with pytest.raises(OverrideError) as error:
        overrides.read_import(str(path), ROWS)
    assert str(error.value).endswith("line 6: 99 is more than mask's 40 points (--allow-bonus to give more) (and 1 more)")


def test_a_ledger_that_is_a_regular_file_but_does_not_open_says_why(tmp_path):
    """A ledger its reader may not open (mode 000; root reads anything, so as root the load
    runs in a forked child that has become `nobody`): the reason names the file and the
    system's error; it is not a crash."""
    import shutil
    import tempfile

    as_root = os.geteuid() == 0
    # as root: a folder `nobody` can enter (pytest's own tmp_path is root's alone)
    folder = tempfile.mkdtemp(prefix="attnkit-ledger-") if as_root else str(tmp_path)
    try:
        os.chmod(folder, 0o755)
        path = os.path.join(folder, "overrides.json")
        with open(path, "w", encoding="utf-8") as handle:
            handle.write('{"entries": []}')
        os.chmod(path, 0)
        expected = (f"{path}: does not read as the overrides ledger "
                    f"([Errno 13] Permission denied: '{path}')")
        said = _load_as_nobody(folder) if as_root else _load(folder)
        assert said == "refused: " + expected
    finally:
        if as_root:
            shutil.rmtree(folder, ignore_errors=True)


def _load(folder):
    try:
        return f"loaded {overrides.load(folder)}"
    except OverrideError as error:
        return f"refused: {error}"
    except Exception as error:  # what the test must not see
        return f"crashed: {type(error).__name__}: {error}"


def _load_as_nobody(folder):
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: nobody, then the load, its outcome down the pipe
        try:
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            said = _load(folder)
        except BaseException as error:
            said = f"child failed: {error}"
        os.write(write, said.encode("utf-8"))
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        said = pipe.read().decode("utf-8")
    os.waitpid(pid, 0)
    return said
