"""sandbox/replies.py: each bound of a worker's reply as a figure, checked at its edge, and
the reason of each refusal (issue 19: a fuzz test that accepted any failure let a tensor
bound 100x looser pass). The whole reading path is fuzzed in test_fuzz_replies.py."""
import time

import pytest
import torch

from grader.sandbox import replies
from grader.sandbox.runtime import protocol
from grader.sandbox.replies import ReplyRefused, ReplyTooSlow

MB = 2**20


def refused(reply, kind="probe", **kw):
    with pytest.raises(ReplyRefused) as caught:
        replies.check(reply, kind, **kw)
    return str(caught.value)


def probe(result):
    return {"ok": True, "result": dict({"ok": True}, **result)}


def tensor_reply(*tensors):
    calls = [{"output": {"kind": "tensor", "tensor": t}} for t in tensors]
    return probe({"calls": calls})


def why(value, bound=replies.GLOBAL_MAX_NUMEL):
    with pytest.raises(replies._TensorRefused) as caught:
        replies.validate_tensor(value, bound)
    return str(caught.value)


def test_the_bounds_are_the_documented_figures():
    """docs/explanation/isolation.md: a 256 KB pickle, 16 MB of storage; tensors no larger than 4 x the
    reference's result."""
    assert replies.ARCHIVE == {"max_entries": 1024, "max_pickle_bytes": 256 * 1024,
                               "max_storage_bytes": 16 * MB}
    assert replies.MAX_FRAME_BYTES == 20 * MB
    assert (replies.MAX_DEPTH, replies.MAX_DIMS) == (12, 8)
    assert (replies.BUDGET_NODES, replies.BUDGET_CHARS) == (50_000, 2_000_000)
    assert (replies.BUDGET_ELEMENTS, replies.GLOBAL_MAX_NUMEL) == (4 * MB, MB)


def test_the_tensor_bound_is_four_times_the_reference_plus_64():
    assert replies.numel_bound(48) == 256
    assert replies.numel_bound(0) == 64
    assert replies.numel_bound(None) == 1_048_576
    assert replies.numel_bound(10**9) == 1_048_576
    assert replies.validate_tensor(torch.zeros(256), 256).shape == (256,)
    assert why(torch.zeros(257), 256) == ("it has 257 entries (shape (257,)), far more than the "
                                          "expected result (at most 256 accepted)")
    reply = tensor_reply(torch.zeros(257))
    out = replies.check(reply, "probe", reference_numel=48)["result"]["calls"][0]["output"]
    assert out == {"kind": "refused", "reason": why(torch.zeros(257), 256)}
    out = replies.check(reply, "probe", reference_numel=49)["result"]["calls"][0]["output"]
    assert out["kind"] == "tensor" and out["tensor"].shape == (257,)


def test_an_empty_tensor_with_a_huge_shape_is_refused():
    assert replies.validate_tensor(torch.zeros(0, 256), 256).shape == (0, 256)
    assert why(torch.zeros(0, 257), 256) == ("its shape (0, 257) is far larger than the expected "
                                             "result's, though it holds no entries")


def test_at_most_8_dimensions():
    assert replies.validate_tensor(torch.zeros([1] * 8)).dim() == 8
    assert why(torch.zeros([1] * 9)) == "it has 9 dimensions, more than the 8 any result here has"


def _reaching(size, stride=1, offset=0, dtype=torch.float32):
    """A view of a 4-entry storage."""
    return torch.zeros(4, dtype=dtype).as_strided((size,), (stride,), offset)


def test_a_tensor_that_fills_its_memory_exactly_crosses():
    """(This torch will not build a view reaching past its storage: as_strided refuses one,
    set_ grows the storage; the check stays for a torch that would: mutants_equivalent.md.)"""
    assert replies.validate_tensor(_reaching(4)).tolist() == [0.0] * 4
    assert replies.validate_tensor(_reaching(3, offset=1)).shape == (3,)
    assert replies.validate_tensor(_reaching(2, stride=2, offset=1)).shape == (2,)
    assert replies.validate_tensor(_reaching(2, stride=3)).shape == (2,)
    assert replies.validate_tensor(_reaching(4, dtype=torch.float64)).shape == (4,)


@pytest.mark.parametrize("dtype", list(replies.REAL_DTYPES))
def test_every_real_dtype_crosses(dtype):
    assert replies.validate_tensor(torch.ones(2, dtype=dtype)).dtype == dtype


