"""Error carried forward: a part is judged on its own code, not on a mistake in a function
it calls that the function's own part already named.

The rule, applied in the trusted process at the end of the session, after the diagnosis
(diagnose.diagnose_parts), from the trusted side's own results only:

    A failed case of part P is re-scored as passed, "carried forward", when
    1. M is not empty: the mistakes the final diagnosis of their own part (the catalog's
       `part`) names, that live in a function the case's target calls (the declaration's
       `calls`; never the target itself). Several are applied together (Catalog.combined), each
       as the instance its own part's cases matched (a fill value, an axis); and
    2. the case passes the same check with the solution with M standing in for the
       solution (`CarriedReference`), where the solution with M passes that check itself;
       where it does not (it raises, a property check such as dropout's fails for it, or a
       device probe trips the device check), the submission must give exactly its result
       in everything the diagnosis compares (diagnose.same_results: outputs, stored
       weights, gradients, error, device verdict).

So P's own mistakes still cost: any difference from what the solution with M gives fails
as before. The degenerate rule and the GPU share use the same judgement (the checks call
`fails`/`alike` of the stand-in). A callee mistake no diagnosis named is never carried;
the case keeps its failure and a note of which called function failed its own cases.
`grader grade --carry-forward off` skips all of this.

Every function takes the assignment's catalog (`catalog=`, a grader.catalog.Catalog:
`Catalog.of(assignment)`, built once per session); none falls back on another one.
"""
import collections

from ..harness.devices import device_failure
from ..harness.failures import StudentFailure
from ..harness.results import ProbeResult
from .build import MistakeImplementation
from .diagnose import same_results
from .mistakes import base_id

SETTINGS = ("on", "off")
DEFAULT = "on"


class MistakeFails(StudentFailure):
    """The solution with M does not run this probe through: no comparison to make here."""


class Alike:
    """A submission's result that equals the solution with M's failing one (an error, a
    device verdict): right under M, but with no values to compare."""

    def __init__(self, raw):
        self.raw = raw

    def tensor(self, *args, **kwargs):
        raise StudentFailure("no values: the solution with the carried mistake fails here too")

    def calls(self):
        return 0


class CarriedReference:
    """The solution with mistake(s) `mistake`, in the place of the reference in a check.
    The student's module still loads the solution's weights (`fresh_state`). `module`: the
    assignment's module name (Catalog.module)."""

    def __init__(self, reference, mistake, module):
        self.reference, self.mistake = reference, mistake
        self.path = reference.path
        self.implementation = MistakeImplementation(mistake, reference.path, module)

    def fresh_state(self, target, init, seed):
        return self.reference.fresh_state(target, init, seed)

    def raw(self, probe):
        return self.implementation.raw(probe)

    def run(self, probe, call_text):
        raw = self.raw(probe)
        if raw.get("ok") is not True:
            raise MistakeFails(f"the solution with {self.mistake.id} raises here")
        # read as the catalog's mistakes are: what it lacks (a stored weight) is a
        # StudentFailure of the check against itself, never the grader's
        return ProbeResult(raw, probe, "mistake", call_text)

    def fails(self, probe):
        """True when the solution with M would not pass a comparison with itself on `probe`:
        it raises, leaves a value to compare out (a stored weight), or (a guarded probe)
        the device check rejects it."""
        raw = self.raw(probe)
        if raw.get("ok") is not True:
            return True
        result = ProbeResult(raw, probe, "mistake", "")
        try:
            for call in range(len(raw.get("calls") or [None])):
                for name in list(probe.get("capture") or []) + ["output"]:
                    result.tensor(name, call)
        except StudentFailure:
            return True
        return bool(probe.get("guard")) and device_failure(probe.get("target"), _Raw(raw)) is not None

    def alike(self, probe, student, call_text):
        """An Alike when the submission's result for `probe` equals the solution with M's in
        everything (diagnose.same_results), else None."""
        try:
            got = student.run(probe, call_text).raw
        except StudentFailure as failure:
            got = getattr(getattr(failure, "probe_result", None), "raw", None)
        mine = self.raw(probe)
        if not isinstance(got, dict) or not same_results(got, mine, probe):
            return None
        # the same device verdict, word for word: a guard switched off ("could not watch")
        # is never the same as the mistake's tensor made on the default device
        if probe.get("guard") and device_failure(probe.get("target"), _Raw(got)) != \
                device_failure(probe.get("target"), _Raw(mine)):
            return None
        return Alike(got)


