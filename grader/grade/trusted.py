"""Run the hidden suite in a trusted process of its own, one per submission.

The trusted process imports the reference solution and the hidden tests, starts the
submission's worker (see grader/sandbox) and reports each test's outcome as JSON over a
pipe that only it holds. `grader grade` never imports student code and never reads a
file a worker could have written.
"""
import contextlib
import dataclasses
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading

from .. import assignment as assignments
from .. import forkserver
from ..i18n import N_, _
from ..sandbox import cleanup, isolation, template
from ..sandbox.limits import Limits
from . import turns

# the events pipe (sandbox/client.py EVENTS_FD; serving.py FD_ENVIRONMENT): named here, not
# imported from serving.py, which only the fork server loads
EVENTS_ENV = "ATTNKIT_EVENTS_FD"


@dataclasses.dataclass(frozen=True)
class SuiteOptions:
    """How a batch is graded. `assignment`: the loaded Assignment (grader/assignment.py;
    default: the kit's default one); `hidden_tests` and `solution` default to its folder
    and its solution. A `hidden_tests` folder of another suite (a copy, say) is graded by
    its own declaration: that is the assignment then, as the trusted process reads it."""
    hidden_tests: str = None
    solution: str = None
    isolation: str = "auto"
    limits: Limits = Limits()
    no_gpu: bool = False
    lang: str = "en"           # of the messages students read: en or zh (grader/i18n.py)
    carry_forward: str = "on"  # error carried forward, on | off (grader/catalog/carry.py)
    parts: tuple = None        # only the tests of these parts run (--parts; None: every part)
    assignment: object = dataclasses.field(default=None, compare=False)

    def __post_init__(self):
        declared = self.assignment or assignments.load()
        if self.hidden_tests is not None and not _same_folder(self.hidden_tests, declared.folder):
            declared = assignments.load_folder(self.hidden_tests)
        object.__setattr__(self, "assignment", declared)
        if self.hidden_tests is None:
            object.__setattr__(self, "hidden_tests", declared.hidden_tests)
        if self.solution is None:
            object.__setattr__(self, "solution", declared.solution)

    def pytest_args(self):
        args = [os.path.abspath(self.hidden_tests), "-c",
                os.path.join(os.path.abspath(self.hidden_tests), "pytest.ini"),
                "--rootdir", os.path.abspath(self.hidden_tests),
                # plugins are named, not discovered (see _environment): ours and the timeout
                "-p", "grader.grade.plugin", "-p", "pytest_timeout",
                # pytest's gc.collect() at exit, twice, costs a quarter second a submission
                "-p", "no:unraisableexception",
                # the plugin reads each failure's exception itself; pytest's own long
                # tracebacks cost 40 ms a failed test (a broken submission fails 67)
                "--tb=native",
                # nothing here logs; its capture around each test phase cost 2 ms a test
                "-p", "no:logging",
                # nor writes XML, runs doctests or a debugger, pastes, steps, plans setups,
                # uses the legacy tmpdir, subtests or thread-exception warnings: 6 ms a
                # trusted process (of its 41 ms of configuration and collection)
                *[arg for name in ("junitxml", "doctest", "pastebin", "setuponly", "setupplan",
                                   "stepwise", "debugging", "legacypath", "threadexception",
                                   "subtests") for arg in ("-p", f"no:{name}")],
                # nor has unittest classes, or uses tmp_path, monkeypatch or recwarn; no student
                # code runs here, so nothing is captured (this process's console goes to
                # grader-errors.log as it is) and no warning is recorded: each of the two
                # wrapped every phase of every test. 7 to 9% of a trusted process's CPU
                # (`grader validate`, 68 submissions, two runs each way: 19.0 and 19.3 s
                # against 20.5 and 21.2 s). faulthandler stays: a crash here says where.
                *[arg for name in ("unittest", "tmpdir", "monkeypatch", "recwarn", "warnings",
                                   "capture") for arg in ("-p", f"no:{name}")],
                "-q", "--no-header", "-rN",
                "--reference", os.path.abspath(self.solution),
                "--isolation", self.isolation,
                "--limits", json.dumps(dataclasses.asdict(self.limits)),
                "--timeout", str(int(4 * self.limits.call_seconds + 30))]
        if self.no_gpu:
            args.append("--no-gpu")
        if self.lang != "en":
            args += ["--attnkit-lang", self.lang]
        args += ["--carry-forward", self.carry_forward]
        if self.parts is not None:  # grader/shards.py: the others run on another machine
            args += ["--attnkit-parts", json.dumps(list(self.parts))]
        return args

    def process_seconds(self):
        """How long the trusted process may take before it counts as a grader failure."""
        return self.limits.submission_seconds + self.limits.startup_seconds + 120


