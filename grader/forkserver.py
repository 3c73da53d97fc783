"""The fork server's process (grade/zygote.py), started as early as the command line allows.

The fork server imports torch, pytest and the suite's machinery: about 1.5 s, the longest
step before a batch's first submission can be graded. A command that grades (`grader grade`,
`nbgrader`, `validate`) starts it here, before the command line's own modules are imported
(about 0.3 s) and its pre-flight runs (the gradebook, the course file, the isolation check),
so that both go on at once; grade_batch then takes it (trusted.start_zygote). A command
that is refused or grades nothing stops it at exit (let_go), and a server started for
another environment is stopped when take() finds so: neither is left to finish importing
torch (about 1.5 s of CPU) for nothing. --help starts none.

    early = forkserver.start(sys.argv[1:])   # None: this command grades nothing
    sock, proc, template_sock = forkserver.take(env)  # the one started for `env`, or None

The server and the batch's worker template share one torch import: launch() starts one
`python -I sandbox/template.py`, which imports torch and forks (template.py
serve_beside_server); the child is the template, the parent becomes the server.

What a trusted process needs that is known only later (the isolation level grade_batch
checked, CARRIED) reaches it with each spawn, not through the server's environment.
"""
import atexit
import json
import os
import socket
import subprocess
import sys

from . import paths
from .sandbox import template

GRADING_COMMANDS = ("grade", "nbgrader", "validate")
# set per trusted process from the spawn request (grade/serving.py), the rest of the environment is
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


def launch(env, with_template=False):
    """A fork server process for `env`: (our end of its socket, its Popen, our end of the
    socket of the worker template forked beside it or None).

    with_template: one process imports torch for both (sandbox/template.py
    serve_beside_server): started as the template is (`python -I`, its clean environment),
    it forks the template and becomes the server, with `env`, this process's folder and
    output. Without: `python -m grader.grade.zygote` (workers that start fresh, or a server
    started again after the first died)."""
    parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    ours, theirs = (socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET) if with_template
                    else (None, None))
    out, err = (os.dup(1), os.dup(2)) if with_template else (None, None)
    config_r, config_w = os.pipe() if with_template else (None, None)
    try:
        if with_template:
            # through a pipe, not the command line: a worker forked from the template reads
            # its own command line, and the server's folder and paths are none of its business
            proc = subprocess.Popen(
                [sys.executable, "-I", template.__file__, str(theirs.fileno()),
                 template.SERVER_FLAG, *map(str, (child.fileno(), out, err, config_r))],
                env=dict(template.CLEAN_ENV), cwd="/",
                pass_fds=(child.fileno(), theirs.fileno(), out, err, config_r),
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                start_new_session=True)
            config = {"env": env, "cwd": os.getcwd(),
                      "path": env.get("PYTHONPATH", "").split(os.pathsep)}
            with os.fdopen(config_w, "w", encoding="utf-8") as sink:  # after: any size
                config_w = None
                sink.write(json.dumps(config))
        else:
            proc = subprocess.Popen([sys.executable, "-m", "grader.grade.zygote",
                                     str(child.fileno())], env=env, pass_fds=(child.fileno(),),
                                    stdin=subprocess.DEVNULL, start_new_session=True)
    except BaseException:
        for end in (parent, ours):
            if end is not None:
                end.close()
        raise
    finally:
        for end in (child, theirs):
            if end is not None:
                end.close()
        for fd in (out, err, config_r, config_w):
            if fd is not None:
                os.close(fd)
    return parent, proc, ours


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
        _EARLY["server"] = (env, *launch(env, with_template=template.enabled()))
    except OSError:
        return None
    atexit.unregister(let_go)  # registered once, however many servers a process starts
    atexit.register(let_go)
    return _EARLY["server"]


def let_go():
    """Stop the server start() started if no batch took it (the command stopped at a usage
    error or a refusal). At exit; also safe to call before."""
    early, _EARLY["server"] = _EARLY["server"], None
    if early is not None:
        _stop(*early[1:])


def _stop(sock, proc, template_sock):
    """Close our ends and kill the server: it has run nothing of a submission yet. A
    template it forked hears EOF on its socket and ends."""
    for end in (sock, template_sock):
        if end is not None:
            end.close()
    proc.kill()  # no signal once it was reaped: Popen polls first
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass


def take(env):
    """The server start() started, when it was started with `env` (else it is let go): our
    end of its socket, its Popen and our end of its template's socket (or None), or None.
    Taken once."""
    early, _EARLY["server"] = _EARLY["server"], None
    if early is None:
        return None
    started_with, sock, proc, template_sock = early
    if started_with == env:
        return sock, proc, template_sock
    _stop(sock, proc, template_sock)
    return None
