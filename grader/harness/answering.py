"""Follow-through marking, the trusted half: the solution answers what a caller asks.

A probe sent with `answered` (grader/sandbox/runtime/answers.py) runs the student's caller
with each listed function or module class of the api replaced by a stand-in; every time the
caller calls one, the worker asks here and the solution answers on exactly those inputs:

    ask {"ask": "init", "module", "name", "args", "kwargs"}    a module the caller builds:
        -> {"instance", "params": [[name, shape, dtype]], "buffers"}   its weights' names
    ask {"ask": "call", "module", "name", "args", "kwargs", "rng"[, "instance",
         "training", "params", "buffers"]}                        a call, with the weights the
        -> {"output", "captured", "into", "call", "rng"}          caller's module holds and
                                                                  the worker's generator
    ask {"ask": "backward", "call", "grad"}                       the solution's gradients
        -> {"grads": [per input, then per weight]}

Everything an ask carries passed the reply schema (grader/sandbox/replies.py: ASK) before it
gets here, and is bounded again here before anything is built or run: tensors by the case's
own sizes, a module by the weights it would hold (built on the meta device first), the asks
of one probe by count. An answer is tensors and plain numbers, never code: an ask the
solution cannot answer (it raises on these inputs) gets only the exception's type and first
line, and the probe is marked `refused` (its case cannot be judged apart from the callee).
One Answerer serves one probe and answers nothing once it is over.
"""
import torch

from ..sandbox.runtime.probes import seed

MAX_ASKS = 512          # asks of one probe (a multi-head call: about ten)
MAX_WEIGHTS = 2**20     # entries of all the weights of one module an ask builds


class Refused(Exception):
    """This ask cannot be answered; the text says why, without the solution's code."""


