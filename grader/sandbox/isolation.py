"""What a worker can see and reach, and how that is enforced.

Three levels, best first; `auto` takes the best one that works on this machine:

- `bwrap`: bubblewrap builds a new root from scratch: read-only system folders and Python
  installation, the submission's private folder (a size-limited tmpfs) at /submission, a
  private /tmp, a fresh /proc and /dev, no network, its own PID, IPC and UTS namespaces.
  The kit (solutions/, tests_hidden/, the grader), other submissions and the grade
  output are simply not in that root.
- `unshare`: the same view built by util-linux `unshare` (user, mount, network, PID, IPC
  and UTS namespaces) with a few `mount` calls and `chroot`, for machines without bwrap.
- `none`: no namespaces (Docker's default seccomp profile, as on Gradescope, forbids them).
  The worker still runs with `python -I`, in a fresh private folder, with resource limits,
  in its own session, and, when the grader runs as root, under a throwaway user id, so it
  cannot write the kit's files or signal the grader; it can read what that user id may read.

Every level also gets a throwaway uid when the grader runs as root: RLIMIT_NPROC only
binds non-root users, and a uid of its own lets the grader find and kill every process a
submission left behind. Each uid is leased with a lock file (flock) held for the worker's
life, so two graders on one machine never hand out the same uid.

Where the grader may create cgroups (see cgroups.py), each worker also runs in a cgroup of
its own with a memory limit (which counts shared memory and tmpfs pages) and a pids limit;
the wrapped command starts with a short shell that joins it before anything else runs.
"""
import dataclasses
import errno
import fcntl
import functools
import glob
import importlib.util
import os
import random
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile

from . import cgroups

FIRST_UID = 200_000
UID_SPAN = 100_000

SYSTEM_READONLY = ("/usr", "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d",
                   "/etc/localtime", "/etc/passwd", "/etc/group", "/etc/nsswitch.conf",
                   "/etc/alternatives")
MERGED_USR_LINKS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
DEVICES = ("null", "zero", "full", "random", "urandom", "tty")
SANDBOX_WORK = "/submission"
SANDBOX_STAGED = "/staged"
SANDBOX_RUNTIME = "/runtime"
UID_LOCK_DIRS = ("/run/attnkit-uids", "/tmp/attnkit-uids")
_UID_LEASES = {}  # uid -> fd of its lock file, held while a worker of this process uses it


def tool(name):
    """Absolute path of a system tool (sbin included), or None."""
    search = os.environ.get("PATH", "") + ":/usr/local/sbin:/usr/sbin:/sbin:/usr/bin:/bin"
    return shutil.which(name, path=search)


class IsolationUnavailable(Exception):
    """The instructor asked for a level this machine cannot provide."""


@dataclasses.dataclass(frozen=True)
class View:
    """The folders a worker needs, as paths on the host."""
    home: str                # private to this worker (owned by its uid): holds submission/ and root/
    runtime_dir: str         # grader/sandbox/runtime, copied; read-only
    python_paths: tuple      # the Python installation and its site-packages; read-only
    disk_mb: int = 64        # size of the writable tmpfs folders (bwrap, unshare)
    gpu: bool = False        # also expose /dev/nvidia* and /sys

    @property
    def work_dir(self):
        """The submission's private copy; the worker's working folder at level `none`."""
        return os.path.join(self.home, "submission")

    @property
    def tmp_dir(self):
        """The worker's private TMPDIR at level `none` (namespaces give it a private /tmp)."""
        return os.path.join(self.home, "tmp")

    @property
    def root_dir(self):
        """Mount point of the private root built at level `unshare`."""
        return os.path.join(self.home, "root")


class Level:
    """An isolation level: what it needs of the machine, how it wraps a worker's command
    line, where the worker finds its files, and what results.json says of it. One subclass
    (and its entry in KINDS) per level; the rest of the kit asks it, never its name."""
    name = ""
    namespaces = False  # a private root, /tmp, /proc, network, PID and IPC namespaces
    network = filesystem = ""  # what results.json records (Isolation.describe)

    def __repr__(self):
        return f"<isolation level {self.name}>"

    def tools(self, as_uid):
        """The system tools it needs (with a throwaway uid: `as_uid`)."""
        return ()

    def wrap(self, isolation, argv, view, prefix):
        raise NotImplementedError

    def paths(self, view):
        """(work dir, runtime dir) as the worker sees them."""
        return SANDBOX_WORK, SANDBOX_RUNTIME

    def popen_user(self, isolation):
        """subprocess.Popen arguments that change the worker's user (none: it changes inside)."""
        return {}

    def joins_cgroups(self, isolation):
        """Can a worker of `isolation` join cgroups of its own (before it changes user)?"""
        return True


