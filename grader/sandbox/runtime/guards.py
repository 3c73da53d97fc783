"""Device discipline on a machine without a GPU.

On a GPU, `torch.arange(n) < valid_len[:, None]` fails because `torch.arange(n)` lands on
the CPU while `valid_len` is on the GPU. On a CPU-only machine both are on the CPU and the
bug is invisible. `device_guard()` makes it visible by taint tracking inside a
TorchFunctionMode:

- a tensor made by a factory function (`torch.arange`, `torch.zeros`, `torch.tensor`, ...)
  without `device=` is marked as "on the default device", unless it is 0-dimensional
  (0-d CPU tensors mix with GPU tensors without error on a real GPU);
- results computed from a marked tensor stay marked, except where the code moves it
  explicitly (`.to(X.device)`, `.to(X)`, `.type_as(X)`, `.cuda()`);
- an operation that combines a marked tensor with an unmarked one (one that came from
  the inputs or the module's parameters), and an output that is still marked, are
  recorded as violations: on a GPU those are "Expected all tensors to be on the same
  device" errors or outputs on the wrong device.

It cannot see `torch.from_numpy`, `.cpu()` or a hard-coded `device="cpu"`; only a run on a
real GPU proves GPU execution.

The guard runs in the worker, beside the code it watches, so it reports what it saw rather
than a verdict: `Watch.record()` says how many torch calls it observed, whether it stayed in
place (still on top of the mode stack, its class untouched, none of torch's switches for
turning modes off used: see `install_tripwires`) and the violations. The trusted side
decides (grader/harness/results.py) and fails closed: no record, no observed call, or a
guard that was moved or switched off earns nothing. Code written to forge that record from
inside the worker's memory can still do so; only the CUDA tier cannot be forged this way.
"""
import contextlib
import importlib
import os
import sys

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._device import _device_constructors
from torch.utils._pytree import tree_flatten

MARK = "_attnkit_made_on_default_device"
FACTORIES = frozenset(_device_constructors())
MOVES = frozenset({torch.Tensor.to, torch.Tensor.type_as, torch.Tensor.cuda})


def _tensors(tree):
    return [leaf for leaf in tree_flatten(tree)[0] if isinstance(leaf, torch.Tensor)]


def _marked(tensor):
    return tensor.__dict__.get(MARK) if hasattr(tensor, "__dict__") else None


def _mark(tree, origin):
    for tensor in _tensors(tree):
        if tensor.dim() > 0:
            try:
                tensor.__dict__[MARK] = origin
            except Exception:
                pass


def _moves_explicitly(func, args, kwargs):
    if func is torch.Tensor.cuda or func is torch.Tensor.type_as:
        return True
    if func is torch.Tensor.to:
        extra = list(args[1:]) + list(kwargs.values())
        return any(isinstance(a, (torch.device, str, torch.Tensor)) for a in extra) or "device" in kwargs
    return False


def _name(func):
    owner = getattr(func, "__objclass__", None) or getattr(func, "__self__", None)
    name = getattr(func, "__name__", repr(func))
    if owner is torch.Tensor or (isinstance(owner, type) and issubclass(owner, torch.Tensor)):
        return f"Tensor.{name}"
    return f"torch.{name}"


# torch's switches that turn torch-function modes off, take them off the stack or hand them
# out. They are
# wrapped before the submission is imported (install_tripwires), so a submission that uses
# one while a guard watches leaves a trace in the guard's record.
SWITCHES = (("torch._C", "DisableTorchFunction"), ("torch._C", "_pop_torch_function_stack"),
            ("torch._C", "_set_torch_function_state"), ("torch._C", "_set_skip_next_torch_function"),
            ("torch._C", "_skip_one_hop_torch_function"), ("torch.overrides", "_pop_mode"),
            ("torch.overrides", "_pop_mode_temporarily"),
            ("torch.utils._python_dispatch", "_pop_mode_temporarily"),
            # and the ways to reach the guard itself from the code it watches
            ("torch.overrides", "_get_current_function_mode"),
            ("torch.overrides", "_get_current_function_mode_stack"),
            ("torch._C", "_get_function_stack_at"))
_WATCHING = []  # the active Watch, while a guarded call runs
_TORCH_DIR = os.path.dirname(os.path.realpath(torch.__file__)) + os.sep


