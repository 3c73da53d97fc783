"""What a worker may reply, declared as data, and the check every reply passes before use.

The worker runs student code, so each frame it sends is hostile until checked. A reply is
read in three steps, all inside the call's time limit:

1. the frame's header (runtime/protocol.py: a small JSON header, then raw tensor bytes) is
   bounded before anything is built: few tensors and storages, a small header and a bounded
   amount of tensor bytes, each inside the frame (ARCHIVE);
2. the header is read (protocol.decode): containers, numbers, strings and tensors as the
   worker describes them (protocol.Sent: dtype, shape, strides and a view of the bytes, not
   yet a tensor); nothing is unpickled, and a value of any other type refuses the frame;
3. the result is walked against the schema below: types, string lengths (strings are made
   safe with textsafety.safe_text and capped), list lengths, dict sizes, nesting depth and
   a budget counted on the EXPANDED structure (a value the frame shares 1000 times is
   counted 1000 times; the walk stops as soon as the budget is spent). Unknown keys are
   dropped. Tensors must be plain dense CPU tensors of a real dtype whose size is bounded
   by what the reference returned, checked on the description before any tensor is built;
   each comes out as a contiguous copy.

A reply that breaks the schema raises ReplyRefused (a ProtocolError: the call fails, kind
"protocol"). A tensor that is only odd (sparse, meta, complex, far too large...) does not
condemn the reply: its value description becomes {"kind": "refused", "reason": ...}, and
the call that reads it fails with that reason.
"""
import math
import time

import torch

from ..i18n import _
from ..textsafety import safe_text
from .runtime import protocol

# -- bounds -------------------------------------------------------------------------------
MAX_FRAME_BYTES = 20 * 2**20       # a whole reply frame (a real one: a few KB)
ARCHIVE = {"max_entries": 1024,    # tensors and storages of one frame
           "max_pickle_bytes": 256 * 1024,  # the header: all but the tensors (a real reply: ~2 KB)
           "max_storage_bytes": 16 * 2**20}  # all tensor storage together
MAX_DEPTH = 12                     # containers inside containers
BUDGET_NODES = 50_000              # values visited, counted on the expanded structure
BUDGET_CHARS = 2_000_000           # characters of all strings, counted likewise
BUDGET_ELEMENTS = 4 * 2**20        # tensor elements of all tensors, counted likewise
MAX_DIMS = 8
MAX_HELD_BYTES = 1 << 20           # a held probe's output, per stream (the kit keeps 64 KB)
GLOBAL_MAX_NUMEL = 2**20           # one tensor, when no reference result bounds it
REAL_DTYPES = {torch.bool: "bool", torch.uint8: "uint8", torch.int8: "int8",
               torch.int16: "int16", torch.int32: "int32", torch.int64: "int64",
               torch.float16: "float16", torch.bfloat16: "bfloat16",
               torch.float32: "float32", torch.float64: "float64"}
REAL_NAMES = frozenset(REAL_DTYPES.values())


class ReplyRefused(protocol.ProtocolError):
    """The reply breaks its schema; the message says where and how, for the student."""


class ReplyTooSlow(ReplyRefused):
    """Checking the reply ran past the call's deadline."""


class _TensorRefused(Exception):
    """One tensor is unusable; the value description carrying it becomes kind 'refused'."""


def numel_bound(reference_numel):
    """The largest tensor accepted from the submission when the reference's largest had
    `reference_numel` elements (None: no reference at hand)."""
    if reference_numel is None:
        return GLOBAL_MAX_NUMEL
    return min(GLOBAL_MAX_NUMEL, 4 * int(reference_numel) + 64)


# -- the schema language -------------------------------------------------------------------
class _Walk:
    """Budget, depth and deadline of one check."""

    def __init__(self, max_numel, deadline):
        self.nodes = self.chars = self.elements = 0
        self.max_numel = max_numel
        self.deadline = deadline

    def spend(self, path, nodes=1, chars=0):
        self.nodes += nodes
        self.chars += chars
        if self.nodes > BUDGET_NODES or self.chars > BUDGET_CHARS:
            raise ReplyRefused(
                f"the reply is far larger than any real result once its shared parts are "
                f"counted each time they are used (more than {BUDGET_NODES} values or "
                f"{BUDGET_CHARS} characters, at {_at(path)})")
        if self.deadline is not None and not self.nodes % 512 and time.monotonic() > self.deadline:
            raise ReplyTooSlow("checking the reply took longer than the call's time limit")


