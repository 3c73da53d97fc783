"""What one probe brought back, read defensively.

A student's result arrives from the worker as plain data and is treated as a claim: the
worker's reply has been checked against its schema (grader/sandbox/replies.py: types,
sizes, safe strings, plain dense CPU tensors, as contiguous clones) before it gets here,
and every field is still read defensively; anything malformed is the submission's failure.
"""
import torch

from ..assignment import load

from ..i18n import N_, _
from ..textsafety import safe_text
from .failures import GraderError, StudentFailure

STAGES = {
    "lookup": N_("looking up {target} in {module}"),
    "init": N_("building {target}({init})"),
    "state_dict": N_("reading {target}.state_dict()"),
    "load_state_dict": N_("loading the grader's weights into your {target} with load_state_dict"),
    "to": N_("moving {target} to the test's device and dtype"),
    "mode": N_("switching {target} between train and eval mode"),
    "call": N_("calling {call}"),
    "backward": N_("computing gradients through {target}"),
}


def _describe_where(where):
    lines = []
    for frame in where if isinstance(where, list) else []:
        if not isinstance(frame, dict):
            continue
        code = str(frame.get("code", ""))[:160]
        lines.append(_("  at {file} line {line}, in {function}").format(
            file=frame.get("file", "?"), line=frame.get("line", "?"),
            function=frame.get("function", "?")) + (f": {code}" if code else ""))
    return lines


def format_error(error, limit=1500):
    """'IndexError: ...' plus the student's own frames, from a describe_exception dict."""
    if not isinstance(error, dict):
        return _("an error the grader could not read")
    text = f"{safe_text(error.get('type', 'Error'), 80)}: {safe_text(error.get('message', ''), limit)}"
    return "\n".join([text] + _describe_where(error.get("where")))


