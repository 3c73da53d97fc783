"""Run the hidden suite in a trusted process of its own, one per submission.

The trusted process imports the reference solution and the hidden tests, starts the
submission's worker (see grader/sandbox) and reports each test's outcome as JSON over a
pipe that only it holds. `grader grade` never imports student code and never reads a
file a worker could have written.
"""
import dataclasses
import json
import os
import subprocess
import sys
import tempfile
import threading

from .. import paths
from ..sandbox.limits import Limits


@dataclasses.dataclass(frozen=True)
class SuiteOptions:
    hidden_tests: str = paths.HIDDEN_TESTS
    solution: str = paths.SOLUTION
    isolation: str = "auto"
    limits: Limits = Limits()
    no_gpu: bool = False

    def pytest_args(self):
        args = [os.path.abspath(self.hidden_tests), "-c",
                os.path.join(os.path.abspath(self.hidden_tests), "pytest.ini"),
                "--rootdir", os.path.abspath(self.hidden_tests),
                "-p", "grader.grade.plugin", "-q", "--no-header", "-rN",
                "--reference", os.path.abspath(self.solution),
                "--isolation", self.isolation,
                "--limits", json.dumps(dataclasses.asdict(self.limits)),
                "--timeout", str(int(4 * self.limits.call_seconds + 30))]
        if self.no_gpu:
            args.append("--no-gpu")
        return args

    def process_seconds(self):
        """How long the trusted process may take before it counts as a grader failure."""
        return self.limits.submission_seconds + self.limits.startup_seconds + 120


class SuiteFailed(Exception):
    """The trusted process did not produce a report: a failure of the grader itself."""


def _environment():
    kit = paths.KIT_ROOT
    path = os.pathsep.join(p for p in (kit, os.environ.get("PYTHONPATH")) if p)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": path,
           "HOME": os.environ.get("HOME", "/tmp"), "LANG": "C.UTF-8", "OMP_NUM_THREADS": "1",
           "PYTHONDONTWRITEBYTECODE": "1"}
    return env


def run_pytest(options, extra_args, timeout):
    """Run pytest with our plugin; returns (report dict, console text)."""
    read_fd, write_fd = os.pipe()
    with tempfile.TemporaryDirectory(prefix="attnkit-trusted-") as cwd:
        cmd = [sys.executable, "-m", "pytest", *options.pytest_args(),
               "--attnkit-report-fd", str(write_fd), *extra_args]
        proc = subprocess.Popen(cmd, cwd=cwd, env=_environment(), stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                pass_fds=(write_fd,), start_new_session=True)
        os.close(write_fd)
        chunks = []
        reader = threading.Thread(target=lambda: chunks.append(_read_all(read_fd)), daemon=True)
        reader.start()
        try:
            console, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.communicate()
            reader.join(5)
            raise SuiteFailed(f"the hidden suite did not finish within {timeout:g} s") from None
        reader.join(30)
    console = console.decode("utf-8", "replace")
    data = chunks[0] if chunks else b""
    if not data:
        raise SuiteFailed(f"the hidden suite exited with status {proc.returncode} and wrote no "
                          f"report:\n{console[-4000:]}")
    try:
        return json.loads(data), console
    except json.JSONDecodeError as error:
        raise SuiteFailed(f"the hidden suite's report is not JSON ({error})") from None


def _read_all(fd):
    with os.fdopen(fd, "rb") as handle:
        return handle.read()


def catalog(options):
    """The hidden tests with their points and parts, without running any."""
    report, console = run_pytest(options, ["--collect-only", "--attnkit-catalog"], timeout=300)
    if report.get("errors") or not report.get("catalog"):
        raise SuiteFailed("the hidden suite could not be collected:\n"
                          + "\n".join(report.get("errors", [])) + console[-3000:])
    return report["catalog"]


def run_suite(options, submission_file, stage_dir):
    """The hidden suite's report for one staged submission."""
    report, console = run_pytest(options, ["--submission", submission_file,
                                           "--stage-dir", stage_dir],
                                 timeout=options.process_seconds())
    report["console"] = console[-20000:]
    return report