class _Namespaces(Level):
    """A new root built from scratch (see _mounts), inside Linux namespaces; with a throwaway
    uid, setpriv changes to it inside, after the cgroups are joined."""
    namespaces = True
    network = "none"
    filesystem = "private root: system and Python read-only, kit not visible"
    needs = ()  # its own tools; setpriv too with a throwaway uid

    def tools(self, as_uid):
        return self.needs + (("setpriv",) if as_uid else ())

    def wrap(self, isolation, argv, view, prefix):
        return list(prefix) + self.command(argv, view, isolation.uid, os.geteuid() == 0)

    def command(self, argv, view, uid, privileged):
        """The command line that builds the root and runs `argv` in it."""
        raise NotImplementedError


class Bwrap(_Namespaces):
    """bubblewrap."""
    name = "bwrap"
    needs = ("bwrap",)

    def command(self, argv, view, uid, privileged):
        return bwrap_command(argv, view, uid, privileged)


class Unshare(_Namespaces):
    """util-linux unshare, a few mounts and chroot, for machines without bwrap."""
    name = "unshare"
    needs = ("unshare", "chroot")

    def command(self, argv, view, uid, privileged):
        return unshare_command(argv, view, uid, privileged)


class Host(Level):
    """No namespaces: the host's filesystem and network, a private folder and TMPDIR, the
    resource limits, and (as root) a throwaway uid, or the grader's uid and a throwaway gid
    that marks every file the worker makes (cleanup.py removes them)."""
    name = "none"
    network = "host"
    filesystem = "host filesystem, as the worker's user may read it"

    def wrap(self, isolation, argv, view, prefix):
        if self._setpriv(isolation):
            if isolation.uid is None:
                return list(prefix) + _drop_gid_to(isolation.gid) + list(argv)
            return list(prefix) + _drop_to(isolation.uid) + list(argv)
        if isolation.uid is not None:
            return list(argv)  # no setpriv: Popen changes the uid, too late to join a cgroup
        return list(prefix) + list(argv)

    def paths(self, view):
        return view.work_dir, view.runtime_dir

    def popen_user(self, isolation):
        """Where setpriv exists, it changes the uid (after the cgroups are joined); without
        it the uid changes before exec."""
        if self._setpriv(isolation):
            return {}
        if isolation.uid is None:
            return {} if isolation.gid is None else {"group": isolation.gid, "extra_groups": []}
        return {"user": isolation.uid, "group": isolation.uid, "extra_groups": []}

    def joins_cgroups(self, isolation):
        """With a throwaway uid, setpriv takes it after the cgroup is joined: needed."""
        return isolation.uid is None or tool("setpriv") is not None

    @staticmethod
    def _setpriv(isolation):
        return (isolation.uid is not None or isolation.gid is not None) \
            and tool("setpriv") is not None


KINDS = {kind.name: kind for kind in (Bwrap(), Unshare(), Host())}  # best first
LEVELS = tuple(KINDS)
CHOICES = ("auto", "strict") + LEVELS


