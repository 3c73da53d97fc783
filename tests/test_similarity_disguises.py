"""`grader similarity` against the disguises a copier applies (issue 28): each disguise of
tests/similarity_disguises.py, and the combinations the issue names, applied to an
independent implementation, is flagged against the original; the independent pairs (the
alternatives, the catalog's mistakes, the book followers) stay unflagged. The disguises
keep the code working (checked here on wei.py), so each is a copy a student could hand in.

The figures for every disguise, every pair and triple of them and both tools are in
bench/similarity.py and docs/how-to/similarity.md.
"""
import importlib.util
import os
import sys

import pytest

from conftest import KIT

import copydetect  # noqa: F401  (the test extra has it)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import similarity_disguises as disguises  # noqa: E402
from grader import assignment  # noqa: E402
from grader.catalog.mistakes import Catalog  # noqa: E402
from grader.similarity import DEFAULT_THRESHOLD, MIN_SHARED, base, compare, fingerprint  # noqa: E402

ATTENTION = assignment.load("attention")
TRANSFORMER = assignment.load("transformer")
SET = os.path.join(KIT, "tests", "similarity")
ALTERNATIVES = os.path.join(KIT, "tests_hidden", "attention", "alternatives")


def _read(path):
    with open(path, encoding="utf-8") as handle:
        return handle.read()


@pytest.fixture(scope="module")
def attention_base():
    return fingerprint.base_hashes([t for _, t in base.base_texts(ATTENTION)])


def _pair(a, b, hashes):
    return compare.compare("a", "b", fingerprint.Fingerprint(a, hashes),
                           fingerprint.Fingerprint(b, hashes))


@pytest.mark.parametrize("name", sorted(disguises.DISGUISES))
def test_each_disguise_of_a_copy_is_flagged(name, attention_base):
    """wei.py (559 characters of its own code) and alternatives/loops.py (736), each
    disguised one way: flagged against the original. Measured: every disguise scores 1 but
    the two that move code between functions (wei.py's helper inlined 0.89, extracted 0.95;
    loops.py's extracted 0.97)."""
    for path in (os.path.join(SET, "wei.py"), os.path.join(ALTERNATIVES, "loops.py")):
        original = _read(path)
        disguised = disguises.apply(original, [name], ATTENTION.api)
        if name != "inline" or "loops" not in path:   # loops.py has no helper to inline
            assert disguised != original, (name, path)
        pair = _pair(original, disguised, attention_base)
        assert pair.flagged, (name, path, pair.score, pair.shared)
        assert pair.score >= (0.89 if name in ("inline", "extract") else 1.0), (name, path, pair.score)
        assert pair.shared >= 480, (name, path, pair.shared)


@pytest.mark.parametrize("names", [
    ("imports", "parentheses"),                    # the issue's own: a copy at 0.46 before
    ("formatting", "rename", "order"),
    ("inline", "rename", "comments"),
    ("extract", "imports", "parentheses"),
    ("docstrings", "formatting", "extract"),
])
def test_combined_disguises_are_flagged(names, attention_base):
    for path in (os.path.join(SET, "wei.py"), os.path.join(SET, "ana.py"),
                 os.path.join(ALTERNATIVES, "where_matmul.py")):
        original = _read(path)
        pair = _pair(original, disguises.apply(original, names, ATTENTION.api), attention_base)
        assert pair.flagged and pair.score >= 0.85, (names, path, pair.score, pair.shared)


def test_the_issues_two_rewrites_no_longer_hide_a_verbatim_copy(attention_base):
    """Issue 28: `from torch.nn.functional import softmax` instead of `F.softmax` and
    parentheses around every assigned and returned expression took a verbatim copy of
    ben_mixed.py (which uses F.softmax) to 0.46: under the threshold. Now it scores 1."""
    original = _read(os.path.join(SET, "ben_mixed.py"))
    disguised = disguises.apply(original, ("imports", "parentheses"), ATTENTION.api)
    assert "from torch.nn.functional import softmax" in disguised
    assert "F.softmax" not in disguised and "return ((" in disguised
    pair = _pair(original, disguised, attention_base)
    assert pair.score == 1.0 and pair.flagged


