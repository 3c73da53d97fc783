"""The attention assignment's catalog of mistakes: realistic student mistakes, each a small
edit of the solution (solutions/attention.py).

Every entry names the part it costs, the function or module it lives in (`target`), and
says what the code does wrong as a clause that completes "your result is exactly what you
get if ..." (`en`, `zh`). The edits are (text of the solution, replacement) pairs; each text
must occur exactly once in the solution. `grader validate` grades every entry: it must lose
points in its part and be diagnosed as itself. docs/mistakes.md is this table in prose.

The sentences point at the concept and never give the line that fixes it. What calls what
and which targets make up a part come from the declaration (assignment.toml); the grader
reads this file through `grader.catalog.Catalog.of(assignment)`, never by importing it.
"""
from grader.catalog.mistakes import Mistake, output_tensor

# a small experiment per target, shown with a diagnosis of that part: what to run to see
# the problem for oneself (never the fixing line)
EXPERIMENTS = {
    "sequence_mask": (
        "Try sequence_mask(torch.arange(1., 13.).reshape(3, 4), torch.tensor([0, 2, 5]), value=-1) "
        "and check by hand which entries of each row should be kept.",
        "试试 sequence_mask(torch.arange(1., 13.).reshape(3, 4), torch.tensor([0, 2, 5]), value=-1)，"
        "逐行手算哪些位置应当保留。"),
    "masked_softmax": (
        "Try masked_softmax(torch.rand(2, 3, 4), torch.tensor([2, 3])) and "
        "masked_softmax(torch.rand(2, 2, 4), torch.tensor([[1, 3], [2, 4]])): print the weights, "
        "check which are 0 and that every row sums to 1.",
        "试试 masked_softmax(torch.rand(2, 3, 4), torch.tensor([2, 3])) 和 "
        "masked_softmax(torch.rand(2, 2, 4), torch.tensor([[1, 3], [2, 4]]))：打印权重，"
        "检查哪些为 0，以及每一行之和是否为 1。"),
    "AdditiveAttention": (
        "Build AdditiveAttention(key_size=2, query_size=20, num_hiddens=8, dropout=0.1), call it in "
        "eval mode on the book's shapes with valid_lens torch.tensor([2, 6]), and print the shape "
        "of each intermediate result and the stored attention_weights.",
        "构造 AdditiveAttention(key_size=2, query_size=20, num_hiddens=8, dropout=0.1)，在 eval "
        "模式下用书中的形状和有效长度 torch.tensor([2, 6]) 调用，打印每一步中间结果的形状和保存的 "
        "attention_weights。"),
    "DotProductAttention": (
        "Call DotProductAttention(0.5) in eval mode on queries (2, 1, 2), keys (2, 10, 2) and "
        "valid_lens torch.tensor([2, 6]); print attention_weights, then call it twice in train "
        "mode and compare.",
        "在 eval 模式下用查询 (2, 1, 2)、键 (2, 10, 2) 和有效长度 torch.tensor([2, 6]) 调用 "
        "DotProductAttention(0.5)，打印 attention_weights；再在 train 模式下调用两次并比较。"),
    "transpose_qkv": (
        "Try transpose_qkv(torch.arange(16.).reshape(2, 1, 8), 4) and check which numbers land in "
        "each row: row b*num_heads + i should hold head i of example b.",
        "试试 transpose_qkv(torch.arange(16.).reshape(2, 1, 8), 4)，看每一行得到了哪些数："
        "第 b*num_heads + i 行应当是样本 b 的第 i 个头。"),
    "transpose_output": (
        "Check that transpose_output(transpose_qkv(X, 4), 4) gives back X for "
        "X = torch.arange(48.).reshape(2, 3, 8).",
        "对 X = torch.arange(48.).reshape(2, 3, 8) 检查 transpose_output(transpose_qkv(X, 4), 4) "
        "是否还原出 X。"),
    "MultiHeadAttention": (
        "Build MultiHeadAttention with 2 heads, call it with valid_lens torch.tensor([1, 4]) in "
        "eval mode, and look at attention.attention_weights reshaped to (batch, heads, queries, "
        "keys): every head of example b should mask at example b's valid length.",
        "构造 2 个头的 MultiHeadAttention，在 eval 模式下以有效长度 torch.tensor([1, 4]) 调用，"
        "把 attention.attention_weights 变形为 (batch, heads, queries, keys) 查看："
        "样本 b 的每个头都应按样本 b 的有效长度掩蔽。"),
}


def _dot_return(new):
    """(old, new) for DotProductAttention's last line; AdditiveAttention ends with the same line,
    so the text to replace runs on to the next definition to be unique."""
    tail = "\n        ### END SOLUTION\n\n\ndef transpose_qkv"
    return ("        return torch.bmm(self.dropout(self.attention_weights), values)  # (B, Q, V)" + tail,
            "        " + new + tail)