def _same_folder(a, b):
    return os.path.realpath(a) == os.path.realpath(b)


class SuiteFailed(Exception):
    """The trusted process did not produce a report: a failure of the grader itself."""


# the batch's worker template (its socket is inherited by trusted processes), the templates
# that died (kept open until the batch ends), how many times it was restarted and why
_BATCH = {"template": None, "template_fd": None, "dead": [], "restarts": 0, "stopped": None,
          "checked": None, "pace": None}
_TEMPLATE_LOCK = threading.Lock()


def vouch_isolation(chosen):
    """The batch's isolation level, checked once by grade_batch (isolation.choose): its
    trusted processes take it as checked (isolation.CHECKED_ENV) instead of each starting a
    Python under the sandbox to check it again."""
    _BATCH["checked"] = isolation.checked(chosen)


def _environment():
    """A fresh trusted process's environment: the fork server's (forkserver.environment()),
    the level grade_batch checked, and the batch's worker template."""
    env = dict(forkserver.environment(), **_carried())
    if _BATCH["template_fd"] is not None:
        env[template.ENV_FD] = str(_BATCH["template_fd"])
    return env


def _carried():
    """What each trusted process gets beyond the fork server's environment."""
    return {isolation.CHECKED_ENV: _BATCH["checked"]} if _BATCH["checked"] else {}


def _inherited_fds():
    return () if _BATCH["template_fd"] is None else (_BATCH["template_fd"],)


def start_worker_template(zygote=None):
    """The batch's worker template (sandbox/template.py): every trusted process of the
    batch forks its workers from it. The one forked beside `zygote` (one torch import for
    both: forkserver.launch), else one started here. None where workers start fresh
    (ATTNKIT_WORKER_START=fresh)."""
    if not template.enabled():
        return None
    started = zygote.served_template() if zygote is not None else None
    try:
        started = started or template.Template.start()
    except OSError:
        return None
    os.set_inheritable(started.fileno(), True)
    _BATCH.update(template=started, template_fd=started.fileno(), dead=[], restarts=0,
                  stopped=None)
    return started


def _restarted():
    """The template's restarts so far, a dead one started again first."""
    current_template_fd()
    return _BATCH["restarts"]


def current_template_fd():
    """The socket of the batch's template, started again first if it died (at level `none` a
    submission may signal it): the next submission's workers fork from a live template,
    never silently from the fresh path. None where workers start fresh."""
    with _TEMPLATE_LOCK:
        started = _BATCH["template"]
        if started is None or started.proc.poll() is None:
            return _BATCH["template_fd"]
        code = started.proc.returncode
        _BATCH["stopped"] = f"signal {-code}" if code < 0 else f"exit status {code}"
        _BATCH["dead"].append(started)  # its socket number stays taken until the batch ends
        _BATCH["restarts"] += 1
        try:
            fresh = template.Template.start()
        except OSError:
            _BATCH.update(template=None, template_fd=None)
            return None
        os.set_inheritable(fresh.fileno(), True)
        _BATCH.update(template=fresh, template_fd=fresh.fileno())
        return fresh.fileno()


# CPU seconds of the last batch's fork servers: {"zygote": the fork server and every trusted
# process it forked, "template": the worker template alone (its keepers report their workers)}
SERVERS_CPU = {}


def stop_worker_template(started):
    if started is not None:
        with _TEMPLATE_LOCK:
            current, dead = _BATCH["template"], _BATCH["dead"]
            _BATCH.update(template=None, template_fd=None, dead=[])
        spent = 0.0
        for each in [current or started, *dead]:
            try:
                spent += each.close() or 0.0
            except OSError:
                pass
        SERVERS_CPU["template"] = spent


