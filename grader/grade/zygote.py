"""A fork server for the trusted grading processes.

Importing torch and pytest costs about two seconds; a batch pays it once. The zygote is a
trusted process that imports them and then waits. For each submission `grader grade` sends
it, over a Unix socket, the pytest arguments and two file descriptors (the private report
pipe and the console pipe); the zygote forks a child that runs the hidden suite with them
and reports the child's exit status when it ends. The zygote never runs student code: the
child starts the submission's worker exactly as a fresh process would (grader/sandbox).

    server = Zygote(env)              # python -m grader.grade.zygote, in its own process
    pid = server.spawn(args, report_fd, console_fd, cwd)
    status = server.wait(pid, timeout)
"""
import argparse
import gc
import importlib
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time

from .. import assignment as assignments
from .. import forkserver
from ..sandbox import isolation, template
from ..sandbox.limits import Limits
from ..sandbox.template import wait_cpu
from . import turns

PRELOAD = ("torch", "pytest", "_pytest.python", "grader.harness", "grader.grade.plugin",
           "grader.suite.plugin", "grader.sandbox.client", "pytest_timeout")


class ZygoteGone(Exception):
    """The fork server died; the caller falls back to a fresh process."""


class Zygote:
    """The grader's handle on its fork server. A server that died (a submission at level
    `none` may signal it) is started again on the next spawn(); `restarts` counts them and
    `stopped` says how the last one ended. A child of a server that died runs on: its exit
    status is lost (wait() raises ZygoteGone), its report is not."""

    def __init__(self, env, carried=None):
        """env: the server's environment (forkserver.environment()); carried: what each
        trusted process gets in its environment beyond it (forkserver.CARRIED: the level
        grade_batch checked), sent with each spawn. The server forkserver.start() started
        for `env` is taken, else one is started here."""
        self.env = env
        self.carried = {k: v for k, v in (carried or {}).items() if k in forkserver.CARRIED}
        self.lock = threading.Lock()
        self.changed = threading.Condition()
        self.statuses = {}
        self.cpu = {}        # pid -> CPU seconds of that trusted process (and what it waited for)
        self.prepared = {}   # what the server said of prepare()'s requests
        self._later, self._asked = [], []  # prepare()'s requests; those not sent yet
        self.children = {}   # pid -> the generation of the server that forked it
        self.generation, self.restarts, self.stopped = 0, 0, None
        # the worker template forked beside the first server (forkserver.launch), for
        # trusted.start_worker_template to take; None where workers start fresh
        self.template = None
        self.template_said = {}  # what the server said of it: "template", "template_exited"...
        early = forkserver.take(env)
        self._start(early or forkserver.launch(env, with_template=template.enabled()))

    def _start(self, started=None):
        parent, proc, template_sock = started or forkserver.launch(self.env)
        if template_sock is not None:
            self.template = template.Template(template_sock, ServedTemplate(self))
        with self.changed:
            self.sock, self.proc = parent, proc
            self.generation += 1
            self.replies = []
            self.alive = True
        self.reader = threading.Thread(target=self._read, args=(parent, self.generation),
                                       daemon=True)
        self.reader.start()

    def _read(self, sock, generation):
        buffer = b""
        while True:
            try:
                chunk = sock.recv(65536)
            except OSError:
                chunk = b""
            if not chunk:
                with self.changed:
                    if generation == self.generation:
                        self.alive = False
                    self.changed.notify_all()
                return
            buffer += chunk
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                message = json.loads(line)
                with self.changed:
                    if "exited" in message:
                        self.statuses[message["exited"]] = message["status"]
                        self.cpu[message["exited"]] = message.get("cpu")
                    elif "template" in message or "template_exited" in message:
                        if generation == 1:  # only the first server forked a template
                            self.template_said.update(message)
                            served = self.template
                            if "template" in message and served is not None:
                                served.proc.said_pid()
                    elif "prepared" in message or "warmed" in message:
                        self.prepared.update(message)
                    else:
                        self.replies.append(message)
                    self.changed.notify_all()

    def served_template(self, timeout=120.0):
        """The worker template forked beside the first server, once that server has said its
        pid (within `timeout` s: after its torch import); None when none was forked, or when
        its pid was not said (the server died first, say): it is then let go, and the batch
        starts a template of its own."""
        served = self.template
        if served is None:
            return None
        with self.changed:
            self.changed.wait_for(lambda: "template" in self.template_said
                                  or self.generation != 1 or not self.alive, timeout)
            if "template" in self.template_said:
                return served
        self.template = None
        try:
            served.sock.close()  # it ends on EOF, if it ever serves
        except OSError:
            pass
        return None

    def _restart_if_gone(self):
        """Called with self.lock held: a server that died is reaped and started again."""
        if self.alive:
            return
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait()
        self.stopped = f"signal {-code}" if code < 0 else f"exit status {code}"
        try:
            self.sock.close()
        except OSError:
            pass
        self.restarts += 1
        try:
            self._start()
        except OSError:
            raise ZygoteGone("the fork server could not be started again") from None
        self._asked = list(self._later)  # a new server prepares the suite again

    def prepare(self, hidden_tests, solution, jobs=1):
        """Have the fork server prepare the suite once for the batch (grader/suite/warm.py):
        what every trusted process needs, computed before it forks any of them, and what
        follow-through marking imports (torch's symbolic shapes, for autograd with given
        gradients), then. The first is asked after the next spawn (the batch's catalog:
        prepared while it is collected), the second once the batch's first `jobs + 1`
        submissions are forked: a batch stages `jobs + 1` at once (grade_batch), in whatever
        order they are ready, and the first in line must not wait for it (it did: 0.35 s at
        --jobs 1). A server started again is asked again. A server that cannot prepare
        leaves each trusted process to compute what it needs."""
        self._later = [json.dumps({"prepare": {"hidden_tests": hidden_tests,
                                               "solution": solution}}).encode() + b"\n",
                       *[None] * max(1, jobs),
                       json.dumps({"warm": True}).encode() + b"\n"]
        self._asked = list(self._later)

    def _ask_later(self):
        """After a spawn: the next request prepare() left for later, if any (no answer
        awaited: the server serves it while the child it just forked runs)."""
        if self._asked:
            request = self._asked.pop(0)
            try:
                if request is not None:
                    self.sock.sendall(request)
            except OSError:
                pass

    def spawn(self, args, report_fd, console_fd, cwd, fds=None):
        """Start one trusted grading process; returns its pid. fds: {name: fd} it also gets
        (named in its environment: see _child)."""
        fds = dict(fds or {})
        request = json.dumps({"args": args, "cwd": cwd, "fds": list(fds),
                              "env": self.carried}).encode() + b"\n"
        with self.lock:
            self._restart_if_gone()
            try:
                socket.send_fds(self.sock, [request], [report_fd, console_fd, *fds.values()])
            except OSError:
                raise ZygoteGone("the fork server is not running") from None
            with self.changed:
                while not self.replies and self.alive:
                    self.changed.wait(1)
                if not self.replies:
                    raise ZygoteGone("the fork server did not answer")
                pid = self.replies.pop(0)["pid"]
                self.children[pid] = self.generation
            self._ask_later()
            return pid

    def wait(self, pid, timeout):
        """The child's exit status (as os.waitstatus_to_exitcode gives it), or None on timeout.
        Raises ZygoteGone when the server that forked it died before it ended."""
        def known():
            gone = not self.alive or self.children.get(pid) != self.generation
            return pid in self.statuses or gone
        with self.changed:
            ok = self.changed.wait_for(known, timeout)
            if pid in self.statuses:
                self.children.pop(pid, None)
                return self.statuses.pop(pid)
        if not ok:
            return None
        raise ZygoteGone("the fork server died while a child was running")

    def kill(self, pid):
        try:
            os.killpg(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    def close(self):
        """Let the fork server go; returns the CPU seconds it and the trusted processes it
        forked used (each child's alone is in self.cpu), or None. A template forked beside
        it that no batch took is let go first."""
        if self.template is not None:
            try:
                self.template.sock.close()
            except OSError:
                pass
        try:
            self.sock.shutdown(socket.SHUT_RDWR)  # wakes our reader and tells the server
            self.sock.close()
        except OSError:
            pass
        finally:
            cpu = wait_cpu(self.proc, 5)
            if self.proc.returncode is None:
                self.proc.kill()
                cpu = wait_cpu(self.proc, None)
        return cpu


class ServedTemplate:
    """The worker template forked beside the fork server (forkserver.launch): the part of a
    Popen that its Template handle and trusted.current_template_fd use. It is the server's
    child, not ours: the server says its pid (a pidfd is opened on it at once, so that no
    other process can be taken for it later) and, having reaped it, how it ended and the CPU
    it used. A template whose end its server cannot say (the server died first, or never
    said its pid) counts as killed, its CPU unknown. Nothing here waits without a bound."""

    LONGEST_WAIT = 10.0  # wait_cpu(None)'s bound: the template ends at once when let go

    def __init__(self, zygote):
        self.zygote = zygote
        self.returncode = None
        self.cpu = None
        self.pidfd = None

    @property
    def pid(self):
        return self.zygote.template_said.get("template")

    def said_pid(self):
        """Called by the server's reader when it says the pid: the pidfd, where the kernel
        has them (else /proc is read, by pid)."""
        try:
            self.pidfd = os.pidfd_open(self.pid)
        except (OSError, AttributeError, TypeError):
            self.pidfd = None

    def poll(self):
        if self.returncode is None:
            self._learn(0)
        return self.returncode

    def wait_cpu(self, timeout):
        """Wait up to `timeout` s (None: LONGEST_WAIT) for its end; the CPU seconds it used
        (with the keepers it waited for), or None while it runs or when its end went unsaid."""
        self._learn(self.LONGEST_WAIT if timeout is None else timeout)
        return self.cpu

    def kill(self):
        if self.returncode is not None or self.pid is None:
            return
        try:
            if self.pidfd is not None:
                signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
            elif _still_there(self.pid):
                os.kill(self.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError, OSError):
            pass

    def _server_gone(self):
        """Is the server that forked it (the first) gone, so that none will say its end?"""
        with self.zygote.changed:
            return self.zygote.generation != 1 or not self.zygote.alive

    def _exited(self):
        """Has it exited, by what the kernel says (or, its pid never said, its server died)?"""
        if self.pid is None:
            return self._server_gone()
        if self.pidfd is not None:
            return bool(select.select([self.pidfd], [], [], 0)[0])
        return not _still_there(self.pid)

    def _learn(self, timeout):
        """Its end, if it has come within `timeout` s: returncode and cpu set."""
        deadline = time.monotonic() + timeout
        said = self.zygote.template_said
        while "template_exited" not in said and not self._exited():
            left = deadline - time.monotonic()
            if left <= 0:
                return
            with self.zygote.changed:
                self.zygote.changed.wait(min(left, 0.05))
        if "template_exited" not in said and not self._server_gone():
            with self.zygote.changed:  # it has exited: its server reaps it and says so at once
                self.zygote.changed.wait_for(
                    lambda: "template_exited" in said or not self.zygote.alive, 2)
        self.returncode, self.cpu = said.get("status", -signal.SIGKILL), said.get("cpu")
        if self.pidfd is not None:
            os.close(self.pidfd)
            self.pidfd = None


def _still_there(pid):
    """Is `pid` a process that has not exited (a zombie has)? (Where there is no pidfd.)"""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        return False


# -- the server side ------------------------------------------------------------------
FD_ENVIRONMENT = {"template": "ATTNKIT_WORKER_TEMPLATE_FD", "events": "ATTNKIT_EVENTS_FD",
                  "turn": turns.TURN_ENV}


def _child(args, report_fd, console_fd, cwd, memo_fd, named=None, carried=None):
    os.setsid()
    for name, value in (carried or {}).items():  # the level grade_batch checked
        if name in forkserver.CARRIED and isinstance(value, str):
            os.environ[name] = value
    for name, fd in (named or {}).items():  # the batch's current template, the events pipe
        if name in FD_ENVIRONMENT:
            os.environ[FD_ENVIRONMENT[name]] = str(fd)
    os.dup2(console_fd, 1)
    os.dup2(console_fd, 2)
    os.close(console_fd)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.chdir(cwd)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    import pytest  # in the child only: serve() preloaded it; the grader's side never imports it
    args = [a.replace("{report_fd}", str(report_fd)) for a in args]
    _begin_sandbox(args)
    try:
        code = pytest.main(args)
    except BaseException:
        code = 3
    try:
        from ..harness.implementations import discard_early  # in the child only: torch
        discard_early()
    except BaseException:
        pass
    sys.stdout.flush()
    sys.stderr.flush()
    try:  # what it computed that every submission needs, for the children forked after it
        from ..harness import memo  # in the child only: torch, preloaded by serve()
        with os.fdopen(memo_fd, "wb") as out:
            out.write(memo.export())
    except BaseException:
        pass
    os._exit(int(code))


# imported once the suite is prepared, while the batch's first submission is graded: what
# follow-through marking needs (autograd with given gradients imports torch's symbolic shapes,
# and sympy with them: 0.3 s in each trusted process that asks)
WARM = ("torch.fx.experimental.symbolic_shapes", "torch.nested._internal.nested_tensor")


def _begin_sandbox(args):
    """Before pytest starts: the submission's first sandbox set going (harness start_early),
    so that bwrap builds it while pytest configures itself and collects; the suite's
    Submission then finishes it. Anything unexpected: nothing begun, it starts as before."""
    try:
        parser = argparse.ArgumentParser(add_help=False)
        for name in ("--submission", "--stage-dir", "--isolation", "--limits"):
            parser.add_argument(name)
        parser.add_argument("--no-gpu", action="store_true")
        parser.add_argument("--collect-only", action="store_true")
        known, _rest = parser.parse_known_args(args)
        if not known.submission or not known.stage_dir or known.collect_only:
            return
        import torch  # in the child only: heavy, preloaded by serve()
        if torch.cuda.is_available() and not known.no_gpu:
            return  # GPU workers start fresh, in the suite's session
        from ..harness.implementations import start_early  # in the child only: torch
        declared = assignments.load_folder(args[0])
        os.chmod(known.stage_dir, 0o711)
        start_early(known.submission, isolation.choose(known.isolation or "auto"),
                    Limits(**json.loads(known.limits or "{}")), known.stage_dir,
                    assignment=declared)
    except Exception:  # noqa: BLE001 - an optimisation: the session starts its worker itself
        return


def _warm():
    try:
        for name in WARM:
            importlib.import_module(name)
        return {"warmed": True}
    except Exception as error:  # noqa: BLE001 - an optimisation, said and skipped
        return {"warmed": False, "error": f"{type(error).__name__}: {error}"[:500]}


def _freeze():
    """What this server holds now is left out of every garbage collection of the processes it
    forks (gc.freeze): a collection there would otherwise touch each object and copy every
    page of it (torch's and pytest's modules, the prepared suite) into the child. No
    collection first: after the imports it found nothing to free and cost 0.09 s, before the
    batch's first fork (its catalog) and again before the catalog's end was said."""
    gc.freeze()


def _prepare(what):
    """The suite prepared here once (grader/suite/warm.py); a failure is no failure of the
    batch: each trusted process then computes what it needs itself."""
    try:
        from ..suite import warm  # heavy (torch, the harness): in the server, after its preload
        return {"prepared": warm.prepare(what["hidden_tests"], what["solution"])}
    except Exception as error:  # noqa: BLE001 - an optimisation, said and skipped
        return {"prepared": None, "error": f"{type(error).__name__}: {error}"[:500]}


def _reap(children, template_pid, sock):
    """Reap the children that ended (`children`: their pids, the template's among them) and
    say how each ended; False when the grader has let go."""
    while children:
        try:
            pid, status, usage = os.wait4(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid == 0:
            break
        children.discard(pid)
        said = "template_exited" if pid == template_pid else "exited"
        try:
            sock.sendall(json.dumps({said: pid, "status": os.waitstatus_to_exitcode(status),
                                     "cpu": usage.ru_utime + usage.ru_stime}).encode() + b"\n")
        except OSError:
            return False
    return True


def serve(sock_fd, template_pid=None):
    """Serve the grader on `sock_fd` until it lets go. `template_pid`: the worker template
    forked beside this server (its child; its pid said already: template.py
    serve_beside_server): reaped here, its end said to the grader."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET, fileno=sock_fd)
    # before the preload: a template that ends meanwhile wakes the loop below
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    for name in PRELOAD:
        importlib.import_module(name)
    _freeze()
    from ..harness import memo  # heavy: torch, imported by the preload above first
    children = set() if template_pid is None else {template_pid}
    memos = {}  # read end of a child's memo pipe -> what it sent so far
    os.write(wake_w, b"\0")  # one look for a child that ended before the handler was set
    while True:
        ready, _, _ = select.select([sock, wake_r, *memos], [], [])
        if wake_r in ready:
            os.read(wake_r, 4096)
        for fd in [r for r in ready if r in memos]:
            chunk = os.read(fd, 1 << 20)
            if chunk and len(memos[fd]) + len(chunk) <= memo.MAX_EXPORT_BYTES:
                memos[fd] += chunk
            elif not chunk:  # the child is done: keep what it computed
                memo.absorb(bytes(memos.pop(fd)))
                os.close(fd)
        if not _reap(children, template_pid, sock):
            return  # the grader has let go

        if sock in ready:
            try:
                message, fds, _, _ = socket.recv_fds(sock, 1 << 20, 2 + len(FD_ENVIRONMENT))
            except OSError:
                return
            if not message:
                return  # the batch is over
            request = json.loads(message)
            if "prepare" in request:
                said = _prepare(request["prepare"])
                _freeze()
                sock.sendall(json.dumps(said).encode() + b"\n")
                continue
            if "warm" in request:
                said = _warm()
                _freeze()
                sock.sendall(json.dumps(said).encode() + b"\n")
                continue
            memo_r, memo_w = os.pipe()
            pid = os.fork()
            if pid == 0:
                sock.close()
                signal.set_wakeup_fd(-1)
                os.close(wake_r)
                os.close(wake_w)
                for fd in [memo_r, *memos]:
                    os.close(fd)
                names = [n for n in request.get("fds", []) if isinstance(n, str)]
                _child(request["args"], fds[0], fds[1], request["cwd"], memo_w,
                       dict(zip(names, fds[2:])), request.get("env"))
            os.close(memo_w)
            memos[memo_r] = bytearray()
            for fd in fds:
                os.close(fd)
            children.add(pid)
            sock.sendall(json.dumps({"pid": pid}).encode() + b"\n")


if __name__ == "__main__":
    # argv: the socket, and the pid of the template forked beside this server, if one was
    # (sandbox/template.py serve_beside_server)
    serve(int(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else None)
    # the batch is over: leave without the interpreter's teardown of torch and pytest (about
    # 0.15 s of the batch's wall time); nothing of this process is kept for after
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
