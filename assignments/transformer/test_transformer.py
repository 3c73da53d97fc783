"""Self-check tests for transformer.py.

Run `pytest` in this folder (see README.md). These checks try the behaviours the grader
grades on a few small inputs, with expectations computed here from the book's formulas:
the shapes, the sine/cosine table P, dropout only in training mode and only where the book
puts it, the residual sum and the layer norm, and valid_lens reaching the attention. The
hidden suite adds more cases (other sizes, float64, gradients, the GPU part; README.md
lists them), so passing here does not yet mean full marks.

Messages in Chinese: `pytest --lang zh` (or set ATTN_LANG=zh). The translations are in
locale/zh_CN/LC_MESSAGES/selfcheck.po (compiled into selfcheck.mo next to it); a language is
one more such catalog (conftest.py offers each one there is).
"""
import gettext
import math
import os

import pytest
import torch

_LOCALE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "locale")


def _translation(lang):
    """The message catalog for `lang` (the first part of a folder of locale/: "zh" for
    zh_CN); English, or a language without one, needs none."""
    lang = (lang or "en").strip().lower().replace("-", "_").split("_")[0]
    folders = sorted(os.listdir(_LOCALE_DIR)) if os.path.isdir(_LOCALE_DIR) else []
    found = [f for f in folders if f.lower().split("_")[0] == lang]
    if lang == "en" or not found:
        return gettext.NullTranslations()
    return gettext.translation("selfcheck", _LOCALE_DIR, languages=found[:1], fallback=True)


# conftest.py turns `pytest --lang zh` into ATTN_LANG=zh before this file is imported.
_ = _translation(os.environ.get("ATTN_LANG")).gettext


try:
    import transformer
except ModuleNotFoundError as exc:
    if exc.name == "attention":
        raise ImportError(_(
            "transformer.py imports MultiHeadAttention from attention.py, which is not in this "
            "folder: keep the attention.py that came with the assignment next to "
            "transformer.py.")) from None
    if exc.name == "transformer":
        raise ImportError(_(
            "transformer.py was not found next to test_transformer.py: put it in this folder and "
            "run `pytest` from here.")) from None
    raise


ATOL = 1e-5


def close(got, expected, what):
    assert isinstance(got, torch.Tensor), _("{what}: expected a tensor, got {kind}").format(
        what=what, kind=type(got).__name__)
    assert tuple(got.shape) == tuple(expected.shape), _(
        "{what}: expected shape {expected}, got {got}").format(
            what=what, expected=tuple(expected.shape), got=tuple(got.shape))
    diff = (got.double() - expected.double()).abs().max().item()
    assert diff <= ATOL + 1e-4 * expected.abs().max().item(), _(
        "{what}: wrong values (largest difference {diff:.3g})").format(what=what, diff=diff)


def table(positions, d):
    """P[i, 2j] = sin(i / 10000^(2j/d)), P[i, 2j+1] = cos(...), computed here with math."""
    rows = []
    for i in range(positions):
        row = []
        for j in range(0, d, 2):
            angle = i / 10000 ** (j / d)
            row += [math.sin(angle), math.cos(angle)]
        rows.append(row)
    return torch.tensor(rows)


def layer_norm(Z, axes=1):
    """Layer norm of Z over its last `axes` axes, without a learned scale or shift."""
    dims = tuple(range(-axes, 0))
    mean = Z.mean(dim=dims, keepdim=True)
    var = Z.var(dim=dims, unbiased=False, keepdim=True)
    return (Z - mean) / torch.sqrt(var + 1e-5)


# -- PositionalEncoding -----------------------------------------------------------------
def test_positional_encoding_adds_the_sine_cosine_table():
    encoding = transformer.PositionalEncoding(8, 0.0).eval()
    got = encoding(torch.zeros(3, 5, 8))  # 3 sequences of 5 positions: batch != positions
    close(got, table(5, 8).expand(3, 5, 8),
          _("PositionalEncoding(8, 0) on zeros (3, 5, 8): the result is P itself"))
    X = torch.randn(2, 4, 8)
    close(encoding(X), X + table(4, 8), _("PositionalEncoding on random X: X + P"))


def test_positional_encoding_works_up_to_max_len():
    encoding = transformer.PositionalEncoding(6, 0.0, max_len=7).eval()
    close(encoding(torch.zeros(1, 7, 6)), table(7, 6).unsqueeze(0),
          _("a sequence exactly max_len long"))


def test_positional_encoding_drops_out_only_in_training():
    encoding = transformer.PositionalEncoding(8, 0.5)
    X = torch.randn(4, 6, 8)
    encoding.eval()
    close(encoding(X), X + table(6, 8), _("eval mode: no dropout"))
    encoding.train()
    got = encoding(X)
    full = (X + table(6, 8)) / 0.5
    zero = got == 0
    assert zero.any() and not zero.all(), _(
        "training mode with dropout=0.5: some entries should be dropped (0) and some kept")
    close(got[~zero], full[~zero], _(
        "training mode: each kept entry is (X + P) / (1 - p): dropout acts on the sum"))


