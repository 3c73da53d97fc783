"""The checks the hidden tests apply to a case; each raises StudentFailure with a teaching message.

Each check takes the run's Session first (session.py: the assignment, its case table, the
feedback's language and what the run has learnt), then the case, the submission and the
reference.

A check that fails on a submission says, when it has the evidence, which catalog mistake
gives exactly the same results (grader/catalog: the same probe, run on the solution with
that mistake); the catalog's mistakes are graded by these same checks (`passes`).

A degenerate case (the table's `degenerate` field) the submission gets right counts only when its function also
passes one of its non-degenerate cases (`shows_it_works`); otherwise it fails with the reason
(`withheld`), never diagnosed, and the function's GPU share is not graded (`check_on_device`).

Error carried forward (grader/catalog/carry.py): at the session's end a failed case may be
graded again by its own check with the submission's callees answered by the solution (the
`student` is then a carry.OwnCode); the checks run unchanged on it, the degenerate rule and
the GPU share included.
"""
import contextlib
import dataclasses

import pytest
import torch

from ..catalog import diagnose
from ..harness.compare import expect_close, expect_true, fmt_index, tolerance
from ..harness.devices import device_failure
from ..harness.failures import StudentFailure
from ..i18n import _
from . import ahead, work


def params(cases, gpu_available):
    """pytest parameters for cases, with their points and part as markers."""
    out = []
    for case in cases:
        marks = [pytest.mark.points(case.points), pytest.mark.part(case.part)]
        if case.check == "cuda":
            marks += [pytest.mark.gpu, pytest.mark.skipif(
                not gpu_available, reason=_("no CUDA device on the grading machine: the "
                                            "device-discipline tests grade this part instead"))]
        if case.check == "device":
            marks.append(pytest.mark.skipif(
                gpu_available, reason=_("a CUDA device is available: the real GPU tests grade "
                                        "this part instead")))
        out.append(pytest.param(case, marks=marks, id=case.id))
    return out


def _state(case, reference):
    if not case.is_module:
        return None
    return reference.fresh_state(case.target, case.init, case.seed)


def _context(case):
    return [_(case.about)] if case.about else []


class _Lacking(Exception):
    """The expected side lacks this value (its own run stored no weight, got no gradient)."""


def _want(read, lenient):
    """A value of the expected result; with `lenient` (the expected side is the function's
    own CPU run, checks.py _own_work), what that run lacks is skipped, not failed."""
    try:
        return read()
    except StudentFailure:
        if lenient:
            raise _Lacking() from None
        raise


def compare_results(case, got, expected, state, calls=None, lenient=False):
    """Stored weights, output and gradients of `got` against `expected`, call by call."""
    _compare(case, got, expected, calls, lenient)


def _compare(case, got, expected, calls, lenient):
    for index in range(calls or expected.calls()):
        for name in case.captures() + ["output"]:
            try:
                want = _want(lambda: expected.tensor(name, min(index, expected.calls() - 1)),
                             lenient)
            except _Lacking:
                continue
            have = got.tensor(name, index)
            label = (_("the output of {call}").format(call=got.call_text) if name == "output"
                     else _("{target}.{which} after {call}").format(
                         target=case.target, which=name, call=got.call_text))
            if index:
                label += _(" (call {index} of {count})").format(index=index + 1,
                                                                count=calls or expected.calls())
            # a function whose output is the weights themselves is read (and drawn) as weights
            is_weights = name != "output" or case.returns_weights
            expect_close(have, want, label, context=_context(case), weights=is_weights)
    for i in case.grad_args:
        try:
            want = _want(lambda: expected.arg_grad(i), lenient)
        except _Lacking:
            continue
        expect_close(got.arg_grad(i), want,
                     _("the gradient with respect to input {index} of {call}").format(
                         index=i, call=got.call_text),
                     context=_context(case), scale=10,
                     hints=[_("Gradients follow from the forward computation: a mismatch here "
                              "with a correct output usually means a detach(), .data or an "
                              "in-place write that autograd cannot follow.")])
    if case.grad_params:
        expected_names = expected.param_names()
        for name in expected_names:
            try:
                want = _want(lambda: expected.param_grad(name), lenient)
            except _Lacking:
                continue
            expect_close(got.param_grad(name), want,
                         _("the gradient of parameter {name}").format(name=name),
                         context=_context(case), scale=10)


