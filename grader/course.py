"""The course file: the due date, per-student extensions and the late policy.

`DIR/course.toml` beside the gradebook (or `--course FILE`), read with tomllib and checked
on load: an unknown key, a date without a UTC offset, a negative penalty... is refused in
one line that names the key. Example (docs/how-to/late-policy-and-overrides.md has it too):

    due = 2026-12-01T23:59:00+08:00     # TOML date-time, or a string in ISO 8601 with offset
    grace_minutes = 15                  # on time up to 15 minutes after the due date

    [late_policy]
    kind = "per_day"                    # "none" | "per_day" | "cutoff"
    percent = 10                        # per day started, of the assignment's points (or points = 5)
    cap = 50                            # at most this much in all (same unit; default: no cap)
    cutoff = 2026-12-05T23:59:00+08:00  # optional: no credit after this (kind "cutoff": default the due date)
    unknown_days = 1                    # the LMS said late without a time: charged as this many days

    timezone = "Asia/Shanghai"          # the LMS server's time zone: what a time written
                                        # without one (Moodle's file times) is read in

    [extensions]                        # student id (as grades.csv's student_id) -> new due date
    "10001" = 2026-12-03T23:59:00+08:00
    "10002" = { days = 2 }              # or { hours = 36 }: added to the due date

Lateness (`lateness`): a submission is late when its time (the row's `submitted_at`) is
after the student's due date plus the grace; it is then late by each day *started* after the
due date (1 minute late = 1 day). An extension moves the student's due date, and their
cut-off by the same amount. A time read from the file's own modification time on this
machine (`time_source` "file-mtime", which copying changes) is shown but never charged: the
row is flagged for review instead. Without a time, an LMS that said "late" (Canvas's LATE)
makes the row late by `unknown_days` days (flagged for review); past a cut-off only when the
cut-off is the due date itself. A student with an extension is never charged on such a
flag: the LMS judged the time against its own due date, and without the time nobody can
say whether it was inside the extension (not charged, flagged for the instructor).

Time zones (`read_time`): a time that carries its zone (Gradescope's, nbgrader's, a file's
own time, an instant) is read as written. Moodle's file times carry none (the zip keeps
wall-clock times; `time_source` "moodle-file-time", kept as this machine read them): with
`timezone` they are read in that zone, the same on any machine; without it the row's
lateness is computed in no zone at all: on time only when it is on time in every zone
(UTC-12 to UTC+14), else not charged and flagged. `zone_of` says, for grades.csv's
`time_zone` column, which zone each time was read in.

The penalty (`penalty`): per_day takes `percent` of the assignment's points (or `points`)
per day late, up to `cap`; past the cut-off nothing is left; never below 0.
"""
import dataclasses
import datetime
import math
import os
import zoneinfo

from . import files
from .i18n import N_, _

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

FILE = "course.toml"
MAX_BYTES = 1024 * 1024
KINDS = ("none", "per_day", "cutoff")
TOP_KEYS = {"due", "grace_minutes", "late_policy", "extensions", "timezone"}
POLICY_KEYS = {"kind", "percent", "points", "cap", "cutoff", "unknown_days"}
UNCHARGED_SOURCES = ("file-mtime",)
ZONELESS_SOURCES = ("moodle-file-time",)   # wall-clock times written without a zone
# the earliest and latest zones in use: a zoneless time is some instant between these two
EARLIEST_ZONE = datetime.timezone(datetime.timedelta(hours=14))
LATEST_ZONE = datetime.timezone(datetime.timedelta(hours=-12))
DAY = datetime.timedelta(days=1)


class CourseError(ValueError):
    """The course file cannot be used: one line that says which key and why."""


@dataclasses.dataclass
class Course:
    due: datetime.datetime = None
    grace_minutes: float = 0.0
    kind: str = "none"
    percent: float = None
    points: float = None
    cap: float = None
    cutoff: datetime.datetime = None
    unknown_days: int = 1
    extensions: dict = dataclasses.field(default_factory=dict)  # id -> datetime
    path: str = ""
    timezone: str = ""             # the LMS server's zone (IANA name), "" when not given
    zone: object = None            # its zoneinfo.ZoneInfo