def stop_zygote(zygote):
    """Let the fork server go (after the template: one forked beside it is its child, and
    the server says how it ended); its CPU seconds, less its template's, are the trusted
    side's."""
    if zygote is not None:
        spent = zygote.close() or 0.0
        if zygote.template is not None and zygote.restarts == 0:
            # reaped by this server: counted in its figure too (a server started again
            # reaped none, and the first one's figure is not known)
            spent -= zygote.template.proc.cpu or 0.0
        SERVERS_CPU["zygote"] = max(0.0, spent)


def start_zygote(options=None, jobs=1):
    """A fork server with torch and pytest imported (see zygote.py), or None; with `options`
    (a SuiteOptions), the suite prepared in it once for the batch (grader/suite/warm.py),
    beside the batch's catalog, and what follow-through imports once `jobs + 1` submissions
    are forked."""
    # here, not at the top: the fork server (python -m grader.grade.zygote) imports this
    # module before it runs zygote.py as __main__, which would then be loaded twice
    from .zygote import Zygote
    try:
        zygote = Zygote(forkserver.environment(), _carried())
    except OSError:
        return None
    if options is not None:
        zygote.prepare(os.path.abspath(options.hidden_tests), os.path.abspath(options.solution),
                       jobs)
    return zygote


_RUNNING = {}  # pid -> how to signal it, for the trusted processes now running
_RUNNING_LOCK = threading.Lock()
# Ctrl-C: how long a trusted process has to stop its worker and exit before it is killed
INTERRUPT_GRACE_SECONDS = 10


def interrupt_all(grace=INTERRUPT_GRACE_SECONDS):
    """Ctrl-C: ask every running trusted process to stop (SIGINT: pytest ends the session,
    which stops the submission's worker and its cgroups, and reports); those still running
    `grace` seconds later are killed with their process group (their workers are then
    stopped as any dead trusted process's are: _stop_left_running)."""
    if _BATCH["pace"] is not None:
        _BATCH["pace"].close()  # a prepared process waiting for its turn gets none
    _signal_running(signal.SIGINT)
    timer = threading.Timer(grace, _signal_running, (signal.SIGKILL,))
    timer.daemon = True
    timer.start()
    return timer


def _signal_running(sig):
    with _RUNNING_LOCK:
        targets = list(_RUNNING.items())
    for pid, signal_it in targets:
        try:
            signal_it(sig)
        except (ProcessLookupError, PermissionError, OSError):
            pass


def _drain(fd, into):
    with os.fdopen(fd, "rb") as handle:
        into.append(handle.read())


class StoppedWhileRunning(SuiteFailed):
    """The trusted process was killed while its submission's worker ran as the grader's
    own uid (level `none` without a throwaway uid), and left no report: see run_suite."""


class StoppedWhileIdle(SuiteFailed):
    """The trusted process was killed, at a level where a classmate's worker runs as the
    grader's own uid, while its own submission's worker was not running (waiting for its
    turn, say): someone else's doing. Graded again alone, never charged: see run_suite."""


class _Turns:
    """Submissions graded side by side share a turn; one graded again alone waits until no
    other submission's code runs, and holds the others back until it is done."""

    def __init__(self):
        self.changed = threading.Condition()
        self.sharing, self.alone, self.waiting_alone = 0, False, 0

    def shared(self):
        return self._Turn(self, False)

    def exclusive(self):
        return self._Turn(self, True)

    class _Turn:
        def __init__(self, turns, alone):
            self.turns, self.alone = turns, alone

        def __enter__(self):
            t = self.turns
            with t.changed:
                if self.alone:
                    t.waiting_alone += 1
                    t.changed.wait_for(lambda: not t.alone and t.sharing == 0)
                    t.waiting_alone -= 1
                    t.alone = True
                else:
                    t.changed.wait_for(lambda: not t.alone and t.waiting_alone == 0)
                    t.sharing += 1

        def __exit__(self, *exc):
            t = self.turns
            with t.changed:
                if self.alone:
                    t.alone = False
                else:
                    t.sharing -= 1
                t.changed.notify_all()


_TURNS = _Turns()


def _worker_shares_grader_uid(options):
    """Can a worker signal the grader's processes? Only at level `none` without a throwaway
    uid: elsewhere a PID namespace or another uid stands between them."""
    if options.isolation != "none":
        return False
    try:
        return isolation.choose("none").uid is None
    except isolation.IsolationUnavailable:
        return False


