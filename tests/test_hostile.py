"""Hostile and broken submissions, graded the way an instructor grades a class.

The whole zoo (tests/hostile_zoo.py) plus the correct solution and the zero stub go through
ONE `grader grade` call per isolation level (and the entries that loop for ever through a
second, under short time limits), run from a copy of the kit so that a defence that failed
could not damage this checkout. Then:
- each entry scores as its table row says (an attack: no more than the zero stub), and the
  assertion names the defence that had to hold;
- the correct solution gets full marks and every submission has a row;
- no process of any submission is left, nothing reached the network listener, the kit's
  files (and torch's) are unchanged by hash, nothing was written outside the sandboxes.
The full zoo runs at the best level this machine offers; the entries whose defence depends
on the level run again at each weaker level where that defence still holds.
"""
import csv
import hashlib
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import threading
import time

import pytest
import torch

from conftest import KIT, SOLUTION, SUBMISSIONS, copy_kit, processes_naming
from grader.sandbox import isolation
from hostile_zoo import (GRADER_PROCESSES, KILL_FORK_SERVER, KILL_TRUSTED_NOW, LITTER_PREFIX,
                         OWN_GRADER, ZOO, zero_stub)
from grading import grades, run_grader

SECRET = "attnkit-secret-7d1f"  # in the grader's environment; no worker may see it
# generous wall-clock limits: the zoo must give the same verdicts on a loaded machine (two
# test runs at once on two cores), where a memory attack must meet its memory limit first
LIMITS = ["--call-seconds", "8", "--import-seconds", "10", "--submission-seconds", "150",
          "--memory-mb", "1024", "--jobs", "2"]
# the entries that loop until a time limit stops them (Hostile.endless), in a batch of their
# own: the generous limits are for everything else, and a loop under them burned 20 s of CPU
# at each level; a loop never finishes, so short limits give the same verdict, loaded or not
# (a right function's call and a file's top level take milliseconds)
TIGHT = ["--call-seconds", "2", "--import-seconds", "3", "--submission-seconds", "60",
         "--memory-mb", "1024", "--jobs", "2"]
ESCAPES = ["/tmp/results.json", "/tmp/attnkit-escaped-abs.py", "/tmp/big.bin"]


def level_key(level):
    if level.level == "none":
        return "none-uid" if level.uid is not None else "none"
    return level.level


def available_levels():
    best = isolation.choose("auto")
    keys = [("auto", level_key(best))]
    for name in ("unshare", "none"):
        try:
            level = isolation.choose(name)
        except isolation.IsolationUnavailable:
            continue
        if level_key(level) != keys[0][1]:
            keys.append((name, level_key(level)))
    return keys


LEVELS = available_levels()


def _hash_tree(root):
    digest = hashlib.sha256()
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in ("__pycache__", ".pytest_cache"))
        for name in sorted(files):
            path = os.path.join(folder, name)
            digest.update(path.encode())
            with open(path, "rb") as handle:
                digest.update(handle.read())
    return digest.hexdigest()


SABOTAGE = "kit sabotaged by a submission"  # what the write-kit entry appends


def _protected():
    """What no submission may change: the torch it grades with (by hash)."""
    torch_init = os.path.join(os.path.dirname(torch.__file__), "__init__.py")
    return {"torch/__init__.py": hashlib.sha256(open(torch_init, "rb").read()).hexdigest()}


def _sabotaged_checkout():
    """Files of this checkout a submission wrote into. The checkout is not hashed: a developer
    may be editing it while the tests run; what a submission writes carries its mark."""
    found = []
    for part in ("grader", "solutions", "tests_hidden"):
        for folder, dirs, files in os.walk(os.path.join(KIT, part)):
            dirs[:] = [d for d in dirs if d != "__pycache__"]
            for name in files:
                path = os.path.join(folder, name)
                with open(path, "rb") as handle:
                    if SABOTAGE.encode() in handle.read():
                        found.append(path)
    return found