def parse_time(value, where):
    """An aware datetime from a TOML date-time or an ISO 8601 string with an offset."""
    if isinstance(value, str):
        text = value.strip()
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        try:
            value = datetime.datetime.fromisoformat(text)
        except ValueError:
            raise CourseError(f"{where}: {value!r} is not an ISO 8601 date and time "
                              f"(e.g. 2026-12-01T23:59:00+08:00)") from None
    if isinstance(value, datetime.date) and not isinstance(value, datetime.datetime):
        raise CourseError(f"{where}: give a time and an offset, not only a date "
                          f"(e.g. {value.isoformat()}T23:59:00+08:00)")
    if not isinstance(value, datetime.datetime):
        raise CourseError(f"{where}: expected a date and time, got {type(value).__name__}")
    if value.tzinfo is None or value.utcoffset() is None:
        raise CourseError(f"{where}: {value.isoformat()} has no UTC offset; add one "
                          f"(e.g. +08:00), so the deadline means one moment")
    return value


def _number(value, where, low=0.0, integer=False):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise CourseError(f"{where}: expected a number, got {value!r}")
    if integer and value != int(value):
        raise CourseError(f"{where}: expected a whole number, got {value!r}")
    if value < low:
        raise CourseError(f"{where}: must be at least {low:g}, got {value!r}")
    return float(value)


def _zone(value, where):
    """(name, ZoneInfo) for an IANA time zone name ("Asia/Shanghai", "UTC")."""
    if not isinstance(value, str) or not value.strip() or len(value) > 100:
        raise CourseError(f"{where}: expected a time zone name such as \"Asia/Shanghai\", "
                          f"got {value!r}")
    name = value.strip()
    try:
        return name, zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise CourseError(f"{where}: {name!r} is not a time zone this machine knows (an IANA "
                          f"name such as Asia/Shanghai, Europe/Berlin, America/New_York or "
                          f"UTC: the Moodle server's own, under Site administration > "
                          f"Location settings)") from None


def _unknown(keys, allowed, where):
    extra = sorted(set(keys) - allowed)
    if extra:
        raise CourseError(f"{where}unknown key {extra[0]!r} (allowed: {', '.join(sorted(allowed))})")


def from_data(data, path=""):
    """A Course from the parsed TOML table, checked."""
    where = f"{path}: " if path else ""
    _unknown(data, TOP_KEYS, where)
    course = Course(path=path)
    if "due" not in data:
        raise CourseError(f"{where}'due' is missing (the due date, e.g. due = 2026-12-01T23:59:00+08:00)")
    course.due = parse_time(data["due"], f"{where}due")
    if "grace_minutes" in data:
        course.grace_minutes = _number(data["grace_minutes"], f"{where}grace_minutes")
    if "timezone" in data:
        course.timezone, course.zone = _zone(data["timezone"], f"{where}timezone")
    policy = data.get("late_policy", {"kind": "none"})
    if not isinstance(policy, dict):
        raise CourseError(f"{where}late_policy must be a table ([late_policy])")
    _unknown(policy, POLICY_KEYS, f"{where}late_policy: ")
    kind = policy.get("kind")
    if kind not in KINDS:
        raise CourseError(f"{where}late_policy.kind must be one of {', '.join(KINDS)}, got {kind!r}")
    course.kind = kind
    if "percent" in policy and "points" in policy:
        raise CourseError(f"{where}late_policy: give percent or points per day, not both")
    if kind == "per_day":
        if "percent" not in policy and "points" not in policy:
            raise CourseError(f"{where}late_policy: kind per_day needs percent or points (per day late)")
        if "percent" in policy:
            course.percent = _number(policy["percent"], f"{where}late_policy.percent")
            if course.percent > 100:
                raise CourseError(f"{where}late_policy.percent: at most 100, got {policy['percent']!r}")
        else:
            course.points = _number(policy["points"], f"{where}late_policy.points")
        if "cap" in policy:
            course.cap = _number(policy["cap"], f"{where}late_policy.cap")
    else:
        for key in ("percent", "points", "cap"):
            if key in policy:
                raise CourseError(f"{where}late_policy.{key}: only for kind per_day (this is {kind})")
    if "cutoff" in policy:
        if kind == "none":
            raise CourseError(f"{where}late_policy.cutoff: not for kind none")
        course.cutoff = parse_time(policy["cutoff"], f"{where}late_policy.cutoff")
        if course.cutoff < course.due:
            raise CourseError(f"{where}late_policy.cutoff is before the due date")
    elif kind == "cutoff":
        course.cutoff = course.due
    if "unknown_days" in policy:
        course.unknown_days = int(_number(policy["unknown_days"], f"{where}late_policy.unknown_days",
                                          integer=True))
    extensions = data.get("extensions", {})
    if not isinstance(extensions, dict):
        raise CourseError(f"{where}extensions must be a table ([extensions])")
    if len(extensions) > 100000:
        raise CourseError(f"{where}extensions: more than 100000 entries")
    for student, value in extensions.items():
        at = f"{where}extensions.{student}"
        if not student.strip():
            raise CourseError(f"{at}: an empty student id")
        if isinstance(value, dict):
            _unknown(value, {"days", "hours"}, f"{at}: ")
            if not value:
                raise CourseError(f"{at}: give days or hours")
            extra = datetime.timedelta(days=_number(value.get("days", 0), f"{at}.days"),
                                       hours=_number(value.get("hours", 0), f"{at}.hours"))
            course.extensions[student.strip()] = course.due + extra
        else:
            new = parse_time(value, at)
            if new < course.due:
                raise CourseError(f"{at}: the new due date is before the course's")
            course.extensions[student.strip()] = new
    return course


