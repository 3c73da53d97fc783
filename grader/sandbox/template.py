"""The worker template: Python and torch are started once per batch, a worker is forked per sandbox.

Starting Python and importing torch costs about two seconds. The template is a process that
has done so and imported the worker runtime (runtime/), has never run a line of any
submission, holds neither the reference nor the hidden tests, and forks on request.
Isolation is the fresh worker's: the trusted side first builds the submission's sandbox
exactly as before (isolation.py: bwrap or unshare, its private root with /submission and
/tmp, its PID, IPC, UTS and network namespaces, its cgroups, its throwaway uid) around a
placeholder that only waits, and passes the placeholder's namespaces and root as file
descriptors. The forked keeper joins the worker's cgroups, enters those namespaces and that
root, and forks the worker inside (a PID namespace takes effect for children); the worker
starts its own session, drops to the throwaway uid and every capability (runtime/privileges.py,
the same drop a fresh worker makes), applies its limits and runs the runtime's request
loop (runtime/worker.py).

    template = Template.start()             # python -I template.py FD, once per batch
    # or forked beside the batch's fork server, one torch import for both
    # (serve_beside_server; grader/forkserver.py launch)
    process = template.spawn(plan, fds)     # a ForkedProcess: pid, poll(), wait(), stdin...

    template   (outside any sandbox; never runs submission code)
      keeper   (one per worker: cgroups, namespaces; waits and reports the exit status)
        worker (inside the sandbox: the submission's code, under its limits)

A template runs `python -I` with a clean environment and never starts CUDA; GPU workers
start fresh all the same (forked ones have not been checked on a GPU yet). This file is run as a script by the template's Python, so its
top level imports the standard library only.
"""
import atexit
import ctypes
import json
import os
import resource
import select
import signal
import site
import socket
import subprocess
import sys
import threading
import time

ENV_FD = "ATTNKIT_WORKER_TEMPLATE_FD"   # the request socket, inherited by trusted processes
ENV_MODE = "ATTNKIT_WORKER_START"       # "fresh": never fork from a template (bench, debugging)
NAMESPACES = ("user", "cgroup", "ipc", "uts", "net", "pid", "mnt")  # the order they are entered
CLEAN_ENV = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "OMP_NUM_THREADS": "1", "HOME": "/"}
MAX_MESSAGE = 1 << 16
RUNTIME_PARENT = os.path.dirname(os.path.abspath(__file__))  # grader/sandbox, holds runtime/


PIDS = set()  # the templates this process started


class TemplateGone(Exception):
    """No template answers, or the keeper could not set the worker up: start it fresh."""


class ForkedProcess:
    """A worker forked from the template: the part of subprocess.Popen that Worker uses.

    pid is the keeper's (the worker and whatever it starts are its descendants); the exit
    status is the worker's, as the keeper reports it; a keeper gone without a report
    counts as killed (-SIGKILL)."""

    def __init__(self, status, pid, worker_pid, stdin, stdout, stderr):
        self._status = status
        self._status.setblocking(False)
        self._lock = threading.Lock()  # the memory watchdog polls while Worker waits
        self.pid, self.worker_pid = pid, worker_pid
        self.stdin, self.stdout, self.stderr = stdin, stdout, stderr
        self.returncode = None
        self.cpu = None  # CPU seconds of the worker and its keeper, as the keeper says at the end

    def poll(self):
        if self.returncode is None:
            self._read(0)
        return self.returncode

    def wait(self, timeout=None):
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.returncode is None:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise subprocess.TimeoutExpired("worker", timeout)
            self._read(left)
        return self.returncode

    def _read(self, timeout):
        try:
            ready, _, _ = select.select([self._status], [], [], timeout)
        except (OSError, ValueError):
            ready = [self._status]
        if not ready:
            return
        with self._lock:
            if self.returncode is not None:
                return
            try:
                message = self._status.recv(MAX_MESSAGE)
            except BlockingIOError:
                return  # the other thread took it
            except OSError:
                message = b""
            if not message:
                self.returncode = -signal.SIGKILL
                return
            try:
                said = json.loads(message)
                code, cpu = said.get("exited"), said.get("cpu")
            except (ValueError, AttributeError):
                code, cpu = None, None
            if isinstance(cpu, float):
                self.cpu = cpu
            if isinstance(code, int) and not isinstance(code, bool):
                self.returncode = code

    def close(self):
        """Let the keeper go (it exits when this end closes)."""
        try:
            self._status.close()
        except OSError:
            pass


