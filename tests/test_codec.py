"""The frame codec itself (grader/sandbox/runtime/protocol.py), fuzzed.

Replies pushed through the whole reading path are fuzzed in test_fuzz_replies.py; this file
holds the codec's own properties: what is encoded comes back the same (values, types,
sharing, tensors with their dtype, shape, strides and storage); any bytes whatever, and any
valid frame with bytes changed, decode to a value or raise ProtocolError, never anything
else; with the trusted side's bounds, nothing is built before the bounds are checked (a
frame claiming gigabytes allocates nothing), tensors come back as descriptions (Sent) that
only replies.validate_tensor makes into tensors; and no value names code to run.
"""
import math
import os
import struct
import threading
import time
import tracemalloc

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grader.sandbox import replies
from grader.sandbox.runtime import protocol

FUZZ = settings(max_examples=300, deadline=None, database=None, derandomize=True,
                suppress_health_check=list(HealthCheck))
DTYPES = [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
          torch.float16, torch.bfloat16, torch.float32, torch.float64]


def roundtrip(value, archive=None):
    return protocol.decode(protocol.encode(value)[protocol.HEADER.size:], archive)


@st.composite
def tensors(draw):
    """Plain CPU tensors of every real dtype, contiguous or not, views at an offset, empty,
    0-d, requiring grad or a Parameter."""
    dtype = draw(st.sampled_from(DTYPES))
    shape = draw(st.lists(st.integers(0, 4), max_size=4))
    base = (torch.arange(max(1, math.prod(shape)) + 3, dtype=torch.float64) * 1.5 - 2)
    base = (base > 0) if dtype is torch.bool else base.to(dtype)
    tensor = base[draw(st.integers(0, 3)):][:math.prod(shape)].reshape(shape)
    if len(shape) >= 2 and draw(st.booleans()):
        tensor = tensor.transpose(0, 1)
    if dtype.is_floating_point and draw(st.booleans()):
        tensor = torch.nn.Parameter(tensor.clone()) if draw(st.booleans()) \
            else tensor.clone().requires_grad_()
    return tensor


KEYS = st.one_of(st.text(max_size=20), st.integers(), st.none(), st.booleans())
LEAVES = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70),
                   st.floats(allow_nan=False), st.text(max_size=40), st.binary(max_size=20),
                   st.sampled_from(DTYPES), st.just(torch.device("cpu")), tensors())
VALUES = st.recursive(LEAVES, lambda inner: st.one_of(
    st.lists(inner, max_size=5), st.tuples(inner, inner),
    st.dictionaries(KEYS, inner, max_size=5)), max_leaves=30)


def same(a, b):
    assert type(a) is type(b), (type(a), type(b))
    if isinstance(a, torch.Tensor):
        assert (a.dtype, a.shape, a.requires_grad) == (b.dtype, b.shape, b.requires_grad)
        if a.numel():  # an empty tensor is built empty: where it was in its storage is moot
            assert (a.stride(), a.storage_offset(), a.untyped_storage().nbytes()) == \
                (b.stride(), b.storage_offset(), b.untyped_storage().nbytes())
        assert torch.equal(a.detach(), b.detach())
    elif isinstance(a, dict):
        assert list(a) == list(b)
        for key in a:
            same(a[key], b[key])
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            same(x, y)
    else:
        assert a == b


@FUZZ
@given(value=VALUES)
def test_what_is_encoded_comes_back_the_same(value):
    same(value, roundtrip(value))


def test_nan_infinities_and_big_integers_cross_exactly():
    back = roundtrip([float("nan"), float("inf"), -float("inf"), -0.0, 2**100, -2**63])
    assert math.isnan(back[0]) and back[1:3] == [math.inf, -math.inf]
    assert math.copysign(1, back[3]) == -1 and back[4:] == [2**100, -2**63]


def test_shared_values_stay_shared_and_cost_their_size_once():
    inner = {"file": "f" * 1000, "line": 1}
    value = {"a": [inner] * 1000, "b": inner, "s": "x" * 100, "t": "".join(["x"] * 100)}
    value["u"] = value["s"]
    frame = protocol.encode(value)
    assert len(frame) < 16 * 1024
    back = protocol.decode(frame[protocol.HEADER.size:])
    assert back["a"][0] is back["a"][999] is back["b"]
    assert back["u"] is back["s"] and back["t"] is not back["s"]