class ProbeResult:
    """The outcome of one probe on one implementation ('submission' or 'reference').
    module_file: the file the student hands in (the assignment's `<module>.py`), named in
    the messages; None: the default assignment's."""

    def __init__(self, raw, probe, who, call_text, module_file=None):
        self.probe, self.who, self.call_text = probe, who, call_text
        self._module_file = module_file
        if not isinstance(raw, dict) or not isinstance(raw.get("calls", []), list):
            self._fail(_("the submission's process replied with data the grader cannot read"))
        self.raw = raw

    @property
    def module_file(self):
        if self._module_file is None:
            self._module_file = load().module_file
        return self._module_file

    # -- failures -------------------------------------------------------------------
    def _fail(self, message):
        if self.who == "reference":
            raise GraderError(f"the reference solution failed: {message}")
        failure = StudentFailure(message)
        failure.probe_result = self  # what came back, for the diagnosis (grader/catalog)
        raise failure

    def check_ran(self):
        """Raise the submission's own exception, explained, if the probe did not run through."""
        if self.raw.get("ok") is True:
            return self
        stage = str(self.raw.get("stage"))
        error = self.raw.get("error")
        target = self.probe["target"]
        if stage == "lookup":
            self._fail(_("{module} defines no `{target}` (or importing it failed). "
                         "Check the spelling: the grader looks for exactly this name.").format(
                             module=self.module_file, target=target))
        init = ", ".join(f"{k}={v!r}" for k, v in self.probe.get("init", {}).items())
        doing = _(STAGES.get(stage, N_("running {target}"))).format(
            target=target, init=init, call=self.call_text, module=self.module_file)
        message = _("{doing} raised {error}").format(doing=doing, error=format_error(error))
        if stage == "load_state_dict":
            message += "\n" + self._state_hint()
        self._fail(message)

    def _state_hint(self):
        got = self.raw.get("state_keys") or []
        expected = self.probe.get("state") or {}
        want = ", ".join(f"{k} {tuple(v.shape)}" for k, v in expected.items()) or _("(none)")
        lazy = _("(lazy, no shape yet)")
        have = ", ".join(f"{k} {tuple(s) if isinstance(s, list) else lazy}"
                         for k, s in got if isinstance(k, str)) or _("(none)")
        return (_("  The grader's module has parameters: {want}\n"
                  "  Yours has:                          {have}\n"
                  "  Parameter names, shapes and bias settings are part of the interface "
                  "(see the README).").format(want=want, have=have))

    # -- values ---------------------------------------------------------------------
    def _calls(self):
        calls = self.raw.get("calls")
        if not isinstance(calls, list) or not calls:
            self._fail(_("the submission's process returned no result for the call"))
        return calls

    def _desc(self, call, which):
        record = self._calls()[call] if call < len(self._calls()) else None
        if not isinstance(record, dict):
            self._fail(_("the submission's process returned a malformed result"))
        if which == "output":
            return record.get("output")
        captured = record.get("captured")
        if not isinstance(captured, dict):
            self._fail(_("the submission's process returned a malformed result"))
        return captured.get(which)

    def tensor(self, which="output", call=0):
        """The tensor that came back (output or an attribute path), or a StudentFailure."""
        return self._tensor(self._desc(call, which), self._label(which), which)

    def device(self, which="output", call=0):
        desc = self._desc(call, which)
        return str(desc.get("device")) if isinstance(desc, dict) else "?"

    def _label(self, which):
        if which == "output":
            return _("the value returned by {call}").format(call=self.call_text)
        return _("{target}.{which} after {call}").format(
            target=self.probe["target"], which=which, call=self.call_text)

    def _tensor(self, desc, label, which=None):
        if not isinstance(desc, dict):
            self._fail(_("{label}: nothing came back").format(label=label))
        kind = desc.get("kind")
        if kind == "tensor":
            value = desc.get("tensor")
            if type(value) is not torch.Tensor:
                self._fail(_("{label}: the submission's process sent something that is not a "
                             "tensor").format(label=label))
            return value
        if kind == "missing":
            # the attribute's own name (layer.weights -> weights)
            attribute = (which if which and which != "output" else "result").rsplit(".", 1)[-1]
            self._fail(_("{label} does not exist ({repr}). Store it as an attribute in forward, "
                         "e.g. self.{attribute} = ...").format(
                             label=label, repr=str(desc.get("repr", ""))[:200],
                             attribute=attribute))
        if kind == "refused":
            self._fail(_("{label} cannot be compared: {reason}.").format(
                label=label, reason=str(desc.get("reason", ""))[:400]))
        if kind == "tensor-on-meta":
            self._fail(_("{label} is a tensor on the 'meta' device: it was created on the default "
                         "device instead of the input's device. Pass device=X.device.").format(
                             label=label))
        type_name = str(desc.get("type", "?"))[:60]
        shown = str(desc.get("repr", ""))[:200]
        advice = {"NoneType": N_(" Did you forget a `return`?"),
                  "tuple": N_(" Return only the tensor (store extra results as attributes)."),
                  "list": N_(" Build the result with torch operations, not a Python list.")}
        self._fail(_("{label} is a {type}, not a torch.Tensor: {shown}.").format(
            label=label, type=type_name, shown=shown)
            + (_(advice[type_name]) if type_name in advice else ""))

    def arg_grad(self, index):
        grads = self.raw.get("grads", {})
        args = grads.get("args") if isinstance(grads, dict) else None
        desc = args.get(str(index)) if isinstance(args, dict) else None
        if isinstance(desc, dict) and desc.get("kind") == "other" and desc.get("type") == "NoneType":
            self._fail(_("no gradient reached input {index} of {call}: the output does not "
                         "depend on it through autograd (detached, or rebuilt from "
                         "values?)").format(index=index, call=self.call_text))
        return self._tensor(desc, _("the gradient with respect to input {index} of {call}").format(
            index=index, call=self.call_text))

    def param_grad(self, name):
        grads = self.raw.get("grads", {})
        params = grads.get("params") if isinstance(grads, dict) else None
        desc = params.get(name) if isinstance(params, dict) else None
        if isinstance(desc, dict) and desc.get("kind") == "other" and desc.get("type") == "NoneType":
            self._fail(_("no gradient reached parameter {name}: is it used in forward?").format(
                name=name))
        return self._tensor(desc, _("the gradient of parameter {name}").format(name=name))

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
