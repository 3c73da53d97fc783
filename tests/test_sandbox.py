"""The worker's view of the world at each isolation level this machine offers, read by a
spy submission that reports what it can see and do."""
import json
import os
import random
import resource
import shutil
import socket
import subprocess
import time

import pytest

from conftest import KIT, isolation_levels, stage_folder
from grader.sandbox import isolation
from grader.sandbox.client import Worker, WorkerFailure
from grader.sandbox.limits import Limits

SPY = r'''
import json, os, resource, socket, sys
facts = {"uid": os.getuid(), "cwd": os.getcwd(), "files": sorted(os.listdir(".")),
         "root": sorted(os.listdir("/")), "env": sorted(os.environ), "isolated": sys.flags.isolated,
         "kit_visible": os.path.exists(KIT + "/solutions/attention.py"),
         "limits": {name: resource.getrlimit(getattr(resource, name))[1]
                    for name in ("RLIMIT_CPU", "RLIMIT_AS", "RLIMIT_FSIZE", "RLIMIT_NPROC", "RLIMIT_NOFILE")}}
try:
    open("/usr/attnkit-probe", "w").close()
    facts["usr_writable"] = True
except OSError:
    facts["usr_writable"] = False
try:
    socket.create_connection(("127.0.0.1", PORT), timeout=2).close()
    facts["network"] = True
except OSError:
    facts["network"] = False
import ctypes
_libc = ctypes.CDLL(None, use_errno=True)
facts["shm_id"] = _libc.shmget(SHMKEY, 1 << 20, 0o1600)  # IPC_CREAT | 0600: a System V segment
print("SPY" + json.dumps(facts))
'''


LEVELS = isolation_levels()


@pytest.fixture(params=LEVELS, ids=[f"{lv.level}{'-uid' if lv.uid else ''}" for lv in LEVELS])
def facts(request, tmp_path):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    folder = tmp_path / "submission"
    folder.mkdir()
    key = random.randrange(1 << 20, 1 << 30)
    (folder / "attention.py").write_text(SPY.replace("KIT", repr(KIT)).replace(
        "PORT", str(server.getsockname()[1])).replace("SHMKEY", str(key)))
    stage = stage_folder()
    os.chmod(stage, 0o711)
    limits = Limits(processes=16, file_size_mb=8, cpu_seconds=50, memory_mb=1500)
    worker = Worker(str(folder / "attention.py"), request.param, limits, stage)
    worker.start()
    reply = worker.request({"op": "load", "names": []}, timeout=60)
    host_shm_running = _host_shm_keys()
    worker.stop()
    host_shm_after = _host_shm_keys()
    server.close()
    out, err = worker.output()
    assert reply["ok"], (reply, err)
    line = next(l for l in out.splitlines() if l.startswith("SPY"))
    seen = json.loads(line[3:])
    seen["host_shm_running"] = key in host_shm_running
    seen["host_shm_after"] = key in host_shm_after
    return request.param, limits, seen


def _host_shm_keys():
    """Keys of the System V shared memory segments the host's IPC namespace holds."""
    with open("/proc/sysvipc/shm") as handle:
        next(handle)
        return {int(line.split()[0]) for line in handle if line.split()}


def test_worker_runs_isolated_python_in_a_private_folder(facts):
    level, _, seen = facts
    assert seen["isolated"] == 1
    assert seen["files"] == ["attention.py"]
    assert set(seen["env"]) <= {"PATH", "HOME", "LANG", "OMP_NUM_THREADS", "LC_CTYPE", "PWD", "OLDPWD",
                                "TMPDIR", "TMP", "TEMP"}
    if level.uid is not None:  # each worker leases a throwaway uid of its own
        assert isolation.FIRST_UID <= seen["uid"] < isolation.FIRST_UID + isolation.UID_SPAN


def test_system_v_shared_memory_stays_in_the_sandbox(facts):
    """Each namespace level has an IPC namespace of its own: a segment the submission makes
    is not in the host's; at level `none` it is, and is removed when the worker stops."""
    level, _, seen = facts
    assert seen["shm_id"] >= 0, "the spy could not create a segment"
    if level.level == "none":
        assert seen["host_shm_running"] is True
    else:
        assert seen["host_shm_running"] is False, "defence: IPC namespace"
    assert seen["host_shm_after"] is False, "the segment outlived the worker"