def install_tripwires():
    """Wrap torch's mode switches so that using one under a guard is recorded."""
    for module_name, attribute in SWITCHES:
        module = importlib.import_module(module_name)
        original = getattr(module, attribute, None)
        if original is None or getattr(original, "_attnkit_tripwire", False):
            continue

        def tripwire(*args, _original=original, _name=f"{module_name}.{attribute}", **kwargs):
            # torch itself pops modes while it hands a call to one (handle_torch_function)
            if _WATCHING and not sys._getframe(1).f_code.co_filename.startswith(_TORCH_DIR):
                for watch in _WATCHING:
                    watch.tripped.append(_name)
            return _original(*args, **kwargs)

        tripwire._attnkit_tripwire = True
        try:
            setattr(module, attribute, tripwire)
        except (AttributeError, TypeError):
            pass


class DeviceDiscipline(TorchFunctionMode):
    def __init__(self, watch):
        super().__init__()
        self._watch = watch

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        watch = self._watch
        watch.ops += 1
        inputs = _tensors((args, kwargs))
        result = func(*args, **kwargs)
        if func in FACTORIES and not inputs:
            if kwargs.get("device") is None:
                _mark(result, f"torch.{func.__name__}(...) without device={_made_in()}")
            return result
        marked = [m for m in (_marked(t) for t in inputs if t.dim() > 0) if m]
        if not marked:
            return result
        if _moves_explicitly(func, args, kwargs):
            for tensor in _tensors(result):  # `.to(X.device)` on the CPU returns the same object
                tensor.__dict__.pop(MARK, None)
            return result
        unmarked = [t for t in inputs if t.dim() > 0 and not _marked(t)]
        if unmarked:
            watch.violation(marked[0],
                f"{marked[0]} made a tensor on the default device (the CPU), and {_name(func)} "
                f"then combined it with a tensor on the input's device; on a GPU this fails "
                f"with 'Expected all tensors to be on the same device'. Pass device=X.device "
                f"(X being one of the inputs) when you create it.")
        _mark(result, marked[0])
        return result


_TORCH_FUNCTION = DeviceDiscipline.__torch_function__
_RUNTIME_DIR = os.path.dirname(os.path.realpath(__file__)) + os.sep


def _made_in():
    """" (in NAME, line N)": the function of the code under test that called the factory
    (the innermost frame that is neither torch's nor this runtime's), so that a verdict says
    whose code made the stray tensor; "" when none is found."""
    frame = sys._getframe(2)
    for _ in range(64):
        if frame is None:
            return ""
        name = frame.f_code.co_filename
        if not name.startswith((_TORCH_DIR, _RUNTIME_DIR)) and not name.startswith("<frozen"):
            qualname = getattr(frame.f_code, "co_qualname", frame.f_code.co_name)
            return f" (in {qualname[:80]}, line {frame.f_lineno})"
        frame = frame.f_back
    return ""


class Watch:
    """What one guarded call showed: torch calls observed, violations, signs of tampering."""

    def __init__(self):
        self.ops = 0
        self.violations = []
        self.tripped = []
        self.intact = True
        self._origins = set()

    def violation(self, origin, text):
        if origin not in self._origins:
            self._origins.add(origin)
            self.violations.append(text)

    def record(self):
        """Plain data for the reply; the trusted side turns it into a verdict."""
        return {"ops": int(self.ops), "intact": bool(self.intact),
                "tripped": sorted(set(self.tripped))[:10], "violations": list(self.violations)[:20]}


@contextlib.contextmanager
def device_guard(enabled=True):
    """Yields a Watch that collects what it sees inside the block; violations are recorded,
    never raised, so the call runs to the end and its output can be checked."""
    watch = Watch()
    if not enabled:
        yield watch
        return
    mode = DeviceDiscipline(watch)
    depth = torch._C._len_torch_function_stack()
    mode.__enter__()
    _WATCHING.append(watch)
    try:
        yield watch
    finally:
        _WATCHING.remove(watch)
        # still ours, still on top, still the class we wrote?
        if (torch._C._len_torch_function_stack() != depth + 1
                or torch.overrides._get_current_function_mode() is not mode
                or type(mode) is not DeviceDiscipline
                or DeviceDiscipline.__torch_function__ is not _TORCH_FUNCTION
                or "__torch_function__" in vars(mode) or mode._watch is not watch):
            watch.intact = False
        try:
            mode.__exit__(None, None, None)
        except Exception:  # the stack was changed under us
            watch.intact = False
        while torch._C._len_torch_function_stack() > depth:  # leave no mode of ours behind
            torch._C._pop_torch_function_stack()


def output_is_marked(value):
    return isinstance(value, torch.Tensor) and bool(_marked(value))


def origin(value):
    return _marked(value) or "a tensor made without device="