def _additive_end(new):
    """(old, new) for AdditiveAttention's last two lines (made unique by what follows)."""
    tail = "\n        ### END SOLUTION\n\n\nclass DotProductAttention"
    return ("        self.attention_weights = masked_softmax(scores, valid_lens)  # (B, Q, K)\n"
            "        return torch.bmm(self.dropout(self.attention_weights), values)  # (B, Q, V)" + tail,
            new + tail)


def _dot_end(new):
    """(old, new) for DotProductAttention's last two lines."""
    tail = "\n        ### END SOLUTION\n\n\ndef transpose_qkv"
    return ("        self.attention_weights = masked_softmax(scores, valid_lens)  # (B, Q, K)\n"
            "        return torch.bmm(self.dropout(self.attention_weights), values)  # (B, Q, V)" + tail,
            new + tail)


MASK_LINE = "mask = positions[None, :] < valid_len[:, None]"
FILL = "valid_lens, value=-1e6)"
SOFTMAX_LAST = "return nn.functional.softmax(X.reshape(shape), dim=-1)"
TANH = "features = torch.tanh(queries.unsqueeze(2) + keys.unsqueeze(1))"
SCORES = "scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(d)"
SPLIT = "    X = X.permute(0, 2, 1, 3)  # (B, heads, n, hidden/heads)\n"
MERGE = "    X = X.permute(0, 2, 1, 3)  # (B, n, heads, hidden/heads)\n"
REPEAT = "valid_lens = torch.repeat_interleave(valid_lens, repeats=self.num_heads, dim=0)"


def _infer_fill(probe, raw):
    """The constant that masked scores were replaced by, read from masked_softmax's weights:
    with scores x and a fill c, a masked key's weight over the first key's is exp(c - x_0).
    A value only when every row that has both kinds of key says the same one."""
    import math

    import torch
    if probe.get("target") != "masked_softmax" or not isinstance(raw, dict) or not raw.get("ok"):
        return None
    args = list(probe.get("args") or [])
    X = args[0] if args else None
    lens = args[1] if len(args) > 1 else (probe.get("kwargs") or {}).get("valid_lens")
    weights = output_tensor(raw)
    if not all(isinstance(t, torch.Tensor) for t in (X, lens, weights)) or X.dim() != 3 \
            or weights.shape != X.shape or not X.is_floating_point():
        return None
    lens = (torch.repeat_interleave(lens, X.shape[1]) if lens.dim() == 1 else lens.reshape(-1))
    rows, w = X.reshape(-1, X.shape[-1]).double(), weights.reshape(-1, X.shape[-1]).double()
    if lens.numel() != rows.shape[0]:
        return None
    found = []
    for row, length in enumerate(lens.tolist()):
        length = int(length)
        if not 1 <= length < rows.shape[1]:
            continue
        kept, masked = float(w[row, 0]), w[row, length:]
        if not (kept > 0 and bool((masked > 0).all()) and math.isfinite(kept)):
            return None  # a masked key without weight: the fill was small enough there
        found += [float(rows[row, 0]) + math.log(float(m) / kept) for m in masked.tolist()]
    if not found:
        return None
    value = float(f"{sorted(found)[len(found) // 2]:.3g}")
    if abs(value) < 1e-3:
        return None  # 0, within rounding: softmax-mask-zero, never an invented -5.87e-09
    if not -1000 <= value < 0 or any(abs(c - value) > 1e-3 * max(1.0, abs(value)) for c in found):
        return None
    return f"{value:g}"


def _fill(value):
    """softmax-fill-small for one fill value (a negative number too close to 0)."""
    fill = float(value)
    if not (-1000 <= fill < 0) or f"{fill:g}" != value:
        raise ValueError(value)
    return (f"masked scores are set to {value}, which is not small enough to vanish in the "
            f"softmax",
            f"被掩蔽的分数设为 {value}，它在 softmax 中不够小，不会消失",
            ((FILL, f"valid_lens, value={value})"),))


def _infer_axis(probe, raw):
    """The axis masked_softmax's weights sum to 1 over, when it is not the keys' (the last):
    "1" (the queries), "0" (the batch) or "rows" (the flattened batch x queries rows)."""
    import torch
    weights = output_tensor(raw) if probe.get("target") == "masked_softmax" else None
    if not isinstance(weights, torch.Tensor) or weights.dim() != 3 or \
            not weights.is_floating_point() or weights.numel() == 0:
        return None
    w = weights.double()

    def ones(sums):
        return bool(torch.allclose(sums, torch.ones_like(sums), atol=1e-3))

    if ones(w.sum(-1)):
        return None
    # all that fit: with one example, the rows are the queries
    return [value for value, sums in (("1", w.sum(1)), ("0", w.sum(0)),
                                      ("rows", w.reshape(-1, w.shape[-1]).sum(0)))
            if ones(sums)] or None


