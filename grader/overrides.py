"""Instructor overrides: DIR/overrides.json, an append-only ledger of changes to scores.

Each entry: {"time" (UTC, ISO 8601), "who" ($SUDO_USER, $USER or the login name),
"action" ("set" | "remove"), "student" (the row's student_id, or its submission name when
it has none), "submission", "part" (a part name of the row, or "total"), "points" (set
only), "reason"}. The active set is the last action per (student, part); a "remove" ends
one, so the graded score is back. The ledger is never written into a graded row: it is
applied each time the gradebook is built (gradebook.final_rows), so it survives regrades,
`--force` and changes of the late policy.

Checked when recorded (`entry_for`): the student must match exactly one row (by its whole
student id or submission name: an id that is part of another, `1000` beside `10001` or a
member of a group's joined ids, never reaches that row), whose key no other row shares, the part must be one of that row's parts or `total`, the points within
0..the part's maximum (`allow_bonus`: any points >= 0), a reason given; a row the grader
failed on is refused (regrade it first). Checked again when read (`load`): a ledger that
does not read is an error, never silently ignored.
"""
import contextlib
import csv
import datetime
import fcntl
import getpass
import io
import json
import math
import os
import re

from . import files
from .textsafety import safe_text

FILE = "overrides.json"
MAX_BYTES = 16 * 1024 * 1024
MAX_IMPORT_BYTES = 1024 * 1024
MAX_IMPORT_ROWS = 10000
MAX_POINTS = 1e6
TOTAL = "total"
HEADER_PART = re.compile(r"^(?P<part>.+?) \(/[0-9.]+\)$")  # grades.csv's "<part> (/11)"
ACTIONS = ("set", "remove")
FIELDS = {"time", "who", "action", "student", "submission", "part", "points", "reason"}


class OverrideError(ValueError):
    """An override that cannot be recorded or a ledger that cannot be read (one line)."""


def now():
    """The time of an entry: UTC, ISO 8601, to the second."""
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def who():
    """The person running the command: $SUDO_USER, $USER, else the login name."""
    name = os.environ.get("SUDO_USER") or os.environ.get("USER")
    if not name:
        try:
            name = getpass.getuser()
        except Exception:
            name = "unknown"
    return safe_text(name, 100)


def _check(entry, index):
    where = f"{FILE}: entry {index + 1}"
    if not isinstance(entry, dict) or set(entry) - FIELDS:
        raise OverrideError(f"{where}: not an override entry")
    for key in ("time", "who", "student", "part", "reason"):
        if not isinstance(entry.get(key), str):
            raise OverrideError(f"{where}: {key} must be text")
    if entry.get("action") not in ACTIONS:
        raise OverrideError(f"{where}: action must be set or remove")
    if entry["action"] == "set":
        points = entry.get("points")
        if isinstance(points, bool) or not isinstance(points, (int, float)) \
                or not math.isfinite(points) or not 0 <= points <= MAX_POINTS:
            raise OverrideError(f"{where}: points must be a number from 0 to {MAX_POINTS:g}")
    return entry


def load(out_dir):
    """Every entry of DIR/overrides.json, oldest first ([] when there is none)."""
    path = os.path.join(out_dir, FILE)
    if not os.path.lexists(path):
        return []
    if os.path.islink(path) or not os.path.isfile(path):
        raise OverrideError(f"{path}: not a regular file")
    try:
        with open(path, "rb") as handle:
            raw = handle.read(MAX_BYTES + 1)
    except OSError as error:
        raise OverrideError(f"{path}: does not read as the overrides ledger ({error})") from None
    # outside the try: an OverrideError is a ValueError, and would be said twice
    if len(raw) > MAX_BYTES:
        raise OverrideError(f"{path}: larger than {MAX_BYTES // 1024 // 1024} MB")
    try:
        data = json.loads(raw.decode("utf-8"))
    except ValueError as error:
        raise OverrideError(f"{path}: does not read as the overrides ledger ({error})") from None
    entries = data.get("entries") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise OverrideError(f"{path}: no entries list")
    return [_check(e, i) for i, e in enumerate(entries)]


def active(entries):
    """{(student, part): entry} of the overrides in effect (the last action of each pair)."""
    current = {}
    for entry in entries:
        key = (entry["student"], entry["part"])
        if entry["action"] == "set":
            current[key] = entry
        else:
            current.pop(key, None)
    return current


def row_key(row):
    """What an override of this row is recorded under: its student id, else its name."""
    return str(row.get("student_id") or "") or str(row.get("name") or "")


def for_row(row, current):
    """{part: entry} of the active overrides that apply to this gradebook row."""
    key = row_key(row)
    return {part: entry for (student, part), entry in current.items() if student == key}


def _ids(row):
    return [i.strip() for i in str(row.get("student_id") or "").split(";") if i.strip()]