def _still_running(said):
    """The {"uid", "gid"} of each worker the events pipe says started and never stopped."""
    counts = {}
    for event in said.decode("ascii", "replace").split(";"):
        if len(event) > 1 and event[0] in "+-":
            counts[event[1:]] = counts.get(event[1:], 0) + (1 if event[0] == "+" else -1)
    running = []
    for mark, count in counts.items():
        if count > 0:
            uid, _, gid = mark.partition(":")
            running.append({"uid": int(uid) if uid.isdigit() else None,
                            "gid": int(gid) if gid.isdigit() else None})
    return running


def _describe_status(status):
    if status is None:
        return "unknown (the fork server that started it died first)"
    return f"killed by signal {-status}" if status < 0 else f"exit status {status}"


def pace(jobs):
    """Give each submission of the batch its turn (turns.py): at most `jobs` trusted
    processes past it at once, so grade_batch may start one more, prepared ahead.
    None: no turns (each trusted process goes at once)."""
    _BATCH["pace"] = turns.Pace(jobs) if jobs else None


def place_in_line():
    """The next place in the batch's line for turns (grade_batch, in submission order);
    None when the batch gives no turns."""
    paced = _BATCH.get("pace")
    return paced.issue() if paced is not None else None


def in_line(place):
    """Around one submission's grading (grade_one) holding its `place`; nothing without one."""
    paced = _BATCH.get("pace")
    if paced is None or place is None:
        return contextlib.nullcontext()
    return paced.place(place)


class _Pipes:
    """A trusted process's report, console and events pipes (the events: sandbox/client.py
    EVENTS_FD), each read to its end by a thread of ours; the child gets the write ends."""

    def __init__(self):
        self.report_r, self.report_w = os.pipe()
        self.console_r, self.console_w = os.pipe()
        self.events_r, self.events_w = os.pipe()
        self.report, self.console, self.events = [], [], []
        self.readers = [threading.Thread(target=_drain, args=(fd, into), daemon=True)
                        for fd, into in ((self.report_r, self.report),
                                         (self.console_r, self.console),
                                         (self.events_r, self.events))]

    def start_reading(self):
        for reader in self.readers:
            reader.start()

    def close_write_ends(self):
        """Ours, once the child holds them: each pipe ends when the child's ends close."""
        os.close(self.report_w)
        os.close(self.console_w)
        os.close(self.events_w)

    def report_ended(self, timeout):
        """Has the report pipe come to its end within `timeout` s (the child ended)?"""
        self.readers[0].join(timeout)
        return not self.readers[0].is_alive()

    def join(self):
        for reader in self.readers:
            reader.join(30)

    def console_text(self):
        return (self.console[0] if self.console else b"").decode("utf-8", "replace")

    def said(self):
        """What the events pipe said: the workers started and stopped (_still_running)."""
        return self.events[0] if self.events else b""

    def report_bytes(self):
        return self.report[0] if self.report else b""


class _PacedTurn:
    """A trusted process's turn (pace(), turns.py) when it takes one: the channel it hears
    `go` on, the slot it is given (turns.Slot), the template's restarts when the slot went
    back, and how long it waited. Without `paced`: no turn, nothing to give back."""

    def __init__(self, paced):
        self.paced = paced
        self.mine, self.theirs = turns.channel() if paced is not None else (None, None)
        self.slot = None  # the turn given (turns.Slot)
        self.released = {}  # the template's restarts when the slot went back
        self.waited = 0.0

    def close_their_end(self):
        """The child holds its end of the channel now."""
        if self.theirs is not None:
            self.theirs.close()

    def take(self, restarts):
        """Wait for a slot, then let the child go with the batch's live template; the
        template's restarts as of then (`restarts` when it takes no turn)."""
        if self.paced is None:
            return restarts
        # prepared; its code runs from its turn on
        self.waited = self.paced.take_slot()
        template_fd = current_template_fd()  # the live one: it may have died meanwhile
        restarts = _BATCH["restarts"]
        if self.paced.closed:  # Ctrl-C: no turn; the child hears EOF and ends
            self.mine.close()
        else:  # the slot comes back when it says done, or at the latest in give_back()
            self.slot = turns.go(self.mine, template_fd, self.paced,
                                 before=lambda: self.released.update(restarts=_restarted()))
        return restarts

    def give_back(self, restarts, notes):
        """Once the child's status is known: the slot goes back (if it has not yet), and a
        template that died meanwhile, started again now for the next, goes into `notes`
        when it died after `restarts`; counted when the slot went to the next submission,
        whose code may kill it again."""
        if self.slot is not None:
            self.slot.release()  # released already when the process said done
        after = self.released.get("restarts", _restarted())
        if after > restarts:
            notes["worker_template"] = (f"the batch's worker template stopped "
                                        f"({_BATCH['stopped']}) while this submission "
                                        "was graded; it was started again")
        if self.slot is None and self.paced is not None:
            self.mine.close()  # closed already, unless something failed before its turn
            self.paced.done()


