"""A trusted process forked from a held session (grader/grade/held.py) grades as one that ran
pytest itself: the same report, field for field, for right, wrong and broken submissions.
Which runs a session is held for (serving.held_key), and what happens when a held server
cannot hold its session or dies."""
import os
import signal
import tempfile

import pytest

from conftest import copy_kit, stage_folder
from grader import assignment
from grader.catalog import Catalog
from grader.grade import serving, trusted

ATTENTION = assignment.load("attention")
CATALOG = Catalog.of(ATTENTION)
with open(ATTENTION.solution, encoding="utf-8") as _handle:
    SOLUTION = _handle.read()

RUN = ["--submission", "/s/a/attention.py", "--stage-dir", "/s/a/workers",
       "--attnkit-report-fd", "{report_fd}"]
BASE = ["/kit/tests_hidden/attention", "--isolation", "none", "--carry-forward", "on"]
CHECKED = {"ATTNKIT_ISOLATION_CHECKED": "none:"}


def test_a_submissions_run_is_held_for_the_batchs_arguments_less_its_own():
    key = serving.held_key({"args": BASE + RUN, "env": dict(CHECKED, HOME="/root")})
    assert key == (tuple(BASE), (("ATTNKIT_ISOLATION_CHECKED", "none:"),))
    other = ["--submission", "/s/b/attention.py", "--stage-dir", "/s/b/workers",
             "--attnkit-report-fd", "{report_fd}"]
    assert serving.held_key({"args": BASE + other, "env": CHECKED}) == key
    assert serving.held_key({"args": RUN + BASE, "env": CHECKED}) == key  # wherever they are
    assert serving.per_submission(BASE + other) == {
        "--submission": "/s/b/attention.py", "--stage-dir": "/s/b/workers",
        "--attnkit-report-fd": "{report_fd}"}
    # another setting of the batch, or another level checked: another session
    off = ["/kit/tests_hidden/attention", "--isolation", "none", "--carry-forward", "off"]
    assert serving.held_key({"args": off + RUN, "env": CHECKED}) not in (None, key)
    assert serving.held_key({"args": BASE + RUN, "env": {}}) not in (None, key)


@pytest.mark.parametrize("args", [
    BASE + ["--collect-only", "--attnkit-catalog", "--attnkit-report-fd", "{report_fd}"],
    BASE + RUN + ["--collect-only"],
    BASE + RUN[:2] + RUN[4:],                              # no stage folder
    BASE + RUN[:-1],                                       # the report's fd without its value
    BASE + ["--submission=/s/a/attention.py"] + RUN[2:],   # an option as pytest also reads it
    BASE + RUN[:2] + RUN,                                  # two submissions
    [*BASE, 7, *RUN],                                      # not all text
], ids=["catalog", "collect-only", "no-stage", "no-fd-value", "equals-form", "twice",
        "not-text"])
def test_no_other_run_is_held(args):
    assert serving.held_key({"args": args, "env": CHECKED}) is None
    assert serving.held_key({"args": "not a list"}) is None
    assert serving.held_key({"args": BASE + RUN, "env": ["not", "a", "dict"]}) is None


def _stage(stage, name, source):
    """`source` staged as intake stages a submission: (its module file, a workers folder)."""
    folder = os.path.join(stage, name)
    os.makedirs(folder, mode=0o755, exist_ok=True)
    os.chmod(folder, 0o755)
    path = os.path.join(folder, ATTENTION.module_file)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(source)
    os.chmod(path, 0o644)
    workers = tempfile.mkdtemp(prefix="workers-", dir=folder)
    os.chmod(workers, 0o711)
    return path, workers


def _as_compared(report):
    """A report less what differs between two runs of one submission on any path: times,
    costs, how many reference results were computed or kept, the console, and how the
    trusted process started (said on its own)."""
    kept = {k: v for k, v in report.items()
            if k not in ("seconds", "costs", "case_results", "console")}
    kept["tests"] = [{k: v for k, v in t.items() if k != "seconds"} for t in report["tests"]]
    kept["isolation"] = {k: v for k, v in report["isolation"].items() if k != "trusted_start"}
    return kept


class _Batch:
    """The parts of a batch grade_batch starts: a fork server and its worker template."""

    def __init__(self, options):
        self.options = options
        self.zygote = trusted.start_zygote(options, 1)
        self.template = trusted.start_worker_template(self.zygote)

    def close(self):
        trusted.stop_worker_template(self.template)
        trusted.stop_zygote(self.zygote)


SUBMISSIONS = {
    "right": SOLUTION,
    # two mistakes, one a callee's (error carried forward asks the worker at the session's
    # end), and a line printed as it is imported
    "prints+mask-inverted+dot-no-scale": "print('hello from the submission')\n" + (
        CATALOG.by_id("dot-no-scale").apply(CATALOG.by_id("mask-inverted").apply(SOLUTION))),
    "syntax-error": SOLUTION.replace("def sequence_mask(", "def sequence_mask((", 1),
    "raises-at-import": "raise RuntimeError('not today')\n" + SOLUTION,
}


@pytest.fixture(scope="module")
def batch():
    """One fork server for the tests below, as a batch has: the suites they grade (the kit's
    and copies) each get a held session of their own."""
    started = _Batch(trusted.SuiteOptions(isolation="auto"))
    yield started
    started.close()


