"""The worker template (grader/sandbox/template.py): workers forked from a Python that
imported torch once, each in a sandbox of its own, nothing carried from one to the next."""
import csv
import json
import os
import shutil
import signal
import subprocess
import sys

import pytest

from conftest import KIT, SOLUTION, copy_kit, isolation_levels, stage_folder
from grader.sandbox import client, template
from grader.sandbox.client import Worker
from grader.sandbox.limits import Limits
from grading import grades, run_grader
from hostile_zoo import (KILL_FORK_SERVER, KILL_TEMPLATE, KILL_TRUSTED, LITTER, LITTER_PREFIX,
                         zero_stub)

LEVELS = isolation_levels()

# what one submission leaves in the worker's Python, where the next would find it if the
# two shared a process or the template had run it
MARK = r'''
import os, sys, torch
seen = {"marked_before": hasattr(torch, "_attnkit_mark"), "modules": "attention_other" in sys.modules,
        "pid": os.getpid(), "uid": os.getuid(), "cwd": os.getcwd(), "files": sorted(os.listdir("."))}
torch._attnkit_mark = True
sys.modules["attention_other"] = sys.modules[__name__]
print("SEEN", seen)
'''


def _worker(tmp_path, level, name):
    folder = tmp_path / name
    folder.mkdir()
    (folder / "attention.py").write_text(MARK)
    stage = stage_folder()
    os.chmod(stage, 0o711)
    return Worker(str(folder / "attention.py"), level, Limits(memory_mb=1500), stage)


def _load(worker):
    worker.start()
    reply = worker.request({"op": "load", "names": []}, timeout=60)
    worker.stop()
    out, err = worker.output()
    assert reply["ok"], (reply, err)
    return eval(next(l for l in out.splitlines() if l.startswith("SEEN"))[5:])


@pytest.mark.parametrize("level", LEVELS, ids=[f"{lv.level}{'-uid' if lv.uid else ''}" for lv in LEVELS])
def test_each_worker_is_forked_into_its_own_sandbox_and_inherits_nothing(tmp_path, level):
    first, second = _worker(tmp_path, level, "one"), _worker(tmp_path, level, "two")
    seen = [_load(first), _load(second)]
    assert first.started == second.started == "forked"
    assert first.limited_by()["worker_start"].startswith("forked from a template")
    for facts in seen:
        assert facts["marked_before"] is False and facts["modules"] is False
        assert facts["files"] == ["attention.py"]
    if level.level != "none":
        assert all(f["cwd"] == "/submission" for f in seen)
    if level.uid is not None:  # a throwaway uid each, leased afresh
        assert seen[0]["uid"] != seen[1]["uid"] and seen[0]["uid"] != 0


def test_a_dead_template_is_started_again_for_the_next_worker(tmp_path):
    level = LEVELS[0]
    used = template.current()
    assert used is not None and used.proc is not None  # this process's own template
    os.kill(used.proc.pid, signal.SIGKILL)
    used.proc.wait()
    try:
        worker = _worker(tmp_path, level, "after")  # forks from a new template, not fresh
        facts = _load(worker)
        assert worker.started == "forked" and facts["marked_before"] is False
        assert template.current() is not used and template.current().proc.poll() is None
        again = _worker(tmp_path, level, "again")
        _load(again)
        assert again.started == "forked"
    finally:
        with template._LOCAL_LOCK:
            template._LOCAL.update(template=None, failed=False)


def test_fresh_mode_never_forks(tmp_path, monkeypatch):
    monkeypatch.setenv(template.ENV_MODE, "fresh")
    worker = _worker(tmp_path, LEVELS[0], "fresh")
    _load(worker)
    assert worker.started == "fresh"
    assert worker.limited_by()["worker_start"] == "fresh process"


# -- one start path, or two equal ones --------------------------------------------------
# what a worker holds, read from inside it: the capability sets, no_new_privs, its ids, its
# session and its resource limits
HOLDS = r'''
import os, resource
status = {}
for line in open("/proc/self/status"):
    key, _, value = line.partition(":")
    if key in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs", "Uid", "Gid", "Groups"):
        status[key] = " ".join(value.split())
limits = {name: resource.getrlimit(getattr(resource, "RLIMIT_" + name))
          for name in ("CPU", "AS", "FSIZE", "NPROC", "NOFILE")}
print("HOLDS", {"status": status, "limits": limits, "session_leader": os.getsid(0) == os.getpid()})
'''
NO_CAPS = "0000000000000000"


