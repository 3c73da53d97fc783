"""One student's parts, graded on different machines (`grader grade --parts`), as one row.

The row is what one run would keep: the parts in the suite's order, total and max summed,
status "grader error" if any machine failed on it (its total then empty, never a zero),
the reason of the first part set that has one (a grader error's first), the diagnoses in
part order. Each part's machine is in `graded_by`.

The student's files (each read as the bytes checked against shard.json's digests,
verify.py): results.json holds every machine's tests, scores summed, outputs one
after the other; feedback.txt is each machine's feedback one after the other; feedback.html
is the first part set's page, and each other one's is `feedback-<parts>.html` beside it.
"""
import json
import os

from .. import files
from ..report import folders
from ..textsafety import safe_text
from .errors import MergeError
from .verify import listed_bytes

STATUS_ORDER = ("grader error", "not gradable", "missing work", "graded")


def _results(folder):
    try:
        with open(os.path.join(folder, "results.json"), encoding="utf-8") as handle:
            data = json.load(handle)
        return data if isinstance(data, dict) else None
    except (OSError, ValueError):
        return None


def _parsed(data):
    """results.json's bytes (already checked against their digest) as a dict, or None."""
    try:
        value = json.loads(data.decode("utf-8")) if data is not None else None
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def check_unadjusted(merged):
    """Parts are combined from the graded scores: a shard folder whose results.json carries an
    instructor adjustment (a course file or overrides in the shard folder) is refused."""
    for name, pieces in merged.items():
        for row, record in pieces:
            data = _results(os.path.join(record["dir"], row["folder"])) or {}
            extra = data.get("extra_data") if isinstance(data.get("extra_data"), dict) else {}
            if extra.get("adjustment"):
                raise MergeError(
                    f"{safe_text(record['dir'], 200)}: {safe_text(name, 100)}'s results carry "
                    "an instructor adjustment (a course file or overrides in a shard folder); "
                    "grade parts without them and give them to the merged folder (--course, "
                    "DIR/overrides.json)")


def _status(rows):
    statuses = [r.get("status") for r in rows]
    if "grader error" in statuses:
        return "grader error"
    return min(statuses, key=lambda s: STATUS_ORDER.index(s) if s in STATUS_ORDER else 0)


def combine(pieces, all_parts, target, graded_by):
    """The merged row of one student ([(row, record)] in part order), and their files in
    `target` (the first piece's folder, already copied there)."""
    rows = [row for row, _ in pieces]
    row = dict(rows[0])
    parts, by = {}, {}
    for piece, record in pieces:
        for part, pair in (piece.get("parts") or {}).items():
            parts[part] = pair
            by[part] = graded_by(record)
    order = {p: i for i, p in enumerate(all_parts)}
    row["parts"] = dict(sorted(parts.items(), key=lambda item: order.get(item[0], len(order))))
    row["graded_by"] = {p: by[p] for p in row["parts"]}
    row["status"] = _status(rows)
    row["max"] = round(sum(float(r.get("max") or 0) for r in rows), 4)
    row["total"] = None if row["status"] == "grader error" or any(
        r.get("total") is None for r in rows) else round(sum(float(r["total"]) for r in rows), 4)
    failed = [r for r in rows if r.get("status") == "grader error" and r.get("reason")]
    row["reason"] = (failed or [r for r in rows if r.get("reason")] or [{"reason": ""}])[0]["reason"]
    row["diagnoses"] = list(dict.fromkeys(d for r in rows for d in r.get("diagnoses") or []))
    row["fingerprint"] = None  # no single grading: `grader grade` into DIR grades it again
    _combine_files(pieces, target)
    return row


def _combine_files(pieces, target):
    first = _results(target) or {"score": 0, "output": "", "tests": [], "extra_data": {}}
    if not isinstance(first.get("extra_data"), dict):
        first["extra_data"] = {}
    extra = first["extra_data"]
    texts = [_read_text(os.path.join(target, "feedback.txt"))]
    for row, record in pieces[1:]:
        other = _parsed(listed_bytes(record, row["folder"], "results.json")) or {}
        first["score"] = round(float(first.get("score") or 0) + float(other.get("score") or 0), 4)
        first["output"] = "\n\n".join(t for t in (first.get("output"), other.get("output"))
                                      if isinstance(t, str) and t)
        first["tests"] = list(first.get("tests") or []) + list(other.get("tests") or [])
        first["execution_time"] = round(float(first.get("execution_time") or 0)
                                        + float(other.get("execution_time") or 0), 4)
        more = other.get("extra_data") if isinstance(other.get("extra_data"), dict) else {}
        for field in ("diagnoses", "skipped"):
            extra[field] = list(extra.get(field) or []) + list(more.get(field) or [])
        for field in ("max_score", "grader_errors"):
            extra[field] = round(float(extra.get(field) or 0) + float(more.get(field) or 0), 4)
        extra.setdefault("isolation_of_parts", {})[", ".join(record["parts"])] = more.get("isolation")
        if more.get("status") == "grader error":
            extra["status"] = "grader error"
        feedback = listed_bytes(record, row["folder"], "feedback.txt")
        texts.append(feedback[:4 * files.FEEDBACK_BYTES].decode("utf-8", "replace") if feedback else "")
        page = listed_bytes(record, row["folder"], "feedback.html")
        if page is not None:
            name = folders.candidate("feedback-" + "-".join(record["parts"])) + ".html"
            files.write_bytes(os.path.join(target, name), page[:files.RESULTS_BYTES * 8])
    text = files.dumps(first)
    if len(text.encode("utf-8")) > 2 * files.RESULTS_BYTES:  # each was capped; keep the sum so
        for test in first["tests"]:
            test["output"] = ""
        text = files.dumps(first)
    files.write_text(os.path.join(target, "results.json"), text)
    files.write_text(os.path.join(target, "feedback.txt"), "\n\n".join(t for t in texts if t),
                     2 * files.FEEDBACK_BYTES)


def _read_text(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read(4 * files.FEEDBACK_BYTES)
    except OSError:
        return ""
