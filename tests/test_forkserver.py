"""The fork server started before the command line loads (grader/forkserver.py), the slot a
trusted process hands back once its worker has stopped (grader/grade/turns.py Slot), and
the order of what the fork server prepares (grade/zygote.py)."""
import csv
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

from conftest import KIT, SOLUTION, copy_kit, processes_naming, stage_folder
from hostile_zoo import GRADER_PROCESSES
from grader import forkserver
from grader.grade import turns, zygote
from grader.sandbox import isolation, template


def test_only_a_command_that_grades_starts_the_fork_server_early():
    assert forkserver.wanted(["grade", "a.py", "--out", "o"])
    assert forkserver.wanted(["nbgrader", "--course", "c", "attention"])
    assert forkserver.wanted(["validate"])
    for argv in ([], ["gradebook", "--out", "o"], ["export", "canvas"], ["grade", "--help"],
                 ["validate", "-h"], ["--help"], ["similarity", "o"]):
        assert not forkserver.wanted(argv), argv
    assert forkserver.start(["gradebook", "--out", "o"]) is None
    assert forkserver.take(forkserver.environment()) is None  # nothing was started


def test_what_a_spawn_carries_is_named_where_the_sandbox_reads_it():
    assert forkserver.CARRIED == (isolation.CHECKED_ENV,)
    assert forkserver.WORKER_START == template.ENV_MODE


@pytest.mark.slow
def test_the_batch_takes_the_server_started_early_and_lets_a_mismatched_one_go():
    early = forkserver.start(["grade", "a.py"])
    assert early is not None
    _env, _sock, proc, template_sock = early
    server = zygote.Zygote(forkserver.environment(), {isolation.CHECKED_ENV: "none:"})
    try:
        assert server.proc is proc  # taken, not a second server
        assert server.template is not None and server.template.sock is template_sock
        assert server.carried == {isolation.CHECKED_ENV: "none:"}
        # a trusted process forked from it gets the level with its spawn: it prints its env
        read, write = os.pipe()
        pid = server.spawn(["--version"], write, write, KIT)
        os.close(write)
        status = server.wait(pid, 120)
        output = os.read(read, 1 << 16).decode(errors="replace")
        os.close(read)
        assert status is not None, output
        assert "pytest" in output  # `pytest --version`: the child ran pytest.main
    finally:
        server.close()
    # started for another environment: stopped at once (and reaped), having run nothing, not
    # left to finish importing torch
    other = forkserver.start(["grade", "b.py"])
    _env, _sock, proc, _template_sock = other
    assert forkserver.take(dict(forkserver.environment(), OMP_NUM_THREADS="2")) is None
    assert proc.poll() == -signal.SIGKILL


def _pace_and_channel():
    pace = turns.Pace(1)
    assert pace.take_slot() < 1.0
    mine, theirs = turns.channel()
    return pace, mine, theirs


def _next_in_line(pace):
    """An Event set once another take_slot of `pace` returns (the slot came free)."""
    got = threading.Event()
    threading.Thread(target=lambda: (pace.take_slot(), got.set()), daemon=True).start()
    return got


def test_a_slot_comes_back_when_the_process_says_done_once_and_before_the_grader_releases():
    pace, mine, theirs = _pace_and_channel()
    before = []
    slot = turns.Slot(mine, pace, before=lambda: before.append(1))
    waiting = _next_in_line(pace)
    assert not waiting.wait(0.3)  # its code may run: the slot is held
    theirs.send(b"done")
    assert waiting.wait(5)  # given back on the process's word, the grader's release not yet
    slot.release()
    slot.release()
    assert before == [1]
    assert pace.running == 1  # the second take_slot's; given back once only
    theirs.close()


def test_a_slot_comes_back_when_the_process_ends_without_a_word():
    pace, mine, theirs = _pace_and_channel()
    turns.Slot(mine, pace)
    waiting = _next_in_line(pace)
    assert not waiting.wait(0.3)
    theirs.close()  # the process ended (killed, say): its end of the channel closed
    assert waiting.wait(5)


def test_done_in_a_trusted_process_says_it_on_its_turn_channel(monkeypatch):
    mine, theirs = turns.channel()
    monkeypatch.setenv(turns.TURN_ENV, str(theirs.detach()))
    socket.send_fds(mine, [b"go"], [])
    assert turns.wait_for_turn() < 1.0
    turns.done()
    turns.done()  # said once
    assert mine.recv(16) == b"done"
    assert mine.recv(16) == b""  # and the channel closed


