"""The hidden cases, declared as data (the library, grader/suite/, runs them all).

Each Case names the part it grades, its points, what to call and with which inputs. Inputs
are seeded random tensors, never all-ones: with all-ones queries and keys most mistakes
give the reference's answer. The table covers batch != queries != keys and each equal to
1, 1-D and 2-D valid_lens with different lengths per example and per query, length 0 and
length > keys, int32/int64/float lengths, float64 and bfloat16, one head and several.

Checks:
    match    outputs, stored attention weights and gradients equal the reference's
    dropout  train-mode properties: weights stored before dropout, dropout acts on them
    eval     eval mode with dropout > 0: deterministic and equal to the reference
    device   CPU-only machines: no tensor created on the default device (see guards.py)
    cuda     GPU machines: the same comparison with every tensor on CUDA

Degenerate cases (no credit by accident). A `match` case is degenerate when a shortcut that
skips the function's work gets it right, and its `degenerate` field then says which (one of
the reasons below); tests/test_degenerate.py recomputes the marking from the inputs by this
rule and checks it against shortcuts run for real:
    sequence_mask        the lengths mask no position (X unchanged is right) or every
                         position (X filled with `value` is right)
    masked_softmax and   a single key (any weights summing to 1 are right); no key masked:
    the three modules    valid_lens None or every length >= the keys (ignoring valid_lens is
                         right); no query with two valid keys: every length 0 or 1 (weights
                         from the mask alone, ignoring the scores, are right)
    MultiHeadAttention   also one head (skipping the split into heads is right)
    transpose_qkv,       one head or one position (the heads keep the input's order, so a
    transpose_output     reshape without the permute is right)
Every other case has a query with a masked key and a query with two valid keys to weigh
(or, for the transposes, heads that really move), so each of these shortcuts fails it. A degenerate case counts only
once the same function passes at least one of its non-degenerate cases on the CPU, and the
GPU share of a function is graded only then (grader/suite/checks.py). One, not all: a function right in
a real case has shown it does the work, and a correct submission with an unrelated failing
edge case (NaN for length 0, say) keeps these points.
"""
import os

import torch

from grader.assignment import load_folder
from grader.i18n import N_  # `about` and names are translated where shown
from grader.suite.case import Inputs, case_class, device_cases, lens

ASSIGNMENT = load_folder(os.path.dirname(os.path.abspath(__file__)))  # assignment.toml here
Case = case_class(ASSIGNMENT)  # what a module stores its weights in, and the arguments'
                               # names, come from the declaration and the solution


# -- degenerate cases: the shortcut each reason names gets the case right ---------------
MASKS_NOTHING = N_("no position is masked, so returning X unchanged gives the same result")
MASKS_EVERYTHING = N_("every position is masked, so filling X with value gives the same result")
ONE_KEY = N_("this case has a single key, so any weights that sum to 1 are right")
NO_KEY_MASKED = N_("no key is masked (valid_lens is None or no shorter than the keys), so code "
                   "that ignores valid_lens gives the same result")
NO_CHOICE = N_("no query has two valid keys to weigh (every valid length is 0 or 1), so "
               "weights made from the mask alone, ignoring the scores, give the same result")
ONE_HEAD = N_("with one head there is nothing to split, so code that skips the split into "
              "heads gives the same result")
ONE_POSITION = N_("with one position the heads keep the input's order, so a reshape without "
                  "the permute gives the same result")


