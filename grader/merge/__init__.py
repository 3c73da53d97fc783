"""Shard folders into one gradebook, checked first (`grader merge`: commands/merge.py).

Each SHARD_DIR is the --out of `grader grade --shard K/N` and/or `--parts` and holds
shard.json (grader/shards.py). The merge refuses, writing nothing, when

- a folder has no readable shard.json (not a shard, or a run that was stopped);
- one folder is given twice, or shard K of N twice, or a shard of 1..N is missing;
- the folders differ in grader version, suite fingerprint (hidden tests, solution, grader
  code, limits, language, isolation level), isolation level, N (within one set of parts),
  or any recorded setting (feedback, visibility, language, ...);
- the parts graded do not cover the suite's parts exactly once per student;
- a file of a student's folder does not match the digest shard.json recorded for it, or
  a row disagrees with its own results.json (merge/verify.py: the file is named);
- a student is graded in two shards with different results, a row sits in a shard its key
  does not hash to, or two folders claim one student differently (identity, folder).

Then each student's folder is copied into DIR and the gradebook is rebuilt by the same code
as `grader grade` (report/rebuild.py: grades.csv, report.html, the adjustments of DIR's
course file and overrides), so `grader export` reads DIR as after one run. Parts graded on
different machines are combined per student (merge/parts.py). DIR/merge.json and each row's
`graded_by` say which machine graded which shard and part.
"""
import json
import os
import shutil
import stat

from .. import shards
from .. import files
from ..report import folders, gradebook
from ..textsafety import safe_text
from . import parts as partmerge
from .errors import MergeError
from . import verify

MERGE_FILE = "merge.json"
# what every shard of a class must share (besides `settings`, compared key by key)
SAME = ("grader_version", "isolation", "suite", "all_parts")
IDENTITY = ("student_id", "student_name", "layout", "submitted_at", "time_source", "late_flag",
            "flags")


def _shown(path):
    return safe_text(path, 200)


def read_record(folder):
    """The shard.json of `folder`, checked field by field; MergeError naming the folder."""
    path = os.path.join(folder, shards.SHARD_FILE)
    try:
        info = os.lstat(path)
    except OSError:
        raise MergeError(f"{_shown(folder)} has no {shards.SHARD_FILE}: not the --out of "
                         "grader grade --shard/--parts, or that run did not finish") from None
    if not stat.S_ISREG(info.st_mode) or info.st_size > shards.SHARD_FILE_BYTES:
        raise MergeError(f"{_shown(path)} is not a regular file under "
                         f"{shards.SHARD_FILE_BYTES // 2**20} MB")
    try:
        with open(path, encoding="utf-8") as handle:
            record = json.load(handle)
    except (OSError, ValueError) as error:
        raise MergeError(f"{_shown(path)} does not read: {safe_text(error, 200)}") from None
    problem = _record_problem(record)
    if problem:
        raise MergeError(f"{_shown(path)}: {problem}")
    record["dir"] = folder
    return record


def _record_problem(record):
    if not isinstance(record, dict) or record.get("kind") != "attention-kit shard":
        return "not a shard record"
    for field in ("shard", "of"):
        value = record.get(field)
        if not isinstance(value, int) or isinstance(value, bool) \
                or not 1 <= value <= shards.MAX_SHARDS:
            return f"{field} is not a number from 1 to {shards.MAX_SHARDS}"
    if record["shard"] > record["of"]:
        return f"shard {record['shard']} of {record['of']} is out of range"
    for field in ("parts", "all_parts"):
        value = record.get(field)
        if not isinstance(value, list) or not value or len(value) > 100 \
                or not all(isinstance(p, str) and p for p in value):
            return f"{field} is not a list of part names"
    if not set(record["parts"]) <= set(record["all_parts"]):
        return "parts names a part the suite does not have"
    for field in ("suite", "grader_version", "isolation"):
        if not isinstance(record.get(field), str):
            return f"{field} is missing"
    if not isinstance(record.get("settings"), dict) or not isinstance(record.get("machine"), dict):
        return "settings or machine is missing"
    if record.get("format") != shards.FORMAT:
        return (f"written by an earlier grader (format {_value(record.get('format'))}, without "
                f"the digests of its files): grade that shard again")
    rows = record.get("rows")
    if not isinstance(rows, list) or not all(
            isinstance(r, list) and len(r) == 3 and all(isinstance(v, str) for v in r[:2])
            and isinstance(r[2], dict) and len(r[2]) <= shards.MAX_ROW_FILES and all(
                isinstance(f, str) and f and f == os.path.basename(f) and f not in (".", "..")
                and isinstance(d, str) and len(d) == 64 for f, d in r[2].items())
            for r in rows):
        return "rows is not a list of [name, folder, {file: sha256}]"
    return None


def _differs(a, b):
    """The first recorded field two shard records do not share, as text, or None."""
    for field in SAME:
        if a[field] != b[field]:
            return field, a[field], b[field]
    for field in sorted(set(a["settings"]) | set(b["settings"])):
        if a["settings"].get(field) != b["settings"].get(field):
            return field, a["settings"].get(field), b["settings"].get(field)
    return None