def load(path):
    """The Course in the TOML file at `path` (CourseError when it cannot be used)."""
    text = files.read_text(path, MAX_BYTES, CourseError)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise CourseError(f"{path}: not valid TOML: {error}") from None
    return from_data(data, path)


def find(out_dir, path=None):
    """The course in effect for the gradebook `out_dir`: `path` (--course) if given, else
    DIR/course.toml if it exists, else None (no due date: no lateness is charged)."""
    if path:
        return load(path)
    default = os.path.join(out_dir, FILE)
    return load(default) if os.path.exists(default) else None


def _submitted(row):
    text = row.get("submitted_at") or ""
    if not isinstance(text, str) or not text:
        return None
    try:
        return parse_time(text, "submitted_at")
    except CourseError:
        return None


def due_for(course, student_id):
    """The student's due date: an extension's, else the course's. A group (ids joined by
    `;`) gets the latest of its members'."""
    ids = [i.strip() for i in str(student_id or "").split(";") if i.strip()]
    return max([course.extensions[i] for i in ids if i in course.extensions] + [course.due])


def _offset(moment):
    """"+08:00" for an aware datetime."""
    text = moment.isoformat()
    return text[-6:] if text[-6] in "+-" else "+00:00"


def read_time(course, row):
    """The row's submission time as an aware datetime, read in the zone it was written in
    (a zoneless Moodle file time: in the course's `timezone` when given, else as this
    machine read it), or None when it has none."""
    when = _submitted(row)
    if when is None:
        return None
    if (row.get("time_source") or "") in ZONELESS_SOURCES and course is not None \
            and course.zone is not None:
        return when.replace(tzinfo=None).replace(tzinfo=course.zone)
    return when


def zone_of(course, row):
    """grades.csv's `time_zone`: which zone the row's time was read in ("" without one)."""
    when, source = _submitted(row), row.get("time_source") or ""
    if when is None:
        return ""
    if source in ZONELESS_SOURCES:
        if course is not None and course.zone is not None:
            return f"{course.timezone} (course.toml timezone; {source} carries no zone)"
        return f"this machine's, UTC{_offset(when)} ({source} carries no zone; no timezone in course.toml)"
    if source in UNCHARGED_SOURCES:
        return "UTC (the file's own time on this machine)"
    return f"UTC{_offset(when)} (written with the time by {source or 'the platform'})"


def lateness(course, row):
    """{"late": True/False/None, "days_late": int or None, "due": ISO or "", "past_cutoff":
    bool, "review": [str], "basis": "time" | "lms-flag" | ""} for a gradebook row (its
    submitted_at, time_source, late_flag); basis: what a charge rests on (the time, or the
    LMS's bare "late")."""
    flag = row.get("late_flag")
    flag = flag if isinstance(flag, bool) else None
    when, source = read_time(course, row), row.get("time_source") or ""
    out = {"late": flag, "days_late": None, "due": "", "past_cutoff": False, "review": [],
           "basis": ""}
    if course is None:
        return out
    if when is None and row.get("submitted_at"):
        out["review"].append("its submission time does not read as ISO 8601 with an offset; "
                             "lateness not computed from it")
    due = due_for(course, row.get("student_id"))
    out["due"] = due.isoformat()
    cutoff = course.cutoff + (due - course.due) if course.cutoff else None
    grace = datetime.timedelta(minutes=course.grace_minutes)
    if when is not None and source in ZONELESS_SOURCES and course.zone is None:
        wall = when.replace(tzinfo=None)
        if wall.replace(tzinfo=LATEST_ZONE) <= due + grace:   # on time in every zone
            out["late"] = False
            return out
        here = "late" if when > due + grace else "on time"
        out["late"] = None
        out["review"].append(
            f"its time ({wall.isoformat()}, {source}) carries no time zone and course.toml "
            f"gives none: in this machine's zone (UTC{_offset(when)}) it is {here}, in another "
            f"it may not be; not charged (add timezone = \"<the LMS server's zone>\" to "
            f"course.toml, then grader gradebook)")
        return out
    if when is not None and source not in UNCHARGED_SOURCES:
        late = when > due + grace
        out["late"] = late
        if late:
            out["days_late"] = math.ceil((when - due) / DAY)
            out["past_cutoff"] = cutoff is not None and when > cutoff + grace
            out["basis"] = "time"
        if flag is False and late:
            out["review"].append(f"late by its time ({when.isoformat()}, {source}), "
                                 f"though the LMS did not mark it late")
        return out
    if flag is True:
        if due > course.due:
            # the LMS judged the time against its own due date: inside the extension or not,
            # nothing here can tell
            out["late"] = None
            out["review"].append(
                f"the LMS marked it late without a time, and this student's due date is "
                f"extended to {due.isoformat()}: it may be inside the extension; not charged "
                f"(check the time in the LMS; an override of the total can take a penalty)")
            return out
        out["late"], out["days_late"] = True, course.unknown_days
        out["past_cutoff"] = cutoff is not None and cutoff <= due
        out["basis"] = "lms-flag"
        out["review"].append(f"the LMS marked it late without a time: charged as "
                             f"{course.unknown_days} day(s) late")
        return out
    if when is not None and when > due + grace:
        out["late"] = None
        out["review"].append(f"only the file's own time ({when.isoformat()}) says it is late; "
                             f"not charged")
    return out


