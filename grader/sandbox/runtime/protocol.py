"""Frames that cross between the trusted process and the worker, and their codec.

A frame is an 8-byte big-endian length followed by its payload:

    b"AKF1" | header length (4 bytes, big-endian) | header (JSON) | tensor bytes

The header is JSON: null, booleans, numbers and strings stand for themselves; every other
value is an array whose first entry says what it is:

    ["l", item, ...]  a list         ["t", item, ...]  a tuple      ["d", k, v, ...]  a dict
    ["r", n]          the n-th list, tuple, dict or long string again (shared, as sent)
    ["T", n]          the n-th tensor of the header's table
    ["b", base64]     bytes          ["y", name]  a torch.dtype      ["v", name]  a torch.device
    ["g", name]       an object of any other type: refused when read

and {"o": the object, "t": [tensor, ...], "s": [bytes of each storage, ...]} holds it. A
tensor is [storage, dtype, shape, strides, offset, flags] (flags "g": requires grad, "P": a
Parameter); one that is not plain (sparse, quantized, nested, on another device, of a dtype
without real values) crosses as what it is, {"odd": {...}}, never as data. Each storage's
bytes follow the header, in order, each starting at a multiple of ALIGN.

Nothing is pickled and nothing read names code to run: a frame holds only containers,
numbers, strings, bytes, dtypes, devices and tensors. The trusted side reads replies with
`decode(payload, archive=bounds)`: the bounds (entries, header bytes, storage bytes) are
checked on the header before anything is built, and tensors come back as `Sent` (what the
worker claims: dtype, shape, strides, offset and a view of the bytes), made into a tensor
only once the reply's schema has checked the claim (grader/sandbox/replies.py). The worker
reads requests, which come from the trusted side, with `decode(payload)`: tensors built at
once, over the frame's own buffer.
"""
import base64
import ctypes
import json
import os
import select
import struct
import time

import torch

HEADER = struct.Struct(">Q")
MAX_FRAME_BYTES = 256 * 1024 * 1024
MAGIC = b"AKF1"
_LENGTH = struct.Struct(">I")
ALIGN = 64
LONG = 16          # strings at least this long are shared when sent twice (as containers are)
MAX_NESTING = 100  # deeper than any reply the schema reads (12): unreadable
DTYPES = {str(d).replace("torch.", ""): d for d in vars(torch).values()
          if isinstance(d, torch.dtype)}
REAL = {"bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
        "float64"}
ITEM_BYTES = {name: DTYPES[name].itemsize for name in REAL}


class ProtocolError(Exception):
    """The other side sent something that is not a well-formed frame, or went away."""


class FrameTimeout(ProtocolError):
    """No complete frame arrived before the deadline."""


# -- encoding -------------------------------------------------------------------------------
class _Encoder:
    def __init__(self):
        self.shared = {}      # id of a container or long string -> its index
        self.kept = []        # what `shared` names, kept alive while encoding
        self.tensors, self.tensor_ids, self.kept_tensors = [], {}, []
        self.storages, self.storage_ids = [], {}

    def node(self, value):
        kind = type(value)
        if kind is str:
            if len(value) < LONG:
                return value
            return self._share(value) or value
        if value is None or kind is bool or kind is int or kind is float:
            return value
        if kind is list or kind is tuple or kind is dict:
            again = self._share(value)
            if again:
                return again
            if kind is dict:
                out = ["d"]
                for key, item in value.items():
                    out.append(self.node(key))
                    out.append(self.node(item))
                return out
            return ["l" if kind is list else "t", *[self.node(item) for item in value]]
        if isinstance(value, torch.Tensor):
            return ["T", self.tensor(value)]
        if kind is bytes:
            return ["b", base64.b64encode(value).decode("ascii")]
        if kind is torch.dtype:
            return ["y", str(value).replace("torch.", "")]
        if kind is torch.device:
            return ["v", str(value)]
        return ["g", f"{getattr(kind, '__module__', '?')}.{getattr(kind, '__qualname__', '?')}"]

    def _share(self, value):
        """["r", n] when `value` was sent before, else None (and it is numbered now)."""
        found = self.shared.get(id(value))
        if found is not None:
            return ["r", found]
        self.shared[id(value)] = len(self.kept)
        self.kept.append(value)
        return None

    def tensor(self, value):
        found = self.tensor_ids.get(id(value))
        if found is not None:
            return found
        self.tensor_ids[id(value)] = len(self.tensors)
        self.kept_tensors.append(value)
        self.tensors.append(self._describe(value))
        return len(self.tensors) - 1

    def _describe(self, value):
        kind = type(value)
        if kind is not torch.Tensor and kind is not torch.nn.Parameter:
            return {"class": f"{kind.__module__}.{kind.__qualname__}"}
        dtype = str(value.dtype).replace("torch.", "")
        if value.is_nested or value.layout is not torch.strided or value.is_quantized \
                or value.device.type != "cpu" or dtype not in REAL:
            return {"odd": {"type": kind.__name__, "nested": bool(value.is_nested),
                            "layout": str(value.layout).replace("torch.", ""),
                            "quantized": bool(value.is_quantized),
                            "device": value.device.type, "dtype": dtype}}
        if value.is_conj() or value.is_neg():
            value = value.resolve_conj().resolve_neg()
        storage = value.untyped_storage()
        key = (storage.data_ptr(), storage.nbytes())
        index = self.storage_ids.get(key)
        if index is None:
            index = self.storage_ids[key] = len(self.storages)
            self.storages.append(ctypes.string_at(key[0], key[1]) if key[1] else b"")
        flags = ("P" if kind is torch.nn.Parameter else "") + ("g" if value.requires_grad else "")
        return [index, dtype, list(value.shape), list(value.stride()), value.storage_offset(),
                flags]


