"""pytest plugin loaded into the trusted grading process: it records each hidden test's outcome.

Every outcome is classified before it leaves the process:
    passed / skipped                      as pytest says
    failed, blame "student"               a StudentFailure or AssertionError (the message is
                                          written for the student), or a pytest-timeout
    failed, blame "grader"                anything else: a bug in the grader or the reference;
                                          the student sees that it was not their fault and the
                                          instructor gets the traceback
A failed case may be re-scored as passed at the session's end, "carried forward", by the
hidden suite's plugin (grader/suite/plugin.py, grader/catalog/carry.py): its entry then says so ("carried").
The report is written as JSON to a file descriptor inherited from `grader grade` (never to
a file a worker could reach). With --attnkit-catalog the plugin only lists the tests.
"""
import json
import os
import time
import traceback

import pytest

from grader import i18n
from grader.grade import turns
from grader.harness import memo
from grader.harness.failures import StudentFailure
from grader.sandbox import client
from grader.i18n import N_, _

GRADER_FAULT = N_("The grader itself failed on this test; this is not your fault and costs you "
                  "nothing once your instructor has looked at it.")


def pytest_addoption(parser):
    group = parser.getgroup("attnkit report")
    group.addoption("--attnkit-report-fd", type=int, default=None)
    group.addoption("--attnkit-catalog", action="store_true",
                    help="with --collect-only: report the tests with their points and parts")
    group.addoption("--attnkit-lang", choices=i18n.languages(), default="en",
                    help="language of the messages students read (grader/i18n.py)")
    group.addoption("--attnkit-parts", default=None,
                    help="JSON list: only the tests of these parts run (grader/shards.py)")


def _marker_arg(item, name, default=None):
    marker = item.get_closest_marker(name)
    return marker.args[0] if marker and marker.args else default


def _skip_reason(item):
    for marker in item.iter_markers("skipif"):
        condition = marker.args[0] if marker.args else marker.kwargs.get("condition")
        if condition is True:
            return marker.kwargs.get("reason", "skipped")
    return None


def _describe(item):
    case = getattr(item, "callspec", None) and item.callspec.params.get("case")
    return {"nodeid": item.nodeid, "name": getattr(case, "id", item.name),
            "target": getattr(case, "target", None),  # the function or module it calls
            "part": _marker_arg(item, "part", "other"),
            "points": float(_marker_arg(item, "points", 0)),
            "skip": _skip_reason(item)}