# -- the table --------------------------------------------------------------------------
def sequence_mask_cases():
    part = "sequence_mask"
    r = Inputs(part)
    yield Case(part, N_("the book's example"), 1, "sequence_mask",
               (torch.tensor([[1, 2, 3], [4, 5, 6]]), lens([1, 2])))
    yield Case(part, N_("lengths 0, full and in between"), 1, "sequence_mask",
               (r.randn(3, 5), lens([0, 5, 2])))
    yield Case(part, N_("value=-1.5 and a length larger than the row"), 1, "sequence_mask",
               (r.randn(4, 6), lens([6, 1, 3, 9]), -1.5))
    yield Case(part, N_("3-D X: whole feature vectors are masked"), 2, "sequence_mask",
               (r.randn(2, 4, 3), lens([1, 3])), kwargs={"value": -7.0})
    yield Case(part, N_("more rows than positions (batch 5, length 2)"), 1, "sequence_mask",
               (r.randn(5, 2), lens([0, 1, 2, 1, 3])))
    yield Case(part, N_("int32 lengths"), 1, "sequence_mask",
               (r.randn(3, 4), lens([3, 0, 2], torch.int32)))
    yield Case(part, N_("float lengths holding whole numbers"), 1, "sequence_mask",
               (r.randn(3, 4), lens([2.0, 4.0, 1.0], torch.float32)))
    yield Case(part, N_("batch of one, length one"), 1, "sequence_mask",
               (r.randn(1, 1, 2), lens([0])), kwargs={"value": -3.0}, degenerate=MASKS_EVERYTHING)
    yield Case(part, N_("float64 X and value=-1e6"), 1, "sequence_mask",
               (r.randn(2, 5, dtype=torch.float64), lens([4, 2])), kwargs={"value": -1e6})
    yield Case(part, N_("bfloat16 X"), 1, "sequence_mask",
               (r.randn(3, 3, dtype=torch.bfloat16), lens([1, 3, 2])))


def masked_softmax_cases():
    part = "masked_softmax"
    r = Inputs(part)
    yield Case(part, N_("valid_lens None is a plain softmax"), 2, "masked_softmax",
               (r.randn(2, 3, 4, scale=3), None), degenerate=NO_KEY_MASKED)
    yield Case(part, N_("1-D lengths that differ per example"), 3, "masked_softmax",
               (r.randn(3, 2, 5, scale=2), lens([2, 5, 1])))
    yield Case(part, N_("2-D lengths that differ per query"), 3, "masked_softmax",
               (r.randn(2, 3, 5, scale=2), lens([[1, 3, 5], [2, 4, 1]])))
    yield Case(part, N_("length 0 gives a uniform row"), 2, "masked_softmax",
               (r.randn(2, 3, 4, scale=2), lens([0, 3])))
    yield Case(part, N_("2-D lengths with 0 and more than the keys"), 1, "masked_softmax",
               (r.randn(2, 2, 3, scale=2), lens([[0, 7], [3, 1]])))
    yield Case(part, N_("int32 lengths"), 1, "masked_softmax",
               (r.randn(2, 4, 3), lens([1, 2], torch.int32)))
    yield Case(part, N_("float lengths holding whole numbers"), 1, "masked_softmax",
               (r.randn(2, 3, 6), lens([[2.0, 6.0, 1.0], [5.0, 3.0, 4.0]], torch.float32)))
    yield Case(part, N_("batch, queries and keys of size 1"), 1, "masked_softmax",
               (r.randn(1, 1, 1), lens([1])), degenerate=ONE_KEY)
    yield Case(part, N_("one query and one key per example"), 1, "masked_softmax",
               (r.randn(3, 1, 4), lens([4, 1, 2])))
    yield Case(part, N_("float64 scores"), 1, "masked_softmax",
               (r.randn(2, 3, 4, dtype=torch.float64, scale=2), lens([3, 1])))
    yield Case(part, N_("bfloat16 scores"), 1, "masked_softmax",
               (r.randn(2, 2, 5, dtype=torch.bfloat16, scale=2), lens([[2, 5], [0, 4]])))
    yield Case(part, N_("gradient with respect to the scores"), 3, "masked_softmax",
               (r.randn(2, 3, 4, scale=2), lens([[1, 4, 0], [2, 3, 9]])), grad_args=(0,))


def _attention_inputs(r, batch, queries, keys, query_size, key_size, value_size, dtype=torch.float32):
    return (r.randn(batch, queries, query_size, dtype=dtype),
            r.randn(batch, keys, key_size, dtype=dtype),
            r.randn(batch, keys, value_size, dtype=dtype))


