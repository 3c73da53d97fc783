"""The course file (grader/course.py): every refusal says which key and why, and each late
policy's arithmetic gives the figures worked out by hand below."""
import pytest

from grader import course
from grader.course import CourseError
from grader.report import gradebook
import datetime

DUE = "2026-12-01T23:59:00+08:00"


def _course(**policy):
    data = {"due": DUE}
    data.update(policy.pop("top", {}))
    if policy:
        data["late_policy"] = policy
    return course.from_data(data)


def _row(submitted="", source="canvas-file-time", flag=None, total=80.0, student="10000"):
    return {"name": "s", "status": "graded", "total": total, "max": 100.0,
            "parts": {"a": [total, 100.0]}, "student_id": student,
            "submitted_at": submitted, "time_source": source, "late_flag": flag}


@pytest.mark.parametrize("data, says", [
    ({}, "'due' is missing"),
    ({"due": "2026-12-01T23:59:00"}, "has no UTC offset"),
    ({"due": "tomorrow"}, "is not an ISO 8601 date"),
    ({"due": DUE, "deadline": DUE}, "unknown key 'deadline'"),
    ({"due": DUE, "late_policy": {"kind": "per_day"}}, "needs percent or points"),
    ({"due": DUE, "late_policy": {"kind": "weekly"}}, "kind must be one of none, per_day, cutoff"),
    ({"due": DUE, "late_policy": {"kind": "per_day", "percent": 10, "points": 2}}, "not both"),
    ({"due": DUE, "late_policy": {"kind": "per_day", "percent": 150}}, "at most 100"),
    ({"due": DUE, "late_policy": {"kind": "per_day", "percent": -5}}, "must be at least 0"),
    ({"due": DUE, "late_policy": {"kind": "per_day", "percent": 10, "pct": 1}},
     "unknown key 'pct'"),
    ({"due": DUE, "late_policy": {"kind": "cutoff", "cap": 10}}, "only for kind per_day"),
    ({"due": DUE, "late_policy": {"kind": "cutoff", "cutoff": "2026-11-30T00:00:00+08:00"}},
     "cutoff is before the due date"),
    ({"due": DUE, "late_policy": {"kind": "per_day", "points": True}}, "expected a number"),
    ({"due": DUE, "grace_minutes": "ten"}, "grace_minutes: expected a number"),
    ({"due": DUE, "extensions": {"10001": "2026-11-20T00:00:00+08:00"}}, "before the course's"),
    ({"due": DUE, "extensions": {"10001": {"weeks": 1}}}, "unknown key 'weeks'"),
    ({"due": DUE, "extensions": {"10001": {}}}, "give days or hours"),
    ({"due": DUE, "late_policy": {"kind": "per_day", "points": 1, "unknown_days": 1.5}},
     "whole number"),
])
def test_each_refusal_names_the_key_and_the_reason(data, says):
    with pytest.raises(CourseError) as error:
        course.from_data(data)
    assert says in str(error.value)
    assert "\n" not in str(error.value)


def test_a_file_that_is_not_toml_or_gives_only_a_date_is_refused(tmp_path):
    path = tmp_path / "course.toml"
    path.write_text("due = 2026-12-01\n", encoding="utf-8")
    with pytest.raises(CourseError, match="not only a date"):
        course.load(str(path))
    path.write_text("due = [\n", encoding="utf-8")
    with pytest.raises(CourseError, match="not valid TOML"):
        course.load(str(path))


def test_the_readme_example_loads(tmp_path):
    path = tmp_path / "course.toml"
    # written by a Windows editor: BOM, CRLF, Chinese comments
    path.write_text("\ufeff# 注意力作业\r\ndue = 2026-12-01T23:59:00+08:00\r\ngrace_minutes = 15\r\n"
                    "[late_policy]\r\nkind = \"per_day\"\r\npercent = 10\r\ncap = 50\r\n"
                    "cutoff = 2026-12-05T23:59:00+08:00\r\nunknown_days = 1\r\n"
                    "[extensions]\r\n\"10001\" = 2026-12-03T23:59:00+08:00\r\n"
                    "\"10002\" = { days = 2 }\r\n", encoding="utf-8")
    loaded = course.load(str(path))
    assert (loaded.kind, loaded.percent, loaded.cap, loaded.grace_minutes) == ("per_day", 10, 50, 15)
    assert course.find(str(tmp_path)).due == loaded.due   # DIR/course.toml is the default
    assert course.find(str(tmp_path / "elsewhere")) is None