def _pad(size):
    return -size % ALIGN


def encode_payload(obj):
    """The payload of one frame holding `obj` (see the module's docstring)."""
    encoder = _Encoder()
    root = encoder.node(obj)
    header = json.dumps({"o": root, "t": encoder.tensors,
                         "s": [len(s) for s in encoder.storages]},
                        separators=(",", ":")).encode("ascii")
    parts = [MAGIC, _LENGTH.pack(len(header)), header]
    at = len(MAGIC) + _LENGTH.size + len(header)
    for data in encoder.storages:
        parts.append(b"\0" * _pad(at))
        at += _pad(at) + len(data)
        parts.append(data)
    return b"".join(parts)


def encode(obj):
    payload = encode_payload(obj)
    return HEADER.pack(len(payload)) + payload


# -- decoding -------------------------------------------------------------------------------
class Sent:
    """A tensor as the other side describes it, not yet built: `dtype` (a name), `shape`,
    `strides`, `offset` (elements), `data` (a memoryview of its storage's bytes), `kind`
    ("Tensor" or "Parameter") and `requires_grad`; or, for a tensor that is not plain, `odd`
    ({"type", "nested", "layout", "quantized", "device", "dtype"}). Built by build()."""

    __slots__ = ("kind", "dtype", "shape", "strides", "offset", "data", "requires_grad", "odd")

    def __init__(self, kind="Tensor", dtype=None, shape=(), strides=(), offset=0, data=None,
                 requires_grad=False, odd=None):
        self.kind, self.dtype, self.shape, self.strides = kind, dtype, shape, strides
        self.offset, self.data, self.requires_grad, self.odd = offset, data, requires_grad, odd

    def build(self):
        """The tensor: a view of the frame's bytes, as claimed (the caller has checked that
        the claim stays inside them: replies.validate_tensor), as a Parameter when it was one."""
        if self.odd is not None or self.dtype not in REAL:
            raise ProtocolError(f"unreadable frame: a {self.dtype} tensor that is not plain")
        dtype = DTYPES[self.dtype]
        item = ITEM_BYTES[self.dtype]
        if not all(self.shape):
            tensor = torch.empty(self.shape, dtype=dtype)
        else:
            if self.offset < 0 or any(s < 0 for s in self.strides) or (self.offset + sum(
                    (n - 1) * s for n, s in zip(self.shape, self.strides)) + 1) * item > len(self.data):
                raise ProtocolError("unreadable frame: a tensor beyond its storage")
            whole = len(self.data) // item * item
            raw = torch.frombuffer(self.data[:whole], dtype=torch.uint8)
            if dtype is torch.bool:
                raw.clamp_(max=1)  # a bool is stored as 0 or 1: no other byte crosses as one
            tensor = raw.view(dtype).as_strided(self.shape, self.strides, self.offset)
        grad = self.requires_grad and (tensor.is_floating_point() or tensor.is_complex())
        if self.kind == "Parameter":
            return torch.nn.Parameter(tensor, grad)
        return tensor.requires_grad_(True) if grad else tensor


