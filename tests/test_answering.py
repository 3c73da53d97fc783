"""Follow-through marking's exchange, at the crossing (grader/harness/answering.py on the
trusted side, grader/sandbox/runtime/answers.py in the worker): a caller's case run with its
failed callees answered by the solution.

The Answerer is tried alone with asks as a hostile worker could write them (what it
refuses, and that no answer carries a line of the solution), then through real sandboxed
workers: an answered run of a right caller gives exactly the solution's results (outputs,
stored weights, gradients, dropout's draws, the book's in-place write), and a stand-in
kept by the submission answers nothing outside the run that made it.
"""
import os
import re

import pytest
import torch

from grader import assignment
from grader.catalog import Catalog
from grader.catalog.carry import OwnCode, answered_pairs
from grader.harness import Reference, StudentFailure, Submission
from grader.harness.answering import MAX_ASKS, MAX_WEIGHTS, Answerer
from grader.sandbox import isolation
from grader.sandbox.limits import Limits
from grader.suite import checks
from grader.suite.session import Session

ATTENTION = assignment.load("attention")
SOLUTION = ATTENTION.solution
CATALOG = Catalog.of(ATTENTION)
REFERENCE = Reference(SOLUTION, assignment=ATTENTION)
SOURCES, WEIGHTS = REFERENCE.answering_sources()


def answerer(*names, numel=4096):
    return Answerer(SOURCES, [["attention", n] for n in names], WEIGHTS, numel)


def plain(value):
    """An argument as the worker describes it (answers._plain)."""
    if isinstance(value, torch.Tensor):
        return {"tensor": value, "grad": bool(value.requires_grad)}
    if isinstance(value, (list, tuple)):
        return {"list": [plain(v) for v in value]}
    return {"value": value}


def call(name, *args, **kwargs):
    return {"ask": "call", "module": "attention", "name": name, "args": plain(list(args)),
            "kwargs": {k: plain(v) for k, v in kwargs.items()}}


# -- the Answerer alone -------------------------------------------------------------------
def test_a_function_is_answered_with_the_solution_and_its_in_place_write():
    X = torch.randn(2, 4)
    lens = torch.tensor([1, 3])
    answer = answerer("sequence_mask")(call("sequence_mask", X, lens, value=-5.0))
    expected = X.clone()
    expected[0, 1:] = -5.0
    expected[1, 3:] = -5.0
    assert answer["ok"] is True and torch.equal(answer["output"], expected)
    assert answer["into"] == 0  # the book's sequence_mask writes into X and returns it


def test_only_the_names_the_probe_listed_are_answered():
    answers = answerer("sequence_mask")
    refused = answers(call("masked_softmax", torch.randn(1, 2, 3), None))
    assert refused == {"ok": False, "error": {"message": "masked_softmax is not answered in "
                                                         "this case"}}
    assert answers.refused == "masked_softmax is not answered in this case"
    assert answers.asked == []


def test_an_ask_of_another_module_or_kind_is_refused():
    answers = answerer("sequence_mask")
    other = dict(call("sequence_mask", torch.randn(2, 2), torch.tensor([1, 1])), module="os")
    assert answers(other)["error"]["message"] == "sequence_mask is not answered in this case"
    assert answers({"ask": "exec"})["error"]["message"] == "an ask of an unknown kind (exec)"


def test_a_tensor_larger_than_the_case_allows_is_refused_before_anything_runs():
    answers = answerer("sequence_mask", numel=64)
    got = answers(call("sequence_mask", torch.randn(8, 9), torch.tensor([1] * 8)))
    assert got["error"]["message"] == "an argument of 72 entries, more than this case's 64"


def test_a_module_too_large_to_build_is_refused_without_building_it():
    answers = answerer("MultiHeadAttention")
    # 4 weights of 40000 x 40000 would be 6.4e9 entries (25 GB): sized on the meta device
    got = answers({"ask": "init", "module": "attention", "name": "MultiHeadAttention",
                   "args": plain([40000, 40000, 40000, 40000, 2, 0.0]), "kwargs": {}})
    assert got["error"]["message"] == ("MultiHeadAttention built so would hold 6400000000 "
                                       "weights")
    assert MAX_WEIGHTS == 2**20


