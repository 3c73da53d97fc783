"""The fork server's process (grade/zygote.py), started as early as the command line allows.

The fork server imports torch, pytest and the suite's machinery: about 1.5 s, the longest
step before a batch's first submission can be graded. A command that grades (`grader grade`,
`nbgrader`, `validate`) starts it here, before the command line's own modules are imported
(about 0.3 s) and its pre-flight runs (the gradebook, the course file, the isolation check),
so that both go on at once; grade_batch then takes it (trusted.start_zygote). A command
that is refused, asked for --help, or grades nothing lets it go: it ends when this process
closes its socket, having run nothing.

    early = forkserver.start(sys.argv[1:])   # None: this command grades nothing
    sock, proc = forkserver.take(env)        # the one started for `env`, or None

What a trusted process needs that is known only later (the isolation level grade_batch
checked, CARRIED) reaches it with each spawn, not through the server's environment.
"""
import os
import socket
import subprocess
import sys

from . import paths

GRADING_COMMANDS = ("grade", "nbgrader", "validate")
# set per trusted process from the spawn request (zygote.py), the rest of the environment is
# the server's own
CARRIED = ("ATTNKIT_ISOLATION_CHECKED",)
# how workers start (sandbox/template.py ENV_MODE): "fresh" for the bench and debugging
WORKER_START = "ATTNKIT_WORKER_START"

_EARLY = {"server": None}


def environment():
    """The environment of the fork server (and of a trusted process started fresh): the
    kit on the import path, no plugin autoloading, one thread, nothing else of ours."""
    path = os.pathsep.join(p for p in (paths.KIT_ROOT, os.environ.get("PYTHONPATH")) if p)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": path,
           "HOME": os.environ.get("HOME", "/tmp"), "LANG": "C.UTF-8", "OMP_NUM_THREADS": "1",
           "PYTHONDONTWRITEBYTECODE": "1",
           # the hidden suite needs no other installed pytest plugin (hypothesis's, say,
           # imports hypothesis in every trusted process)
           "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    if os.environ.get(WORKER_START):
        env[WORKER_START] = os.environ[WORKER_START]
    return env


def launch(env, pass_fds=()):
    """A fork server process for `env`: (our end of its socket, its Popen)."""
    parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        proc = subprocess.Popen([sys.executable, "-m", "grader.grade.zygote", str(child.fileno())],
                                env=env, pass_fds=(child.fileno(), *pass_fds),
                                stdin=subprocess.DEVNULL, start_new_session=True)
    except BaseException:
        parent.close()
        raise
    finally:
        child.close()
    return parent, proc


def wanted(argv):
    """Does this command line grade (and is it no request for help)?"""
    return bool(argv) and argv[0] in GRADING_COMMANDS and not {"-h", "--help"} & set(argv)


def start(argv):
    """Start the fork server now when the command `argv` grades; None when it does not (or
    the server could not be started: the batch then starts its own, as it always could)."""
    if not wanted(argv) or _EARLY["server"] is not None:
        return None
    env = environment()
    try:
        _EARLY["server"] = (env, *launch(env))
    except OSError:
        return None
    return _EARLY["server"]


def take(env):
    """The server start() started, when it was started with `env` (else it is let go): our
    end of its socket and its Popen, or None. Taken once."""
    early, _EARLY["server"] = _EARLY["server"], None
    if early is None:
        return None
    started_with, sock, proc = early
    if started_with == env:
        return sock, proc
    sock.close()  # it hears EOF and ends
    return None
