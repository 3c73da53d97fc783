"""System V IPC objects and POSIX shared memory a worker at level `none` left behind.

Inside namespaces a worker has an IPC namespace and a /dev/shm of its own, which end with it.
At level `none` it shares the machine's: shared memory segments, message queues and
/dev/shm files are memory no process's RSS shows, so what it made is removed after it:

    before = snapshot()                        # taken before the worker starts
    remove(uid, pids, before, started, gid)    # after it stopped: what it made, removed
"""
import ctypes
import os
import shutil
import stat

IPC_RMID = 0
DEV_SHM = "/dev/shm"


def sysv_table(kind):
    """Rows of /proc/sysvipc/{shm,sem,msg} as dicts of ints."""
    try:
        with open(f"/proc/sysvipc/{kind}") as fh:
            header = fh.readline().split()
            rows = []
            for line in fh:
                values = line.split()
                if len(values) >= len(header):
                    rows.append({k: int(v) for k, v in zip(header, values) if v.lstrip("-").isdigit()})
            return rows
    except OSError:
        return []


def snapshot():
    """What exists before a worker starts: System V ids and /dev/shm names."""
    ids = {kind: {row.get({"shm": "shmid", "sem": "semid", "msg": "msqid"}[kind]) for row in sysv_table(kind)}
           for kind in ("shm", "sem", "msg")}
    try:
        names = set(os.listdir(DEV_SHM))
    except OSError:
        names = set()
    return ids, names


def remove(uid, pids, before, started, gid=None):
    """Remove the System V objects and /dev/shm files a worker at level `none` left: those of
    its throwaway uid, or (without one) the shared memory segments its process tree created
    or last used and message queues it last used, and /dev/shm files new since it started that
    no live process holds. Segments and files are memory no process's RSS shows."""
    libc = ctypes.CDLL(None, use_errno=True)
    calls = {"shm": ("shmid", lambda i: libc.shmctl(i, IPC_RMID, None)),
             "sem": ("semid", lambda i: libc.semctl(i, 0, IPC_RMID)),
             "msg": ("msqid", lambda i: libc.msgctl(i, IPC_RMID, None))}
    for kind, (key, remove) in calls.items():
        for row in sysv_table(kind):
            if uid is not None:
                ours = uid in (row.get("uid"), row.get("cuid"))
            elif gid is not None and gid in (row.get("gid"), row.get("cgid")):
                ours = True  # made by the worker: its throwaway gid
            elif row.get(key) in before[0][kind]:
                ours = False
            elif kind == "shm":
                ours = row.get("cpid") in pids or row.get("lpid") in pids
            elif kind == "msg":
                ours = row.get("lspid") in pids or row.get("lrpid") in pids
            else:
                ours = False  # a semaphore set names no process; small, left alone
            if ours:
                remove(row[key])
    try:
        names = os.listdir(DEV_SHM)
    except OSError:
        return
    candidates = []
    for name in names:
        path = os.path.join(DEV_SHM, name)
        try:
            info = os.lstat(path)
        except OSError:
            continue
        if uid is not None:
            if info.st_uid == uid:
                candidates.append((path, info))
        elif gid is not None:
            continue  # its files carry its gid: cleanup.remove() takes them
        elif (name not in before[1] and info.st_uid == os.getuid() and stat.S_ISREG(info.st_mode)
              and max(info.st_mtime, info.st_ctime) >= started - 1):
            candidates.append((path, info))
    if uid is None and candidates:
        held = held_files({os.path.realpath(p) for p, _ in candidates})
        candidates = [(p, i) for p, i in candidates if os.path.realpath(p) not in held]
    for path, info in candidates:
        try:
            if stat.S_ISDIR(info.st_mode):
                shutil.rmtree(path, ignore_errors=True)
            else:
                os.unlink(path)
        except OSError:
            pass


def held_files(paths):
    """Which of `paths` some live process has open or mapped."""
    held = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            for fd in os.listdir(f"/proc/{entry}/fd"):
                try:
                    target = os.readlink(f"/proc/{entry}/fd/{fd}")
                except OSError:
                    continue
                if target in paths:
                    held.add(target)
            with open(f"/proc/{entry}/maps") as fh:
                for line in fh:
                    target = line.rstrip("\n").split(None, 5)[-1] if line.count(" ") >= 5 else ""
                    if target in paths:
                        held.add(target)
        except OSError:
            continue
    return held