def _holds(tmp_path, level, name, fresh, monkeypatch):
    folder = tmp_path / name
    folder.mkdir()
    (folder / "attention.py").write_text(HOLDS)
    stage = stage_folder()
    os.chmod(stage, 0o711)
    if fresh:
        monkeypatch.setenv(template.ENV_MODE, "fresh")
    else:
        monkeypatch.delenv(template.ENV_MODE, raising=False)
    worker = Worker(str(folder / "attention.py"), level, Limits(memory_mb=1500), stage)
    ids = worker.isolation.ids()
    worker.start()
    reply = worker.request({"op": "load", "names": []}, timeout=60)
    worker.stop()
    out, err = worker.output()
    assert reply["ok"], (reply, err)
    holds = eval(next(l for l in out.splitlines() if l.startswith("HOLDS"))[6:])
    return worker, ids, holds


def _symbolic(holds, ids):
    """The ids a worker was leased, named: two workers never share a throwaway id."""
    status = dict(holds["status"])
    for key, leased in (("Uid", ids["uid"]), ("Gid", ids["gid"])):
        if leased is not None:
            status[key] = status[key].replace(str(leased), key.lower())
    return status


def _with_and_without_uid():
    """Every level, with a throwaway uid and without one, as far as this machine runs each."""
    from grader.sandbox import isolation
    found = list(LEVELS)
    for level in LEVELS:
        if level.uid is not None and isolation.works(level.level, False):
            found.append(isolation.Isolation(level.level))
        if level.uid is None and os.geteuid() == 0 and isolation.works(level.level, True):
            found.append(isolation.Isolation(level.level, isolation.throwaway_uid()))
    return found


BOTH = _with_and_without_uid()


@pytest.mark.parametrize("level", BOTH, ids=[f"{lv.level}{'-uid' if lv.uid else ''}" for lv in BOTH])
def test_a_fresh_worker_drops_exactly_what_a_forked_one_drops(tmp_path, level, monkeypatch):
    forked, forked_ids, forked_holds = _holds(tmp_path, level, "forked", False, monkeypatch)
    fresh, fresh_ids, fresh_holds = _holds(tmp_path, level, "fresh", True, monkeypatch)
    assert (forked.started, fresh.started) == ("forked", "fresh")
    assert _symbolic(forked_holds, forked_ids) == _symbolic(fresh_holds, fresh_ids)
    for worker, ids, holds in ((forked, forked_ids, forked_holds), (fresh, fresh_ids, fresh_holds)):
        status = holds["status"]
        for key in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
            assert status[key] == NO_CAPS, (worker.started, key, status)
        assert status["NoNewPrivs"] == "1" and status["Groups"] == ""
        assert holds["session_leader"] is True
        # every limit as the trusted side asked, soft and hard
        asked = worker.rlimits
        assert holds["limits"]["CPU"] == (120, 120)
        assert holds["limits"]["FSIZE"] == (16 * 2**20, 16 * 2**20)
        assert holds["limits"]["NOFILE"] == (256, 256)
        assert holds["limits"]["AS"] == ((1500 + 2048) * 2**20,) * 2
        assert holds["limits"]["NPROC"] == (asked["processes"],) * 2
        if ids["uid"] is not None:
            assert status["Uid"] == " ".join([str(ids["uid"])] * 4)
        if os.geteuid() == 0 and level.level == "none" and ids["uid"] is None:
            # the grader's uid, but a throwaway gid that marks every file the worker makes
            assert status["Uid"] == "0 0 0 0" and ids["gid"] is not None
            assert status["Gid"] == " ".join([str(ids["gid"])] * 4)


def test_a_worker_that_still_holds_a_capability_refuses_to_start(tmp_path):
    """The check both start paths end with reads /proc/self/status back: run in a process
    that kept its capabilities (as the grader's own root process does), it refuses."""
    code = ("import sys; sys.path.insert(0, %r)\n"
            "from runtime import privileges\n"
            "try:\n    privileges.check()\nexcept privileges.NotDropped as e:\n    print('REFUSED', e)\n"
            "privileges.drop()\nprivileges.check()\nprint('DROPPED')\n") % os.path.dirname(client.RUNTIME_DIR)
    done = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True,
                          timeout=60, start_new_session=True)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    if os.geteuid() == 0:
        assert lines[0].startswith("REFUSED CapPrm is") or lines[0].startswith("REFUSED CapInh"), lines
    assert lines[-1] == "DROPPED"


# -- the grader's own processes, stopped by a submission at level `none` --------------------