@dataclasses.dataclass(frozen=True)
class Isolation:
    level: str               # a name in KINDS (what results.json and --isolation say)
    uid: int | None = None   # throwaway uid (and gid) when the grader runs as root
    # the worker's throwaway gid: its uid's, or at level `none` without a uid (and as root)
    # one of its own, which marks every file it creates (cleanup.py removes them)
    gid: int | None = None

    @property
    def kind(self):
        """The Level object of this level."""
        return KINDS[self.level]

    def describe(self):
        """What results.json records about how the code was run."""
        memory, pids = cgroups.describe()
        return {
            "level": self.level,
            "network": self.kind.network,
            "filesystem": self.kind.filesystem,
            "user": "throwaway uid" if self.uid is not None else "the grader's own user",
            "memory_limit": (memory or "watchdog (PSS)") if self.uses_cgroups() else "watchdog (PSS)",
            "pids_limit": (pids or "RLIMIT_NPROC") if self.uses_cgroups() else "RLIMIT_NPROC",
        }

    def uses_cgroups(self):
        """Do this level's workers run in cgroups of their own? (At level `none` a throwaway
        uid is then taken by setpriv after the cgroup is joined, so setpriv is needed.)"""
        if not any(cgroups.support().values()):
            return False
        return self.kind.joins_cgroups(self)

    def fresh(self):
        """The same level for one more worker, with a throwaway uid of its own (leased until
        release()); at level `none` without one, a throwaway gid of its own where the grader
        runs as root."""
        if self.uid is not None:
            uid = lease_uid()
            return dataclasses.replace(self, uid=uid, gid=uid)
        if not self.kind.namespaces and os.geteuid() == 0:
            return dataclasses.replace(self, gid=lease_uid())
        return self

    def release(self):
        """Give back this worker's uid and gid leases (once every process of them is gone)."""
        release_uid(self.uid)
        if self.gid != self.uid:
            release_uid(self.gid)

    def ids(self):
        """{"uid", "gid"} the worker must run as (None: the grader's own)."""
        return {"uid": self.uid, "gid": self.gid if self.gid is not None else self.uid}

    def paths(self, view):
        """(work dir, runtime dir) as the worker sees them."""
        return self.kind.paths(view)

    def wrap(self, argv, view, prefix=()):
        """The command line that runs `argv` (paths as the worker sees them) at this level;
        `prefix` (joining the worker's cgroups) runs first, still as the grader's user."""
        return self.kind.wrap(self, argv, view, prefix)

    def popen_user(self):
        """subprocess.Popen arguments: inside namespaces, and at level `none` where setpriv
        exists, setpriv changes the uid (after the cgroups are joined); at level `none`
        without setpriv the uid changes before exec."""
        return self.kind.popen_user(self)


@functools.lru_cache(maxsize=None)
def python_paths():
    """Folders the worker's Python needs: the installation, the venv and site-packages
    (torch's found without importing it: `grader grade` itself never imports torch)."""
    candidates = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
                  os.path.dirname(os.path.realpath(sys.executable))}
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        candidates.add(sysconfig.get_paths()[key])
    spec = importlib.util.find_spec("torch")
    if spec is not None and spec.origin:
        candidates.add(os.path.dirname(os.path.dirname(spec.origin)))
    resolved = set()
    for path in candidates:
        if path and os.path.isdir(path):
            resolved.add(path)
            resolved.add(os.path.realpath(path))
    # drop folders already inside another one in the set
    kept = sorted(resolved)
    return tuple(p for p in kept if not any(p != q and p.startswith(q + os.sep) for q in kept))


def _mounts(view):
    """The private root, as a list of (kind, host_path, sandbox_path) for both renderers."""
    plan = []
    for path in SYSTEM_READONLY:
        if os.path.exists(path):
            plan.append(("ro", path, path))
    for link in MERGED_USR_LINKS:
        if os.path.islink(link):
            plan.append(("symlink", os.readlink(link), link))
        elif os.path.isdir(link):
            plan.append(("ro", link, link))
    # the private /tmp comes before the Python paths: a venv may live under /tmp
    plan.append(("tmpfs", None, "/tmp"))
    plan.append(("tmpfs", None, SANDBOX_WORK))
    for path in view.python_paths:
        if not path.startswith("/usr/"):
            plan.append(("ro", path, path))
    plan.append(("ro", view.runtime_dir, SANDBOX_RUNTIME))
    plan.append(("ro", view.work_dir, SANDBOX_STAGED))
    if view.gpu:
        for device in sorted(glob.glob("/dev/nvidia*")):
            plan.append(("dev", device, device))
        plan.append(("ro", "/sys", "/sys"))
    return plan


def _enter(argv, uid):
    """Inside the new root: drop to the throwaway uid, copy the submission into the writable
    /submission and start the worker there."""
    drop = _drop_to(uid) if uid is not None else []
    env = ["env", "-i", "PATH=/usr/bin:/bin", f"HOME={SANDBOX_WORK}", "LANG=C.UTF-8",
           "OMP_NUM_THREADS=1"]
    script = f'cp -R {SANDBOX_STAGED}/. {SANDBOX_WORK} && cd {SANDBOX_WORK} && exec "$@"'
    return drop + env + ["/bin/sh", "-c", script, "sh"] + list(argv)


def _drop_to(uid):
    return [tool("setpriv") or "setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups",
            "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--"]