class _Raw:
    def __init__(self, raw):
        self.raw = raw


class Undiagnosed:
    """The submission, for a regrade: the checks never search the catalog for it again."""

    diagnosable = False

    def __init__(self, student):
        self._student = student

    def __getattr__(self, name):
        return getattr(self._student, name)


def named(diagnoses, tests, before, catalog):
    """{catalog id: the id to apply} for every mistake named by its own part's diagnosis;
    a class mistake's instance is the one its own part's cases matched most (`before`:
    nodeid -> the ids each case matched, taken before the diagnosis trimmed them)."""
    out = {}
    for entry in diagnoses or []:
        mistake = catalog.by_id(entry.get("mistake"))
        if mistake is None or entry.get("part") != mistake.part:
            continue
        seen = collections.Counter(
            one for test in tests if test.get("part") == mistake.part
            for found in before.get(test.get("nodeid"), []) for one in str(found).split("&")
            if base_id(one) == mistake.id and catalog.by_id(one) is not None)
        out[mistake.id] = seen.most_common(1)[0][0] if seen else mistake.id
    return out


def carried_mistakes(target, named_ids, catalog):
    """The named mistakes in the functions `target` calls, in the catalog's order."""
    calls = catalog.calls.get(target, ())
    found = [i for base, i in named_ids.items() if catalog.by_id(base).target in calls]
    return sorted(found, key=catalog.order)


def as_mistake(ids, catalog):
    return catalog.by_id(ids[0]) if len(ids) == 1 else catalog.combined(ids)


def carry_forward(tests, cases, diagnoses, before, reference, student, grade, works, state,
                  others=(), *, catalog):
    """Re-score the failed cases the rule carries (module docstring); edits `tests` (the
    recorder's entries) in place and returns how many were carried.

    grade(case, student, reference) -> bool: the case's own check passes (checks.passes);
    works(target, student, reference) -> bool: checks.shows_it_works; state(case,
    reference): the module weights a case loads (checks._state); others: the entries of
    parts this session did not grade (--parts), run only for their diagnosis; catalog: the
    assignment's Catalog."""
    named_ids = named(diagnoses, list(tests) + list(others), before, catalog)
    failed_parts = {t.get("part") for t in list(tests) + list(others)
                    if t.get("outcome") == "failed" and t.get("blame") == "student"}
    carried = 0
    for test in tests:
        if test.get("outcome") != "failed" or test.get("blame") != "student":
            continue
        case = cases.get(test.get("name"))
        if case is None or _missing(student, case.target):
            continue  # a function the file does not define: nothing a callee could explain
        ids = carried_mistakes(case.target, named_ids, catalog)
        callees = [c for c in catalog.calls.get(case.target, ())
                   if catalog.part_of(c) in failed_parts]
        mistake = as_mistake(ids, catalog) if ids else None
        if mistake is None:
            if callees:
                test["carry_note"] = {"why": "unnamed", "target": case.target,
                                      "callees": callees, "mistakes": []}
            continue
        try:
            ok = _passes(case, Undiagnosed(student),
                         CarriedReference(reference, mistake, catalog.module), grade, works, state)
        except Exception as error:  # noqa: BLE001 - the grader's failure, said as such
            test.update(blame="grader", message="", grader_traceback=(
                f"carrying forward {mistake.id}: {type(error).__name__}: {error}")[:8000])
            continue
        if ok:
            carried += 1
            test.update(outcome="passed", blame=None, message="", mistakes=[],
                        carried={"target": case.target, "mistakes": ids})
        else:
            test["carry_note"] = {"why": "differs", "target": case.target,
                                  "callees": callees, "mistakes": ids}
    return carried


def _missing(student, target):
    """True when the worker found no `target` in the submission (its api reply)."""
    api = getattr(student, "api", None)
    return isinstance(api, dict) and api.get(target) == "missing"


def _passes(case, student, carried, grade, works, state):
    """The case's own check against the solution with M, when the solution with M passes
    that check itself; where it does not (it raises, or a property check such as dropout's
    fails for it), the submission's result must equal its result instead."""
    if case.check in ("match", "eval", "dropout") and not grade(
            case, carried.implementation, carried):
        probe = case.probe(state(case, carried))
        if carried.alike(probe, student, case.call_text()) is None:
            return False
        return not case.degenerate or works(case.target, student, carried)
    return grade(case, student, carried)
