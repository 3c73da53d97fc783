"""No credit by accident: code that skips a function's work earns nothing for it.

A `match` case is degenerate when a shortcut gets it right (tests_hidden/cases.py says
which, and why); it counts only once the same function passes one of its non-degenerate
cases, and the GPU share of a function is graded only then. Here:
- the marking is recomputed from the inputs by the documented rule (independently of the
  table), and checked against the shortcuts themselves, run on every case: every case a
  shortcut gets right is marked, and every marked case is one a shortcut gets right;
- the shortcuts are graded for real (`grader grade`, one batch) and score, part by part,
  the literal figures below: nothing in the part of the function whose work they skip,
  nothing of that function's GPU share, full marks everywhere else (the functions calling
  it are judged on their own code: error carried forward); in the same batch the correct
  solution keeps 100 and bob and chen (real mistakes, see README) keep theirs;
- the withheld case says why, in English and in Chinese.
"""
import json
import os
import types

import pytest
import torch

from conftest import KIT, SOLUTION, SUBMISSIONS
from grader import i18n
from grader.harness import Reference, StudentFailure
from grader.harness.results import ProbeResult
from grader.sandbox.runtime.probes import run_probe

from grader import assignment
from grader.suite import checks
from grader.suite.session import Session
from grading import grades, run_grader

SUITE = Session(assignment.load("attention"))  # the library's run state, as the plugin keeps it
cases_table = SUITE.assignment.cases()  # the table module: CASES, Case and its reasons

# Each shortcut skips one function's work; the solution is kept for everything else.
SHORTCUTS = {
    "mask_returns_x": """
        def sequence_mask(X, valid_len, value=0):
            return X
        """,
    "mask_fills_value": """
        def sequence_mask(X, valid_len, value=0):
            return torch.full_like(X, value)
        """,
    "softmax_uniform": """
        def masked_softmax(X, valid_lens):
            return torch.ones_like(X) / X.shape[-1]
        """,
    "softmax_ignores_lens": """
        def masked_softmax(X, valid_lens):  # a plain softmax
            return nn.functional.softmax(X, dim=-1)
        """,
    "softmax_ignores_scores": """
        _masked_softmax = masked_softmax
        def masked_softmax(X, valid_lens):  # weights from the mask alone
            return _masked_softmax(torch.zeros_like(X), valid_lens)
        """,
    "mean_of_values": """
        def _mean(self, queries, keys, values, valid_lens=None):
            B, Q, K = queries.shape[0], queries.shape[1], keys.shape[1]
            self.attention_weights = queries.new_full((B, Q, K), 1.0 / K)
            return values.mean(dim=1, keepdim=True).expand(B, Q, values.shape[-1])
        AdditiveAttention.forward = _mean
        DotProductAttention.forward = _mean
        def _mha_mean(self, queries, keys, values, valid_lens):
            B, Q, K = queries.shape[0], queries.shape[1], keys.shape[1]
            self.attention.attention_weights = queries.new_full((B * self.num_heads, Q, K), 1.0 / K)
            out = self.W_o(self.W_v(values)).mean(dim=1, keepdim=True)
            return out.expand(B, Q, out.shape[-1])
        MultiHeadAttention.forward = _mha_mean
        """,
    "transposes_reshape_only": """
        def transpose_qkv(X, num_heads):
            return X.reshape(X.shape[0] * num_heads, X.shape[1], -1)
        def transpose_output(X, num_heads):
            return X.reshape(X.shape[0] // num_heads, X.shape[1], -1)
        """,
    "mha_one_head": """
        def _one_head(self, queries, keys, values, valid_lens):
            output = self.attention(self.W_q(queries), self.W_k(keys), self.W_v(values), valid_lens)
            return self.W_o(output)
        MultiHeadAttention.forward = _one_head
        """,
    "everything_identity": """
        def sequence_mask(X, valid_len, value=0):
            return X
        def masked_softmax(X, valid_lens):
            return X
        def transpose_qkv(X, num_heads):
            return X
        def transpose_output(X, num_heads):
            return X
        def _values(self, queries, keys, values, valid_lens=None):
            self.attention_weights = queries.new_ones(queries.shape[0], queries.shape[1], keys.shape[1])
            return values
        AdditiveAttention.forward = _values
        DotProductAttention.forward = _values
        def _mha_values(self, queries, keys, values, valid_lens):
            self.attention.attention_weights = queries.new_ones(
                queries.shape[0] * self.num_heads, queries.shape[1], keys.shape[1])
            return values
        MultiHeadAttention.forward = _mha_values
        """,
}

