"""What one probe brought back, read defensively.

A student's result arrives from the worker as plain data and is treated as a claim: the
worker's reply has been checked against its schema (grader/sandbox/replies.py: types,
sizes, safe strings, plain dense CPU tensors, as contiguous clones) before it gets here,
and every field is still read defensively; anything malformed is the submission's failure.
"""
import torch

from ..textsafety import safe_text
from .failures import GraderError, StudentFailure

STAGES = {
    "lookup": "looking up {target} in attention.py",
    "init": "building {target}({init})",
    "state_dict": "reading {target}.state_dict()",
    "load_state_dict": "loading the grader's weights into your {target} with load_state_dict",
    "to": "moving {target} to the test's device and dtype",
    "mode": "switching {target} between train and eval mode",
    "call": "calling {call}",
    "backward": "computing gradients through {target}",
}


def _describe_where(where):
    lines = []
    for frame in where if isinstance(where, list) else []:
        if not isinstance(frame, dict):
            continue
        code = str(frame.get("code", ""))[:160]
        lines.append(f"  at {frame.get('file', '?')} line {frame.get('line', '?')}, "
                     f"in {frame.get('function', '?')}" + (f": {code}" if code else ""))
    return lines


def format_error(error, limit=1500):
    """'IndexError: ...' plus the student's own frames, from a describe_exception dict."""
    if not isinstance(error, dict):
        return "an error the grader could not read"
    text = f"{safe_text(error.get('type', 'Error'), 80)}: {safe_text(error.get('message', ''), limit)}"
    return "\n".join([text] + _describe_where(error.get("where")))