class Recorder:
    def __init__(self, config):
        self.config = config
        self.tests = {}
        self.order = []
        self.errors = []
        self.started = time.monotonic()
        self.waited = 0.0  # for its turn (turns.py): not part of the time it reports

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtestloop(self, session):
        """Once the suite is collected and before the hidden suite starts the submission's
        worker (suite/plugin.py, the same hook): wait for this submission's turn
        (turns.py); none came, the grader stopped: the session ends here."""
        waited = turns.wait_for_turn()
        if waited is None:
            pytest.exit("the grader stopped before this submission's turn", returncode=3)
        self.waited = waited
        yield

    def _record(self, item):
        if item.nodeid not in self.tests:
            self.tests[item.nodeid] = dict(_describe(item), outcome="passed", blame=None,
                                           message="", seconds=0.0)
            self.order.append(item.nodeid)
        return self.tests[item.nodeid]

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        report = outcome.get_result()
        entry = self._record(item)
        entry["seconds"] += call.duration
        if report.skipped and call.excinfo is not None:
            entry["outcome"] = "skipped"
            reason = call.excinfo.value
            entry["message"] = str(getattr(reason, "msg", reason))
            return
        if not report.failed:
            return
        entry["outcome"] = "failed"
        error = call.excinfo.value if call.excinfo else None
        if isinstance(error, (StudentFailure, AssertionError)) and call.when == "call":
            entry["blame"] = "student"
            entry["message"] = str(error)
            # the evidence a failure carries (grader/catalog/diagnose.py, harness/compare.py)
            entry["mistakes"] = list(getattr(error, "mistakes", None) or [])
            entry["heatmap"] = getattr(error, "heatmap", None)
        elif call.when == "call" and "Timeout" in str(error) and "pytest-timeout" in str(error):
            entry["blame"] = "student"
            entry["message"] = _("This test took longer than its time limit ({seconds} s) and "
                                 "was stopped.").format(
                                     seconds=self.config.getoption("timeout", None))
            student = getattr(self.config, "attnkit_student", None)
            if student is not None:
                student.abandon_worker()
        else:
            entry["blame"] = "grader"
            entry["message"] = _(GRADER_FAULT)
            text = "".join(traceback.format_exception(type(error), error, error.__traceback__)) \
                if error is not None else str(report.longrepr)
            entry["grader_traceback"] = text[-8000:]

    def pytest_collectreport(self, report):
        if report.failed:
            self.errors.append(f"collecting {report.nodeid}: {report.longrepr}"[-4000:])

    def catalog(self, session):
        return [_describe(item) for item in session.items]

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session, exitstatus):
        if client.none_running():  # the suite's session end stopped the worker: the next
            turns.done()           # submission's turn need not wait for this report
        fd = self.config.getoption("--attnkit-report-fd")
        if fd is None:
            return
        # the hidden suite's own objections (grader/suite/plugin.py), with collection errors
        errors = self.errors + [str(e)[:2000] for e in getattr(self.config, "attnkit_suite_errors", [])]
        if self.config.getoption("--attnkit-catalog"):
            payload = {"catalog": self.catalog(session), "errors": errors}
        else:
            student = getattr(self.config, "attnkit_student", None)
            level = getattr(self.config, "attnkit_isolation", None)
            payload = {
                "tests": [self.tests[n] for n in self.order],
                "errors": errors,
                "exitstatus": int(exitstatus),
                "seconds": time.monotonic() - self.started - self.waited,
                "isolation": dict(level.describe(), **(student.limits_applied() if student else {}))
                if level else None,
                "submission": student.summary() if student else None,
                # per part that lost points, made by the hidden suite at the session's end
                "diagnoses": list(getattr(self.config, "attnkit_diagnoses", None) or []),
                # the reference's and the catalog's results: computed here or kept from
                # an earlier submission of the batch (harness/memo.py)
                "case_results": memo.counts(),
                # error carried forward: on | off (grader/catalog/carry.py)
                "carry_forward": getattr(self.config, "attnkit_carry_forward", None),
                # round trips with the worker and its CPU seconds (grader/bench.py)
                "costs": student.costs() if student and hasattr(student, "costs") else None,
            }
        data = json.dumps(payload).encode()
        with os.fdopen(fd, "wb", closefd=True) as out:
            out.write(data)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(session, config, items):
    """--attnkit-parts: the other parts' tests are deselected (after the suite's own check
    that every part's points add up), so neither the catalog nor the report lists them."""
    wanted = config.getoption("--attnkit-parts", None)
    if wanted is None:
        return
    wanted = set(json.loads(wanted))
    keep = [item for item in items if _marker_arg(item, "part", "other") in wanted]
    dropped = [item for item in items if _marker_arg(item, "part", "other") not in wanted]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep


def _said(item):
    """item.repr_failure, but a StudentFailure is said by its message: the Recorder reads the
    exception itself, and pytest's traceback of it (2-5 ms a failed case, 67 in a file that
    does not import) would only reach the console."""
    original = item.repr_failure

    def repr_failure(excinfo, *args, **kwargs):
        if isinstance(excinfo.value, StudentFailure) and not args and not kwargs:
            return f"{type(excinfo.value).__name__}: {excinfo.value}"
        return original(excinfo, *args, **kwargs)
    return repr_failure


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session):
    """The cases whose tests run here (selected and not skipped), for the hidden suite's one
    batch of probes (grader/suite/ahead.py): none of another part's or a skipped kind."""
    for item in session.items:
        item.repr_failure = _said(item)
    suite = getattr(session.config, "attnkit_suite", None)
    if suite is None or not hasattr(suite, "selected"):
        return
    suite.selected = {case.id for item in session.items
                      for case in [getattr(getattr(item, "callspec", None), "params", {}).get("case")]
                      if hasattr(case, "id") and _skip_reason(item) is None}


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    i18n.set_language(config.getoption("--attnkit-lang", "en") or "en")
    config.pluginmanager.register(Recorder(config), "attnkit-recorder")