# -- PositionWiseFFN --------------------------------------------------------------------
def test_position_wise_ffn_is_two_dense_layers_with_a_relu():
    ffn = transformer.PositionWiseFFN(4, 6, 8)
    names = sorted(ffn.state_dict())
    assert names == ["dense1.bias", "dense1.weight", "dense2.bias", "dense2.weight"], _(
        "the parameters should be dense1 and dense2 with biases, got {names}").format(names=names)
    X = torch.randn(2, 3, 4)
    W1, b1, W2, b2 = ffn.dense1.weight, ffn.dense1.bias, ffn.dense2.weight, ffn.dense2.bias
    expected = torch.clamp(X @ W1.T + b1, min=0) @ W2.T + b2
    close(ffn(X), expected.detach(), _("PositionWiseFFN(4, 6, 8) on X (2, 3, 4)"))


# -- AddNorm ----------------------------------------------------------------------------
def test_add_norm_normalizes_the_residual_sum():
    add_norm = transformer.AddNorm(5, 0.0).eval()
    X, Y = torch.randn(2, 3, 5) * 3, torch.randn(2, 3, 5)
    close(add_norm(X, Y), layer_norm(X + Y), _("AddNorm(5, 0): the layer norm of X + Y"))
    wide = transformer.AddNorm([3, 5], 0.0).eval()
    close(wide(X, Y), layer_norm(X + Y, axes=2), _(
        "AddNorm([3, 5], 0): normalized over the last two axes"))


def test_add_norm_drops_out_the_sublayer_output_only():
    add_norm = transformer.AddNorm(6, 0.5).train()
    X = torch.randn(4, 5, 6)
    close(add_norm(X, torch.zeros(4, 5, 6)), layer_norm(X), _(
        "AddNorm in training mode with Y = 0: dropout on Y changes nothing, so the result is "
        "the layer norm of X"))


# -- TransformerEncoderBlock ------------------------------------------------------------
def _block(dropout=0.0):
    torch.manual_seed(0)
    return transformer.TransformerEncoderBlock(8, 8, 8, 8, [8], 8, 16, 2, dropout)


def test_transformer_encoder_block_shapes_and_parameters():
    block = _block().eval()
    out = block(torch.randn(3, 4, 8), torch.tensor([4, 2, 3]))
    assert tuple(out.shape) == (3, 4, 8), _(
        "expected the output shape (3, 4, 8), got {shape}").format(shape=tuple(out.shape))
    prefixes = sorted({name.split(".")[0] for name in block.state_dict()})
    assert prefixes == ["addnorm1", "addnorm2", "attention", "ffn"], _(
        "the block's parts should be attention, addnorm1, ffn and addnorm2, got {parts}").format(
            parts=prefixes)


def test_transformer_encoder_block_keeps_padding_out():
    block = _block().eval()
    X = torch.randn(2, 5, 8)
    lengths = torch.tensor([2, 5])
    out = block(X, lengths)
    weights = block.attention.attention.attention_weights  # (batch * heads, 5, 5)
    assert torch.all(weights[:2, :, 2:] == 0), _(
        "the attention weights of example 0 (valid length 2) should be 0 at positions 2, 3, 4: "
        "does valid_lens reach the attention?")
    changed = X.clone()
    changed[0, 4] += 10.0  # padding of example 0
    close(block(changed, lengths)[0, :2], out[0, :2], _(
        "changing a padding position of example 0 should not change its real positions"))


def test_transformer_encoder_block_is_deterministic_in_eval_mode():
    block = _block(dropout=0.5).eval()
    X, lengths = torch.randn(2, 4, 8), torch.tensor([3, 4])
    close(block(X, lengths), block(X, lengths), _(
        "eval mode with dropout=0.5: two calls should give the same result"))
    block.train()
    assert not torch.equal(block(X, lengths), block(X, lengths)), _(
        "training mode with dropout=0.5: two calls should differ (dropout acts)")


def test_transformer_encoder_block_follows_the_books_order():
    block = _block().eval()
    X, lengths = torch.randn(2, 4, 8), torch.tensor([3, 4])
    with torch.no_grad():  # the book's order, from the block's own attention and FFN
        Y = layer_norm(X + block.attention(X, X, X, lengths))
        expected = layer_norm(Y + block.ffn(Y))
    close(block(X, lengths), expected, _(
        "the block should compute Y = addnorm1(X, attention(X, X, X, valid_lens)), then "
        "addnorm2(Y, ffn(Y))"))


def test_transformer_encoder_block_passes_norm_shape_and_use_bias_on():
    block = transformer.TransformerEncoderBlock(6, 6, 6, 6, [4, 6], 6, 12, 3, 0.0, use_bias=True)
    shapes = {name: tuple(t.shape) for name, t in block.state_dict().items()}
    assert shapes.get("addnorm1.ln.weight") == (4, 6) and \
        shapes.get("addnorm2.ln.weight") == (4, 6), _(
        "with norm_shape [4, 6] both add & norm layers normalize over (4, 6)")
    assert "attention.W_q.bias" in shapes, _(
        "with use_bias=True the attention's layers have biases (pass use_bias on)")
    out = block.eval()(torch.randn(2, 4, 6), torch.tensor([2, 4]))
    assert tuple(out.shape) == (2, 4, 6)