def _int(value, low=-2**62, high=2**62):
    return type(value) is int and low <= value <= high


def _tensor_entry(entry, storages):
    """A Sent from one entry of the header's tensor table; ProtocolError if malformed."""
    if type(entry) is dict and "class" in entry:
        name = entry["class"] if type(entry["class"]) is str else "?"
        raise ProtocolError(f"it holds a {name[:200]} object; only plain tensors, numbers, "
                            f"strings and containers of them may cross")
    if type(entry) is dict and type(entry.get("odd")) is dict:
        facts = entry["odd"]
        clean = {}
        for key in ("type", "layout", "device", "dtype"):
            value = facts.get(key)
            clean[key] = value[:40] if type(value) is str else "?"
        for key in ("nested", "quantized"):
            clean[key] = facts.get(key) is True
        return Sent(kind=clean["type"], dtype=clean["dtype"], odd=clean)
    if type(entry) is not list or len(entry) != 6:
        raise ProtocolError("unreadable frame: a malformed tensor")
    index, dtype, shape, strides, offset, flags = entry
    if not _int(index, 0, len(storages) - 1) or type(dtype) is not str or dtype not in DTYPES \
            or type(shape) is not list or type(strides) is not list \
            or len(shape) != len(strides) or len(shape) > 64 \
            or not all(_int(n, 0) for n in shape) or not all(_int(s) for s in strides) \
            or not _int(offset) or type(flags) is not str:
        raise ProtocolError("unreadable frame: a malformed tensor")
    return Sent("Parameter" if "P" in flags else "Tensor", dtype, tuple(shape), tuple(strides),
                offset, storages[index], "g" in flags)


def decode(payload, archive=None):
    """The object in `payload`. `archive`: the trusted side's bounds on a reply, {"max_entries"
    (tensors and storages), "max_pickle_bytes" (the header), "max_storage_bytes"}, checked before
    anything is built; tensors then come back as Sent, to be checked and built by the reader.
    Without it (the worker reading a request) tensors are built at once."""
    if type(payload) is not bytearray:  # tensors are views of it: writable, as torch wants
        payload = bytearray(payload)
    view = memoryview(payload)
    if len(view) < len(MAGIC) + _LENGTH.size or bytes(view[:len(MAGIC)]) != MAGIC:
        raise ProtocolError("unreadable frame: it is not a frame of this grader")
    (size,) = _LENGTH.unpack_from(view, len(MAGIC))
    start = len(MAGIC) + _LENGTH.size
    if archive is not None and size > archive["max_pickle_bytes"]:
        raise ProtocolError(f"the frame's structure takes {size} bytes, more than the "
                            f"{archive['max_pickle_bytes']} allowed")
    if start + size > len(view):
        raise ProtocolError("the frame declares a structure larger than the frame itself")
    try:
        header = json.loads(bytes(view[start:start + size]))
    except (ValueError, RecursionError, MemoryError) as exc:
        raise ProtocolError(f"unreadable frame: {type(exc).__name__}: {str(exc)[:200]}") from None
    if type(header) is not dict or not {"o", "t", "s"} <= set(header) \
            or type(header["t"]) is not list or type(header["s"]) is not list:
        raise ProtocolError("unreadable frame: no object in it")
    sizes, table = header["s"], header["t"]
    if not all(_int(n, 0) for n in sizes):
        raise ProtocolError("unreadable frame: a malformed storage")
    if archive is not None:
        entries = len(sizes) + len(table)
        if entries > archive["max_entries"]:
            raise ProtocolError(f"the frame holds {entries} entries, more than the "
                                f"{archive['max_entries']} allowed")
        if sum(sizes) > archive["max_storage_bytes"] + archive["max_pickle_bytes"] + 4096:
            raise ProtocolError(f"the frame holds {sum(sizes)} bytes of tensors, more than the "
                                f"{archive['max_storage_bytes']} allowed")
    storages, at = [], start + size
    for length in sizes:
        at += _pad(at)
        if at + length > len(view):
            raise ProtocolError("the frame declares tensors larger than the frame itself")
        storages.append(view[at:at + length])
        at += length
    sent = [_tensor_entry(entry, storages) for entry in table]
    tensors = sent if archive is not None else [s.build() for s in sent]
    return _Reader(tensors).read(header["o"])


