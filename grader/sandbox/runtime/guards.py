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
"""
import contextlib

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


class DeviceDiscipline(TorchFunctionMode):
    def __init__(self):
        super().__init__()
        self.violations = []
        self._origins = set()

    def _record(self, origin, text):
        if origin not in self._origins:
            self._origins.add(origin)
            self.violations.append(text)

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        inputs = _tensors((args, kwargs))
        result = func(*args, **kwargs)
        if func in FACTORIES and not inputs:
            if kwargs.get("device") is None:
                _mark(result, f"torch.{func.__name__}(...) without device=")
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
            self._record(marked[0],
                f"{marked[0]} made a tensor on the default device (the CPU), and {_name(func)} "
                f"then combined it with a tensor on the input's device; on a GPU this fails "
                f"with 'Expected all tensors to be on the same device'. Pass device=X.device "
                f"(X being one of the inputs) when you create it.")
        _mark(result, marked[0])
        return result


@contextlib.contextmanager
def device_guard(enabled=True):
    """Yields the list that collects violations seen inside the block; violations are
    recorded, never raised, so the call runs to the end and its output can be checked."""
    if not enabled:
        yield []
        return
    mode = DeviceDiscipline()
    with mode:
        yield mode.violations


def output_is_marked(value):
    return isinstance(value, torch.Tensor) and bool(_marked(value))


def origin(value):
    return _marked(value) or "a tensor made without device="