def test_asks_past_the_bound_are_refused():
    answers = answerer("transpose_qkv")
    ask = call("transpose_qkv", torch.randn(1, 2, 4), 2)
    for _ in range(MAX_ASKS):
        assert answers(ask)["ok"] is True
    assert answers(ask)["error"]["message"] == f"more than {MAX_ASKS} calls to answer in one case"
    assert MAX_ASKS == 512


def test_an_answer_the_solution_cannot_give_says_the_error_and_no_line_of_the_solution():
    with open(SOLUTION, encoding="utf-8") as handle:
        lines = {line.strip() for line in handle if len(line.strip()) > 12}
    answers = answerer("transpose_qkv", "masked_softmax")
    got = [answers(call("transpose_qkv", torch.randn(1, 2, 5), 2)),      # 5 features, 2 heads
           answers(call("masked_softmax", torch.randn(2, 3), torch.tensor([1, 2])))]  # 2-D X
    for answer in got:
        assert answer["ok"] is False and set(answer) == {"ok", "error"}
        message = answer["error"]["message"]
        assert re.fullmatch(r"[A-Za-z]+Error: .{1,300}", message), message
        assert not any(line in message for line in lines), message
    assert answers.refused == got[0]["error"]["message"]  # the first refusal is kept


def test_a_module_is_built_with_the_solutions_weights_and_answers_with_the_callers():
    answers = answerer("DotProductAttention", "MultiHeadAttention")
    spec = answers({"ask": "init", "module": "attention", "name": "MultiHeadAttention",
                    "args": plain([4, 4, 4, 8, 2, 0.0]), "kwargs": {}})
    assert [p[0] for p in spec["params"]] == ["W_q.weight", "W_k.weight", "W_v.weight",
                                              "W_o.weight"]
    assert all(p[1] == ([8, 4] if p[0] != "W_o.weight" else [8, 8]) for p in spec["params"])
    # the caller's module holds its own weights: those are the ones the answer uses
    gen = torch.Generator().manual_seed(3)
    weights = {n: torch.randn(*shape, generator=gen) for n, shape, _dtype in spec["params"]}
    q, k, v = (torch.randn(2, 3, 4, generator=gen) for _ in range(3))
    lens = torch.tensor([1, 3])
    answer = answers(dict(call("MultiHeadAttention", q, k, v, lens), instance=spec["instance"],
                          training=False, params=weights, buffers={}))
    module = REFERENCE.module.MultiHeadAttention(4, 4, 4, 8, 2, 0.0).eval()
    module.load_state_dict(weights)
    assert torch.allclose(answer["output"], module(q, k, v, lens))
    assert torch.allclose(answer["captured"]["attention.attention_weights"],
                          module.attention.attention_weights)
    mismatched = dict(weights, **{"W_q.weight": torch.randn(3, 4)})
    again = answers(dict(call("MultiHeadAttention", q, k, v, lens), instance=spec["instance"],
                         training=False, params=mismatched, buffers={}))
    assert again["error"]["message"] == "the weight W_q.weight has another shape"
    forged = answers(dict(call("MultiHeadAttention", q, k, v, lens), instance=99,
                          training=False, params=weights, buffers={}))
    assert forged["error"]["message"] == "a module the grader did not build"


def test_backward_gives_the_solutions_gradients_for_inputs_and_weights():
    answers = answerer("masked_softmax")
    X = torch.randn(2, 3, 4, requires_grad=True)
    lens = torch.tensor([2, 4])
    answer = answers(call("masked_softmax", X, lens))
    grad = torch.randn(2, 3, 4)
    back = answers({"ask": "backward", "call": answer["call"], "grad": grad})
    leaf = X.detach().clone().requires_grad_(True)
    (REFERENCE.module.masked_softmax(leaf.clone(), lens) * grad).sum().backward()
    assert torch.allclose(back["grads"][0], leaf.grad) and back["grads"][1] is None
    assert answers({"ask": "backward", "call": 77, "grad": grad})["error"]["message"] == \
        "a gradient of a call the grader did not answer"
    wrong = answers({"ask": "backward", "call": answer["call"], "grad": torch.randn(5)})
    assert wrong["error"]["message"] == "a gradient of another shape than the answer"