# what the course file cannot do with a download, said once (console and report.html)
NEEDS_TIMES = N_("The course file's late policy ({kind}) counts days late, and {count} "
                 "row(s) came from a download that carries no submission time (Canvas's: only "
                 "its LATE mark): each LATE one is charged as {days} day(s) late (unknown_days), "
                 "one with an extension is not charged but flagged; Canvas's own gradebook "
                 "shows each time.")
NO_TIMEZONE = N_("{count} row(s) have times written without a time zone (Moodle's file "
                 "times), and the course file gives no timezone: none of them is charged a "
                 "late penalty, and each that is late in some zone is flagged; add timezone = "
                 "\"<the Moodle server's zone>\" (e.g. \"Asia/Shanghai\") to the course file, "
                 "then run `grader gradebook`.")


def row_notes(course, row):
    """What the course file cannot decide for this row, as data kept on its final row
    (gradebook.final_row's "course_notes"): ["times", kind, unknown_days] when the policy
    counts days and the row has only the LMS's late mark, ["timezone"] when its time has no
    zone and the course file gives none."""
    if course is None or not isinstance(row, dict):
        return []
    said = []
    counts_days = course.kind == "per_day" or (course.cutoff is not None and course.cutoff > course.due)
    if counts_days and isinstance(row.get("late_flag"), bool) and not row.get("submitted_at"):
        said.append(["times", course.kind, course.unknown_days])
    if course.zone is None and (row.get("time_source") or "") in ZONELESS_SOURCES \
            and row.get("submitted_at"):
        said.append(["timezone"])
    return said


def notes(rows):
    """[(message, fields)]: the course_notes of final rows, each said once with how many
    rows it concerns (translate the message with i18n._ and fill in the fields: `say`)."""
    times, zoneless, policy = 0, 0, None
    for row in rows:
        for note in (row.get("course_notes") if isinstance(row, dict) else None) or []:
            if isinstance(note, list) and note[:1] == ["times"] and len(note) == 3:
                times, policy = times + 1, note
            elif note == ["timezone"]:
                zoneless += 1
    said = []
    if times:
        said.append((NEEDS_TIMES, {"kind": policy[1], "count": times, "days": policy[2]}))
    if zoneless:
        said.append((NO_TIMEZONE, {"count": zoneless}))
    return said


def say(note):
    """One of notes()'s lines in this process's language."""
    message, fields = note
    return _(message).format(**fields)


def penalty(course, late, raw_total, maximum):
    """Points the late policy takes from `raw_total` (never more than it)."""
    if course is None or not late.get("late") or raw_total is None:
        return 0.0
    raw = max(0.0, float(raw_total))
    if late.get("past_cutoff"):
        return round(raw, 4)
    if course.kind != "per_day" or not late.get("days_late"):
        return 0.0
    unit = (course.percent / 100.0 * float(maximum)) if course.percent is not None else course.points
    taken = unit * late["days_late"]
    if course.cap is not None:
        cap = course.cap / 100.0 * float(maximum) if course.percent is not None else course.cap
        taken = min(taken, cap)
    return round(min(taken, raw), 4)