def additive_cases():
    part = target = "AdditiveAttention"
    r = Inputs(part)

    def init(query_size, key_size, hidden=8, dropout=0.0):
        return {"key_size": key_size, "query_size": query_size, "num_hiddens": hidden,
                "dropout": dropout}

    q, k, v = _attention_inputs(r, 2, 1, 10, 20, 2, 4)
    yield Case(part, N_("the book's shapes, random values"), 2, target, (q, k, v, lens([2, 6])),
               init=init(20, 2))
    q, k, v = _attention_inputs(r, 2, 4, 4, 5, 3, 6)
    yield Case(part, N_("as many queries as keys, 2-D lengths"), 2, target,
               (q, k, v, lens([[1, 4, 2, 3], [4, 3, 1, 2]])), init=init(5, 3, hidden=6))
    q, k, v = _attention_inputs(r, 3, 2, 5, 4, 4, 3)
    yield Case(part, N_("lengths 0 and larger than the keys"), 2, target, (q, k, v, lens([0, 9, 3])),
               init=init(4, 4, hidden=5))
    q, k, v = _attention_inputs(r, 1, 1, 3, 3, 2, 2)
    yield Case(part, N_("batch of one and a single query"), 1, target, (q, k, v, lens([2])),
               init=init(3, 2, hidden=4))
    q, k, v = _attention_inputs(r, 2, 3, 1, 3, 2, 2)
    yield Case(part, N_("a single key"), 1, target, (q, k, v, lens([1, 1])), init=init(3, 2, hidden=4),
               degenerate=ONE_KEY)
    q, k, v = _attention_inputs(r, 2, 3, 4, 3, 5, 2)
    yield Case(part, N_("valid_lens None"), 1, target, (q, k, v, None), init=init(3, 5, hidden=4),
               degenerate=NO_KEY_MASKED)
    q, k, v = _attention_inputs(r, 2, 3, 4, 3, 2, 2, dtype=torch.float64)
    yield Case(part, N_("float64"), 1, target, (q, k, v, lens([4, 2])), init=init(3, 2),
               module_dtype="float64")
    q, k, v = _attention_inputs(r, 2, 3, 5, 4, 3, 2)
    yield Case(part, N_("gradients of inputs and parameters"), 2, target,
               (q, k, v, lens([[2, 5, 1], [3, 4, 5]])), init=init(4, 3, hidden=6),
               grad_args=(0, 1, 2), grad_params=True)
    q, k, v = _attention_inputs(r, 2, 3, 5, 4, 3, 2)
    yield Case(part, N_("eval mode with dropout=0.5 is deterministic"), 1, target,
               (q, k, v, lens([3, 5])), init=init(4, 3, dropout=0.5), check="eval", calls=2)
    q, k, _ = _attention_inputs(r, 2, 3, 6, 4, 3, 1)
    yield Case(part, N_("dropout in training mode acts on the weights"), 2, target,
               (q, k, dropout_values(r, 2, 6), lens([4, 6])), init=init(4, 3, dropout=0.5),
               check="dropout", mode="train", calls=3)