@pytest.mark.slow
def test_a_trusted_process_forked_from_a_held_session_reports_what_a_fresh_one_does(batch):
    assert SUBMISSIONS["syntax-error"] != SOLUTION
    options = batch.options
    stage = stage_folder()
    staged = {name: _stage(stage, name, source) for name, source in SUBMISSIONS.items()}
    catalog = trusted.catalog(options, batch.zygote)
    held = {name: trusted.run_suite(options, path, workers, batch.zygote, catalog)
            for name, (path, workers) in staged.items()}
    # the same files, each in a fresh `python -m pytest` (no fork server)
    fresh = {name: trusted.run_suite(options, path, _stage(stage, name, source)[1], None,
                                     catalog)
             for (name, (path, _)), source in zip(staged.items(), SUBMISSIONS.values())}
    for name in SUBMISSIONS:
        assert held[name]["isolation"]["trusted_start"] == trusted.TRUSTED_STARTS["held"], name
        assert fresh[name]["isolation"]["trusted_start"] == trusted.TRUSTED_STARTS["fresh"]
        assert _as_compared(held[name]) == _as_compared(fresh[name]), name
    # and they are what each submission earned: not one report for all
    passed = {name: sum(t["outcome"] == "passed" for t in report["tests"])
              for name, report in held.items()}
    wrong = "prints+mask-inverted+dot-no-scale"
    assert passed["right"] == 67 and 0 < passed[wrong] < 67
    assert passed["syntax-error"] == passed["raises-at-import"] == 0
    assert any(t.get("carried") for t in held[wrong]["tests"]), "nothing carried forward"
    assert "hello from the submission" in held[wrong]["submission"]["stdout"]
    assert "not today" in held["raises-at-import"]["submission"]["load_error"]


@pytest.mark.slow
def test_a_session_that_cannot_be_held_is_run_from_the_start_and_says_why(tmp_path, batch):
    """A hidden suite whose conftest fails never reaches its test loop: the held server says
    it holds nothing, and the submission's trusted process runs pytest from the start, which
    reports the failure as a fresh one does."""
    copy_kit(tmp_path / "kit", parts=("tests_hidden",))
    suite = tmp_path / "kit" / "tests_hidden" / "attention"
    with open(suite / "conftest.py", "a", encoding="utf-8") as handle:
        handle.write("\nraise RuntimeError('the conftest of this copy is broken')\n")
    options = trusted.SuiteOptions(hidden_tests=str(suite), isolation="auto")
    path, workers = _stage(stage_folder(), "right", SOLUTION)
    failures = []
    for zygote in (batch.zygote, None):
        with pytest.raises(trusted.SuiteFailed) as failed:
            trusted.run_suite(options, path, workers, zygote, None)
        failures.append(str(failed.value))
    assert batch.zygote.restarts == 0  # the server went on serving
    for said in failures:
        assert "exited with status exit status 4 and wrote no report" in said, said
        assert "the conftest of this copy is broken" in said, said


@pytest.mark.slow
def test_a_gpu_run_is_never_held(tmp_path, batch):
    """A run that uses a CUDA device (suite/plugin.py sets config.attnkit_gpu when there is
    one) may have started CUDA in the process that asked, and a process that started it must
    never fork: its session is not held, and each trusted process is forked before pytest
    starts. (No CUDA device here: a copy of the suite says it has one.)"""
    copy_kit(tmp_path / "kit", parts=("tests_hidden",))
    suite = tmp_path / "kit" / "tests_hidden" / "attention"
    with open(suite / "conftest.py", "a", encoding="utf-8") as handle:
        handle.write("\nimport pytest\n\n\n@pytest.hookimpl(trylast=True)\n"
                     "def pytest_configure(config):\n    config.attnkit_gpu = True\n")
    options = trusted.SuiteOptions(hidden_tests=str(suite), isolation="auto")
    stage = stage_folder()
    starts = [trusted.run_suite(options, *_stage(stage, name, SOLUTION), batch.zygote,
                                None)["isolation"]["trusted_start"]
              for name in ("first", "second")]
    assert starts == [trusted.TRUSTED_STARTS["forked"]] * 2


def _held_servers(zygote):
    """The pids of the held servers of `zygote`'s server: its children less the template."""
    pid = zygote.proc.pid
    with open(f"/proc/{pid}/task/{pid}/children", encoding="ascii") as handle:
        children = {int(p) for p in handle.read().split()}
    return children - {zygote.template_said.get("template")}


@pytest.mark.slow
def test_a_held_server_that_dies_takes_its_fork_server_with_it_and_the_next_is_held_again():
    options = trusted.SuiteOptions(isolation="auto")
    stage = stage_folder()
    batch = _Batch(options)
    try:
        path, workers = _stage(stage, "first", SOLUTION)
        first = trusted.run_suite(options, path, workers, batch.zygote, None)
        assert first["isolation"]["trusted_start"] == trusted.TRUSTED_STARTS["held"]
        held = _held_servers(batch.zygote)
        assert len(held) == 1, held
        os.kill(held.pop(), signal.SIGKILL)
        batch.zygote.proc.wait(timeout=30)  # the fork server ends with it
        path, workers = _stage(stage, "second", SOLUTION)
        second = trusted.run_suite(options, path, workers, batch.zygote, None)
        assert batch.zygote.restarts == 1
        assert second["isolation"]["trusted_start"] == trusted.TRUSTED_STARTS["held"]
        assert _as_compared(second) == _as_compared(first)
    finally:
        batch.close()
