"""Follow-through marking, the worker's half: a caller judged on its own code.

While a probe that names `answered` runs, each name it lists (a function or a module class
of the api, in the submission's module or an earlier module it imports) is replaced by a
stand-in that asks the trusted process for the solution's answer on the very inputs the
caller hands it. The caller is the student's code; everything it calls is answered right.
So a case of MultiHeadAttention is judged on the projections and the wiring the student
wrote, whatever is wrong in their DotProductAttention or masked_softmax.

    probe["answered"] = [["attention", "DotProductAttention"], ["attention", "masked_softmax"]]

An ask is a frame on the reply channel, {"ask": "init" | "call" | "backward", ...}; the answer
comes back on the request channel. The worker holds no solution: an answer is tensors and
plain numbers, computed and checked on the trusted side (grader/harness/answering.py), which
answers only while such a probe runs and only for the names it listed; an ask at any other
time fails the call that made it. Gradients flow through a stand-in: its backward asks the
trusted side for the solution's gradients with respect to the inputs and the weights.

Device discipline (guards.py) sees through a stand-in as it would through the real callee:
an input made on the default device that meets another input or a weight is a violation,
and an answer computed from such inputs stays marked.
"""
import contextlib
import numbers

import torch

from . import guards

ASKED = "_attnkit_answered"  # set on a stand-in: which name it answers


class NotAnswered(RuntimeError):
    """The trusted side could not answer (the solution raised on these inputs, or the ask
    was refused): raised in the caller's code, where the real callee would have run."""


def _rng():
    with _paused():
        return torch.random.get_rng_state()


def _take_rng(answer):
    """The generator as the solution left it: later draws are what they would have been."""
    state = answer.get("rng")
    if isinstance(state, torch.Tensor):
        with _paused():
            torch.random.set_rng_state(state)


class Channel:
    """The worker's two file descriptors, for the asks of one probe."""

    def __init__(self, request_fd, reply_fd, protocol):
        self.request_fd, self.reply_fd, self.protocol = request_fd, reply_fd, protocol
        self.live = False

    def ask(self, message):
        if not self.live:
            raise NotAnswered("nothing is answered outside the cases that ask for it")
        with _paused():
            self.protocol.write_frame(self.reply_fd, message)
            answer = self.protocol.read_frame(self.request_fd)
        if not isinstance(answer, dict) or answer.get("ok") is not True:
            error = answer.get("error") if isinstance(answer, dict) else None
            text = error.get("message") if isinstance(error, dict) else "no answer"
            raise NotAnswered(str(text)[:500])
        return answer


@contextlib.contextmanager
def _paused():
    """The frames' own tensor work, out of the device guard's sight (it watches the
    student's code, not the exchange)."""
    watching = list(guards._WATCHING)
    guards._WATCHING.clear()
    try:
        with torch._C.DisableTorchFunction():
            yield
    finally:
        guards._WATCHING.extend(watching)


def _plain(value, tensors):
    """What crosses for an argument: tensors as CPU copies (their places kept in
    `tensors`), numbers, strings, None, and lists/tuples of them."""
    if isinstance(value, torch.Tensor):
        tensors.append(value)
        with _paused():
            copy = value.detach().to("cpu", copy=True).contiguous()
        return {"tensor": copy, "grad": bool(value.requires_grad)}
    if value is None or isinstance(value, (bool, str)):
        return {"value": value}
    if isinstance(value, numbers.Integral):
        return {"value": int(value)}
    if isinstance(value, numbers.Real):
        return {"value": float(value)}
    if isinstance(value, (list, tuple)):
        return {"list": [_plain(v, tensors) for v in value]}
    if isinstance(value, torch.dtype):
        return {"dtype": str(value).replace("torch.", "")}
    # the trusted side refuses it, and says the case could not be judged apart
    return {"other": type(value).__name__[:100]}


def _device_of(tensors, params):
    for t in list(tensors) + list(params):
        if t.dim() > 0:
            return t.device
    return (tensors or params or [torch.empty(0)])[0].device


def _watch_inputs(name, tensors, params):
    """What the real callee would have done with inputs made on the default device."""
    sized = [t for t in list(tensors) + list(params) if t.dim() > 0]
    devices = {t.device for t in sized}
    if len(devices) > 1:  # a real GPU: torch itself refuses to mix them
        raise RuntimeError(f"Expected all tensors to be on the same device, but found at least "
                           f"two devices, {', '.join(sorted(map(str, devices)))}! (in {name})")
    if not guards._WATCHING:
        return None
    marked = [m for m in (guards._marked(t) for t in sized) if m]
    if not marked:
        return None
    if any(not guards._marked(t) for t in sized):
        for watch in guards._WATCHING:
            watch.violation(marked[0],
                f"{marked[0]} made a tensor on the default device (the CPU), and {name} then "
                f"combined it with a tensor on the input's device; on a GPU this fails with "
                f"'Expected all tensors to be on the same device'. Pass device=X.device "
                f"(X being one of the inputs) when you create it.")
    return marked[0]


class _Answer(torch.autograd.Function):
    """The trusted side's answer as a node of the caller's graph: its backward asks for the
    solution's gradients with respect to every input that needs one."""

    @staticmethod
    def forward(ctx, call, *inputs):
        ctx.call = call
        ctx.devices = [t.device for t in inputs]
        return call["output"]

    @staticmethod
    def backward(ctx, grad):
        call = ctx.call
        with _paused():
            grad = grad.detach().to("cpu", copy=True).contiguous()
        answer = call["channel"].ask({"ask": "backward", "call": call["id"], "grad": grad})
        grads = answer.get("grads") or []
        out = [None]
        for index, device in enumerate(ctx.devices):
            g = grads[index] if index < len(grads) else None
            with _paused():
                out.append(g.to(device) if isinstance(g, torch.Tensor) else None)
        return tuple(out)


