"""What a shard says it wrote, checked before it is merged: each file against its digest,
each row against its own results.json.

shard.json lists, for every row, the sha256 of each file of the student's folder as the
run left it (shards.folder_digests). A file that no longer matches (a row edited to 100, a
folder copied from another run, a restored backup) is refused by name, and so is a row
whose total, maximum, status or parts disagree with the results.json beside it. Only the
listed files are merged, as the bytes that were checked.

    files = read_listed(shard_dir, folder, digests)   # every file checked; the row and results
    row = checked_row(shard_dir, folder, name, files)  # the row, consistent with its results
    copy_listed(shard_dir, folder, digests, target)    # the checked bytes, when merging
"""
import json
import os
import stat

from .. import shards
from ..files import write_bytes
from ..textsafety import safe_text
from .errors import MergeError

ROW_FILE = "gradebook-row.json"
RESULTS_FILE = "results.json"
FILE_BYTES = 64 * 1024 * 1024      # of one file of a student's folder (the gradebook caps each)
TOLERANCE = 1e-3                   # points: the files round each figure to 4 places


def _error(message):
    return MergeError(message)


def _shown(*parts):
    return safe_text(os.path.join(*parts), 300)


def read_file(path, shown):
    """The bytes of a regular file (never a link), at most FILE_BYTES; MergeError else."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        raise _error(f"{shown} is missing (shard.json lists it)") from None
    except OSError as error:
        raise _error(f"{shown} cannot be read ({os.strerror(error.errno or 0) or 'a link'})") \
            from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > FILE_BYTES:
            raise _error(f"{shown} is not a regular file under {FILE_BYTES // 2**20} MB")
        chunks, size = [], 0
        while size <= FILE_BYTES:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _checked(shard_dir, folder, name, expected):
    shown = _shown(shard_dir, folder, name)
    data = read_file(os.path.join(shard_dir, folder, name), shown)
    if shards.digest(data) != expected:
        raise _error(f"{shown} does not match the digest {shards.SHARD_FILE} recorded for it: "
                     "it was changed after the shard was graded (grade the shard again)")
    return data


def read_listed(shard_dir, folder, digests):
    """Every file shard.json lists for one row checked against its digest (MergeError naming
    the first that does not match); returns the bytes of its row and results.json."""
    for needed in (ROW_FILE, RESULTS_FILE):
        if needed not in digests:
            raise _error(f"{_shown(shard_dir, shards.SHARD_FILE)} lists no {needed} for the "
                         f"folder {safe_text(folder, 100)}")
    kept = {}
    for name, expected in sorted(digests.items()):
        data = _checked(shard_dir, folder, name, expected)
        if name in (ROW_FILE, RESULTS_FILE):
            kept[name] = data
    return kept


def copy_listed(shard_dir, folder, digests, target):
    """The listed files of one row into the folder `target`, each as the bytes checked
    against its digest (MergeError if one changed since the merge's checks)."""
    for name, expected in sorted(digests.items()):
        write_bytes(os.path.join(target, name), _checked(shard_dir, folder, name, expected))


def _json(data, shown):
    try:
        value = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise _error(f"{shown} does not read as JSON") from None
    if not isinstance(value, dict):
        raise _error(f"{shown} is not a JSON object")
    return value


def _number(value):
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _off(a, b):
    return a is None or b is None or abs(a - b) > TOLERANCE


def checked_row(shard_dir, folder, name, files):
    """The row of `name` from its verified files, after checking it against its own
    results.json; MergeError naming both files and the figure that differs."""
    row_shown = _shown(shard_dir, folder, ROW_FILE)
    row = _json(files[ROW_FILE], row_shown)
    if row.get("name") != name or row.get("folder") != folder \
            or not isinstance(row.get("parts"), dict):
        raise _error(f"{row_shown} is not the row of {safe_text(name, 100)} in "
                     f"{safe_text(folder, 100)} that {shards.SHARD_FILE} lists")
    results = _json(files[RESULTS_FILE], _shown(shard_dir, folder, RESULTS_FILE))
    problem = disagreement(row, results)
    if problem:
        raise _error(f"{row_shown} disagrees with {RESULTS_FILE} beside it: {problem}")
    return row


def disagreement(row, results):
    """What a gradebook row and the results.json written with it disagree on, or None: the
    status, the graded total (results.json's raw_score when it carries an instructor
    adjustment), the maximum, and each part's points (when results.json lists its tests)."""
    extra = results.get("extra_data") if isinstance(results.get("extra_data"), dict) else {}
    status = extra.get("status")
    if status is not None and status != row.get("status"):
        return f"the status is {_value(row.get('status'))} in the row, {_value(status)} in results.json"
    graded = _number(extra.get("raw_score")) if extra.get("adjustment") else _number(results.get("score"))
    if row.get("status") != "grader error" and _off(_number(row.get("total")), graded):
        return f"the total is {_value(row.get('total'))} in the row, {_value(graded)} in results.json"
    if "max_score" in extra and _off(_number(row.get("max")), _number(extra.get("max_score"))):
        return f"the maximum is {_value(row.get('max'))} in the row, {_value(extra.get('max_score'))} " \
               "in results.json"
    tests = results.get("tests")
    if isinstance(tests, list) and tests and not extra.get("cut"):
        parts = {}
        for test in tests:
            if not isinstance(test, dict) or not isinstance(test.get("tags"), list) \
                    or not test["tags"]:
                return "results.json lists a test without its part"
            got, top = parts.get(test["tags"][0], (0.0, 0.0))
            parts[test["tags"][0]] = (got + (_number(test.get("score")) or 0.0),
                                      top + (_number(test.get("max_score")) or 0.0))
        for part, pair in row["parts"].items():
            if not isinstance(pair, list) or len(pair) != 2:
                return f"part {safe_text(part, 100)} is not [points, of] in the row"
            got, top = parts.get(safe_text(part, 100), (0.0, 0.0))
            if _off(_number(pair[0]), got) or _off(_number(pair[1]), top):
                return (f"part {safe_text(part, 100)} is {_value(pair[0])} of {_value(pair[1])} "
                        f"in the row, {_value(round(got, 4))} of {_value(round(top, 4))} in results.json")
        extra_parts = sorted(p for p, (_, top) in parts.items()
                             if top and p not in {safe_text(q, 100) for q in row["parts"]})
        if extra_parts:
            return f"results.json grades part {safe_text(extra_parts[0], 100)}, which the row lacks"
    return None


def _value(value):
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return safe_text(json.dumps(value, ensure_ascii=False), 60)


def listed_bytes(record, folder, name):
    """The bytes of one listed file of a row's folder in a shard, checked against its
    digest; None when shard.json lists no such file."""
    for _row, listed, digests in record["rows"]:
        if listed == folder and name in digests:
            return _checked(record["dir"], folder, name, digests[name])
    return None