ATTENTION = ("masked_softmax", "AdditiveAttention", "DotProductAttention", "MultiHeadAttention")
# the functions whose results each shortcut changes: the one it skips and those calling it
REACHES = {
    "mask_returns_x": ("sequence_mask",) + ATTENTION,
    "mask_fills_value": ("sequence_mask",) + ATTENTION,
    "softmax_uniform": ATTENTION,
    "softmax_ignores_lens": ATTENTION,
    "softmax_ignores_scores": ATTENTION,
    "mean_of_values": ATTENTION[1:],
    "transposes_reshape_only": ("transpose_qkv", "transpose_output", "MultiHeadAttention"),
    "mha_one_head": ("MultiHeadAttention",),
    "everything_identity": ("sequence_mask", "transpose_qkv", "transpose_output") + ATTENTION,
}

PARTS = ("sequence_mask", "masked_softmax", "AdditiveAttention", "DotProductAttention",
         "transpose", "MultiHeadAttention", "GPU")
# (sequence_mask, masked_softmax, Additive, DotProduct, transpose, MultiHead, GPU), graded
# on this CPU machine: the GPU part is 2 points for each of sequence_mask, masked_softmax
# and the three modules. Worked out by hand from the case table (cases.py) and the rules:
# a shortcut earns nothing in its own function's part (its degenerate cases are withheld,
# its real ones wrong) and nothing of that function's GPU share (its result ignores an
# input the solution uses: grader/suite/work.py); the functions calling it are the
# solution's, judged on their own code with the shortcut answered right (error carried
# forward, grader/catalog/carry.py), so they keep full marks and their GPU shares.
EXPECTED = {
    "correct": (11, 20, 15, 15, 9, 20, 10),
    "zero_stub": (0, 0, 0, 0, 0, 0, 0),
    "mask_returns_x": (0, 20, 15, 15, 9, 20, 8),
    "mask_fills_value": (0, 20, 15, 15, 9, 20, 8),
    "softmax_uniform": (11, 0, 15, 15, 9, 20, 8),
    "softmax_ignores_lens": (11, 0, 15, 15, 9, 20, 8),
    "softmax_ignores_scores": (11, 0, 15, 15, 9, 20, 8),
    # the three modules' own forward replaced: each loses its part and its GPU share
    "mean_of_values": (11, 20, 0, 0, 9, 0, 4),
    # the transposes are no GPU target; MultiHeadAttention's own code is the solution's
    "transposes_reshape_only": (11, 20, 15, 15, 0, 20, 10),
    # one head instead of several is wrong in every real case, but it computes attention
    # over every input (its result changes with each of them): its GPU share is graded
    "mha_one_head": (11, 20, 15, 15, 9, 0, 10),
    "everything_identity": (0, 0, 0, 0, 0, 0, 0),
    # real mistakes keep their degenerate credit: bob's multi-head attention passes a real
    # case (a batch of one), chen fails only the length-0 cases (README's table), and only in
    # masked_softmax: its callers' are carried forward (it was 11, 13, 13, 11, 9, 18, 10)
    "bob": (11, 20, 15, 15, 9, 3, 10),
    "chen": (11, 13, 15, 15, 9, 20, 10),
}


def _solution_source():
    with open(SOLUTION, encoding="utf-8") as handle:
        return handle.read()


def shortcut_source(name):
    import textwrap
    return _solution_source() + "\n\n# -- the shortcut --\n" + textwrap.dedent(SHORTCUTS[name])


# -- the rule, recomputed from the inputs -----------------------------------------------
def _rows(lengths, batch, queries):
    """Each query's valid length, or None where nothing is masked."""
    if lengths is None:
        return [None] * (batch * queries)
    values = lengths.to(torch.float64)
    if values.dim() == 1:
        return [float(values[b]) for b in range(batch) for _ in range(queries)]
    return [float(values[b, q]) for b in range(batch) for q in range(queries)]


