"""Self-check tests for transformer.py.

Run `pytest` in this folder (see README.md). These checks try the behaviours the grader
grades on a few small inputs, with expectations computed here from the book's formulas:
the shapes, the sine/cosine table P, dropout only in training mode and only where the book
puts it, the residual sum and the layer norm, and valid_lens reaching the attention. The
hidden suite adds more cases (other sizes, float64, gradients, the GPU part; README.md
lists them), so passing here does not yet mean full marks.

Messages in Chinese: `pytest --lang zh` (or set ATTN_LANG=zh).
"""
import math
import os

import pytest
import torch

ZH = os.environ.get("ATTN_LANG", "en").lower().startswith("zh")


def say(en, zh):
    """The message in the chosen language."""
    return zh if ZH else en


try:
    import transformer
except ModuleNotFoundError as exc:
    if exc.name == "attention":
        raise ImportError(say(
            "transformer.py imports MultiHeadAttention from attention.py, which is not in this "
            "folder: keep the attention.py that came with the assignment next to transformer.py.",
            "transformer.py 从 attention.py 导入 MultiHeadAttention，但本文件夹里没有 attention.py："
            "把作业附带的 attention.py 和 transformer.py 放在一起。")) from None
    if exc.name == "transformer":
        raise ImportError(say(
            "transformer.py was not found next to test_transformer.py: put it in this folder and "
            "run `pytest` from here.",
            "在 test_transformer.py 旁边找不到 transformer.py：把它放进这个文件夹，并在这里运行 "
            "`pytest`。")) from None
    raise


ATOL = 1e-5


def close(got, expected, what):
    assert isinstance(got, torch.Tensor), say(f"{what}: expected a tensor, got {type(got).__name__}",
                                              f"{what}：应当是张量，得到的是 {type(got).__name__}")
    assert tuple(got.shape) == tuple(expected.shape), say(
        f"{what}: expected shape {tuple(expected.shape)}, got {tuple(got.shape)}",
        f"{what}：形状应为 {tuple(expected.shape)}，得到 {tuple(got.shape)}")
    diff = (got.double() - expected.double()).abs().max().item()
    assert diff <= ATOL + 1e-4 * expected.abs().max().item(), say(
        f"{what}: wrong values (largest difference {diff:.3g})",
        f"{what}：数值不对（最大差 {diff:.3g}）")


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
          say("PositionalEncoding(8, 0) on zeros (3, 5, 8): the result is P itself",
              "PositionalEncoding(8, 0) 作用于全零 (3, 5, 8)：结果就是 P 本身"))
    X = torch.randn(2, 4, 8)
    close(encoding(X), X + table(4, 8), say("PositionalEncoding on random X: X + P",
                                            "PositionalEncoding 作用于随机的 X：X + P"))


def test_positional_encoding_works_up_to_max_len():
    encoding = transformer.PositionalEncoding(6, 0.0, max_len=7).eval()
    close(encoding(torch.zeros(1, 7, 6)), table(7, 6).unsqueeze(0),
          say("a sequence exactly max_len long", "序列长度恰好等于 max_len"))


def test_positional_encoding_drops_out_only_in_training():
    encoding = transformer.PositionalEncoding(8, 0.5)
    X = torch.randn(4, 6, 8)
    encoding.eval()
    close(encoding(X), X + table(6, 8), say("eval mode: no dropout", "eval 模式：没有暂退法"))
    encoding.train()
    got = encoding(X)
    full = (X + table(6, 8)) / 0.5
    zero = got == 0
    assert zero.any() and not zero.all(), say(
        "training mode with dropout=0.5: some entries should be dropped (0) and some kept",
        "dropout=0.5 的训练模式：应当有一些元素被丢弃（为 0），另一些被保留")
    close(got[~zero], full[~zero], say(
        "training mode: each kept entry is (X + P) / (1 - p): dropout acts on the sum",
        "训练模式：每个保留的元素都是 (X + P) / (1 - p)：暂退法作用在和上"))


# -- PositionWiseFFN --------------------------------------------------------------------
def test_position_wise_ffn_is_two_dense_layers_with_a_relu():
    ffn = transformer.PositionWiseFFN(4, 6, 8)
    names = sorted(ffn.state_dict())
    assert names == ["dense1.bias", "dense1.weight", "dense2.bias", "dense2.weight"], say(
        f"the parameters should be dense1 and dense2 with biases, got {names}",
        f"参数应当是带偏置的 dense1 和 dense2，得到 {names}")
    X = torch.randn(2, 3, 4)
    W1, b1, W2, b2 = ffn.dense1.weight, ffn.dense1.bias, ffn.dense2.weight, ffn.dense2.bias
    expected = torch.clamp(X @ W1.T + b1, min=0) @ W2.T + b2
    close(ffn(X), expected.detach(), say("PositionWiseFFN(4, 6, 8) on X (2, 3, 4)",
                                         "PositionWiseFFN(4, 6, 8) 作用于 X (2, 3, 4)"))