def _stray_processes(token, workdir):
    """Processes this run left: ones carrying its daemon marker, or started for it (their
    command line names its private temporary folder). Other graders and test runs on the
    same machine are not counted."""
    return processes_naming(f"1234.{token}", workdir)


class PeakMemory(threading.Thread):
    """Samples the peak resident memory (VmHWM) of the grader's main process and of its
    trusted processes (forks of the fork server, which keep its command line) while a batch
    runs. The template beside the server and its keepers keep it too (about torch's size);
    the workers forked from them, which have dropped their privileges (NoNewPrivs), are
    the submissions' and are left out."""

    def __init__(self, main_pid):
        super().__init__(daemon=True)
        self.main_pid, self.running = main_pid, True
        self.main_mb = self.trusted_mb = 0.0

    @staticmethod
    def _hwm_mb(pid):
        try:
            with open(f"/proc/{pid}/status") as handle:
                fields = dict(line.split(":", 1) for line in handle if ":" in line)
        except OSError:
            return 0.0
        if fields.get("NoNewPrivs", "0").strip() == "1":  # a worker: the submission's
            return 0.0
        return int(fields.get("VmHWM", "0 kB").split()[0]) / 1024

    def run(self):
        while self.running:
            self.main_mb = max(self.main_mb, self._hwm_mb(self.main_pid))
            for entry in os.listdir("/proc"):
                if not entry.isdigit():
                    continue
                try:
                    with open(f"/proc/{entry}/cmdline", "rb") as handle:
                        cmdline = handle.read()
                except OSError:
                    continue
                if (b"grader.grade.zygote" in cmdline or b"--server" in cmdline) \
                        and _ancestor(int(entry), self.main_pid):
                    self.trusted_mb = max(self.trusted_mb, self._hwm_mb(entry))
            time.sleep(0.2)

    def stop(self):
        self.running = False
        self.join(5)