def _final(policy, row):
    return gradebook.final_row(row, policy)


def test_per_day_percent_with_grace_and_cap():
    policy = _course(kind="per_day", percent=10, cap=25, top={"grace_minutes": 15})
    # 11 minutes after the due date: within the grace
    on_time = _final(policy, _row("2026-12-02T00:10:00+08:00"))
    assert (on_time["late"], on_time["penalty"], on_time["total"]) == (False, 0.0, 80.0)
    # 21 minutes after: late, 1 day started: 10% of 100 = 10 points
    one = _final(policy, _row("2026-12-02T00:20:00+08:00"))
    assert (one["late"], one["days_late"], one["penalty"], one["total"]) == (True, 1, 10.0, 70.0)
    # the same moment written in UTC: 2026-12-01T16:20Z is 00:20 in +08:00
    utc = _final(policy, _row("2026-12-01T16:20:00+00:00"))
    assert (utc["days_late"], utc["total"]) == (1, 70.0)
    # 2 days 10 hours 1 minute late: 3 days started, 30 points, capped at 25
    three = _final(policy, _row("2026-12-04T10:00:00+08:00"))
    assert (three["days_late"], three["penalty"], three["total"], three["raw_total"]) == \
        (3, 25.0, 55.0, 80.0)


def test_per_day_points_never_go_below_zero_and_past_the_cutoff_nothing_is_left():
    policy = _course(kind="per_day", points=4, cutoff="2026-12-05T23:59:00+08:00")
    # 3 days: 12 points from 80
    assert _final(policy, _row("2026-12-04T10:00:00+08:00"))["total"] == 68.0
    # 3 days from 5: 12 points asked, 5 taken
    low = _final(policy, _row("2026-12-04T10:00:00+08:00", total=5.0))
    assert (low["penalty"], low["total"]) == (5.0, 0.0)
    # one minute after the cut-off
    late = _final(policy, _row("2026-12-06T00:00:00+08:00"))
    assert (late["penalty"], late["total"]) == (80.0, 0.0)


def test_cutoff_policy_gives_nothing_after_the_due_date_by_default():
    policy = _course(kind="cutoff")
    assert _final(policy, _row("2026-12-01T23:58:00+08:00"))["total"] == 80.0
    assert _final(policy, _row("2026-12-02T00:00:00+08:00"))["total"] == 0.0


def test_no_policy_records_lateness_but_takes_nothing():
    policy = _course(kind="none")
    row = _final(policy, _row("2026-12-03T00:00:00+08:00"))
    assert (row["late"], row["days_late"], row["penalty"], row["total"]) == (True, 2, 0.0, 80.0)
    # no course file at all: what the LMS said, and nothing charged
    bare = gradebook.final_row(_row("", flag=True), None)
    assert (bare["late"], bare["penalty"], bare["total"]) == (True, 0.0, 80.0)


def test_extensions_move_the_due_date_and_the_cutoff():
    policy = _course(kind="per_day", percent=10, cutoff="2026-12-03T23:59:00+08:00",
                     top={"extensions": {"10001": "2026-12-03T23:59:00+08:00",
                                         "10002": {"days": 1}, "10003": {"hours": 36}}})
    when = "2026-12-03T12:00:00+08:00"   # 1 day 12 hours 1 minute after the course's due date
    assert _final(policy, _row(when))["penalty"] == 20.0
    assert _final(policy, _row(when, student="10001"))["late"] is False
    assert _final(policy, _row(when, student="10002"))["penalty"] == 10.0      # due 2 Dec 23:59
    hours = _final(policy, _row(when, student="10003"))                       # due 3 Dec 11:59
    assert (hours["due"], hours["days_late"], hours["penalty"]) == ("2026-12-03T11:59:00+08:00", 1, 10.0)
    # the cut-off moved by 1 day for 10002: 4 Dec 10:00 is 2 days late, not past it
    moved = _final(policy, _row("2026-12-04T10:00:00+08:00", student="10002"))
    assert (moved["days_late"], moved["penalty"]) == (2, 20.0)
    # a group: the latest due date of its members
    assert _final(policy, _row(when, student="10000;10001"))["late"] is False