def test_dropout_in_an_answer_draws_from_the_generator_the_worker_sent():
    answers = answerer("DotProductAttention")
    spec = answers({"ask": "init", "module": "attention", "name": "DotProductAttention",
                    "args": plain([0.5]), "kwargs": {}})
    q, k, v = torch.randn(2, 3, 4), torch.randn(2, 5, 4), torch.randn(2, 5, 2)
    torch.manual_seed(11)
    state = torch.random.get_rng_state()
    expected = REFERENCE.module.DotProductAttention(0.5).train()(q, k, v, None)
    after = torch.random.get_rng_state()
    torch.manual_seed(99)  # the trusted process's own generator is elsewhere
    mine = torch.random.get_rng_state()
    answer = answers(dict(call("DotProductAttention", q, k, v), instance=spec["instance"],
                          training=True, params={}, buffers={}, rng=state))
    assert torch.equal(answer["output"], expected) and torch.equal(answer["rng"], after)
    assert torch.equal(torch.random.get_rng_state(), mine)  # left as it was


# -- through real workers -----------------------------------------------------------------
@pytest.fixture(scope="module")
def stage(tmp_path_factory):
    folder = tmp_path_factory.mktemp("stage")
    os.chmod(folder, 0o711)
    return str(folder)


def submission(tmp_path, stage, source, name="attention"):
    folder = tmp_path / "sub"
    folder.mkdir()
    path = folder / f"{name}.py"
    path.write_text(source, encoding="utf-8")
    student = Submission(str(path), isolation.choose("auto"), Limits(), stage,
                         assignment=ATTENTION)
    student.start()
    return student


def solution_with(*ids, edit=None):
    with open(SOLUTION, encoding="utf-8") as handle:
        source = handle.read()
    for mistake_id in ids:
        source = CATALOG.by_id(mistake_id).apply(source)
    if edit:
        assert source.count(edit[0]) == 1, edit[0]
        source = source.replace(*edit)
    return source


def cases_of(session, target, check="match"):
    return [c for c in session.table if c.target == target and c.check == check]


def test_an_answered_right_caller_gives_the_solutions_results_in_every_case(tmp_path, stage):
    """MultiHeadAttention right, DotProductAttention without its scale: answered, every match,
    eval and dropout case of MultiHeadAttention passes its own check (gradients, stored
    weights and seeded dropout included), and the raw run fails them."""
    student = submission(tmp_path, stage, solution_with("dot-no-scale"))
    session = Session(ATTENTION)
    own = OwnCode(student, REFERENCE, answered_pairs(ATTENTION), names={"DotProductAttention"})
    try:
        cases = [c for c in session.table if c.target == "MultiHeadAttention"
                 and c.check in ("match", "eval", "dropout")]
        assert len(cases) >= 10
        raw = [checks.passes(session, c, student, REFERENCE) for c in cases]
        answered = [checks.passes(session, c, own, REFERENCE) for c in cases]
    finally:
        student.stop()
    assert all(answered), [c.id for c, ok in zip(cases, answered) if not ok]
    assert raw.count(False) >= 8
    assert {tuple(names) for _t, names, _r in own.log} == {("DotProductAttention",)}
    assert not any(refused for _t, _n, refused in own.log)


def test_a_caller_that_relies_on_the_in_place_write_is_answered_so_too(tmp_path, stage):
    """masked_softmax that ignores sequence_mask's return value and reads X after the call
    (the book's sequence_mask writes into X): answered, it is right."""
    source = solution_with(edit=(
        "    X = sequence_mask(X.reshape(-1, shape[-1]), valid_lens, value=-1e6)  # (B*Q, K)\n",
        "    X = X.reshape(-1, shape[-1])\n    sequence_mask(X, valid_lens, value=-1e6)\n"))
    source = source.replace("mask = positions[None, :] < valid_len[:, None]",
                            "mask = positions[None, :] <= valid_len[:, None]")
    student = submission(tmp_path, stage, source)
    session = Session(ATTENTION)
    own = OwnCode(student, REFERENCE, answered_pairs(ATTENTION), names={"sequence_mask"})
    try:
        cases = cases_of(session, "masked_softmax")
        results = [checks.passes(session, c, own, REFERENCE) for c in cases]
        raw = [checks.passes(session, c, student, REFERENCE) for c in cases]
    finally:
        student.stop()
    assert all(results) and not all(raw)


