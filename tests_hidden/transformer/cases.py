"""The transformer assignment's hidden cases, declared as data (the library, grader/suite/,
runs them all).

Each Case names the part it grades, its points, what to call and with which inputs. Inputs
are seeded random tensors (with X = 0 once, so a positional encoding shows P itself). The
table covers batch != positions and each equal to 1, the sin/cos layout of P, a sequence as
long as max_len, dropout in eval mode (none, deterministic) and in training mode, valid_lens
shorter than the sequence (ignoring them changes every output), 1-D and 2-D normalized
shapes, use_bias, gradients with respect to the inputs and the parameters, float64, and the
GPU part.

Checks (grader/suite/checks.py):
    match    outputs, the block's stored attention weights and gradients equal the
             reference's. A case in training mode is a `match` too: the probe seeds torch's
             generator before each call on both sides, so dropout applied where the book
             applies it (nn.Dropout or F.dropout, in the order the data flows) draws the
             reference's masks, and dropout anywhere else (before P is added, on the sum, on
             X) or nowhere gives other numbers
    eval     eval mode with dropout > 0: deterministic and equal to the reference
    device   CPU-only machines: no tensor created on the default device (see guards.py)
    cuda     GPU machines: the same comparison with every tensor on CUDA

Degenerate cases (no credit by accident). A `match` case is degenerate when a shortcut that
skips the function's work gets it right, and its `degenerate` field then says which:
    PositionalEncoding       one position: P's only row is [0, 1, 0, 1, ...] whatever the
                             frequencies, so adding that row is right
    TransformerEncoderBlock  valid_lens None, or one position (every weight is 1): code
                             that ignores valid_lens is right
PositionWiseFFN and AddNorm have none: no shortcut skips a Linear layer or a LayerNorm.
Every other block case has a sequence with padding after its valid length and two real
positions to weigh. A degenerate case counts only once the same module passes one of its
non-degenerate cases on the CPU (grader/suite/checks.py).
"""
import os

import torch

from grader.assignment import load_folder
from grader.i18n import N_  # `about` and names are translated where shown
from grader.suite.case import Inputs, case_class, device_cases, lens

ASSIGNMENT = load_folder(os.path.dirname(os.path.abspath(__file__)))  # assignment.toml here
Case = case_class(ASSIGNMENT)

# -- degenerate cases: the shortcut each reason names gets the case right ---------------
FIRST_ROW_ONLY = N_("with one position P's only row is [0, 1, 0, 1, ...] whatever the "
                    "frequencies, so adding that row to every position gives the same result")
NO_PADDING = N_("no position is padding (valid_lens is None), so code that ignores valid_lens "
                "gives the same result")
ONE_POSITION_BLOCK = N_("with a single position every attention weight is 1, so code that "
                        "ignores valid_lens gives the same result")