def test_lms_late_without_a_time_and_file_times():
    policy = _course(kind="per_day", percent=10, unknown_days=2)
    unknown = _final(policy, _row("", flag=True))
    assert (unknown["late"], unknown["days_late"], unknown["penalty"]) == (True, 2, 20.0)
    assert "without a time" in unknown["review"][0]
    cutoff = _final(_course(kind="cutoff"), _row("", flag=True))
    assert cutoff["total"] == 0.0                       # any late one is past a due-date cut-off
    # the file's own time on this machine is shown, never charged
    mtime = _final(policy, _row("2026-12-09T00:00:00+08:00", source="file-mtime"))
    assert (mtime["late"], mtime["penalty"], mtime["total"]) == (None, 0.0, 80.0)
    assert "not charged" in mtime["review"][0]
    # the LMS said on time, the time says late: charged by the time, and flagged
    both = _final(policy, _row("2026-12-02T12:00:00+08:00", flag=False))
    assert both["penalty"] == 10.0 and "did not mark it late" in both["review"][0]


def test_the_documented_course_file_is_valid():
    """The example of docs/how-to/late-policy-and-overrides.md loads as it says."""
    import os
    import re
    page = open(os.path.join(os.path.dirname(__file__), "..", "docs", "how-to",
                             "late-policy-and-overrides.md"), encoding="utf-8").read()
    (block,) = re.findall(r"```toml\n(.*?)```", page, re.DOTALL)
    loaded = course.from_data(course.tomllib.loads(block))
    assert (loaded.kind, loaded.percent, loaded.cap, loaded.unknown_days) == ("per_day", 10, 50, 1)
    assert loaded.extensions["10002"].isoformat() == "2026-12-03T23:59:00+08:00"


def test_a_time_that_does_not_read_is_flagged_not_guessed():
    policy = _course(kind="per_day", percent=10)
    odd = _final(policy, _row("next tuesday"))
    assert (odd["late"], odd["penalty"], odd["total"]) == (None, 0.0, 80.0)
    assert "does not read as ISO 8601" in odd["review"][0]


# ---- at its edges (issue 19, from tests/test_mutants_course.py) -----------------------------
# grader/course.py at its edges (issue 19): each boundary docs/how-to/late-policy-and-overrides.md states (on time up to
# the grace, a day *started*, the cut-off, at most 100 percent, 1 MB, 100000 extensions) is
# checked on both sides with figures worked out by hand, and each refusal by its reason.

UTC8 = datetime.timezone(datetime.timedelta(hours=8))


def _late(policy, submitted="", flag=None, source="canvas-file-time", student="10000"):
    return course.lateness(policy, {"submitted_at": submitted, "time_source": source,
                                    "late_flag": flag, "student_id": student})


def test_the_documented_limits():
    assert course.MAX_BYTES == 1_048_576
    assert course.KINDS == ("none", "per_day", "cutoff")
    assert course.UNCHARGED_SOURCES == ("file-mtime",)
    assert course.Course().unknown_days == 1 and course.Course().kind == "none"


def test_a_z_suffix_means_utc():
    for text in ("2026-12-01T15:59:00Z", "2026-12-01T15:59:00z", " 2026-12-01T15:59:00Z "):
        parsed = course.parse_time(text, "due")
        assert parsed == datetime.datetime(2026, 12, 1, 23, 59, tzinfo=UTC8)
        assert parsed.utcoffset() == datetime.timedelta(0)


@pytest.mark.parametrize("value, says", [
    (20261201, "due: expected a date and time, got int"),
    (datetime.datetime(2026, 12, 1, 23, 59), "due: 2026-12-01T23:59:00 has no UTC offset"),
    (datetime.date(2026, 12, 1), "due: give a time and an offset, not only a date "
                                 "(e.g. 2026-12-01T23:59:00+08:00)"),
])
def test_a_time_of_the_wrong_kind_is_refused_by_name(value, says):
    with pytest.raises(CourseError) as error:
        course.parse_time(value, "due")
    assert str(error.value).startswith(says)


