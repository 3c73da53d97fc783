"""The fork server's side of grade/zygote.py: its loop, and a trusted process's first and
last steps. Loaded only in the server (`python -m grader.grade.zygote`), which has torch and
pytest imported (PRELOAD); the grader's side never imports this module.

The server reads one request at a time from the grader's socket, a JSON line each:

    {"args", "cwd", "fds", "env"} with the report, console and named fds   -> {"pid": ...}
    {"prepare": {"hidden_tests", "solution"}}                                -> {"prepared": ...}
    {"warm": true}                                                           -> {"warmed": ...}

and says {"exited": pid, "status", "cpu"} for each trusted process that ends. A request to
grade a submission (held_key: its arguments with --submission) is passed to a held server,
a child that configured pytest and collected the hidden suite once for those arguments and
forks each trusted process from there (grade/held.py); any other (the batch's catalog, a
request whose session could not be held) is forked here and runs pytest from the start.
The two are one path: a held server's child gets its submission's arguments before any of
them is read, exactly as pytest would have given them (tests/test_held.py compares them).
"""
import argparse
import dataclasses
import gc
import importlib
import json
import os
import select
import signal
import socket
import sys

import pytest
import torch

from .. import assignment as assignments
from .. import forkserver
from ..harness import memo
from ..harness.implementations import discard_early, start_early
from ..sandbox import isolation
from ..sandbox.limits import Limits
from ..suite import warm as suite_warm
from . import turns

PRELOAD = ("torch", "pytest", "_pytest.python", "grader.harness", "grader.grade.plugin",
           "grader.suite.plugin", "grader.sandbox.client", "pytest_timeout")

# imported once the suite is prepared, while the batch's first submission is graded: what
# follow-through marking needs (autograd with given gradients imports torch's symbolic shapes,
# and sympy with them: 0.3 s in each trusted process that asks)
WARM = ("torch.fx.experimental.symbolic_shapes", "torch.nested._internal.nested_tensor")

FD_ENVIRONMENT = {"template": "ATTNKIT_WORKER_TEMPLATE_FD", "events": "ATTNKIT_EVENTS_FD",
                  "turn": turns.TURN_ENV}

# a submission's own arguments (what trusted.run_suite adds to the batch's): everything else
# is the same for every submission of a batch, and a held session is kept per the rest
PER_SUBMISSION = ("--submission", "--stage-dir", "--attnkit-report-fd")

# how long a held server may take to configure and collect before it is given up (the
# submission is then forked here, from the start)
HOLD_SECONDS = 120.0
# how long a held server may take to answer a request it was passed
PASS_SECONDS = 60.0


def held_key(request):
    """The arguments a held session is kept for: (the request's arguments less its own,
    PER_SUBMISSION, the environment it carries), or None when the request is no submission's
    run (the catalog: --collect-only) or is not as run_suite makes it (each of PER_SUBMISSION
    once, as an option and its value)."""
    args = request.get("args")
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        return None
    if "--collect-only" in args or any(a.split("=", 1)[0] in PER_SUBMISSION and "=" in a
                                       for a in args):
        return None
    base, seen = [], set()
    at = 0
    while at < len(args):
        if args[at] in PER_SUBMISSION:
            if args[at] in seen or at + 1 >= len(args):
                return None
            seen.add(args[at])
            at += 2
            continue
        base.append(args[at])
        at += 1
    if seen != set(PER_SUBMISSION):
        return None
    carried = request.get("env") or {}
    if not isinstance(carried, dict):
        return None
    return tuple(base), tuple(sorted((k, v) for k, v in carried.items()
                                     if k in forkserver.CARRIED and isinstance(v, str)))


def per_submission(args):
    """{option: value} of PER_SUBMISSION in `args` (a request's, held_key passed it)."""
    return {args[i]: args[i + 1] for i in range(len(args) - 1) if args[i] in PER_SUBMISSION}


