"""Hostile replies pushed through the trusted side's real reading path.

Each example is a frame a worker could send: built with protocol.encode, or by hand (forged
headers, tensor tables and storages of runtime/protocol.py's codec, and the torch.save
archives and pickles of the codec before it). It goes into an os.pipe and is read by the real
Worker.request / Worker._receive / Worker.wait_ready, then by Submission.run (ProbeResult)
and the hidden suite's compare_results against a real reference result. Whatever the
frame holds, the outcome must be a valid result or a StudentFailure / WorkerFailure with a
bounded message that encodes as UTF-8 (never another exception, which would be a grader
error), within a bounded time and memory.
"""
import io
import os
import pickle
import resource
import struct
import threading
import time
import tracemalloc
import types
import warnings

import pytest
import torch
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from conftest import KIT, SOLUTION, stage_folder
from grader.harness import Reference, StudentFailure, Submission
from grader.sandbox import isolation, replies
from grader.sandbox.client import Worker, WorkerFailure
from grader.sandbox.limits import Limits
from grader.sandbox.runtime import protocol

from grader import assignment
from grader.suite import checks
from grader.suite.session import Session

SUITE = Session(assignment.load("attention"))  # the library's run state, as the plugin keeps it
cases_table = SUITE.assignment.cases()  # the table module: CASES, Case and its reasons
from grader.harness.devices import device_failure  # noqa: E402

SECONDS = 2.0            # one example, end to end, in CPU time (a loaded machine
                         # stretches wall time, not the work done)
MESSAGE_CHARS = 20_000   # what a student may be shown for one call
PY_PEAK_BYTES = 64 * 2**20
RSS_GROWTH_KB = 768 * 1024
# derandomized: every run tries the same examples and so gives the same verdict; no example
# database, so nothing is written
FUZZ = settings(max_examples=300, deadline=None, database=None, derandomize=True,
                suppress_health_check=list(HealthCheck))


# -- the real path, fed from a pipe ------------------------------------------------------
class PipeWorker(Worker):
    """A Worker whose process is a pipe: requests go to /dev/null, replies come from a
    frame the test wrote. Everything from Worker.request on is the real code."""

    _over_memory = False
    _disk_over = None  # no process: nothing written to watch

    def __init__(self, limits, frame):
        self.limits, self.failure, self.info = limits, None, {}
        # no process: nothing to watch; a namespace level's reply is read without measuring
        # the disk (level none's own check), as the level "pipe" this fake had before
        self.isolation = isolation.Isolation("bwrap")
        self.proc = types.SimpleNamespace(stdin=open(os.devnull, "wb"), pid=-1)
        self.reply_fd, write_fd = os.pipe()
        self.writer = threading.Thread(target=self._write, args=(write_fd, frame), daemon=True)
        self.writer.start()

    @staticmethod
    def _write(fd, frame):
        try:
            view = memoryview(frame)
            while view:
                view = view[os.write(fd, view):]
        except OSError:
            pass
        finally:
            os.close(fd)

    def _failed(self, reason, kind):
        self.failure = WorkerFailure(reason, kind)
        self.close()
        return self.failure

    def _death_reason(self, when=None):
        return f"the submission's process closed its channel{when or ''}"

    def close(self):
        if self.reply_fd >= 0:
            os.close(self.reply_fd)
            self.reply_fd = -1
        self.writer.join(5)
        self.proc.stdin.close()


LIMITS = Limits(call_seconds=5, import_seconds=5, startup_seconds=5)
STAGE = stage_folder("attnkit-fuzz-")
REFERENCE = Reference(SOLUTION)


def _case(target, check="match", grads=False):
    return next(c for c in SUITE.table.cases(check) if c.target == target
                and (not grads or c.grad_args or c.grad_params))


CASES = [_case("masked_softmax"), _case("MultiHeadAttention", grads=True),
         _case("DotProductAttention", "dropout")]


def _expected(case):
    """(state, probe, what the reference says, a correct reply): for the dropout check the
    reference runs in eval mode, as checks.check_dropout does, and the reply in train mode."""
    state = checks._state(case, REFERENCE)
    probe = case.probe(state)
    if case.check == "dropout":
        expected = REFERENCE.run(case.probe(state, mode="eval", calls=1), case.call_text())
    else:
        expected = REFERENCE.run(probe, case.call_text())
    return state, probe, expected, REFERENCE.run(probe, case.call_text()).raw