_LOST = object()  # the status of a child whose fork server died before it

# how a trusted process started (results.json extra_data.isolation.trusted_start): one path
# (tests/test_held.py compares the reports of the first and the last)
TRUSTED_STARTS = {
    "held": "forked from a session that configured pytest and collected the hidden suite once "
            "per batch",
    "forked": "forked from a fork server that imported torch and pytest once per batch",
    "fresh": "a fresh process"}


def _start_child(zygote, args, pipes, cwd, template_fd, theirs):
    """The trusted process running pytest in `cwd`: forked from `zygote`, or started fresh
    where there is none or it is gone. (its pid, the zygote that forked it or None, its
    Popen where it was started fresh)."""
    # here, not at the top: see start_zygote
    from .zygote import ZygoteGone
    if zygote is not None:
        fds = {"events": pipes.events_w}
        if template_fd is not None:
            fds["template"] = template_fd
        if theirs is not None:
            fds["turn"] = theirs.fileno()
        try:
            return zygote.spawn(args + ["--attnkit-report-fd", "{report_fd}"],
                                pipes.report_w, pipes.console_w, cwd, fds), zygote, None
        except ZygoteGone:
            pass
    env = dict(_environment(), **{EVENTS_ENV: str(pipes.events_w)})
    if template_fd is not None:
        env[template.ENV_FD] = str(template_fd)
    if theirs is not None:
        env[turns.TURN_ENV] = str(theirs.fileno())
    proc = subprocess.Popen([sys.executable, "-m", "pytest", *args,
                             "--attnkit-report-fd", str(pipes.report_w)],
                            cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                            stdout=pipes.console_w, stderr=pipes.console_w,
                            pass_fds=(pipes.report_w, pipes.events_w, *_inherited_fds(),
                                      *([theirs.fileno()] if theirs else [])),
                            start_new_session=True)
    return proc.pid, None, proc


def _wait_status(pid, zygote, proc, timeout, pipes):
    """(the child's exit status, its CPU seconds as the fork server saw them or None). The
    status is None when it ran past `timeout` (it is killed then), _LOST when its fork
    server died first and its report still came."""
    # here, not at the top: see start_zygote
    from .zygote import ZygoteGone
    if zygote is not None:
        try:
            status = zygote.wait(pid, timeout)
            if status is None:
                zygote.kill(pid)
                zygote.wait(pid, 10)
            return status, zygote.cpu.pop(pid, None)
        except ZygoteGone:
            # the child runs on without its parent: its report still comes
            if pipes.report_ended(timeout):
                return _LOST, None
            zygote.kill(pid)
            return None, None
    try:
        return proc.wait(timeout=timeout), None
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        proc.wait()
        return None, None


def _stop_left_running(said):
    """Stop and clean up each worker the events pipe says still runs (its trusted process
    died before it could stop it); were there any?"""
    running_ids = _still_running(said)
    for ids in running_ids:
        cleanup.kill(ids)
        cleanup.remove(ids)
    return bool(running_ids)


def _no_report(options, status, worker_running, console):
    """The exception for a trusted process that ended with `status` and wrote no report:
    stopped by a signal (or with its fork server) where a worker shares the grader's uid,
    StoppedWhileRunning or StoppedWhileIdle as its worker ran or not; else SuiteFailed."""
    how = _describe_status(None if status is _LOST else status)
    if (status is _LOST or status < 0) and _worker_shares_grader_uid(options):
        if worker_running:
            return StoppedWhileRunning(f"the trusted process was stopped ({how}) while the "
                                       "submission's worker ran as the grader's uid")
        return StoppedWhileIdle(f"the trusted process was stopped ({how}) while its "
                                "submission's worker was not running")
    return SuiteFailed(f"the hidden suite exited with status {how} and wrote no "
                       f"report:\n{console[-4000:]}")