def test_what_crosses_is_a_detached_contiguous_copy():
    source = torch.arange(6.0, requires_grad=True).reshape(2, 3).t()
    out = replies.validate_tensor(source)
    assert out.is_contiguous() and not out.requires_grad
    assert out.untyped_storage().data_ptr() != source.untyped_storage().data_ptr()
    assert out.tolist() == [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]
    negated = torch.tensor([1 + 2j, 3 - 1j]).conj().imag  # a view with torch's neg bit
    assert negated.is_neg()
    out = replies.validate_tensor(negated)
    assert not out.is_neg() and out.tolist() == [-2.0, 1.0]


def test_odd_tensors_are_refused_with_their_reason():
    assert why(torch.zeros(2, dtype=torch.complex64)).startswith("it is a complex64 tensor;")
    assert why(torch.zeros(2, device="meta")).startswith("it is a tensor on the 'meta' device")
    assert why(torch.eye(2).to_sparse()).startswith("it is a sparse_coo tensor;")
    assert why(torch.quantize_per_tensor(torch.ones(2), 0.1, 0, torch.quint8)).startswith(
        "it is a quantized tensor;")
    assert why(torch.nested.nested_tensor([torch.ones(2), torch.ones(3)])).startswith(
        "it is a nested tensor;")
    assert why(torch.nn.Parameter(torch.ones(2))).startswith("the process sent a Parameter")
    assert why([1.0]).startswith("the process sent a list")


def test_all_tensors_together_hold_at_most_4_mi_entries():
    block = torch.zeros(MB, dtype=torch.bool)
    out = replies.check(tensor_reply(*[block] * 4), "probe")
    assert len(out["result"]["calls"]) == 4
    assert refused(tensor_reply(*[block] * 4, torch.zeros(1, dtype=torch.bool))) == \
        "the reply holds more than 4194304 tensor entries in all (at result.calls[4].output.tensor)"


def test_the_budget_of_values_and_characters():
    walk = replies._Walk(64, None)
    walk.spend("p", nodes=50_000, chars=2_000_000)
    with pytest.raises(ReplyRefused) as caught:
        walk.spend("p")
    assert str(caught.value) == (
        "the reply is far larger than any real result once its shared parts are counted each "
        "time they are used (more than 50000 values or 2000000 characters, at p)")
    with pytest.raises(ReplyRefused):
        replies._Walk(64, None).spend("p", chars=2_000_001)
    # a string's whole length counts, before it is capped
    replies.check({"ok": False, "error": {"type": "x" * 2_000_000}}, "other")
    assert "more than 50000 values or 2000000 characters, at error.type" in refused(
        {"ok": False, "error": {"type": "x" * 2_000_001}}, "other")
    # at exactly 2000000 characters the budget is not spent: a field with alternatives
    # (stage: None or a string) still tries its next one, and an empty string fits
    full = {"ok": True, "result": {"ok": True, "device_violations": ["x" * 2_000_000], "stage": ""}}
    assert replies.check(full, "probe")["result"]["stage"] == ""
    full["result"]["stage"] = "a"
    assert "more than 50000 values or 2000000 characters, at result.stage" in refused(full)


def test_shared_parts_count_each_time_they_are_used():
    value = {"kind": "other", "type": "t", "repr": "r" * 400}
    call = {"output": value, "captured": {str(i): value for i in range(16)}}
    ok = probe({"calls": [call] * 4})  # 4 x 17 x 401 characters
    assert len(replies.check(ok, "probe")["result"]["calls"]) == 4
    shared = {"ok": False, "error": {"type": "E", "message": "m" * 100_000,
                                     "where": [{"file": "f" * 200_000}] * 16}}
    assert "more than 50000 values or 2000000 characters" in refused(shared, "other")


def test_nesting_deeper_than_12_is_refused():
    walk = replies._Walk(64, None)
    replies._container([], (list,), walk, "p", 11, "list")
    with pytest.raises(ReplyRefused) as caught:
        replies._container([], (list,), walk, "p", 12, "list")
    assert str(caught.value) == "p is nested more than 12 levels deep"


def test_strings_are_cleaned_and_capped_per_field():
    out = replies.check({"ok": False, "error": {"type": "E\x9b\x1b", "message": "m\udcff" * 3000,
                                                "where": [{"file": "f" * 500, "line": None}]}},
                        "other")
    error = out["error"]
    assert error["type"] == "E"
    assert len(error["message"]) == 4000 and error["message"].startswith("m\ufffdm")
    assert error["message"].endswith("[... cut by the grader: 2000 more characters]")
    assert len(error["where"][0]["file"]) == 200 and error["where"][0]["line"] is None


