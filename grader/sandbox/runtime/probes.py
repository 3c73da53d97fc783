"""Run one probe: call a function or a module of an implementation and record what came back.

A probe is plain data (it crosses the process boundary as a frame), for example (the names
are the assignment's: its declared api, and `weights` for what a module stores):

    {"target": "SomeModule",                                           # a name of the api
     "init": {"num_hiddens": 6, ..., "dropout": 0.0},                  # absent for functions
     "state": {"W_q.weight": tensor, ...},                             # loaded with load_state_dict
     "args": [X, Y, valid_lens], "kwargs": {},
     "mode": "eval", "calls": 1, "device": "cpu", "module_dtype": None,
     "capture": ["inner.stored_weights"],                              # attributes read after
     "grad_args": [0, 1], "grad_params": True, "seed": 0, "guard": False}

The same `run_probe` runs the instructor's solution in the trusted process and the
student's module in the worker, so both sides are treated alike: inputs are cloned before
every call (the book's code writes into its inputs), moved to the probe's device, and the
results are brought back to the CPU as plain tensors together with the device and dtype
they came back on.
"""
import os
import sys
import time
import traceback

import torch

from . import answers, guards  # noqa: F401 (answers: the worker's, worker.py)

DTYPES = {
    "float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32,
    "float64": torch.float64,
}


class ProbeFailed(Exception):
    """The code under test raised; carries the stage where it happened."""

    def __init__(self, stage, exc):
        super().__init__(stage)
        self.stage = stage
        self.error = describe_exception(exc)


RUNTIME_DIR = os.path.dirname(os.path.abspath(__file__))
SYSTEM_PREFIXES = tuple({os.path.realpath(p) for p in (
    sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix, RUNTIME_DIR)})


def _is_user_frame(filename):
    """Frames of the code under test: not Python's, not torch's, not this runtime's."""
    if filename.startswith("<frozen"):
        return False
    path = os.path.realpath(filename) if os.path.isabs(filename) else filename
    return not path.startswith(SYSTEM_PREFIXES)


def describe_exception(exc):
    """A plain-data description of an exception, keeping only the frames of the code under test."""
    frames = traceback.extract_tb(exc.__traceback__)
    kept = [f for f in frames if _is_user_frame(f.filename)]
    where = [
        {"file": f.filename if not os.path.isabs(f.filename) else os.path.basename(f.filename),
         "line": f.lineno, "function": f.name,
         "code": (f.line or "").strip()}
        for f in kept[-6:]
    ]
    if isinstance(exc, SyntaxError):
        where.append({"file": os.path.basename(exc.filename or "?"), "line": exc.lineno or 0,
                      "function": "<module>", "code": (exc.text or "").strip()})
    message = _safe_str(exc)
    return {"type": type(exc).__name__, "message": message[:2000], "where": where}


def _safe_str(obj):
    try:
        return str(obj)
    except BaseException:  # a hostile __str__
        return f"<{type(obj).__name__} whose str() failed>"


def _safe_repr(obj, limit=300):
    try:
        text = repr(obj)
    except BaseException:
        text = f"<{type(obj).__name__} whose repr() failed>"
    return text[:limit]


def describe_value(value):
    """Turn whatever the code returned into plain data: a CPU tensor, or a note of what it was."""
    if isinstance(value, torch.Tensor):
        try:
            device = str(value.device)
            plain = value.detach().as_subclass(torch.Tensor)
            if plain.is_meta:
                return {"kind": "tensor-on-meta", "device": device, "dtype": str(plain.dtype),
                        "shape": list(plain.shape)}
            plain = plain.to("cpu", copy=True).contiguous()
            return {"kind": "tensor", "tensor": plain, "device": device,
                    "dtype": str(plain.dtype).replace("torch.", "")}
        except Exception as exc:
            return {"kind": "other", "type": type(value).__name__,
                    "repr": f"a tensor that could not be read back: {_safe_str(exc)[:200]}"}
    return {"kind": "other", "type": type(value).__name__, "repr": _safe_repr(value)}


def _to_device(value, device):
    if isinstance(value, torch.Tensor):
        return value.detach().clone().to(device)
    if isinstance(value, (list, tuple)):
        return type(value)(_to_device(v, device) for v in value)
    return value


def _read_attribute(obj, path):
    for name in path.split("."):
        obj = getattr(obj, name)
    return obj


def _grad_output(shape, dtype, device, seed):
    """The upstream gradient used for backward: seeded, so both sides use the same one."""
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(tuple(shape), generator=generator, dtype=torch.float64).to(dtype).to(device)


def run_probe(namespace, probe):
    """Run `probe` against the implementation `namespace` (a module object)."""
    started = time.perf_counter()
    result = {"ok": True, "calls": [], "grads": {}, "state_keys": None,
              "device_violations": [], "stage": None, "error": None}
    try:
        _run(namespace, probe, result)
    except ProbeFailed as failure:
        result.update(ok=False, stage=failure.stage, error=failure.error)
    result["seconds"] = time.perf_counter() - started
    return result


