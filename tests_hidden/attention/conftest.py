"""Fixtures of the hidden suite: the reference (here) and the submission (in its worker).

Run by `grader grade`, or by hand:  pytest tests_hidden --submission path/to/attention.py
"""
import json
import os
import tempfile

import pytest
import torch

import checks
from cases import CASES, TOTAL_POINTS, cases
from checks import params
from grader.catalog import carry, diagnose
from grader.harness import Reference, StudentFailure, Submission
from grader.sandbox import isolation
from grader.sandbox.limits import Limits

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_REFERENCE = os.path.join(os.path.dirname(os.path.dirname(HERE)), "solutions", "attention.py")


def pytest_addoption(parser):
    group = parser.getgroup("attention kit")
    group.addoption("--submission", help="the submission's attention.py (as staged by intake)")
    group.addoption("--reference", default=DEFAULT_REFERENCE, help="the instructor's solution")
    group.addoption("--isolation", default="auto", choices=isolation.CHOICES)
    group.addoption("--limits", default="{}", help="JSON object overriding fields of Limits")
    group.addoption("--stage-dir", default=None, help="where workers get their private folders")
    group.addoption("--no-gpu", action="store_true", help="grade as if there were no CUDA device")
    group.addoption("--carry-forward", default=carry.DEFAULT, choices=carry.SETTINGS,
                    help="error carried forward (grader/catalog/carry.py): on (default) or off")


def pytest_configure(config):
    config.addinivalue_line("markers", "points(n): what the test is worth")
    config.addinivalue_line("markers", "part(name): the part of the assignment it grades")
    config.addinivalue_line("markers", "gpu: runs with every tensor on CUDA")
    config.addinivalue_line("markers", "cases(*checks): parametrize over the cases with these checks")
    config.attnkit_gpu = torch.cuda.is_available() and not config.getoption("--no-gpu")
    lang = getattr(config.option, "attnkit_lang", None) or "en"
    checks.LANG[0] = "zh" if str(lang).startswith("zh") else "en"


def pytest_sessionstart(session):
    config = session.config
    path = config.getoption("--submission")
    if config.option.collectonly:
        return
    if not path:
        raise pytest.UsageError("pass --submission PATH (the attention.py to grade)")
    limits = Limits(**json.loads(config.getoption("--limits")))
    stage = config.getoption("--stage-dir") or tempfile.mkdtemp(prefix="attnkit-stage-")
    os.chmod(stage, 0o711)
    level = isolation.choose(config.getoption("--isolation"))
    config.attnkit_isolation = level
    config.attnkit_student = Submission(os.path.abspath(path), level, limits, stage,
                                        gpu=config.attnkit_gpu)
    config.attnkit_student.start()


def pytest_sessionfinish(session):
    config = session.config
    student = getattr(config, "attnkit_student", None)
    if student is not None:
        recorder = config.pluginmanager.get_plugin("attnkit-recorder")
        tests = list(getattr(recorder, "tests", {}).values())
        # what each case matched, before the diagnosis keeps only what it qualified
        before = {t["nodeid"]: list(t.get("mistakes") or []) for t in tests}
        config.attnkit_diagnoses = _diagnoses(config)
        config.attnkit_carry_forward = config.getoption("--carry-forward")
        try:
            if config.attnkit_carry_forward == "on" and tests:  # the worker still runs
                named, others, seen = _other_parts(config, tests, student)
                carry.carry_forward(tests, {case.id: case for case in CASES},
                                    config.attnkit_diagnoses + named, dict(before, **seen),
                                    _reference(config), student, checks.passes,
                                    checks.shows_it_works, checks._state, others=others)
        except Exception as error:  # noqa: BLE001 - the grader's failure: said, never a 0
            config.attnkit_suite_errors = list(getattr(config, "attnkit_suite_errors", [])) + [
                f"carrying errors forward failed: {type(error).__name__}: {error}"]
        finally:
            student.stop()


