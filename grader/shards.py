"""A class graded in shards: which submissions shard K of N grades, and what its folder records.

    grader grade subs/* --shard 2/8 --out shard-2     # the share of the class hashing to 2
    grader grade subs/* --parts gpu --out gpu          # the GPU part only (a GPU node)
    grader merge shard-* gpu --out grades              # one gradebook (grader/merge/)

The partition is decided after the layout has grouped the class (layouts.resolve: one
submission per student, latest wins), on each row's stable key: the student id the layout
gives, else the submission's name, each as its gradebook row keeps it. sha256 of that key,
read as an integer, modulo N, plus 1, is its shard: the same inputs give the same partition
on any machine and in any Python (never `hash()`, which is salted per process).

A shard folder (or one graded with `--parts`) holds `shard.json` (SHARD_FILE): K, N, the
parts graded, the suite's fingerprint, the grader's version, the isolation level, the
machine, the settings every shard of one class must share, and the rows this run graded,
each with the sha256 of every file of its folder (its gradebook row, results.json, the
feedback, the kept code): `grader merge` takes only those files, and only as they were.
"""
import dataclasses
import hashlib
import json
import os
import platform
import re
import socket
import stat
import time

from . import __version__, files
from .textsafety import safe_text

SHARD_FILE = "shard.json"
MAX_SHARDS = 10000
SHARD_FILE_BYTES = 64 * 1024 * 1024   # what merge reads of one (rows of a large class)
FORMAT = 2                             # 2: each row lists its files' digests (1 had none)
MAX_ROW_FILES = 100                    # files of one student's folder a record lists
PART_ALIASES = {"all": None, "cpu": "cpu", "gpu": "gpu"}
_SHARD = re.compile(r"\A([0-9]{1,5})/([0-9]{1,5})\Z")


class ShardError(ValueError):
    """A shard or parts request, or a shard folder, that cannot be used; the text says why."""


@dataclasses.dataclass(frozen=True)
class Shard:
    index: int   # K, from 1
    count: int   # N

    def __str__(self):
        return f"{self.index}/{self.count}"


def parse_shard(text):
    """'K/N' -> Shard, with 1 <= K <= N <= MAX_SHARDS; ShardError otherwise."""
    found = _SHARD.match(text or "")
    if not found:
        raise ShardError(f"--shard {safe_text(text, 40)!s}: expected K/N, e.g. 2/8")
    index, count = int(found.group(1)), int(found.group(2))
    if not 1 <= count <= MAX_SHARDS:
        raise ShardError(f"--shard {index}/{count}: N must be from 1 to {MAX_SHARDS}")
    if not 1 <= index <= count:
        raise ShardError(f"--shard {index}/{count}: K must be from 1 to N ({count})")
    return Shard(index, count)


def key(student_id, name):
    """A row's stable key: its student id, else its submission name (as the row keeps them)."""
    return safe_text(student_id or "", 400) or safe_text(name or "", 1000)


def shard_of(row_key, count):
    """The shard (1..count) a key belongs to: sha256, modulo count, plus 1."""
    digest = hashlib.sha256(row_key.encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest, "big") % count + 1


def belongs(identity, shard):
    """Does the layouts.Submission (or row) `identity` belong to `shard`?"""
    if shard is None:
        return True
    student = identity.get("student_id") if isinstance(identity, dict) else identity.student_id
    name = identity.get("name") if isinstance(identity, dict) else identity.name
    return shard_of(key(student, name), shard.count) == shard.index


def parse_parts(text):
    """--parts: 'all' (None), 'cpu' (every part but the GPU parts), 'gpu', or a comma-separated
    list of part names as grades.csv names them. Returns None, 'cpu', 'gpu' or a tuple."""
    text = (text or "all").strip()
    if text.lower() in PART_ALIASES:
        return PART_ALIASES[text.lower()]
    names = tuple(dict.fromkeys(p.strip() for p in text.split(",") if p.strip()))
    if not names or len(names) > 100 or any(len(n) > 100 for n in names):
        raise ShardError(f"--parts {safe_text(text, 60)}: give all, cpu, gpu or part names "
                         "separated by commas")
    return names


