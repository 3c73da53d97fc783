"""Resources the kernel counts: memory no process's RSS shows (System V shared memory, memfds,
/dev/shm files) is stopped at the worker's cgroup memory limit; forked children sharing
copy-on-write pages are not charged twice; the pids limit stops a fork bomb; the cgroups
sit below the grader's own and are gone afterwards; throwaway uids are leased with a lock.
Real workers, real kernel limits."""
import os
import subprocess
import sys
import time

import pytest

from conftest import isolation_levels, stage_folder
from grader.sandbox import cgroups, isolation, procfs
from grader.sandbox.client import Worker, WorkerFailure
from grader.sandbox.limits import Limits

SUPPORT = cgroups.support()
NEEDS_MEMORY_CGROUP = pytest.mark.skipif(
    SUPPORT["memory"] is None, reason="no memory cgroup can be created below the grader's own here")
NEEDS_PIDS_CGROUP = pytest.mark.skipif(
    SUPPORT["pids"] is None, reason="no pids cgroup can be created below the grader's own here")


LEVELS = isolation_levels()
IDS = [f"{lv.level}{'-uid' if lv.uid else ''}" for lv in LEVELS]

SHM = """
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
for _ in range(8):                                  # 8 x 256 MB, each detached once touched
    sid = libc.shmget(0, 256 << 20, 0o1600)
    addr = libc.shmat(sid, None, 0)
    ctypes.memset(addr, 1, 256 << 20)
    libc.shmdt(ctypes.c_void_p(addr))
print("NOT STOPPED")
"""

MEMFD = """
import os
fd = os.memfd_create("hog")
chunk = b"x" * (128 << 20)
for _ in range(16):                                 # 2 GB in a memfd
    os.write(fd, chunk)
print("NOT STOPPED")
"""

DEV_SHM = """
import os
with open("/dev/shm/attnkit-hog-%d" % os.getpid(), "wb") as f:
    chunk = b"x" * (128 << 20)
    for _ in range(16):                             # 2 GB in tmpfs
        f.write(chunk)
        f.flush()
print("NOT STOPPED")
"""

COW_FORKS = """
import os, time
buf = bytearray(b"\\x01") * (BUF_MB << 20)       # touched: resident in the parent
def rss_kb():
    with open("/proc/self/status") as fh:
        return int(next(l for l in fh if l.startswith("VmRSS")).split()[1])
r, w = os.pipe()
kids = []
for _ in range(CHILDREN):
    pid = os.fork()
    if pid == 0:
        total = sum(buf[i] for i in range(0, len(buf), 4096))   # reads every inherited page
        os.write(w, b"%d\\n" % rss_kb())
        time.sleep(2.5)                                         # long enough to be measured
        os._exit(0 if total else 1)
    kids.append(pid)
codes = [os.waitpid(pid, 0)[1] for pid in kids]
os.close(w)
said = b""
while True:
    chunk = os.read(r, 4096)
    if not chunk:
        break
    said += chunk
print("COW", rss_kb(), CHILDREN, min(int(x) for x in said.split()), codes)
"""

FORK_BOMB = """
import os, time
kids = 0
try:
    while True:
        pid = os.fork()
        if pid == 0:
            time.sleep(60)
            os._exit(0)
        kids += 1
except OSError as exc:
    print("FORKS", kids, exc.errno)
"""


def _worker(tmp_path, source, level, limits, use_cgroups=True):
    folder = tmp_path / "submission"
    folder.mkdir(exist_ok=True)
    (folder / "attention.py").write_text(source)
    stage = stage_folder()
    os.chmod(stage, 0o711)
    worker = Worker(str(folder / "attention.py"), level, limits, stage, use_cgroups=use_cgroups)
    worker.start()
    return worker


def _load(worker, timeout=90):
    try:
        return worker.request({"op": "load", "names": []}, timeout=timeout), None
    except WorkerFailure as failure:
        return None, failure


def _shmem_kb():
    with open("/proc/meminfo") as fh:
        return int(next(l for l in fh if l.startswith("Shmem:")).split()[1])