def _read_report(options, pipes, status, timeout, notes, costs):
    """(report dict, console text) of a child that ended with `status`, once the workers it
    left running are stopped; `costs` joins the report's. Raises when it wrote none."""
    console = pipes.console_text()
    worker_running = _stop_left_running(pipes.said())
    if status is _LOST:
        notes["fork_server"] = ("the grader's fork server stopped while this submission was "
                                "graded; it was started again")
    if status is None:
        raise SuiteFailed(f"the hidden suite did not finish within {timeout:g} s")
    data = pipes.report_bytes()
    if not data:
        raise _no_report(options, status, worker_running, console)
    try:
        report = json.loads(data)
    except json.JSONDecodeError as error:
        raise SuiteFailed(f"the hidden suite's report is not JSON ({error})") from None
    if isinstance(report, dict):  # what it cost (grader/bench.py reads it)
        known = report.get("costs") if isinstance(report.get("costs"), dict) else {}
        report["costs"] = dict(known, **costs)
    return report, console


def run_pytest(options, extra_args, timeout, zygote=None, notes=None, take_turn=False):
    """Run pytest with our plugin, forked from `zygote` or as a fresh process; take_turn:
    it waits for its turn (pace()) before the submission's worker starts, and `timeout`
    counts from then.

    Returns (report dict, console text); raises SuiteFailed when no report came (and
    StoppedWhileRunning when the evidence says its submission's worker stopped it).
    notes: a dict that gets what happened to the grader's own processes meanwhile."""
    notes = {} if notes is None else notes
    template_fd = current_template_fd()  # a template that died is started again first
    restarts = _BATCH["restarts"]
    pipes = _Pipes()
    turn = _PacedTurn(_BATCH.get("pace") if take_turn else None)
    pipes.start_reading()
    args = [*options.pytest_args(), *extra_args]
    with tempfile.TemporaryDirectory(prefix="attnkit-trusted-") as cwd:
        pid, zygote, proc = _start_child(zygote, args, pipes, cwd, template_fd, turn.theirs)
        start = "fresh" if zygote is None else zygote.starts.pop(pid, "forked")
        pipes.close_write_ends()
        turn.close_their_end()
        with _RUNNING_LOCK:
            # SIGINT to pytest alone; SIGKILL to its whole group (it leads one of its own)
            _RUNNING[pid] = (lambda sig, p=pid: (os.killpg if sig == signal.SIGKILL
                                                 else os.kill)(p, sig))
        try:
            restarts = turn.take(restarts)
            status, child_cpu = _wait_status(pid, zygote, proc, timeout, pipes)
        finally:
            with _RUNNING_LOCK:
                _RUNNING.pop(pid, None)
            turn.give_back(restarts, notes)
        pipes.join()
    report, console = _read_report(options, pipes, status, timeout, notes,
                                   {"trusted_cpu": child_cpu, "turn_wait": turn.waited})
    if isinstance(report.get("isolation"), dict):
        report["isolation"]["trusted_start"] = TRUSTED_STARTS[start]
    return report, console


def catalog(options, zygote=None):
    """The hidden tests with their points and parts, without running any."""
    report, console = run_pytest(options, ["--collect-only", "--attnkit-catalog"], timeout=300,
                                 zygote=zygote)
    if report.get("errors") or not report.get("catalog"):
        detail = "\n".join(report.get("errors", [])) or console[-3000:]
        raise SuiteFailed("the hidden suite could not be collected:\n" + detail)
    return report["catalog"]


# What a student reads when the grader's process for their submission was stopped by it.
STOPPED_BY_SUBMISSION = N_(
    "Not graded to the end: the grader's own process for this submission was stopped while "
    "the submission's code was running, and again when it was graded alone. At this "
    "isolation level a submission runs as the grader's user and can stop the grader's "
    "processes; what did not finish scores 0.")