def _name(value):
    return type(value).__name__


def _at(path):
    return path or "the reply"


class Str:
    def __init__(self, limit):
        self.limit = limit

    def check(self, value, walk, path, depth):
        if type(value) is not str:
            raise ReplyRefused(f"{_at(path)} should be a string, not a {_name(value)}")
        walk.spend(path, chars=len(value))
        return safe_text(value, self.limit)


class Int:
    def __init__(self, low=-2**63, high=2**63 - 1):
        self.low, self.high = low, high

    def check(self, value, walk, path, depth):
        if type(value) is not int:
            raise ReplyRefused(f"{_at(path)} should be an integer, not a {_name(value)}")
        walk.spend(path)
        if not self.low <= value <= self.high:
            raise ReplyRefused(f"{_at(path)} is out of range")
        return value


class Num:
    """A finite int or float, read as a float (seconds)."""

    def check(self, value, walk, path, depth):
        if type(value) not in (int, float):
            raise ReplyRefused(f"{_at(path)} should be a number, not a {_name(value)}")
        walk.spend(path)
        value = float(value) if abs(value) < 1e300 else math.inf
        if not math.isfinite(value):
            raise ReplyRefused(f"{_at(path)} is not a finite number")
        return value


class Bool:
    def check(self, value, walk, path, depth):
        if type(value) is not bool:
            raise ReplyRefused(f"{_at(path)} should be True or False, not a {_name(value)}")
        walk.spend(path)
        return value


class Null:
    def check(self, value, walk, path, depth):
        if value is not None:
            raise ReplyRefused(f"{_at(path)} should be None, not a {_name(value)}")
        walk.spend(path)
        return None


class Bytes:
    """Bytes as printed (a held probe's output), at most `limit` of them."""

    def __init__(self, limit):
        self.limit = limit

    def check(self, value, walk, path, depth):
        if type(value) is not bytes:
            raise ReplyRefused(f"{_at(path)} should be bytes, not a {_name(value)}")
        walk.spend(path, chars=len(value))
        if len(value) > self.limit:
            raise ReplyRefused(f"{_at(path)} holds {len(value)} bytes, more than the "
                               f"{self.limit} allowed")
        return value


class Either:
    """The first alternative whose type fits (alternatives are tried cheaply: by type)."""

    def __init__(self, *options):
        self.options = options

    def check(self, value, walk, path, depth):
        last = None
        for option in self.options:
            try:
                return option.check(value, walk, path, depth)
            except ReplyTooSlow:
                raise
            except ReplyRefused as refused:
                if walk.nodes > BUDGET_NODES or walk.chars > BUDGET_CHARS:
                    raise
                last = refused
        raise last


def _container(value, kinds, walk, path, depth, what):
    if type(value) not in kinds:
        raise ReplyRefused(f"{_at(path)} should be a {what}, not a {_name(value)}")
    if depth >= MAX_DEPTH:
        raise ReplyRefused(f"{_at(path)} is nested more than {MAX_DEPTH} levels deep")
    walk.spend(path)


class List:
    def __init__(self, item, limit):
        self.item, self.limit = item, limit

    def check(self, value, walk, path, depth):
        _container(value, (list, tuple), walk, path, depth, "list")
        if len(value) > self.limit:
            raise ReplyRefused(f"{_at(path)} has {len(value)} entries, more than the {self.limit} allowed")
        return [self.item.check(v, walk, f"{path}[{i}]", depth + 1) for i, v in enumerate(value)]


class Row:
    """A fixed-length list: [name, shape], [cell, type, message]."""

    def __init__(self, *items):
        self.items = items

    def check(self, value, walk, path, depth):
        _container(value, (list, tuple), walk, path, depth, "list")
        if len(value) != len(self.items):
            raise ReplyRefused(f"{_at(path)} should have {len(self.items)} entries, not {len(value)}")
        return [s.check(v, walk, f"{path}[{i}]", depth + 1)
                for i, (s, v) in enumerate(zip(self.items, value))]