def attention_reason(batch, queries, keys, lengths):
    if keys == 1:
        return cases_table.ONE_KEY
    rows = _rows(lengths, batch, queries)
    if all(n is None or n >= keys for n in rows):
        return cases_table.NO_KEY_MASKED
    if all(n is not None and n <= 1 for n in rows):
        return cases_table.NO_CHOICE
    return ""


def rule(case):
    """The reason a case is degenerate, from its inputs alone ("" when it is not)."""
    args = case.args
    if case.target == "sequence_mask":
        X, lengths = args[0], args[1]
        kept = torch.arange(X.shape[1])[None, :] < lengths.to(torch.float64)[:, None]
        if bool(kept.all()):
            return cases_table.MASKS_NOTHING
        if not bool(kept.any()):
            return cases_table.MASKS_EVERYTHING
        return ""
    if case.target in ("transpose_qkv", "transpose_output"):
        X, heads = args
        return cases_table.ONE_HEAD if heads == 1 else (
            cases_table.ONE_POSITION if X.shape[1] == 1 else "")
    if case.target == "masked_softmax":
        X, lengths = args
        return attention_reason(X.shape[0], X.shape[1], X.shape[2], lengths)
    queries, keys = args[0], args[1]
    lengths = args[3] if len(args) > 3 else None
    reason = attention_reason(queries.shape[0], queries.shape[1], keys.shape[1], lengths)
    if not reason and case.target == "MultiHeadAttention" and case.init["num_heads"] == 1:
        return cases_table.ONE_HEAD
    return reason


def test_the_marking_follows_the_documented_rule():
    for case in cases_table.CASES:
        if case.check == "match":
            assert case.degenerate == rule(case), case.id
        else:
            assert case.degenerate == "", case.id
    marked = [c.id for c in cases_table.CASES if c.degenerate]
    # every function with degenerate cases also has non-degenerate ones to earn them with
    assert len(marked) == 11, marked
    for case in SUITE.table.cases("match"):
        assert SUITE.table.evidence(case.target), case.target


# -- the rule, checked against the shortcuts themselves ---------------------------------
class Shortcut:
    """A shortcut run here, in the trusted process, as the catalog's mistakes are."""

    def __init__(self, name):
        self.module = types.ModuleType(f"shortcut_{name}")
        exec(compile(shortcut_source(name), f"<shortcut {name}>", "exec"), self.module.__dict__)

    def run(self, probe, call_text, expected=None):
        return ProbeResult(run_probe(self.module, probe), probe, "shortcut", call_text).check_ran()


@pytest.fixture(scope="module")
def reference():
    return Reference(SOLUTION)


def _right(case, implementation, reference):
    state = checks._state(case, reference)
    probe = case.probe(state)
    expected = reference.run(probe, case.call_text())
    try:
        checks.compare_results(case, implementation.run(probe, case.call_text()), expected, state)
    except StudentFailure:
        return False
    return True


def test_what_a_shortcut_gets_right_is_exactly_what_is_marked(reference):
    right = {}
    for name in SHORTCUTS:
        shortcut = Shortcut(name)
        reached = [c for c in SUITE.table.cases("match") if c.target in REACHES[name]]
        right[name] = {c.id for c in reached if _right(c, shortcut, reference)}
        # what it does not reach is the solution's, and right: the comparison is the real one
        assert all(_right(c, shortcut, reference) for c in SUITE.table.cases("match")
                   if c.target not in REACHES[name]), name
    marked = {c.id for c in cases_table.CASES if c.degenerate}
    for name, ids in right.items():
        assert ids <= marked, f"{name} gets unmarked cases right: {sorted(ids - marked)}"
    assert set().union(*right.values()) == marked, sorted(marked - set().union(*right.values()))
    assert len(marked) == 11 and len(SUITE.table.cases("match")) == 56