def _axis(value):
    """softmax-wrong-axis for one wrong axis."""
    none_branch = "    if valid_lens is None:\n        return nn.functional.softmax(X, dim=-1)\n"
    said = {
        "1": ("the softmax is taken over axis 1 (the queries) instead of the last axis (the keys)",
              "softmax 沿第 1 维（查询）计算，而不是沿最后一维（键）",
              "nn.functional.softmax(X.reshape(shape), dim=1)", "nn.functional.softmax(X, dim=1)"),
        "0": ("the softmax is taken over axis 0 (the batch) instead of the last axis (the keys)",
              "softmax 沿第 0 维（批量）计算，而不是沿最后一维（键）",
              "nn.functional.softmax(X.reshape(shape), dim=0)", "nn.functional.softmax(X, dim=0)"),
        "rows": ("the softmax is taken down the columns of the scores flattened to (batch x "
                 "queries, keys), across examples and queries, instead of along each row (over "
                 "the keys)",
                 "softmax 沿展平为 (批量 x 查询, 键) 的分数的列计算，跨越了样本和查询，"
                 "而不是沿每一行（对键）",
                 "nn.functional.softmax(X, dim=0).reshape(shape)",
                 "nn.functional.softmax(X.reshape(-1, X.shape[-1]), dim=0).reshape(X.shape)"),
    }
    if value not in said:
        raise ValueError(value)
    en, zh, masked, unmasked = said[value]
    return en, zh, ((SOFTMAX_LAST, "return " + masked),
                    (none_branch, none_branch.replace("nn.functional.softmax(X, dim=-1)", unmasked)))


ADDITIVE_LAYERS = ("W_k", "W_q", "w_v")


def _infer_biases(probe, raw):
    """Which of AdditiveAttention's layers have a bias, read from the module's parameter
    names (state_keys): the model has none."""
    if probe.get("target") != "AdditiveAttention" or not isinstance(raw, dict):
        return None
    keys = raw.get("state_keys")
    if not isinstance(keys, list):
        return None
    names = {str(k[0]) for k in keys if isinstance(k, (list, tuple)) and k}
    layers = [layer for layer in ADDITIVE_LAYERS if f"{layer}.bias" in names]
    if not layers or layers == ["w_v"] or not all(f"{l}.weight" in names for l in ADDITIVE_LAYERS):
        return None  # no bias, or the catalog's own additive-bias-w_v
    return "+".join(layers)


def _biases(value):
    """additive-bias for one set of layers built with nn.Linear's default bias=True."""
    layers = value.split("+")
    if not layers or layers != [l for l in ADDITIVE_LAYERS if l in layers]:
        raise ValueError(value)
    names = " and ".join(layers) if len(layers) < 3 else "W_k, W_q and w_v"
    zh = "、".join(layers)
    built = {"W_k": "self.W_k = nn.Linear(key_size, num_hiddens, bias=False)",
             "W_q": "self.W_q = nn.Linear(query_size, num_hiddens, bias=False)",
             "w_v": "self.w_v = nn.Linear(num_hiddens, 1, bias=False)"}
    verb = "is" if len(layers) == 1 else "are"
    return (f"{names} {verb} built with a bias (nn.Linear's default; the model has none)",
            f"{zh} 带了偏置（nn.Linear 的默认设置；模型中没有偏置）",
            tuple((built[l], built[l].replace(", bias=False)", ")")) for l in layers))


