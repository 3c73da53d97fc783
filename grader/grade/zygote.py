"""A fork server for the trusted grading processes.

Importing torch and pytest costs about two seconds; a batch pays it once. The zygote is a
trusted process that imports them and then waits. For each submission `grader grade` sends
it, over a Unix socket, the pytest arguments and two file descriptors (the private report
pipe and the console pipe); the zygote forks a child that runs the hidden suite with them
and reports the child's exit status when it ends: a submission's child from a held server,
which configured pytest and collected the suite once for the batch (held.py). The zygote
never runs student code: the child starts the submission's worker exactly as a fresh
process would (grader/sandbox). Its side of the socket is serving.py.

    server = Zygote(env)              # python -m grader.grade.zygote, in its own process
    pid = server.spawn(args, report_fd, console_fd, cwd)
    status = server.wait(pid, timeout)
"""
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time

from .. import forkserver
from ..sandbox import template
from ..sandbox.template import wait_cpu


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
        self.starts = {}     # pid -> how it started: "held" or "forked" (trusted.TRUSTED_STARTS)
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
        (named in its environment: serving.become_trusted)."""
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
                reply = self.replies.pop(0)
                pid = reply["pid"]
                self.children[pid] = self.generation
                self.starts[pid] = "held" if reply.get("start") == "held" else "forked"
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


if __name__ == "__main__":
    # argv: the socket, and the pid of the template forked beside this server, if one was
    # (sandbox/template.py serve_beside_server). The server's side (torch, pytest) is loaded
    # here only: the grader's side of this module never imports it.
    from grader.grade import held, serving
    FORKED = serving.serve(int(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else None)
    if FORKED is not None and FORKED.held is not None:
        held.hold(FORKED)        # a held server (never returns)
    elif FORKED is not None:
        serving.run_trusted(FORKED)  # a trusted process forked before pytest (never returns)
    # the batch is over: leave without the interpreter's teardown of torch and pytest (about
    # 0.15 s of the batch's wall time); nothing of this process is kept for after
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