def test_a_tensor_sent_twice_and_two_views_of_one_storage_stay_one():
    base = torch.arange(8.0)
    value = {"x": base, "again": base, "view": base[4:]}
    frame = protocol.encode(value)
    assert len(frame) < 8 * 4 + 512  # the storage's 32 bytes once
    back = protocol.decode(frame[protocol.HEADER.size:])
    assert back["again"] is back["x"]
    assert back["view"].storage_offset() == 4 and back["view"].tolist() == [4, 5, 6, 7]
    assert back["view"].untyped_storage().data_ptr() == back["x"].untyped_storage().data_ptr()


def test_the_trusted_side_gets_descriptions_and_builds_them_only_once_checked():
    value = {"t": torch.arange(6.0).reshape(2, 3), "p": torch.nn.Parameter(torch.ones(2))}
    back = roundtrip(value, replies.ARCHIVE)
    assert type(back["t"]) is protocol.Sent and (back["t"].dtype, back["t"].shape) == \
        ("float32", (2, 3))
    built = replies.validate_tensor(back["t"])
    assert type(built) is torch.Tensor and built.tolist() == [[0, 1, 2], [3, 4, 5]]
    with pytest.raises(replies._TensorRefused) as caught:
        replies.validate_tensor(back["p"])
    assert str(caught.value).startswith("the process sent a Parameter where a plain torch.Tensor")


class Custom:
    pass


class Subclass(torch.Tensor):
    pass


@pytest.mark.parametrize("value, name", [
    (Custom(), "test_codec.Custom"), (torch.zeros(2).as_subclass(Subclass), "test_codec.Subclass"),
    (print, "builtins.builtin_function_or_method"), (type("S", (str,), {})("x"), ".S")])
def test_no_other_type_crosses_and_the_refusal_names_it(value, name):
    for archive in (None, replies.ARCHIVE):
        with pytest.raises(protocol.ProtocolError) as caught:
            roundtrip({"ok": True, "x": [value]}, archive)
        assert name in str(caught.value) and "only plain tensors" in str(caught.value)


def _header_frame(header, storages=()):
    data = header.encode()
    parts = [protocol.MAGIC, struct.pack(">I", len(data)), data]
    at = sum(map(len, parts))
    for chunk in storages:
        parts += [b"\0" * (-at % protocol.ALIGN), chunk]
        at += -at % protocol.ALIGN + len(chunk)
    return b"".join(parts)


@pytest.mark.parametrize("shape, strides", [([2**40], [1]), ([2**20, 2**20], [0, 0]),
                                            ([0, 2**60], [1, 1]), ([4], [1])])
def test_a_claim_of_a_huge_tensor_allocates_nothing(shape, strides):
    """A frame of a few bytes that claims a tensor of terabytes, of zero strides, empty but
    vast, or reaching past its storage: refused by validate_tensor from the description."""
    frame = _header_frame('{"o":["T",0],"t":[[0,"float32",%s,%s,0,""]],"s":[8]}'
                          % (shape, strides), [b"\0" * 8])
    tracemalloc.start()
    try:
        sent = protocol.decode(frame, replies.ARCHIVE)
        with pytest.raises(replies._TensorRefused):
            replies.validate_tensor(sent, replies.GLOBAL_MAX_NUMEL)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20
    try:  # the worker, reading a request: refused, or a view of the frame's 8 bytes
        built = protocol.decode(frame)
    except protocol.ProtocolError:
        return
    assert built.untyped_storage().nbytes() in (0, 8)  # empty, or the stride-0 view


def test_the_bounds_are_checked_on_the_header_before_anything_is_read():
    bounds = dict(replies.ARCHIVE)
    many = _header_frame('{"o":1,"t":[],"s":[%s]}' % ",".join(["0"] * 1100))
    with pytest.raises(protocol.ProtocolError, match="1100 entries, more than the 1024"):
        protocol.decode(many, bounds)
    big = _header_frame('{"o":1,"t":[],"s":[%d]}' % (2**40))
    with pytest.raises(protocol.ProtocolError, match="more than the 16777216 allowed"):
        protocol.decode(big, bounds)
    long = _header_frame('{"o":"%s","t":[],"s":[]}' % ("x" * 300_000))
    with pytest.raises(protocol.ProtocolError, match="more than the 262144 allowed"):
        protocol.decode(long, bounds)
    assert protocol.decode(long) == "x" * 300_000  # the worker reads what the grader sent


