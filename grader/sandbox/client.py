"""The trusted side of a worker: start it, talk to it, watch it, and clean up after it.

    worker = Worker(submission_file, isolation, limits, stage_dir, assignment=assignment)
    worker.start()                                   # spawns Python + torch, under the sandbox
    worker.wait_ready()                              # optional: the first request waits too
    reply = worker.request({"op": "load", ...}, timeout=limits.import_seconds)
    reply = worker.request({"op": "probe", "probe": {...}}, timeout=limits.call_seconds)
    worker.stop()                                    # kills every process it left behind

`request` raises a WorkerFailure (timeout, crash, memory, garbled reply) with a reason a
student can read; after one, the worker is gone and a new Worker must be started.

The worker imports the submission under the assignment's module name (its declaration's
`module`), and the modules of the earlier assignments it builds on are importable by theirs
(stage.py: the student's own files, or the earlier solutions declared `given`).

Its helpers, one concern each: stage.py (the worker's folder: the submission, its runtime),
procfs.py (what /proc says about its processes), ipc.py (System V IPC and /dev/shm it left
at level `none`), cleanup.py (files it left in the shared folders), template.py (forking it).
"""
import ctypes
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import threading
import time

from . import cgroups as cgroups_mod
from . import cleanup
from . import ipc
from . import procfs
from . import isolation as isolation_mod
from . import replies
from . import stage
from . import template as template_mod
from .. import assignment as assignment_mod
from ..i18n import _
from ..textsafety import safe_text
from .runtime import protocol

RUNTIME_DIR = stage.RUNTIME_DIR
PR_SET_CHILD_SUBREAPER = 36
PR_SET_DUMPABLE = 4
_LIVE_WORKERS = set()  # pids of workers started by this process and not yet stopped
EVENTS_FD = "ATTNKIT_EVENTS_FD"  # a pipe to `grader grade`: b"+UID:GID;" a worker started, b"-UID:GID;" it stopped


def _event(mark):
    """Tell `grader grade` that a worker of this submission runs (+) or has stopped (-): the
    evidence it needs when this trusted process dies (grade/trusted.py). A worker never holds
    this pipe, and cannot open it (this process is not dumpable)."""
    value = os.environ.get(EVENTS_FD, "")
    if value.isdigit():
        try:
            os.write(int(value), mark)
        except OSError:
            pass


def none_running():
    """No worker (nor sandbox placeholder) this process started is left unstopped."""
    return not _LIVE_WORKERS


class WorkerFailure(Exception):
    """The submission's process failed in a way that costs the call that was running."""

    def __init__(self, reason, kind):
        super().__init__(reason)
        self.reason = reason
        self.kind = kind  # 'timeout' | 'memory' | 'crash' | 'protocol' | 'start'