def dot_product_cases():
    part = target = "DotProductAttention"
    r = Inputs(part)
    q, k, v = _attention_inputs(r, 2, 3, 5, 4, 4, 3)
    yield Case(part, N_("feature size differs from the number of keys"), 2, target,
               (q * 2, k, v, lens([2, 4])), init={"dropout": 0.0})
    q, k, v = _attention_inputs(r, 2, 4, 3, 6, 6, 2)
    yield Case(part, N_("2-D lengths that differ per query"), 2, target,
               (q, k, v, lens([[1, 3, 2, 3], [3, 2, 1, 2]])), init={"dropout": 0.0})
    q, k, v = _attention_inputs(r, 2, 2, 3, 5, 5, 2)
    yield Case(part, N_("valid_lens left out (it defaults to None)"), 1, target, (q, k, v),
               init={"dropout": 0.0}, degenerate=NO_KEY_MASKED)
    q, k, v = _attention_inputs(r, 3, 2, 4, 3, 3, 2)
    yield Case(part, N_("lengths 0 and larger than the keys"), 2, target, (q, k, v, lens([0, 4, 8])),
               init={"dropout": 0.0})
    q, k, v = _attention_inputs(r, 1, 1, 1, 2, 2, 3)
    yield Case(part, N_("batch, queries and keys of size 1"), 1, target, (q, k, v, lens([1])),
               init={"dropout": 0.0}, degenerate=ONE_KEY)
    q, k, v = _attention_inputs(r, 2, 1, 4, 3, 3, 2)
    yield Case(part, N_("a single query per example"), 1, target, (q, k, v, lens([3, 1])),
               init={"dropout": 0.0})
    q, k, v = _attention_inputs(r, 2, 3, 4, 5, 5, 2, dtype=torch.float64)
    yield Case(part, N_("float64"), 1, target, (q, k, v, lens([2, 3])), init={"dropout": 0.0})
    q, k, v = _attention_inputs(r, 2, 3, 4, 4, 4, 2, dtype=torch.bfloat16)
    yield Case(part, N_("bfloat16"), 1, target, (q, k, v, lens([1, 4])), init={"dropout": 0.0})
    q, k, v = _attention_inputs(r, 2, 3, 4, 3, 3, 2)
    yield Case(part, N_("gradients of queries, keys and values"), 2, target,
               (q, k, v, lens([[1, 2, 4], [4, 0, 3]])), init={"dropout": 0.0}, grad_args=(0, 1, 2))
    q, k, v = _attention_inputs(r, 2, 3, 5, 4, 4, 2)
    yield Case(part, N_("eval mode with dropout=0.5 is deterministic"), 1, target,
               (q, k, v, lens([2, 5])), init={"dropout": 0.5}, check="eval", calls=2)
    q, k, _ = _attention_inputs(r, 2, 4, 5, 3, 3, 1)
    yield Case(part, N_("dropout in training mode acts on the weights"), 1, target,
               (q, k, dropout_values(r, 2, 5), lens([[5, 3, 4, 5], [2, 5, 5, 4]])),
               init={"dropout": 0.5}, check="dropout", mode="train", calls=3)


def transpose_cases():
    part = "transpose"
    r = Inputs(part)
    yield Case(part, N_("transpose_qkv with 4 heads"), 2, "transpose_qkv", (r.randn(2, 3, 8), 4))
    yield Case(part, N_("transpose_qkv with 1 head"), 1, "transpose_qkv", (r.randn(3, 2, 4), 1),
               degenerate=ONE_HEAD)
    yield Case(part, N_("transpose_qkv with a batch of one and one position"), 1, "transpose_qkv",
               (r.randn(1, 1, 6), 3), degenerate=ONE_POSITION)
    yield Case(part, N_("transpose_qkv keeps each example's heads together (batch 3, 2 heads)"), 1,
               "transpose_qkv", (r.randn(3, 2, 4), 2),
               about=N_("row b*num_heads + i holds head i of example b"))
    yield Case(part, N_("transpose_output with 4 heads"), 2, "transpose_output", (r.randn(8, 3, 2), 4))
    yield Case(part, N_("transpose_output with 2 heads, float64"), 1, "transpose_output",
               (r.randn(6, 5, 3, dtype=torch.float64), 2))
    yield Case(part, N_("gradient through transpose_qkv"), 1, "transpose_qkv",
               (r.randn(2, 4, 6), 3), grad_args=(0,))