class ProbeResult:
    """The outcome of one probe on one implementation ('submission' or 'reference')."""

    def __init__(self, raw, probe, who, call_text):
        self.probe, self.who, self.call_text = probe, who, call_text
        if not isinstance(raw, dict) or not isinstance(raw.get("calls", []), list):
            self._fail("the submission's process replied with data the grader cannot read")
        self.raw = raw

    # -- failures -------------------------------------------------------------------
    def _fail(self, message):
        if self.who == "reference":
            raise GraderError(f"the reference solution failed: {message}")
        raise StudentFailure(message)

    def check_ran(self):
        """Raise the submission's own exception, explained, if the probe did not run through."""
        if self.raw.get("ok") is True:
            return self
        stage = str(self.raw.get("stage"))
        error = self.raw.get("error")
        target = self.probe["target"]
        if stage == "lookup":
            self._fail(f"attention.py defines no `{target}` (or importing it failed). "
                       f"Check the spelling: the grader looks for exactly this name.")
        init = ", ".join(f"{k}={v!r}" for k, v in self.probe.get("init", {}).items())
        doing = STAGES.get(stage, "running {target}").format(
            target=target, init=init, call=self.call_text)
        message = f"{doing} raised {format_error(error)}"
        if stage == "load_state_dict":
            message += "\n" + self._state_hint()
        self._fail(message)

    def _state_hint(self):
        got = self.raw.get("state_keys") or []
        expected = self.probe.get("state") or {}
        want = ", ".join(f"{k} {tuple(v.shape)}" for k, v in expected.items()) or "(none)"
        have = ", ".join(f"{k} {tuple(s) if isinstance(s, list) else '(lazy, no shape yet)'}"
                         for k, s in got if isinstance(k, str)) or "(none)"
        return (f"  The grader's module has parameters: {want}\n"
                f"  Yours has:                          {have}\n"
                f"  Parameter names, shapes and bias settings are part of the interface "
                f"(see the README).")

    # -- values ---------------------------------------------------------------------
    def _calls(self):
        calls = self.raw.get("calls")
        if not isinstance(calls, list) or not calls:
            self._fail("the submission's process returned no result for the call")
        return calls

    def _desc(self, call, which):
        record = self._calls()[call] if call < len(self._calls()) else None
        if not isinstance(record, dict):
            self._fail("the submission's process returned a malformed result")
        if which == "output":
            return record.get("output")
        captured = record.get("captured")
        if not isinstance(captured, dict):
            self._fail("the submission's process returned a malformed result")
        return captured.get(which)

    def tensor(self, which="output", call=0):
        """The tensor that came back (output or an attribute path), or a StudentFailure."""
        return self._tensor(self._desc(call, which), self._label(which))

    def device(self, which="output", call=0):
        desc = self._desc(call, which)
        return str(desc.get("device")) if isinstance(desc, dict) else "?"

    def _label(self, which):
        if which == "output":
            return f"the value returned by {self.call_text}"
        return f"{self.probe['target']}.{which} after {self.call_text}"

    def _tensor(self, desc, label):
        if not isinstance(desc, dict):
            self._fail(f"{label}: nothing came back")
        kind = desc.get("kind")
        if kind == "tensor":
            value = desc.get("tensor")
            if type(value) is not torch.Tensor:
                self._fail(f"{label}: the submission's process sent something that is not a tensor")
            return value
        if kind == "missing":
            self._fail(f"{label} does not exist ({str(desc.get('repr', ''))[:200]}). "
                       f"Store it as an attribute in forward, e.g. self.attention_weights = ...")
        if kind == "refused":
            self._fail(f"{label} cannot be compared: {str(desc.get('reason', ''))[:400]}.")
        if kind == "tensor-on-meta":
            self._fail(f"{label} is a tensor on the 'meta' device: it was created on the default "
                       f"device instead of the input's device. Pass device=X.device.")
        type_name = str(desc.get("type", "?"))[:60]
        shown = str(desc.get("repr", ""))[:200]
        advice = {"NoneType": " Did you forget a `return`?",
                  "tuple": " Return only the tensor (store extra results as attributes).",
                  "list": " Build the result with torch operations, not a Python list."}
        self._fail(f"{label} is a {type_name}, not a torch.Tensor: {shown}.{advice.get(type_name, '')}")

    def arg_grad(self, index):
        grads = self.raw.get("grads", {})
        args = grads.get("args") if isinstance(grads, dict) else None
        desc = args.get(str(index)) if isinstance(args, dict) else None
        if isinstance(desc, dict) and desc.get("kind") == "other" and desc.get("type") == "NoneType":
            self._fail(f"no gradient reached input {index} of {self.call_text}: the output does "
                       f"not depend on it through autograd (detached, or rebuilt from values?)")
        return self._tensor(desc, f"the gradient with respect to input {index} of {self.call_text}")

    def param_grad(self, name):
        grads = self.raw.get("grads", {})
        params = grads.get("params") if isinstance(grads, dict) else None
        desc = params.get(name) if isinstance(params, dict) else None
        if isinstance(desc, dict) and desc.get("kind") == "other" and desc.get("type") == "NoneType":
            self._fail(f"no gradient reached parameter {name}: is it used in forward?")
        return self._tensor(desc, f"the gradient of parameter {name}")

    def param_names(self):
        grads = self.raw.get("grads", {})
        params = grads.get("params") if isinstance(grads, dict) else None
        return sorted(k for k in params if isinstance(k, str)) if isinstance(params, dict) else []

    def calls(self):
        return len(self._calls())

    def largest_numel(self):
        """Entries of the largest tensor in this result (outputs, stored values, gradients):
        what bounds the tensors accepted from the submission for the same probe."""
        descs = []
        for record in self.raw.get("calls") or []:
            if isinstance(record, dict):
                descs.append(record.get("output"))
                descs += list((record.get("captured") or {}).values())
        grads = self.raw.get("grads") or {}
        for group in ("args", "params"):
            descs += list((grads.get(group) or {}).values())
        sizes = [d["tensor"].numel() for d in descs
                 if isinstance(d, dict) and isinstance(d.get("tensor"), torch.Tensor)]
        return max(sizes, default=0)