def _value(value):
    return safe_text(json.dumps(value, ensure_ascii=False, sort_keys=True), 120)


def check_records(records):
    """The records grouped by the parts they graded: {tuple(parts): {K: record}}, after every
    check of the shards as a set (see the module's docstring)."""
    seen = {}
    for record in records:
        real = os.path.realpath(record["dir"])
        if real in seen:
            raise MergeError(f"{_shown(record['dir'])} is given twice")
        seen[real] = record
    first = records[0]
    for record in records[1:]:
        found = _differs(first, record)
        if found:
            field, a, b = found
            raise MergeError(f"the shards were graded differently: {field} is {_value(a)} in "
                             f"{_shown(first['dir'])} but {_value(b)} in {_shown(record['dir'])}")
    groups = {}
    for record in records:
        group = groups.setdefault(tuple(record["parts"]), {})
        other = next(iter(group.values()), None)
        if other is not None and other["of"] != record["of"]:
            raise MergeError(f"the shards of parts {', '.join(record['parts'])} disagree on N: "
                             f"{_shown(other['dir'])} is of {other['of']}, "
                             f"{_shown(record['dir'])} of {record['of']}")
        if record["shard"] in group:
            raise MergeError(f"shard {record['shard']} of {record['of']} (parts "
                             f"{', '.join(record['parts'])}) is given twice: "
                             f"{_shown(group[record['shard']]['dir'])} and {_shown(record['dir'])}")
        group[record["shard"]] = record
    for parts, group in groups.items():
        count = next(iter(group.values()))["of"]
        missing = [k for k in range(1, count + 1) if k not in group]
        if missing:
            shown = ", ".join(str(k) for k in missing[:20])
            raise MergeError(f"shard {shown} of {count} (parts {', '.join(parts)}) "
                             f"{'is' if len(missing) == 1 else 'are'} missing: every shard "
                             "of the class must be merged")
    covered = {}
    for parts in groups:
        for part in parts:
            if part in covered:
                raise MergeError(f"part {part} is graded twice: by the shards of parts "
                                 f"{', '.join(covered[part])} and of {', '.join(parts)}")
            covered[part] = parts
    absent = [p for p in first["all_parts"] if p not in covered]
    if absent:
        raise MergeError(f"no shard folder graded part {', '.join(absent)}: grade it with "
                         f"grader grade --parts {','.join(absent)} and merge that folder too")
    order = {p: i for i, p in enumerate(first["all_parts"])}
    return dict(sorted(groups.items(), key=lambda item: min(order[p] for p in item[0])))


def _comparable(row):
    """What two gradings of one student must agree on (not when or where they ran)."""
    return {k: v for k, v in row.items() if k not in ("fingerprint", "graded_by")}


def group_rows(group):
    """{name: (row, record)} of one set of parts, after the checks of rows across shards:
    one student's rows in two shards first (they must agree), then each row's own shard."""
    rows = {}
    for index, record in sorted(group.items()):
        for name, folder, digests in record["rows"]:
            if folders.reserved(folder) or folder != os.path.basename(folder) \
                    or folder in ("", ".", ".."):
                raise MergeError(f"{_shown(record['dir'])}: {shards.SHARD_FILE} lists the folder "
                                 f"{safe_text(folder, 100)}, which is no student's folder")
            files = verify.read_listed(record["dir"], folder, digests)
            row = verify.checked_row(record["dir"], folder, name, files)
            if name in rows and _comparable(rows[name][0]) != _comparable(row):
                earlier = rows[name][1]
                raise MergeError(f"{safe_text(name, 100)} is graded in shard "
                                 f"{earlier['shard']} ({_shown(earlier['dir'])}) and shard "
                                 f"{index} ({_shown(record['dir'])}) with different results")
            rows.setdefault(name, (row, record))
    folder_of = {}
    for index, record in sorted(group.items()):
        for name, folder, _digests in record["rows"]:
            row = rows[name][0]
            wanted = shards.shard_of(shards.key(row.get("student_id"), name), record["of"])
            if wanted != index:
                raise MergeError(f"{_shown(record['dir'])} (shard {index} of {record['of']}) holds "
                                 f"{safe_text(name, 100)}, whose key hashes to shard {wanted}: "
                                 "were the shards given different submissions or layouts?")
            clash = folder_of.get(folders.key(folder))
            if clash is not None and clash != name:
                raise MergeError(f"{safe_text(name, 100)} and {safe_text(clash, 100)} both have "
                                 f"the folder {safe_text(folder, 100)}")
            folder_of[folders.key(folder)] = name
    return rows


