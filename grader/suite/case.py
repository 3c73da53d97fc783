"""A hidden case, its inputs and how its call reads in feedback: what every case table uses.

A case table (tests_hidden/<name>/cases.py) builds its cases with the Case class of its
assignment, `case_class(assignment)`: the stored weights a module's case captures and the
argument names its call text shows come from the declaration and the solution, never from
a list here.
"""
import ast
import dataclasses
import functools
import zlib

import torch

from ..i18n import N_, _

# a module's call, in the language of the feedback (call_text)
IN_EVAL_MODE = N_("{module} in eval mode, forward({args})")
IN_TRAIN_MODE = N_("{module} in training mode, forward({args})")
# the GPU part's case names, "<target> <label>": the label is translated where shown
GPU_LABELS = {"device": N_("makes no tensor on the default device"), "cuda": N_("on CUDA")}


@dataclasses.dataclass
class Case:
    part: str
    name: str
    points: int
    target: str
    args: tuple
    kwargs: dict = dataclasses.field(default_factory=dict)
    init: dict = None              # constructor arguments, for modules
    check: str = "match"
    module_dtype: str = None       # cast the module's parameters (float64, bfloat16)
    grad_args: tuple = ()          # indices of args to differentiate with respect to
    grad_params: bool = False
    mode: str = "eval"
    calls: int = 1
    about: str = ""                # what the case is about, said in the failure message
    degenerate: str = ""           # why a shortcut gets it right (the table's reasons); "" if none

    # set by case_class() for one assignment: {module: "a.b" where it stores its weights},
    # the targets whose weights are drawn, and the solution whose signatures name the
    # arguments in call_text()
    weights = {}
    heatmaps = ()
    solution = None

    @property
    def id(self):
        return f"{self.part}: {self.name}"

    @property
    def seed(self):
        return zlib.crc32(self.id.encode())

    @property
    def is_module(self):
        return self.init is not None

    @property
    def returns_weights(self):
        """The target's output is the weights themselves: the declaration draws its heatmap
        and names no attribute that stores them (a masked softmax, say)."""
        return self.target in self.heatmaps and self.target not in self.weights

    def captures(self):
        return [self.weights[self.target]] if self.target in self.weights else []

    def probe(self, state=None, device="cpu", guard=False, **overrides):
        """The probe of this case (see grader/sandbox/runtime/probes.py), the same object for
        the same question (the same weights object and overrides): never change one, make a
        new one (dict(probe, ...)); its digest is then taken once (harness/memo.py)."""
        try:
            key = (id(state), device, guard, tuple(sorted(overrides.items())))
            found = _PROBES.get(id(self), {}).get(key)
        except TypeError:  # an override that is no dict key: a probe of its own
            return self._probe(state, device, guard, **overrides)
        if found is not None and found[0] is state and found[1] is self:
            return found[2]
        probe = self._probe(state, device, guard, **overrides)
        _PROBES.setdefault(id(self), {})[key] = (state, self, probe)
        return probe

    def _probe(self, state=None, device="cpu", guard=False, **overrides):
        probe = {"target": self.target, "args": list(self.args), "kwargs": dict(self.kwargs),
                 "mode": self.mode, "calls": self.calls, "device": device, "guard": guard,
                 "capture": self.captures(), "grad_args": list(self.grad_args),
                 "grad_params": self.grad_params, "seed": self.seed,
                 "module_dtype": self.module_dtype}
        if self.is_module:
            probe["init"] = dict(self.init)
            probe["state"] = state
        probe.update(overrides)
        return probe

    def call_text(self):
        found = _SHOWN.get(id(self))
        if found is None or found[0] is not self:  # its arguments, described once per case
            names = arg_names(self.solution, self.target) if self.solution else ()
            shown = [describe(names[i] if i < len(names) else f"arg{i}", a)
                     for i, a in enumerate(self.args)]
            shown += [describe(k, v) for k, v in self.kwargs.items()]
            found = _SHOWN[id(self)] = (self, shown)
        shown = found[1]
        if self.is_module:
            init = ", ".join(f"{k}={v!r}" for k, v in self.init.items())
            said = IN_TRAIN_MODE if self.mode == "train" else IN_EVAL_MODE
            return _(said).format(module=f"{self.target}({init})", args=", ".join(shown))
        return f"{self.target}({', '.join(shown)})"


_SHOWN = {}  # id of a case -> (the case, its arguments as its call text shows them)
_PROBES = {}  # id of a case -> {(id of its weights, overrides): (weights, case, probe)}


def case_class(assignment):
    """The Case class of `assignment`'s table: its weights and argument names declared."""
    return type("Case", (Case,), {"weights": dict(assignment.weights),
                                  "heatmaps": tuple(assignment.heatmaps),
                                  "solution": assignment.solution,
                                  "__module__": Case.__module__,
                                  "__doc__": f"A case of {assignment.name}'s hidden suite."})


@functools.lru_cache(maxsize=None)
def _signatures(solution):
    """{name: its arguments} of the solution's top-level functions and its classes'
    forward(), read from its source (nothing of it is run)."""
    with open(solution, "rb") as handle:
        tree = ast.parse(handle.read(), solution)
    found = {}
    for node in tree.body:
        name = node.name if isinstance(node, (ast.ClassDef, ast.FunctionDef)) else None
        if isinstance(node, ast.ClassDef):
            node = next((n for n in node.body if isinstance(n, ast.FunctionDef)
                         and n.name == "forward"), None)
        if isinstance(node, ast.FunctionDef):
            args = node.args
            found[name] = tuple(a.arg for a in args.posonlyargs + args.args if a.arg != "self")
    return found


def arg_names(solution, target):
    """The names of `target`'s arguments in the solution (a module: its forward's)."""
    return _signatures(solution).get(target, ())


def describe(name, value):
    """One argument as a call text shows it: its name, shape and dtype; small integer
    tensors (lengths) with their values."""
    if not isinstance(value, torch.Tensor):
        return f"{name}={value!r}"
    text = f"{name} {tuple(value.shape)} {str(value.dtype).replace('torch.', '')}"
    if (name.startswith("valid") or not value.is_floating_point()) and value.numel() <= 12:
        text += f" = {_floats(value.tolist())}"
    return text


def _floats(values):
    if isinstance(values, list):
        return [_floats(v) for v in values]
    return int(values) if float(values).is_integer() else values


class Inputs:
    """Seeded random tensors for one case: the same case always gets the same numbers."""

    def __init__(self, name):
        self.generator = torch.Generator().manual_seed(zlib.crc32(name.encode()))

    def randn(self, *shape, dtype=torch.float32, scale=1.0):
        return (torch.randn(shape, generator=self.generator, dtype=torch.float64) * scale).to(dtype)


def lens(values, dtype=torch.int64):
    """A tensor of lengths (int64 unless said)."""
    return torch.tensor(values, dtype=dtype)


def device_cases(assignment, points, case=Case):
    """The GPU parts' cases: per part and kind of machine, one case per target: every `match`
    case of that target again, on CUDA (check "cuda") or, on a CPU-only machine, under the
    device guard (check "device"). Exactly one of the two kinds runs on any machine, so the
    part is worth the same everywhere. `points`: each case's (a part's points over its
    targets, usually)."""
    out = []
    for part in assignment.parts:
        if part.gpu:
            for check, label in GPU_LABELS.items():
                for target in part.targets:
                    out.append(case(part.name, f"{target} {label}", points, target, (),
                                    check=check))
    return out