def _ancestor(pid, ancestor):
    for _ in range(6):
        try:
            with open(f"/proc/{pid}/stat") as handle:
                pid = int(handle.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            return False
        if pid == ancestor:
            return True
    return False


class Listener(threading.Thread):
    """A TCP port on the grading machine that no submission may reach."""

    def __init__(self):
        super().__init__(daemon=True)
        self.server = socket.socket()
        self.server.bind(("127.0.0.1", 0))
        self.server.listen(5)
        self.server.settimeout(0.5)
        self.port = self.server.getsockname()[1]
        self.received = []
        self.running = True

    def run(self):
        while self.running:
            try:
                conn, _ = self.server.accept()
            except OSError:
                continue
            self.received.append(conn.recv(1000))
            conn.close()

    def stop(self):
        self.running = False
        self.join(2)
        self.server.close()


def not_graded_because(entry, choice, key):
    """Why the zoo's batch at level `key` (chosen as `choice`) leaves `entry` out; None when
    it grades it. The full zoo runs at the best level, the level-sensitive entries again at
    each weaker level where their defence still holds."""
    if key not in entry.levels:
        return f"its defence ({entry.defence}) does not hold at level {key}"
    if choice != "auto" and not entry.level_sensitive:
        return (f"graded at the best level only: what it does is read by the same code of "
                f"the trusted side at every level ({entry.defence})")
    return None


class ZooRun:
    def __init__(self, tmp, choice, key):
        self.key = key
        self.choice = choice
        entries = [e for e in ZOO if not_graded_because(e, choice, key) is None]
        self.entries = {e.name: e for e in entries}
        kit = tmp / "kit"
        copy_kit(kit)
        inputs = tmp / "submissions"
        inputs.mkdir()
        listener = Listener()
        listener.start()
        self.token = f"{os.getpid()}{random.randrange(10**6):06d}"
        context = {"port": listener.port, "token": self.token}
        paths, endless, self.names = [], [], {}
        for entry in entries:
            folder = inputs / entry.name
            folder.mkdir()
            path = entry.build(str(folder), context)
            (endless if entry.endless else paths).append(path)
            self.names[entry.name] = os.path.splitext(os.path.basename(path))[0]
        for name, source in (("correct", SOLUTION), ("zero_stub", os.path.join(SUBMISSIONS, "zero_stub.py"))):
            shutil.copy(source, inputs / f"{name}.py")
            paths.append(str(inputs / f"{name}.py"))
        for path in ESCAPES:
            if os.path.exists(path):
                os.remove(path)
        self.autograder_existed = os.path.exists("/autograder")
        before, kit_before = _protected(), _hash_tree(kit)
        workdir = tmp / "grader-tmp"  # the grader's temporary folders: this run's alone
        workdir.mkdir()
        self.peak_main_mb = self.peak_trusted_mb = 0.0
        self.outs, self.done_endless = [tmp / "out"], None
        self.done = self._grade(kit, paths, self.outs[0], choice, LIMITS, workdir)
        if endless:
            self.outs.append(tmp / "out-endless")
            self.done_endless = self._grade(kit, endless, self.outs[1], choice, TIGHT, workdir)
        listener.stop()
        self.received = listener.received
        self.protected_changed = [k for k, v in _protected().items() if before[k] != v]
        self.protected_changed += _sabotaged_checkout()
        self.kit_changed = _hash_tree(kit) != kit_before
        self.strays = _stray_processes(self.token, str(workdir))
        self.escaped = [p for p in ESCAPES if os.path.exists(p)]
        self.escaped += [os.path.join(folder, name) for folder in ("/tmp", "/var/tmp", "/dev/shm")
                         for name in os.listdir(folder) if name.startswith(LITTER_PREFIX)]
        self.escaped += [str(p) for p in (tmp.parent / "attnkit-escaped.py", tmp / "attnkit-escaped.py")
                         if p.exists()]
        self.rows, self.out_of = {}, {}
        for out in self.outs:
            with open(out / "grades.csv", encoding="utf-8-sig") as handle:
                for row in csv.DictReader(handle):
                    self.rows[row["submission"]], self.out_of[row["submission"]] = row, out

    def _grade(self, kit, paths, out, choice, limits, workdir):
        """One `grader grade` of `paths` into `out` at level `choice`, its peak memory kept."""
        proc = subprocess.Popen(
            [sys.executable, "-m", "grader", "grade", *paths, "--out", str(out),
             "--isolation", choice, *limits],
            cwd=kit, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env={**os.environ, "PYTHONPATH": str(kit), "ATTNKIT_SECRET": SECRET,
                 "TMPDIR": str(workdir)})
        peaks = PeakMemory(proc.pid)
        peaks.start()
        try:
            stdout, stderr = proc.communicate(timeout=1800)
        finally:
            peaks.stop()
        self.peak_main_mb = max(self.peak_main_mb, peaks.main_mb)
        self.peak_trusted_mb = max(self.peak_trusted_mb, peaks.trusted_mb)
        return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)

    def row(self, entry_name):
        return self.rows[self.names.get(entry_name, entry_name)]

    def feedback(self, entry_name):
        name = self.names.get(entry_name, entry_name)
        folder = self.rows[name]["folder"]  # the name, unless it had to be made safe
        return (self.out_of[name] / folder / "feedback.txt").read_text(encoding="utf-8")


_RUNS = {}


# one batch per level, one after the other in one pytest-xdist worker (--dist loadfile): a
# level's batch looks for what escaped into the shared /tmp (ESCAPES), which
# another level's attack writes there for a moment before the grader removes it
@pytest.fixture(scope="module", ids=[key for _, key in LEVELS],
                params=[pytest.param(level, marks=pytest.mark.slow) for level in LEVELS])
def zoo(request, tmp_path_factory):
    choice, key = request.param
    if key not in _RUNS:
        _RUNS[key] = ZooRun(tmp_path_factory.mktemp(f"zoo-{key}"), choice, key)
    return _RUNS[key]


def _part(row, part):
    column = next(k for k in row if k.startswith(part + " "))
    return float(row[column]), float(column.split("/")[1].rstrip(")"))