class Template:
    """The trusted side's handle on a template (one per batch, or one per process)."""

    def __init__(self, sock, proc=None):
        self.sock, self.proc = sock, proc   # proc: None when the socket was inherited
        self.lock = threading.Lock()

    @classmethod
    def start(cls):
        parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        proc = subprocess.Popen([sys.executable, "-I", os.path.abspath(__file__), str(child.fileno())],
                                env=dict(CLEAN_ENV), cwd="/", pass_fds=(child.fileno(),),
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True)
        child.close()
        PIDS.add(proc.pid)  # a child of ours that Worker's clean-up must never take for an orphan
        return cls(parent, proc)

    @classmethod
    def inherited(cls):
        """The batch's template, when this process was given one (ENV_FD), else None."""
        value = os.environ.get(ENV_FD, "")
        if not value.isdigit():
            return None
        try:
            sock = socket.socket(fileno=int(value))
        except OSError:
            return None
        if sock.type != socket.SOCK_SEQPACKET:
            sock.detach()
            return None
        return cls(sock)

    def fileno(self):
        return self.sock.fileno()

    def spawn(self, plan, fds, timeout=30.0):
        """Fork a worker for `plan` (see _keeper) with its four pipe ends `fds`
        (requests in, stdout, stderr, replies out) and, at the namespace levels, the
        placeholder's namespaces and root (plan["namespaces"] names them, in order)."""
        status, keeper_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            with self.lock:
                socket.send_fds(self.sock, [json.dumps(plan).encode()], list(fds) + [keeper_end.fileno()])
        except OSError as exc:
            status.close()
            raise TemplateGone(f"the worker template is not running ({exc})") from None
        finally:
            keeper_end.close()
        ready, _, _ = select.select([status], [], [], timeout)
        message = status.recv(MAX_MESSAGE) if ready else b""
        try:
            said = json.loads(message) if message else {}
        except ValueError:
            said = {}
        if not isinstance(said.get("keeper"), int) or not isinstance(said.get("worker"), int):
            status.close()
            why = said.get("error") if isinstance(said.get("error"), str) else "no answer"
            raise TemplateGone(f"the worker template could not start a worker: {why[:500]}")
        return status, said["keeper"], said["worker"]

    def close(self):
        """Let the template go; returns the CPU seconds it used (None: not started here)."""
        try:
            self.sock.close()
        finally:
            if self.proc is not None:
                cpu = wait_cpu(self.proc, 5)
                if self.proc.returncode is None:
                    self.proc.kill()
                    cpu = wait_cpu(self.proc, None)
                return cpu
        return None


def wait_cpu(proc, timeout):
    """Wait for `proc` (a subprocess.Popen child) up to `timeout` s (None: for ever), as
    proc.wait() does; the CPU seconds it used (with the children it waited for), or None
    when it is still running or was reaped elsewhere. A template its fork server forked
    (zygote.ServedTemplate) says its own."""
    if hasattr(proc, "wait_cpu"):
        return proc.wait_cpu(timeout)
    deadline = None if timeout is None else time.monotonic() + timeout
    while proc.returncode is None:
        try:
            pid, raw, usage = os.wait4(proc.pid, 0 if timeout is None else os.WNOHANG)
        except ChildProcessError:
            proc.poll()
            return None
        if pid == proc.pid:
            proc.returncode = os.waitstatus_to_exitcode(raw)
            return usage.ru_utime + usage.ru_stime
        if time.monotonic() > deadline:
            return None
        time.sleep(0.005)
    return None


_LOCAL = {"template": None, "failed": False}
_LOCAL_LOCK = threading.Lock()


def enabled():
    """False when workers must start fresh (ATTNKIT_WORKER_START=fresh)."""
    return os.environ.get(ENV_MODE) != "fresh"


def current():
    """The template this process's workers fork from: the batch's (inherited), or one of
    its own started on first use; None when workers must start fresh (not enabled(), or
    a template failed here before)."""
    if not enabled():
        return None
    with _LOCAL_LOCK:
        if _LOCAL["failed"]:
            return None
        own = _LOCAL["template"]
        if own is not None and own.proc is not None and own.proc.poll() is not None:
            own.sock.close()  # ours, and dead: a new one for this worker
            _LOCAL["template"] = None
        if _LOCAL["template"] is None:
            _LOCAL["template"] = Template.inherited()
        if _LOCAL["template"] is None:
            try:
                _LOCAL["template"] = Template.start()
            except OSError:
                _LOCAL["failed"] = True
                return None
            atexit.register(_LOCAL["template"].close)
        return _LOCAL["template"]


def adopt(fd):
    """Make the socket `fd` this process's template, in place of the one it inherited (a
    trusted process prepared ahead is given the batch's template at its turn: grade/turns.py)."""
    with _LOCAL_LOCK:
        old, before = _LOCAL["template"], os.environ.get(ENV_FD, "")
        try:
            if old is not None and old.proc is None:  # inherited: let it go
                old.sock.close()
            elif old is None and before.isdigit() and int(before) != fd:
                os.close(int(before))
        except OSError:
            pass
        os.environ[ENV_FD] = str(fd)
        _LOCAL["template"] = None  # current() takes it from ENV_FD
        _LOCAL["failed"] = False


