"""A cgroup of its own for each worker: a memory limit the kernel enforces and a pids limit.

The resident-memory watchdog cannot see memory that is no process's RSS: System V shared
memory a process detached, memfds, files in /dev/shm and other tmpfs pages. A memory
cgroup charges all of those to the worker, and the kernel stops it at the limit. The pids
controller bounds processes and threads even where RLIMIT_NPROC does not bind (root).

    groups = WorkerCgroups.create(memory_bytes, pids_max)   # None: cgroups not available here
    argv = groups.join_prefix() + argv                      # joins before anything else runs
    ...
    groups.memory_killed()                                  # from the cgroup's own counters
    groups.remove()                                         # kills what is left, then rmdir

The cgroups are made only below the grader's own cgroup of each controller (as
/proc/self/cgroup names it); no process is ever moved out of the grader's cgroup but the
worker's own shell, which moves itself in. Both cgroup v2 (memory.max, pids.max,
memory.events, cgroup.kill) and v1's `memory` and `pids` controllers are supported.
"""
import functools
import os
import re
import secrets
import signal
import time

_COUNTER = [0]
_SWEPT = set()
_NAME = re.compile(r"attnkit-w(\d+)-\d+-[0-9a-f]+$")


def _read(path, default=""):
    try:
        with open(path) as handle:
            return handle.read()
    except OSError:
        return default


def _write(path, value):
    with open(path, "w") as handle:
        handle.write(str(value))


def _own_paths():
    """{controller: path} from /proc/self/cgroup; the v2 path under the key ''."""
    own = {}
    for line in _read("/proc/self/cgroup").splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, names, path = parts
        for name in names.split(",") if names else [""]:
            own[name] = path
    return own


def _mounts():
    """[(fstype, mount root, mount point, super options)] of the cgroup file systems."""
    found = []
    for line in _read("/proc/self/mountinfo").splitlines():
        left, sep, right = line.partition(" - ")
        if not sep:
            continue
        fields, tail = left.split(), right.split()
        if len(fields) < 5 or len(tail) < 3 or tail[0] not in ("cgroup", "cgroup2"):
            continue
        found.append((tail[0], fields[3], fields[4].replace("\\040", " "), tail[2].split(",")))
    return found


def _own_dir(mount_root, mount_point, own):
    """The grader's own cgroup as a folder, or None when it is outside this mount."""
    if own is None:
        return None
    root = mount_root.rstrip("/")
    if root and not (own == root or own.startswith(root + "/")):
        return None
    folder = os.path.normpath(os.path.join(mount_point, own[len(root):].lstrip("/")))
    return folder if os.path.isdir(folder) else None


def _try_child(parent, files):
    """Can a child cgroup be made here, and does it have `files`? (made and removed again)"""
    probe = os.path.join(parent, f"attnkit-probe-{os.getpid()}-{secrets.token_hex(4)}")
    try:
        os.mkdir(probe)
    except OSError:
        return False
    try:
        return all(os.path.exists(os.path.join(probe, name)) for name in files)
    finally:
        try:
            os.rmdir(probe)
        except OSError:
            pass


@functools.lru_cache(maxsize=None)
def support():
    """{"memory": (version, parent folder) or None, "pids": ...} for this process."""
    own = _own_paths()
    found = {"memory": None, "pids": None}
    mounts = _mounts()
    for fstype, root, point, options in mounts:
        if fstype != "cgroup":
            continue
        for controller, needs in (("memory", ("memory.limit_in_bytes", "memory.oom_control")),
                                  ("pids", ("pids.max",))):
            if found[controller] is None and controller in options:
                parent = _own_dir(root, point, own.get(controller))
                if parent and _try_child(parent, needs):
                    found[controller] = ("v1", parent)
    for fstype, root, point, _ in mounts:
        if fstype != "cgroup2":
            continue
        parent = _own_dir(root, point, own.get(""))
        if parent is None:
            continue
        wanted = [c for c in ("memory", "pids") if found[c] is None]
        available = _read(os.path.join(parent, "cgroup.controllers")).split()
        enabled = _read(os.path.join(parent, "cgroup.subtree_control")).split()
        for controller in wanted:
            if controller not in available:
                continue
            if controller not in enabled:
                # refused (EBUSY) when the grader's cgroup holds processes and is not the
                # root: cgroup v2 allows no controllers there, and we move no process out
                try:
                    _write(os.path.join(parent, "cgroup.subtree_control"), f"+{controller}")
                except OSError:
                    continue
            needs = ("memory.max", "memory.events") if controller == "memory" else ("pids.max",)
            if _try_child(parent, needs):
                found[controller] = ("v2", parent)
    return found


def describe():
    """What limits a worker's memory and processes here, for results.json."""
    found = support()
    memory = f"cgroup {found['memory'][0]}" if found["memory"] else None
    pids = f"cgroup {found['pids'][0]}" if found["pids"] else None
    return memory, pids