@dataclasses.dataclass
class Forked:
    """What a process the server forked is to become (Server.serve returns it there): a
    trusted process for `request` (its `fds`: report, console, named; `memo_w`: where what it
    computed goes back), or, with `held` (a held_key), a held server on `sock`."""
    request: dict = None
    fds: list = dataclasses.field(default_factory=list)
    memo_w: int = None
    held: tuple = None
    sock: socket.socket = None


class HeldServerGone(Exception):
    """A held server died or stopped answering: this server ends (the grader starts another,
    and grades what was in flight as it does when a server dies)."""


@dataclasses.dataclass
class Held:
    """A held server, as the server that forked it knows it."""
    pid: int
    sock: socket.socket


class Server:
    """One fork server's loop on `sock`. `template_pid`: the worker template forked beside it
    (its child: reaped here, its end said). `in_session`: this is a held server, which forks
    each request from its session; else submissions' runs are passed to held servers."""

    def __init__(self, sock, template_pid=None, in_session=False):
        self.sock = sock
        self.template_pid = template_pid
        self.children = set() if template_pid is None else {template_pid}
        self.memos = {}  # read end of a child's memo pipe -> what it sent so far
        self.in_session = in_session
        self.held = {}   # held_key -> Held, or None where that session could not be held
        # before the preload: a child that ends meanwhile wakes the loop
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_w, False)
        signal.set_wakeup_fd(self.wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)

    def serve(self):
        """Until the grader lets go (None); in a process forked here, what it is to become."""
        os.write(self.wake_w, b"\0")  # one look for a child that ended before the handler
        while True:
            passed = {h.sock: h for h in self.held.values() if h is not None}
            ready, _, _ = select.select([self.sock, self.wake_r, *self.memos, *passed], [], [])
            if self.wake_r in ready:
                os.read(self.wake_r, 4096)
            self._keep_memos(ready)
            if not self._reap():
                return None
            if any(not self._relay(passed[r]) for r in ready if r in passed):
                return None  # a held server died: HeldServerGone
            if self.sock in ready:
                try:
                    message, fds, _, _ = socket.recv_fds(self.sock, 1 << 20,
                                                         2 + len(FD_ENVIRONMENT))
                except OSError:
                    return None
                if not message:
                    return None  # the batch is over
                try:
                    forked = self._answer(json.loads(message), message, fds)
                except HeldServerGone:
                    return None
                if forked is not None:
                    return forked

    def _answer(self, request, message, fds):
        passed = [held for held in self.held.values() if held is not None]
        if "warm" in request and passed:
            # the submissions still to come are forked from the held servers: the imports
            # are theirs (0.3 s), not this server's too; each says it warmed (_relay)
            for held in passed:
                _send(held.sock, message)
            return None
        if "prepare" in request or "warm" in request:
            said = prepare(request["prepare"]) if "prepare" in request else warm()
            freeze()
            self.sock.sendall(json.dumps(said).encode() + b"\n")
            for held in passed:  # a held server forked before it was prepared (a server
                _send(held.sock, message)  # started again) prepares too
            return None
        key = None if self.in_session else held_key(request)
        if key is not None and key not in self.held:
            forked = self._start_held(key, fds)
            if forked is not None:
                return forked
        if key is not None and self.held[key] is not None:
            if not self._pass(self.held[key], message, fds):
                raise HeldServerGone(key)
            return None
        return self._fork(request, fds)

    def _fork(self, request, fds):
        memo_r, memo_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(memo_r)
            self.leave()
            return Forked(request=request, fds=fds, memo_w=memo_w)
        os.close(memo_w)
        self.memos[memo_r] = bytearray()
        for fd in fds:
            os.close(fd)
        self.children.add(pid)
        start = "held" if self.in_session else "forked"  # trusted.TRUSTED_STARTS
        self.sock.sendall(json.dumps({"pid": pid, "start": start}).encode() + b"\n")
        return None

    def leave(self):
        """In a child: nothing of this server's stays open there."""
        self.sock.close()
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        os.close(self.wake_r)
        os.close(self.wake_w)
        for fd in self.memos:
            os.close(fd)
        for held in self.held.values():
            if held is not None:
                held.sock.close()

    def _start_held(self, key, fds):
        """A held server for `key`, once it says it holds its session (None kept when it
        cannot: a usage error, say, which the submission's own run then reports). Returns
        Forked in the held server. `fds`: the request's, which it must not hold (a report
        pipe held open there would never end)."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        pid = os.fork()
        if pid == 0:
            ours.close()
            for fd in fds:
                os.close(fd)
            self.leave()
            return Forked(held=key, sock=theirs)
        theirs.close()
        said = _next_message(ours, HOLD_SECONDS)
        if said is not None and said.get("holding"):
            self.held[key] = Held(pid, ours)
            return None
        _end(pid, ours)
        self.held[key] = None
        return None

    def _pass(self, held, message, fds):
        """Pass a spawn request to `held` and say the pid it answers; False when it did not."""
        try:
            socket.send_fds(held.sock, [message], fds)
        except OSError:
            return False
        finally:
            for fd in fds:
                os.close(fd)
        while True:
            said = _next_message(held.sock, PASS_SECONDS)
            if said is None:
                return False
            if "pid" in said or "exited" in said:
                self.sock.sendall(json.dumps(said).encode() + b"\n")
            if "pid" in said:
                return True

    def _relay(self, held):
        """What `held` said between requests: its children's ends and its warm-up, for the
        grader. False when it is gone."""
        said = _next_message(held.sock, 0)
        if said is None:
            return False
        if "exited" in said or "warmed" in said:
            self.sock.sendall(json.dumps(said).encode() + b"\n")
        return True

    def stop_held(self):
        """The held servers let go and reaped (their CPU, and their children's, is then this
        server's): they end on EOF."""
        for held in self.held.values():
            if held is not None:
                _end(held.pid, held.sock, grace=10)

    def _keep_memos(self, ready):
        for fd in [r for r in ready if r in self.memos]:
            chunk = os.read(fd, 1 << 20)
            if chunk and len(self.memos[fd]) + len(chunk) <= memo.MAX_EXPORT_BYTES:
                self.memos[fd] += chunk
            elif not chunk:  # the child is done: keep what it computed
                memo.absorb(bytes(self.memos.pop(fd)))
                os.close(fd)

    def _reap(self):
        """Reap the children that ended and say how each ended; False when the grader has
        let go, or a held server died."""
        held_pids = {h.pid for h in self.held.values() if h is not None}
        while self.children or held_pids:
            try:
                pid, status, usage = os.wait4(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            if pid in held_pids:
                return False
            self.children.discard(pid)
            said = "template_exited" if pid == self.template_pid else "exited"
            try:
                self.sock.sendall(json.dumps({said: pid,
                                              "status": os.waitstatus_to_exitcode(status),
                                              "cpu": usage.ru_utime + usage.ru_stime}
                                             ).encode() + b"\n")
            except OSError:
                return False
        return True


def _send(sock, message):
    try:
        sock.sendall(message)
    except OSError:
        pass


def _next_message(sock, timeout):
    """The next JSON message on `sock` within `timeout` s, or None (EOF, nothing, not JSON)."""
    if not select.select([sock], [], [], timeout)[0]:
        return None
    try:
        data = sock.recv(1 << 16)
        return json.loads(data) if data else None
    except (OSError, ValueError):
        return None


def _end(pid, sock, grace=0.0):
    """Let a held server go: EOF on its socket, and reaped; killed first when it has not
    ended within `grace` s."""
    sock.close()
    if not _ends_within(pid, grace):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass


def _ends_within(pid, seconds):
    """Does child `pid` end (or has it ended) within `seconds`?"""
    try:
        fd = os.pidfd_open(pid)
    except OSError:
        return True  # reaped already
    try:
        return bool(select.select([fd], [], [], seconds)[0])
    finally:
        os.close(fd)


# -- a trusted process: its first and its last steps -----------------------------------
def become_trusted(forked):
    """This process, forked from a server, made the trusted process `forked` asks for: a
    session of its own, the environment it carries, its console, its folder; the
    submission's sandbox begun (begin_sandbox). Returns its pytest arguments."""
    request, fds = forked.request, forked.fds
    report_fd, console_fd = fds[0], fds[1]
    names = [n for n in request.get("fds", []) if isinstance(n, str)]
    os.setsid()
    for name, value in (request.get("env") or {}).items():  # the level grade_batch checked
        if name in forkserver.CARRIED and isinstance(value, str):
            os.environ[name] = value
    for name, fd in zip(names, fds[2:]):  # the batch's current template, the events pipe
        if name in FD_ENVIRONMENT:
            os.environ[FD_ENVIRONMENT[name]] = str(fd)
    os.dup2(console_fd, 1)
    os.dup2(console_fd, 2)
    os.close(console_fd)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.chdir(request["cwd"])
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    args = [a.replace("{report_fd}", str(report_fd)) for a in request["args"]]
    begin_sandbox(args)
    return args


def run_trusted(forked):
    """A trusted process forked before pytest started: pytest from the start. Never returns."""
    args = become_trusted(forked)
    try:
        code = pytest.main(args)
    except BaseException:
        code = 3
    finish_trusted(code, forked.memo_w)


def finish_trusted(code, memo_w):
    """A trusted process's last step: a sandbox begun and never taken stopped, its output
    flushed, what it computed that every submission needs sent back to the server that
    forked it (harness/memo.py). Never returns."""
    try:
        discard_early()
    except BaseException:
        pass
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        with os.fdopen(memo_w, "wb") as out:
            out.write(memo.export())
    except BaseException:
        pass
    os._exit(int(code))


def begin_sandbox(args):
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
        if torch.cuda.is_available() and not known.no_gpu:
            return  # GPU workers start fresh, in the suite's session
        declared = assignments.load_folder(args[0])
        os.chmod(known.stage_dir, 0o711)
        start_early(known.submission, isolation.choose(known.isolation or "auto"),
                    Limits(**json.loads(known.limits or "{}")), known.stage_dir,
                    assignment=declared)
    except Exception:  # noqa: BLE001 - an optimisation: the session starts its worker itself
        return


# -- what the server computes once for the batch --------------------------------------
def warm():
    try:
        for name in WARM:
            importlib.import_module(name)
        return {"warmed": True}
    except Exception as error:  # noqa: BLE001 - an optimisation, said and skipped
        return {"warmed": False, "error": f"{type(error).__name__}: {error}"[:500]}


def freeze():
    """What this server holds now is left out of every garbage collection of the processes it
    forks (gc.freeze): a collection there would otherwise touch each object and copy every
    page of it (torch's and pytest's modules, the prepared suite) into the child. No
    collection first: after the imports it found nothing to free and cost 0.09 s, before the
    batch's first fork (its catalog) and again before the catalog's end was said."""
    gc.freeze()


def prepare(what):
    """The suite prepared here once (grader/suite/warm.py); a failure is no failure of the
    batch: each trusted process then computes what it needs itself."""
    try:
        return {"prepared": suite_warm.prepare(what["hidden_tests"], what["solution"])}
    except Exception as error:  # noqa: BLE001 - an optimisation, said and skipped
        return {"prepared": None, "error": f"{type(error).__name__}: {error}"[:500]}


def serve(sock_fd, template_pid=None):
    """Serve the grader on `sock_fd` until it lets go; returns, in a process forked here,
    what it is to become (Forked). `template_pid`: the worker template forked beside this
    server (its child; its pid said already: template.py serve_beside_server)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET, fileno=sock_fd)
    server = Server(sock, template_pid)
    for name in PRELOAD:
        importlib.import_module(name)
    freeze()
    forked = server.serve()
    if forked is None:
        server.stop_held()
    return forked