class Map:
    """A dict of string keys to values of one schema (parameter names, captured paths)."""

    def __init__(self, value, limit, key_limit=200):
        self.value, self.limit, self.key = value, limit, Str(key_limit)

    def check(self, value, walk, path, depth):
        _container(value, (dict,), walk, path, depth, "dict")
        if len(value) > self.limit:
            raise ReplyRefused(f"{_at(path)} has {len(value)} entries, more than the {self.limit} allowed")
        out = {}
        for key, item in value.items():
            if type(key) is not str:
                raise ReplyRefused(f"{_at(path)} has a key that is a {_name(key)}, not a string")
            clean = self.key.check(key, walk, path, depth + 1)
            out[clean] = self.value.check(item, walk, f"{path}[{clean[:40]!r}]", depth + 1)
        return out


class Record:
    """A dict with known fields; `required` must be there, others are optional; unknown
    keys are dropped."""

    def __init__(self, fields, required=(), limit=32):
        self.fields, self.required, self.limit = fields, frozenset(required), limit

    def check(self, value, walk, path, depth):
        _container(value, (dict,), walk, path, depth, "dict")
        if len(value) > self.limit:
            raise ReplyRefused(f"{_at(path)} has {len(value)} fields, more than the {self.limit} allowed")
        out = {}
        for name, schema in self.fields.items():
            if name in value:
                out[name] = schema.check(value[name], walk, f"{path}.{name}" if path else name,
                                         depth + 1)
            elif name in self.required:
                raise ReplyRefused(f"{_at(path)} lacks its field {name!r}")
        return out


class Tensor:
    """A plain dense CPU tensor of a real dtype, no larger than the walk's bound; `frozen`:
    read-only (an inference tensor: a probe's result is read and compared, never written)."""

    def __init__(self, frozen=False):
        self.frozen = frozen

    def check(self, value, walk, path, depth):
        walk.spend(path)
        plain = validate_tensor(value, walk.max_numel, frozen=self.frozen)
        walk.elements += plain.numel()
        if walk.elements > BUDGET_ELEMENTS:
            raise ReplyRefused(f"the reply holds more than {BUDGET_ELEMENTS} tensor entries in all "
                               f"(at {path})")
        return plain


class Described:
    """A value description: {"kind": ..., ...}, one Record per kind. An unusable tensor makes
    the description {"kind": "refused", "reason": ...} instead of refusing the whole reply."""

    def __init__(self, kinds):
        self.kinds = kinds

    def check(self, value, walk, path, depth):
        _container(value, (dict,), walk, path, depth, "dict")
        kind = value.get("kind")
        if type(kind) is not str or kind not in self.kinds:
            raise ReplyRefused(f"{_at(path)} describes a value of an unknown kind")
        try:
            out = self.kinds[kind].check(value, walk, path, depth)
        except _TensorRefused as refused:
            return {"kind": "refused", "reason": str(refused)}
        out["kind"] = kind
        return out


def validate_tensor(value, max_numel=GLOBAL_MAX_NUMEL, frozen=False):
    """A contiguous copy of `value` (a tensor, or protocol.Sent: a tensor as a frame describes
    it, checked before it is built) if it is a tensor the comparison can use, else
    _TensorRefused with the reason in a student's words. `frozen`: the copy is read-only
    (an inference tensor)."""
    sent = type(value) is protocol.Sent
    if sent and value.kind != "Tensor" or not sent and type(value) is not torch.Tensor:
        raise _TensorRefused(_("the process sent a {type} where a plain torch.Tensor belongs "
                               "(tensor subclasses are not accepted)").format(
                                   type=value.kind if sent else _name(value)))
    if sent:
        odd = value.odd or {}
        nested, layout = odd.get("nested", False), odd.get("layout", "strided")
        quantized, device = odd.get("quantized", False), odd.get("device", "cpu")
        dtype = value.dtype
    else:
        nested, layout = value.is_nested, str(value.layout).replace("torch.", "")
        quantized, device = value.is_quantized, value.device.type
        dtype = str(value.dtype).replace("torch.", "")
    if nested:
        raise _TensorRefused(_("it is a nested tensor; return one ordinary (dense) tensor"))
    if layout != "strided":
        raise _TensorRefused(_("it is a {layout} tensor; return an ordinary dense tensor "
                               "(.to_dense()), as the reference does").format(layout=layout))
    if quantized:
        raise _TensorRefused(_("it is a quantized tensor; return an ordinary floating-point tensor"))
    if device != "cpu":
        raise _TensorRefused(_("it is a tensor on the '{device}' device, which holds no values "
                               "(create tensors on the inputs' device: device=X.device)").format(
                                   device=device))
    if dtype not in REAL_NAMES:
        raise _TensorRefused(_("it is a {dtype} tensor; the grader compares real-valued tensors "
                               "only (bool, integers, float16, bfloat16, float32, "
                               "float64)").format(dtype=dtype))
    if sent:
        shape, strides, offset = value.shape, value.strides, value.offset
        nbytes, item = len(value.data), protocol.ITEM_BYTES[dtype]
    else:
        shape, strides, offset = tuple(value.shape), value.stride(), value.storage_offset()
        nbytes, item = value.untyped_storage().nbytes(), value.element_size()
    if len(shape) > MAX_DIMS:
        raise _TensorRefused(_("it has {dims} dimensions, more than the {max} any result here "
                               "has").format(dims=len(shape), max=MAX_DIMS))
    numel = math.prod(shape)
    if numel > max_numel:
        raise _TensorRefused(_("it has {numel} entries (shape {shape}), far more than the "
                               "expected result (at most {max} accepted)").format(
                                   numel=numel, shape=shape, max=max_numel))
    if math.prod(max(n, 1) for n in shape) > max_numel:  # empty, but its strides would overflow
        raise _TensorRefused(_("its shape {shape} is far larger than the expected result's, "
                               "though it holds no entries").format(shape=shape))
    if numel:
        if any(s < 0 for s in strides) or offset < 0:
            raise _TensorRefused(_("its strides are negative"))
        last = offset + sum((n - 1) * s for n, s in zip(shape, strides))
        if (last + 1) * item > nbytes:
            raise _TensorRefused(_("its shape reaches beyond the memory it came with"))
    if sent:
        value = value.build()
    elif value.is_conj() or value.is_neg():
        value = value.resolve_conj().resolve_neg()
    if frozen:
        with torch.inference_mode():
            return value.detach().clone(memory_format=torch.contiguous_format)
    return value.detach().clone(memory_format=torch.contiguous_format)


