"""A held server: pytest configured and the hidden suite collected once, for every submission
of a batch, and each submission's trusted process forked from there.

Configuring pytest and collecting the hidden suite cost a trusted process about 70 ms of
its 260 (docs/explanation/figures.md), the same for every submission of a batch: only
--submission, --stage-dir and --attnkit-report-fd differ (serving.PER_SUBMISSION), and
nothing reads them before the test loop starts (suite/plugin.py starts the worker there; the
report is written at the session's end). So the fork server (serving.py) forks, for the
batch's arguments, a held server that runs pytest with the rest of them. At the test loop,
before any plugin of the suite's, the Holder says it holds the session and serves: each
process it forks takes its submission's arguments, as pytest would have parsed them, and
goes on with the session, exactly where a process that parsed them itself would be.

    serving.serve() -> Forked(held=key, sock=...)   # in the held server, forked by it
    hold(forked)                                    # never returns
"""
import faulthandler
import json
import os
import sys
import time

import pytest
from _pytest import timing

from . import serving


class Holder:
    """The plugin the held server runs pytest with: at the test loop it serves instead
    (serving.Server); in each process forked there the session goes on for its submission.
    `forked`: what that process is (serving.Forked), in it; None in the held server."""

    def __init__(self, sock):
        self.sock = sock
        self.forked = None

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_runtestloop(self, session):
        if getattr(session.config, "attnkit_gpu", False):
            # the suite asked whether there is a CUDA device (suite/plugin.py), which may
            # start CUDA here, and a process that started it must never fork: each trusted
            # process of a GPU run runs pytest from the start
            self._say(holding=False)
            os._exit(0)
        sys.stdout.flush()  # nothing of the held server's reaches a trusted process's console
        sys.stderr.flush()
        server = serving.Server(self.sock, in_session=True)
        serving.freeze()
        self._say(holding=True)
        forked = server.serve()
        if forked is None:  # the batch is over
            os._exit(0)
        self.forked = forked
        given(session.config, serving.become_trusted(forked))
        yield

    def _say(self, **said):
        try:
            self.sock.sendall(json.dumps(said).encode() + b"\n")
        except OSError:
            pass


def given(config, args):
    """The session's configuration made as if pytest had parsed `args` (held_key passed
    them: the batch's arguments and this submission's) itself: its submission's options set,
    its clocks started now, its crash report on its own console."""
    values = serving.per_submission(args)
    config.option.submission = values["--submission"]
    config.option.stage_dir = values["--stage-dir"]
    config.option.attnkit_report_fd = int(values["--attnkit-report-fd"])
    recorder = config.pluginmanager.get_plugin("attnkit-recorder")
    if recorder is not None:
        recorder.started = time.monotonic()
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None and hasattr(reporter, "_session_start"):
        reporter._session_start = timing.Instant()  # its summary's "in N s"
    if faulthandler.is_enabled():  # pytest's faulthandler wrote to the held server's stderr
        faulthandler.enable(file=sys.stderr)


def hold(forked):
    """The held server for `forked.held` (serving.held_key): pytest with the batch's arguments,
    held at its test loop (Holder). A session that never reaches it (a usage error, say)
    is said not to be held, and its submissions are forked from the start. Never returns;
    in each process forked at the test loop, its session is run to its end."""
    base, carried = forked.held
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):  # its own output: none (the grader's console is not its own)
        os.dup2(devnull, fd)
    os.close(devnull)
    os.chdir("/")
    for name, value in carried:  # as each trusted process's, from its configuration on
        os.environ[name] = value
    holder = Holder(forked.sock)
    try:
        code = pytest.main(list(base), plugins=[holder])
    except BaseException:
        code = 3
    if holder.forked is None:  # here, in the held server: it never held
        holder._say(holding=False)
        os._exit(0)
    serving.finish_trusted(code, holder.forked.memo_w)