class Evidence:
    """What came back from the submission for one probe, for the diagnosis."""

    def __init__(self):
        self.result = None

    def __call__(self, result):
        self.result = result
        return result


@contextlib.contextmanager
def diagnosing(session, case, student, probe, reference):
    """Run a check's body; if it fails, find the catalog mistakes whose result for `probe`
    equals what the submission returned, and say so in the failure (with their ids)."""
    seen = Evidence()
    try:
        yield seen
    except StudentFailure as failure:
        if not getattr(student, "diagnosable", True):
            raise
        result = seen.result or getattr(failure, "probe_result", None)
        raw = getattr(result, "raw", None)
        if not isinstance(raw, dict):
            raise
        # judged on its own code (carry.OwnCode): its callees answer right, so only its
        # own mistakes can explain what it gives
        reaches = set() if getattr(student, "judged_apart", False) else \
            session.reaches(case.target)
        found = diagnose.matching(case, probe, raw, reference.path, session.failed_parts,
                                  session.search, catalog=session.catalog, reaches=reaches)
        if not found:
            raise
        explained = StudentFailure(
            f"{failure}\n  {diagnose.sentence(found, session.lang, catalog=session.catalog)}")
        explained.heatmap = getattr(failure, "heatmap", None)
        explained.mistakes = found
        raise explained from None


def passes(session, case, implementation, reference):
    """True when `implementation` (a catalog mistake, run here) passes `case`."""
    try:
        CHECKS[case.check](session, case, implementation, reference)
    except StudentFailure:
        return False
    return True


def ask_ahead(session, student, reference):
    """Once per session: every probe the suite will ask, to the submission in one request, in
    the order the tests ask them (ahead.py; Submission.prefetch: one reply each, each within
    the per-call limit); the tests then compare without a round trip each. Only the
    submission itself asks ahead: a run judged apart (carry.OwnCode) asks other probes."""
    if session.asked_ahead or not hasattr(student, "prefetch") \
            or getattr(student, "judged_apart", False) \
            or not getattr(student, "diagnosable", True):
        return
    session.asked_ahead = True
    student.prefetch(ahead.asks(session, reference, lambda case: _state(case, reference)))


def check_match(session, case, student, reference, device="cpu", guard=False):
    ask_ahead(session, student, reference)
    state = _state(case, reference)
    probe = case.probe(state, device=device, guard=guard)
    expected = reference.run(probe, case.call_text())
    with diagnosing(session, case, student, probe, reference) as seen:
        got = seen(student.run(probe, case.call_text(), expected))
        failure = device_failure(case.target, got) if guard else None
        if failure:
            raise StudentFailure(failure)
        compare_results(case, got, expected, state)
    if case.degenerate and not shows_it_works(session, case.target, student, reference):
        raise StudentFailure(withheld(case))  # right, but no evidence: never diagnosed
    return got


def _right_on_cpu(case, student, reference):
    """The submission's CPU result for `case` when it equals the reference's, else None."""
    state = _state(case, reference)
    probe = case.probe(state)
    expected = reference.run(probe, case.call_text())
    try:
        got = student.run(probe, case.call_text(), expected)
        compare_results(case, got, expected, state)
    except StudentFailure:
        return None
    return got


def shows_it_works(session, target, student, reference):
    """True when `target` passes at least one of its non-degenerate cases on the CPU
    (cases.py: a degenerate case alone is no evidence that the function does its work)."""
    return any(_right_on_cpu(c, student, reference) is not None
               for c in session.table.evidence(target))


def withheld(case):
    """Why a degenerate case the submission got right does not count (yet)."""
    return _("{target} gave the expected result in this case, but the case cannot tell working "
             "code from a shortcut: {why}. It counts once {target} also passes one of its cases "
             "that need the real computation (see its other cases).").format(
                 target=case.target, why=_(case.degenerate))


def _rethrow(failure, text):
    """The same failure with another text, keeping the evidence it carries."""
    again = StudentFailure(text)
    again.heatmap = getattr(failure, "heatmap", None)
    again.mistakes = getattr(failure, "mistakes", None)
    return again


def _calls_differ(got, calls):
    try:
        outputs = [got.tensor("output", i) for i in range(calls)]
    except StudentFailure:
        return False
    return any(o.shape != outputs[0].shape or not torch.equal(o, outputs[0]) for o in outputs[1:])