@NEEDS_MEMORY_CGROUP
@pytest.mark.parametrize("attack", ["sysv-shm", "memfd", "dev-shm"])
@pytest.mark.parametrize("level", LEVELS, ids=IDS)
def test_memory_no_rss_shows_is_stopped_at_the_cgroup_limit(tmp_path, level, attack):
    if attack == "dev-shm" and level.level != "none":
        pytest.skip("inside namespaces /dev/shm is not writable and /tmp is a size-limited tmpfs")
    source = {"sysv-shm": SHM, "memfd": MEMFD, "dev-shm": DEV_SHM}[attack]
    limits = Limits(memory_mb=768, processes=16, cpu_seconds=60, file_size_mb=4096)
    before = _shmem_kb()
    worker = _worker(tmp_path, source, level, limits)
    assert worker.limited_by()["memory_limit"].startswith("cgroup")
    folders = worker.cgroups.paths
    reply, failure = _load(worker)
    worker.stop()
    out, err = worker.output()
    assert reply is None and "NOT STOPPED" not in out, (reply, out, err[-2000:])
    assert failure.kind == "memory", failure.reason
    assert "used more than 768 MB of memory and was stopped" in failure.reason
    assert not any(os.path.exists(f) for f in folders), "the worker's cgroups were not removed"
    # the segments, memfd and files are gone with the worker: host shared memory is back
    # (an IPC namespace is freed by the kernel a moment after its last process)
    for _ in range(100):
        if _shmem_kb() - before < 100 * 1024:
            break
        time.sleep(0.1)
    assert _shmem_kb() - before < 100 * 1024, f"{(_shmem_kb() - before) // 1024} MB of shared memory left"


@pytest.mark.parametrize("use_cgroups", [True, False], ids=["cgroup", "watchdog"])
def test_forked_children_sharing_copy_on_write_pages_are_not_killed(tmp_path, use_cgroups):
    """The parent holds 400 MB and three children read all of it: each child's RSS holds the
    400 MB and torch, so RSS summed over the tree is far above the limit, while the memory
    really used (PSS, or the cgroup's charge) is well below it."""
    if use_cgroups and SUPPORT["memory"] is None:
        pytest.skip("no memory cgroup here")
    level = LEVELS[0]
    limits = Limits(memory_mb=1400, processes=16, cpu_seconds=60)
    source = COW_FORKS.replace("BUF_MB", "400").replace("CHILDREN", "3")
    worker = _worker(tmp_path, source, level, limits, use_cgroups=use_cgroups)
    assert (worker.cgroups is not None) == use_cgroups
    reply, failure = _load(worker)
    worker.stop()
    out, err = worker.output()
    assert failure is None and reply["ok"], (failure and failure.reason, reply, err[-2000:])
    line = next(l for l in out.splitlines() if l.startswith("COW"))
    _, parent_kb, children, child_kb, codes = line.split(" ", 4)
    summed_mb = (int(parent_kb) + int(children) * int(child_kb)) // 1024
    assert summed_mb > limits.memory_mb, f"summed RSS {summed_mb} MB: the test would prove nothing"
    assert codes == "[0, 0, 0]"


def test_the_watchdog_counts_a_process_that_exited_meanwhile_as_nothing():
    """The watchdog reads each process's RSS, then its PSS. A child that exits between the
    two (a zombie, or reaped) counts 0, not the RSS read before: that RSS holds every page it
    shared with its parent, and three such children exiting at once once took a worker of
    400 MB past a limit of 1,400 MB."""
    child = subprocess.Popen([sys.executable, "-c", "x = bytearray(50 << 20)"])
    child_pid = child.pid
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # a zombie once it has exited: not reaped yet
        with open(f"/proc/{child_pid}/stat") as fh:
            if fh.read().rsplit(")", 1)[1].split()[0] == "Z":
                break
        time.sleep(0.05)
    assert procfs.pss_kb(child_pid, 400 * 1024) == 0
    child.wait()
    assert procfs.pss_kb(child_pid, 400 * 1024) == 0  # reaped: gone
    mine = procfs.pss_kb(os.getpid(), 10 ** 9)
    assert 1024 < mine < 10 ** 9  # a live process: its own PSS, not the figure given