EXPECTED = {c.id: _expected(c) for c in CASES}


def frame_of(obj):
    return protocol.encode(obj)


def raw_frame(payload):
    return protocol.HEADER.pack(len(payload)) + payload


def _bounded(text):
    assert isinstance(text, str)
    assert len(text) <= MESSAGE_CHARS, len(text)
    text.encode("utf-8")  # no lone surrogate
    return text


LAST = {}


def deliver(frame, kind="probe", case=None):
    """Push `frame` through the trusted side; return 'ok', 'student' or 'worker'."""
    case = case or CASES[0]
    state, probe, expected, _ = EXPECTED[case.id]
    worker = PipeWorker(LIMITS, frame)
    submission = Submission("attention.py", None, LIMITS, STAGE)
    submission.worker = worker
    started = time.process_time()
    outcome = "ok"
    try:
        if kind == "hello":
            worker.wait_ready()
        elif kind == "load":
            worker.info = {"ok": True}
            submission._ensure_loaded()
            _bounded(repr(submission.summary()))
        else:
            worker.info = {"ok": True}
            submission.loaded = True
            got = submission.run(probe, case.call_text(), expected)
            if case.check == "dropout":
                checks._check_weights_dropout(case, got, expected.tensor(case.captures()[0]))
            else:
                checks.compare_results(case, got, expected, state)
            _bounded(repr(device_failure(case.target, got)))
    except WorkerFailure as failure:
        outcome = "worker"
        LAST["message"] = _bounded(failure.reason)
    except StudentFailure as failure:  # an AssertionError, as pytest's plugin reads it
        outcome = "student"
        LAST["message"] = _bounded(str(failure))
    finally:
        worker.close()
    if worker.failure is not None:  # Submission.run turned it into a StudentFailure
        outcome = "worker"
    elapsed = time.process_time() - started
    assert elapsed < SECONDS, f"{elapsed:.2f} s of CPU time"
    summary = submission.summary()
    for key in ("load_error", "stdout", "stderr"):
        if summary[key] is not None:
            _bounded(summary[key])
    return outcome


_RSS_START = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def _rss_ok():
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - _RSS_START
    assert grown < RSS_GROWTH_KB, f"peak RSS grew by {grown // 1024} MB"


def deliver_bounded(frame, kind="probe", case=None):
    """deliver() with the Python heap's peak measured."""
    tracemalloc.start()
    try:
        outcome = deliver(frame, kind, case)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < PY_PEAK_BYTES, f"peak {peak // 2**20} MB of Python objects"
    _rss_ok()
    return outcome


# -- valid replies, as the real worker writes them ----------------------------------------
def _reference_raw(case):
    return EXPECTED[case.id][3]


def valid_reply(case):
    raw = _reference_raw(case)
    calls = [{"output": dict(c["output"]), "captured": dict(c["captured"])} for c in raw["calls"]]
    return {"ok": True, "result": dict(raw, calls=calls)}


deliver(frame_of(valid_reply(CASES[1])), case=CASES[1])  # warm up: torch's lazy imports are not the reply's cost


def test_the_reference_result_itself_is_accepted_and_passes():
    for case in CASES:
        assert deliver(frame_of(valid_reply(case)), case=case) == "ok", case.id


def test_a_real_error_reply_and_load_and_hello_replies_are_accepted():
    try:
        raise ValueError("bad \udcff value\x1b[2J")
    except ValueError as exc:
        from grader.sandbox.runtime.probes import describe_exception
        error = describe_exception(exc)
    assert deliver(frame_of({"ok": False, "error": error})) == "student"
    ok_load = {"ok": True, "api": {"sequence_mask": "function"}, "cell_errors": [[3, "NameError", "x"]],
               "seconds": 0.1}
    assert deliver(frame_of(ok_load), "load") == "ok"
    assert deliver(frame_of({"ok": False, "error": error, "seconds": 0.1}), "load") == "student"
    hello = {"ok": True, "ready": True, "pid": 5, "uid": 0, "torch": "2", "cuda": False}
    assert deliver(frame_of(hello), "hello") == "ok"