def test_each_refusal_says_where_and_what():
    assert refused({"ok": 1}) == "ok should be True or False, not a int"
    assert refused({}) == "the reply lacks its field 'ok'"
    assert refused([]) == "the reply should be a dict, not a list"
    assert refused(probe({"ok": "yes"})) == "result.ok should be True or False, not a str"
    assert refused(probe({"seconds": float("inf")})) == "result.seconds is not a finite number"
    assert refused(probe({"seconds": 10**301})) == "result.seconds is not a finite number"
    assert replies.check(probe({"seconds": 3})["result"] | {}, "probe")  # noqa: a dict passes as a probe
    assert refused(probe({"seconds": "1"})) == "result.seconds should be a number, not a str"
    assert refused(probe({"calls": [{"output": {"kind": "alien"}}]})) == \
        "result.calls[0].output describes a value of an unknown kind"
    assert refused(probe({"calls": [{"captured": {}}]})) == "result.calls[0] lacks its field 'output'"
    assert refused(probe({"calls": [{"output": {"kind": "missing"}}] * 65})) == \
        "result.calls has 65 entries, more than the 64 allowed"
    assert refused(probe({"state_keys": [["w", [1], 3]]})) == \
        "result.state_keys[0] should have 2 entries, not 3"
    assert refused(probe({"state_keys": [["w", [-1]]]})) == "result.state_keys[0][1][0] is out of range"
    assert refused(probe({"guard": {1: True}})) == "result.guard has a key that is a int, not a string"
    assert refused(probe({"guard": {str(i): True for i in range(17)}})) == \
        "result.guard has 17 entries, more than the 16 allowed"
    assert refused(probe({f"x{i}": 1 for i in range(32)})) == \
        "result has 33 fields, more than the 32 allowed"
    assert refused(probe({"stage": 3})) == "result.stage should be a string, not a int"
    assert refused({"ok": True, "ready": True, "pid": 2**63}, "hello") == "pid is out of range"


def test_what_passes_comes_out_clean():
    out = replies.check(probe({"seconds": 2, "stage": None, "unknown": "dropped",
                               "state_keys": [["w", None], ["b", [0, 2**62]]],
                               "guard": {"g": ["a", "b"], "n": 3, "s": "x", "b": False},
                               "calls": [{"output": {"kind": "tensor-on-meta", "shape": [2]}}]}),
                        "probe")
    result = out["result"]
    assert result == {"ok": True, "calls": [{"output": {"kind": "tensor-on-meta", "shape": [2]}}],
                      "state_keys": [["w", None], ["b", [0, 2**62]]],
                      "guard": {"g": ["a", "b"], "n": 3, "s": "x", "b": False},
                      "stage": None, "seconds": 2.0}
    assert type(result["seconds"]) is float
    hello = replies.check({"ok": True, "ready": True, "pid": -2**63, "uid": 0}, "hello")
    assert hello == {"ok": True, "ready": True, "pid": -2**63, "uid": 0}


def test_the_schema_follows_the_request():
    assert replies.kind_of({"op": "load"}) == "load"
    assert replies.kind_of({"op": "probe"}) == "probe"
    assert replies.kind_of({"op": "probes"}) == "other"
    assert replies.kind_of(["op"]) == "other"


def test_checking_past_the_deadline_is_too_slow():
    reply = probe({"state_keys": [["w", [1] * 16]] * 40})  # more than 512 values
    past = time.monotonic() - 1
    with pytest.raises(ReplyTooSlow) as caught:
        replies.check(reply, "probe", deadline=past)
    assert str(caught.value) == "checking the reply took longer than the call's time limit"
    replies.check({"ok": True}, "probe", deadline=past)  # looked at every 512 values only
    replies.check(reply, "probe", deadline=time.monotonic() + 60)
    payload = protocol.encode({"ok": True})[protocol.HEADER.size:]
    with pytest.raises(ReplyTooSlow) as caught:
        replies.read(payload, "probe", deadline=past)
    assert str(caught.value) == "reading the reply took longer than the call's time limit"
    assert replies.read(payload, "probe", deadline=time.monotonic() + 60) == {"ok": True}


