"""What the trusted side reads in /proc about the processes of a worker.

    proc_table()                  {pid: (ppid, uid, rss_kb)} of every readable process
    descendants(root, table, uid) the pids below `root` (and every process of `uid`)
    pss_kb(pid, rss_kb)           a process's proportional set size (the memory watchdog)
    host_pid(root, inner)         the host pid of a process known by its pid in a namespace
    namespace_fds(pid, kinds)     open handles on the namespaces a forked worker enters
    process_count(uid)            processes and threads of `uid` (what RLIMIT_NPROC counts)

Every reader tolerates processes that end while it reads: a pid that vanished is skipped.
"""
import os


def pss_kb(pid, rss_kb):
    """Proportional set size: shared (copy-on-write) pages counted once over the processes
    that share them. 0 for a process that has exited since `rss_kb` was read (gone, or a
    zombie: no memory left to count; its RSS read before would count pages it shared with
    the others in full); `rss_kb` where smaps_rollup cannot be read (not ours to read)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as fh:
            for line in fh:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
        return 0  # read, and no memory mapped: it has exited
    except (FileNotFoundError, ProcessLookupError):
        return 0
    except (OSError, ValueError, IndexError):
        pass
    return rss_kb


def proc_table():
    """{pid: (ppid, uid, rss_kb)} for every process we can read."""
    table = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status") as fh:
                fields = dict(line.split(":", 1) for line in fh if ":" in line)
            table[int(entry)] = (int(fields["PPid"]), int(fields["Uid"].split()[0]),
                                 int(fields.get("VmRSS", "0 kB").split()[0]))
        except (OSError, KeyError, ValueError):
            continue
    return table


def descendants(root, table=None, uid=None):
    """Pids below `root`, plus every process of `uid` when the worker has its own uid."""
    table = table if table is not None else proc_table()
    children = {}
    for pid, (ppid, _, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    found, todo = set(), [root]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    if uid is not None:
        found.update(pid for pid, (_, owner, _) in table.items() if owner == uid)
    found.discard(os.getpid())
    return found


def host_pid(root, inner):
    """The pid, as this process sees it, of the descendant of `root` that is `inner` in its
    own PID namespace (the sandbox placeholder's shell, which said its $$)."""
    for pid in descendants(root):
        try:
            with open(f"/proc/{pid}/status") as handle:
                for line in handle:
                    if line.startswith("NSpid:"):
                        ids = line.split()[1:]
                        if len(ids) >= 2 and ids[-1] == inner:
                            return pid
        except OSError:
            continue
    return None


def namespace_fds(pid, kinds):
    """(names, fds): the namespaces of `pid` among `kinds` that are not this process's, in
    the order of `kinds` (the order a process enters them: its user namespace first), then
    its root folder."""
    names, fds = [], []
    try:
        for name in kinds:
            theirs, ours = f"/proc/{pid}/ns/{name}", f"/proc/self/ns/{name}"
            try:
                if os.stat(theirs).st_ino == os.stat(ours).st_ino:
                    continue
            except FileNotFoundError:
                continue  # a kernel without this kind of namespace
            fds.append(os.open(theirs, os.O_RDONLY | os.O_CLOEXEC))
            names.append(name)
        fds.append(os.open(f"/proc/{pid}/root", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC))
    except OSError:
        for fd in fds:
            os.close(fd)
        raise
    if "mnt" not in names or "pid" not in names:
        for fd in fds:
            os.close(fd)
        raise OSError("the placeholder shares this process's mount or PID namespace")
    return names, fds


def process_count(uid):
    """Processes and threads of `uid` now: RLIMIT_NPROC counts all of them."""
    count = 0
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.stat(f"/proc/{entry}").st_uid == uid:
                    count += len(os.listdir(f"/proc/{entry}/task"))
            except OSError:
                pass
    return count