@pytest.mark.parametrize("jobs", [1, 2, 3])
def test_the_server_warms_up_only_after_the_first_jobs_plus_one_submissions_are_forked(jobs):
    """A batch stages jobs + 1 submissions at once, in whatever order they are ready; the
    first in line must not wait for the warm-up's imports (0.35 s), so none of them does."""
    asked = []
    server = zygote.Zygote.__new__(zygote.Zygote)
    server.sock = type("Sock", (), {"sendall": lambda self, data: asked.append(data)})()
    server.prepare("hidden", "solution.py", jobs)
    for spawned in range(1, jobs + 3):  # the catalog, then the submissions
        server._ask_later()
        said = [json.loads(a) for a in asked]
        if spawned == 1:
            assert said == [{"prepare": {"hidden_tests": "hidden", "solution": "solution.py"}}]
        elif spawned <= jobs + 1:
            assert len(said) == 1, (spawned, said)
        else:
            assert said[-1] == {"warm": True}, (spawned, said)


# -- one torch import for the fork server and the worker template ---------------------------
BESIDE = r'''
import json, os, sys
from grader import forkserver
from grader.grade import zygote
from grader.sandbox import isolation, template
from grader.sandbox.client import Worker
from grader.sandbox.limits import Limits

path, stage = sys.argv[1], sys.argv[2]
server = zygote.Zygote(forkserver.environment())
served = server.template
os.set_inheritable(served.fileno(), True)
template.adopt(served.fileno())
worker = Worker(path, isolation.choose("auto"), Limits(memory_mb=1500), stage)
worker.start()
reply = worker.request({"op": "load", "names": []}, timeout=120)
worker.stop()
pid = served.proc.pid
with open(f"/proc/{pid}/stat") as fh:
    fields = fh.read().rsplit(")", 1)[1].split()
with open(f"/proc/{pid}/environ", "rb") as fh:
    environ = dict(e.decode().split("=", 1) for e in fh.read().split(b"\0") if e)
served.close()
server.close()
print("FACTS " + json.dumps({
    "ok": reply.get("ok"), "started": worker.started, "printed": worker.output()[0],
    "server": server.proc.pid, "template": pid, "template_parent": int(fields[1]),
    "template_session": int(fields[3]), "template_env": environ,
    "template_status": served.proc.returncode, "template_cpu": served.proc.cpu}))
'''
KIT_MODULES = r'''
import os, sys
with open("/proc/self/cmdline", "rb") as _fh:
    print("CMDLINE", _fh.read().replace(b"\0", b" ").decode(errors="replace"))
print("ENVIRON", sorted(os.environ.items()))
print("MODULES", sorted(n for n in sys.modules
                        if n.split(".")[0] in ("grader", "pytest", "_pytest", "pluggy", "runtime",
                                               "zygote", "conftest", "attention_suite")))
'''


@pytest.mark.slow
def test_the_worker_template_is_forked_beside_the_fork_server_and_holds_nothing_of_the_kit(
        tmp_path):
    """One process imports torch, in the template's clean environment, then forks: the
    child is the worker template (its own session, its environment untouched), the parent
    the fork server, which reaps it and says how it ended. A worker forked from it finds no
    module of the kit or of pytest in sys.modules (runpy it finds: torch imports it)."""
    folder = tmp_path / "sub"
    folder.mkdir()
    (folder / "attention.py").write_text(KIT_MODULES)
    stage = stage_folder()
    os.chmod(stage, 0o711)
    here = tmp_path / "instructor-course-folder"  # the grader's folder: none of the worker's business
    here.mkdir()
    done = subprocess.run([sys.executable, "-c", BESIDE, str(folder / "attention.py"), stage],
                          cwd=here, env=dict(os.environ, PYTHONPATH=KIT), capture_output=True,
                          text=True, timeout=300)
    line = next((l for l in done.stdout.splitlines() if l.startswith("FACTS ")), None)
    assert line, (done.stdout[-2000:], done.stderr[-3000:])
    facts = json.loads(line[6:])
    assert facts["ok"] is True and facts["started"] == "forked", facts
    assert "MODULES []" in facts["printed"], facts["printed"]
    assert "CMDLINE" in facts["printed"] and "instructor-course-folder" not in facts["printed"]
    assert facts["template_parent"] == facts["server"] != facts["template"]
    assert facts["template_session"] == facts["template"]  # a session of its own
    assert facts["template_env"] == template.CLEAN_ENV
    assert facts["template_status"] == 0 and facts["template_cpu"] > 0


# the hostile zoo's own readers of /proc (a command line, a parent pid), run here
_PROCESSES = {}
exec(GRADER_PROCESSES, _PROCESSES)  # noqa: S102 - the test suite's own helper source
_cmdline, _parent = _PROCESSES["_cmdline"], _PROCESSES["_parent"]


