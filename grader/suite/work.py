"""Does a function do its work? The GPU share of a function wrong on the CPU.

A function right in one of its non-degenerate cases has shown that it works (checks.py,
`shows_it_works`). One that is wrong everywhere may still compute for real (a wrong scale,
another activation, sin and cos swapped): its mistake costs points in its own part, and its
GPU share is graded on its own results, once. Code that skips the work (returning an
input, uniform weights, a mask that ignores the lengths) earns no GPU share.

The evidence is read from results alone, on the trusted side: in a non-degenerate case the
function ran through, its result must change whenever an input that changes the solution's
result changes. Each tensor argument, and a module's weights together, is redrawn in turn
(fresh values of the same shape and dtype; whole-number lengths redrawn as lengths); where
the solution's result changes, the submission's must too. A shortcut leaves out some
input's work (the scores, the lengths, the queries), so its result stays the same when that
input changes.
"""
import torch

from ..harness.compare import same
from ..harness.failures import StudentFailure

TRIES = 3  # redraws of one input until one changes the solution's result


def _plain(probe):
    """The probe, run once on the CPU in eval mode: no gradients, no guard."""
    return dict(probe, grad_args=[], grad_params=False, calls=1, guard=False, device="cpu")


def _redrawn(value, generator):
    if value.is_floating_point() and not _whole(value):
        return torch.randn(tuple(value.shape), generator=generator,
                           dtype=torch.float64).to(value.dtype)
    if value.dtype == torch.bool or value.numel() == 0:
        return None
    top = int(value.max().item()) + 2
    drawn = torch.randint(0, max(top, 2), tuple(value.shape), generator=generator)
    return drawn.to(value.dtype)


def _whole(value):
    return bool(torch.isfinite(value).all()) and bool((value == value.round()).all()) and \
        value.dim() <= 2 and value.numel() > 0 and bool((value >= 0).all())


def variants(probe, seed):
    """(what, probe) for each input redrawn: ("argument", i) or ("weights", None)."""
    for index, value in enumerate(probe.get("args") or []):
        if isinstance(value, torch.Tensor):
            for attempt in range(TRIES):
                generator = torch.Generator().manual_seed(seed + 101 * index + attempt)
                drawn = _redrawn(value, generator)
                if drawn is None:
                    break
                args = list(probe["args"])
                args[index] = drawn
                yield ("argument", index), dict(probe, args=args)
    state = probe.get("state")
    if isinstance(state, dict) and state:
        generator = torch.Generator().manual_seed(seed + 9973)
        drawn = {k: torch.randn(tuple(v.shape), generator=generator, dtype=torch.float64)
                 .to(v.dtype) if v.is_floating_point() else v for k, v in state.items()}
        yield ("weights", None), dict(probe, state=drawn)


def _output(implementation, probe, call_text):
    try:
        result = implementation.run(probe, call_text)
        return result.tensor("output")
    except StudentFailure:
        return None


def does_its_work(cases, student, reference, state_of):
    """True when, in the first of `cases` (non-degenerate cases of one function) the
    submission runs through, its result changes with every input the solution's does.
    `state_of(case)`: the weights a module's case loads."""
    for case in cases:
        probe = _plain(case.probe(state_of(case)))
        text = case.call_text()
        mine = _output(student, probe, text)
        right = _output(reference, probe, text)
        if mine is None or right is None or mine.shape != right.shape:
            continue
        tried = set()
        for what, variant in variants(probe, case.seed):
            if what in tried:
                continue
            changed = _output(reference, variant, text)
            if changed is None or changed.shape != right.shape or same(changed, right):
                continue  # this draw does not change the solution's result: try another
            tried.add(what)
            theirs = _output(student, variant, text)
            if theirs is None or theirs.shape != mine.shape:
                continue  # it fails there: no evidence either way
            if same(theirs, mine):
                return False  # the solution uses this input, the submission does not
        return bool(tried)
    return False
