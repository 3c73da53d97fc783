"""Run the hidden suite in a trusted process of its own, one per submission.

The trusted process imports the reference solution and the hidden tests, starts the
submission's worker (see grader/sandbox) and reports each test's outcome as JSON over a
pipe that only it holds. `grader grade` never imports student code and never reads a
file a worker could have written.
"""
import dataclasses
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading

from .. import paths
from ..sandbox import template
from ..sandbox.limits import Limits


@dataclasses.dataclass(frozen=True)
class SuiteOptions:
    hidden_tests: str = paths.HIDDEN_TESTS
    solution: str = paths.SOLUTION
    isolation: str = "auto"
    limits: Limits = Limits()
    no_gpu: bool = False
    lang: str = "en"           # of the messages students read: en or zh (grader/i18n.py)

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
                "-q", "--no-header", "-rN",
                "--reference", os.path.abspath(self.solution),
                "--isolation", self.isolation,
                "--limits", json.dumps(dataclasses.asdict(self.limits)),
                "--timeout", str(int(4 * self.limits.call_seconds + 30))]
        if self.no_gpu:
            args.append("--no-gpu")
        if self.lang != "en":
            args += ["--attnkit-lang", self.lang]
        return args

    def process_seconds(self):
        """How long the trusted process may take before it counts as a grader failure."""
        return self.limits.submission_seconds + self.limits.startup_seconds + 120


class SuiteFailed(Exception):
    """The trusted process did not produce a report: a failure of the grader itself."""


_BATCH = {"template_fd": None}  # the batch's worker template, inherited by trusted processes


def _environment():
    kit = paths.KIT_ROOT
    path = os.pathsep.join(p for p in (kit, os.environ.get("PYTHONPATH")) if p)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": path,
           "HOME": os.environ.get("HOME", "/tmp"), "LANG": "C.UTF-8", "OMP_NUM_THREADS": "1",
           "PYTHONDONTWRITEBYTECODE": "1",
           # the hidden suite needs no other installed pytest plugin (hypothesis's, say,
           # imports hypothesis in every trusted process)
           "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    if _BATCH["template_fd"] is not None:
        env[template.ENV_FD] = str(_BATCH["template_fd"])
    elif os.environ.get(template.ENV_MODE):
        env[template.ENV_MODE] = os.environ[template.ENV_MODE]
    return env


def _inherited_fds():
    return () if _BATCH["template_fd"] is None else (_BATCH["template_fd"],)


def start_worker_template():
    """The batch's worker template (sandbox/template.py): every trusted process of the
    batch forks its workers from it. None where workers start fresh (ATTNKIT_WORKER_START=fresh)."""
    if not template.enabled():
        return None
    try:
        started = template.Template.start()
    except OSError:
        return None
    os.set_inheritable(started.fileno(), True)
    _BATCH["template_fd"] = started.fileno()
    return started


def stop_worker_template(started):
    if started is not None:
        _BATCH["template_fd"] = None
        started.close()


def start_zygote():
    """A fork server with torch and pytest imported (see zygote.py), or None."""
    from .zygote import Zygote
    try:
        return Zygote(_environment(), _inherited_fds())
    except OSError:
        return None


_RUNNING = {}  # pid -> how to interrupt it, for the trusted processes now running
_RUNNING_LOCK = threading.Lock()


def interrupt_all():
    """Ctrl-C: ask every running trusted process to stop (SIGINT: pytest ends the session,
    which stops the submission's worker and its cgroups, and reports)."""
    with _RUNNING_LOCK:
        targets = list(_RUNNING.items())
    for pid, interrupt in targets:
        try:
            interrupt(signal.SIGINT)
        except (ProcessLookupError, PermissionError, OSError):
            pass


def _drain(fd, into):
    with os.fdopen(fd, "rb") as handle:
        into.append(handle.read())


def run_pytest(options, extra_args, timeout, zygote=None):
    """Run pytest with our plugin, forked from `zygote` or as a fresh process.

    Returns (report dict, console text); raises SuiteFailed when no report came."""
    from .zygote import ZygoteGone
    report_r, report_w = os.pipe()
    console_r, console_w = os.pipe()
    report, console = [], []
    readers = [threading.Thread(target=_drain, args=(report_r, report), daemon=True),
               threading.Thread(target=_drain, args=(console_r, console), daemon=True)]
    for reader in readers:
        reader.start()
    args = [*options.pytest_args(), *extra_args]
    with tempfile.TemporaryDirectory(prefix="attnkit-trusted-") as cwd:
        pid = None
        if zygote is not None:
            try:
                pid = zygote.spawn(args + ["--attnkit-report-fd", "{report_fd}"],
                                   report_w, console_w, cwd)
            except ZygoteGone:
                zygote = None
        if pid is None:
            proc = subprocess.Popen([sys.executable, "-m", "pytest", *args,
                                     "--attnkit-report-fd", str(report_w)],
                                    cwd=cwd, env=_environment(), stdin=subprocess.DEVNULL,
                                    stdout=console_w, stderr=console_w,
                                    pass_fds=(report_w, *_inherited_fds()),
                                    start_new_session=True)
        os.close(report_w)
        os.close(console_w)
        running = pid if zygote is not None else proc.pid
        with _RUNNING_LOCK:
            _RUNNING[running] = (lambda sig, p=running: os.kill(p, sig))
        try:
            if zygote is not None:
                status = zygote.wait(pid, timeout)
                if status is None:
                    zygote.kill(pid)
                    zygote.wait(pid, 10)
            else:
                try:
                    status = proc.wait(timeout=timeout)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, 9)
                    proc.wait()
                    status = None
        finally:
            with _RUNNING_LOCK:
                _RUNNING.pop(running, None)
        for reader in readers:
            reader.join(30)
    console = (console[0] if console else b"").decode("utf-8", "replace")
    if status is None:
        raise SuiteFailed(f"the hidden suite did not finish within {timeout:g} s")
    data = report[0] if report else b""
    if not data:
        raise SuiteFailed(f"the hidden suite exited with status {status} and wrote no "
                          f"report:\n{console[-4000:]}")
    try:
        return json.loads(data), console
    except json.JSONDecodeError as error:
        raise SuiteFailed(f"the hidden suite's report is not JSON ({error})") from None


def catalog(options, zygote=None):
    """The hidden tests with their points and parts, without running any."""
    report, console = run_pytest(options, ["--collect-only", "--attnkit-catalog"], timeout=300,
                                 zygote=zygote)
    if report.get("errors") or not report.get("catalog"):
        detail = "\n".join(report.get("errors", [])) or console[-3000:]
        raise SuiteFailed("the hidden suite could not be collected:\n" + detail)
    return report["catalog"]


def run_suite(options, submission_file, stage_dir, zygote=None):
    """The hidden suite's report for one staged submission."""
    report, console = run_pytest(options, ["--submission", submission_file,
                                           "--stage-dir", stage_dir],
                                 timeout=options.process_seconds(), zygote=zygote)
    report["console"] = console[-20000:]
    return report