def _drop_gid_to(gid):
    """At level `none` without a throwaway uid: the grader's uid, a throwaway gid."""
    return [tool("setpriv") or "setpriv", f"--regid={gid}", "--clear-groups",
            "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--"]


def bwrap_command(argv, view, uid, privileged):
    namespaces = ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts",
                  "--unshare-cgroup-try"]
    if privileged:
        # as root, bwrap drops every capability; setpriv needs these two to change uid
        namespaces += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    else:
        namespaces += ["--unshare-user"]
    cmd = [tool("bwrap") or "bwrap", *namespaces, "--die-with-parent", "--new-session",
           "--proc", "/proc", "--dev", "/dev", "--hostname", "sandbox"]
    made = {"/", "/proc", "/dev"}
    for kind, host, inside in _mounts(view):
        # bwrap would create missing parents with mode 0700, closed to the throwaway uid
        parents = []
        parent = os.path.dirname(inside)
        while parent not in made:
            parents.append(parent)
            parent = os.path.dirname(parent)
        for parent in reversed(parents):
            cmd += ["--perms", "0755", "--dir", parent]
            made.add(parent)
        made.add(inside)
        if kind == "ro":
            cmd += ["--ro-bind", host, inside]
        elif kind == "symlink":
            cmd += ["--symlink", host, inside]
        elif kind == "tmpfs":
            cmd += ["--perms", "1777", "--size", str(view.disk_mb * 1024 * 1024), "--tmpfs", inside]
        elif kind == "dev":
            cmd += ["--dev-bind", host, inside]
    return cmd + ["--chdir", "/", "--"] + _enter(argv, uid if privileged else None)


def unshare_command(argv, view, uid, privileged):
    """util-linux unshare plus a short mount script that builds the same root as bwrap."""
    lines = ["set -e", f"R={shlex.quote(view.root_dir)}",
             'mount -t tmpfs -o size=16m,mode=755 tmpfs "$R"']
    for kind, host, inside in _mounts(view):
        target = '"$R"' + shlex.quote(inside)
        if kind == "ro":
            if os.path.isdir(host):
                lines.append(f"mkdir -p {target}")
            else:
                lines.append(f'mkdir -p "$(dirname {target})" && touch {target}')
            lines.append(f"mount --rbind {shlex.quote(host)} {target}")
            lines.append(f"mount -o remount,bind,ro {target}")
        elif kind == "symlink":
            lines.append(f"ln -s {shlex.quote(host)} {target}")
        elif kind == "tmpfs":
            lines.append(f"mkdir -p {target}")
            lines.append(f"mount -t tmpfs -o size={view.disk_mb}m,mode=1777 tmpfs {target}")
        elif kind == "dev":
            lines.append(f"touch {target} && mount --bind {shlex.quote(host)} {target}")
    lines.append('mkdir -p "$R/proc" "$R/dev"')
    lines.append('mount -t proc proc "$R/proc"')
    for device in DEVICES:
        if os.path.exists(f"/dev/{device}"):
            lines.append(f'touch "$R/dev/{device}" && mount --bind /dev/{device} "$R/dev/{device}"')
    lines.append('mount -o remount,ro "$R"')
    inner = " ".join(shlex.quote(a) for a in _enter(argv, uid if privileged else None))
    lines.append(f'cd "$R" && exec {tool("chroot") or "chroot"} "$R" {inner}')
    user = [] if privileged else ["--user", "--map-root-user"]
    return [tool("unshare") or "unshare", *user, "--mount", "--propagation", "private", "--net", "--pid",
            "--ipc", "--uts", "--fork", "--kill-child=SIGKILL", "--",
            "/bin/sh", "-c", "\n".join(lines)]


def prepare_home(view, isolation):
    """Create the worker's private folders, owned by its uid, closed to everyone else."""
    for path in (view.home, view.work_dir, view.root_dir, view.tmp_dir):
        os.makedirs(path, exist_ok=True)
        os.chmod(path, 0o700)
    if isolation.uid is not None:
        for folder, _, files in os.walk(view.home):
            for path in [folder] + [os.path.join(folder, f) for f in files]:
                os.lchown(path, isolation.uid, isolation.uid)
    elif isolation.gid is not None:  # level `none`, the grader's uid: its folders carry its gid
        for folder, _, files in os.walk(view.home):
            for path in [folder] + [os.path.join(folder, f) for f in files]:
                os.lchown(path, -1, isolation.gid)