def test_the_batch_ran_and_every_submission_has_a_row(zoo):
    for done in filter(None, (zoo.done, zoo.done_endless)):
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert set(zoo.rows) == set(zoo.names.values()) | {"correct", "zero_stub"}
    assert all(row["status"] != "grader error" for row in zoo.rows.values())


def test_the_correct_solution_keeps_full_marks(zoo):
    row = zoo.rows["correct"]
    assert row["total"] == row["max"] == "100", row


def test_no_process_of_a_submission_is_left(zoo):
    assert zoo.strays == [], "defence: PID namespace, kill by uid, subreaper"


def test_kit_and_torch_files_are_unchanged(zoo):
    assert not zoo.protected_changed and not zoo.kit_changed, \
        f"defence: read-only mounts / throwaway uid; changed: {zoo.protected_changed}"


def test_nothing_was_written_outside_the_sandboxes(zoo):
    assert zoo.escaped == [], "defence: private root, safe unzip, throwaway uid"
    if not zoo.autograder_existed:
        assert not os.path.exists("/autograder"), "a submission created /autograder"


def test_the_grader_environment_does_not_reach_any_worker(zoo):
    leaked = [str(p) for out in zoo.outs for p in out.rglob("*")
              if p.is_file() and SECRET in p.read_text(errors="ignore")]
    assert leaked == [], "defence: the worker's environment is cleared"
    printed = zoo.feedback("read-environment")
    assert "ATTNKIT" not in printed and "isolated: True" in printed


def test_nothing_reached_the_network(zoo):
    if "network" not in zoo.entries:
        pytest.skip(f"no network namespace at level {zoo.key}: the worker shares the host network")
    assert zoo.received == [], "defence: network namespace"


def test_outputs_and_grader_memory_stay_bounded(zoo):
    """One hostile batch may not inflate what the grader writes or holds (figures printed)."""
    sizes = {p.relative_to(out.parent).as_posix(): p.stat().st_size for out in zoo.outs
             for p in out.rglob("*") if p.is_file()}
    largest = max(sizes.items(), key=lambda item: item[1])
    print(f"\n[{zoo.key}] peak memory: main process {zoo.peak_main_mb:.0f} MB, trusted processes "
          f"{zoo.peak_trusted_mb:.0f} MB; largest output {largest[0]} {largest[1] / 1024:.0f} KB")
    assert largest[1] <= 1024 * 1024, f"defence: capped outputs; {largest}"
    assert 0 < zoo.peak_main_mb < 500, "defence: bounded replies and outputs"
    assert zoo.peak_trusted_mb < 1500, "defence: bounded replies (schema, sizes from the reference)"


def test_every_row_says_why_it_lost_points(zoo):
    for name, row in zoo.rows.items():
        if row["total"] != row["max"]:
            assert row["reason"], f"{name} has no reason in grades.csv"


@pytest.mark.parametrize("entry", ZOO, ids=[e.name for e in ZOO])
def test_hostile_entry(zoo, entry):
    reason = not_graded_because(entry, zoo.choice, zoo.key)
    if reason:
        pytest.skip(reason)
    row = zoo.row(entry.name)
    said = f"{entry.name} ({entry.attack}); defence that must hold: {entry.defence}"
    total, top = float(row["total"] or -1), float(row["max"])
    zero = float(zoo.rows["zero_stub"]["total"])
    if entry.expect == "nothing":
        assert total <= zero, f"scored {total} > zero stub {zero}: {said}"
    elif entry.expect == "zero":
        assert total == 0, said
    elif entry.expect == "full":
        assert total == top, f"{total}/{top}: {said}"
    elif entry.expect == "rejected":
        assert row["status"] == "not gradable" and total == 0, said
    elif entry.expect == "parts":
        for part in entry.full_parts:
            score, part_max = _part(row, part)
            assert score == part_max, f"{part} {score}/{part_max}: {said}"
        for part in entry.lost_parts:
            score, part_max = _part(row, part)
            assert score < part_max, f"{part} {score}/{part_max}: {said}"
    if entry.reason:
        text = zoo.feedback(entry.name) + row["reason"]
        assert entry.reason in text, f"feedback lacks {entry.reason!r}: {said}\n{text[:1500]}"