NONE_WITHOUT_UID = any(lv.level == "none" and lv.uid is None for lv in LEVELS) and os.geteuid() == 0
needs_none = pytest.mark.skipif(not NONE_WITHOUT_UID, reason="level none without a throwaway uid, "
                                "as root: where a worker may signal the grader's processes")
# a correct submission that writes down what its worker holds
HOLDS_FILE = '''
import json as _json
_held = {}
for _line in open("/proc/self/status"):
    _key, _, _value = _line.partition(":")
    _held[_key] = " ".join(_value.split())
with open(PATH, "w") as _handle:
    _json.dump(_held, _handle)
'''


def _cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read().decode(errors="replace")
    except OSError:
        return ""


def _grade(tmp_path, submissions, *extra):
    paths = []
    for name, text in submissions:
        path = tmp_path / f"{name}.py"
        path.write_text(text)
        paths.append(str(path))
    done = run_grader("grade", *paths, "--out", str(tmp_path / "out"), "--isolation", "none",
                      "--jobs", "1", "--memory-mb", "1500", *extra, timeout=900)
    rows = grades(tmp_path / "out")
    isolation = {name: json.loads((tmp_path / "out" / name / "results.json").read_text())
                 ["extra_data"]["isolation"] for name in rows}
    return done, rows, isolation


def _writes_holds(tmp_path, name):
    return SOLUTION_TEXT + HOLDS_FILE.replace("PATH", repr(str(tmp_path / f"{name}.held")))


SOLUTION_TEXT = open(SOLUTION, encoding="utf-8").read()


@needs_none
def test_a_killed_template_is_started_again_and_the_next_worker_drops_the_same(tmp_path):
    done, rows, isolation = _grade(tmp_path, [("a_kills", zero_stub(KILL_TEMPLATE)),
                                              ("b_next", _writes_holds(tmp_path, "b_next")),
                                              ("c_after", _writes_holds(tmp_path, "c_after"))])
    assert done.returncode == 0, done.stderr[-3000:]
    assert rows["a_kills"]["status"] == "graded" and rows["a_kills"]["total"] == "0"
    assert "worker template stopped (signal 9)" in isolation["a_kills"]["worker_template"]
    for name in ("b_next", "c_after"):
        assert rows[name]["total"] == "100", rows[name]
        start = isolation[name]["worker_start"]
        assert start.startswith("forked from a template"), start  # not the fresh path
        assert "started again 1 time(s)" in start and "signal 9" in start
        held = json.loads((tmp_path / f"{name}.held").read_text())
        assert held["CapEff"] == held["CapPrm"] == held["CapBnd"] == held["CapAmb"] == NO_CAPS
        assert held["NoNewPrivs"] == "1"


@pytest.mark.slow
@needs_none
def test_killing_the_fork_server_costs_only_what_the_submission_earned(tmp_path):
    """A correct submission that kills the fork server keeps its 100: its trusted process
    outlives the server and reports; the server is started again for the next one."""
    done, rows, isolation = _grade(tmp_path, [("a_kills", SOLUTION_TEXT + KILL_FORK_SERVER),
                                              ("b_stub", zero_stub(KILL_FORK_SERVER)),
                                              ("c_next", SOLUTION_TEXT)])
    assert done.returncode == 0, done.stderr[-3000:]
    assert rows["a_kills"]["status"] == "graded" and rows["a_kills"]["total"] == "100"
    assert rows["b_stub"]["status"] == "graded" and rows["b_stub"]["total"] == "0"
    assert "fork server stopped" in isolation["a_kills"]["fork_server"]
    assert rows["c_next"]["total"] == "100" and "fork_server" not in isolation["c_next"]


@pytest.mark.slow
@needs_none
def test_a_submission_that_kills_its_trusted_process_is_charged(tmp_path):
    """... and what it left (files in /tmp and /var/tmp, a daemon) is removed all the same,
    though its trusted process never stopped its worker."""
    token = f"{os.getpid()}{int.from_bytes(os.urandom(2), 'big')}"
    daemon = ("import subprocess as _sp\n"
              f"_sp.Popen(['sleep', '1234.{token}'], start_new_session=True)\n")
    done, rows, isolation = _grade(tmp_path, [("a_kills", SOLUTION_TEXT + LITTER + daemon
                                               + KILL_TRUSTED),
                                              ("b_next", SOLUTION_TEXT)])
    left = [name for folder in ("/tmp", "/var/tmp") for name in os.listdir(folder)
            if name.startswith(LITTER_PREFIX)]
    assert left == []
    assert not [p for p in os.listdir("/proc") if p.isdigit() and _cmdline(p).find(f"1234.{token}") >= 0]
    assert done.returncode == 0, done.stderr[-3000:]
    row = rows["a_kills"]
    assert row["status"] == "graded" and row["total"] == "0", row  # not "grader error"
    assert "was stopped while the submission's code was running" in row["reason"]
    charged = isolation["a_kills"]["charged"]
    assert "while the submission's worker ran as the grader's uid; graded alone:" in charged
    assert rows["b_next"]["total"] == "100"