def test_a_withheld_case_and_the_gpu_share_say_why_in_both_languages(reference):
    shortcut = Shortcut("softmax_uniform")
    case = next(c for c in SUITE.table.cases("match") if c.degenerate == cases_table.ONE_KEY
                and c.target == "masked_softmax")
    with pytest.raises(StudentFailure) as withheld:
        checks.check_match(SUITE, case, shortcut, reference)
    assert str(withheld.value).startswith(
        "masked_softmax gave the expected result in this case, but the case cannot tell "
        "working code from a shortcut: this case has a single key, so any weights that sum to "
        "1 are right. It counts once masked_softmax also passes one of its cases")
    device = next(c for c in SUITE.table.cases("device") if c.target == "masked_softmax")
    with pytest.raises(StudentFailure) as gpu:
        checks.check_device(SUITE, device, shortcut, reference)
    assert "masked_softmax is right on the CPU only in cases that cannot tell working code " \
           "from a shortcut (this case has a single key" in str(gpu.value)
    try:
        i18n.set_language("zh")
        with pytest.raises(StudentFailure) as chinese:
            checks.check_match(SUITE, case, shortcut, reference)
    finally:
        i18n.set_language("en")
    assert str(chinese.value).startswith(
        "masked_softmax 在这个用例中给出了期望的结果，但这个用例区分不了真正的实现和走捷径的"
        "代码：这个用例只有一个键，所以任何和为 1 的权重都是对的。"), str(chinese.value)
    # the solution's own degenerate cases count
    correct = Shortcut.__new__(Shortcut)
    correct.module = reference.module
    checks.check_match(SUITE, case, correct, reference)


# -- graded for real --------------------------------------------------------------------
@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    folder = tmp_path_factory.mktemp("degenerate")
    paths = []
    for name in SHORTCUTS:
        path = folder / f"{name}.py"
        path.write_text(shortcut_source(name), encoding="utf-8")
        paths.append(str(path))
    for name, source in (("correct.py", SOLUTION), ("zero_stub.py", os.path.join(SUBMISSIONS, "zero_stub.py")),
                         ("bob.ipynb", os.path.join(KIT, "examples", "bob.ipynb")),
                         ("chen.py", os.path.join(KIT, "examples", "chen.py"))):
        with open(source, "rb") as handle:
            (folder / name).write_bytes(handle.read())
        paths.append(str(folder / name))
    out = folder / "out"
    done = run_grader("grade", *paths, "--out", str(out), "--jobs", "1",
                      env={**os.environ, "PYTHONPATH": KIT}, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    rows = grades(out)
    return rows, out


def _parts(row):
    scores = []
    for part in PARTS:
        column = next(k for k in row if k.startswith(part + " "))
        scores.append(float(row[column]))
    return tuple(scores)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(EXPECTED))
def test_each_scores_its_literal_figures(graded, name):
    rows, _ = graded
    assert _parts(rows[name]) == EXPECTED[name], rows[name]
    assert float(rows[name]["total"]) == sum(EXPECTED[name])


@pytest.mark.slow
def test_the_feedback_of_a_shortcut_says_why_its_right_cases_do_not_count(graded):
    rows, out = graded
    with open(out / rows["softmax_ignores_lens"]["folder"] / "results.json",
              encoding="utf-8") as handle:
        tests = {t["name"]: t for t in json.load(handle)["tests"]}
    none = tests["masked_softmax: valid_lens None is a plain softmax"]
    assert none["score"] == 0 and "no key is masked (valid_lens is None or no shorter than the " \
        "keys), so code that ignores valid_lens gives the same result" in none["output"]
    gpu = tests["GPU: masked_softmax makes no tensor on the default device"]
    assert gpu["score"] == 0 and "right on the CPU only in cases that cannot tell" in gpu["output"]
    assert "its result does not change with every input it should use" in gpu["output"]
    # the functions calling it are judged on their own code, and say so
    dot = tests["DotProductAttention: 2-D lengths that differ per query"]
    assert dot["score"] == dot["max_score"] and dot["carried_forward"]["in"] == ["masked_softmax"]
    # the part's summary shows what went wrong in a real case, not the withheld one
    lines = (out / rows["softmax_ignores_lens"]["folder"] / "feedback.txt").read_text(
        encoding="utf-8").splitlines()
    at = lines.index("masked_softmax: 0/20 (passed: 0 of 12 cases)")
    assert lines[at + 1].startswith("    1-D lengths that differ per example: the output of "
                                    "masked_softmax("), lines[at + 1]