def give_up():
    """A template failed to start a worker. One this process started and that died (a
    submission at level `none` may signal it) is started again on the next current();
    otherwise (an inherited one: `grader grade` restarts it per submission, see
    grade/trusted.py; or a live one that cannot fork) this process starts its workers fresh."""
    with _LOCAL_LOCK:
        own = _LOCAL["template"]
        if own is not None and own.proc is not None and own.proc.poll() is not None:
            try:
                own.sock.close()
            except OSError:
                pass
            _LOCAL["template"] = None
            return
        _LOCAL["failed"] = True


# -- the template process ---------------------------------------------------------------
PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36
_LIBC = None


def _libc():
    global _LIBC
    if _LIBC is None:
        _LIBC = ctypes.CDLL(None, use_errno=True)
    return _LIBC


def _check(result, what):
    if result != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"{what}: {os.strerror(error)}")


def _prctl(option, value):
    return _libc().prctl(option, ctypes.c_ulong(value), ctypes.c_ulong(0), ctypes.c_ulong(0),
                         ctypes.c_ulong(0))


def _worker(plan, pipes, modules):
    """In the new session, inside the sandbox: become the worker (never returns)."""
    code = 70
    try:
        os.setsid()
        _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        # 0: requests, 1 and 2: the student's stdout and stderr, 3: replies
        for target, fd in zip((0, 1, 2), pipes[:3]):
            os.dup2(fd, target)
        os.dup2(pipes[3], 3, inheritable=True)
        os.closerange(4, 1 << 16)
        os.chdir(plan["cwd"])
        worker, guards, probes, protocol, privileges = modules
        try:  # the very drop a fresh worker makes (runtime/privileges.py), checked the same way
            privileges.drop(plan.get("uid"), plan.get("gid"))
            privileges.check(plan.get("uid"), plan.get("gid"))
        except (OSError, privileges.NotDropped) as exc:
            os.write(2, f"the worker refused to start: {exc}\n".encode())
            code = worker.NOT_DROPPED
            raise
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)  # as Python sets it at start-up
        os.environ.clear()
        os.environ.update({str(k): str(v) for k, v in plan["env"].items()})
        sys.argv = [plan["argv0"]]  # -I put no script folder on sys.path, for either
        if "random" in sys.modules:
            sys.modules["random"].seed()  # each worker draws its own, as a fresh Python would
        code = worker.run(3, plan["limits"], plan["submission"], guards, probes, protocol,
                          plan.get("module"))
    except BaseException:
        code = 71 if code == 70 else code
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except BaseException:
                pass
        os._exit(code if isinstance(code, int) else 0)


def _keeper(plan, fds, modules):
    """Between the template and the worker: join, enter, fork, report (never returns)."""
    status = socket.socket(fileno=fds[-1])
    pipes, namespace_fds = fds[:4], fds[4:-1]
    try:
        os.setsid()
        _prctl(PR_SET_CHILD_SUBREAPER, 1)  # at level none, what the worker orphans stays below us
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        for path in plan.get("cgroups", []):
            with open(path, "w") as handle:
                handle.write("0")
        names = plan.get("namespaces", [])
        if names:
            *spaces, root = namespace_fds
            for name, fd in zip(names, spaces):
                _check(_libc().setns(fd, 0), f"setns {name}")
                os.close(fd)
            os.fchdir(root)
            os.chroot(".")
            os.close(root)
        worker = os.fork()
        if worker == 0:
            status.close()
            _worker(plan, pipes, modules)
        for fd in pipes:
            os.close(fd)
        status.sendall(json.dumps({"keeper": os.getpid(), "worker": worker}).encode())
    except BaseException as exc:
        try:
            status.sendall(json.dumps({"error": f"{type(exc).__name__}: {exc}"[:1000]}).encode())
        finally:
            os._exit(1)
    _wait_and_report(status, worker)


def _wait_and_report(status, worker):
    """Wait for the worker (woken by its pidfd, not by polling); report its exit status and
    the CPU seconds it and this keeper used; stay until the trusted side lets go (so what the
    worker orphaned at level `none` stays our descendant until it is killed)."""
    try:
        exits = [os.pidfd_open(worker)]
    except (AttributeError, OSError):  # no pidfd (Linux before 5.3): look every 50 ms
        exits = []
    code, cpu = None, 0.0
    while code is None:
        ready, _, _ = select.select([status, *exits], [], [], None if exits else 0.05)
        if status in ready and not status.recv(16):
            os.kill(worker, signal.SIGKILL)   # the trusted side is gone
        try:
            pid, raw, usage = os.wait4(worker, os.WNOHANG)
        except ChildProcessError:
            code = -signal.SIGKILL
            break
        if pid == worker:
            code = os.waitstatus_to_exitcode(raw)
            cpu = usage.ru_utime + usage.ru_stime
    own = resource.getrusage(resource.RUSAGE_SELF)
    try:
        status.sendall(json.dumps({"exited": code,
                                   "cpu": cpu + own.ru_utime + own.ru_stime}).encode())
        while status.recv(16):
            pass
    except OSError:
        pass
    os._exit(0)