def become_subreaper():
    """Make this process adopt orphaned descendants (a submission's daemonised children)
    and refuse ptrace or /proc/PID/mem from same-uid processes."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    except (OSError, AttributeError):
        pass


class _CappedReader(threading.Thread):
    """Reads a pipe to its end, keeping only the first `limit` bytes. Output a probe asked
    ahead printed and held back (runtime/worker.py) joins it with feed(), after everything
    the pipe holds by then: every read is made under one lock, so nothing overtakes."""

    def __init__(self, stream, limit):
        super().__init__(daemon=True)
        self.stream, self.limit = stream, limit
        self.kept, self.total = bytearray(), 0
        self.lock = threading.Lock()
        self.done = False
        self.fd = stream.fileno()
        os.set_blocking(self.fd, False)

    def run(self):
        while not self.done:
            try:
                select.select([self.fd], [], [])
            except (OSError, ValueError):
                break
            with self.lock:
                self._drain()

    def _drain(self):
        """Keep what the pipe holds now (the lock held); done at its end."""
        while not self.done:
            try:
                chunk = os.read(self.fd, 65536)
            except BlockingIOError:
                return
            except (OSError, ValueError):
                chunk = b""
            if not chunk:
                self.done = True
                return
            self._keep(chunk, len(chunk))

    def _keep(self, chunk, size):
        self.total += size
        room = self.limit - len(self.kept)
        if room > 0:
            self.kept += chunk[:room]

    def feed(self, data, size):
        """`size` bytes printed elsewhere, of which `data` is the start, as if they came now."""
        with self.lock:
            self._drain()
            self._keep(data, size)

    def text(self):
        return capped_text(self.kept, self.total)


def capped_text(kept, total):
    """What was kept of `total` bytes printed, as text, with a note of what was not kept."""
    text = safe_text(bytes(kept).decode("utf-8", "replace"))
    if total > len(kept):
        text += f"\n[... {total - len(kept)} more bytes not kept]"
    return text


class Worker:
    imports = None  # stage.Imports: the module names it imports, resolved when it starts
    exchanges = 0       # round trips: each time the trusted side waits for frames it asked for
    _awaiting = False   # frames were sent since the last one came back
    cpu = None          # CPU seconds the worker used, as its keeper said (a forked worker)

    def __init__(self, submission_file, isolation, limits, stage_dir, gpu=False, use_cgroups=True,
                 assignment=None):
        self.submission_file = submission_file
        # the declared assignment (grader/assignment.py) whose module the submission is
        self.assignment = assignment if assignment is not None else assignment_mod.load()
        self.use_cgroups = use_cgroups  # False: the PSS watchdog alone (as where no cgroups exist)
        self.isolation = isolation.fresh()
        self.limits = limits
        self.gpu = gpu
        self.stage_dir = stage_dir
        self.proc = None
        self.info = {}
        self.failure = None
        self._watchdog_over = False
        self._running = False        # started and not yet stopped (said on the events pipe)
        self._disk_over = None       # (bytes, entries) when stopped for what it wrote at level `none`
        self.removed = (0, 0)        # (entries, bytes) it left in the shared folders, removed
        self._tree_size = 1
        self._stop_watch = threading.Event()
        self.cgroups = None          # cgroups.WorkerCgroups while the worker runs in its own
        self._cgroup_killed = False  # the cgroup's counters said memory, read before removal
        self._seen_pids = set()      # the worker's process tree as it ran (level `none` IPC cleanup)
        self._holder = None          # a forked worker's sandbox placeholder (subprocess.Popen)
        self.started = None          # "forked" from the template, or "fresh"
        self.fresh_because = None    # why a template did not start it, when one failed

    @property
    def _over_memory(self):
        """Was the worker stopped for memory: by the watchdog, or by the kernel at the
        cgroup's limit (read from the cgroup's own counters)?"""
        if self._watchdog_over or self._cgroup_killed:
            return True
        return self.cgroups is not None and self.cgroups.memory_killed()

    @_over_memory.setter
    def _over_memory(self, value):
        self._watchdog_over = value

    # -- starting -------------------------------------------------------------------
    @property
    def module(self):
        """The name the worker imports the submission under."""
        return self.assignment.module

    def start(self):
        self.begin()
        self.finish()

    def begin(self):
        """The first half of start(): the worker's folder, uid, cgroups and, at the namespace
        levels, its sandbox's placeholder set going, not waited for (bwrap builds the sandbox
        while the trusted process does other work: harness/implementations.py start_early)."""
        try:
            self.imports = stage.imports_of(self.assignment)
            given = stage.given_files(self.imports)
            if os.path.basename(self.submission_file) in given:  # it would replace the work
                raise ValueError(f"the submission's file is named "
                                 f"{os.path.basename(self.submission_file)}, as the given earlier "
                                 f"module is: it must be staged as {self.imports.module}.py")
        except ValueError as exc:  # the declaration's builds_on (AssignmentError is one)
            raise WorkerFailure(f"the grader could not start a worker: {exc}", "start") from None
        become_subreaper()
        runtime = stage.stage_runtime(self.stage_dir)
        home = os.path.join(self.stage_dir, f"w{os.getpid()}-{time.monotonic_ns()}")
        self.view = isolation_mod.View(home, runtime, isolation_mod.python_paths(),
                                       disk_mb=self.limits.disk_mb, gpu=self.gpu)
        stage.copy_submission_folder(self.submission_file, self.view.work_dir,
                                     max_bytes=min(self.limits.disk_mb, 64) * 2**20)
        stage.stage_given(given, self.view.work_dir)
        isolation_mod.prepare_home(self.view, self.isolation)
        work, runtime_inside = self.isolation.paths(self.view)
        processes_base = 0 if self.isolation.uid is not None else procfs.process_count(os.getuid())
        rlimits = self.limits.rlimits(gpu=self.gpu, processes_base=processes_base)
        self.rlimits = rlimits  # what the worker applies to itself, whichever way it starts
        if self.use_cgroups and self.isolation.uses_cgroups():
            self.cgroups = cgroups_mod.WorkerCgroups.create(self.limits.memory_mb * 2**20,
                                                            self.limits.cgroup_pids())
        prefix = self.cgroups.join_prefix() if self.cgroups is not None else ()
        self._ipc_before = ipc.snapshot() if not self.isolation.kind.namespaces else None
        self._started_at = time.time()
        worker_py = os.path.join(runtime_inside, "worker.py")
        submission = os.path.join(work, os.path.basename(self.submission_file))
        env = {"PATH": "/usr/bin:/bin", "HOME": work, "LANG": "C.UTF-8", "OMP_NUM_THREADS": "1"}
        if not self.isolation.kind.namespaces:  # a private TMPDIR (namespaces give a private /tmp)
            env.update(TMPDIR=self.view.tmp_dir, TMP=self.view.tmp_dir, TEMP=self.view.tmp_dir)
        self._plan = (worker_py, rlimits, submission, env, prefix)
        self._template = None if self.gpu else template_mod.current()
        if self._template is not None:
            try:
                self._begin_forked(env, prefix)
            except template_mod.TemplateGone as gone:
                self._gone(gone)

    def _gone(self, gone):
        self.fresh_because = str(gone)[:300]  # said in results.json (limited_by)
        template_mod.give_up()  # this process's next workers start fresh at once
        self._stop_holder()
        self._template = None

    def finish(self):
        """The second half of start(): the worker itself, forked into the sandbox begin() set
        going (or started fresh), its output read, its memory watched."""
        worker_py, rlimits, submission, env, prefix = self._plan
        if self._template is not None:
            # the template as it is now: one given at this submission's turn (grade/turns.py)
            # may have replaced the one begin() saw
            self._template = template_mod.current()
            if self._template is None:
                self._stop_holder()
        if self._template is not None:
            try:
                self._start_forked(self._template, worker_py, rlimits, submission, env, prefix)
            except template_mod.TemplateGone as gone:
                self._gone(gone)
        if self.proc is None:
            self._start_fresh(worker_py, rlimits, submission, env, prefix)
        self.stdout = _CappedReader(self.proc.stdout, self.limits.output_kb * 1024)
        self.stderr = _CappedReader(self.proc.stderr, self.limits.output_kb * 1024)
        self.stdout.start()
        self.stderr.start()
        self._seen_pids.add(getattr(self.proc, "worker_pid", self.proc.pid))
        self._running = True
        _event(b"+" + self._ids_mark())
        self._watch = threading.Thread(target=self._watch_memory, daemon=True)
        self._watch.start()

    def _start_fresh(self, worker_py, rlimits, submission, env, prefix):
        """A new Python under the sandbox: it imports torch itself (about two seconds)."""
        read_fd, write_fd = os.pipe()
        argv = [sys.executable, "-I", worker_py, str(write_fd), json.dumps(rlimits), submission,
                json.dumps(self.isolation.ids()), self.imports.module]
        try:
            self.proc = subprocess.Popen(
                self.isolation.wrap(argv, self.view, prefix), cwd=self.view.work_dir, env=env,
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                pass_fds=(write_fd,), start_new_session=True, **self.isolation.popen_user())
        except OSError as exc:
            os.close(read_fd)
            os.close(write_fd)
            self._release()
            raise WorkerFailure(f"the grader could not start a worker: {exc}", "start") from None
        os.close(write_fd)
        _LIVE_WORKERS.add(self.proc.pid)
        self.reply_fd = read_fd
        self.started = "fresh"

    def _begin_forked(self, env, prefix):
        """At the namespace levels: the sandbox around a placeholder (the same command line as
        a fresh worker's, with a shell that waits for Python), started, not waited for."""
        if self.isolation.kind.namespaces:
            # says its pid, then waits for its stdin to close: should the trusted process die
            # without stopping it, the placeholder ends, and its PID namespace with it
            placeholder = ["/bin/sh", "-c", 'echo "$$" && read _ ; exit 0']
            try:
                self._holder = subprocess.Popen(
                    self.isolation.wrap(placeholder, self.view, prefix), cwd=self.view.work_dir,
                    env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE, start_new_session=True, **self.isolation.popen_user())
            except OSError as exc:
                raise template_mod.TemplateGone(f"no placeholder: {exc}") from None
            _LIVE_WORKERS.add(self._holder.pid)

    def _start_forked(self, template, worker_py, rlimits, submission, env, prefix):
        """A worker forked from the template (template.py) inside the sandbox _begin_forked
        started. Raises template.TemplateGone when that cannot be done: the worker then starts
        fresh."""
        namespaces, ns_fds = [], []
        if self.isolation.kind.namespaces:
            inner = _first_line(self._holder.stdout, self.limits.startup_seconds)
            host_pid = procfs.host_pid(self._holder.pid, inner) if inner.isdigit() else None
            if host_pid is None:
                raise template_mod.TemplateGone("the placeholder did not start")
            try:
                namespaces, ns_fds = procfs.namespace_fds(host_pid, template_mod.NAMESPACES)
            except OSError as exc:
                raise template_mod.TemplateGone(f"cannot open the sandbox's namespaces: {exc}") from None
        pipes = [os.pipe() for _ in range(4)]  # requests, stdout, stderr, replies
        child_ends = [pipes[0][0], pipes[1][1], pipes[2][1], pipes[3][1]]
        plan = {**self.isolation.ids(),
                "cgroups": self.cgroups.procs_files() if self.cgroups is not None else [],
                "namespaces": namespaces, "cwd": self.isolation.paths(self.view)[0],
                "env": env, "argv0": worker_py, "limits": rlimits, "submission": submission,
                "module": self.imports.module}
        try:
            status, keeper, worker_pid = template.spawn(plan, child_ends + ns_fds,
                                                        timeout=self.limits.startup_seconds)
        except template_mod.TemplateGone:
            for fd in [pipes[0][1], pipes[1][0], pipes[2][0], pipes[3][0]]:
                os.close(fd)
            raise
        finally:
            for fd in child_ends + ns_fds:
                os.close(fd)
        self.proc = template_mod.ForkedProcess(
            status, keeper, worker_pid, stdin=os.fdopen(pipes[0][1], "wb"),
            stdout=os.fdopen(pipes[1][0], "rb"), stderr=os.fdopen(pipes[2][0], "rb"))
        self.reply_fd = pipes[3][0]
        self.started = "forked"

    def limited_by(self):
        """What limited this worker's memory and processes (for its summary)."""
        memory, pids = self.cgroups.describe() if self.cgroups is not None else (None, None)
        return {"memory_limit": memory or "watchdog (PSS)", "pids_limit": pids or "RLIMIT_NPROC",
                "worker_start": WORKER_STARTS.get(self.started, "fresh process") + (
                    f" ({self.fresh_because})" if self.fresh_because else "")}

    def _processes(self):
        """The processes whose descendants are the worker's: itself (a forked worker's
        keeper) and a forked worker's sandbox placeholder."""
        return [p for p in (self.proc, self._holder) if p is not None]

    def _roots(self):
        return [p.pid for p in self._processes()]

    def wait_ready(self):
        """Wait for the worker's hello (Python and torch imported, limits applied)."""
        if not self.info:
            self.exchanges += 1  # the worker speaks first: its hello is one exchange
            self._awaiting = True
            self.info = self._receive(self.limits.startup_seconds, "starting Python and torch",
                                      kind="hello")
        return self.info

    # -- talking --------------------------------------------------------------------
    def request(self, message, timeout, doing=None, reference_numel=None, answer=None):
        """Send one request and wait for its reply, checked against the schema of its kind
        (replies.py); `doing` names it in failure reasons; `reference_numel`: the largest
        tensor the reference returned for the same probe, which bounds the reply's tensors.

        `answer` (an answered probe, runtime/answers.py): the trusted side's answerer
        (harness/answering.py). Until the reply comes, each frame that is an ask (checked
        against replies.ASK) is answered on the request channel; all of it within `timeout`.
        Without `answer`, an ask is no reply: the call fails as a refused reply."""
        deadline = time.monotonic() + timeout
        self.send(message, timeout, doing)
        kind = replies.kind_of(message)
        if answer is None:
            return self._receive(max(deadline - time.monotonic(), 0.001), doing, kind,
                                 reference_numel, said=timeout)
        while True:
            left = deadline - time.monotonic()
            frame = self._receive(max(left, 0.001), doing, kind, reference_numel, asks=True,
                                  said=timeout)
            if "ask" not in frame:
                return frame
            self.send(answer(frame), max(deadline - time.monotonic(), 0.001), doing, timeout)

    def send(self, message, timeout=None, doing=None, said=None):
        """Send a request; its replies are read with receive() (a `probes` request: one
        reply per probe, each within its own time limit). A worker that does not read it
        all within `timeout` (default: the per-call limit) fails as a call that took too
        long: the trusted side never waits on a worker with no bound."""
        if self.proc is None or self.failure is not None:
            raise WorkerFailure(_("the worker is not running"), "crash")
        self.wait_ready()
        if not self._awaiting:  # the last frame came from the worker: a new exchange
            self.exchanges += 1
            self._awaiting = True
        timeout = self.limits.call_seconds if timeout is None else timeout
        try:
            protocol.write_frame(self.proc.stdin.fileno(), message,
                                 deadline=time.monotonic() + timeout)
        except protocol.FrameTimeout:
            raise self._too_slow(doing, said or timeout) from None
        except OSError:
            raise self._failed(self._death_reason(_("while receiving a request")), "crash") from None

    def receive(self, timeout, doing=None, kind="probe", reference_numel=None):
        """The next reply to what send() sent, checked like request()'s."""
        return self._receive(timeout, doing, kind, reference_numel)

    def _receive(self, timeout, doing, kind="other", reference_numel=None, asks=False,
                 said=None):
        """The next reply, read, decoded and checked within `timeout` seconds in all (`said`:
        the call's whole limit, as a failure names it; `asks`: an ask may come instead)."""
        deadline = time.monotonic() + timeout
        try:
            payload = protocol.read_payload(self.reply_fd, timeout=timeout,
                                            max_bytes=replies.MAX_FRAME_BYTES)
            self._awaiting = False
            reply = replies.read(payload, kind, reference_numel, deadline, asks=asks)
            if time.monotonic() > deadline:
                raise replies.ReplyTooSlow("reading its reply took the rest of the time limit")
        except (protocol.FrameTimeout, replies.ReplyTooSlow):
            raise self._too_slow(doing, said or timeout) from None
        except protocol.ProtocolError as exc:
            if self._disk_over:
                raise self._failed(self._disk_reason(), "disk") from None
            if self._over_memory:
                raise self._failed(self._memory_reason(), "memory") from None
            if not isinstance(exc, replies.ReplyRefused) and "closed" in str(exc):
                raise self._failed(self._death_reason(doing and _("while {doing}").format(doing=doing)),
                                   "crash") from None
            raise self._failed(_("the submission's process sent a reply the grader refuses to "
                                 "read: {reason}").format(reason=safe_text(exc, 600)),
                               "protocol") from None
        if not self.isolation.kind.namespaces and self._over_disk():  # a burst between two looks
            self._kill_tree()
            raise self._failed(self._disk_reason(), "disk")
        return reply

    def _over_disk(self):
        """Measure what it wrote (level `none`); True, and remembered, when past its limits."""
        most_bytes, most_files = self.disk_limits()
        groups = self.cgroups  # read once: _release() may clear it meanwhile
        charged = groups is not None and "memory" in groups.folders
        size, entries = cleanup.usage(self.isolation.ids(), self.view.home,
                                      cleanup.ON_DISK if charged else cleanup.SHARED)
        if size > most_bytes or entries > most_files:
            self._disk_over = (size, entries)
        return self._disk_over is not None

    def _too_slow(self, doing, seconds):
        """The failure of a call not done within `seconds`: past a limit of the disk or of
        memory where that is what stopped it, else a timeout."""
        if self._disk_over:
            return self._failed(self._disk_reason(), "disk")
        if self._over_memory:
            return self._failed(self._memory_reason(), "memory")
        return self._failed(_("{doing} did not finish within {seconds} s (an endless loop, or "
                              "far too slow)").format(doing=doing or _("the call"),
                                                      seconds=f"{seconds:g}"), "timeout")

    def _failed(self, reason, kind):
        self.failure = WorkerFailure(reason, kind)
        self.stop()
        return self.failure

    def _death_reason(self, when=None):
        try:
            code = self.proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            code = None
        when = f" {when}" if when else ""
        if self._disk_over:
            return self._disk_reason()
        if code is None:
            return _("the submission's process closed its channel{when}").format(when=when)
        if code < 0:
            name = signal.Signals(-code).name if -code in signal.Signals._value2member_map_ else -code
            if self._over_memory:
                return self._memory_reason()
            if -code == signal.SIGXCPU:
                return _("the process used more than {seconds} s of CPU time{when}").format(
                    seconds=self.limits.cpu_seconds, when=when)
            if -code == signal.SIGXFSZ:
                return _("the process tried to write a file larger than {mb} MB{when} "
                         "(SIGXFSZ)").format(mb=self.limits.file_size_mb, when=when)
            return _("the process was killed by signal {signal}{when}").format(signal=name, when=when)
        return _("the process exited with status {code}{when} (os._exit() or sys.exit() in the "
                 "submission, or a crash)").format(code=code, when=when)

    def disk_limits(self):
        """(bytes, entries) a worker at level `none` may hold in its private folder and the
        shared folders: its /submission and /tmp at the namespace levels, and MAX_FILES."""
        return 2 * self.limits.disk_mb * 2**20, cleanup.MAX_FILES

    def _disk_reason(self):
        size, entries = self._disk_over
        most_bytes, most_files = self.disk_limits()
        return _("the process wrote more than its folders may hold ({mb} MB and {files} files; "
                 "it had {used_mb:.0f} MB in {used_files} files and folders) and was stopped").format(
                     mb=most_bytes // 2**20, files=most_files, used_mb=size / 2**20,
                     used_files=entries)

    def _memory_reason(self):
        if not self._watchdog_over:
            return _("the process used more than {mb} MB of memory and was stopped (counted by "
                     "the kernel: shared memory and in-memory files included)").format(
                         mb=self.limits.memory_mb)
        if self._tree_size > 1:
            return _("the process (with the {count} processes it started) used more than {mb} MB "
                     "of memory and was stopped").format(count=self._tree_size - 1,
                                                         mb=self.limits.memory_mb)
        return _("the process used more than {mb} MB of memory and was stopped").format(
            mb=self.limits.memory_mb)

    def _watch_memory(self):
        """Without a memory cgroup: the watchdog, summing the PSS of the worker's processes
        (copy-on-write pages of a fork counted once). At level `none`: also the record of
        the worker's process tree, whose System V objects are removed at the end."""
        limit_kb = self.limits.memory_mb * 1024
        watchdog = self.cgroups is None or "memory" not in self.cgroups.folders
        record = not self.isolation.kind.namespaces
        if not (watchdog or record):
            return
        rounds = 0
        while not self._stop_watch.wait(0.1):
            if self.proc is None or self.proc.poll() is not None:
                return
            rounds += 1
            if record and rounds % 5 == 0 and self._over_disk():  # twice a second
                self._kill_tree()
                return
            table = procfs.proc_table()
            roots = self._roots()
            tree = set(roots)
            for root in roots:
                tree |= procfs.descendants(root, table, self.isolation.uid)
            if self.cgroups is not None:
                tree |= self.cgroups.pids()
            if record:
                self._seen_pids |= tree
            if watchdog and sum(procfs.pss_kb(pid, table[pid][2]) for pid in tree if pid in table) > limit_kb:
                self._tree_size = len(tree)
                self._over_memory = True
                self._kill_tree()
                return

    # -- stopping -------------------------------------------------------------------
    def feed_held(self, held):
        """Output a probe asked ahead printed and held back ([out, bytes printed, err, bytes
        printed], replies.py "held"), counted now, as if printed now."""
        self.stdout.feed(held[0], held[1])
        self.stderr.feed(held[2], held[3])

    def output(self):
        """What the submission printed: (stdout, stderr), capped."""
        if self.proc is None:
            return "", ""
        return self.stdout.text(), self.stderr.text()

    def stop(self, goodbye=True):
        """End the worker and every process it started; safe to call more than once.
        `goodbye`: ask it to exit first (False: it is busy with work no one will read)."""
        if self.proc is None:  # never started, or only begun
            self._stop_holder()
            if getattr(self, "view", None) is not None:
                shutil.rmtree(self.view.home, ignore_errors=True)
            self._release()
            return
        self._stop_watch.set()
        if not goodbye and isinstance(self.proc, template_mod.ForkedProcess):
            try:  # the worker alone first: its keeper then says what it cost
                os.kill(self.proc.worker_pid, signal.SIGKILL)
                self.proc.wait(timeout=1)
            except (OSError, subprocess.TimeoutExpired):
                pass
        if goodbye and self.proc.poll() is None and self.failure is None:
            try:
                protocol.write_frame(self.proc.stdin.fileno(), {"op": "bye"},
                                     deadline=time.monotonic() + 1)
                self.proc.wait(timeout=1)
            except (OSError, protocol.ProtocolError, subprocess.TimeoutExpired):
                pass
        self._kill_tree()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        _LIVE_WORKERS.discard(self.proc.pid)
        for stream in (self.proc.stdin,):
            try:
                stream.close()
            except OSError:
                pass
        self.stdout.join(timeout=2)
        self.stderr.join(timeout=2)
        if isinstance(self.proc, template_mod.ForkedProcess):
            self.cpu = self.proc.cpu
            self.proc.close()
        self._stop_holder()
        try:
            os.close(self.reply_fd)
        except OSError:
            pass
        self.reply_fd = -1
        shutil.rmtree(self.view.home, ignore_errors=True)
        if not self.isolation.kind.namespaces and self._ipc_before is not None:
            ipc.remove(self.isolation.uid, self._seen_pids, self._ipc_before, self._started_at,
                        self.isolation.gid)
            self._ipc_before = None
            self.removed = cleanup.remove(self.isolation.ids())  # /tmp, /var/tmp, /dev/shm
        self._release()
        if self._running:
            self._running = False
            _event(b"-" + self._ids_mark())

    def _ids_mark(self):
        ids = self.isolation.ids()
        return f"{ids['uid'] if ids['uid'] is not None else ''}:{ids['gid'] if ids['gid'] is not None else ''};".encode()

    def _stop_holder(self):
        """Kill a forked worker's sandbox placeholder (and the namespaces with it)."""
        holder, self._holder = self._holder, None
        if holder is None:
            return
        try:
            os.killpg(holder.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            holder.kill()
            holder.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            pass
        for stream in (holder.stdin, holder.stdout, holder.stderr):
            try:
                stream.close()
            except OSError:
                pass
        _LIVE_WORKERS.discard(holder.pid)

    def _release(self):
        """Remove the worker's cgroups (killing what is left in them) and give back its uid."""
        if self.cgroups is not None:
            self._cgroup_killed = self._cgroup_killed or self.cgroups.memory_killed()
            self.cgroups.remove(reap=_reap)
            self.cgroups = None
        self.isolation.release()

    def _kill_tree(self):
        """SIGKILL the worker's process group, its descendants (orphans come to us: we are a
        subreaper) and, with a throwaway uid, every process of that uid; reap our children."""
        roots = set(self._roots())
        if self._contained():
            self._kill_contained(roots)
            return
        for attempt in range(50):
            left = set()
            for root in roots:
                try:
                    os.killpg(root, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
                left |= procfs.descendants(root, uid=self.isolation.uid)
            left |= _orphans_of_ours(exclude=roots)
            if self.cgroups is not None:
                left |= self.cgroups.pids()
            left |= {p.pid for p in self._processes() if p.poll() is None}
            if not left:
                return
            for pid in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            _reap(left - roots)
            time.sleep(0.02)


    def _contained(self):
        """Is every process of this worker inside its pids cgroup and its namespaces? (At
        bwrap and unshare, with cgroups: what it starts joins its cgroup, which no process of
        its own may leave, and its orphans stay in its PID namespace.)"""
        groups = self.cgroups
        return groups is not None and "pids" in groups.folders \
            and self.isolation.kind.namespaces

    def _kill_contained(self, roots):
        """_kill_tree by the worker's cgroups: kill what they hold until they hold nothing
        (no scan of /proc a round), then, with a throwaway uid, one look for any process of it."""
        groups = self.cgroups
        for attempt in range(300):
            for root in roots:
                try:
                    os.killpg(root, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            groups.kill()
            left = groups.pids() | {p.pid for p in self._processes() if p.poll() is None}
            if not left:
                break
            _reap(left - roots)
            time.sleep(0.002 if attempt < 10 else 0.02)
        if self.isolation.uid is not None:
            table = procfs.proc_table()
            for pid in (p for p, (_, owner, _) in table.items() if owner == self.isolation.uid):
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass


WORKER_STARTS = {"forked": "forked from a template that imported torch once per batch",
                 "fresh": "fresh process"}


def _first_line(stream, timeout):
    """The first line `stream` (a pipe) gives within `timeout` s, stripped; '' if none."""
    deadline = time.monotonic() + timeout
    data = b""
    fd = stream.fileno()
    while b"\n" not in data and len(data) < 64:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            break
        chunk = os.read(fd, 64)
        if not chunk:
            break
        data += chunk
    return data.split(b"\n", 1)[0].decode("ascii", "replace").strip()


def _orphans_of_ours(exclude):
    """Children of this process that are not live workers (orphans it adopted)."""
    me = os.getpid()
    known = _LIVE_WORKERS | template_mod.PIDS | set(exclude)
    return {pid for pid, (ppid, _, _) in procfs.proc_table().items() if ppid == me and pid not in known}


def _reap(pids):
    """Collect the exit status of adopted orphans we killed, so no zombie stays."""
    for pid in pids:
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass
