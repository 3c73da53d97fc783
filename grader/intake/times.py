"""When a submission was handed in, from what the platform wrote, as ISO 8601 with an offset.

- `parse_time(text)`: the times platforms write: nbgrader's timestamp.txt
  ("2026-11-30 12:00:00.000000 UTC"), Gradescope's `:created_at:`
  ("2026-11-30 12:00:00.000000000 -08:00"), ISO 8601 ("2026-11-30T12:00:00+08:00").
  A time without a zone is UTC (as nbgrader reads its own); anything else is "".
- `nbgrader_time(folder)`: the assignment folder's timestamp.txt, read like any upload
  (a regular file, never through a link, at most TIMESTAMP_BYTES); a time more than a day
  after now (a wrong clock, an edited file) is not used, with a note.
- `file_time(path, local=False)`: the last resort, the newest modification time of the file
  (or of the regular files directly in the folder), never through a link; `local`: as this
  machine's wall clock with its offset (Moodle's file times, which unzip wrote from zoneless
  wall-clock times in this machine's zone: the wall clock is what Moodle said, the offset is
  only this machine's, and course.toml's `timezone` replaces it; grader/course.py).
"""
import datetime
import os
import re
import stat

from ..textsafety import safe_text
from .errors import IntakeError
from .safeio import Deadline, open_submitted, read_fd

TIMESTAMP = "timestamp.txt"
TIMESTAMP_BYTES = 1024
MAX_LISTED = 1000            # entries of a folder looked at for its newest file
FUTURE_SLACK = datetime.timedelta(days=1)   # a timestamp.txt later than now plus this: not used

_TIME = re.compile(
    r"^\s*(?P<y>\d{4})-(?P<mo>\d{1,2})-(?P<d>\d{1,2})(?:[Tt]|\s+)(?P<h>\d{1,2}):(?P<mi>\d{2})"
    r"(?::(?P<s>\d{2})(?:[.,](?P<frac>\d{1,9}))?)?\s*"
    r"(?P<zone>[Zz]|UTC|GMT|[+-]\d{2}(?::?\d{2})?)?\s*$", re.ASCII)   # "２０２６" is no year


def iso(moment):
    """An aware datetime as ISO 8601 ("2026-11-30T20:00:00+00:00"); a naive one is UTC."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.timezone.utc)
    return moment.isoformat()


def parse_time(text):
    """ISO 8601 with an offset for one of the formats above, else "".

        parse_time("2026-11-30 12:00:00.000000 UTC") == "2026-11-30T12:00:00+00:00"
        parse_time("2026-11-30 12:00:00.000000000 -08:00") == "2026-11-30T12:00:00-08:00"
        parse_time("yesterday") == ""
    """
    if isinstance(text, datetime.datetime):
        return iso(text)
    if not isinstance(text, str) or len(text) > 100:
        return ""
    match = _TIME.match(text)
    if not match:
        return ""
    zone = match["zone"] or "UTC"
    if zone in ("Z", "z", "UTC", "GMT"):
        tz = datetime.timezone.utc
    else:
        digits = zone[1:].replace(":", "")
        hours, minutes = int(digits[:2]), int(digits[2:] or 0)
        if hours > 23 or minutes > 59:
            return ""
        sign = -1 if zone[0] == "-" else 1
        tz = datetime.timezone(sign * datetime.timedelta(hours=hours, minutes=minutes))
    micro = int((match["frac"] or "0")[:6].ljust(6, "0"))
    try:
        moment = datetime.datetime(int(match["y"]), int(match["mo"]), int(match["d"]),
                                   int(match["h"]), int(match["mi"]), int(match["s"] or 0),
                                   micro, tzinfo=tz)
    except ValueError:  # 2026-02-30, 25:00, ...
        return ""
    return iso(moment)


def nbgrader_time(folder):
    """(time, note): nbgrader's timestamp.txt in `folder`, parsed; ("", None) when there is
    none, ("", note) when it cannot be read or parsed."""
    path = os.path.join(folder, TIMESTAMP)
    try:
        os.lstat(path)
    except (OSError, ValueError):
        return "", None
    try:
        fd, is_folder = open_submitted(path, TIMESTAMP)
        try:
            if is_folder:
                raise IntakeError("it is a folder")
            data = read_fd(fd, TIMESTAMP_BYTES, TIMESTAMP, Deadline(5, TIMESTAMP), "timestamp")
        finally:
            os.close(fd)
    except IntakeError as error:
        return "", f"{TIMESTAMP} could not be read ({safe_text(str(error), 200)})"
    text = data.decode("utf-8", errors="replace").strip()
    found = parse_time(text)
    if not found:
        return "", f"{TIMESTAMP} does not hold a time the grader reads ({safe_text(text, 60)!r})"
    now = datetime.datetime.now(datetime.timezone.utc)
    if datetime.datetime.fromisoformat(found) > now + FUTURE_SLACK:
        # no submission is handed in after it is graded: a wrong clock or an edited file,
        # never charged as days late
        return "", f"{TIMESTAMP} says {found}, after the time it was graded; not used"
    return found, None


def file_time(path, local=False):
    """The newest modification time of the file at `path`, or of the regular files directly
    in the folder at `path` (at most MAX_LISTED looked at), as ISO 8601 (in UTC, or `local`:
    this machine's wall clock and offset); "" when none."""
    try:
        info = os.lstat(path)
    except (OSError, ValueError):
        return ""
    newest = None
    if stat.S_ISREG(info.st_mode):
        newest = info.st_mtime
    elif stat.S_ISDIR(info.st_mode):
        try:
            with os.scandir(path) as entries:
                for count, entry in enumerate(entries):
                    if count >= MAX_LISTED:
                        break
                    try:
                        found = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    if stat.S_ISREG(found.st_mode) and entry.name != TIMESTAMP:
                        newest = max(newest or found.st_mtime, found.st_mtime)
        except (OSError, ValueError):
            return ""
    if newest is None:
        return ""
    try:
        if local:
            return datetime.datetime.fromtimestamp(newest).astimezone().replace(microsecond=0).isoformat()
        return iso(datetime.datetime.fromtimestamp(newest, datetime.timezone.utc).replace(microsecond=0))
    except (OverflowError, OSError, ValueError):
        return ""