# -- AddNorm ----------------------------------------------------------------------------
def test_add_norm_normalizes_the_residual_sum():
    add_norm = transformer.AddNorm(5, 0.0).eval()
    X, Y = torch.randn(2, 3, 5) * 3, torch.randn(2, 3, 5)
    close(add_norm(X, Y), layer_norm(X + Y), say("AddNorm(5, 0): the layer norm of X + Y",
                                                 "AddNorm(5, 0)：X + Y 的层规范化"))
    wide = transformer.AddNorm([3, 5], 0.0).eval()
    close(wide(X, Y), layer_norm(X + Y, axes=2), say(
        "AddNorm([3, 5], 0): normalized over the last two axes",
        "AddNorm([3, 5], 0)：在最后两个轴上规范化"))


def test_add_norm_drops_out_the_sublayer_output_only():
    add_norm = transformer.AddNorm(6, 0.5).train()
    X = torch.randn(4, 5, 6)
    close(add_norm(X, torch.zeros(4, 5, 6)), layer_norm(X), say(
        "AddNorm in training mode with Y = 0: dropout on Y changes nothing, so the result is "
        "the layer norm of X",
        "训练模式下 Y = 0 的 AddNorm：对 Y 做暂退法不改变任何东西，所以结果是 X 的层规范化"))


# -- TransformerEncoderBlock ------------------------------------------------------------
def _block(dropout=0.0):
    torch.manual_seed(0)
    return transformer.TransformerEncoderBlock(8, 8, 8, 8, [8], 8, 16, 2, dropout)


def test_transformer_encoder_block_shapes_and_parameters():
    block = _block().eval()
    out = block(torch.randn(3, 4, 8), torch.tensor([4, 2, 3]))
    assert tuple(out.shape) == (3, 4, 8), say(f"expected the output shape (3, 4, 8), got {tuple(out.shape)}",
                                               f"输出形状应为 (3, 4, 8)，得到 {tuple(out.shape)}")
    prefixes = sorted({name.split(".")[0] for name in block.state_dict()})
    assert prefixes == ["addnorm1", "addnorm2", "attention", "ffn"], say(
        f"the block's parts should be attention, addnorm1, ffn and addnorm2, got {prefixes}",
        f"编码器块的组成部分应当是 attention、addnorm1、ffn 和 addnorm2，得到 {prefixes}")


def test_transformer_encoder_block_keeps_padding_out():
    block = _block().eval()
    X = torch.randn(2, 5, 8)
    lengths = torch.tensor([2, 5])
    out = block(X, lengths)
    weights = block.attention.attention.attention_weights  # (batch * heads, 5, 5)
    assert torch.all(weights[:2, :, 2:] == 0), say(
        "the attention weights of example 0 (valid length 2) should be 0 at positions 2, 3, 4: "
        "does valid_lens reach the attention?",
        "样本 0（有效长度 2）的注意力权重在位置 2、3、4 应为 0：valid_lens 传到注意力里了吗？")
    changed = X.clone()
    changed[0, 4] += 10.0  # padding of example 0
    close(block(changed, lengths)[0, :2], out[0, :2], say(
        "changing a padding position of example 0 should not change its real positions",
        "改变样本 0 的填充位置不应改变它的真实位置"))


def test_transformer_encoder_block_is_deterministic_in_eval_mode():
    block = _block(dropout=0.5).eval()
    X, lengths = torch.randn(2, 4, 8), torch.tensor([3, 4])
    close(block(X, lengths), block(X, lengths), say(
        "eval mode with dropout=0.5: two calls should give the same result",
        "dropout=0.5 的 eval 模式：两次调用应当得到相同的结果"))
    block.train()
    assert not torch.equal(block(X, lengths), block(X, lengths)), say(
        "training mode with dropout=0.5: two calls should differ (dropout acts)",
        "dropout=0.5 的训练模式：两次调用应当不同（暂退法在起作用）")


def test_transformer_encoder_block_follows_the_books_order():
    block = _block().eval()
    X, lengths = torch.randn(2, 4, 8), torch.tensor([3, 4])
    with torch.no_grad():  # the book's order, from the block's own attention and FFN
        Y = layer_norm(X + block.attention(X, X, X, lengths))
        expected = layer_norm(Y + block.ffn(Y))
    close(block(X, lengths), expected, say(
        "the block should compute Y = addnorm1(X, attention(X, X, X, valid_lens)), then "
        "addnorm2(Y, ffn(Y))",
        "编码器块应当先计算 Y = addnorm1(X, attention(X, X, X, valid_lens))，再计算 "
        "addnorm2(Y, ffn(Y))"))


def test_transformer_encoder_block_passes_norm_shape_and_use_bias_on():
    block = transformer.TransformerEncoderBlock(6, 6, 6, 6, [4, 6], 6, 12, 3, 0.0, use_bias=True)
    shapes = {name: tuple(t.shape) for name, t in block.state_dict().items()}
    assert shapes.get("addnorm1.ln.weight") == (4, 6) and shapes.get("addnorm2.ln.weight") == (4, 6), say(
        "with norm_shape [4, 6] both add & norm layers normalize over (4, 6)",
        "norm_shape 为 [4, 6] 时，两个加法和规范化层都应在 (4, 6) 上规范化")
    assert "attention.W_q.bias" in shapes, say(
        "with use_bias=True the attention's layers have biases (pass use_bias on)",
        "use_bias=True 时注意力的各层带偏置（把 use_bias 传下去）")
    out = block.eval()(torch.randn(2, 4, 6), torch.tensor([2, 4]))
    assert tuple(out.shape) == (2, 4, 6)