# -- the race behind issue 19's flaky test_hostile[none-kill-trusted-parent], pinned down ----
# Graded at the same time (--jobs 2), kill-fork-server killed the fork server while the
# kill-trusted-parent submission's trusted process, forked from it, was still running: that
# process was reparented out of the tree below `grader grade`, the only place the attack
# looked, so the attack missed it and the submission was graded normally to its earned 0
# (two zoo runs of three here). This batch makes that order certain: the attack first waits
# until its own grader process (found by its gid lease, see hostile_zoo.OWN_GRADER) is out
# of the tree below `grader grade`, says so, then attacks.
WAIT_UNTIL_ORPHANED = """
import time as _time
_mine = _own_grader()
if _mine and not os.path.exists(MARKER):  # the first run only; graded alone, it goes on at once
    _deadline = _time.monotonic() + 40
    while _mine[0] in _pids() and _time.monotonic() < _deadline:
        _time.sleep(0.1)
    with open(MARKER, "w") as _h:
        _h.write(json.dumps({"out_of_the_batch_tree": _mine[0] not in _pids()}))
"""


@pytest.mark.slow
@pytest.mark.skipif(not any(key == "none" for _, key in LEVELS),
                    reason="the attack needs level none without a throwaway uid")
def test_kill_trusted_hits_its_grader_process_after_a_classmate_killed_the_fork_server(tmp_path):
    """kill-trusted-parent, its grader process already reparented out of the batch's tree by a
    classmate's kill of the fork server: still charged ("was stopped"), never graded normally."""
    marker = tmp_path / "orphaned.json"
    late = zero_stub(GRADER_PROCESSES + OWN_GRADER + "import json\nMARKER = " + repr(str(marker))
                     + "\n" + WAIT_UNTIL_ORPHANED + KILL_TRUSTED_NOW)
    sources = {"kill_fork_server": zero_stub(KILL_FORK_SERVER), "kill_trusted_late": late}
    paths = []
    for name, source in sources.items():
        (tmp_path / f"{name}.py").write_text(source, encoding="utf-8")
        paths.append(str(tmp_path / f"{name}.py"))
    workdir = tmp_path / "grader-tmp"
    workdir.mkdir()
    done = run_grader("grade", *paths, "--out", str(tmp_path / "out"), "--isolation", "none",
                      "--call-seconds", "8", "--import-seconds", "60",
                      "--submission-seconds", "150", "--memory-mb", "1024", "--jobs",
                      "2",
                      env={**os.environ, "PYTHONPATH": KIT, "TMPDIR": str(workdir)},
                      timeout=1200)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    # the race happened: its grader process had left the fork server, and the tree below
    # `grader grade` that the attack used to search, before the attack ran
    assert json.loads(marker.read_text())["out_of_the_batch_tree"] is True
    rows = grades(tmp_path / "out")
    assert {name: row["status"] for name, row in rows.items()} == {
        "kill_fork_server": "graded", "kill_trusted_late": "graded"}
    assert rows["kill_fork_server"]["total"] == rows["kill_trusted_late"]["total"] == "0"
    # charged, not graded normally: killed in the shared run, again graded alone, while the
    # control survived (grade/trusted.py run_suite)
    feedback = (tmp_path / "out" / "kill_trusted_late" / "feedback.txt").read_text(encoding="utf-8")
    assert ("was stopped while the submission's code was running, and again when it was graded "
            "alone") in feedback, feedback[:1500]
    results = json.loads((tmp_path / "out" / "kill_trusted_late" / "results.json").read_text())
    charged = results["extra_data"]["isolation"]["charged"]
    assert charged.startswith("the trusted process was stopped (") and \
        "; graded alone: the trusted process was stopped (" in charged, charged