def throwaway_uid():
    """A uid no real user has, or None when the grader does not run as root (not leased:
    for choosing a level; each worker leases its own with lease_uid())."""
    if os.geteuid() != 0:
        return None
    return FIRST_UID + random.randrange(UID_SPAN)


def _uid_lock_dir():
    for folder in UID_LOCK_DIRS:
        try:
            os.makedirs(folder, mode=0o700, exist_ok=True)
            if os.access(folder, os.W_OK):
                return folder
        except OSError:
            continue
    return None


def lease_uid():
    """A throwaway uid locked for this process (fcntl.flock, LOCK_EX|LOCK_NB on a file named
    after it): no other grader on this machine draws it until release_uid() or this
    process's death, when the kernel drops the lock. None when not root."""
    if os.geteuid() != 0:
        return None
    folder = _uid_lock_dir()
    for _ in range(1000):
        uid = FIRST_UID + random.randrange(UID_SPAN)
        if uid in _UID_LEASES:
            continue
        if folder is None:
            return uid  # nowhere to keep locks: as random as before
        try:
            fd = os.open(os.path.join(folder, str(uid)), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                continue  # another grader's worker holds it
            return uid
        _UID_LEASES[uid] = fd
        return uid
    raise RuntimeError("no free throwaway uid: 1000 draws were all leased")


def release_uid(uid):
    fd = _UID_LEASES.pop(uid, None)
    if fd is not None:
        try:
            os.close(fd)
        except OSError:
            pass


@functools.lru_cache(maxsize=None)
def works(level, as_uid):
    """Run a trivial Python under `level` to see whether this machine allows it."""
    if not all(tool(name) for name in KINDS[level].tools(as_uid)):
        return False
    with tempfile.TemporaryDirectory(prefix="attnkit-probe-") as tmp:
        os.chmod(tmp, 0o711)
        view = View(os.path.join(tmp, "home"), os.path.join(tmp, "runtime"), python_paths())
        iso = Isolation(level, lease_uid() if as_uid else None)
        prepare_home(view, iso)
        os.makedirs(view.runtime_dir)
        # the same interpreter, not another one the dynamic linker fell back to: setpriv
        # execs with its capabilities still held, so a Python under a private home (say
        # /root/.pyenv) starts as another uid, but cannot read its own libpython and stdlib
        check = f"import os, sys; os.listdir('.'); sys.exit(0 if sys.version == {sys.version!r} else 3)"
        cmd = iso.wrap([sys.executable, "-I", "-c", check], view)
        try:
            done = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True,
                                  timeout=30, **iso.popen_user())
        except (OSError, subprocess.SubprocessError):
            return False
        finally:
            iso.release()
        return done.returncode == 0


CHECKED_ENV = "ATTNKIT_ISOLATION_CHECKED"  # "LEVEL:uid" or "LEVEL:": checked once for the batch


def checked(chosen):
    """What `grader grade` tells its trusted processes (CHECKED_ENV) of the level it chose
    and checked once for the batch: they take it without starting a Python to check again."""
    return f"{chosen.level}:{'uid' if chosen.uid is not None else ''}"


def choose(requested="auto"):
    """The Isolation to use, given the instructor's --isolation choice.

    Each level is tried with a throwaway uid first (when the grader runs as root), then
    without one: at level `none` a Python installed under a private home (say /root/.pyenv)
    cannot be run by another uid, while inside namespaces it is mounted where it can. A
    level `grader grade` checked for this batch (CHECKED_ENV, set by it alone) is not
    checked again.
    """
    if requested not in CHOICES:
        raise ValueError(f"--isolation must be one of {', '.join(CHOICES)}")
    level, _, with_uid = os.environ.get(CHECKED_ENV, "").partition(":")
    if requested == level and level in LEVELS:
        return Isolation(level, throwaway_uid() if with_uid == "uid" else None)
    wanted = [requested] if requested in LEVELS else \
        [name for name, kind in KINDS.items() if kind.namespaces or requested == "auto"]
    uid = throwaway_uid()
    for level in wanted:
        if uid is not None and works(level, True):
            return Isolation(level, uid)
        if works(level, False):
            return Isolation(level, None)
    if requested == "strict":
        raise IsolationUnavailable(
            "--isolation strict needs Linux namespaces (bubblewrap or unshare) and neither works "
            "here; install bubblewrap, or run with --isolation none to accept weaker isolation")
    raise IsolationUnavailable(f"isolation level {requested!r} does not work on this machine")