# -- arbitrary structures ------------------------------------------------------------------
SURROGATES = st.sampled_from(["\udcff", "\ud800", "\x00", "\x1b[31m", "\u202e", "\n" * 50, "é"])
TEXT = st.one_of(st.text(max_size=30), st.lists(SURROGATES, max_size=5).map("".join))
SMALL_TENSORS = st.sampled_from([
    torch.zeros(2, 3), torch.ones(4, dtype=torch.bool), torch.arange(6).reshape(2, 3),
    torch.zeros(()), torch.empty(0, 5), torch.ones(3, dtype=torch.float16)])
LEAVES = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), TEXT, st.binary(max_size=20),
                   SMALL_TENSORS, st.just(torch.float32), st.just(torch.device("cpu")))
ANY = st.recursive(LEAVES, lambda inner: st.one_of(
    st.lists(inner, max_size=6), st.tuples(inner, inner),
    st.dictionaries(st.one_of(TEXT, st.integers()), inner, max_size=6)), max_leaves=40)
KEYS = ["ok", "result", "error", "calls", "output", "captured", "grads", "args", "params", "kind",
        "tensor", "device", "dtype", "type", "repr", "where", "message", "stage", "guard",
        "state_keys", "device_violations", "seconds", "shape", "api", "cell_errors"]


@st.composite
def schema_like(draw, depth=0):
    """Dicts using the schema's own keys, so the walk gets deep into the schema."""
    if depth > 4 or draw(st.booleans()):
        return draw(st.one_of(ANY, st.sampled_from(["tensor", "other", "missing", "tensor-on-meta"])))
    keys = draw(st.lists(st.sampled_from(KEYS), max_size=6, unique=True))
    return {k: draw(schema_like(depth + 1)) for k in keys}


@FUZZ
@given(reply=st.one_of(ANY, schema_like()), kind=st.sampled_from(["probe", "load", "hello"]))
def test_arbitrary_replies(reply, kind):
    deliver(frame_of(reply), kind)