def test_results_say_what_limited_memory_and_processes():
    for level in LEVELS:
        said = level.describe()
        assert said["memory_limit"] in ("cgroup v1", "cgroup v2", "watchdog (PSS)")
        assert said["pids_limit"] in ("cgroup v1", "cgroup v2", "RLIMIT_NPROC")
        assert (said["memory_limit"] != "watchdog (PSS)") == (
            level.uses_cgroups() and isolation.cgroups.support()["memory"] is not None)


def test_worker_limits_are_applied_and_cannot_be_raised(facts):
    _, limits, seen = facts
    assert seen["limits"]["RLIMIT_CPU"] == limits.cpu_seconds
    assert seen["limits"]["RLIMIT_FSIZE"] == limits.file_size_mb * 2**20
    assert seen["limits"]["RLIMIT_AS"] == (limits.memory_mb + 2048) * 2**20
    assert seen["limits"]["RLIMIT_NOFILE"] == limits.open_files
    assert seen["limits"]["RLIMIT_NPROC"] != resource.RLIM_INFINITY


def test_namespaces_hide_the_kit_and_the_network(facts):
    level, _, seen = facts
    if level.level == "none":
        assert seen["network"] is True  # documented: level none shares the host network
        pytest.skip("level none has no namespaces")
    assert seen["kit_visible"] is False
    assert seen["network"] is False
    assert seen["usr_writable"] is False
    assert "submission" in seen["root"] and "proc" in seen["root"]


def test_strict_refuses_to_grade_without_namespaces(monkeypatch):
    monkeypatch.setattr(isolation, "works", lambda level, as_uid: level == "none")
    with pytest.raises(isolation.IsolationUnavailable, match="strict needs Linux namespaces"):
        isolation.choose("strict")
    assert isolation.choose("auto").level == "none"
    with pytest.raises(isolation.IsolationUnavailable):
        isolation.choose("bwrap")


def test_namespace_levels_work_wherever_the_machine_allows_namespaces():
    """Checked with the bare tools, independently of the grader's own probe: if bubblewrap or
    unshare can make namespaces here, the grader must be able to use them (wherever the kit
    and its virtual environment live, /tmp included)."""
    bare_bwrap = shutil.which("bwrap") and subprocess.run(
        ["bwrap", "--ro-bind", "/", "/", "--unshare-all", "true"], capture_output=True).returncode == 0
    bare_unshare = shutil.which("unshare") and subprocess.run(
        ["unshare", "--user", "--map-root-user", "--mount", "--net", "--pid", "--fork", "true"],
        capture_output=True).returncode == 0
    if not (bare_bwrap or bare_unshare):
        pytest.skip("this machine allows no namespaces")
    if bare_bwrap:
        assert isolation.works("bwrap", False)
    if bare_unshare:
        assert isolation.works("unshare", False)


def test_auto_prefers_namespaces_when_this_machine_has_them():
    levels = {lv.level for lv in LEVELS}
    best = isolation.choose("auto")
    if levels & {"bwrap", "unshare"}:
        assert best.level in ("bwrap", "unshare")
        assert isolation.choose("strict").level == best.level
    assert best.describe()["level"] == best.level


def test_a_hand_run_copies_only_regular_files_within_a_budget(tmp_path):
    """`pytest tests_hidden --submission FILE` may point into any folder (a download folder,
    /tmp): the worker's private copy never follows a link, never reads a FIFO or a device,
    skips a huge sparse file, and never copies its own folder into itself."""
    from grader.sandbox.stage import copy_submission_folder
    src = tmp_path / "downloads"
    (src / "pkg").mkdir(parents=True)
    (src / "attention.py").write_text("x = 1\n")
    (src / "helpers.py").write_text("y = 2\n")
    (src / "pkg" / "more.py").write_text("z = 3\n")
    os.symlink("/dev/zero", src / "zeros.py")
    os.symlink("/etc", src / "etc")
    os.mkfifo(src / "pipe.py")
    with open(src / "sparse.bin", "wb") as handle:
        handle.truncate(50 * 2**30)  # 50 GB that take no space until someone copies them
    work = src / "stage" / "w1" / "submission"  # the stage folder inside the copied folder
    copy_submission_folder(str(src / "attention.py"), str(work), max_bytes=2**20)
    copied = sorted(str(p.relative_to(work)) for p in work.rglob("*"))
    assert copied == ["attention.py", "helpers.py", "pkg", "pkg/more.py"], copied