class Answerer:
    """Answers the asks of one probe.

    sources:  {module name: the solution module that answers for it} (the assignment's own
              reference, and the earlier solutions of modules the student provides)
    allowed:  the [module, name] pairs the probe listed as answered
    weights:  {name: where its module stores its attention weights} (the declarations')
    max_numel: the largest tensor an ask may hand over (the case's own bound)
    """

    def __init__(self, sources, allowed, weights, max_numel):
        self.sources = dict(sources)
        self.allowed = {tuple(pair) for pair in allowed}
        self.weights = dict(weights)
        self.max_numel = int(max_numel)
        self.instances = {}   # id -> (module, name, the solution's module object)
        self.graphs = {}      # call id -> (output, inputs in the worker's order)
        self.asks = 0
        self.asked = []       # names asked, first time each, in order
        self.refused = None   # the first ask that could not be answered: why

    # -- one ask -----------------------------------------------------------------------------
    def __call__(self, ask):
        """The answer frame for one (schema-checked) ask."""
        self.asks += 1
        try:
            if self.asks > MAX_ASKS:
                raise Refused(f"more than {MAX_ASKS} calls to answer in one case")
            kind = ask.get("ask")
            if kind == "init":
                return dict(self._init(ask), ok=True)
            if kind == "call":
                return dict(self._call(ask), ok=True)
            if kind == "backward":
                return dict(self._backward(ask), ok=True)
            raise Refused(f"an ask of an unknown kind ({str(kind)[:40]})")
        except Refused as refused:
            return self._refuse(str(refused))
        except Exception as error:  # noqa: BLE001 - the solution raised on the caller's inputs
            line = (str(error).strip().splitlines() or [""])[0][:300]
            return self._refuse(f"{type(error).__name__}: {line}")

    def _refuse(self, why):
        if self.refused is None:
            self.refused = why
        return {"ok": False, "error": {"message": why}}

    def _source(self, ask):
        pair = (ask.get("module"), ask.get("name"))
        if pair not in self.allowed:
            raise Refused(f"{pair[1]} is not answered in this case")
        found = getattr(self.sources.get(pair[0]), str(pair[1]), None)
        if found is None:
            raise Refused(f"the solution defines no {pair[1]}")
        if pair[1] not in self.asked:
            self.asked.append(pair[1])
        return found

    # -- values --------------------------------------------------------------------------
    def _unpack(self, plain, tensors):
        """An argument as the worker described it (answers._plain): tensors as leaves that
        need a gradient where the caller's did, appended to `tensors` in the worker's order."""
        if not isinstance(plain, dict):
            raise Refused("an argument that is not described")
        if "tensor" in plain:
            tensor = plain["tensor"]
            if tensor.numel() > self.max_numel:
                raise Refused(f"an argument of {tensor.numel()} entries, more than this case's "
                              f"{self.max_numel}")
            if plain.get("grad") and tensor.is_floating_point():
                leaf = tensor.detach().clone().requires_grad_(True)
                tensors.append(leaf)
                return leaf.clone()  # a non-leaf: the book's code writes into its input
            tensors.append(None)
            return tensor.clone()
        if "list" in plain:
            return [self._unpack(v, tensors) for v in plain["list"]]
        if "other" in plain:
            raise Refused(f"an argument of type {plain['other']}, which cannot be handed to "
                          f"the solution")
        if "dtype" in plain:
            dtype = getattr(torch, str(plain["dtype"]), None)
            if not isinstance(dtype, torch.dtype):
                raise Refused("an unknown dtype")
            return dtype
        return plain.get("value")

    def _arguments(self, ask):
        tensors = []
        args = self._unpack(ask.get("args") or {"list": []}, tensors)
        kwargs = {k: self._unpack(v, tensors) for k, v in (ask.get("kwargs") or {}).items()}
        if not isinstance(args, list):
            raise Refused("arguments that are not a list")
        return args, kwargs, tensors

    # -- the three kinds -------------------------------------------------------------------
    def _init(self, ask):
        cls = self._source(ask)
        if not (isinstance(cls, type) and issubclass(cls, torch.nn.Module)):
            raise Refused(f"{ask.get('name')} is not a module")
        args, kwargs, _ = self._arguments(ask)
        with torch.device("meta"):
            sizing = cls(*args, **kwargs)
        held = sum(t.numel() for t in list(sizing.parameters()) + list(sizing.buffers()))
        if held > MAX_WEIGHTS:
            raise Refused(f"{ask.get('name')} built so would hold {held} weights")
        with torch.random.fork_rng(devices=[]):
            seed(0)
            module = cls(*args, **kwargs)
        instance = len(self.instances) + 1
        self.instances[instance] = (ask.get("module"), ask.get("name"), module)
        return {"instance": instance,
                "params": [[n, list(p.shape), str(p.dtype).replace("torch.", "")]
                           for n, p in module.named_parameters()],
                "buffers": {n: b.detach().clone() for n, b in module.named_buffers()}}

    def _call(self, ask):
        target = self._source(ask)
        args, kwargs, tensors = self._arguments(ask)
        with torch.random.fork_rng(devices=[]):
            # the worker's generator, as the callee would have found it there: dropout in
            # the answer draws what the solution running in the worker would have drawn
            rng = ask.get("rng")
            if rng is not None:
                torch.random.set_rng_state(rng)
            output, weights, captured = self._compute(ask, target, args, kwargs, tensors)
            after = torch.random.get_rng_state()
        if not isinstance(output, torch.Tensor):
            raise Refused(f"the solution's {ask.get('name')} gives no tensor here")
        into = next((i for i, a in enumerate(args) if a is output), None)
        call = None
        inputs = tensors + weights
        if output.requires_grad and any(t is not None for t in inputs):
            call = len(self.graphs) + 1
            self.graphs[call] = (output, inputs)
        return {"output": output.detach().clone(), "captured": captured, "into": into,
                "call": call, "rng": after if rng is not None else None}

    def _compute(self, ask, target, args, kwargs, tensors):
        """(output, the weights that need a gradient, captured attention weights)."""
        if "instance" in ask:
            found = self.instances.get(ask.get("instance"))
            if found is None or found[:2] != (ask.get("module"), ask.get("name")):
                raise Refused("a module the grader did not build")
            module = found[2]
            state, weights = self._state(module, ask, tensors)
            module.train(bool(ask.get("training")))
            output = torch.func.functional_call(module, state, tuple(args), kwargs)
            return output, weights, self._captured(module, ask.get("name"))
        if isinstance(target, type):
            raise Refused(f"{ask.get('name')} is a module: it is built, then called")
        return target(*args, **kwargs), [], {}

    def _state(self, module, ask, tensors):
        """The caller's module's weights, as the worker sent them, in the solution's names;
        the weights that need a gradient follow the inputs in the worker's order."""
        expected = dict(module.named_parameters())
        given = ask.get("params") or {}
        if list(given) != list(expected):
            raise Refused("weights that are not the solution's")
        state, weights = {}, []
        for name, value in given.items():
            if tuple(value.shape) != tuple(expected[name].shape) or value.numel() > MAX_WEIGHTS:
                raise Refused(f"the weight {name} has another shape")
            leaf = value.detach().clone()
            if leaf.is_floating_point():
                leaf.requires_grad_(True)
                weights.append(leaf)
            else:
                weights.append(None)
            state[name] = leaf
        buffers = dict(module.named_buffers())
        for name, value in (ask.get("buffers") or {}).items():
            if name not in buffers or tuple(value.shape) != tuple(buffers[name].shape):
                raise Refused(f"the buffer {name} is not the solution's")
            state[name] = value.clone()
        return state, weights

    def _captured(self, module, name):
        path = self.weights.get(name)
        if not path:
            return {}
        value = module
        for part in path.split("."):
            value = getattr(value, part, None)
        return {path: value.detach().clone()} if isinstance(value, torch.Tensor) else {}

    def _backward(self, ask):
        found = self.graphs.get(ask.get("call"))
        if found is None:
            raise Refused("a gradient of a call the grader did not answer")
        output, inputs = found
        grad = ask.get("grad")
        if tuple(grad.shape) != tuple(output.shape):
            raise Refused("a gradient of another shape than the answer")
        leaves = [t for t in inputs if t is not None]
        got = torch.autograd.grad(output, leaves, grad.to(output.dtype), allow_unused=True,
                                  retain_graph=True)
        got = iter(got)
        grads = []
        for tensor in inputs:
            g = next(got) if tensor is not None else None
            grads.append(None if g is None else g.detach().clone())
        return {"grads": grads}