# -- the table --------------------------------------------------------------------------
def positional_cases():
    part = target = "PositionalEncoding"
    r = Inputs(part)

    def init(num_hiddens, dropout=0.0, max_len=None):
        args = {"num_hiddens": num_hiddens, "dropout": dropout}
        if max_len is not None:
            args["max_len"] = max_len
        return args

    yield Case(part, N_("random X, 7 positions, num_hiddens 8"), 3, target,
               (r.randn(2, 7, 8),), init=init(8))
    yield Case(part, N_("X = 0 shows P: sine in the even columns, cosine in the odd"), 3, target,
               (torch.zeros(1, 6, 10),), init=init(10),
               about=N_("P[0, i, 2j] = sin(i / 10000^(2j/d)) and "
                        "P[0, i, 2j+1] = cos(i / 10000^(2j/d))"))
    yield Case(part, N_("more sequences than positions (batch 5, 3 positions)"), 3, target,
               (r.randn(5, 3, 6),), init=init(6),
               about=N_("P is sliced by the number of positions (axis 1), not the batch"))
    yield Case(part, N_("a batch of one, 4 positions"), 2, target, (r.randn(1, 4, 4),), init=init(4))
    yield Case(part, N_("num_hiddens 32: slowly turning columns"), 2, target,
               (r.randn(2, 10, 32),), init=init(32))
    yield Case(part, N_("a sequence exactly max_len long"), 2, target, (r.randn(2, 6, 8),),
               init=init(8, max_len=6))
    yield Case(part, N_("max_len 9, a sequence of 4"), 2, target, (r.randn(3, 4, 6),),
               init=init(6, max_len=9))
    yield Case(part, N_("one position"), 1, target, (r.randn(3, 1, 6),), init=init(6),
               degenerate=FIRST_ROW_ONLY)
    # P is float32 (the book's): entries of X around 100 leave room for a P computed in
    # float64 or by another formula, which differs from the book's by float32's rounding
    yield Case(part, N_("float64 X keeps its dtype"), 1, target,
               (r.randn(2, 5, 8, dtype=torch.float64, scale=100),), init=init(8))
    yield Case(part, N_("gradient with respect to X"), 1, target, (r.randn(2, 5, 6),),
               init=init(6), grad_args=(0,))
    yield Case(part, N_("eval mode with dropout=0.5 is deterministic"), 2, target,
               (r.randn(2, 5, 8),), init=init(8, dropout=0.5), check="eval", calls=2)
    yield Case(part, N_("dropout in training mode acts on X + P"), 2, target,
               (r.randn(2, 5, 8),), init=init(8, dropout=0.5), mode="train", calls=2,
               about=N_("dropout acts once, on the sum X + P"))


def ffn_cases():
    part = target = "PositionWiseFFN"
    r = Inputs(part)

    def init(inputs, hiddens, outputs):
        return {"ffn_num_input": inputs, "ffn_num_hiddens": hiddens, "ffn_num_outputs": outputs}

    yield Case(part, N_("the book's sizes (4, 4, 8), random X"), 3, target, (r.randn(2, 3, 4),),
               init=init(4, 4, 8))
    yield Case(part, N_("fewer outputs than inputs, batch 3 and 2 positions"), 2, target,
               (r.randn(3, 2, 6),), init=init(6, 10, 4))
    yield Case(part, N_("a batch of one, 5 positions"), 1, target, (r.randn(1, 5, 3),),
               init=init(3, 7, 3))
    yield Case(part, N_("a single position"), 1, target, (r.randn(2, 1, 4),), init=init(4, 6, 4))
    yield Case(part, N_("float64"), 1, target, (r.randn(2, 3, 4, dtype=torch.float64),),
               init=init(4, 8, 4), module_dtype="float64")
    yield Case(part, N_("gradients of X and the parameters"), 2, target, (r.randn(2, 3, 5),),
               init=init(5, 6, 3), grad_args=(0,), grad_params=True)


def addnorm_cases():
    part = target = "AddNorm"
    r = Inputs(part)

    def init(shape, dropout=0.0):
        return {"normalized_shape": shape, "dropout": dropout}

    yield Case(part, N_("normalized over the features (normalized_shape=4)"), 3, target,
               (r.randn(2, 3, 4), r.randn(2, 3, 4)), init=init(4))
    yield Case(part, N_("normalized over the last two axes (the book's [3, 4])"), 3, target,
               (r.randn(2, 3, 4), r.randn(2, 3, 4)), init=init([3, 4]))
    yield Case(part, N_("more sequences than positions, normalized_shape [6]"), 2, target,
               (r.randn(4, 2, 6), r.randn(4, 2, 6)), init=init([6]))
    yield Case(part, N_("X and Y on different scales"), 2, target,
               (r.randn(2, 4, 5, scale=3), r.randn(2, 4, 5, scale=0.5)), init=init(5),
               about=N_("the result is the layer norm of X + Y"))
    yield Case(part, N_("float64"), 1, target,
               (r.randn(2, 3, 4, dtype=torch.float64), r.randn(2, 3, 4, dtype=torch.float64)),
               init=init(4), module_dtype="float64")
    yield Case(part, N_("gradients of X, Y and the parameters"), 2, target,
               (r.randn(2, 3, 6), r.randn(2, 3, 6)), init=init(6), grad_args=(0, 1),
               grad_params=True)
    yield Case(part, N_("eval mode with dropout=0.5 is deterministic"), 2, target,
               (r.randn(2, 3, 6), r.randn(2, 3, 6)), init=init(6, dropout=0.5), check="eval",
               calls=2)
    yield Case(part, N_("dropout in training mode acts on Y only"), 3, target,
               (r.randn(2, 4, 6), r.randn(2, 4, 6)), init=init(6, dropout=0.5), mode="train",
               calls=2, about=N_("dropout acts on the sublayer's output Y, before the sum"))