@NEEDS_PIDS_CGROUP
def test_the_pids_limit_stops_a_fork_bomb_even_for_root(tmp_path):
    """Level `none` without a throwaway uid, as root: RLIMIT_NPROC does not bind there, so
    only the pids cgroup stops it."""
    limits = Limits(processes=24, cpu_seconds=60)
    worker = _worker(tmp_path, FORK_BOMB, isolation.Isolation("none", None), limits)
    folder = worker.cgroups.folders["pids"][1]
    reply, failure = _load(worker)
    with open(os.path.join(folder, "pids.max")) as fh:
        assert int(fh.read()) == limits.cgroup_pids()
    in_group = worker.cgroups.pids()
    worker.stop()
    out, _ = worker.output()
    assert failure is None and reply["ok"], failure and failure.reason
    kids = int(next(l for l in out.splitlines() if l.startswith("FORKS")).split()[1])
    assert 0 < kids < limits.cgroup_pids()
    assert len(in_group) > kids, "the children were not in the worker's cgroup"
    assert not any(os.path.exists(f"/proc/{pid}") and _state(pid) != "Z" for pid in in_group), \
        "a child of the fork bomb outlived the worker"
    assert not os.path.exists(folder)


def _state(pid):
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"


@pytest.mark.skipif(not any(SUPPORT.values()), reason="no cgroups can be created here")
@pytest.mark.parametrize("level", LEVELS, ids=IDS)
def test_worker_cgroups_are_below_the_graders_own_and_removed(tmp_path, level):
    worker = _worker(tmp_path, "x = 1\n", level, Limits(processes=16))
    reply, failure = _load(worker)
    assert failure is None and reply["ok"]
    own = cgroups._own_paths()
    with open(f"/proc/{worker.proc.pid}/cgroup") as fh:
        joined = {line.split(":", 2)[1]: line.split(":", 2)[2].strip() for line in fh}
    paths = worker.cgroups.paths
    for controller, (version, folder) in worker.cgroups.folders.items():
        parent = SUPPORT[controller][1]
        assert os.path.dirname(folder) == parent
        key = controller if version == "v1" else ""
        mine = own[key].rstrip("/")
        assert joined[key].startswith(mine + "/attnkit-w"), (joined[key], mine)
        assert worker.proc.pid in worker.cgroups.pids()
    worker.stop()
    assert not any(os.path.exists(p) for p in paths)
    assert cgroups._own_paths() == own, "the grader was moved out of its own cgroup"


@pytest.mark.skipif(os.geteuid() != 0, reason="throwaway uids need root")
def test_throwaway_uids_are_leased_with_a_lock_the_kernel_holds():
    uids = [isolation.lease_uid() for _ in range(20)]
    assert len(set(uids)) == 20
    folder = isolation._uid_lock_dir()
    probe = ("import fcntl, os, sys\nfd = os.open(sys.argv[1], os.O_RDWR)\n"
             "try:\n    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)\n    print('free')\n"
             "except OSError:\n    print('held')\n")
    path = os.path.join(folder, str(uids[0]))
    held = subprocess.run([sys.executable, "-c", probe, path], capture_output=True, text=True).stdout
    assert held.strip() == "held", "another grader could draw the same uid"
    for uid in uids:
        isolation.release_uid(uid)
    free = subprocess.run([sys.executable, "-c", probe, path], capture_output=True, text=True).stdout
    assert free.strip() == "free"


@pytest.mark.skipif(not any(SUPPORT.values()), reason="no cgroups can be created here")
def test_cgroups_a_dead_grader_left_are_swept_and_live_ones_kept():
    gone = subprocess.Popen(["true"])
    gone.wait()  # its pid no longer exists
    parent = next(v for v in SUPPORT.values() if v)[1]
    stale = os.path.join(parent, f"attnkit-w{gone.pid}-1-0123456789ab")
    live = cgroups.WorkerCgroups.create(256 << 20, 16)
    os.mkdir(stale)
    try:
        cgroups._sweep(parent)
        assert not os.path.exists(stale)
        assert all(os.path.exists(p) for p in live.paths), "a live grader's cgroup was removed"
    finally:
        if os.path.exists(stale):
            os.rmdir(stale)
        live.remove()