def test_the_bounds_of_each_number_are_inclusive():
    # 0 grace, 0 percent, 100 percent, 0 points, 0 cap and 0 unknown days are all allowed
    assert _course(top={"grace_minutes": 0}).grace_minutes == 0.0
    assert _course(kind="per_day", percent=0).percent == 0.0
    assert _course(kind="per_day", percent=100).percent == 100.0
    assert _course(kind="per_day", points=0, cap=0).cap == 0.0
    assert _course(kind="per_day", points=1, unknown_days=0).unknown_days == 0
    assert _course(kind="per_day", points=1, unknown_days=3).unknown_days == 3
    with pytest.raises(CourseError) as error:
        _course(kind="per_day", percent=100.5)
    assert str(error.value) == "late_policy.percent: at most 100, got 100.5"
    with pytest.raises(CourseError) as error:
        _course(top={"grace_minutes": -0.5})
    assert str(error.value) == "grace_minutes: must be at least 0, got -0.5"
    for bad in (float("nan"), float("inf"), "5", False):
        with pytest.raises(CourseError, match="late_policy.points: expected a number"):
            _course(kind="per_day", points=bad)


def test_the_path_starts_every_refusal():
    with pytest.raises(CourseError) as error:
        course.from_data({"due": DUE, "late_policy": {"kind": "none", "cap": 5}}, "c.toml")
    assert str(error.value) == "c.toml: late_policy.cap: only for kind per_day (this is none)"
    with pytest.raises(CourseError) as error:
        course.from_data({"due": DUE, "late_policy": {"kind": "per_day", "percent": 1, "x": 1}},
                         "c.toml")
    assert str(error.value).startswith("c.toml: late_policy: unknown key 'x' (allowed: cap, ")


def test_tables_and_cutoffs():
    with pytest.raises(CourseError, match="late_policy must be a table"):
        course.from_data({"due": DUE, "late_policy": "per_day"})
    with pytest.raises(CourseError, match="extensions must be a table"):
        course.from_data({"due": DUE, "extensions": ["10001"]})
    with pytest.raises(CourseError, match="late_policy.cutoff: not for kind none"):
        _course(kind="none", cutoff=DUE)
    # a cut-off equal to the due date is allowed; the kind cutoff defaults to it; none has none
    assert _course(kind="cutoff", cutoff=DUE).cutoff == course.parse_time(DUE, "")
    assert _course(kind="cutoff").cutoff == course.parse_time(DUE, "")
    assert _course(kind="per_day", points=1).cutoff is None
    assert course.from_data({"due": DUE}).kind == "none"


def test_extensions_are_checked_and_keyed_by_the_stripped_id():
    with pytest.raises(CourseError) as error:
        course.from_data({"due": DUE, "extensions": {"  ": {"days": 1}}})
    assert str(error.value) == "extensions.  : an empty student id"
    loaded = course.from_data({"due": DUE, "extensions": {
        " 10001 ": DUE, "10002": {"days": 1, "hours": 12}, "10003": {"hours": 0.5}}})
    assert loaded.extensions["10001"] == course.parse_time(DUE, "")     # same moment: allowed
    assert loaded.extensions["10002"].isoformat() == "2026-12-03T11:59:00+08:00"
    assert loaded.extensions["10003"].isoformat() == "2026-12-02T00:29:00+08:00"
    with pytest.raises(CourseError, match=r"extensions.10004.days: must be at least 0"):
        course.from_data({"due": DUE, "extensions": {"10004": {"days": -1}}})


def test_at_most_100000_extensions():
    many = {str(i): {"days": 1} for i in range(100000)}
    assert len(course.from_data({"due": DUE, "extensions": many}).extensions) == 100000
    many["one more"] = {"days": 1}
    with pytest.raises(CourseError) as error:
        course.from_data({"due": DUE, "extensions": many})
    assert str(error.value) == "extensions: more than 100000 entries"


def test_a_file_of_exactly_1_mb_loads_and_one_byte_more_is_refused(tmp_path):
    path = tmp_path / "course.toml"
    head = b'due = "2026-12-01T23:59:00+08:00"\n#'
    path.write_bytes(head + b"x" * (1_048_576 - len(head) - 1) + b"\n")
    assert path.stat().st_size == 1_048_576
    assert course.load(str(path)).due.isoformat() == "2026-12-01T23:59:00+08:00"
    path.write_bytes(head + b"x" * (1_048_576 - len(head)) + b"\n")
    with pytest.raises(CourseError) as error:
        course.load(str(path))
    assert str(error.value) == f"{path}: larger than 1 MB"