# -- the schemas -----------------------------------------------------------------------------
FRAME = Record({"file": Str(200), "line": Either(Int(), Null()), "function": Str(200),
                "code": Str(300)})
ERROR = Record({"type": Str(100), "message": Str(4000), "where": List(FRAME, 16)})
SHAPE = List(Int(0, 2**62), 16)
VALUE = Described({
    "tensor": Record({"tensor": Tensor(frozen=True), "device": Str(40), "dtype": Str(40)},
                     required=("tensor",)),
    "tensor-on-meta": Record({"device": Str(40), "dtype": Str(40), "shape": SHAPE}),
    "other": Record({"type": Str(100), "repr": Str(400)}),
    "missing": Record({"repr": Str(400)}),
})
GUARD = Map(Either(Bool(), Int(), Str(600), List(Str(600), 32)), 16, key_limit=40)
RESULT = Record({
    "ok": Bool(),
    "calls": List(Record({"output": VALUE, "captured": Map(VALUE, 16)}, required=("output",)), 64),
    "grads": Record({"args": Map(VALUE, 16, key_limit=8), "params": Map(VALUE, 256)}),
    # a lazy parameter (nn.LazyLinear) has no shape yet: None
    "state_keys": Either(Null(), List(Row(Str(200), Either(Null(), SHAPE)), 256)),
    "device_violations": List(Str(600), 32),
    "guard": Either(Null(), GUARD),
    "stage": Either(Null(), Str(40)),
    "error": Either(Null(), ERROR),
    "seconds": Num(),
}, required=("ok",))


class Plain:
    """An argument a stand-in hands over (runtime/answers.py _plain): {"tensor", "grad"},
    {"value": a number, a string or None}, {"dtype"}, {"other": a type's name}, or
    {"list": [...]} of these."""

    def check(self, value, walk, path, depth):
        _container(value, (dict,), walk, path, depth, "dict")
        if "tensor" in value:
            return {"tensor": TENSOR.check(value["tensor"], walk, f"{path}.tensor", depth + 1),
                    "grad": BOOL.check(value.get("grad", False), walk, path, depth + 1)}
        if "list" in value:
            return {"list": List(self, 64).check(value["list"], walk, f"{path}.list", depth + 1)}
        if "dtype" in value:
            return {"dtype": Str(20).check(value["dtype"], walk, path, depth + 1)}
        if "value" in value:
            return {"value": SCALAR.check(value["value"], walk, f"{path}.value", depth + 1)}
        if "other" in value:  # what cannot cross: its type's name, refused on the other side
            return {"other": Str(100).check(value["other"], walk, path, depth + 1)}
        raise ReplyRefused(f"{_at(path)} describes no argument")


