"""What a worker at level `none` wrote into the machine's shared folders, measured and removed.

Inside namespaces a worker's /tmp is a private, size-limited tmpfs that ends with it. At level
`none` there is no private mount: the worker gets a private TMPDIR in its own folder, and
every file it creates anywhere carries its throwaway gid (or uid), which it cannot give away
(chown to another group needs a capability it does not have). So what it made is known
by that mark, and:

    usage(ids, private)   bytes and entries in its private folder plus its marked entries in
                          the shared folders; the trusted side stops it past DISK/FILES limits
    remove(ids)           after it stopped: every marked entry in the shared, world-writable
                          folders (and in world-writable folders below them) is removed
    kill(ids)             every process still running with its uid or gid (its trusted
                          process died before it could stop it)

A file it wrote into a folder it may write only as its owner (the grader's own uid at level
`none` without a throwaway uid: the kit, the grader's temporary folders) is not found here;
docs/explanation/isolation.md ("Honest limits") says so.
"""
import os
import shutil
import signal
import stat

SHARED = ("/tmp", "/var/tmp", "/dev/shm", "/dev/mqueue")  # world-writable on every Linux
MAX_FILES = 10_000      # entries a worker may create in its private folder and the shared ones
MAX_VISITS = 50_000     # entries looked at in one walk (a walk never takes unbounded time)
MAX_DEPTH = 6           # world-writable folders below the shared ones, looked into


def _marked(info, ids):
    gid, uid = ids.get("gid"), ids.get("uid")
    return (gid is not None and info.st_gid == gid) or (uid is not None and info.st_uid == uid)


def _tree_size(path, budget):
    """(bytes, entries) of `path` and what is below it, never through a link."""
    total, count, todo = 0, 0, [path]
    while todo and budget[0] > 0:
        current = todo.pop()
        try:
            info = os.lstat(current)
        except OSError:
            continue
        budget[0] -= 1
        count += 1
        total += info.st_blocks * 512
        if stat.S_ISDIR(info.st_mode):
            try:
                todo.extend(os.path.join(current, name) for name in os.listdir(current))
            except OSError:
                pass
    return total, count


def _marked_entries(ids, roots=SHARED, budget=None):
    """Marked entries in `roots` and in the world-writable, unmarked folders below them."""
    budget = budget if budget is not None else [MAX_VISITS]
    found, todo = [], [(root, 0) for root in roots]
    while todo and budget[0] > 0:
        folder, depth = todo.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            budget[0] -= 1
            if budget[0] <= 0:
                break
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if _marked(info, ids):
                found.append((entry.path, info))
            elif stat.S_ISDIR(info.st_mode) and info.st_mode & 0o002 and depth < MAX_DEPTH:
                todo.append((entry.path, depth + 1))
    return found


ON_DISK = ("/tmp", "/var/tmp")  # memory folders (/dev/shm) count where no cgroup charges them


def usage(ids, private, roots=SHARED):
    """(bytes, entries) the worker holds: its private folder and its marked entries in
    `roots` (the trusted side leaves /dev/shm out where its memory cgroup charges them)."""
    budget = [MAX_VISITS]
    total, count = _tree_size(private, budget)
    if ids.get("gid") is None and ids.get("uid") is None:
        return total, count
    for path, info in _marked_entries(ids, roots, budget=budget):
        size, entries = _tree_size(path, budget)
        total, count = total + size, count + entries
    return total, count


def remove(ids, roots=SHARED):
    """Remove every entry marked with the worker's ids from the shared folders; returns
    (entries, bytes) removed, as counted before removing."""
    if ids.get("gid") is None and ids.get("uid") is None:
        return 0, 0
    removed, freed = 0, 0
    for _ in range(3):  # a walk cut short by its budget: look again
        found = _marked_entries(ids, roots)
        if not found:
            break
        for path, info in found:
            size, entries = _tree_size(path, [MAX_VISITS])
            try:
                if stat.S_ISDIR(info.st_mode):
                    shutil.rmtree(path)
                else:
                    os.unlink(path)
            except OSError:
                shutil.rmtree(path, ignore_errors=True)
                if os.path.lexists(path):
                    continue
            removed, freed = removed + entries, freed + size
    return removed, freed


def kill(ids):
    """SIGKILL every process whose real, effective or saved uid or gid is the worker's
    throwaway one; returns how many were signalled."""
    gid, uid = ids.get("gid"), ids.get("uid")
    wanted = {("Gid", gid), ("Uid", uid)} - {("Gid", None), ("Uid", None)}
    if not wanted:
        return 0
    killed = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/status") as handle:
                fields = dict(line.split(":", 1) for line in handle if ":" in line)
        except (OSError, ValueError):
            continue
        if any(str(value) in fields.get(key, "").split()[:3] for key, value in wanted):
            try:
                os.kill(int(entry), signal.SIGKILL)
                killed += 1
            except OSError:
                pass
    return killed