def multi_head_cases():
    part = target = "MultiHeadAttention"
    r = Inputs(part)

    def init(query_size, key_size, value_size, hidden, heads, dropout=0.0, bias=None):
        args = {"key_size": key_size, "query_size": query_size, "value_size": value_size,
                "num_hiddens": hidden, "num_heads": heads, "dropout": dropout}
        if bias is not None:
            args["bias"] = bias
        return args

    q, k, v = _attention_inputs(r, 2, 3, 5, 6, 4, 5)
    yield Case(part, N_("2 heads, 1-D lengths that differ per example"), 3, target,
               (q, k, v, lens([2, 5])), init=init(6, 4, 5, 8, 2),
               about=N_("every head of example b must use example b's valid length"))
    q, k, v = _attention_inputs(r, 3, 2, 4, 3, 5, 2)
    yield Case(part, N_("4 heads, 2-D lengths that differ per query"), 3, target,
               (q, k, v, lens([[1, 4], [3, 2], [4, 1]])), init=init(3, 5, 2, 8, 4))
    q, k, v = _attention_inputs(r, 2, 3, 4, 5, 5, 5)
    yield Case(part, N_("a single head"), 1, target, (q, k, v, lens([3, 1])), init=init(5, 5, 5, 6, 1),
               degenerate=ONE_HEAD)
    q, k, v = _attention_inputs(r, 2, 2, 3, 4, 3, 2)
    yield Case(part, N_("bias=True"), 2, target, (q, k, v, lens([[1, 3], [2, 2]])),
               init=init(4, 3, 2, 6, 3, bias=True))
    q, k, v = _attention_inputs(r, 2, 3, 3, 4, 4, 4)
    yield Case(part, N_("valid_lens None"), 1, target, (q, k, v, None), init=init(4, 4, 4, 4, 2),
               degenerate=NO_KEY_MASKED)
    q, k, v = _attention_inputs(r, 3, 2, 5, 2, 3, 4)
    yield Case(part, N_("int32 lengths, three sizes of input"), 1, target,
               (q, k, v, lens([5, 1, 3], torch.int32)), init=init(2, 3, 4, 6, 3))
    q, k, v = _attention_inputs(r, 3, 2, 4, 3, 3, 3)
    yield Case(part, N_("lengths 0 and larger than the keys"), 2, target, (q, k, v, lens([0, 6, 2])),
               init=init(3, 3, 3, 6, 2))
    q, k, v = _attention_inputs(r, 1, 1, 3, 2, 2, 2)
    yield Case(part, N_("batch of one and a single query"), 1, target, (q, k, v, lens([2])),
               init=init(2, 2, 2, 4, 2))
    q, k, v = _attention_inputs(r, 2, 3, 4, 3, 4, 2, dtype=torch.float64)
    yield Case(part, N_("float64"), 1, target, (q, k, v, lens([4, 2])), init=init(3, 4, 2, 6, 3),
               module_dtype="float64")
    q, k, v = _attention_inputs(r, 2, 3, 4, 3, 2, 3)
    yield Case(part, N_("gradients of inputs and parameters"), 2, target,
               (q, k, v, lens([[1, 4, 2], [3, 3, 4]])), init=init(3, 2, 3, 6, 2, bias=True),
               grad_args=(0, 1, 2), grad_params=True)
    q, k, v = _attention_inputs(r, 2, 3, 4, 3, 3, 3)
    yield Case(part, N_("eval mode with dropout=0.5 is deterministic"), 1, target,
               (q, k, v, lens([2, 4])), init=init(3, 3, 3, 6, 2, dropout=0.5), check="eval", calls=2)
    q, k, v = _attention_inputs(r, 2, 4, 5, 3, 3, 3)
    yield Case(part, N_("dropout in training mode"), 2, target, (q, k, v, lens([3, 5])),
               init=init(3, 3, 3, 6, 2, dropout=0.5), check="dropout", mode="train", calls=3)


def dropout_values(r, batch, keys, extra=3):
    """Values [I | R]: the first `keys` columns of the output are the (dropped) weights
    themselves, the rest must equal those weights times R if dropout acted on the weights."""
    eye = torch.eye(keys).expand(batch, keys, keys)
    return torch.cat([eye, r.randn(batch, keys, extra)], dim=-1)


CASES = [*sequence_mask_cases(), *masked_softmax_cases(), *additive_cases(), *dot_product_cases(),
         *transpose_cases(), *multi_head_cases(),
         # the GPU part: each of its targets' cases again on CUDA, or under the device guard
         *device_cases(ASSIGNMENT, points=2, case=Case)]