# -- what a worker at level `none` leaves in the machine's shared folders -------------------
LITTER = r'''
import os, tempfile
tag = "attnkit-litter-%d" % os.getpid()
made = []
for folder in ("/tmp", "/var/tmp", "/dev/shm"):
    os.makedirs(f"{folder}/{tag}-dir/deeper", exist_ok=True)
    for i in range(COUNT):
        with open(f"{folder}/{tag}-{i}", "wb") as f:
            f.write(b"x" * 4096)
    with open(f"{folder}/{tag}-dir/deeper/file", "wb") as f:
        f.write(b"y" * 100000)
    os.symlink("/etc/passwd", f"{folder}/{tag}-link")
    made += [f"{folder}/{tag}-0", f"{folder}/{tag}-dir", f"{folder}/{tag}-link"]
with tempfile.NamedTemporaryFile(delete=False) as f:  # TMPDIR: the worker's private one
    f.write(b"z")
made.append(f.name)
print("MADE", made)
'''


def _litter(tmp_path, count, limits=Limits(memory_mb=1500)):
    level = isolation.choose("none")
    folder = tmp_path / "litter"
    folder.mkdir()
    (folder / "attention.py").write_text(LITTER.replace("COUNT", str(count)))
    stage = stage_folder()
    os.chmod(stage, 0o711)
    worker = Worker(str(folder / "attention.py"), level, limits, stage)
    worker.start()
    try:
        reply = worker.request({"op": "load", "names": []}, timeout=60)
    except Exception as failure:  # noqa: BLE001 (WorkerFailure: the reason is checked)
        reply = failure
    worker.stop()
    return worker, reply


@pytest.mark.skipif(not any(lv.level == "none" for lv in LEVELS) or os.geteuid() != 0,
                    reason="level none as root: the worker's files carry a throwaway gid")
def test_nothing_a_worker_at_level_none_writes_in_shared_folders_is_left(tmp_path):
    worker, reply = _litter(tmp_path, 20)
    assert reply["ok"], reply
    out, _ = worker.output()
    made = eval(next(l for l in out.splitlines() if l.startswith("MADE"))[5:])
    assert len(made) == 10
    assert made[-1].startswith(worker.view.tmp_dir + "/"), "tempfile uses the private TMPDIR"
    left = [path for path in made if os.path.lexists(path)]
    assert left == []
    # 3 folders x (20 files, a folder with a folder and a file, a link), counted before removal
    assert worker.removed[0] == 3 * (20 + 3 + 1)
    assert worker.removed[1] >= 3 * (20 * 4096 + 100000)


@pytest.mark.skipif(not any(lv.level == "none" for lv in LEVELS) or os.geteuid() != 0,
                    reason="level none as root: the worker's files carry a throwaway gid")