def _finish(name, answer, tensors, params, channel, origin):
    """The answer as the caller receives it: on the inputs' device, in the caller's graph,
    written into the input the solution writes into (the book's sequence_mask does)."""
    output = answer.get("output")
    if not isinstance(output, torch.Tensor):
        raise NotAnswered(f"{name}: no answer")
    device = _device_of(tensors, params)
    with _paused():
        output = output.to(device)
    inputs = list(tensors) + list(params)
    if answer.get("call") is not None and torch.is_grad_enabled() and \
            any(t.requires_grad for t in inputs):
        call = {"id": answer.get("call"), "output": output, "channel": channel}
        output = _Answer.apply(call, *inputs)
    if origin:
        guards._mark(output, origin)
    into = answer.get("into")
    if isinstance(into, int) and 0 <= into < len(tensors):
        target = tensors[into]
        target.copy_(output)  # the solution writes into this input and returns it
        return target
    return output


def function_stand_in(module, name, channel):
    def stand_in(*args, **kwargs):
        tensors = []
        message = {"ask": "call", "module": module, "name": name,
                   "args": _plain(list(args), tensors), "kwargs": _plain_kwargs(kwargs, tensors)}
        origin = _watch_inputs(name, tensors, [])
        answer = channel.ask(dict(message, rng=_rng()))
        _take_rng(answer)
        return _finish(name, answer, tensors, [], channel, origin)

    setattr(stand_in, ASKED, name)
    stand_in.__name__ = stand_in.__qualname__ = name
    return stand_in


def _plain_kwargs(kwargs, tensors):
    return {str(k): _plain(v, tensors) for k, v in kwargs.items()}


def _container(root, dotted):
    """The submodule at `dotted` (a.b), made of empty modules where missing."""
    node = root
    for part in dotted.split(".") if dotted else []:
        child = node._modules.get(part)
        if child is None:
            child = torch.nn.Module()
            node.add_module(part, child)
        node = child
    return node


def module_stand_in(module, name, channel):
    """A module class whose instances hold the solution's parameter names and shapes (so a
    caller's load_state_dict gives them the grader's weights) and answer every forward."""

    class StandIn(torch.nn.Module):
        def __init__(self, *args, **kwargs):
            super().__init__()
            tensors = []
            spec = channel.ask({"ask": "init", "module": module, "name": name,
                                "args": _plain(list(args), tensors),
                                "kwargs": _plain_kwargs(kwargs, tensors)})
            object.__setattr__(self, "_attnkit_instance", spec.get("instance"))
            for entry in spec.get("params") or []:
                dotted, shape, dtype = entry
                owner, _, leaf = dotted.rpartition(".")
                with _paused():
                    value = torch.zeros(tuple(shape), dtype=getattr(torch, dtype))
                _container(self, owner).register_parameter(leaf, torch.nn.Parameter(value))
            for dotted, value in (spec.get("buffers") or {}).items():
                owner, _, leaf = dotted.rpartition(".")
                _container(self, owner).register_buffer(leaf, value)
            for dotted, value in (spec.get("attributes") or {}).items():
                owner, _, leaf = dotted.rpartition(".")
                setattr(_container(self, owner), leaf, value)

        def forward(self, *args, **kwargs):
            tensors = []
            params = [p for _n, p in self.named_parameters()]
            with _paused():
                weights = {n: p.detach().to("cpu", copy=True) for n, p in self.named_parameters()}
                buffers = {n: b.detach().to("cpu", copy=True) for n, b in self.named_buffers()}
            message = {"ask": "call", "module": module, "name": name,
                       "instance": self._attnkit_instance, "training": bool(self.training),
                       "params": weights, "buffers": buffers,
                       "args": _plain(list(args), tensors), "kwargs": _plain_kwargs(kwargs, tensors)}
            origin = _watch_inputs(name, tensors, params)
            answer = channel.ask(dict(message, rng=_rng()))
            _take_rng(answer)
            device = _device_of(tensors, params)
            for dotted, value in (answer.get("captured") or {}).items():
                owner, _, leaf = dotted.rpartition(".")
                with _paused():
                    value = value.to(device) if isinstance(value, torch.Tensor) else value
                setattr(_container(self, owner), leaf, value)
            return _finish(name, answer, tensors, params, channel, origin)

    StandIn.__name__ = StandIn.__qualname__ = name
    setattr(StandIn, ASKED, name)
    return StandIn


@contextlib.contextmanager
def installed(namespaces, answered, channel):
    """While open, every [module, name] of `answered` is a stand-in in that module's
    namespace (`namespaces`: module name -> module object), and wherever a namespace holds
    the same object under some name; afterwards each is what it was, and the channel
    answers nothing."""
    saved = []
    try:
        for module, name in answered or []:
            space = namespaces.get(module)
            if space is None or not hasattr(space, name):
                continue
            original = getattr(space, name)
            if isinstance(original, type):
                stand_in = module_stand_in(module, name, channel)
            elif callable(original):
                stand_in = function_stand_in(module, name, channel)
            else:
                continue
            saved.append((space, name, original))
            setattr(space, name, stand_in)
            # the same object under another name or in another namespace (`from attention
            # import MultiHeadAttention as MHA` in the later module) is answered too
            for other in namespaces.values():
                for alias, value in list(vars(other).items()):
                    if value is original and not (other is space and alias == name):
                        saved.append((other, alias, original))
                        setattr(other, alias, stand_in)
        channel.live = bool(saved)
        yield
    finally:
        channel.live = False
        for space, name, original in reversed(saved):
            setattr(space, name, original)