def test_the_archive_limits_are_applied_before_torch_reads_it():
    payload = protocol.encode({"ok": True, "t": [torch.zeros(1) for _ in range(1100)]})
    with pytest.raises(protocol.ProtocolError) as caught:
        replies.read(payload[protocol.HEADER.size:], "other")
    assert "more than the 1024 allowed" in str(caught.value)
    # 16 MB + 280 KB: over the storage bound with its slack (the pickle's 256 KB and 4 KB)
    big = protocol.encode({"ok": True, "t": torch.zeros(4 * MB + 70_000)})
    with pytest.raises(protocol.ProtocolError) as caught:
        replies.read(big[protocol.HEADER.size:], "other")
    assert "more than the 16777216 allowed" in str(caught.value)
    fits = protocol.encode({"ok": True, "t": torch.zeros(4 * MB)})
    assert replies.read(fits[protocol.HEADER.size:], "other") == {"ok": True}


LONG = "s" * 5000


def test_every_string_of_a_reply_is_cut_at_its_own_figure():
    """A student's long string keeps exactly its field's figure of characters (the cut
    marker included): literals, one per field of the schema."""
    error = {"type": LONG, "message": LONG * 2,
             "where": [{"file": LONG, "line": 3, "function": LONG, "code": LONG}]}
    out = replies.check({"ok": False, "error": error}, "other")["error"]
    assert [len(out["type"]), len(out["message"])] == [100, 4000]
    frame = out["where"][0]
    assert [len(frame["file"]), len(frame["function"]), len(frame["code"])] == [200, 200, 300]
    values = [{"kind": "other", "type": LONG, "repr": LONG}, {"kind": "missing", "repr": LONG},
              {"kind": "tensor-on-meta", "device": LONG, "dtype": LONG, "shape": [2**62]},
              {"kind": "tensor", "tensor": torch.zeros(1), "device": LONG, "dtype": LONG}]
    result = replies.check(probe({
        "calls": [{"output": v, "captured": {"k" * 300: v}} for v in values],
        "guard": {"g" * 100: LONG, "list": [LONG] * 32},
        "device_violations": [LONG] * 32, "stage": LONG,
        "state_keys": [[LONG, [1]]] * 256,
        "grads": {"args": {"123456789": values[1]}, "params": {"p" * 300: values[1]}}}),
        "probe")["result"]
    other, missing, meta, tensor = (c["output"] for c in result["calls"])
    assert [len(other["type"]), len(other["repr"]), len(missing["repr"])] == [100, 400, 400]
    assert [len(meta["device"]), len(meta["dtype"]), meta["shape"]] == [40, 40, [2**62]]
    assert [len(tensor["device"]), len(tensor["dtype"])] == [40, 40]
    assert [len(k) for c in result["calls"] for k in c["captured"]] == [200] * 4
    assert sorted(len(k) for k in result["guard"]) == [4, 40]
    assert len(result["guard"][next(k for k in result["guard"] if k != "list")]) == 600
    assert [len(s) for s in result["guard"]["list"]] == [600] * 32
    assert [len(s) for s in result["device_violations"]] == [600] * 32
    assert len(result["stage"]) == 40
    assert len(result["state_keys"]) == 256 and len(result["state_keys"][0][0]) == 200
    assert list(result["grads"]["args"]) == ["\n[... cu"]  # 8 characters, the marker's start
    assert [len(k) for k in result["grads"]["params"]] == [200]
    load = replies.check({"ok": True, "api": {"f" * 100: LONG},
                          "cell_errors": [[1, LONG, LONG]] * 50}, "load")
    assert [(len(k), len(v)) for k, v in load["api"].items()] == [(80, 40)]
    assert [len(load["cell_errors"][0][1]), len(load["cell_errors"][0][2])] == [200, 2000]
    hello = replies.check({"ok": True, "ready": True, "torch": LONG}, "hello")
    assert len(hello["torch"]) == 80