class _Reader:
    """The header's object, built; shared values are the same object, as sent."""

    def __init__(self, tensors):
        self.tensors, self.shared = tensors, []

    def read(self, node, depth=0):
        kind = type(node)
        if kind is str:
            if len(node) >= LONG:
                self.shared.append(node)
            return node
        if kind is not list:
            return node  # null, a boolean, a number (JSON has nothing else but dicts)
        if depth > MAX_NESTING:
            raise ProtocolError(f"unreadable frame: nested more than {MAX_NESTING} levels")
        if not node or type(node[0]) is not str:
            raise ProtocolError("unreadable frame: a value of no known kind")
        tag = node[0]
        if tag == "l":
            out = []
            self.shared.append(out)
            for item in node[1:]:
                out.append(self.read(item, depth + 1))
            return out
        if tag == "d":
            out = {}
            self.shared.append(out)
            if len(node) % 2 != 1:
                raise ProtocolError("unreadable frame: a dict without a value for a key")
            for i in range(1, len(node), 2):
                key = self.read(node[i], depth + 1)
                value = self.read(node[i + 1], depth + 1)
                try:
                    out[key] = value
                except TypeError:  # an unhashable key
                    raise ProtocolError("unreadable frame: a dict key that is a "
                                        f"{type(key).__name__}") from None
            return out
        if tag == "t":
            index = len(self.shared)
            self.shared.append(None)  # not complete: a reference to it is refused
            out = tuple(self.read(item, depth + 1) for item in node[1:])
            self.shared[index] = out
            return out
        if len(node) != 2:
            raise ProtocolError("unreadable frame: a value of no known kind")
        value = node[1]
        if tag == "r":
            if not _int(value, 0, len(self.shared) - 1) or self.shared[value] is None:
                raise ProtocolError("unreadable frame: a reference to nothing sent before")
            return self.shared[value]
        if tag == "T":
            if not _int(value, 0, len(self.tensors) - 1):
                raise ProtocolError("unreadable frame: a reference to no tensor")
            return self.tensors[value]
        if tag == "b" and type(value) is str:
            try:
                return base64.b64decode(value, validate=True)
            except ValueError:
                raise ProtocolError("unreadable frame: malformed bytes") from None
        if tag == "y" and type(value) is str and value in DTYPES:
            return DTYPES[value]
        if tag == "v" and type(value) is str:
            try:
                return torch.device(value[:40])
            except (RuntimeError, ValueError):
                raise ProtocolError("unreadable frame: a malformed device") from None
        if tag == "g":
            name = value[:200] if type(value) is str else "?"
            raise ProtocolError(f"it holds a {name} object; only plain tensors, numbers, "
                                f"strings and containers of them may cross")
        raise ProtocolError("unreadable frame: a value of no known kind")


# -- the channel ------------------------------------------------------------------------------
def write_frame(fd, obj, deadline=None):
    """Write one frame. `deadline` (time.monotonic()): the trusted side's, for a peer that
    may stop reading; `fd` is then made non-blocking and FrameTimeout is raised when the
    frame is not all written by then (the worker writes with no deadline)."""
    payload = encode_payload(obj)
    view = memoryview(HEADER.pack(len(payload)) + payload)
    if deadline is not None:
        os.set_blocking(fd, False)
    while view:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([], [fd], [], left)[1]:
                raise FrameTimeout("timed out")
        try:
            written = os.write(fd, view)
        except BlockingIOError:
            continue
        view = view[written:]


def _read_exactly(fd, size, deadline):
    buffer = bytearray(size)
    view, got = memoryview(buffer), 0
    while got < size:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise FrameTimeout("timed out")
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                raise FrameTimeout("timed out")
        count = os.readv(fd, [view[got:got + (1 << 20)]])
        if not count:
            raise ProtocolError("the other side closed the channel")
        got += count
    return buffer


def read_payload(fd, timeout=None, max_bytes=MAX_FRAME_BYTES):
    """The bytes of one frame from `fd` (a bytearray), not decoded; `timeout` (seconds)
    bounds the read."""
    deadline = None if timeout is None else time.monotonic() + timeout
    (size,) = HEADER.unpack(_read_exactly(fd, HEADER.size, deadline))
    if size > max_bytes:
        raise ProtocolError(f"frame of {size} bytes is larger than the limit of {max_bytes}")
    return _read_exactly(fd, size, deadline)


def read_frame(fd, timeout=None, max_bytes=MAX_FRAME_BYTES):
    """Read one frame from `fd`; `timeout` (seconds) bounds the whole read."""
    return decode(read_payload(fd, timeout, max_bytes))