def serve(sock_fd):
    _prctl(PR_SET_DUMPABLE, 0)  # no process of the same uid may ptrace the template
    sys.path.insert(0, RUNTIME_PARENT)
    import torch  # noqa: F401  (the point of the template)
    # here, not at the top: runtime/ is importable only while its folder is on the path (-I)
    from runtime import guards, privileges, probes, protocol, worker
    sys.path.remove(RUNTIME_PARENT)
    modules = (worker, guards, probes, protocol, privileges)
    sock = socket.socket(fileno=sock_fd)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # keepers are reaped by the kernel
    while True:
        try:
            message, fds, _, _ = socket.recv_fds(sock, MAX_MESSAGE, 16)
        except OSError:
            break
        if not message:
            break  # every trusted process let go: the batch is over
        try:
            plan = json.loads(message)
        except ValueError:
            plan = None
        if plan is not None and len(fds) >= 5:
            if os.fork() == 0:
                sock.close()
                try:
                    _keeper(plan, fds, modules)
                finally:
                    os._exit(1)
        for fd in fds:
            os.close(fd)
    try:
        while True:
            os.wait()  # the keepers end as their trusted processes let go; none is orphaned
    except ChildProcessError:
        pass


SERVER_FLAG = "--server"


def serve_beside_server(template_fd, sock_fd, out_fd, err_fd, config_fd):
    """`python -I template.py FD --server SOCK OUT ERR CONFIG`: one torch import for both the
    batch's worker template and its fork server (grader/forkserver.py launch). torch is
    imported here, in the template's clean environment, before anything of the kit is; then
    this process forks. The child is the template (serve(): its own session, never
    dumpable); it closes the server's descriptors unread. This process becomes the fork
    server (grader/grade/zygote.py) on socket SOCK, which reaps the child and says how it
    ended: its output goes to OUT and ERR, and CONFIG, a pipe read only after the fork, gives
    (JSON) its "env", "cwd" and "path" (the kit's and PYTHONPATH's folders, first on
    sys.path). Only this file of the kit is ever loaded in the template, and nothing of the
    server's configuration ever reaches its memory."""
    import torch  # noqa: F401  (the point: imported once, before the fork)
    pid = os.fork()
    if pid == 0:
        try:
            os.setsid()
            for fd in (sock_fd, out_fd, err_fd, config_fd):
                os.close(fd)
            serve(template_fd)
        finally:
            os._exit(0)
    os.close(template_fd)
    said = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET, fileno=sock_fd)
    try:  # the template's pid at once, for the grader's handle on it (zygote.ServedTemplate)
        said.sendall(json.dumps({"template": pid}).encode() + b"\n")
    except OSError:
        os._exit(0)  # let go already (started for another environment): nothing to serve
    said.detach()
    with os.fdopen(config_fd, "rb") as source:
        server = json.loads(source.read())
    for fd, given in ((1, out_fd), (2, err_fd)):
        os.dup2(given, fd)
        os.close(given)
    os.environ.clear()
    os.environ.update(server["env"])
    os.chdir(server["cwd"])
    sys.path[:0] = [p for p in server["path"] if isinstance(p, str) and p]
    # what `-I` left out that `python -m` would have given the server: the user's site
    # packages, outside a virtual environment (one has none) unless PYTHONNOUSERSITE says so
    if sys.prefix == sys.base_prefix and not server["env"].get("PYTHONNOUSERSITE"):
        user_site = site.getusersitepackages()
        if os.path.isdir(user_site):
            site.addsitedir(user_site)
    sys.dont_write_bytecode = bool(server["env"].get("PYTHONDONTWRITEBYTECODE"))
    sys.argv = ["grader.grade.zygote", str(sock_fd), str(pid)]
    import runpy  # here: the fork server's side only
    runpy.run_module("grader.grade.zygote", run_name="__main__", alter_sys=True)
    os._exit(0)


if __name__ == "__main__":
    if len(sys.argv) == 7 and sys.argv[2] == SERVER_FLAG:
        serve_beside_server(*(int(a) for a in sys.argv[1:2] + sys.argv[3:]))
    serve(int(sys.argv[1]))
    os._exit(0)  # every keeper reaped: leave without tearing torch down (about 0.4 s of wall)