def test_every_list_and_map_of_a_reply_has_its_own_figure():
    value = {"kind": "missing"}
    assert "has 33 entries, more than the 32 allowed" in refused(probe({"device_violations": ["v"] * 33}))
    assert refused(probe({"guard": {"l": ["v"] * 33}})) == \
        "result.guard['l'] has 33 entries, more than the 32 allowed"
    assert "has 257 entries, more than the 256 allowed" in refused(probe({"state_keys": [["w", None]] * 257}))
    assert "has 17 entries, more than the 16 allowed" in refused(probe({"state_keys": [["w", [1] * 17]]}))
    assert "has 17 entries, more than the 16 allowed" in refused(
        probe({"calls": [{"output": value, "captured": {str(i): value for i in range(17)}}]}))
    assert "has 17 entries, more than the 16 allowed" in refused(
        probe({"grads": {"args": {str(i): value for i in range(17)}}}))
    assert "has 257 entries, more than the 256 allowed" in refused(
        probe({"grads": {"params": {str(i): value for i in range(257)}}}))
    assert "has 17 entries, more than the 16 allowed" in refused(
        {"ok": False, "error": {"where": [{"file": "f"}] * 17}}, "other")
    assert "has 51 entries, more than the 50 allowed" in refused(
        {"ok": True, "cell_errors": [[1, "E", "m"]] * 51}, "load")
    assert "has 33 entries, more than the 32 allowed" in refused(
        {"ok": True, "api": {str(i): "function" for i in range(33)}}, "load")
    assert len(replies.check(probe({"device_violations": ["v"] * 32}), "probe")["result"]
               ["device_violations"]) == 32


def test_integers_and_shapes_have_their_ranges():
    hello = {"ok": True, "ready": True}
    assert refused(dict(hello, pid=-2**63 - 1), "hello") == "pid is out of range"
    assert refused(dict(hello, uid=2**63), "hello") == "uid is out of range"
    # the edges themselves pass: a signed 64-bit integer's whole range
    edges = dict(hello, pid=2**63 - 1, uid=-2**63)
    assert replies.check(edges, "hello") == edges
    meta = {"kind": "tensor-on-meta", "shape": [2**62 + 1]}
    assert refused(probe({"calls": [{"output": meta}]})) == \
        "result.calls[0].output.shape[0] is out of range"
    assert refused(probe({"calls": [{"output": dict(meta, shape=[-1])}]})) == \
        "result.calls[0].output.shape[0] is out of range"


def _nodes(reply, kind="probe"):
    walk = replies._Walk(64, None)
    replies.SCHEMAS[kind].check(reply, walk, "", 0)
    return walk.nodes


def test_the_deadline_is_looked_at_every_512_values():
    def reply(rows):
        return probe({"state_keys": [["w", [1] * 16]] * rows})
    rows = next(r for r in range(1, 100) if _nodes(reply(r)) >= 512)
    short, enough = reply(rows - 1), reply(rows)
    assert _nodes(short) < 512 <= _nodes(enough)
    below = probe({"state_keys": [["w", [1] * 16]] * (rows - 1) + [["w", [1] * (511 - _nodes(short) - 3)]]})
    assert _nodes(below) == 511
    past = time.monotonic() - 1
    replies.check(below, "probe", deadline=past)
    exactly = probe({"state_keys": [["w", [1] * 16]] * (rows - 1) + [["w", [1] * (512 - _nodes(short) - 3)]]})
    assert _nodes(exactly) == 512
    with pytest.raises(ReplyTooSlow):
        replies.check(exactly, "probe", deadline=past)


def test_a_slice_at_the_end_of_a_larger_tensor_crosses():
    """A view's last entry is its storage offset plus its strides' reach (a worker may send
    X[4:] of an 8-entry tensor: torch.save keeps the whole storage and the offset)."""
    assert replies.validate_tensor(torch.arange(8.0)[4:]).tolist() == [4.0, 5.0, 6.0, 7.0]
    import io
    buffer = io.BytesIO()
    torch.save({"t": torch.arange(8.0)[4:]}, buffer)
    sent = torch.load(io.BytesIO(buffer.getvalue()), weights_only=True)["t"]
    assert sent.storage_offset() == 4 and sent.untyped_storage().nbytes() == 32
    assert replies.validate_tensor(sent).tolist() == [4.0, 5.0, 6.0, 7.0]


def test_each_map_inside_a_map_counts_one_level():
    """Nesting is counted through maps as through lists: a map at level 11 is read, one at
    level 12 is refused there (today's schemas nest 6 deep at most; the count is for any
    schema built from these parts)."""
    def nested(levels):
        value = {}
        for _ in range(levels):
            value = {"k": value}
        return value

    def schema(levels):
        inner = replies.Map(replies.Int(), 4)
        for _ in range(levels):
            inner = replies.Map(inner, 4)
        return inner

    walk = replies._Walk(64, None)
    assert schema(11).check(nested(11), walk, "m", 0) is not None
    with pytest.raises(ReplyRefused) as caught:
        schema(12).check(nested(12), replies._Walk(64, None), "m", 0)
    assert str(caught.value) == ("m['k']['k']['k']['k']['k']['k']['k']['k']['k']['k']['k']['k'] "
                                 "is nested more than 12 levels deep")
