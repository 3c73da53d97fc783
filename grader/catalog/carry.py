"""Error carried forward, by follow-through marking: a part is judged on its own code.

A mistake costs points once, in the part of the function it is in. At the end of a
submission's session, after its cases ran, the trusted process takes each failed case of a
function F and asks:

1. Does F's code reach functions that failed cases of their own part? "Reach" is read from
   the student's file (callgraph.py: what F's code mentions, directly or through the
   student's own helpers), never from the solution. A function of an earlier assignment
   the student provides (builds_on with provide = "student") counts here too: it is graded
   in its own assignment, so this one judges only its own code.
2. If so, the case is run again with those functions answered by the solution
   (grader/sandbox/runtime/answers.py, grader/harness/answering.py): F is the student's
   code, and each time it calls one of them (a function, or a module it builds, weights
   included) the solution answers on exactly the inputs F hands it. The case's own check
   decides, against the solution as always. If it passes, F's code is right there: the
   case is re-scored as passed, "carried forward".

A callee that passes all its own cases runs as written: a mistake in it that only its
callers' cases show costs points there, where it shows, once. Answering a callee that is
right changes nothing, so adding a mistake to a right callee never raises a caller's score.
Nothing a worker says decides it: which names are answered is the trusted side's choice,
an ask outside such a run fails the call that made it, and the answers are the solution's,
computed here on inputs bounded by the case.

Not carried: a case the answered run still fails (F has a mistake of its own there), and a
case in which the solution refuses what F hands a callee (an argument it does not take: F
could not be judged apart from the callee, and keeps its failure, said so). A second
mistake in a callee that already fails its own cases, one only its callers' cases show, is
not charged again. `grader grade --carry-forward off` skips all of this (each callee
mistake then also costs its callers).

Every function takes the assignment's catalog (`catalog=`, a grader.catalog.Catalog:
`Catalog.of(assignment)`, built once per session); none falls back on another one.
"""
import torch

from ..harness.failures import StudentFailure
from ..i18n import N_, _
from ..sandbox.replies import numel_bound
from ..harness.answering import Answerer
from .callgraph import CallGraph

SETTINGS = ("on", "off")
DEFAULT = "on"


class OwnCode:
    """The submission, with the api names in `names` answered by the solution (`pairs`:
    [module, name] of this assignment's api and of each earlier module the student
    provides; a probe's own target is never answered). A failing run is searched in the
    catalog for the mistakes of the function itself only (its callees answer right):
    `judged_apart`. `log` collects, per run, (target, names the caller asked, why an ask was
    refused or None)."""

    judged_apart = True

    def __init__(self, student, reference, pairs, names=()):
        self._student, self._reference = student, reference
        self.pairs = [list(p) for p in pairs]
        self.names = set(names)
        self.log = []

    def run(self, probe, call_text, expected=None):
        target = probe["target"]
        answered = [[m, n] for m, n in self.pairs if n != target and n in self.names]
        sources, weights = self._reference.answering_sources()
        inputs = max([t.numel() for t in _tensors(probe)] + [0])

        def answerer(probe, numel):
            return Answerer(sources, answered, weights,
                            numel_bound(max(numel or 0, inputs)) * 2)

        result, names, refused = self._student.run_answered(
            dict(probe, answered=answered), call_text, expected, answerer)
        self.log.append((target, names, refused))
        if isinstance(result, StudentFailure):
            raise result
        return result

    def __getattr__(self, name):
        return getattr(self._student, name)


def _tensors(value):
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _tensors(v)]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensors(v)]
    return []


def answered_pairs(assignment):
    """[module, name] of every api name that can be answered: this assignment's, and each
    earlier assignment's whose module the student provides."""
    pairs = [[assignment.module, name] for name in assignment.api]
    for dep, earlier in assignment.earlier():
        if dep.provide == "student":
            pairs += [[earlier.module, name] for name in earlier.api]
    return pairs


def graph_of(student):
    """The student's file's call graph (callgraph.py), from the staged source."""
    return CallGraph.of_file(getattr(student, "path", "") or "")