def block_cases():
    part = target = "TransformerEncoderBlock"
    r = Inputs(part)

    def init(hidden, heads, norm_shape=None, ffn_hiddens=None, dropout=0.0, use_bias=None,
             sizes=None):
        key, query, value = sizes or (hidden, hidden, hidden)
        args = {"key_size": key, "query_size": query, "value_size": value,
                "num_hiddens": hidden, "norm_shape": norm_shape or [hidden],
                "ffn_num_input": hidden, "ffn_num_hiddens": ffn_hiddens or 2 * hidden,
                "num_heads": heads, "dropout": dropout}
        if use_bias is not None:
            args["use_bias"] = use_bias
        return args

    padding = N_("valid_lens must reach the attention: no position may attend to the padding "
                 "after a sequence's valid length")
    yield Case(part, N_("2 heads, lengths [3, 2] of 5 positions"), 4, target,
               (r.randn(2, 5, 8), lens([3, 2])), init=init(8, 2), about=padding)
    yield Case(part, N_("padding changes the output: lengths [2, 5]"), 4, target,
               (r.randn(2, 5, 8), lens([2, 5])), init=init(8, 2, ffn_hiddens=12), about=padding)
    yield Case(part, N_("4 heads, more sequences than positions (batch 3, 4 positions)"), 3,
               target, (r.randn(3, 4, 8), lens([4, 2, 3])), init=init(8, 4))
    yield Case(part, N_("norm_shape over positions and features ([T, d], as the book's demo)"), 3,
               target, (r.randn(2, 4, 6), lens([3, 4])), init=init(6, 3, norm_shape=[4, 6]))
    yield Case(part, N_("use_bias=True"), 3, target, (r.randn(2, 4, 6), lens([2, 3])),
               init=init(6, 2, use_bias=True))
    yield Case(part, N_("a wide FFN (num_hiddens 6, ffn_num_hiddens 16, 3 heads)"), 2, target,
               (r.randn(2, 5, 6), lens([4, 2])), init=init(6, 3, ffn_hiddens=16))
    yield Case(part, N_("int32 lengths"), 2, target, (r.randn(2, 4, 8), lens([2, 3], torch.int32)),
               init=init(8, 2))
    yield Case(part, N_("valid_lens None"), 1, target, (r.randn(2, 4, 8), None), init=init(8, 2),
               degenerate=NO_PADDING)
    yield Case(part, N_("one position"), 1, target, (r.randn(3, 1, 8), lens([1, 1, 1])),
               init=init(8, 2), degenerate=ONE_POSITION_BLOCK)
    yield Case(part, N_("float64"), 2, target,
               (r.randn(2, 4, 6, dtype=torch.float64), lens([3, 2])), init=init(6, 2),
               module_dtype="float64")
    yield Case(part, N_("gradients of X and every parameter"), 4, target,
               (r.randn(2, 4, 6), lens([2, 4])), init=init(6, 2, use_bias=True), grad_args=(0,),
               grad_params=True)
    yield Case(part, N_("eval mode with dropout=0.5 is deterministic"), 3, target,
               (r.randn(2, 4, 8), lens([3, 4])), init=init(8, 2, dropout=0.5), check="eval",
               calls=2)
    yield Case(part, N_("dropout in training mode"), 4, target, (r.randn(2, 5, 8), lens([4, 2])),
               init=init(8, 2, dropout=0.5), mode="train", calls=2,
               about=N_("dropout acts on the attention weights and on each sublayer's output"))


CASES = [*positional_cases(), *ffn_cases(), *addnorm_cases(), *block_cases(),
         # the GPU part: each of its targets' cases again on CUDA, or under the device guard
         *device_cases(ASSIGNMENT, points=3, case=Case)]