def check_eval(session, case, student, reference):
    """Eval mode with dropout > 0: every call equals the reference (which drops nothing)."""
    state = _state(case, reference)
    expected = reference.run(case.probe(state, calls=1), case.call_text())
    probe = case.probe(state)
    with diagnosing(session, case, student, probe, reference) as seen:
        got = seen(student.run(probe, case.call_text(), expected))
        try:
            compare_results(case, got, expected, state, calls=case.calls)
        except StudentFailure as failure:
            if not _calls_differ(got, case.calls):
                raise
            raise _rethrow(failure, f"{failure}\n  " + _(
                "In eval mode the {calls} calls with the same inputs gave different results: "
                "something random still acts after model.eval(). Dropout must follow the "
                "module's train/eval mode.").format(calls=case.calls)) from None


def _looks_dropped(stored, eval_weights, p):
    """True when `stored` is eval_weights with dropout applied (each 0 or w/(1-p))."""
    if stored.shape != eval_weights.shape or stored.dtype != eval_weights.dtype:
        return False
    rtol, atol = tolerance(torch.float32, 10)
    scaled = eval_weights / (1 - p)
    zero = torch.isclose(stored, torch.zeros_like(stored), atol=atol)
    kept = torch.isclose(stored, scaled, rtol=rtol, atol=atol)
    positive = eval_weights > 1e-6
    return bool((zero | kept).all()) and bool((zero & positive).any())


def check_dropout(session, case, student, reference):
    state = _state(case, reference)
    eval_result = reference.run(case.probe(state, mode="eval", calls=1), case.call_text())
    probe = case.probe(state)
    with diagnosing(session, case, student, probe, reference) as seen:
        got = seen(student.run(probe, case.call_text(), eval_result))
        weights_name = case.captures()[0]
        eval_weights = eval_result.tensor(weights_name)
        p = case.init["dropout"]
        for index in range(case.calls):
            stored = got.tensor(weights_name, index)
            try:
                expect_close(stored, eval_weights,
                             _("{target}.{name} in training mode (call {index})").format(
                                 target=case.target, name=weights_name, index=index + 1),
                             weights=True)
            except StudentFailure as failure:
                if not _looks_dropped(stored, eval_weights, p):
                    raise
                raise _rethrow(failure, f"{failure}\n  " + _(
                    "Every stored weight is either 0 or the eval-mode weight scaled by 1/(1-p): "
                    "{name} was stored after dropout. The stored weights should be the ones "
                    "before dropout (rows summing to 1).").format(name=weights_name)) from None
        if "." in case.weights.get(case.target, ""):  # stored by an inner module
            _check_inner_dropout(case, got, eval_result)
        else:
            _check_weights_dropout(case, got, eval_weights)


def _check_weights_dropout(case, got, eval_weights):
    """With values [I | R], output[..., :K] is the dropped weights D and output[..., K:] = D R."""
    p = case.init["dropout"]
    values = case.args[2]
    keys = values.shape[1]
    rtol, atol = tolerance(torch.float32, 10)
    dropped = kept = 0
    for index in range(case.calls):
        out = got.tensor("output", index)
        expect_true(out.shape == (eval_weights.shape[0], eval_weights.shape[1], values.shape[2]),
                    _("the output in training mode has shape {got}, expected {expected}").format(
                        got=tuple(out.shape),
                        expected=(eval_weights.shape[0], eval_weights.shape[1], values.shape[2])))
        expect_true(out.dtype == eval_weights.dtype,
                    _("the output in training mode has dtype {got}, expected {expected}").format(
                        got=out.dtype, expected=eval_weights.dtype))
        D = out[..., :keys]
        scaled = eval_weights / (1 - p)
        is_zero = torch.isclose(D, torch.zeros_like(D), atol=atol)
        is_scaled = torch.isclose(D, scaled, rtol=rtol, atol=atol)
        bad = ~(is_zero | is_scaled)
        if bad.any():
            where = tuple(bad.nonzero()[0].tolist())
            raise StudentFailure(_(
                "In training mode with dropout={p}, each attention weight w should reach the "
                "values either dropped (0) or scaled to w/(1-p); at {index} the weight {weight} "
                "became {got} (expected 0 or {scaled}). Dropout should act on the attention "
                "weights, and those dropped weights multiply the values.").format(
                    p=p, index=fmt_index(where), weight=f"{eval_weights[where].item():.6g}",
                    got=f"{D[where].item():.6g}", scaled=f"{scaled[where].item():.6g}"))
        expect_close(out[..., keys:], torch.bmm(D, values[..., keys:]),
                     _("the output in training mode"),
                     hints=[_("With the values [I | R] of this case the output's first columns "
                              "are the weights that reached the values; the other columns are "
                              "not those weights times R, so something other than dropout on "
                              "the weights changed the output.")])
        positive = eval_weights > 1e-6
        dropped += int((is_zero & positive).sum())
        kept += int((~is_zero & positive).sum())
    expect_true(dropped > 0,
                _("In training mode with dropout={p} no attention weight was dropped in {calls} "
                  "calls: dropout did not act on the attention weights that multiply the "
                  "values.").format(p=p, calls=case.calls))
    expect_true(kept > 0, _("In training mode with dropout={p} every weight was dropped.").format(
        p=p))