def named(diagnoses, catalog):
    """Catalog ids named by their own part's diagnosis (where the mistake lives)."""
    out = set()
    for entry in diagnoses or []:
        mistake = catalog.by_id(entry.get("mistake"))
        if mistake is not None and entry.get("part") == mistake.part:
            out.add(mistake.id)
    return out


# what a case judged on its own code says: the check's own message, run so
JUDGED_APART = N_("With {callees} answering correctly: {message}")


def carry_forward(tests, cases, diagnoses, reference, student, check, others=(), *,
                  catalog, assignment, graph=None):
    """Re-score the failed cases the rule carries (module docstring); edits `tests` (the
    recorder's entries) in place and returns how many it changed (carried, or noted why
    not).

    cases: {name: Case}; diagnoses: the session's diagnoses (with those of the parts only
    run for it, --parts); check(case, student): the case's own check (checks.CHECKS),
    raising StudentFailure with what failed
    (checks.passes); others: the entries of parts this session did not grade (--parts), run
    only so that their failures are known; graph: the submission's CallGraph (read from
    the student's file when not given)."""
    entries = list(tests) + list(others)
    failed = {cases[t["name"]].target for t in entries if t.get("name") in cases
              and t.get("outcome") == "failed" and t.get("blame") == "student"}
    pairs = answered_pairs(assignment)
    earlier = {n for m, n in pairs if m != assignment.module}
    graph = graph if graph is not None else graph_of(student)
    own = OwnCode(student, reference, pairs)
    named_ids = named(diagnoses, catalog)
    names = [n for _m, n in pairs]
    carried = 0
    for test in tests:
        if test.get("outcome") != "failed" or test.get("blame") != "student":
            continue
        case = cases.get(test.get("name"))
        if case is None or _missing(student, case.target) or not graph.defines(case.target):
            continue  # a function the file does not define: nothing a callee could explain
        reached = graph.reaches(case.target, names)
        callees = [n for n in names if n in reached and (n in failed or n in earlier)]
        if not callees:
            continue  # nothing it calls failed: its failure is its own, as it ran
        own.names = set(callees)  # a callee that passes its own cases runs as written
        start = len(own.log)
        failure = None
        try:
            check(case, own)
        except StudentFailure as raised:
            failure = raised
        except Exception as error:  # noqa: BLE001 - the grader's failure, said as such
            test.update(blame="grader", message="", grader_traceback=(
                f"judging {case.target} on its own code: {type(error).__name__}: {error}")[:8000])
            continue
        runs = own.log[start:]
        asked = _in_order(names, {n for _t, got, _r in runs for n in got})
        refused = next((r for _t, _got, r in runs if r), None)
        blamed = [n for n in callees if n in asked] or callees
        if failure is None:
            carried += 1
            test.update(outcome="passed", blame=None, message="", mistakes=[],
                        carried={"target": case.target, "in": blamed, "answered": asked,
                                 "mistakes": sorted(i for i in named_ids
                                                    if catalog.by_id(i).target in blamed)})
        elif refused:
            carried += 1
            test["carry_note"] = {"why": "refused", "target": case.target, "callees": blamed,
                                  "error": str(refused)[:300]}
        else:
            carried += 1
            test["carry_note"] = {"why": "differs", "target": case.target, "callees": blamed}
            # what the student reads of the case is what was judged: its own code's result
            test.update(message=_(JUDGED_APART).format(callees=_listed(blamed),
                                                       message=str(failure)),
                        mistakes=list(getattr(failure, "mistakes", None) or []),
                        heatmap=getattr(failure, "heatmap", None))
    return carried


def _listed(names):
    return _(" and ").join(names) if len(names) == 2 else ", ".join(names)


def _in_order(names, found):
    return [n for n in dict.fromkeys(names) if n in found]


def _missing(student, target):
    """True when the worker found no `target` in the submission (its api reply)."""
    api = getattr(student, "api", None)
    return isinstance(api, dict) and api.get(target) == "missing"
