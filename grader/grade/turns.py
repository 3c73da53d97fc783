"""A submission's turn: prepared ahead, its code run only when a slot is free.

`grader grade --jobs N` grades N submissions at once. It starts one more trusted process
than that: the next submission's, which forks, configures pytest, sets its sandbox going
(bwrap builds it) and collects the suite while the others run, then waits for its turn
before its worker starts (grade/plugin.py, at the start of pytest's test loop),
so none of the submission's code runs before a slot is free; turns come in the order the
submissions were given. The turn comes with the
batch's worker template as it is then (a submission at level `none` may have killed the one
there was when the process was prepared, and the grader started another). The wait is left
out of the time a result reports.

    pace = Pace(jobs)                        # grade_batch, once a batch
    number = pace.issue()                    # grade_batch, submission by submission
    with pace.place(number): ...             # grade_one, in its thread
    mine, theirs = channel()                 # run_pytest: the child inherits `theirs`
    waited = pace.take_slot()                # parent: blocks until a slot is free
    slot = go(mine, template_fd, pace)       # parent: its turn, with the current template
    slot.release()                           # parent: once that trusted process has ended
                                             # (the slot is free already if it said done)
    waited = wait_for_turn()                 # child (grader/grade/plugin.py), before the
                                             # suite starts the worker; None: no turn came
    done()                                   # child, once its worker has stopped: the
                                             # slot is free while it writes its report

The slot comes back at the first of: the child saying done (its submission's worker and
every process it started are stopped: the suite's session end, grader/suite/plugin.py),
the child's end of the channel closing (it ended, however), or the grader's release.
"""
import contextlib
import os
import socket
import threading
import time

from ..sandbox import template

# the child's end of its turn channel in a trusted process (serving.py FD_ENVIRONMENT)
TURN_ENV = "ATTNKIT_TURN_FD"


class Pace:
    """At most `jobs` trusted processes past their turn at once, their turns given in the
    order the submissions came (each is issued its place before any is graded)."""

    def __init__(self, jobs):
        self.jobs = max(1, int(jobs))
        self.changed = threading.Condition()
        self.running, self.issued, self.serving, self.resolved = 0, 0, 0, set()
        self.closed = False
        self.mine = threading.local()  # the place of the submission this thread grades

    def issue(self):
        """The next place in line: taken in the order the submissions came (grade_batch)."""
        with self.changed:
            self.issued += 1
            return self.issued - 1

    @contextlib.contextmanager
    def place(self, number):
        """Around one submission's grading, in the thread that grades it, holding its place
        `number` (issue()). One that never asks for its turn (unchanged, unreadable) gives
        its place up at the end."""
        self.mine.number = number
        try:
            yield
        finally:
            self.mine.number = None
            with self.changed:
                self._resolve(number)

    def close(self):
        """Ctrl-C: no more turns; whoever waits for one stops waiting (and gives none)."""
        with self.changed:
            self.closed = True
            self.changed.notify_all()

    def take_slot(self):
        """Wait until this thread's submission is next in line and a slot is free; the
        seconds waited. done() gives the slot back. A thread without a ticket waits for a
        slot only."""
        started = time.monotonic()
        number = getattr(self.mine, "number", None)
        with self.changed:
            self.changed.wait_for(lambda: self.closed or (
                self.running < self.jobs and (number is None or number == self.serving)))
            self.running += 1
            if number is not None:
                self._resolve(number)
        return time.monotonic() - started

    def done(self):
        with self.changed:
            self.running -= 1
            self.changed.notify_all()

    def _resolve(self, number):
        """(lock held) `number` has had its turn or gives it up: the line moves on."""
        self.resolved.add(number)
        while self.serving in self.resolved:
            self.resolved.discard(self.serving)
            self.serving += 1
        self.changed.notify_all()


def channel():
    """(the grader's end, the trusted process's end): a Unix socket pair, the second
    inheritable."""
    mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    theirs.set_inheritable(True)
    return mine, theirs


class Slot:
    """A turn given: its slot goes back to the Pace once, at the first of release() and
    the trusted process saying done (or its end of the channel closing)."""

    def __init__(self, mine, pace, before=None):
        self.mine, self.pace, self.before = mine, pace, before
        self.lock = threading.Lock()
        self.released = False
        threading.Thread(target=self._listen, name="turn-done", daemon=True).start()

    def _listen(self):
        try:
            self.mine.recv(16)  # b"done", or b"" when the process ended
        except OSError:
            pass
        self.release()

    def release(self):
        with self.lock:
            if self.released:
                return
            self.released = True
        try:
            self.mine.shutdown(socket.SHUT_RDWR)  # wakes _listen, if it still waits
        except OSError:
            pass
        try:
            if self.before is not None:
                self.before()
        finally:
            self.pace.done()


def go(mine, template_fd=None, pace=None, before=None):
    """Give the trusted process at the other end of `mine` its turn, with the batch's
    current template (None: its workers start fresh). With `pace`, the Slot whose release
    gives the slot back (it listens on `mine` for the process's done), calling `before`
    first; without, `mine` is closed. A process that ended before its turn is told nothing: its exit status says how
    it ended."""
    try:
        socket.send_fds(mine, [b"go"], [template_fd] if template_fd is not None else [])
    except OSError:
        pass
    if pace is None:
        mine.close()
        return None
    return Slot(mine, pace, before)


def wait_for_turn():
    """In a trusted process: block until the grader gives this submission its turn; the
    template it then names becomes this process's (sandbox/template.py adopt). The seconds
    waited; 0.0 when the process was started without a turn channel (a lone submission,
    the catalog, a run graded alone); None when the channel closed without a turn (the
    grader stopped first: nothing of the submission may run)."""
    value = os.environ.pop(TURN_ENV, "")
    if not value.isdigit():
        return 0.0
    started = time.monotonic()
    theirs = None
    try:
        theirs = socket.socket(fileno=int(value))
        said, fds, _, _ = socket.recv_fds(theirs, 16, 1)
    except OSError:
        said, fds = b"", []
    if said != b"go":
        for fd in fds:
            os.close(fd)
        if theirs is not None:
            theirs.close()
        return None
    _TURN["channel"] = theirs  # done() says the slot is free on it
    if fds:
        template.adopt(fds[0])
    return time.monotonic() - started


_TURN = {"channel": None}


def done():
    """In a trusted process whose submission's worker (and every process it started) has
    stopped: its slot is free (the grader gives the next turn while this process writes its
    report and ends). Said once; nothing when it had no turn channel."""
    theirs, _TURN["channel"] = _TURN["channel"], None
    if theirs is None:
        return
    try:
        theirs.send(b"done")
    except OSError:
        pass
    finally:
        theirs.close()