@pytest.mark.slow
@needs_none
def test_a_trusted_process_that_dies_for_every_submission_is_a_grader_error(tmp_path):
    """The grader's own bug (here: a hidden suite that kills its process at its second test)
    kills the control submission too: a grader error, never a zero."""
    kit = tmp_path / "kit"
    copy_kit(kit)
    with open(kit / "tests_hidden" / "attention" / "conftest.py", "a", encoding="utf-8") as handle:
        handle.write("\n\n_RAN = []\n\ndef pytest_runtest_call(item):\n    _RAN.append(item)\n"
                     "    if len(_RAN) == 2:\n        import os, signal\n"
                     "        os.kill(os.getpid(), signal.SIGKILL)\n")
    (tmp_path / "solution.py").write_text(SOLUTION_TEXT)
    done = run_grader("grade", str(tmp_path / "solution.py"), "--out", str(tmp_path / "out"),
                      "--isolation", "none", kit=kit, timeout=900)
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-2000:]
    with open(tmp_path / "out" / "grades.csv", encoding="utf-8-sig") as handle:
        row = next(csv.DictReader(handle))
    assert row["status"] == "grader error" and row["total"] == ""
    log = (tmp_path / "out" / "solution" / "grader-errors.log").read_text()
    assert "for a submission that defines nothing" in log and "a failure of the grader" in log


@pytest.mark.parametrize("level", LEVELS, ids=[f"{lv.level}{'-uid' if lv.uid else ''}" for lv in LEVELS])
def test_a_sandbox_begun_before_pytest_is_the_one_its_submission_finishes(tmp_path, level):
    """The fork server begins a submission's first sandbox before pytest starts
    (implementations.start_early, from the trusted process's own arguments: grade/serving.py): the
    session's Submission of that file, folder and settings takes it and finishes it (one
    worker, its placeholder already there), and grades with it; one begun with other
    settings is stopped and never used; one no session takes is stopped by discard_early."""
    from grader import assignment
    from grader.grade import serving
    from grader.harness import implementations
    from grader.harness.implementations import Submission
    declared = assignment.load("attention")
    folder = tmp_path / "work"
    folder.mkdir()
    shutil.copy(os.path.join(KIT, "solutions", "attention.py"), folder / "attention.py")
    stage = stage_folder()
    limits = Limits(memory_mb=1500)
    args = [declared.folder, "--isolation", level.level, "--limits",
            __import__("json").dumps(limits.__dict__), "--no-gpu", "--submission",
            str(folder / "attention.py"), "--stage-dir", stage]
    serving.begin_sandbox(args)
    begun = implementations._EARLY.get((str(folder / "attention.py"), stage))
    assert begun is not None and begun[0].proc is None  # begun, not finished
    if level.level != "none":
        assert begun[0]._holder is not None and begun[0]._holder.poll() is None
    student = Submission(str(folder / "attention.py"), level, limits, stage, assignment=declared)
    try:
        student.start()
        assert student.worker is begun[0] and student.workers_started == 1
        case = next(c for c in implementations.assignments.load("attention").cases().CASES
                    if c.target == "masked_softmax")
        assert student.run(case.probe(), case.call_text()).tensor("output") is not None
    finally:
        student.stop()
    assert not implementations._EARLY
    # begun with other limits: stopped, and the session starts its own
    serving.begin_sandbox(args)
    other = implementations._EARLY[(str(folder / "attention.py"), stage)][0]
    student = Submission(str(folder / "attention.py"), level, Limits(memory_mb=1400), stage,
                         assignment=declared)
    try:
        student.start()
        assert student.worker is not other and other.view is not None
        assert not os.path.exists(other.view.home)  # stopped: its folder gone
        assert other._holder is None
    finally:
        student.stop()
    serving.begin_sandbox(args)  # and one no session takes
    left = implementations._EARLY[(str(folder / "attention.py"), stage)][0]
    implementations.discard_early()
    assert not implementations._EARLY and left._holder is None
    assert not os.path.exists(left.view.home)
