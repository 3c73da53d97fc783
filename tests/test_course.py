"""The course file (grader/course.py): every refusal says which key and why, and each late
policy's arithmetic gives the figures worked out by hand below."""
import pytest

from grader import course
from grader.course import CourseError
from grader.report import gradebook

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