@pytest.mark.slow
def _grade_two(tmp_path, name, kill_server):
    """`grader grade` of the solution and examples/chen.py (-inf masking: a diagnosis, a
    heatmap, carried forward) at --jobs 1 into tmp_path/name; kill_server: its `--server`
    process killed as soon as it starts. (whether one was killed, the output, the gradebook)"""
    subs = tmp_path / f"{name}-subs"
    subs.mkdir()
    shutil.copy(SOLUTION, subs / "a.py")
    shutil.copy(os.path.join(KIT, "examples", "chen.py"), subs / "b.py")
    out = tmp_path / name
    proc = subprocess.Popen([sys.executable, "-m", "grader", "grade", str(subs / "a.py"),
                             str(subs / "b.py"), "--out", str(out), "--jobs", "1"],
                            cwd=KIT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    killed, deadline = None, time.monotonic() + 120
    while kill_server and killed is None and proc.poll() is None and time.monotonic() < deadline:
        for entry in os.listdir("/proc"):
            if entry.isdigit() and _parent(int(entry)) == proc.pid \
                    and b"--server" in _cmdline(int(entry)):
                os.kill(int(entry), signal.SIGKILL)
                killed = int(entry)
                break
        time.sleep(0.005)
    try:
        output, _ = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, output[-3000:]
    return killed is not None, output, out


def _what_a_student_reads(out, name):
    """results.json without what differs from run to run (its times, how many reference
    results were computed or reused), and feedback.txt."""
    with open(out / name / "results.json", encoding="utf-8") as handle:
        results = json.load(handle)
    results.pop("execution_time")
    results["extra_data"].pop("case_results")
    return results, (out / name / "feedback.txt").read_text(encoding="utf-8")


def test_a_batch_whose_server_dies_before_saying_its_template_still_grades_and_ends(tmp_path):
    """The one process that imports torch for both is killed as soon as it starts, before it
    can fork the template or say its pid: the batch starts a server and a template of its
    own (`python -m grader.grade.zygote`, template.py alone), grades both submissions, and
    ends (it once waited for ever on a template whose pid it never learnt). The second path
    is as good as the first: every result and feedback word the same as a batch's that
    started the usual way."""
    killed, output, fallback = _grade_two(tmp_path, "fallback", kill_server=True)
    assert killed, output[-3000:]
    _, _, usual = _grade_two(tmp_path, "usual", kill_server=False)
    for out in (fallback, usual):
        with open(out / "grades.csv", encoding="utf-8-sig") as handle:
            rows = {row["submission"]: row for row in csv.DictReader(handle)}
        assert {n: row["status"] for n, row in rows.items()} == {"a": "graded", "b": "graded"}
        assert rows["a"]["total"] == "100" and float(rows["b"]["total"]) < 100
    for name in ("a", "b"):
        assert _what_a_student_reads(fallback, name) == _what_a_student_reads(usual, name), name


def test_a_template_whose_server_is_gone_is_known_ended_without_waiting_for_its_word():
    """ServedTemplate with its (first) server gone: a pid never said counts as ended at once;
    a said pid that has exited too, counted as killed with its CPU unknown, and no wait
    (it once took 7 s, the end of every batch whose server a submission had killed)."""
    server = zygote.Zygote.__new__(zygote.Zygote)
    server.changed = threading.Condition()
    server.template_said, server.generation, server.alive = {}, 1, False
    never_said = zygote.ServedTemplate(server)
    started = time.monotonic()
    assert never_said.poll() == -signal.SIGKILL and never_said.wait_cpu(5) is None
    exited = subprocess.Popen([sys.executable, "-c", "pass"])
    exited.wait()
    server.template_said["template"] = exited.pid  # reaped by us: gone
    gone = zygote.ServedTemplate(server)
    gone.said_pid()
    assert gone.wait_cpu(None) is None and gone.returncode == -signal.SIGKILL
    assert time.monotonic() - started < 1.5
    # a live one: still running after its time, and killed through its pidfd
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    server.template_said = {"template": live.pid}
    running = zygote.ServedTemplate(server)
    running.said_pid()
    assert running.poll() is None and running.wait_cpu(0.2) is None
    running.kill()
    assert live.wait(10) == -signal.SIGKILL


@pytest.mark.parametrize("argv", [["grade", "{tmp}/missing.py", "--out", "{tmp}/out"],
                                  ["grade", "{tmp}/missing.py", "--out", "{tmp}/out", "--jobs", "0"]],
                         ids=["refused", "usage-error"])
def test_a_command_that_grades_nothing_leaves_no_server_importing_torch(tmp_path, argv):
    """A grading command stopped before its batch (a file that is not there, a usage error)
    stops the fork server it started at once: none is left to finish importing torch, about
    1.5 s of CPU, for nothing (26 such commands in this suite did)."""
    kit = tmp_path / "kit"  # a copy: its path names this test's processes alone
    copy_kit(kit)
    done = subprocess.run([sys.executable, "-m", "grader",
                           *[a.format(tmp=tmp_path) for a in argv]],
                          cwd=kit, env={**os.environ, "PYTHONPATH": str(kit)},
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    assert ("--jobs" if "--jobs" in argv else "missing.py") in done.stderr, done.stderr
    assert processes_naming(str(kit)) == []