def _paths(obj, path=()):
    yield path
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _paths(v, path + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _paths(v, path + (i,))


def _replace(obj, path, value):
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(obj, dict):
        return {**obj, head: _replace(obj[head], rest, value)}
    copy = list(obj)
    copy[head] = _replace(obj[head], rest, value)
    return copy


@FUZZ
@given(data=st.data(), which=st.integers(0, len(CASES) - 1), value=st.one_of(ANY, schema_like()))
def test_valid_replies_with_one_part_replaced(data, which, value):
    case = CASES[which]
    reply = valid_reply(case)
    paths = list(_paths(reply))
    path = data.draw(st.sampled_from(paths))
    deliver(frame_of(_replace(reply, path, value)), case=case)


# -- odd tensors ---------------------------------------------------------------------------
def _odd_tensors():
    """Every kind of tensor torch.save can write (and a few it reads back oddly), and the
    kinds this torch could not build or save, with why (reported, see below)."""
    like = torch.randn(2, 3, 4)
    made = {
        "sparse_coo": lambda: like.to_sparse(),
        "sparse_csr": lambda: like[0].to_sparse_csr(),
        "sparse_csc": lambda: like[0].to_sparse_csc(),
        "sparse_bsr": lambda: torch.randn(4, 4).to_sparse_bsr((2, 2)),
        "quantized": lambda: torch.quantize_per_tensor(like, 0.1, 0, torch.quint8),
        "quantized_channel": lambda: torch.quantize_per_channel(
            like[0], torch.ones(3), torch.zeros(3, dtype=torch.long), 0, torch.qint8),
        "meta": lambda: torch.empty(2, 3, 4, device="meta"),
        "meta_huge": lambda: torch.empty(2**40, device="meta"),
        "nested": lambda: torch.nested.nested_tensor([torch.ones(2), torch.ones(3)]),
        "complex": lambda: like.to(torch.complex64),
        "float8": lambda: like.to(torch.float8_e4m3fn),
        "uint16": lambda: like.to(torch.uint16),
        "bool": lambda: like > 0,
        "int64": lambda: like.to(torch.int64),
        "requires_grad": lambda: like.clone().requires_grad_(),
        "parameter": lambda: torch.nn.Parameter(like.clone()),
        "stride0_huge": lambda: torch.zeros(1).expand(2**31),
        "stride0_shape": lambda: torch.zeros(1, 1, 1).expand(2, 3, 4),
        "view_of_big_storage": lambda: torch.zeros(1000)[10:34].view(2, 3, 4),
        "transposed": lambda: torch.randn(4, 3, 2).permute(2, 1, 0),
        "scalar": lambda: torch.tensor(3.0),
        "empty": lambda: torch.empty(0, 3, 4),
        "nine_dims": lambda: torch.zeros([1] * 9 + [2, 3, 4]),
        "big": lambda: torch.zeros(300, 300, 10),
        "conj": lambda: like.to(torch.complex64).conj(),
        "neg_bit": lambda: like.to(torch.complex64).conj().imag,
    }
    out, skipped = {}, {}
    for name, make in made.items():
        try:
            with warnings.catch_warnings():  # beta / deprecated kinds say so
                warnings.simplefilter("ignore")
                tensor = make()
            protocol.encode({"t": tensor})
        except Exception as exc:  # this torch cannot build or save that kind
            skipped[name] = f"{type(exc).__name__}: {str(exc)[:200]}"
            continue
        out[name] = tensor
    return out, skipped


ODD, ODD_SKIPPED = _odd_tensors()
# the kinds docs/explanation/isolation.md's "what crosses" table names for replies: a torch that cannot
# build one of these leaves that claim untested, which fails, never silently passes
CLAIMED = {"meta": ["meta", "meta_huge"],
           "sparse": ["sparse_coo", "sparse_csr", "sparse_csc", "sparse_bsr"],
           "quantized": ["quantized", "quantized_channel"], "nested": ["nested"],
           "complex": ["complex", "conj"], "stride-0": ["stride0_huge", "stride0_shape"]}
# why each refused kind cannot be compared, as the student reads it
REFUSED = {
    "sparse_coo": "it is a sparse_coo tensor; return an ordinary dense tensor (.to_dense())",
    "sparse_csr": "it is a sparse_csr tensor;", "sparse_csc": "it is a sparse_csc tensor;",
    "sparse_bsr": "it is a sparse_bsr tensor;",
    "quantized": "it is a quantized tensor;", "quantized_channel": "it is a quantized tensor;",
    "meta": "it is a tensor on the 'meta' device, which holds no values",
    "meta_huge": "it is a tensor on the 'meta' device",
    "nested": "it is a nested tensor;", "complex": "it is a complex64 tensor;",
    "conj": "it is a complex64 tensor;", "float8": "it is a float8_e4m3fn tensor;",
    "uint16": "it is a uint16 tensor;",
    "parameter": "the process sent a Parameter where a plain torch.Tensor belongs",
    "nine_dims": "it has 12 dimensions, more than the 8 any result here has",
    "stride0_huge": "it has 2147483648 entries (shape (2147483648,)), far more than the "
                    "expected result (at most {bound} accepted)",
    "big": "it has 900000 entries (shape (300, 300, 10)), far more than the expected result "
           "(at most {bound} accepted)",
}


def test_every_kind_the_readme_claims_is_built_by_this_torch():
    missing = {claim: [(n, ODD_SKIPPED[n]) for n in names if n not in ODD]
               for claim, names in CLAIMED.items()}
    assert not any(missing.values()), f"not fuzzed with this torch: {missing}"
    assert all(n in ODD or n in ODD_SKIPPED for n in REFUSED)


@pytest.mark.parametrize("name", sorted(set(ODD) | set(ODD_SKIPPED)))
@pytest.mark.parametrize("where", ["output", "captured", "grad"])
def test_odd_tensors_are_a_student_failure_with_their_reason(name, where):
    if name not in ODD:  # said in the test report (pytest -rs), not dropped
        claimed = [c for c, names in CLAIMED.items() if name in names]
        message = f"this torch cannot build or save a {name} tensor: {ODD_SKIPPED[name]}"
        if claimed:
            pytest.fail(f"docs/explanation/isolation.md claims {claimed[0]} tensors are handled; {message}")
        pytest.skip(message)
    case = CASES[1]  # MultiHeadAttention, with captured weights and gradients
    reply = valid_reply(case)
    result = reply["result"]
    desc = {"kind": "tensor", "tensor": ODD[name], "device": "cpu", "dtype": "float32"}
    if where == "output":
        result["calls"][0]["output"] = desc
    elif where == "captured":
        result["calls"][0]["captured"] = {k: desc for k in result["calls"][0]["captured"]}
    else:
        result["grads"] = {"args": {k: desc for k in result["grads"]["args"]},
                           "params": result["grads"]["params"]}
    LAST.clear()
    assert deliver_bounded(frame_of(reply), case=case) == "student"
    message = LAST["message"]
    if name in REFUSED:
        # docs/explanation/isolation.md: "no larger than 4 x the reference's result" (+ 64 for tiny results)
        bound = 4 * max(t.numel() for t in _tensors(_reference_raw(case))) + 64
        assert "cannot be compared: " + REFUSED[name].format(bound=bound) in message
    else:  # a plain tensor of the wrong shape: compared, and told so
        assert f"got {tuple(ODD[name].shape)}." in message


class Sneaky(torch.Tensor):
    def __eq__(self, other):
        return True


def test_a_tensor_subclass_is_refused():
    reply = valid_reply(CASES[0])
    reply["result"]["calls"][0]["output"]["tensor"] = torch.zeros(2, 3).as_subclass(Sneaky)
    assert deliver(frame_of(reply)) == "worker"  # torch.load(weights_only=True) refuses it
    assert "Sneaky" in LAST["message"]


def test_an_odd_tensor_costs_the_call_only_with_its_reason():
    reply = valid_reply(CASES[0])
    reply["result"]["calls"][0]["output"]["tensor"] = torch.zeros(2, 3, dtype=torch.complex64)
    worker = PipeWorker(LIMITS, frame_of(reply))
    try:
        got = worker._receive(5, None, "probe", 10)
    finally:
        worker.close()
    output = got["result"]["calls"][0]["output"]
    assert output["kind"] == "refused" and "complex64" in output["reason"]
    assert deliver(frame_of(reply)) == "student"
    assert "complex64" in LAST["message"] and "cannot be compared" in LAST["message"]


@FUZZ
@given(shape=st.lists(st.integers(0, 2**20), min_size=0, max_size=10),
       dtype=st.sampled_from([torch.float32, torch.float64, torch.int32, torch.bool, torch.bfloat16]))
def test_stride0_tensors_of_any_shape(shape, dtype):
    try:
        tensor = torch.zeros((1,) * len(shape), dtype=dtype).expand(shape)
        protocol.encode(tensor)
    except RuntimeError:  # more entries than an int64 counts
        assume(False)
    reply = valid_reply(CASES[0])
    reply["result"]["calls"][0]["output"]["tensor"] = tensor
    deliver_bounded(frame_of(reply))


# -- amplification -------------------------------------------------------------------------
NEWLINES = "\n" * 200_000


def _amplified():
    frame = {"file": NEWLINES, "line": 1, "function": NEWLINES, "code": NEWLINES}
    value = {"kind": "other", "type": NEWLINES, "repr": NEWLINES}
    tensor = {"kind": "tensor", "tensor": torch.zeros(2, 3), "device": NEWLINES, "dtype": "float32"}
    error = {"type": "E", "message": NEWLINES, "where": [frame] * 16}
    base = valid_reply(CASES[0])
    result = base["result"]
    return {
        "frames_200k": {"ok": False, "error": {"type": "E", "message": "m", "where": [frame] * 200_000}},
        "frames_16": {"ok": False, "error": error},
        "message_newlines": {"ok": False, "error": {"type": "E", "message": NEWLINES}},
        "calls_shared": {"ok": True, "result": dict(result, calls=[{"output": value, "captured": {
            f"k{i}": value for i in range(16)}}] * 64)},
        "tensors_shared": {"ok": True, "result": dict(result, calls=[{"output": tensor, "captured": {
            f"k{i}": tensor for i in range(16)}}] * 64)},
        "violations": {"ok": True, "result": dict(result, device_violations=[NEWLINES] * 32)},
        "guard": {"ok": True, "result": dict(result, guard={f"g{i}": [NEWLINES] * 32 for i in range(16)})},
        "state_keys": {"ok": True, "result": dict(result, state_keys=[[NEWLINES, [1] * 16]] * 256)},
        "stage_error": {"ok": True, "result": dict(result, ok=False, stage="call", error=error)},
        "load_cells": {"ok": True, "api": {}, "cell_errors": [[1, NEWLINES, NEWLINES]] * 50},
        "long_list": {"ok": True, "result": dict(result, calls=[result["calls"][0]] * 100_000)},
        "many_keys": {"ok": True, "result": dict(result, **{f"x{i}": i for i in range(50_000)})},
    }


AMPLIFIED = _amplified()


@pytest.mark.parametrize("name", sorted(AMPLIFIED))
def test_amplified_replies_are_bounded(name):
    reply = AMPLIFIED[name]
    kind = "load" if name.startswith("load") else "probe"
    deliver_bounded(frame_of(reply), kind)


@pytest.mark.parametrize("depth", [50, 5_000, 120_000])
def test_deep_nesting_by_hand(depth):
    """Lists nested `depth` deep in a header written by hand (the worker's own encoder
    recurses, and could not write them); the largest is past the header's bound. Timed
    without tracemalloc, which slows every allocation."""
    nested = '["l",' * depth + "1" + "]" * depth
    assert deliver(raw_frame(forge('{"o":%s,"t":[],"s":[]}' % nested))) == "worker"
    reply = '{"o":["d","ok",true,"result",%s],"t":[],"s":[]}' % nested
    assert deliver(raw_frame(forge(reply))) == "worker"
    _rss_ok()


# -- forged frames (runtime/protocol.py's codec, written by hand) -----------------------------
def forge(header, storages=(), declared=None):
    """A payload with `header` (JSON text) and `storages` (bytes, each aligned as the codec
    aligns them); `declared`: another header length than the real one."""
    data = header.encode("utf-8", "surrogatepass") if isinstance(header, str) else header
    parts = [protocol.MAGIC, struct.pack(">I", len(data) if declared is None else declared), data]
    at = sum(len(p) for p in parts)
    for chunk in storages:
        parts.append(b"\0" * (-at % protocol.ALIGN))
        at += -at % protocol.ALIGN + len(chunk)
        parts.append(chunk)
    return b"".join(parts)


def _payload(reply):
    return frame_of(reply)[protocol.HEADER.size:]


def _tensor_frame(entry, storage=b"\0" * 16):
    return forge('{"o":["d","ok",true,"t",["T",0]],"t":[%s],"s":[%d]}' % (entry, len(storage)),
                 [storage])


def _forged_frames():
    reply = valid_reply(CASES[0])
    payload = _payload(reply)
    buffer = io.BytesIO()
    torch.save(reply, buffer)
    frames = {
        "torch_save_archive": raw_frame(buffer.getvalue()),
        "pickle": raw_frame(pickle.dumps(reply, protocol=2)),
        "global": raw_frame(forge('{"o":["g","os.system"],"t":[],"s":[]}')),
        "class_tensor": raw_frame(_tensor_frame('{"class":"evil.Sneaky"}')),
        "unknown_tag": raw_frame(forge('{"o":["z",1],"t":[],"s":[]}')),
        "empty_array": raw_frame(forge('{"o":[],"t":[],"s":[]}')),
        "forward_reference": raw_frame(forge('{"o":["l",["r",5]],"t":[],"s":[]}')),
        "reference_to_an_open_tuple": raw_frame(forge('{"o":["t",["r",0]],"t":[],"s":[]}')),
        "unhashable_key": raw_frame(forge('{"o":["d",["l"],1],"t":[],"s":[]}')),
        "dict_without_value": raw_frame(forge('{"o":["d","ok"],"t":[],"s":[]}')),
        "tensor_out_of_table": raw_frame(forge('{"o":["T",3],"t":[],"s":[]}')),
        "malformed_tensor": raw_frame(_tensor_frame('["x"]')),
        "unknown_dtype": raw_frame(_tensor_frame('[0,"float128",[2],[1],0,""]')),
        "negative_size": raw_frame(_tensor_frame('[0,"float32",[-1],[1],0,""]')),
        "float_size": raw_frame(_tensor_frame('[0,"float32",[2.5],[1],0,""]')),
        "storage_out_of_table": raw_frame(_tensor_frame('[7,"float32",[2],[1],0,""]')),
        "bad_bytes": raw_frame(forge('{"o":["b","%%%"],"t":[],"s":[]}')),
        "bad_device": raw_frame(forge('{"o":["v","no-such-device:99"],"t":[],"s":[]}')),
        "huge_integer": raw_frame(forge('{"o":%s,"t":[],"s":[]}' % ("9" * 5000))),
        "bad_utf8": raw_frame(forge(b'{"o":"\xed\xb3","t":[],"s":[]}')),
        "not_json": raw_frame(forge("{o: nope")),
        "no_object": raw_frame(forge('{"t":[],"s":[]}')),
        "header_past_its_bound": raw_frame(forge('{"o":"%s","t":[],"s":[]}' % ("x" * 300_000))),
        "header_longer_than_the_frame": raw_frame(forge('{"o":1,"t":[],"s":[]}', declared=2**32 - 1)),
        "storage_longer_than_the_frame": raw_frame(forge('{"o":1,"t":[],"s":[1000]}', [b"x" * 10])[:-10]),
        "negative_storage": raw_frame(forge('{"o":1,"t":[],"s":[-4]}')),
        "many_entries": raw_frame(forge('{"o":1,"t":[],"s":[%s]}' % ",".join(["0"] * 1100))),
        "big_storage": raw_frame(forge('{"o":1,"t":[],"s":[%d]}' % (17 * 2**20))),
        "big_frame": raw_frame(b"\0" * (21 * 2**20)),
        "truncated": raw_frame(payload[: len(payload) // 2]),
        "not_a_frame": raw_frame(b"hello" * 100),
        "empty": raw_frame(b""),
        "header_only": protocol.HEADER.pack(100),
        "huge_header": protocol.HEADER.pack(2**40) + b"x" * 100,
    }
    return frames


FORGED = _forged_frames()


@pytest.mark.parametrize("name", sorted(FORGED))
def test_forged_frames_are_refused(name):
    assert deliver_bounded(FORGED[name]) == "worker"


@FUZZ
@given(data=st.data())
def test_flipped_bytes_in_a_valid_frame(data):
    payload = bytearray(_payload(valid_reply(CASES[1])))
    for _ in range(data.draw(st.integers(1, 8))):
        at = data.draw(st.integers(0, len(payload) - 1))
        payload[at] = data.draw(st.integers(0, 255))
    deliver(raw_frame(bytes(payload)), case=CASES[1])


@FUZZ
@given(junk=st.binary(max_size=2000))
def test_random_bytes(junk):
    deliver(raw_frame(junk))


def test_pickle_memo_amplification_in_a_small_frame():
    """A few KB of pickle that expands to millions of values: refused fast, small memory."""
    frame = {"file": "f" * 1000, "line": 1, "function": "g", "code": "c"}
    inner = [frame] * 1000
    reply = {"ok": False, "error": {"type": "E", "message": "m", "where": [inner] * 1000}}
    encoded = frame_of(reply)
    assert len(encoded) < 64 * 1024
    assert deliver_bounded(encoded) == "worker"
    value = {"kind": "other", "type": "x", "repr": "\n" * 100_000}
    reply = {"ok": True, "result": {"ok": True, "calls": [{"output": value, "captured": {
        str(i): value for i in range(16)}}] * 64}}
    assert len(frame_of(reply)) < 256 * 1024
    assert deliver_bounded(frame_of(reply)) == "worker"


# -- drift: the schema must accept whatever the real worker writes ----------------------------
LAZY = os.path.join(KIT, "tests_hidden", "attention", "alternatives", "lazy_linear_d2l_1_0.py")


@pytest.mark.parametrize("source", [SOLUTION, LAZY], ids=["solution", "lazy_linear"])
def test_every_real_reply_of_the_hidden_cases_is_accepted(source):
    """Each case of the hidden suite, with and without the device guard, run by the same
    run_probe the worker uses: its reply passes the schema unchanged in substance."""
    from grader.sandbox.runtime.probes import run_probe
    if not os.path.exists(source):
        pytest.skip(f"{source} is not in this kit")
    module = Reference(source).module
    for case in SUITE.table.cases("match", "eval", "dropout"):
        state = checks._state(case, REFERENCE)
        for guard in (False, True):
            raw = run_probe(module, case.probe(state, guard=guard))
            reply = replies.read(_payload({"ok": True, "result": raw}), "probe",
                                 reference_numel=max(t.numel() for t in _tensors(raw)))
            result = reply["result"]
            assert result["ok"] is True, (case.id, result.get("error"))
            assert set(result) == set(raw), (case.id, set(raw) - set(result))
            assert len(result["calls"]) == len(raw["calls"])
            for call in result["calls"]:
                assert call["output"]["kind"] == "tensor", case.id
                assert all(v["kind"] == "tensor" for v in call["captured"].values()), case.id


def _tensors(raw):
    for call in raw["calls"]:
        for desc in [call["output"], *call["captured"].values()]:
            if "tensor" in desc:
                yield desc["tensor"]
    for group in raw["grads"].values():
        for desc in group.values():
            if "tensor" in desc:
                yield desc["tensor"]
