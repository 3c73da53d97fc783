"""The hidden suite's pytest plugin: options, fixtures and hooks, for any assignment.

A suite's folder (tests_hidden/<name>/) holds its declaration (assignment.toml), its case
table (cases.py), a conftest.py that loads this plugin and a test file that imports the
test functions (tests.py). Everything assignment-specific is read from the declaration of
the folder pytest is given:

    pytest tests_hidden/<name> --submission path/to/<module>.py

The run's state is one Session (session.py) on pytest's config, `config.attnkit_suite`.
"""
import json
import os
import shutil
import tempfile

import pytest
import torch

from .. import assignment as assignments
from ..catalog import carry, diagnose
from ..catalog.callgraph import CallGraph
from ..harness import Reference, StudentFailure, Submission
from ..sandbox import isolation
from ..sandbox.limits import Limits
from . import checks
from .session import Session
from .table import points_problems


def pytest_addoption(parser):
    group = parser.getgroup("hidden suite")
    group.addoption("--submission", help="the submission's module file (as staged by intake)")
    group.addoption("--reference", default=None,
                    help="the instructor's solution (default: the declaration's)")
    group.addoption("--isolation", default="auto", choices=isolation.CHOICES)
    group.addoption("--limits", default="{}", help="JSON object overriding fields of Limits")
    group.addoption("--stage-dir", default=None, help="where workers get their private folders")
    group.addoption("--no-gpu", action="store_true", help="grade as if there were no CUDA device")
    group.addoption("--carry-forward", default=carry.DEFAULT, choices=carry.SETTINGS,
                    help="error carried forward (grader/catalog/carry.py): on (default) or off")


def suite_folder(config):
    """The folder of the suite being run: the first of pytest's arguments (or a folder above
    it) that holds a declaration, else pytest's rootdir."""
    here = config.invocation_params.dir
    places = []
    for arg in config.args:
        path = (here / arg.split("::")[0]).resolve()
        places += [path, *path.parents]
    places += [config.rootpath]
    for folder in places:
        if os.path.isfile(os.path.join(folder, assignments.DECLARATION)):
            return str(folder)
    raise pytest.UsageError(f"no {assignments.DECLARATION} in {config.args or config.rootpath}: "
                            "run pytest on a hidden suite's folder (tests_hidden/<name>/)")


def pytest_configure(config):
    config.addinivalue_line("markers", "points(n): what the test is worth")
    config.addinivalue_line("markers", "part(name): the part of the assignment it grades")
    config.addinivalue_line("markers", "gpu: runs with every tensor on CUDA")
    config.addinivalue_line("markers", "cases(*checks): parametrize over the cases with these checks")
    config.attnkit_gpu = torch.cuda.is_available() and not config.getoption("--no-gpu")
    declared = assignments.load_folder(suite_folder(config))
    lang = getattr(config.option, "attnkit_lang", None) or "en"
    config.attnkit_suite = Session(declared, lang)


def _session(config):
    return config.attnkit_suite


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session):
    """Once the suite is collected (and, in a batch, this submission's turn has come: the
    grade plugin waits for it first), the submission's worker starts: collecting the
    suite needs none of the submission's code, so a trusted process prepared ahead
    collects before its turn, and its turn starts with the worker."""
    config = session.config
    path = config.getoption("--submission")
    if config.option.collectonly:
        return
    if not path:
        raise pytest.UsageError(f"pass --submission PATH (the "
                                f"{_session(config).assignment.module_file} to grade)")
    limits = Limits(**json.loads(config.getoption("--limits")))
    stage = config.getoption("--stage-dir")
    if not stage:  # run by hand: a folder of its own, removed when the session ends
        stage = config.attnkit_own_stage = tempfile.mkdtemp(prefix="attnkit-stage-")
    os.chmod(stage, 0o711)
    level = isolation.choose(config.getoption("--isolation"))
    config.attnkit_isolation = level
    config.attnkit_student = Submission(os.path.abspath(path), level, limits, stage,
                                        gpu=config.attnkit_gpu,
                                        assignment=_session(config).assignment)
    config.attnkit_student.start()
    # what the submission's own code calls, read from its source: diagnoses and error
    # carried forward name only callees it really reaches
    _session(config).graph = CallGraph.of_file(os.path.abspath(path))