def _stage(stage, fn, *args, **kwargs):
    try:
        return fn(*args, **kwargs)
    except Exception as exc:
        raise ProbeFailed(stage, exc) from None


def seed(value, device="cpu"):
    """torch.manual_seed for the generators a probe on `device` draws from: the CPU's, and
    every accelerator's when the probe runs on one or CUDA is already in use. (Before CUDA
    starts, torch.manual_seed queues a seeding for each accelerator and records a stack trace
    for each: 2 ms a call, most of a small probe's time.)"""
    torch.random.default_generator.manual_seed(value)
    if device != "cpu" or torch.cuda.is_initialized():
        torch.manual_seed(value)


def _run(namespace, probe, result):
    device = probe.get("device", "cpu")
    target_name = probe["target"]
    target = _stage("lookup", getattr, namespace, target_name)
    seed_value = int(probe.get("seed", 0))
    seed(seed_value, device)

    if "init" in probe:
        # Modules are always built on the CPU, outside any device guard, then moved.
        module = _stage("init", lambda: target(**probe["init"]))
        if not isinstance(module, torch.nn.Module):
            raise ProbeFailed("init", TypeError(
                f"{target_name}(...) gave a {type(module).__name__}, not an nn.Module"))
        state = probe.get("state")
        # nn.LazyLinear (the book's 1.0 edition) has no shapes until its first call or until
        # load_state_dict gives it the grader's weights: its shapes are reported as None
        result["state_keys"] = _stage("state_dict", lambda: [
            [name, None if torch.nn.parameter.is_lazy(t) else list(t.shape)]
            for name, t in module.state_dict().items()])
        if state is not None:
            _stage("load_state_dict", module.load_state_dict, state, strict=True)
        module_dtype = probe.get("module_dtype")
        if module_dtype:
            _stage("to", module.to, dtype=DTYPES[module_dtype])
        _stage("to", module.to, device)
        _stage("mode", module.train, probe.get("mode", "eval") == "train")
        call = module
        owner = module
    else:
        call = target
        owner = None

    grad_args = list(probe.get("grad_args", []))
    grad_params = bool(probe.get("grad_params", False))
    captures = list(probe.get("capture", []))
    for index in range(int(probe.get("calls", 1))):
        args = _to_device(probe.get("args", []), device)
        kwargs = _to_device(probe.get("kwargs", {}), device)
        leaves = {}
        for i in grad_args:
            leaves[i] = args[i].requires_grad_(True)
            # a non-leaf copy: the book's code writes into its input in place
            args[i] = leaves[i].clone()
        seed(seed_value + 1 + index, device)
        guarded = bool(probe.get("guard", False))
        with guards.device_guard(enabled=guarded) as watch:
            output = _stage("call", call, *args, **kwargs)
        if guarded and guards.output_is_marked(output):
            watch.violations.append(
                f"the output was built from {guards.origin(output)}, so it stays on the CPU "
                f"when the inputs are on a GPU. Create tensors with device=X.device.")
        result["device_violations"].extend(watch.violations)
        if guarded:
            result["guard"] = _merge_watch(result.get("guard"), watch.record())
        record = {"output": describe_value(output), "captured": {}}
        for path in captures:
            try:
                value = _read_attribute(owner, path)
            except Exception as exc:
                record["captured"][path] = {"kind": "missing", "repr": _safe_str(exc)[:300]}
                continue
            record["captured"][path] = describe_value(value)
        result["calls"].append(record)

        if index == 0 and (grad_args or grad_params):
            if not isinstance(output, torch.Tensor) or not output.requires_grad:
                raise ProbeFailed("backward", RuntimeError(
                    "the output does not depend on the inputs through autograd "
                    "(was it detached, or built from .item()/.tolist()/numpy values?)"))
            upstream = _grad_output(output.shape, output.dtype, output.device, seed_value + 7919)
            _stage("backward", lambda: (output * upstream).sum().backward())
            result["grads"]["args"] = {
                str(i): describe_value(leaf.grad) for i, leaf in leaves.items()}
            if grad_params and owner is not None:
                result["grads"]["params"] = {
                    name: describe_value(p.grad) for name, p in owner.named_parameters()}


def _merge_watch(so_far, record):
    """One guard record for all the calls of a probe."""
    if so_far is None:
        return record
    return {"ops": so_far["ops"] + record["ops"], "intact": so_far["intact"] and record["intact"],
            "tripped": sorted(set(so_far["tripped"]) | set(record["tripped"]))[:10],
            "violations": (so_far["violations"] + record["violations"])[:20]}


def describe_api(namespace, names):
    """Which of the expected names the module defines, and as what."""
    found = {}
    for name in names:
        value = getattr(namespace, name, None)
        if value is None:
            found[name] = "missing"
        elif isinstance(value, type):
            found[name] = "class"
        elif callable(value):
            found[name] = "function"
        else:
            found[name] = type(value).__name__
    return found
