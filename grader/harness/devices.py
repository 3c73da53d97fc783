"""The device-discipline verdict, decided here from what the worker's guard reports.

On a CPU-only grader the guard (grader/sandbox/runtime/guards.py) runs inside the worker,
beside the student's code, and reports what it saw: how many torch calls it observed,
whether it stayed in place, which of torch's mode switches the code used, and the
violations. The verdict is made on this side and fails closed: a guarded call with no
record, with no observed torch call, with the guard moved, or with a switch used, is
treated as a violation, so switching the check off earns nothing.

What it proves: the code made no tensor on the default device that met the inputs, and
returned none, in the calls the guard could watch. What it cannot prove: `.cpu()`,
`torch.from_numpy` or a hard-coded `device="cpu"`, and a record forged from inside the
worker's memory by code written for that purpose. Only the CUDA tier proves GPU execution.
"""

import re

from ..i18n import N_, _
from ..textsafety import safe_text

UNWATCHED = N_("{target}: the device check could not watch this call ({why}), so how it "
             "behaves with its inputs on a GPU cannot be graded here. The GPU part is graded only for code the "
             "check can follow: plain torch operations on the inputs' device.")


def device_failure(target, result):
    """Why the guarded probe `result` (a ProbeResult) of `target` does not pass, or None."""
    raw = result.raw if isinstance(getattr(result, "raw", None), dict) else {}
    record = raw.get("guard")
    if not isinstance(record, dict):
        return _(UNWATCHED).format(target=target, why=_("the guard left no record"))
    tripped = record.get("tripped")
    if isinstance(tripped, list) and tripped:
        names = ", ".join(str(t)[:80] for t in tripped[:3])
        return _(UNWATCHED).format(target=target, why=_("the code used {names}, which switches the "
                                                     "check off or reaches into it").format(names=names))
    if record.get("intact") is not True:
        return _(UNWATCHED).format(target=target,
                                why=_("the check was taken off torch's mode stack or changed"))
    ops = record.get("ops")
    if not isinstance(ops, int) or isinstance(ops, bool) or ops <= 0:
        return _(UNWATCHED).format(target=target, why=_("it observed no torch operation at all"))
    found = record.get("violations")
    if not isinstance(found, list):
        return _(UNWATCHED).format(target=target, why=_("its record is malformed"))
    if found:
        return _("{target} would fail on a GPU: {why}").format(target=target,
                                                              why=said(str(found[0])[:600]))
    return None


# the guard's violation (guards.py, English in the worker), said again in the feedback's
# language; anything else the record holds is shown as it came, made safe
_VIOLATION = re.compile(
    r"(?P<origin>.{1,300}?) made a tensor on the default device \(the CPU\), and "
    r"(?P<func>[\w.]{1,100}) then combined it with a tensor on the input's device; on a GPU "
    r"this fails with 'Expected all tensors to be on the same device'\. Pass device=X\.device "
    r"\(X being one of the inputs\) when you create it\.", re.S)
_FACTORY = re.compile(r"(?P<call>torch\.\w{1,60})\(\.\.\.\) without device="
                      r"(?: \(in (?P<where>[\w.<>]{1,80}), line (?P<line>\d{1,7})\))?")
VIOLATION = N_("{origin} made a tensor on the default device (the CPU), and {func} then combined "
               "it with a tensor on the input's device; on a GPU this fails with 'Expected all "
               "tensors to be on the same device'. Pass device=X.device (X being one of the "
               "inputs) when you create it.")
FACTORY = N_("{call}(...) without device=")
FACTORY_IN = N_("{call}(...) without device= (in {where}, line {line})")


def said(text):
    """A violation from the guard in this process's language (as it came when not the
    guard's own sentence)."""
    found = _VIOLATION.fullmatch(text)
    if not found:
        return safe_text(text, 600)
    origin = found["origin"]
    factory = _FACTORY.fullmatch(origin)
    if factory:
        origin = (_(FACTORY_IN).format(call=factory["call"], where=factory["where"],
                                       line=factory["line"]) if factory["where"]
                  else _(FACTORY).format(call=factory["call"]))
    return _(VIOLATION).format(origin=safe_text(origin, 300), func=found["func"])