M = Mistake
MISTAKES = [
    # -- sequence_mask -------------------------------------------------------------------
    M("mask-off-by-one", "sequence_mask", "sequence_mask",
      "position t is kept when t <= valid_len (one position too many: positions count from 0)",
      "当 t <= valid_len 时保留位置 t（多保留了一个位置：位置从 0 开始编号）",
      ((MASK_LINE, "mask = positions[None, :] <= valid_len[:, None]"),)),
    M("mask-off-by-one-short", "sequence_mask", "sequence_mask",
      "position t is kept only when t < valid_len - 1 (one position too few: valid_len "
      "positions, 0 to valid_len - 1, are valid)",
      "只有当 t < valid_len - 1 时才保留位置 t（少保留了一个位置：有效的是 0 到 valid_len - 1 "
      "这 valid_len 个位置）",
      ((MASK_LINE, "mask = positions[None, :] < valid_len[:, None] - 1"),)),
    M("mask-maxlen-from-batch", "sequence_mask", "sequence_mask",
      "the number of positions is read from the batch axis (axis 0) instead of axis 1",
      "位置的个数取自批量维（第 0 维）而不是第 1 维",
      (("maxlen = X.size(1)", "maxlen = X.size(0)"),)),
    M("mask-maxlen-from-lengths", "sequence_mask", "sequence_mask",
      "the number of positions is taken from the largest valid length instead of from X",
      "位置的个数取自最大的有效长度，而不是取自 X 的形状",
      (("maxlen = X.size(1)", "maxlen = int(valid_len.max())"),)),
    M("mask-ignores-value", "sequence_mask", "sequence_mask",
      "the `value` argument is ignored (masked entries always become 0)",
      "忽略了参数 `value`（被掩蔽的元素总是变成 0）",
      (("X[~mask] = value", "X[~mask] = 0"),)),
    M("mask-inverted", "sequence_mask", "sequence_mask",
      "the valid positions are replaced instead of the padding after them",
      "替换的是有效位置，而不是它们之后的填充位置",
      (("X[~mask] = value", "X[mask] = value"),)),
    M("mask-no-column", "sequence_mask", "sequence_mask",
      "the positions are compared with valid_len as a row, not as a column (one length per row "
      "of X needs shape (B, 1) to broadcast against (1, T))",
      "位置与作为行向量的 valid_len 比较，而不是作为列向量（每行一个长度需要形状 (B, 1) 才能与 "
      "(1, T) 广播）",
      ((MASK_LINE, "mask = positions[None, :] < valid_len"),)),
    M("mask-returns-mask", "sequence_mask", "sequence_mask",
      "the boolean mask is returned instead of the masked X",
      "返回的是布尔掩码，而不是掩蔽后的 X",
      (("    return X\n    ### END SOLUTION", "    return mask\n    ### END SOLUTION"),)),
    # -- masked_softmax ------------------------------------------------------------------
    M("softmax-repeat", "masked_softmax", "masked_softmax",
      "1-D valid_lens is repeated as a whole vector, one copy after another, instead of each "
      "example's length once per query in a row (query q of example b then gets another "
      "example's length)",
      "一维的 valid_lens 被整体重复（一份接一份），而不是把每个样本的长度按查询个数连续重复"
      "（样本 b 的查询 q 因而得到了别的样本的有效长度）",
      (("valid_lens = torch.repeat_interleave(valid_lens, shape[1])",
        "valid_lens = valid_lens.repeat(shape[1])"),)),
    M("softmax-neg-inf", "masked_softmax", "masked_softmax",
      "masked scores are set to -inf (a row whose valid length is 0 then becomes NaN instead "
      "of uniform)",
      "被掩蔽的分数设为 -inf（有效长度为 0 的行因而变成 NaN，而不是均匀分布）",
      ((FILL, "valid_lens, value=float('-inf'))"),)),
    M("softmax-mask-zero", "masked_softmax", "masked_softmax",
      "masked scores are set to 0, which is not small enough to vanish in the softmax",
      "被掩蔽的分数设为 0，它在 softmax 中不够小，不会消失",
      ((FILL, "valid_lens)"),)),
    M("softmax-fill-positive", "masked_softmax", "masked_softmax",
      "masked scores are set to a very large positive number, so the masked keys take all the "
      "weight",
      "被掩蔽的分数设为一个很大的正数，于是被掩蔽的键拿走了全部权重",
      ((FILL, "valid_lens, value=1e6)"),)),
    M("softmax-fill-small", "masked_softmax", "masked_softmax", *_fill("-1"),
      infer=_infer_fill, param=_fill),  # any fill from -1000 to 0 (-10, -1e2): its own value
    M("softmax-wrong-axis", "masked_softmax", "masked_softmax", *_axis("1"),
      infer=_infer_axis, param=_axis),  # whichever axis the weights sum to 1 over
    M("softmax-log", "masked_softmax", "masked_softmax",
      "log_softmax is used, so the weights are log-probabilities",
      "用了 log_softmax，权重因而是对数概率",
      ((SOFTMAX_LAST, "return nn.functional.log_softmax(X.reshape(shape), dim=-1)"),)),
    M("softmax-no-2d-case", "masked_softmax", "masked_softmax",
      "2-D valid_lens (one length per query) is treated like 1-D lengths and repeated",
      "二维的 valid_lens（每个查询一个长度）被当作一维长度处理并重复了",
      (("    if valid_lens.dim() == 1:\n"
        "        valid_lens = torch.repeat_interleave(valid_lens, shape[1])  # (B,) -> (B*Q,)\n"
        "    else:\n        valid_lens = valid_lens.reshape(-1)  # (B, Q) -> (B*Q,)\n",
        "    valid_lens = torch.repeat_interleave(valid_lens, shape[1])\n"),)),
    M("softmax-2d-transposed", "masked_softmax", "masked_softmax",
      "2-D valid_lens is flattened query by query across the batch, so row (b, q) gets the "
      "length of another query or example",
      "二维的 valid_lens 按“先查询后样本”的顺序展平，于是第 (b, q) 行得到了别的查询或样本的长度",
      (("valid_lens = valid_lens.reshape(-1)  # (B, Q) -> (B*Q,)",
        "valid_lens = valid_lens.t().reshape(-1)"),)),
    M("softmax-none-unhandled", "masked_softmax", "masked_softmax",
      "valid_lens=None (no masking) is not handled",
      "没有处理 valid_lens=None（不掩蔽）的情况",
      (("    if valid_lens is None:\n        return nn.functional.softmax(X, dim=-1)\n", ""),)),
    M("softmax-zero-after", "masked_softmax", "masked_softmax",
      "the masked weights are set to 0 after the softmax, so the rows no longer sum to 1",
      "在 softmax 之后才把被掩蔽的权重置 0，各行之和因而不再是 1",
      ((SOFTMAX_LAST,
        "keep = (X.reshape(shape) != -1e6).to(X.dtype)\n"
        "    return nn.functional.softmax(X.reshape(shape) * keep, dim=-1) * keep"),)),
    M("softmax-float32-output", "masked_softmax", "masked_softmax",
      "the scores are cast to float32, so float64 inputs come back as float32",
      "分数被转换成了 float32，float64 的输入因而以 float32 返回",
      ((SOFTMAX_LAST, "return nn.functional.softmax(X.reshape(shape).float(), dim=-1)"),)),
    M("softmax-detached", "masked_softmax", "masked_softmax",
      "the scores are detached from autograd before masking, so no gradient reaches them",
      "掩蔽前把分数从自动求导中分离（detach）了，梯度因而传不到它们",
      (("X = sequence_mask(X.reshape(-1, shape[-1]), valid_lens, value=-1e6)",
        "X = sequence_mask(X.detach().reshape(-1, shape[-1]), valid_lens, value=-1e6)"),)),
    # -- AdditiveAttention ---------------------------------------------------------------
    M("additive-squeeze-all", "AdditiveAttention", "AdditiveAttention",
      "squeeze() without an axis also removes batch, query or key axes of size 1",
      "不带参数的 squeeze() 把大小为 1 的批量、查询或键维度也去掉了",
      (("scores = self.w_v(features).squeeze(-1)", "scores = self.w_v(features).squeeze()"),)),
    M("additive-no-tanh", "AdditiveAttention", "AdditiveAttention",
      "tanh is left out, so the score w_v(W_q q + W_k k) is linear",
      "漏掉了 tanh，分数 w_v(W_q q + W_k k) 因而是线性的",
      ((TANH, "features = queries.unsqueeze(2) + keys.unsqueeze(1)"),)),
    M("additive-relu", "AdditiveAttention", "AdditiveAttention",
      "ReLU is used where additive attention has tanh",
      "在加性注意力应当用 tanh 的地方用了 ReLU",
      ((TANH, "features = torch.relu(queries.unsqueeze(2) + keys.unsqueeze(1))"),)),
    M("additive-swapped-unsqueeze", "AdditiveAttention", "AdditiveAttention",
      "the unsqueeze axes are swapped, so the features are laid out keys x queries",
      "unsqueeze 的维度对调了，特征因而按“键 x 查询”排列",
      ((TANH, "features = torch.tanh(queries.unsqueeze(1) + keys.unsqueeze(2))"),)),
    M("additive-bias", "AdditiveAttention", "AdditiveAttention", *_biases("W_q"),
      infer=_infer_biases, param=_biases),  # any set of its layers with a bias
    M("additive-bias-w_v", "AdditiveAttention", "AdditiveAttention",
      "w_v is built with a bias (the model has none)",
      "w_v 带了偏置（模型中没有偏置）",
      (("self.w_v = nn.Linear(num_hiddens, 1, bias=False)", "self.w_v = nn.Linear(num_hiddens, 1)"),)),
    M("additive-swapped-sizes", "AdditiveAttention", "AdditiveAttention",
      "W_k is built from query_size and W_q from key_size",
      "W_k 按 query_size 构造，而 W_q 按 key_size 构造",
      (("self.W_k = nn.Linear(key_size, num_hiddens, bias=False)\n"
        "        self.W_q = nn.Linear(query_size, num_hiddens, bias=False)",
        "self.W_k = nn.Linear(query_size, num_hiddens, bias=False)\n"
        "        self.W_q = nn.Linear(key_size, num_hiddens, bias=False)"),)),
    M("additive-masks-nothing", "AdditiveAttention", "AdditiveAttention",
      "valid_lens is not passed on to the masked softmax, so nothing is masked",
      "valid_lens 没有传给掩蔽softmax，于是什么也没有被掩蔽",
      (_additive_end(
          "        self.attention_weights = masked_softmax(scores, None)\n"
          "        return torch.bmm(self.dropout(self.attention_weights), values)"),)),
    M("additive-weights-not-stored", "AdditiveAttention", "AdditiveAttention",
      "the attention weights are kept in a local variable, not in self.attention_weights",
      "注意力权重只存在局部变量里，没有存到 self.attention_weights",
      (_additive_end(
          "        attention_weights = masked_softmax(scores, valid_lens)\n"
          "        return torch.bmm(self.dropout(attention_weights), values)"),)),
    M("additive-dropout-stored", "AdditiveAttention", "AdditiveAttention",
      "the weights are stored after dropout (the stored weights should be the ones before it)",
      "保存的是暂退法之后的权重（应当保存暂退法之前的权重）",
      (_additive_end(
          "        self.attention_weights = self.dropout(masked_softmax(scores, valid_lens))\n"
          "        return torch.bmm(self.attention_weights, values)"),)),
    M("additive-no-dropout", "AdditiveAttention", "AdditiveAttention",
      "dropout is never applied",
      "从未使用暂退法",
      (_additive_end(
          "        self.attention_weights = masked_softmax(scores, valid_lens)\n"
          "        return torch.bmm(self.attention_weights, values)"),)),
    # -- DotProductAttention -------------------------------------------------------------
    M("dot-no-scale", "DotProductAttention", "DotProductAttention",
      "the scores are not divided by sqrt(d)",
      "分数没有除以 sqrt(d)",
      ((SCORES, "scores = torch.bmm(queries, keys.transpose(1, 2))"),)),
    M("dot-scale-by-d", "DotProductAttention", "DotProductAttention",
      "the scores are divided by d instead of sqrt(d)",
      "分数除以了 d，而不是 sqrt(d)",
      ((SCORES, "scores = torch.bmm(queries, keys.transpose(1, 2)) / d"),)),
    M("dot-scale-by-keys", "DotProductAttention", "DotProductAttention",
      "d is taken from the number of keys instead of the feature size of the queries",
      "d 取自键的个数，而不是查询的特征维度",
      (("d = queries.shape[-1]", "d = keys.shape[1]"),)),
    M("dot-scale-by-ndim", "DotProductAttention", "DotProductAttention",
      "the scores are divided by the square root of the number of axes of the queries (3) "
      "instead of sqrt(d), d being their feature size",
      "分数除以的是查询的轴数（3）的平方根，而不是 sqrt(d)（d 为查询的特征维度）",
      (("d = queries.shape[-1]", "d = queries.dim()"),)),  # seen in a real submission
    M("dot-scale-after-softmax", "DotProductAttention", "DotProductAttention",
      "the weights are divided by sqrt(d) after the softmax instead of the scores before it",
      "在 softmax 之后才把权重除以 sqrt(d)，而不是在之前缩放分数",
      ((SCORES, "scores = torch.bmm(queries, keys.transpose(1, 2))"),
       _dot_end("        self.attention_weights = masked_softmax(scores, valid_lens) / math.sqrt(d)\n"
                "        return torch.bmm(self.dropout(self.attention_weights), values)"))),
    M("dot-masks-nothing", "DotProductAttention", "DotProductAttention",
      "valid_lens is not passed on to the masked softmax, so nothing is masked",
      "valid_lens 没有传给掩蔽softmax，于是什么也没有被掩蔽",
      (_dot_end("        self.attention_weights = masked_softmax(scores, None)\n"
                "        return torch.bmm(self.dropout(self.attention_weights), values)"),)),
    M("dot-weights-not-stored", "DotProductAttention", "DotProductAttention",
      "the attention weights are kept in a local variable, not in self.attention_weights",
      "注意力权重只存在局部变量里，没有存到 self.attention_weights",
      (_dot_end("        attention_weights = masked_softmax(scores, valid_lens)\n"
                "        return torch.bmm(self.dropout(attention_weights), values)"),)),
    M("dot-dropout-stored", "DotProductAttention", "DotProductAttention",
      "the weights are stored after dropout (the stored weights should be the ones before it)",
      "保存的是暂退法之后的权重（应当保存暂退法之前的权重）",
      (_dot_end("        self.attention_weights = self.dropout(masked_softmax(scores, valid_lens))\n"
                "        return torch.bmm(self.attention_weights, values)"),)),
    M("dot-no-dropout", "DotProductAttention", "DotProductAttention",
      "dropout is never applied",
      "从未使用暂退法",
      (_dot_return("return torch.bmm(self.attention_weights, values)"),)),
    M("dot-functional-dropout", "DotProductAttention", "DotProductAttention",
      "dropout is applied as a function that does not know the module is in eval mode",
      "暂退法以函数形式调用，它不知道模块处于 eval 模式",
      (_dot_return("return torch.bmm(nn.functional.dropout(self.attention_weights, "
                   "self.dropout.p), values)"),)),
    M("dot-dropout-on-output", "DotProductAttention", "DotProductAttention",
      "dropout is applied to the output instead of the attention weights",
      "暂退法作用在输出上，而不是注意力权重上",
      (_dot_return("return self.dropout(torch.bmm(self.attention_weights, values))"),)),
    M("dot-default-none-missing", "DotProductAttention", "DotProductAttention",
      "valid_lens is a required argument (it should default to None)",
      "valid_lens 是必填参数（它应当默认为 None）",
      (("def forward(self, queries, keys, values, valid_lens=None):",
        "def forward(self, queries, keys, values, valid_lens):"),)),
    M("dot-keys-not-transposed", "DotProductAttention", "DotProductAttention",
      "the keys are multiplied without being transposed, which only has the right shape when "
      "d equals the number of keys",
      "键没有转置就参与了相乘，只有当 d 恰好等于键的个数时形状才对",
      ((SCORES, "scores = torch.bmm(queries, keys) / math.sqrt(d)"),)),
    # -- transpose -----------------------------------------------------------------------
    M("transpose-no-permute", "transpose", "transpose_qkv",
      "the heads are split with reshape alone, without moving the head axis next to the "
      "batch axis first",
      "只用 reshape 拆分多个头，没有先把头所在的维度移到批量维旁边",
      ((SPLIT, ""),)),
    M("transpose-head-major", "transpose", "transpose_qkv",
      "the heads are stacked head-major (row h*B + b) instead of the book's order (row "
      "b*num_heads + h)",
      "多个头按“头优先”堆叠（第 h*B + b 行），而不是书中的顺序（第 b*num_heads + h 行）",
      ((SPLIT + "    return X.reshape(-1, X.shape[2], X.shape[3])",
        "    X = X.permute(2, 0, 1, 3)\n    return X.reshape(-1, X.shape[2], X.shape[3])"),)),
    M("transpose-heads-interleaved", "transpose", "transpose_qkv",
      "the features are dealt out to the heads one by one in turn instead of in consecutive "
      "blocks",
      "特征被轮流逐个分给各个头，而不是按连续的块划分",
      (("X = X.reshape(X.shape[0], X.shape[1], num_heads, -1)  # (B, n, heads, hidden/heads)",
        "X = X.reshape(X.shape[0], X.shape[1], -1, num_heads).transpose(2, 3)"),)),
    M("transpose-output-no-permute", "transpose", "transpose_output",
      "the heads are merged with reshape alone, without moving the head axis back first",
      "只用 reshape 合并多个头，没有先把头所在的维度移回去",
      ((MERGE, ""),)),
    M("transpose-output-head-major", "transpose", "transpose_output",
      "the heads are merged as if they were stacked head-major (row h*B + b)",
      "合并多个头时把它们当作按“头优先”堆叠（第 h*B + b 行）",
      (("X = X.reshape(-1, num_heads, X.shape[1], X.shape[2])  # (B, heads, n, hidden/heads)\n"
        + MERGE,
        "X = X.reshape(num_heads, -1, X.shape[1], X.shape[2]).permute(1, 2, 0, 3)\n"),)),
    # -- MultiHeadAttention --------------------------------------------------------------
    M("mha-repeat", "MultiHeadAttention", "MultiHeadAttention",
      "valid_lens is repeated as a whole, one copy after another, so head h of example b gets "
      "another example's length (each example's length must be repeated once per head in a row)",
      "valid_lens 被整体重复（一份接一份），于是样本 b 的第 h 个头得到了别的样本的有效长度"
      "（每个样本的长度应当按头数连续重复）",
      ((REPEAT, "valid_lens = valid_lens.repeat(self.num_heads) if valid_lens.dim() == 1 "
                "else valid_lens.repeat(self.num_heads, 1)"),)),
    M("mha-interleave-no-dim", "MultiHeadAttention", "MultiHeadAttention",
      "2-D valid_lens is flattened while being repeated per head (the repetition must be "
      "along axis 0 only)",
      "按头重复时把二维的 valid_lens 展平了（只应沿第 0 维重复）",
      ((REPEAT, "valid_lens = torch.repeat_interleave(valid_lens, repeats=self.num_heads)"),)),
    M("mha-none-unhandled", "MultiHeadAttention", "MultiHeadAttention",
      "valid_lens=None is repeated per head like a tensor instead of being passed on as None",
      "valid_lens=None 被当作张量按头重复，而不是原样传下去",
      (("        if valid_lens is not None:\n            # (B,) -> (B*h,) or (B, Q) -> (B*h, Q)\n"
        "            " + REPEAT, "        " + REPEAT),)),
    M("mha-no-output-projection", "MultiHeadAttention", "MultiHeadAttention",
      "the output projection W_o is left out",
      "漏掉了输出投影 W_o",
      (("return self.W_o(output_concat)", "return output_concat"),)),
    M("mha-ignores-bias", "MultiHeadAttention", "MultiHeadAttention",
      "W_q ignores the `bias` argument",
      "W_q 忽略了参数 `bias`",
      (("self.W_q = nn.Linear(query_size, num_hiddens, bias=bias)",
        "self.W_q = nn.Linear(query_size, num_hiddens, bias=False)"),)),
    M("mha-no-value-projection", "MultiHeadAttention", "MultiHeadAttention",
      "the values are split into heads without going through W_v",
      "值没有经过 W_v 就被拆分成多个头",
      (("values = transpose_qkv(self.W_v(values), self.num_heads)",
        "values = transpose_qkv(values, self.num_heads)"),)),
    M("mha-swapped-projections", "MultiHeadAttention", "MultiHeadAttention",
      "W_q is applied to the keys and W_k to the queries",
      "W_q 用在了键上，W_k 用在了查询上",
      (("queries = transpose_qkv(self.W_q(queries), self.num_heads)",
        "queries = transpose_qkv(self.W_k(queries), self.num_heads)"),
       ("keys = transpose_qkv(self.W_k(keys), self.num_heads)",
        "keys = transpose_qkv(self.W_q(keys), self.num_heads)"))),
    M("mha-dropout-missing", "MultiHeadAttention", "MultiHeadAttention",
      "self.attention is built without the dropout rate, so dropout never acts on the weights",
      "构造 self.attention 时没有传入暂退概率，暂退法因而从不作用于权重",
      (("self.attention = DotProductAttention(dropout)", "self.attention = DotProductAttention(0.0)"),)),
    M("mha-head-major", "MultiHeadAttention", "MultiHeadAttention",
      "the heads are stacked head-major (row h*B + b) with the lengths repeated to match: the "
      "output is right, but attention.attention_weights is in another order than the book's "
      "(row b*num_heads + h), which its heatmaps rely on",
      "多个头按“头优先”堆叠（第 h*B + b 行），有效长度也相应重复：输出是对的，但 "
      "attention.attention_weights 的顺序不是书中的（第 b*num_heads + h 行），而书中的热图依赖这个顺序",
      ((SPLIT + "    return X.reshape(-1, X.shape[2], X.shape[3])",
        "    X = X.permute(2, 0, 1, 3)\n    return X.reshape(-1, X.shape[2], X.shape[3])"),
       ("X = X.reshape(-1, num_heads, X.shape[1], X.shape[2])  # (B, heads, n, hidden/heads)\n"
        + MERGE,
        "X = X.reshape(num_heads, -1, X.shape[1], X.shape[2]).permute(1, 2, 0, 3)\n"),
       (REPEAT, "valid_lens = valid_lens.repeat(self.num_heads) if valid_lens.dim() == 1 "
                "else valid_lens.repeat(self.num_heads, 1)"))),
    # -- GPU -----------------------------------------------------------------------------
    M("gpu-arange-no-device", "GPU", "sequence_mask",
      "the positions are created without saying on which device, so they are on the CPU "
      "whatever device X is on",
      "创建位置张量时没有指定设备，于是无论 X 在哪个设备上，它都在 CPU 上",
      (("positions = torch.arange(maxlen, dtype=torch.float32, device=X.device)",
        "positions = torch.arange(maxlen, dtype=torch.float32)"),)),
]


# what docs/mistakes.md says of this assignment in its own words (grader validate --docs)
DOCS = {
    "spread": "(a `sequence_mask` bug in `masked_softmax` and the attentions)",
    "alternatives": "the book's own d2l 0.17 code, the 1.0 edition's `nn.LazyLinear`, a "
                    "non-mutating one with `torch.where`/`matmul`/`view`, einsum with "
                    "`masked_fill` and the dtype's minimum, Python loops, and one that scales "
                    "the queries first and builds the mask by arithmetic.",
}