def pytest_sessionfinish(session, exitstatus):
    config = session.config
    try:
        _finish(config, exitstatus)
    finally:  # once the worker has stopped
        own = getattr(config, "attnkit_own_stage", None)
        if own is not None:
            shutil.rmtree(own, ignore_errors=True)


def _finish(config, exitstatus):
    """The worker stopped (asked nothing after Ctrl-C), once the diagnoses and error carried
    forward, which still ask it, are done."""
    student = getattr(config, "attnkit_student", None)
    if student is not None and exitstatus == pytest.ExitCode.INTERRUPTED:
        # Ctrl-C (the grader's interrupt_all): it came in the middle of whatever ran, an
        # exchange with the worker among them, so the worker is stopped, not asked anything
        student.stop(interrupted=True)
    elif student is not None:
        suite = _session(config)
        recorder = config.pluginmanager.get_plugin("attnkit-recorder")
        tests = list(getattr(recorder, "tests", {}).values())
        # each case's matches and message as the checks left them: the diagnosis trims them
        as_run = {t["nodeid"]: (list(t.get("mistakes") or []), t.get("message", ""))
                  for t in tests}
        config.attnkit_diagnoses = _diagnoses(config)
        config.attnkit_carry_forward = config.getoption("--carry-forward")
        try:
            if config.attnkit_carry_forward == "on" and tests:  # the worker still runs
                named, others = _other_parts(config, tests, student)
                reference = _reference(config)
                changed = carry.carry_forward(
                    tests, suite.table.by_id, config.attnkit_diagnoses + named, reference,
                    student,
                    lambda case, implementation: checks.CHECKS[case.check](
                        suite, case, implementation, reference),
                    others=others, catalog=suite.catalog, assignment=suite.assignment,
                    graph=suite.graph)
                if changed:  # the diagnosis the student reads is of the cases as they stand
                    _as_judged(tests, as_run, suite)
                    config.attnkit_diagnoses = _diagnoses(config)
        except Exception as error:  # noqa: BLE001 - the grader's failure: said, never a 0
            config.attnkit_suite_errors = list(getattr(config, "attnkit_suite_errors", [])) + [
                f"carrying errors forward failed: {type(error).__name__}: {error}"]
        finally:
            student.stop()


def _as_judged(tests, as_run, suite):
    """Each failed case back as its checks left it, for the final diagnosis. A case judged
    on its own code (carry.py: its failed callees answered right, and it still failed)
    keeps what that run said and matched, its own function's mistakes only; where that run
    matched none but the case as it ran matched a mistake of its own function (one edit
    spanning it and its callees), the case as it ran, cut to those. A callee's mistake is
    named in the callee's part, once."""
    for test in tests:
        if test.get("outcome") != "failed" or test["nodeid"] not in as_run:
            continue
        note = test.get("carry_note")
        judged = note and note.get("why") == "differs"
        raw, message = as_run[test["nodeid"]]
        if judged and (test.get("mistakes") or not diagnose.own_matches(
                raw, note["target"], catalog=suite.catalog)):
            continue
        test["mistakes"], test["message"] = list(raw), message
        if judged:
            diagnose.keep_own(test, note["target"], suite.lang, catalog=suite.catalog)


