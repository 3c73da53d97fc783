"""The two implementations a hidden test compares: the reference here, the submission over there."""
import contextlib
import importlib.util
import os
import sys
import time

from .. import assignment as assignments
from ..i18n import _
from ..sandbox.client import Worker, WorkerFailure, capped_text
from ..textsafety import safe_text
from ..sandbox.runtime.probes import run_probe, seed as seed_generators
from . import memo
from .failures import GraderError, StudentFailure
from .results import ProbeResult, format_error


def load_module_from(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_ABSENT = object()


@contextlib.contextmanager
def earlier_solutions(assignment, _within=()):
    """builds_on in this trusted process. While open, the solution of each assignment that
    `assignment` builds on is importable by its module name, so that the later solution (or
    a catalog mistake made in it) can import from the earlier module by its name: the
    reference always builds on the earlier reference, whatever the declaration lets reach the
    worker. On leaving, sys.modules is as it was: no other reference, mistake or check
    finds them by that name."""
    saved = {}
    try:
        for _dep, earlier in assignment.earlier():
            if earlier.name == assignment.name or earlier.name in _within:
                raise GraderError(f"{assignment.name} builds on {earlier.name}, which builds "
                                  f"on {assignment.name}")
            with earlier_solutions(earlier, _within + (assignment.name,)):
                module = load_module_from(earlier.solution, f"{earlier.module}_reference")
            saved.setdefault(earlier.module, sys.modules.get(earlier.module, _ABSENT))
            sys.modules[earlier.module] = module
        yield
    finally:
        for name, before in saved.items():
            if before is _ABSENT:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = before


def earlier_solutions_of(solution_path):
    """earlier_solutions() of the declared assignment whose solution is `solution_path`,
    looked for in the solution's own kit (solutions/<module>.py: two folders up) and in this
    one; a context that does nothing when no declaration names it."""
    path = os.path.abspath(solution_path)
    for kit_root in dict.fromkeys((os.path.dirname(os.path.dirname(path)), None)):
        for name in assignments.names(kit_root):
            try:
                declared = assignments.load(name, kit_root)
            except assignments.AssignmentError:
                continue
            if declared.solution == path:
                return earlier_solutions(declared)
    return contextlib.nullcontext()


_REFERENCES = {}  # (path, its size and time, assignment) -> the solution's module, per process


class Reference:
    """The instructor's solution, imported into this trusted process (as
    `<module>_reference`: the declaration's module name), once per process (a trusted
    process forked from the batch's fork server finds it imported: grader/suite/warm.py)."""

    def __init__(self, path, assignment=None):
        self.path = os.path.abspath(path)
        self.assignment = assignment or assignments.load()
        try:
            info = os.stat(self.path)
            key = (self.path, info.st_size, info.st_mtime_ns, self.assignment.name,
                   self.assignment.folder)
            self.module = _REFERENCES.get(key)
            if self.module is None:
                with earlier_solutions(self.assignment):
                    self.module = load_module_from(self.path,
                                                   f"{self.assignment.module}_reference")
                _REFERENCES[key] = self.module
        except Exception as exc:
            raise GraderError(f"cannot import the reference solution {self.path}: {exc}") from exc

    def run(self, probe, call_text):
        """The reference's result: computed once per batch (harness/memo.py)."""
        owner = ("reference", self.path)
        raw = memo.get(owner, probe)
        if raw is None:
            raw = memo.put(owner, probe, run_probe(self.module, probe))
        return ProbeResult(raw, probe, "reference", call_text,
                           self.assignment.module_file).check_ran()

    def answering_sources(self):
        """({module name: the solution module that answers for it}, {name: where its module
        stores its weights}) for follow-through marking (answering.py): this assignment's
        solution, and the earlier solution of each module the student provides."""
        if getattr(self, "_answering", None) is None:
            sources = {self.assignment.module: self.module}
            weights = dict(self.assignment.weights)
            for dep, earlier in self.assignment.earlier():
                if dep.provide != "student":
                    continue
                with earlier_solutions(earlier):
                    sources[earlier.module] = load_module_from(
                        earlier.solution, f"{earlier.module}_reference_answers")
                for name, path in earlier.weights.items():
                    weights.setdefault(name, path)
            self._answering = (sources, weights)
        return self._answering

    def fresh_state(self, target, init, seed):
        """The weights of a freshly built reference module: what the student's module loads
        (built once per batch per case: memo.state; the same dict each time, write-protected
        tensors: read it, never write)."""
        def build():
            seed_generators(seed)
            module = getattr(self.module, target)(**init)
            return {name: t.detach().clone() for name, t in module.state_dict().items()}
        key = (self.path, target, tuple(sorted(init.items(), key=repr)), seed)
        return memo.state(key, build)


def _numel(expected):
    return expected.largest_numel() if expected is not None else None


def explain_import_error(error, imports=None, module_file=None):
    """Turn the exception raised while importing the submission into advice; `imports`
    (sandbox/stage.py Imports, the worker's): a missing module that is an earlier
    assignment's the student hands in is asked for by its file name. The student's file is
    named as `module_file` (else the imports' module's, else the default assignment's)."""
    if module_file is None:
        module_file = (f"{imports.module}.py" if imports is not None
                       else assignments.load().module_file)
    kind = str(error.get("type", "")) if isinstance(error, dict) else ""
    message = str(error.get("message", "")) if isinstance(error, dict) else ""
    text = format_error(error)
    if kind in ("ModuleNotFoundError", "ImportError") and "No module named" in message:
        missing = message.split("No module named", 1)[1].strip().strip("'\"").split(".")[0]
        needed = imports.earlier_file(missing) if imports is not None else None
        if needed:
            return _("importing {module} failed: it imports `{missing}`, the module of an "
                     "earlier assignment this one builds on, and no {file} was handed in with "
                     "it. Hand in your {file} beside {module} (in the same folder or zip).").format(
                         module=module_file, missing=missing, file=needed) + "\n" + text
        return _("importing {module} failed: it imports `{missing}`, which the grading "
                 "machine does not have (it has Python's standard library and torch). Copy what "
                 "you need from it into {module} instead of importing it.").format(
                     missing=missing, module=module_file) + "\n" + text
    if kind == "SyntaxError" or kind == "IndentationError":
        where = error.get("where") if isinstance(error, dict) else None
        last = where[-1].get("file") if isinstance(where, list) and where and \
            isinstance(where[-1], dict) else None
        if imports is not None and isinstance(last, str) and last.endswith(".py") and \
                imports.earlier_file(last[:-3]) == last:
            return _("{file}, your module of the earlier assignment that {module} imports, is "
                     "not valid Python, so {module} could not be imported and nothing in it "
                     "could be graded.").format(file=last, module=module_file) + "\n" + text
        return _("{module} is not valid Python, so nothing in it could be graded.").format(
            module=module_file) + "\n" + text
    if kind == "SystemExit":
        return _("{module} called sys.exit() while being imported, so nothing in it could be "
                 "graded. Remove top-level code that exits (put demos under "
                 "`if __name__ == '__main__':`).").format(module=module_file) + "\n" + text
    return _("importing {module} raised an error, so nothing in it could be graded. Code at "
             "the top level of the file runs on import: put tests and demos under "
             "`if __name__ == '__main__':`.").format(module=module_file) + "\n" + text


_EARLY = {}  # (submission path, stage folder) -> (a Worker begun early, what it was begun with)


def start_early(path, isolation, limits, stage_dir, gpu=False, assignment=None):
    """Begin the sandbox of `path`'s first worker now (Worker.begin: bwrap builds it while
    this process does other work, pytest's configuration and collection), for the Submission
    of the same path, folder and settings to finish (the batch's fork server calls this in
    each trusted process before pytest starts: grade/serving.py). A worker no Submission takes
    is stopped by discard_early()."""
    path = os.path.abspath(path)
    worker = Worker(path, isolation, limits, stage_dir, gpu=gpu, assignment=assignment)
    try:
        worker.begin()
    except WorkerFailure:
        worker.stop()
        return None
    _EARLY[(path, stage_dir)] = (worker, (isolation, limits, gpu, assignment))
    return worker


def _take_early(submission):
    found = _EARLY.pop((submission.path, submission.stage_dir), None)
    if found is None:
        return None
    worker, (isolation, limits, gpu, assignment) = found
    if (isolation.level, isolation.uid is None) != (submission.isolation.level,
                                                    submission.isolation.uid is None) \
            or limits != submission.limits or gpu != submission.gpu \
            or assignment.folder != submission.assignment.folder:
        worker.stop()  # begun with other settings than the suite's: not this one
        return None
    return worker


def discard_early():
    """Stop every worker begun early and not taken (a run that stopped before its session)."""
    while _EARLY:
        worker, _settings = _EARLY.pop(next(iter(_EARLY)))
        worker.stop()


class Submission:
    """The student's module file, reached only through a sandboxed worker process.

    A call that hangs, crashes or runs out of memory costs that call, marks its target as
    broken (later calls to it fail at once with the same reason) and the next call gets a
    fresh worker, so the other parts are still graded.
    """

    def __init__(self, path, isolation, limits, stage_dir, gpu=False, assignment=None):
        self.path, self.isolation, self.limits = path, isolation, limits
        self.assignment = assignment or assignments.load()  # its api is what the worker loads
        self.stage_dir, self.gpu = stage_dir, gpu
        self.worker = None
        self.loaded = False
        self.load_error = None
        self.api = {}
        self.cell_errors = []
        self.broken = {}
        self.printed = []
        self.workers_started = 0
        self.workers = []     # every Worker it started, for costs()
        self.limited_by = {}  # what limited its workers' memory and processes, as each said
        self.answers = {}     # digest of a probe -> the (checked) reply the worker sent to it
        self.refused = {}     # digest of a probe asked ahead -> why its call failed the worker
        self.answered = {}    # digest of an answered probe -> (reply or failure, asked, refused)
        self.broken_answered = {}  # target -> why its answered runs are not run (_call_failed)
        self.pending = {}     # digest of a probe asked ahead, its reply not read yet -> its ask
        self.held = {}        # digest of a speculative probe read -> (worker, what it printed)
        self._queue = []      # those asks, in the order the worker answers them
        self.deadline = time.monotonic() + limits.submission_seconds

    def start(self):
        """Start the worker early: Python and torch import while pytest collects."""
        self._new_worker()

    def _new_worker(self):
        early = _take_early(self)
        self.worker = early or Worker(self.path, self.isolation, self.limits, self.stage_dir,
                                      gpu=self.gpu, assignment=self.assignment)
        self.workers_started += 1
        self.workers.append(self.worker)
        self.loaded = False
        try:
            if early is not None:
                self.worker.finish()
            else:
                self.worker.start()
        except WorkerFailure as failure:
            raise GraderError(failure.reason) from None
        for key, value in self.worker.limited_by().items():
            self.limited_by.setdefault(key, set()).add(value)

    def limits_applied(self):
        """{"memory_limit": ..., "pids_limit": ...} as its workers were really run (a worker
        whose cgroup could not be made fell back to the watchdog, and this says so)."""
        return {key: " and ".join(sorted(values)) for key, values in self.limited_by.items()}

    def _remaining(self):
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise StudentFailure(
                _("Not run: the submission used up its total time limit of {seconds} s on "
                  "earlier tests.").format(seconds=f"{self.limits.submission_seconds:g}"))
        return left

    def _ensure_loaded(self):
        if self.load_error:
            raise StudentFailure(self.load_error)
        if self.worker is None or self.worker.failure is not None:
            self._collect_output()
            self._new_worker()
        if self.loaded:
            return
        try:
            self.worker.wait_ready()
        except WorkerFailure as failure:
            if failure.kind == "timeout":
                raise GraderError(f"the worker did not start: {failure.reason}") from None
            raise GraderError(f"the worker died while starting: {failure.reason}") from None
        timeout = min(self.limits.import_seconds, self._remaining())
        try:
            reply = self.worker.request({"op": "load", "names": list(self.assignment.api)}, timeout,
                                        doing=_("running the top level of {module}").format(
                                            module=self.assignment.module_file))
        except WorkerFailure as failure:
            self.load_error = _("importing {module} failed: {reason}. Code at the top level "
                                "of the file runs on import; an endless loop or exit there stops "
                                "everything (put demos under `if __name__ == '__main__':`).").format(
                                    reason=failure.reason, module=self.assignment.module_file)
            raise StudentFailure(self.load_error) from None
        # the reply was checked against replies.SCHEMAS["load"]: types, sizes, safe strings
        if reply.get("ok") is not True:
            self.load_error = explain_import_error(reply.get("error"), self.worker.imports,
                                                   self.assignment.module_file)
            raise StudentFailure(self.load_error)
        self.api = dict(reply.get("api", {}))
        self.cell_errors = [[str(n), kind, message] for n, kind, message in reply.get("cell_errors", [])]
        self.loaded = True

    def run(self, probe, call_text, expected=None):
        """Run `probe` in the worker; `expected` (the reference's ProbeResult for the same
        probe) bounds the size of the tensors the submission may send back. A probe asked
        again (the device tests rerun each case on the CPU first), or asked ahead by
        prefetch(), gets the answer it got."""
        target = probe["target"]
        asked = memo.digest(probe)
        if asked in self.refused:  # its call failed the worker during prefetch()
            raise StudentFailure(self.refused[asked])
        if target in self.broken:
            raise StudentFailure(_("Not run: {reason}").format(reason=self.broken[target]))
        if asked not in self.answers and asked in self.pending:
            self._read_ahead(asked)  # a speculative probe's reply, now that its test asks
            if asked in self.refused:
                raise StudentFailure(self.refused[asked])
        if asked in self.held:  # what it printed counts now that a test asks it
            self._release(*self.held.pop(asked))
        if asked not in self.answers:
            self._remaining()
            self._settle()
            self._ensure_loaded()
            timeout = min(self.limits.call_seconds, self._remaining())
            try:
                reply = self.worker.request({"op": "probe", "probe": probe}, timeout,
                                            reference_numel=_numel(expected))
            except WorkerFailure as failure:
                raise StudentFailure(self._call_failed(target, call_text, failure, timeout)) from None
            self.answers[asked] = reply  # kept as it came (read-only tensors: replies.py)
        return self._answer(self.answers[asked], probe, call_text)

    def run_answered(self, probe, call_text, expected, answerer):
        """run() for a probe whose `answered` names are the solution's answers while it runs
        (follow-through marking: runtime/answers.py, answering.py). `answerer(probe, bound)`
        makes the probe's Answerer. Returns (ProbeResult or the StudentFailure it raised,
        the names the caller asked, why an ask could not be answered or None); asked again,
        the same."""
        asked = memo.digest(probe)
        if asked not in self.answered:
            target = probe["target"]
            answers = answerer(probe, _numel(expected))
            if target in self.broken_answered:
                self.answered[asked] = (StudentFailure(_("Not run: {reason}").format(
                    reason=self.broken_answered[target])), [], None)
            else:
                try:
                    self._remaining()
                    self._settle()
                    self._ensure_loaded()
                    timeout = min(self.limits.call_seconds, self._remaining())
                    try:
                        reply = self.worker.request({"op": "probe", "probe": probe}, timeout,
                                                    reference_numel=_numel(expected),
                                                    answer=answers)
                    except WorkerFailure as failure:
                        raise StudentFailure(self._call_failed(target, call_text, failure,
                                                               timeout, answered=True)) from None
                    kept = reply
                except StudentFailure as failure:
                    kept = failure
                self.answered[asked] = (kept, list(answers.asked), answers.refused)
        kept, names, refused = self.answered[asked]
        if isinstance(kept, StudentFailure):
            return kept, names, refused
        try:
            return self._answer(kept, probe, call_text), names, refused
        except StudentFailure as failure:
            return failure, names, refused

    def prefetch(self, asks):
        """Ask the worker for many probes in one request: [(probe, call text, expected,
        speculative)], in the order the tests will ask them (grader/suite/ahead.py). The
        worker runs them in turn and sends one reply each, each within the per-call limit;
        run() then answers them with no round trip.

        The replies of the probes that are not speculative are read now, before any test
        compares: at the first failure of the worker (a hang, a crash, memory) that probe's
        failure becomes its answer, as in run(), and the probes after it are asked one by one
        when their tests come: a hang costs what it hits, once. A speculative probe may never
        be asked by a test (a device probe of a case wrong on the CPU): its reply is read when
        a test asks for it (the worker meanwhile computes the next), what it printed is held
        back by the worker and counted only then, and a failure of the worker on it costs
        nothing but the time: the probes left, it among them, are asked one by one when their
        tests come."""
        asks = [(memo.digest(a[0]), *a[:3], a[3] if len(a) > 3 else False) for a in asks]
        asks = [a for a in asks if a[0] not in self.answers and a[1]["target"] not in self.broken]
        if len(asks) < 2:
            return
        try:
            self._remaining()
            self._ensure_loaded()
            self.worker.send({"op": "probes", "probes": [a[1] for a in asks],
                              "hold": [i for i, a in enumerate(asks) if a[4]],
                              "hold_bytes": self.limits.output_kb * 1024})
        except (StudentFailure, WorkerFailure):
            return  # the tests meet the same failure one by one, and report it there
        self.pending = {a[0]: a for a in asks}
        self._queue = list(asks)
        certain = [a[0] for a in asks if not a[4]]
        if certain:
            self._read_ahead(certain[-1])

    def _read_ahead(self, until=None):
        """Read the replies of the probes asked ahead, in order, up to `until` (a digest;
        None: all of them) or the worker's first failure (see prefetch)."""
        while self._queue:
            asked, probe, call_text, expected, speculative = self._queue[0]
            try:
                timeout = min(self.limits.call_seconds, self._remaining())
            except StudentFailure:
                self._drop_ahead()
                self.abandon_worker()  # out of time: it may still be answering
                return
            try:
                reply = self.worker.receive(timeout, kind="probe", reference_numel=_numel(expected))
            except WorkerFailure as failure:
                self._drop_ahead()
                if not speculative:
                    self.refused[asked] = self._call_failed(probe["target"], call_text, failure,
                                                            timeout)
                return
            self._queue.pop(0)
            self.pending.pop(asked, None)
            held = reply.pop("held", None)
            if speculative and held is not None:
                self.held[asked] = (self.worker, held)
            self.answers.setdefault(asked, reply)
            if asked == until:
                return

    def _release(self, worker, held):
        """What a probe asked ahead printed, counted now: in its worker's output, or after
        it when that worker is done."""
        if worker is self.worker and worker is not None and worker.failure is None:
            worker.feed_held(held)
            return
        if worker is self.worker and worker is not None:  # it failed since: its output first
            self._collect_output()
            self.worker = None
        self.printed.append((capped_text(held[0], held[1]), capped_text(held[2], held[3])))

    def _drop_ahead(self):
        self._queue, self.pending = [], {}

    def _settle(self):
        """Before any other request: the replies still coming for the batch, read."""
        if self._queue and self.worker is not None and self.worker.failure is None:
            self._read_ahead()
        self._drop_ahead()

    def _call_failed(self, target, call_text, failure, timeout, answered=False):
        """What a student reads when a call failed the worker; later calls to `target`
        are not run (`answered`: later answered runs of it; its own runs are not run
        either). A raw call's failure does not stop `target`'s answered runs: the failure
        may be its callee's, which they replace (one such run is tried: a hang of its own
        costs once more)."""
        said = _("an earlier call to {target} failed: {reason}.").format(
            target=target, reason=failure.reason)
        if answered:
            self.broken_answered[target] = said
        else:
            self.broken[target] = said
        if timeout < self.limits.call_seconds and failure.kind == "timeout":
            return _("{call}: the submission's total time limit of {seconds} s ran out during "
                     "this call.").format(call=call_text,
                                          seconds=f"{self.limits.submission_seconds:g}")
        return f"{call_text}: {failure.reason}."

    def _answer(self, reply, probe, call_text):
        if reply.get("ok") is not True:
            raise StudentFailure(_("{doing} raised {error}").format(
                doing=call_text, error=format_error(reply.get("error"))))
        return ProbeResult(reply.get("result"), probe, "submission", call_text,
                           self.assignment.module_file).check_ran()

    def _collect_output(self):
        if self.worker is not None:
            self.printed.append(self.worker.output())

    def stop(self, interrupted=False):
        """Stop its worker; `interrupted`: an interrupt came mid-exchange, so the worker may
        be busy whatever the queue says, and is not asked to exit."""
        busy = interrupted or bool(self._queue)  # still answering probes asked ahead
        self._drop_ahead()
        if self.worker is not None:
            self.worker.stop(goodbye=not busy)
            self._collect_output()
            self.worker = None

    def abandon_worker(self):
        """Called when a test was stopped mid-call: that worker's state is unknown, so it
        is not asked to exit (it may be writing replies no one reads)."""
        self._drop_ahead()
        if self.worker is not None:
            self.worker.stop(goodbye=False)
            self._collect_output()
            self.worker = None

    def output(self):
        """Everything the submission printed, across all its workers."""
        out = "".join(o for o, _ in self.printed)
        err = "".join(e for _, e in self.printed)
        return out, err

    def costs(self):
        """What grading it cost on the worker's side: {"exchanges": round trips with its
        workers (a correct submission: its hello, its load and one batch of probes),
        "worker_cpu": CPU seconds its workers used (None where a keeper did not say)} (the
        benchmark reads them; no report a student sees shows them)."""
        cpu = [w.cpu for w in self.workers]
        return {"exchanges": sum(w.exchanges for w in self.workers),
                "worker_cpu": None if None in cpu else sum(cpu)}

    def summary(self):
        """Plain data about the submission's run, for the report."""
        out, err = self.output()
        limit = self.limits.output_kb * 1024
        return {"api": self.api,
                "load_error": None if self.load_error is None else safe_text(self.load_error, 20000),
                "cell_errors": self.cell_errors,
                "broken": {k: safe_text(v, 4000) for k, v in self.broken.items()},
                "workers_started": self.workers_started,
                "stdout": safe_text(out, limit), "stderr": safe_text(err, limit)}