def _alone_or_charged(options, args, stage_dir, zygote, tests, notes, first):
    """(report, console) after `first` (StoppedWhileRunning): graded again alone; stopped
    again, and a control submission survives, it is charged (run_suite's rule)."""
    with _TURNS.exclusive():
        try:
            report, console = run_pytest(options, args, options.process_seconds(), zygote, notes)
            notes["graded_alone"] = (f"graded again alone: {first} while other "
                                     "submissions' code also ran")
        except StoppedWhileRunning as again:
            evidence = f"{first}; graded alone: {again}"
            _control(options, stage_dir, zygote, evidence)  # raises SuiteFailed if it dies too
            report, console = _charged(options, evidence, tests), ""
    return report, console


def run_suite(options, submission_file, stage_dir, zygote=None, tests=None):
    """The hidden suite's report for one staged submission; `tests`: the batch's catalog of
    hidden tests (catalog()), what a charged report lists.

    The rule for a trusted process that died without a report: it is the submission's doing,
    and costs it every test that had not reported, only when (1) its worker ran as the
    grader's own uid (level `none` without a throwaway uid), so it could signal the grader's
    processes, (2) it died by a signal, or with the fork server, while that worker was
    running (the events pipe, which no worker can reach), and (3) the same happens when the
    submission is graded again alone, with no other submission's code running, while (4) a
    control submission that defines nothing, graded the same way alone, does not die.
    One killed while its worker was not running (waiting for its turn: turns.py) is graded
    again alone, as if nothing had happened. Anything else is a grader error."""
    args = ["--submission", submission_file, "--stage-dir", stage_dir]
    notes = {}
    try:
        with _TURNS.shared():
            report, console = run_pytest(options, args, options.process_seconds(), zygote, notes,
                                         take_turn=True)
    except StoppedWhileIdle as idle:  # not its code's doing: once more, alone
        try:
            with _TURNS.exclusive():
                report, console = run_pytest(options, args, options.process_seconds(), zygote,
                                             notes)
            notes["graded_alone"] = f"graded again alone: {idle}"
        except StoppedWhileRunning as first:  # and then its own code stopped it
            report, console = _alone_or_charged(options, args, stage_dir, zygote, tests, notes,
                                                first)
    except StoppedWhileRunning as first:
        report, console = _alone_or_charged(options, args, stage_dir, zygote, tests, notes, first)
    report["console"] = console[-20000:]
    if notes and isinstance(report.get("isolation"), dict):
        report["isolation"].update(notes)
    elif notes:
        report["isolation"] = dict(notes)
    if _BATCH["restarts"] and isinstance(report.get("isolation"), dict) \
            and "worker_template" not in notes and report["isolation"].get("worker_start"):
        start = str(report["isolation"].get("worker_start", ""))
        report["isolation"]["worker_start"] = (
            f"{start} (the batch's template was started again {_BATCH['restarts']} time(s); "
            f"the last one had stopped: {_BATCH['stopped']})")
    return report


CONTROL = "import torch  # the control: a submission that defines nothing\n"


def _control(options, stage_dir, zygote, evidence):
    """Grade a submission that defines nothing the same way, alone: if the grader's process
    dies for it too, the death was the grader's (SuiteFailed), not the submission's."""
    folder = tempfile.mkdtemp(prefix="control-", dir=stage_dir)
    os.chmod(folder, 0o755)
    path = os.path.join(folder, options.assignment.module_file)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(CONTROL)
    os.chmod(path, 0o644)
    workers = os.path.join(folder, "workers")
    os.makedirs(workers, mode=0o711)
    try:
        run_pytest(options, ["--submission", path, "--stage-dir", workers],
                   options.process_seconds(), zygote)
    except SuiteFailed as control:
        raise SuiteFailed(f"{evidence}; and for a submission that defines nothing: {control}: "
                          "a failure of the grader") from None


def _charged(options, evidence, catalog):
    """The report of a submission that stopped its own trusted process (see run_suite)."""
    if not catalog:
        raise SuiteFailed(evidence)
    message = _(STOPPED_BY_SUBMISSION)
    tests = [{"nodeid": t["nodeid"], "name": t["name"], "part": t["part"], "points": t["points"],
              "outcome": "skipped" if t.get("skip") else "failed",
              "blame": None if t.get("skip") else "student",
              "message": t.get("skip") or message, "seconds": 0.0}
             for t in catalog]
    level = isolation.choose(options.isolation)
    return {"tests": tests, "errors": [], "submission": None, "diagnoses": [],
            "isolation": dict(level.describe(), charged=evidence[:1000])}