def plan(shard_dirs, out_dir):
    """Every check, nothing written: ({name: [(row, record), ...] in part order}, groups)."""
    if os.path.lexists(out_dir) and not os.path.isdir(out_dir):
        raise MergeError(f"--out {_shown(out_dir)} exists and is not a folder")
    for folder in shard_dirs:
        if not os.path.isdir(folder):
            raise MergeError(f"{_shown(folder)} is not a folder")
    records = [read_record(folder) for folder in shard_dirs]
    out_real = os.path.realpath(out_dir)
    for record in records:
        if os.path.realpath(record["dir"]) == out_real:
            raise MergeError(f"--out {_shown(out_dir)} is one of the shard folders")
    groups = check_records(records)
    by_group = [group_rows(group) for group in groups.values()]
    names = set(by_group[0])
    for parts, rows in zip(list(groups)[1:], by_group[1:]):
        extra = sorted(set(rows) ^ names)
        if extra:
            first = list(groups)[0]
            where = ", ".join(parts) if extra[0] in rows else ", ".join(first)
            raise MergeError(f"{safe_text(extra[0], 100)} is graded for parts {where} only"
                             f"{f' (and {len(extra) - 1} more students)' if len(extra) > 1 else ''}"
                             ": every student needs every part")
    merged = {}
    for name in sorted(names):
        pieces = [rows[name] for rows in by_group]
        base = pieces[0][0]
        for row, record in pieces[1:]:
            for field in ("folder",) + IDENTITY:
                if row.get(field) != base.get(field):
                    raise MergeError(f"{safe_text(name, 100)}'s {field} differs between "
                                     f"{_shown(pieces[0][1]['dir'])} and {_shown(record['dir'])}")
        merged[name] = pieces
    kept = gradebook.load_records(out_dir)
    taken = {folders.key(r["folder"]): n for n, r in kept.items()}
    for name, pieces in merged.items():
        folder = pieces[0][0]["folder"]
        target = os.path.join(out_dir, folder)
        if folders.reserved(folder) or os.path.islink(target) or (
                os.path.lexists(target) and not os.path.isdir(target)):
            raise MergeError(f"{safe_text(name, 100)}'s folder {safe_text(folder, 100)} cannot "
                             f"be written in --out {_shown(out_dir)} (a name of the grader's "
                             "own, or a link or file is there)")
        owner = taken.get(folders.key(folder))
        if owner is not None and owner != name:
            raise MergeError(f"--out {_shown(out_dir)} already has the folder "
                             f"{safe_text(pieces[0][0]['folder'], 100)} for {safe_text(owner, 100)}, "
                             f"not {safe_text(name, 100)}")
    if len(groups) > 1:
        partmerge.check_unadjusted(merged)
    return merged, groups


def _graded_by(record):
    machine = record["machine"]
    return {"host": safe_text(machine.get("host", ""), 200), "shard": f"{record['shard']}/{record['of']}",
            "isolation": record["isolation"], "graded_at": safe_text(record.get("graded_at", ""), 40),
            "cuda": bool(machine.get("cuda")),
            **({"slurm_job": safe_text(machine["SLURM_JOB_ID"], 40)} if machine.get("SLURM_JOB_ID") else {})}


def _copy_folder(record, folder, target):
    """The files shard.json lists for a student's folder into DIR (replacing what was
    there), each as the bytes checked against its digest."""
    staging = target + ".merging"
    shutil.rmtree(staging, ignore_errors=True)
    os.makedirs(staging)
    digests = next(d for n, f, d in record["rows"] if f == folder)
    verify.copy_listed(record["dir"], folder, digests, staging)
    shutil.rmtree(target, ignore_errors=True)
    os.rename(staging, target)


def write(merged, groups, book, assignment=None):
    """Each student's folder into the Gradebook `book`'s folder (report/book.py: its course
    file and ledger as the run read them), then the gradebook rebuilt (report.html titled
    with `assignment`'s title, None: the default assignment's)."""
    out_dir = book.out_dir
    os.makedirs(out_dir, exist_ok=True)
    all_parts = next(iter(next(iter(groups.values())).values()))["all_parts"]
    for name, pieces in merged.items():
        folder = pieces[0][0]["folder"]
        target = os.path.join(out_dir, folder)
        _copy_folder(pieces[0][1], folder, target)
        if len(pieces) == 1:
            row = dict(pieces[0][0])
            row["graded_by"] = {p: _graded_by(pieces[0][1]) for p in row.get("parts", {})}
        else:
            row = partmerge.combine(pieces, all_parts, target, _graded_by)
        gradebook.save_record(row, out_dir)
    book.rows = gradebook.load_records(out_dir)  # the folders merged in, and those kept
    final, changed = book.rebuild(all_parts, assignment)
    files.write_text(os.path.join(out_dir, MERGE_FILE), files.dumps({
        "kind": "attention-kit merge",
        "shards": [{"dir": os.path.abspath(r["dir"]), "shard": r["shard"], "of": r["of"],
                    "parts": r["parts"], "machine": r["machine"], "isolation": r["isolation"],
                    "graded_at": r.get("graded_at"), "students": len(r["rows"])}
                   for group in groups.values() for r in group.values()],
        "suite": next(iter(next(iter(groups.values())).values()))["suite"],
        "students": len(merged)}))
    return final