def _kinds(value):
    """Every value's type in a decoded structure."""
    yield type(value)
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _kinds(key)
            yield from _kinds(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _kinds(item)


ALLOWED = {type(None), bool, int, float, str, bytes, list, tuple, dict, torch.dtype,
           torch.device, protocol.Sent}


def _decode_any(frame):
    """decode under the trusted side's bounds: a value of the allowed kinds, or ProtocolError."""
    try:
        value = protocol.decode(frame, replies.ARCHIVE)
    except protocol.ProtocolError:
        return
    except RecursionError:  # a cyclic structure is refused by the schema's depth, not here
        return
    assert set(_kinds_bounded(value)) <= ALLOWED


def _kinds_bounded(value, depth=0, seen=None):
    seen = set() if seen is None else seen
    if id(value) in seen or depth > 30:
        return
    seen.add(id(value))
    yield type(value)
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _kinds_bounded(key, depth + 1, seen)
            yield from _kinds_bounded(item, depth + 1, seen)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _kinds_bounded(item, depth + 1, seen)


@FUZZ
@given(junk=st.binary(max_size=3000))
def test_any_bytes_decode_to_allowed_values_or_a_protocol_error(junk):
    _decode_any(junk)
    _decode_any(protocol.MAGIC + struct.pack(">I", len(junk)) + junk)


@FUZZ
@given(value=VALUES, data=st.data())
def test_a_valid_frame_with_bytes_changed_stays_inside_the_codec(value, data):
    frame = bytearray(protocol.encode(value)[protocol.HEADER.size:])
    for _ in range(data.draw(st.integers(1, 6))):
        at = data.draw(st.integers(0, len(frame) - 1))
        frame[at] = data.draw(st.integers(0, 255))
    _decode_any(bytes(frame))
    try:
        protocol.decode(bytes(frame))  # the worker's reading: built at once, or refused
    except protocol.ProtocolError:
        pass


JSON_NODES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.text(max_size=4),
              st.sampled_from(["l", "t", "d", "r", "T", "b", "y", "v", "g", "float32"])),
    lambda inner: st.lists(inner, max_size=5), max_leaves=25)


@FUZZ
@given(root=JSON_NODES, table=st.lists(JSON_NODES, max_size=3),
       sizes=st.lists(st.integers(0, 64), max_size=3))
def test_any_header_of_the_codec_s_own_words_stays_inside_it(root, table, sizes):
    """Headers made of the codec's own tags, in any arrangement: a value or ProtocolError."""
    import json
    header = json.dumps({"o": root, "t": table, "s": sizes})
    frame = _header_frame(header, [b"\1" * n for n in sizes])
    _decode_any(frame)
    try:
        protocol.decode(frame)
    except protocol.ProtocolError:
        pass


# -- writing with a deadline (the trusted side's) ----------------------------------------------
def test_a_frame_no_one_reads_is_given_up_at_its_deadline_not_waited_on_for_ever():
    """A worker that stops reading its requests (busy, or its code took the channel) must
    not hold the trusted side: a frame larger than the pipe times out at its deadline."""
    read_end, write_end = os.pipe()
    try:
        frame = {"op": "probe", "blob": b"\0" * (4 << 20)}  # far more than a pipe holds
        started = time.monotonic()
        with pytest.raises(protocol.FrameTimeout, match="timed out"):
            protocol.write_frame(write_end, frame, deadline=started + 0.5)
        assert 0.45 <= time.monotonic() - started < 5
        # what a reader then finds is the start of the frame: the header says its full size
        head = os.read(read_end, protocol.HEADER.size)
        assert protocol.HEADER.unpack(head)[0] == len(protocol.encode_payload(frame))
    finally:
        os.close(read_end)
        os.close(write_end)


def test_a_frame_read_as_it_is_written_arrives_whole_within_its_deadline():
    read_end, write_end = os.pipe()
    frame = {"op": "probe", "x": torch.arange(300_000, dtype=torch.int64)}
    got = []
    reader = threading.Thread(target=lambda: got.append(protocol.read_frame(read_end)))
    reader.start()
    try:
        protocol.write_frame(write_end, frame, deadline=time.monotonic() + 60)
        reader.join(60)
    finally:
        os.close(write_end)
        os.close(read_end)
    assert got and got[0]["op"] == "probe"
    assert torch.equal(torch.as_tensor(got[0]["x"]), frame["x"])