def find_row(rows, student):
    """The one row STUDENT names, exactly: its whole student id or its submission name, never
    a part of either (`1000` is not `10001`; `10001` is not the group `10001;10002`, whose
    score is its members' one score). OverrideError says why none or several."""
    student = str(student).strip()
    matches = []
    for row in rows:
        if row.get("name") == student or str(row.get("student_id") or "") == student:
            if not any(row is m for m in matches):
                matches.append(row)
    if len(matches) == 1:
        return matches[0]
    shown = safe_text(student, 100)
    if not matches:
        groups = [r for r in rows if student in _ids(r)]
        if groups:
            group = groups[0]
            raise OverrideError(
                f"{shown!r} is one member of the group submission "
                f"{safe_text(group.get('name', ''), 100)!r} (student ids "
                f"{safe_text(group.get('student_id', ''), 200)}): its score is every member's, "
                f"so an override of it changes theirs too; name the group as "
                f"{safe_text(group.get('student_id', ''), 200)!r} (or its submission name) to "
                f"change it for all of them")
        known = sorted(r.get("student_id") or r.get("name", "") for r in rows)
        more = f" and {len(known) - 20} more" if len(known) > 20 else ""
        raise OverrideError(f"no row for student {shown!r} in the gradebook (students: "
                            f"{', '.join(safe_text(k, 60) for k in known[:20])}{more})")
    raise OverrideError(f"{shown!r} matches {len(matches)} rows ("
                        + ", ".join(safe_text(r.get("name", ""), 60) for r in matches[:10])
                        + "); give the submission name as in grades.csv")


def _one_key(rows, row):
    """An override is kept under the row's key (row_key) and reaches every row with that
    key: refused when another row has it too (one student graded twice), never reaching
    the other."""
    key = row_key(row)
    others = [r for r in rows if r is not row and row_key(r) == key]
    if others:
        raise OverrideError(
            f"{safe_text(key, 100)!r} is the student id of {len(others) + 1} rows ("
            + ", ".join(safe_text(r.get("name", ""), 60) for r in [row] + others[:9])
            + "): an override would reach each of them; remove the row that is not theirs "
              "(its folder in the gradebook), then override")


def _part_max(row, part):
    if part == TOTAL:
        return float(row.get("max") or 0)
    pair = (row.get("parts") or {}).get(part)
    if pair is None:
        raise OverrideError(f"{safe_text(row.get('name', ''), 100)} has no part {safe_text(part, 100)!r} "
                            f"(parts: {', '.join(list(row.get('parts') or {}) + [TOTAL])})")
    return float(pair[1])


def entry_for(rows, student, part, points, reason, allow_bonus=False, action="set", at=None):
    """A checked ledger entry (OverrideError says why it cannot be)."""
    row = find_row(rows, student)
    if action == "set":
        _one_key(rows, row)
    part = str(part).strip()
    header = HEADER_PART.match(part)
    if header and header.group("part") in (row.get("parts") or {}):
        part = header.group("part")
    # a remove is checked against the ledger instead (a part since renamed, a row that is
    # now a grader error: its override can still be ended)
    top = _part_max(row, part) if action == "set" else None
    if action == "set" and row.get("status") == "grader error":
        raise OverrideError(f"{safe_text(row.get('name', ''), 100)} is a grader error, not a "
                            f"score: regrade it first (grader grade ... --force)")
    entry = {"time": at or now(),
             "who": who(), "action": action, "student": row_key(row),
             "submission": safe_text(row.get("name", ""), 400), "part": part,
             "reason": safe_text(str(reason or ""), 1000).replace("\n", " ").strip()}
    if action == "set":
        try:
            value = float(points)
        except (TypeError, ValueError):
            raise OverrideError(f"points must be a number, got {safe_text(str(points), 40)!r}") from None
        if not math.isfinite(value) or value < 0:
            raise OverrideError(f"points must be 0 or more, got {safe_text(str(points), 40)}")
        if value > top and not allow_bonus:
            raise OverrideError(f"{value:g} is more than {part}'s {top:g} points "
                                f"(--allow-bonus to give more)")
        if value > MAX_POINTS:
            raise OverrideError(f"points above {MAX_POINTS:g}")
        if not entry["reason"]:
            raise OverrideError("give a --reason (the student reads it)")
        entry["points"] = round(value, 4)
    return entry


@contextlib.contextmanager
def _locked(out_dir):
    """One writer of the ledger at a time (two instructors' overrides are both kept)."""
    with open(os.path.join(out_dir, ".overrides.lock"), "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def append(out_dir, new_entries):
    """Add entries to the ledger (one atomic rewrite, under a lock; what was there is kept
    as it was)."""
    with _locked(out_dir):
        entries = load(out_dir) + list(new_entries)
        files.write_bytes(os.path.join(out_dir, FILE), json.dumps(
            {"entries": entries}, ensure_ascii=False, indent=1).encode("utf-8"))
    return entries


def read_import(path, rows, allow_bonus=False):
    """Entries from a CSV with columns student,part,points,reason; every line is checked
    before any is recorded (OverrideError lists the first problems)."""
    text = files.read_text(path, MAX_IMPORT_BYTES, OverrideError)
    reader = csv.DictReader(io.StringIO(text, newline=""))
    wanted = ["student", "part", "points", "reason"]
    if [f.strip().lower() for f in reader.fieldnames or []] != wanted:
        raise OverrideError(f"{path}: the columns must be {','.join(wanted)}")
    reader.fieldnames = wanted
    entries, problems = [], []
    try:
        for number, line in enumerate(reader, start=2):
            if number - 1 > MAX_IMPORT_ROWS:
                raise OverrideError(f"{path}: more than {MAX_IMPORT_ROWS} lines")
            try:
                entries.append(entry_for(rows, (line["student"] or "").strip(), line["part"] or "",
                                         (line["points"] or "").strip(), line["reason"], allow_bonus))
            except OverrideError as error:
                problems.append(f"line {number}: {error}")
    except csv.Error as error:  # a field over csv's limit (128 KB), a NUL...: not a crash
        raise OverrideError(f"{path}: not CSV as expected ({error})") from None
    if problems:
        more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
        raise OverrideError(f"{path}: nothing imported: " + "; ".join(problems[:5]) + more)
    return entries