def _load(source, name, tmp_path):
    path = tmp_path / f"{name}.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _outputs(module):
    import torch
    torch.manual_seed(0)
    X = torch.rand(2, 3, 4)
    out = [module.sequence_mask(X.reshape(6, 4), torch.tensor([1, 2, 3, 4, 0, 2])),
           module.masked_softmax(X, torch.tensor([2, 3])),
           module.masked_softmax(X, torch.tensor([[1, 2, 3], [4, 0, 2]]))]
    keys, values = torch.rand(2, 10, 2), torch.rand(2, 10, 4)
    additive = module.AdditiveAttention(2, 20, 8, 0.0).eval()
    out.append(additive(torch.rand(2, 1, 20), keys, values, torch.tensor([2, 6])))
    dot = module.DotProductAttention(0.0).eval()
    out.append(dot(torch.rand(2, 1, 2), keys, values, torch.tensor([2, 6])))
    heads = module.MultiHeadAttention(100, 100, 100, 100, 5, 0.0).eval()
    x, y = torch.rand(2, 4, 100), torch.rand(2, 6, 100)
    out.append(heads(x, y, y, torch.tensor([3, 2])))
    return out


def test_the_disguised_copies_still_work(tmp_path):
    """Each disguise is a copy a student could hand in: the same outputs as the original."""
    import torch
    original = _read(os.path.join(SET, "wei.py"))
    expected = _outputs(_load(original, "wei_original", tmp_path))
    for names in [(n,) for n in sorted(disguises.DISGUISES)] + [
            ("imports", "parentheses"), ("inline", "extract", "rename")]:
        module = _load(disguises.apply(original, names, ATTENTION.api),
                       "wei_" + "_".join(names), tmp_path)
        for want, got in zip(expected, _outputs(module)):
            assert torch.allclose(want, got, atol=1e-6), names


def test_independent_pairs_stay_unflagged():
    """Every two of: the alternatives, the catalog's mistakes (each an edit of the
    solution), the independent implementations of tests/similarity/ (four of them follow
    the book closely), for each assignment with its own base code. Measured: the highest
    score of a pair sharing 200 characters or more is 0.46 (alternatives/loops.py and
    omar_loops.py, both loops, 340 shared); pairs scoring 0.5 or more share 45 at most."""
    highest, most = 0.0, 0
    for declared in (ATTENTION, TRANSFORMER):
        texts = {}
        for name in sorted(os.listdir(declared.alternatives)):
            if name.endswith(".py"):
                texts["alt-" + name] = _read(os.path.join(declared.alternatives, name))
        solution = _read(declared.solution)
        for mistake in Catalog.of(declared):
            texts["mistake-" + mistake.id] = mistake.apply(solution)
        if declared is ATTENTION:
            for name in ("liu_book", "zhang_book", "he_skeleton_book", "xu_skeleton_book",
                         "park_einsum", "omar_loops", "sara_functional", "kim_where", "wei",
                         "ana"):
                texts[name] = _read(os.path.join(SET, name + ".py"))
        hashes = fingerprint.base_hashes([t for _, t in base.base_texts(declared)])
        prints = {k: fingerprint.Fingerprint(t, hashes) for k, t in texts.items()}
        pairs = compare.all_pairs(prints)
        assert len(pairs) == len(texts) * (len(texts) - 1) // 2
        assert not [(p.a, p.b, p.score, p.shared) for p in pairs if p.flagged]
        highest = max([highest] + [p.score for p in pairs if p.shared >= MIN_SHARED])
        most = max([most] + [p.shared for p in pairs if p.score >= DEFAULT_THRESHOLD])
    assert highest == 0.462 and most == 45