def select_parts(wanted, all_parts, gpu_parts):
    """The parts `wanted` (parse_parts) names among the suite's `all_parts`, in their order;
    "gpu" is the assignment's GPU parts (`gpu_parts`: its declaration's parts with gpu =
    true), "cpu" the others. ShardError naming an unknown part or an empty choice."""
    if wanted is None:
        return list(all_parts)
    if wanted == "cpu":
        chosen = [p for p in all_parts if p not in gpu_parts]
    elif wanted == "gpu":
        chosen = [p for p in all_parts if p in gpu_parts]
    else:
        unknown = [p for p in wanted if p not in all_parts]
        if unknown:
            raise ShardError(f"--parts: no part {safe_text(unknown[0], 100)} in the hidden suite "
                             f"(its parts: {', '.join(all_parts)})")
        chosen = [p for p in all_parts if p in wanted]
    if not chosen:
        raise ShardError(f"--parts {wanted}: the hidden suite has no such part "
                         f"(its parts: {', '.join(all_parts)})")
    return chosen


def machine():
    """Which machine graded: host name, and what a scheduler says of the job."""
    found = {"host": safe_text(socket.gethostname(), 200), "platform": platform.platform()[:200]}
    for variable in ("SLURM_JOB_ID", "SLURM_ARRAY_JOB_ID", "SLURM_ARRAY_TASK_ID",
                     "SLURM_JOB_PARTITION", "JOB_COMPLETION_INDEX", "GITHUB_RUN_ID",
                     "GITHUB_JOB", "CUDA_VISIBLE_DEVICES"):
        if os.environ.get(variable):
            found[variable] = safe_text(os.environ[variable], 200)
    try:
        import torch  # heavy (seconds): imported only to ask whether CUDA is there
        found["cuda"] = bool(torch.cuda.is_available())
    except Exception:  # noqa: BLE001 - a missing torch is said elsewhere
        found["cuda"] = False
    return found


def settings_of(options):
    """What every shard of a class must be graded with: each field of the SuiteOptions but
    the paths (the suite fingerprint hashes what they hold), the isolation level (recorded on
    its own) and the parts (merge combines different ones); the assignment by its name."""
    return {f.name: value.name if f.name == "assignment" else
            dataclasses.asdict(value) if dataclasses.is_dataclass(value) else value
            for f in dataclasses.fields(options)
            for value in [getattr(options, f.name)]
            if f.name not in ("hidden_tests", "solution", "isolation", "parts")}


def remove_record(out_dir):
    """Before a run: the record of an earlier one goes (a run stopped midway has none)."""
    try:
        os.remove(os.path.join(out_dir, SHARD_FILE))
    except FileNotFoundError:
        pass


def digest(data):
    return hashlib.sha256(data).hexdigest()


def folder_digests(folder):
    """{file name: sha256} of every regular file directly in a student's folder (links and
    folders are never merged, so never listed)."""
    found = {}
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        return found
    for entry in entries:
        if len(found) >= MAX_ROW_FILES:
            break
        try:
            if not stat.S_ISREG(entry.stat(follow_symlinks=False).st_mode):
                continue
            with open(entry.path, "rb") as handle:
                found[entry.name] = digest(handle.read())
        except OSError:
            continue
    return found


def write_record(out_dir, shard, parts, all_parts, suite, isolation_level, settings, rows):
    """DIR/shard.json for the run that just graded `rows` (gradebook rows of this shard),
    with the digest of every file of each row's folder as the run left it."""
    listed = {r["name"]: r["folder"] for r in rows}
    record = {"kind": "attention-kit shard", "format": FORMAT,
              "shard": shard.index if shard else 1, "of": shard.count if shard else 1,
              "parts": list(parts), "all_parts": list(all_parts),
              "suite": suite, "grader_version": __version__, "isolation": isolation_level,
              "machine": machine(), "settings": dict(settings),
              "graded_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "rows": [[name, folder, folder_digests(os.path.join(out_dir, folder))]
                       for name, folder in sorted(listed.items())]}
    files.write_text(os.path.join(out_dir, SHARD_FILE), json.dumps(record, ensure_ascii=False,
                                                                   indent=1))
    return record