class WorkerCgroups:
    """The cgroups of one worker (one per controller; one shared folder on v2)."""

    def __init__(self, folders, memory_bytes, pids_max):
        self.folders = folders            # {"memory": (version, path), "pids": (version, path)}
        self.memory_bytes = memory_bytes
        self.pids_max = pids_max

    @classmethod
    def create(cls, memory_bytes, pids_max):
        """Make and configure the worker's cgroups; None when this machine offers neither."""
        found = support()
        if not found["memory"] and not found["pids"]:
            return None
        for version_parent in found.values():
            if version_parent and version_parent[1] not in _SWEPT:
                _SWEPT.add(version_parent[1])
                _sweep(version_parent[1])
        _COUNTER[0] += 1
        name = f"attnkit-w{os.getpid()}-{_COUNTER[0]}-{secrets.token_hex(6)}"
        folders, made = {}, []
        try:
            for controller in ("memory", "pids"):
                if not found[controller]:
                    continue
                version, parent = found[controller]
                folder = os.path.join(parent, name)
                if folder not in made:
                    os.mkdir(folder)
                    made.append(folder)
                folders[controller] = (version, folder)
            groups = cls(folders, memory_bytes, pids_max)
            groups._configure()
            return groups
        except OSError:
            for folder in made:
                _remove_folder(folder)
            return None

    def _configure(self):
        if "memory" in self.folders:
            version, folder = self.folders["memory"]
            if version == "v1":
                _write(os.path.join(folder, "memory.limit_in_bytes"), self.memory_bytes)
                memsw = os.path.join(folder, "memory.memsw.limit_in_bytes")
                if os.path.exists(memsw):  # swap counted too, so it is no way out
                    _write(memsw, self.memory_bytes)
            else:
                _write(os.path.join(folder, "memory.max"), self.memory_bytes)
                for extra, value in (("memory.swap.max", 0), ("memory.oom.group", 1)):
                    if os.path.exists(os.path.join(folder, extra)):
                        _write(os.path.join(folder, extra), value)
        if "pids" in self.folders:
            _write(os.path.join(self.folders["pids"][1], "pids.max"), self.pids_max)

    @property
    def paths(self):
        return sorted({folder for _, folder in self.folders.values()})

    def procs_files(self):
        return [os.path.join(folder, "cgroup.procs") for folder in self.paths]

    def join_prefix(self):
        """A shell that moves itself into every cgroup of the worker, then execs the command:
        prepended to the worker's command line, it runs before any uid change or namespace,
        so every process the worker or its sandbox starts is inside."""
        files = self.procs_files()
        joins = " && ".join(f'echo 0 > "${i + 1}"' for i in range(len(files)))
        return ["/bin/sh", "-c", f'{joins} && shift {len(files)} && exec "$@"', "sh"] + files

    def describe(self):
        memory = self.folders.get("memory")
        pids = self.folders.get("pids")
        return (f"cgroup {memory[0]}" if memory else None, f"cgroup {pids[0]}" if pids else None)

    def memory_killed(self):
        """Did the kernel stop a process of this worker at the memory limit?"""
        if "memory" not in self.folders:
            return False
        version, folder = self.folders["memory"]
        if version == "v2":
            events = dict(line.split() for line in _read(os.path.join(folder, "memory.events")).splitlines()
                          if len(line.split()) == 2)
            return int(events.get("oom_kill", 0)) > 0 or int(events.get("oom_group_kill", 0)) > 0
        control = dict(line.split() for line in _read(os.path.join(folder, "memory.oom_control")).splitlines()
                       if len(line.split()) == 2)
        if "oom_kill" in control:
            return int(control["oom_kill"]) > 0
        # kernels before 4.13 have no oom_kill count: the limit was hit and could not be met
        return int(control.get("under_oom", 0)) > 0 or int(_read(os.path.join(folder, "memory.failcnt"), "0") or 0) > 0

    def pids(self):
        """Every process now in one of the worker's cgroups."""
        found = set()
        for path in self.procs_files():
            found.update(int(p) for p in _read(path).split() if p.isdigit())
        return found

    def kill(self):
        """SIGKILL everything in the worker's cgroups (cgroup.kill on v2 where present)."""
        for version, folder in self.folders.values():
            if version == "v2" and os.path.exists(os.path.join(folder, "cgroup.kill")):
                try:
                    _write(os.path.join(folder, "cgroup.kill"), 1)
                except OSError:
                    pass
        for pid in self.pids():
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

    def remove(self, reap=None, seconds=3.0):
        """Kill what is left, then remove the cgroups, retrying while the dead are reaped."""
        deadline = time.monotonic() + seconds
        for folder in self.paths:
            while True:
                self.kill()
                if reap is not None:
                    reap(self.pids())
                try:
                    os.rmdir(folder)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        break
                    time.sleep(0.02)


def _sweep(parent):
    """Remove the empty cgroups of graders that died before cleaning up (their pid is gone);
    the kernel refuses to remove one that still holds a process."""
    try:
        names = os.listdir(parent)
    except OSError:
        return
    for name in names:
        match = _NAME.match(name)
        if match and not os.path.exists(f"/proc/{match.group(1)}"):
            _remove_folder(os.path.join(parent, name))


def _remove_folder(folder):
    try:
        os.rmdir(folder)
    except OSError:
        pass