def _check_inner_dropout(case, got, eval_result):
    """A module whose weights an inner module keeps (its output is not those weights times
    the values): dropout must change the output in training mode."""
    eval_out = eval_result.tensor("output")
    changed = False
    for index in range(case.calls):
        out = got.tensor("output", index)
        expect_true(out.shape == eval_out.shape,
                    _("the output in training mode has shape {got}, expected {expected}").format(
                        got=tuple(out.shape), expected=tuple(eval_out.shape)))
        expect_true(out.dtype == eval_out.dtype,
                    _("the output in training mode has dtype {got}, expected {expected}").format(
                        got=out.dtype, expected=eval_out.dtype))
        changed |= not torch.allclose(out, eval_out, rtol=1e-4, atol=1e-5)
    expect_true(changed,
                _("In training mode with dropout={p} the output never changed in {calls} calls: "
                  "dropout acted nowhere in the module (it should act on every head's attention "
                  "weights).").format(p=case.init["dropout"], calls=case.calls))


def _not_right_on_cpu(session, target, student, ran=True):
    """Why the GPU share of `target` cannot be graded when none of its cases is right on the
    CPU, said from what the worker saw: a file that did not import, a name it does not
    define, a function that runs through none of its cases (`ran` False: it raises in each,
    its weights do not load...), or a function that is there but wrong (only then is its
    own part the place)."""
    if getattr(student, "load_error", None):
        return _("{module} could not be imported, so how {target} behaves on a GPU cannot "
                 "be graded (see the import error above).").format(
                     module=session.assignment.module_file, target=target)
    if (getattr(student, "api", None) or {}).get(target) == "missing":
        return _("{module} defines no `{target}`, so how it behaves on a GPU cannot be "
                 "graded: define it under exactly this name.").format(
                     module=session.assignment.module_file, target=target)
    if not ran:
        return _("{target} runs through none of its cases on the CPU (each raises an error, "
                 "or its weights do not load: see its own part), so how it behaves on a GPU "
                 "cannot be graded: fix {target} first.").format(target=target)
    return _("none of the {target} cases is right on the CPU yet, so how it behaves on a GPU "
             "cannot be graded: fix {target} first (see its own part).").format(target=target)


def check_on_device(session, case, student, reference, device="cpu", guard=False):
    """Every case the submission gets right on the CPU, again on `device` (or under the guard):
    same result as its own CPU run, returned on that device, no tensor on the default device."""
    where = _("on CUDA") if device == "cuda" else _("with its inputs on another device")
    # wrong on the CPU costs points in its own part, not here: the right cases are rerun,
    # or, where none is right but the function does its work, its own results
    right = [(sample, got) for sample in session.table.same_target(case)
             for got in [_right_on_cpu(sample, student, reference)] if got is not None]
    own = not any(not sample.degenerate for sample, _got in right)
    if own:  # compared with its own CPU results, what those lack is no failure
        right = _own_work(session, case, student, reference, right)
    for sample, on_cpu in right:
        state = _state(sample, reference)
        probe = sample.probe(state, device=device, guard=guard)
        expected = reference.run(sample.probe(state), sample.call_text())
        try:
            with diagnosing(session, sample, student, probe, reference) as seen:
                on_device = seen(student.run(probe, sample.call_text(), expected))
                failure = device_failure(case.target, on_device) if guard else None
                if failure:
                    raise StudentFailure(failure)
                compare_results(sample, on_device, on_cpu, state, lenient=own)
                shown = on_device.device("output")
                expect_true(shown.startswith(device),
                            _("the output came back on {shown}, not on the inputs' {device} "
                              "device: something moved it (.cpu(), .numpy(), torch.from_numpy, "
                              "or a tensor created without device=).").format(
                                  shown=shown, device=device))
        except StudentFailure as failure:
            raise _rethrow(failure, _("{target} gives the right result on the CPU for the case "
                                      "'{case}', but not {where}:\n{failure}").format(
                                          target=case.target, case=_(sample.name), where=where,
                                          failure=failure)) from None