class _StrictTensor(Tensor):
    """A tensor an ask hands over: unusable is refused outright (no value description
    to carry the reason)."""

    def check(self, value, walk, path, depth):
        try:
            return super().check(value, walk, path, depth)
        except _TensorRefused as refused:
            raise ReplyRefused(f"{_at(path)}: {refused}") from None


class RngState:
    """A CPU generator's state (torch.random.get_rng_state): bytes, of a bounded length."""

    def check(self, value, walk, path, depth):
        walk.spend(path)
        if type(value) is protocol.Sent:
            if value.kind != "Tensor" or value.odd is not None or value.dtype != "uint8" \
                    or len(value.shape) != 1 or value.shape[0] > 16384:
                raise ReplyRefused(f"{_at(path)} is not a generator's state")
            try:
                return validate_tensor(value, 16384)
            except _TensorRefused:
                raise ReplyRefused(f"{_at(path)} is not a generator's state") from None
        if type(value) is not torch.Tensor or value.dtype != torch.uint8 or value.dim() != 1 \
                or value.numel() > 16384 or value.layout is not torch.strided \
                or value.device.type != "cpu" or value.is_nested:
            raise ReplyRefused(f"{_at(path)} is not a generator's state")
        return value.detach().clone(memory_format=torch.contiguous_format)


class Float:
    """A float as it was, infinite or NaN too (a fill value of -inf is an argument like any)."""

    def check(self, value, walk, path, depth):
        if type(value) is not float:
            raise ReplyRefused(f"{_at(path)} should be a float, not a {_name(value)}")
        walk.spend(path)
        return value


TENSOR = _StrictTensor()
BOOL = Bool()
SCALAR = Either(Null(), Bool(), Int(), Float(), Str(200))
# an ask of a stand-in while an answered probe runs (runtime/answers.py, harness/answering.py)
ASK = Record({
    "ask": Str(20), "module": Str(80), "name": Str(80),
    "args": Plain(), "kwargs": Map(Plain(), 16, key_limit=80),
    "instance": Int(0, 2**31), "training": Bool(),
    "params": Map(TENSOR, 256), "buffers": Map(TENSOR, 64),
    "call": Int(0, 2**31), "grad": TENSOR, "rng": RngState(),
}, required=("ask",))
SCHEMAS = {
    "ask": ASK,
    "hello": Record({"ok": Bool(), "ready": Bool(), "pid": Int(), "uid": Int(), "torch": Str(80),
                     "cuda": Bool()}, required=("ok", "ready")),
    "load": Record({"ok": Bool(), "api": Map(Str(40), 32, key_limit=80),
                    "cell_errors": List(Row(Int(), Str(200), Str(2000)), 50),
                    "seconds": Num(), "error": ERROR}, required=("ok",)),
    # "held": what a probe asked ahead printed, held back (runtime/worker.py): [stdout,
    # bytes printed, stderr, bytes printed], the first MAX_HELD_BYTES of each
    "probe": Record({"ok": Bool(), "result": RESULT, "error": ERROR,
                     "held": Row(Bytes(MAX_HELD_BYTES), Int(0), Bytes(MAX_HELD_BYTES), Int(0))},
                    required=("ok",)),
    "other": Record({"ok": Bool(), "error": ERROR}, required=("ok",)),
}


def kind_of(message):
    """The schema of the reply to request `message`."""
    op = message.get("op") if isinstance(message, dict) else None
    return op if op in ("load", "probe") else "other"


def check(reply, kind, reference_numel=None, deadline=None):
    """`reply` (as protocol.decode gave it) checked against the schema of `kind`, cleaned;
    `reference_numel`: the largest tensor the reference returned for the same probe."""
    walk = _Walk(numel_bound(reference_numel), deadline)
    return SCHEMAS[kind].check(reply, walk, "", 0)


def read(payload, kind, reference_numel=None, deadline=None, asks=False):
    """Decode one frame's payload (its header bounded first) and check it; with
    `asks` (an answered probe is running), a frame that is an ask is checked as one."""
    reply = protocol.decode(payload, archive=ARCHIVE)
    if deadline is not None and time.monotonic() > deadline:
        raise ReplyTooSlow("reading the reply took longer than the call's time limit")
    if asks and isinstance(reply, dict) and "ask" in reply:
        kind = "ask"
    return check(reply, kind, reference_numel, deadline)