def _other_parts(config, tests, student):
    """Under --attnkit-parts (grader/shards.py: the GPU part on a GPU node, say) the other
    parts have no tests here, so no diagnosis to carry from. Their cases are run here, after
    the session's own, unrecorded and unscored, and diagnosed as a whole run would; the
    diagnosis is used for error carried forward only. Returns (diagnoses, their entries,
    {nodeid: the ids each case matched before the diagnosis})."""
    here = {t["part"] for t in tests}
    others = [case for case in CASES if case.part not in here and case.part != "GPU"]
    if not others:
        return [], [], {}
    reference = _reference(config)
    entries = []
    for case in others:
        entry = {"nodeid": f"carry-forward::{case.id}", "name": case.id, "part": case.part,
                 "outcome": "passed", "blame": None, "message": "", "mistakes": []}
        try:
            checks.CHECKS[case.check](case, student, reference)
        except StudentFailure as failure:
            entry.update(outcome="failed", blame="student", message=str(failure),
                         mistakes=list(getattr(failure, "mistakes", None) or []))
            checks.FAILED_PARTS.add(case.part)
        entries.append(entry)
    seen = {e["nodeid"]: list(e["mistakes"]) for e in entries}
    table = {case.id: case for case in CASES}
    named = diagnose.diagnose_parts(
        entries, table, lambda case, implementation: checks.passes(case, implementation, reference),
        reference.path, lang=checks.LANG[0])
    return named, entries, seen


def pytest_runtest_logreport(report):
    """Which parts have failed a case so far: the diagnosis searches those parts' mistakes."""
    if report.failed:
        part = _PARTS.get(report.nodeid)
        if part:
            checks.FAILED_PARTS.add(part)


_PARTS = {}  # nodeid -> part, filled at collection


def _diagnoses(config):
    """One diagnosis per part that lost points (grader/catalog/diagnose.py), for the report.
    A failure here costs the feedback its diagnoses, never the grades."""
    recorder = config.pluginmanager.get_plugin("attnkit-recorder")
    if recorder is None or not getattr(recorder, "tests", None):
        return []
    reference = _reference(config)
    table = {case.id: case for case in CASES}
    try:
        return diagnose.diagnose_parts(
            list(recorder.tests.values()), table,
            lambda case, implementation: checks.passes(case, implementation, reference),
            reference.path, lang=checks.LANG[0])
    except Exception as error:  # noqa: BLE001 - reported, and the grades stand
        return [{"part": "(all)", "mistake": None, "experiment": "",
                 "text": f"(the grader could not make its diagnosis: {type(error).__name__})"}]


def pytest_generate_tests(metafunc):
    marker = metafunc.definition.get_closest_marker("cases")
    if marker is not None:
        metafunc.parametrize("case", params(cases(*marker.args), metafunc.config.attnkit_gpu))


def pytest_collection_modifyitems(session, config, items):
    """The points of the tests that run here must add up to the assignment's declared total
    (the CUDA and the device-discipline tests stand in for each other), or nothing is graded."""
    config.attnkit_suite_errors = []
    for item in items:
        marker = item.get_closest_marker("part")
        if marker is not None and marker.args:
            _PARTS[item.nodeid] = marker.args[0]

    def skipped(item):
        return any(m.args and m.args[0] is True for m in item.iter_markers("skipif"))

    total = 0
    for item in items:
        marker = item.get_closest_marker("points")
        if marker is not None and not skipped(item):
            total += marker.args[0]
    if total != TOTAL_POINTS:
        # reported by the grader's plugin: `grader grade` and `grader validate` stop with it
        config.attnkit_suite_errors = [
            f"the hidden cases' points add up to {total:g}, not the assignment's declared total "
            f"of {TOTAL_POINTS} (tests_hidden/cases.py): change the points or TOTAL_POINTS"]


@pytest.fixture(scope="session")
def student(request):
    return request.config.attnkit_student


def _reference(config):
    if getattr(config, "attnkit_reference", None) is None:
        config.attnkit_reference = Reference(config.getoption("--reference"))
    return config.attnkit_reference


@pytest.fixture(scope="session")
def reference(request):
    return _reference(request.config)