def test_a_worker_at_level_none_is_stopped_past_its_file_count(tmp_path):
    from grader.sandbox import cleanup
    # 3 folders, of which /tmp and /var/tmp alone are past the limit (/dev/shm counts where
    # no memory cgroup charges it)
    worker, failure = _litter(tmp_path, cleanup.MAX_FILES // 2 + 500)
    assert not isinstance(failure, dict), "it ran past its file limit"
    assert failure.kind == "disk"
    assert f"{cleanup.MAX_FILES} files" in failure.reason and "was stopped" in failure.reason
    assert worker.removed[0] > cleanup.MAX_FILES // 2
    leftovers = [name for folder in ("/tmp", "/var/tmp", "/dev/shm") for name in os.listdir(folder)
                 if name.startswith("attnkit-litter-")]
    assert leftovers == []


def test_each_level_is_one_object_its_tools_its_view_its_command_and_its_description(monkeypatch):
    """An isolation level is one object (isolation.KINDS): what it needs, where the worker
    finds its files, how its command line starts and what results.json says; the figures
    are the documented ones (the module's docstring), not read back from the objects."""
    assert isolation.LEVELS == ("bwrap", "unshare", "none")
    assert isolation.CHOICES == ("auto", "strict", "bwrap", "unshare", "none")
    kinds = isolation.KINDS
    assert [k.namespaces for k in kinds.values()] == [True, True, False]
    assert kinds["bwrap"].tools(False) == ("bwrap",)
    assert kinds["bwrap"].tools(True) == ("bwrap", "setpriv")
    assert kinds["unshare"].tools(False) == ("unshare", "chroot")
    assert kinds["unshare"].tools(True) == ("unshare", "chroot", "setpriv")
    assert kinds["none"].tools(True) == kinds["none"].tools(False) == ()
    view = isolation.View("/h", "/r", ())
    assert isolation.Isolation("none").paths(view) == ("/h/submission", "/r")
    for name in ("bwrap", "unshare"):
        assert isolation.Isolation(name).paths(view) == ("/submission", "/runtime")
        said = isolation.Isolation(name).describe()
        assert (said["level"], said["network"]) == (name, "none")
        assert said["filesystem"] == "private root: system and Python read-only, kit not visible"
    said = isolation.Isolation("none", 200_001).describe()
    assert (said["level"], said["network"], said["user"]) == ("none", "host", "throwaway uid")
    assert said["filesystem"] == "host filesystem, as the worker's user may read it"
    # the command lines: the namespace levels start with their tool, after the cgroup prefix
    monkeypatch.setattr(isolation, "tool", lambda name: f"/bin/{name}")
    assert isolation.Isolation("bwrap").wrap(["py"], view, ("join",))[:2] == ["join", "/bin/bwrap"]
    assert isolation.Isolation("unshare").wrap(["py"], view, ("join",))[:2] == ["join", "/bin/unshare"]
    # level none: the command as it is; with a uid or a gid, setpriv takes it after the prefix
    assert isolation.Isolation("none").wrap(["py"], view, ("join",)) == ["join", "py"]
    assert isolation.Isolation("none").popen_user() == {}
    dropped = isolation.Isolation("none", 7, 7).wrap(["py"], view, ("join",))
    assert dropped[:3] == ["join", "/bin/setpriv", "--reuid=7"] and dropped[-1] == "py"
    assert isolation.Isolation("none", None, 9).wrap(["py"], view, ())[:2] == ["/bin/setpriv", "--regid=9"]
    assert isolation.Isolation("none", 7, 7).popen_user() == {}
    assert isolation.Isolation("bwrap", 7, 7).popen_user() == {}
    # without setpriv: Popen changes the uid before exec, too late to join a cgroup
    monkeypatch.setattr(isolation, "tool", lambda name: None)
    assert isolation.Isolation("none", 7, 7).wrap(["py"], view, ("join",)) == ["py"]
    assert isolation.Isolation("none", 7, 7).popen_user() == {"user": 7, "group": 7, "extra_groups": []}
    assert isolation.Isolation("none", None, 9).popen_user() == {"group": 9, "extra_groups": []}
    assert not isolation.Isolation("none", 7, 7).kind.joins_cgroups(isolation.Isolation("none", 7, 7))
    assert isolation.Isolation("none").kind.joins_cgroups(isolation.Isolation("none"))
    assert isolation.Isolation("unshare", 7, 7).kind.joins_cgroups(isolation.Isolation("unshare", 7, 7))


# -- a worker that does not read what it is sent -----------------------------------------------
def test_a_request_a_busy_worker_does_not_read_fails_as_a_timeout_not_a_hang(tmp_path):
    """Its top level sleeps; while it does, nothing reads the request channel. A request
    larger than the pipe then fails within its own limit, as a call that took too long."""
    folder = tmp_path / "busy"
    folder.mkdir()
    (folder / "attention.py").write_text("import time\ntime.sleep(60)\n")
    stage = stage_folder()
    os.chmod(stage, 0o711)
    worker = Worker(str(folder / "attention.py"), isolation.choose("auto"),
                    Limits(memory_mb=1500), stage)
    worker.start()
    try:
        worker.send({"op": "load", "names": []}, timeout=30)  # small: the pipe takes it
        started = time.monotonic()
        with pytest.raises(WorkerFailure) as failure:
            worker.send({"op": "probe", "blob": b"\0" * (4 << 20)}, timeout=1,
                        doing="sending the next request")
        waited = time.monotonic() - started
    finally:
        worker.stop()
    assert failure.value.kind == "timeout"
    assert str(failure.value) == ("sending the next request did not finish within 1 s (an "
                                  "endless loop, or far too slow)")
    assert 0.9 <= waited < 20
    assert worker.failure is failure.value and worker.proc.poll() is not None