def test_unreadable_and_undecodable_files_say_so(tmp_path):
    path = tmp_path / "course.toml"
    path.write_bytes(b'due = "2026-12-01T23:59:00+08:00"\n# \xff\xfe\n')
    with pytest.raises(CourseError) as error:
        course.load(str(path))
    assert str(error.value) == f"{path}: not UTF-8 text"
    with pytest.raises(CourseError) as error:
        course.load(str(tmp_path / "missing.toml"))
    assert str(error.value).startswith(f"{tmp_path / 'missing.toml'}: cannot read it (")
    # --course wins over DIR/course.toml
    (tmp_path / "course.toml").write_text(f'due = "{DUE}"\n', encoding="utf-8")
    other = tmp_path / "other.toml"
    other.write_text('due = "2026-12-09T00:00:00+00:00"\n', encoding="utf-8")
    assert course.find(str(tmp_path), str(other)).due.isoformat() == "2026-12-09T00:00:00+00:00"
    assert course.find(str(tmp_path)).due.isoformat() == DUE


def test_on_time_up_to_the_grace_and_late_by_each_day_started():
    policy = _course(top={"grace_minutes": 10}, kind="per_day", points=1)
    # exactly at the end of the grace: on time; one second after: late by 1 day
    assert _late(policy, "2026-12-02T00:09:00+08:00")["late"] is False
    one = _late(policy, "2026-12-02T00:09:01+08:00")
    assert (one["late"], one["days_late"], one["due"]) == (True, 1, DUE)
    # exactly 1 day after the due date: 1 day; one second more: 2 days started
    assert _late(policy, "2026-12-02T23:59:00+08:00")["days_late"] == 1
    assert _late(policy, "2026-12-02T23:59:01+08:00")["days_late"] == 2


def test_the_cutoff_counts_its_grace_too():
    policy = _course(top={"grace_minutes": 10}, kind="per_day", points=1,
                     cutoff="2026-12-03T23:59:00+08:00")
    assert _late(policy, "2026-12-04T00:09:00+08:00")["past_cutoff"] is False
    assert _late(policy, "2026-12-04T00:09:01+08:00")["past_cutoff"] is True
    assert _late(_course(kind="per_day", points=1), "2026-12-30T00:00:00+08:00")["past_cutoff"] is False


def test_the_lms_flag_without_a_time():
    # past a cut-off only when the cut-off is the due date itself
    assert _late(_course(kind="cutoff"), flag=True)["past_cutoff"] is True
    later = _course(kind="per_day", points=1, cutoff="2026-12-02T23:59:00+08:00")
    flagged = _late(later, flag=True)
    assert (flagged["late"], flagged["days_late"], flagged["past_cutoff"]) == (True, 1, False)
    assert flagged["review"] == ["the LMS marked it late without a time: charged as 1 day(s) late"]
    # the LMS said on time and there is no time: on time, nothing to review
    quiet = _late(later, flag=False)
    assert (quiet["late"], quiet["days_late"], quiet["review"]) == (False, None, [])
    # a flag that is not a bool is no flag
    assert _late(later, flag="yes")["late"] is None
    # the file's own time inside the grace: nothing said
    assert _late(later, DUE, source="file-mtime")["review"] == []
    # no course: the flag as the LMS gave it, nothing computed
    assert course.lateness(None, {"late_flag": True, "submitted_at": "2026-12-09T00:00:00Z"}) == \
        {"late": True, "days_late": None, "due": "", "past_cutoff": False, "review": [],
         "basis": ""}


def test_a_submission_time_that_is_not_text_is_no_time():
    policy = _course(kind="per_day", points=1)
    row = {"submitted_at": 1796140800, "time_source": "canvas-file-time", "late_flag": None}
    assert course._submitted(row) is None
    assert course._submitted({"submitted_at": "2026-12-02T00:00:00Z"}).isoformat() == \
        "2026-12-02T00:00:00+00:00"
    assert _late(policy, "")["review"] == []


