"""grader/course.py at its edges (issue 19): each boundary docs/how-to/late-policy-and-overrides.md states (on time up to
the grace, a day *started*, the cut-off, at most 100 percent, 1 MB, 100000 extensions) is
checked on both sides with figures worked out by hand, and each refusal by its reason."""
import datetime

import pytest

from grader import course
from grader.course import CourseError

DUE = "2026-12-01T23:59:00+08:00"
UTC8 = datetime.timezone(datetime.timedelta(hours=8))


def _course(top=None, **policy):
    data = {"due": DUE, **(top or {})}
    if policy:
        data["late_policy"] = policy
    return course.from_data(data)


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
    assert str(error.value) == f"{path}: larger than 1024 KB"


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