def _other_parts(config, tests, student):
    """Under --attnkit-parts (grader/shards.py: the GPU part on a GPU node, say) the other
    parts have no tests here, so no diagnosis to carry from. Their cases are run here, after
    the session's own, unrecorded and unscored, and diagnosed as a whole run would; the
    diagnosis is used for error carried forward only. Returns (diagnoses, their entries)."""
    suite = _session(config)
    here = {t["part"] for t in tests}
    gpu = set(suite.assignment.gpu_parts)
    others = [case for case in suite.table if case.part not in here and case.part not in gpu]
    if not others:
        return [], []
    reference = _reference(config)
    entries = []
    for case in others:
        entry = {"nodeid": f"carry-forward::{case.id}", "name": case.id, "part": case.part,
                 "outcome": "passed", "blame": None, "message": "", "mistakes": []}
        try:
            checks.CHECKS[case.check](suite, case, student, reference)
        except StudentFailure as failure:
            entry.update(outcome="failed", blame="student", message=str(failure),
                         mistakes=list(getattr(failure, "mistakes", None) or []))
            suite.fail(case.part)
        entries.append(entry)
    named = diagnose.diagnose_parts(
        entries, suite.table.by_id,
        lambda case, implementation: checks.passes(suite, case, implementation, reference),
        reference.path, lang=suite.lang, catalog=suite.catalog)
    return named, entries


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Which parts have failed a case so far: the diagnosis searches those parts' mistakes."""
    outcome = yield
    if outcome.get_result().failed:
        suite = _session(item.config)
        part = suite.parts.get(item.nodeid)
        if part:
            suite.fail(part)


def _diagnoses(config):
    """One diagnosis per part that lost points (grader/catalog/diagnose.py), for the report.
    A failure here costs the feedback its diagnoses, never the grades."""
    recorder = config.pluginmanager.get_plugin("attnkit-recorder")
    if recorder is None or not getattr(recorder, "tests", None):
        return []
    suite = _session(config)
    reference = _reference(config)
    try:
        return diagnose.diagnose_parts(
            list(recorder.tests.values()), suite.table.by_id,
            lambda case, implementation: checks.passes(suite, case, implementation, reference),
            reference.path, lang=suite.lang, catalog=suite.catalog)
    except Exception as error:  # noqa: BLE001 - reported, and the grades stand
        return [{"part": "(all)", "mistake": None, "experiment": "",
                 "text": f"(the grader could not make its diagnosis: {type(error).__name__})"}]


def pytest_generate_tests(metafunc):
    marker = metafunc.definition.get_closest_marker("cases")
    if marker is not None:
        table = _session(metafunc.config).table
        metafunc.parametrize("case", checks.params(table.cases(*marker.args),
                                                   metafunc.config.attnkit_gpu))


def pytest_collection_modifyitems(session, config, items):
    """The table must be sound (Table.problems) and the points of the tests that run here
    must add up to what the declaration gives each part and the whole (the CUDA and the
    device-discipline tests stand in for each other), or nothing is graded."""
    suite = _session(config)
    config.attnkit_suite_errors = []
    # a kind of check the table has no case of: pytest's empty parameter set, not a test
    unused = [item for item in items if item.get_closest_marker("cases") is not None
              and not hasattr(getattr(getattr(item, "callspec", None), "params", {})
                              .get("case"), "check")]
    if unused:
        config.hook.pytest_deselected(items=unused)
        items[:] = [item for item in items if item not in unused]
    for item in items:
        marker = item.get_closest_marker("part")
        if marker is not None and marker.args:
            suite.parts[item.nodeid] = marker.args[0]

    def skipped(item):
        return any(m.args and m.args[0] is True for m in item.iter_markers("skipif"))

    totals = {}
    for item in items:
        marker = item.get_closest_marker("points")
        if marker is not None and not skipped(item):
            part = suite.parts.get(item.nodeid, "other")
            totals[part] = totals.get(part, 0) + marker.args[0]
    # reported by the grader's plugin: `grader grade` and `grader validate` stop with it
    config.attnkit_suite_errors = suite.table.problems() + points_problems(suite.assignment,
                                                                           totals)


@pytest.fixture(scope="session")
def suite(request):
    """The run's Session: the assignment, its table and what the run has learnt."""
    return _session(request.config)


@pytest.fixture(scope="session")
def student(request):
    return request.config.attnkit_student


def _reference(config):
    if getattr(config, "attnkit_reference", None) is None:
        path = config.getoption("--reference") or _session(config).assignment.solution
        config.attnkit_reference = Reference(path, assignment=_session(config).assignment)
    return config.attnkit_reference


@pytest.fixture(scope="session")
def reference(request):
    return _reference(request.config)