STASH = '''
_KEPT = {}


def _steal(name, value):
    if getattr(value, "_attnkit_answered", None):
        _KEPT[name] = value


def _ask_with(name, *args):
    kept = _KEPT[name]
    for cell in kept.__closure__ or ():  # the channel: said to be live, whatever it says
        if hasattr(cell.cell_contents, "live"):
            cell.cell_contents.live = True
    return kept(*args)
'''


def test_a_kept_stand_in_answers_nothing_outside_the_run_that_made_it(tmp_path, stage):
    """DotProductAttention keeps the stand-in of masked_softmax during its answered run;
    masked_softmax then calls it in its own (raw) case with the channel forced live: the
    ask reaches the trusted side as a reply to a probe that expects none, the call fails as
    a refused reply, and nothing is answered."""
    source = solution_with(edit=(
        "        self.attention_weights = masked_softmax(scores, valid_lens)  # (B, Q, K)\n"
        "        return torch.bmm(self.dropout(self.attention_weights), values)  # (B, Q, V)\n"
        "        ### END SOLUTION\n\n\ndef transpose_qkv",
        "        _steal('masked_softmax', masked_softmax)\n"
        "        self.attention_weights = masked_softmax(scores, valid_lens)  # (B, Q, K)\n"
        "        return torch.bmm(self.dropout(self.attention_weights), values)  # (B, Q, V)\n"
        "        ### END SOLUTION\n\n\ndef transpose_qkv"))
    source = source.replace(
        "    if valid_lens is None:\n        return nn.functional.softmax(X, dim=-1)\n",
        "    if 'masked_softmax' in _KEPT:\n        return _ask_with('masked_softmax', X, valid_lens)\n"
        "    if valid_lens is None:\n        return nn.functional.softmax(X, dim=-1)\n", 1)
    source = source.replace("import math\n", "import math\n" + STASH, 1)
    student = submission(tmp_path, stage, source)
    session = Session(ATTENTION)
    own = OwnCode(student, REFERENCE, answered_pairs(ATTENTION), names={"masked_softmax"})
    try:
        dot = cases_of(session, "DotProductAttention")[0]
        assert checks.passes(session, dot, own, REFERENCE)  # answered: it kept the stand-in
        softmax = cases_of(session, "masked_softmax")[1]
        with pytest.raises(StudentFailure) as failed:  # a probe not asked before (guarded)
            student.run(softmax.probe(None, guard=True), softmax.call_text())
        # answered runs of other targets do not answer masked_softmax either
        mha = cases_of(session, "MultiHeadAttention")[1]
        own.names = {"DotProductAttention"}
        before = len(own.log)
        checks.passes(session, mha, own, REFERENCE)
    finally:
        student.stop()
    assert "sent a reply the grader refuses to read" in str(failed.value)
    assert "lacks its field 'ok'" in str(failed.value)
    assert all(names == ["DotProductAttention"] for _t, names, _r in own.log[before:])


def test_an_answered_callee_the_caller_passes_an_argument_it_does_not_take_is_said(
        tmp_path, stage):
    """A DotProductAttention that calls masked_softmax with a third argument its own version
    takes: the solution refuses the call, the run says why, and the case is not judged
    apart from the callee."""
    source = solution_with(edit=(
        "def masked_softmax(X, valid_lens):", "def masked_softmax(X, valid_lens, fill=-1e6):"))
    source = source.replace("        self.attention_weights = masked_softmax(scores, valid_lens)"
                            "  # (B, Q, K)\n        return torch.bmm(self.dropout(self.attention_"
                            "weights), values)  # (B, Q, V)\n        ### END SOLUTION\n\n\ndef "
                            "transpose_qkv",
                            "        self.attention_weights = masked_softmax(scores, valid_lens, "
                            "-1e6)  # (B, Q, K)\n        return torch.bmm(self.dropout(self."
                            "attention_weights), values)  # (B, Q, V)\n        ### END SOLUTION"
                            "\n\n\ndef transpose_qkv")
    student = submission(tmp_path, stage, source)
    session = Session(ATTENTION)
    own = OwnCode(student, REFERENCE, answered_pairs(ATTENTION), names={"masked_softmax"})
    try:
        dot = cases_of(session, "DotProductAttention")[0]
        assert not checks.passes(session, dot, own, REFERENCE)
    finally:
        student.stop()
    refused = [r for _t, _n, r in own.log if r]
    assert refused and refused[0].startswith("TypeError: masked_softmax() takes 2 positional "
                                             "arguments but 3 were given"), refused