def _own_work(session, case, student, reference, right):
    """A function right in no non-degenerate case: its own CPU results in those cases, when
    it does its work (work.py: its result changes with every input the solution's does), so
    that its GPU share is graded once, on what it computes; else the failure that says why
    it cannot be (its mistake is its own part's, a shortcut earns no GPU share)."""
    evidence = session.table.evidence(case.target)
    if not right and not any(_ran_on_cpu([sample], student, reference) for sample in evidence):
        raise StudentFailure(_not_right_on_cpu(session, case.target, student, ran=False))
    if not work.does_its_work(evidence, student, reference, lambda c: _state(c, reference)):
        if right:
            raise StudentFailure(_(
                "{target} is right on the CPU only in cases that cannot tell working code from "
                "a shortcut ({why}), and in its other cases its result does not change with "
                "every input it should use, so how it behaves on a GPU cannot be graded yet: "
                "fix {target} first (see its own part).").format(
                    target=case.target, why=_(right[0][0].degenerate)))
        raise StudentFailure(_(
            "none of the {target} cases is right on the CPU, and its result does not change "
            "with every input it should use (code that skips part of the work), so how it "
            "behaves on a GPU cannot be graded yet: fix {target} first (see its own "
            "part).").format(target=case.target))
    own = [(sample, got) for sample in session.table.same_target(case) if not sample.degenerate
           for got in _ran_on_cpu([sample], student, reference)]
    if not own:
        raise StudentFailure(_not_right_on_cpu(session, case.target, student))
    return own


def _ran_on_cpu(samples, student, reference):
    """The submission's CPU results for `samples` that it ran through, right or wrong."""
    out = []
    for sample in samples:
        probe = sample.probe(_state(sample, reference))
        try:
            out.append(student.run(probe, sample.call_text(),
                                   reference.run(probe, sample.call_text())))
        except StudentFailure:
            continue
    return out


def check_device(session, case, student, reference):
    check_on_device(session, case, student, reference, guard=True)


def check_cuda(session, case, student, reference):
    check_on_device(session, case, student, reference, device="cuda")


@dataclasses.dataclass(frozen=True)
class CheckKind:
    """A kind of check, in one place: the name a case table gives it (Case.check), the check
    itself, and the hidden test that runs it (tests.py makes it from this entry; a suite's
    test file imports it by `test`, pytest parametrizes it over the cases of this kind)."""
    name: str
    check: object   # check(session, case, student, reference); raises StudentFailure
    test: str       # its test function's name in grader/suite/tests.py
    about: str      # that test's docstring

    def __call__(self, session, case, student, reference):
        return self.check(session, case, student, reference)


KINDS = (
    CheckKind("match", check_match, "test_matches_reference",
              "Outputs, stored weights and gradients equal the instructor's solution."),
    CheckKind("eval", check_eval, "test_eval_mode_is_deterministic",
              "Eval mode with dropout > 0: every call equals the reference."),
    CheckKind("dropout", check_dropout, "test_dropout_acts_on_the_weights",
              "Training mode: dropout acts on the attention weights, as the reference's."),
    CheckKind("device", check_device, "test_device_discipline",
              "CPU-only machines: tensors are made on the inputs' device "
              "(grader/sandbox/runtime/guards.py)."),
    CheckKind("cuda", check_cuda, "test_on_cuda",
              "On a GPU: the function's cases run on CUDA and equal the reference."),
)
CHECKS = {kind.name: kind for kind in KINDS}  # Case.check -> its CheckKind (callable)