def test_a_group_gets_the_latest_due_date_of_its_members():
    policy = _course(top={"extensions": {"a": {"days": 1}, "b": {"days": 3}}})
    assert course.due_for(policy, " a ; b ;").isoformat() == "2026-12-04T23:59:00+08:00"
    assert course.due_for(policy, "a;c").isoformat() == "2026-12-02T23:59:00+08:00"
    assert course.due_for(policy, None).isoformat() == DUE


def test_penalty_arithmetic_in_percent_of_the_maximum_and_in_points():
    late2 = {"late": True, "days_late": 2, "past_cutoff": False}
    # 15% of 40 points = 6 per day, 2 days = 12, cap 20% of 40 = 8
    assert course.penalty(_course(kind="per_day", percent=15), late2, 30, 40) == 12.0
    assert course.penalty(_course(kind="per_day", percent=15, cap=20), late2, 30, 40) == 8.0
    # 2.5 points a day, 2 days = 5, cap 4 points; never more than the raw total
    assert course.penalty(_course(kind="per_day", points=2.5), late2, 30, 40) == 5.0
    assert course.penalty(_course(kind="per_day", points=2.5, cap=4), late2, 30, 40) == 4.0
    assert course.penalty(_course(kind="per_day", points=2.5), late2, 3, 40) == 3.0
    # 1/3 point a day for 1 day: rounded to 4 places
    assert course.penalty(_course(kind="per_day", points=1 / 3),
                          {"late": True, "days_late": 1}, 30, 40) == 0.3333
    # past the cut-off: all of it, never below 0
    past = {"late": True, "days_late": 9, "past_cutoff": True}
    assert course.penalty(_course(kind="cutoff"), past, 12.34567, 40) == 12.3457
    assert course.penalty(_course(kind="cutoff"), past, -2, 40) == 0.0
    # nothing taken: on time, no course, no total, kind none, kind cutoff before the cut-off
    assert course.penalty(_course(kind="per_day", points=5), {"late": False, "days_late": 2}, 30, 40) == 0.0
    assert course.penalty(None, late2, 30, 40) == 0.0
    assert course.penalty(_course(kind="per_day", points=5), late2, None, 40) == 0.0
    assert course.penalty(_course(kind="none"), late2, 30, 40) == 0.0
    assert course.penalty(_course(kind="cutoff", cutoff="2026-12-09T00:00:00+08:00"), late2, 30, 40) == 0.0
    assert course.penalty(_course(kind="per_day", points=5), {"late": True, "days_late": None}, 30, 40) == 0.0


def test_the_first_unknown_key_in_order_is_named_and_a_missing_file_says_why(tmp_path):
    with pytest.raises(CourseError) as error:
        course.from_data({"due": DUE, "zeta": 1, "alpha": 2})
    assert str(error.value).startswith("unknown key 'alpha' (allowed: due, extensions, ")
    with pytest.raises(CourseError) as error:
        course.load(str(tmp_path / "missing.toml"))
    assert str(error.value) == f"{tmp_path / 'missing.toml'}: cannot read it (No such file or directory)"


def test_review_notes_only_when_they_apply():
    policy = _course(top={"grace_minutes": 10}, kind="per_day", points=1)
    # late by its time and no word from the LMS: charged, nothing to review
    late = _late(policy, "2026-12-03T00:00:00+08:00")
    assert (late["late"], late["days_late"], late["review"]) == (True, 2, [])
    # the file's own time 5 minutes after the due date, inside the 10 minutes' grace: silent
    assert _late(policy, "2026-12-02T00:04:00+08:00", source="file-mtime")["review"] == []
    # 11 minutes after: said, never charged
    past = _late(policy, "2026-12-02T00:10:00+08:00", source="file-mtime")
    assert past["late"] is None and past["review"] == [
        "only the file's own time (2026-12-02T00:10:00+08:00) says it is late; not charged"]


def test_a_time_zone_without_an_offset_is_no_offset():
    class NoOffset(datetime.tzinfo):
        def utcoffset(self, when):
            return None
    with pytest.raises(CourseError) as error:
        course.parse_time(datetime.datetime(2026, 12, 1, 23, 59, tzinfo=NoOffset()), "due")
    assert str(error.value).startswith("due: 2026-12-01T23:59:00 has no UTC offset")
