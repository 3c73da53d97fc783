"""The attention assignment's catalog of mistakes: realistic student mistakes, each a small
edit of the solution (solutions/attention.py).

Every entry names the part it costs, the function or module it lives in (`target`), and
says what the code does wrong as a clause that completes "your result is exactly what you
get if ...", in English (N_, or an i18n.Said with fields: its Chinese is in
locale/zh_CN/LC_MESSAGES/assignment.po). The edits are (text of the solution, replacement) pairs; each text
must occur exactly once in the solution. `grader validate` grades every entry: it must lose
points in its part and be diagnosed as itself. docs/mistakes.md is this table in prose.

The sentences point at the concept and never give the line that fixes it. What calls what
and which targets make up a part come from the declaration (assignment.toml); the grader
reads this file through `grader.catalog.Catalog.of(assignment)`, never by importing it.
"""
from grader.catalog.mistakes import Mistake, output_tensor
from grader.i18n import N_, Said

# a small experiment per target, shown with a diagnosis of that part: what to run to see
# the problem for oneself (never the fixing line)
EXPERIMENTS = {
    "sequence_mask": N_(
        "Try sequence_mask(torch.arange(1., 13.).reshape(3, 4), torch.tensor([0, 2, 5]), value=-1) "
        "and check by hand which entries of each row should be kept."),
    "masked_softmax": N_(
        "Try masked_softmax(torch.rand(2, 3, 4), torch.tensor([2, 3])) and "
        "masked_softmax(torch.rand(2, 2, 4), torch.tensor([[1, 3], [2, 4]])): print the weights, "
        "check which are 0 and that every row sums to 1."),
    "AdditiveAttention": N_(
        "Build AdditiveAttention(key_size=2, query_size=20, num_hiddens=8, dropout=0.1), call it in "
        "eval mode on the book's shapes with valid_lens torch.tensor([2, 6]), and print the shape "
        "of each intermediate result and the stored attention_weights."),
    "DotProductAttention": N_(
        "Call DotProductAttention(0.5) in eval mode on queries (2, 1, 2), keys (2, 10, 2) and "
        "valid_lens torch.tensor([2, 6]); print attention_weights, then call it twice in train "
        "mode and compare."),
    "transpose_qkv": N_(
        "Try transpose_qkv(torch.arange(16.).reshape(2, 1, 8), 4) and check which numbers land in "
        "each row: row b*num_heads + i should hold head i of example b."),
    "transpose_output": N_(
        "Check that transpose_output(transpose_qkv(X, 4), 4) gives back X for "
        "X = torch.arange(48.).reshape(2, 3, 8)."),
    "MultiHeadAttention": N_(
        "Build MultiHeadAttention with 2 heads, call it with valid_lens torch.tensor([1, 4]) in "
        "eval mode, and look at attention.attention_weights reshaped to (batch, heads, queries, "
        "keys): every head of example b should mask at example b's valid length."),
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
    return (Said.of(N_("masked scores are set to {value}, which is not small enough to vanish "
                       "in the softmax"), value=value),
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
        "1": (N_("the softmax is taken over axis 1 (the queries) instead of the last axis (the "
                 "keys)"),
              "nn.functional.softmax(X.reshape(shape), dim=1)", "nn.functional.softmax(X, dim=1)"),
        "0": (N_("the softmax is taken over axis 0 (the batch) instead of the last axis (the "
                 "keys)"),
              "nn.functional.softmax(X.reshape(shape), dim=0)", "nn.functional.softmax(X, dim=0)"),
        "rows": (N_("the softmax is taken down the columns of the scores flattened to (batch x "
                    "queries, keys), across examples and queries, instead of along each row "
                    "(over the keys)"),
                 "nn.functional.softmax(X, dim=0).reshape(shape)",
                 "nn.functional.softmax(X.reshape(-1, X.shape[-1]), dim=0).reshape(X.shape)"),
    }
    if value not in said:
        raise ValueError(value)
    what, masked, unmasked = said[value]
    return what, ((SOFTMAX_LAST, "return " + masked),
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
    names = {1: lambda: layers[0],
             2: lambda: Said.of(N_("{first} and {second}"), first=layers[0], second=layers[1]),
             3: lambda: Said.of(N_("{first}, {second} and {third}"), first=layers[0],
                                second=layers[1], third=layers[2])}[len(layers)]()
    built = {"W_k": "self.W_k = nn.Linear(key_size, num_hiddens, bias=False)",
             "W_q": "self.W_q = nn.Linear(query_size, num_hiddens, bias=False)",
             "w_v": "self.w_v = nn.Linear(num_hiddens, 1, bias=False)"}
    said = (N_("{layers} is built with a bias (nn.Linear's default; the model has none)")
            if len(layers) == 1 else
            N_("{layers} are built with a bias (nn.Linear's default; the model has none)"))
    return (Said.of(said, layers=names),
            tuple((built[l], built[l].replace(", bias=False)", ")")) for l in layers))


M = Mistake
MISTAKES = [
    # -- sequence_mask -------------------------------------------------------------------
    M("mask-off-by-one", "sequence_mask", "sequence_mask",
      N_("position t is kept when t <= valid_len (one position too many: positions count from 0)"),
      ((MASK_LINE, "mask = positions[None, :] <= valid_len[:, None]"),)),
    M("mask-off-by-one-short", "sequence_mask", "sequence_mask",
      N_("position t is kept only when t < valid_len - 1 (one position too few: valid_len "
         "positions, 0 to valid_len - 1, are valid)"),
      ((MASK_LINE, "mask = positions[None, :] < valid_len[:, None] - 1"),)),
    M("mask-maxlen-from-batch", "sequence_mask", "sequence_mask",
      N_("the number of positions is read from the batch axis (axis 0) instead of axis 1"),
      (("maxlen = X.size(1)", "maxlen = X.size(0)"),)),
    M("mask-maxlen-from-lengths", "sequence_mask", "sequence_mask",
      N_("the number of positions is taken from the largest valid length instead of from X"),
      (("maxlen = X.size(1)", "maxlen = int(valid_len.max())"),)),
    M("mask-ignores-value", "sequence_mask", "sequence_mask",
      N_("the `value` argument is ignored (masked entries always become 0)"),
      (("X[~mask] = value", "X[~mask] = 0"),)),
    M("mask-inverted", "sequence_mask", "sequence_mask",
      N_("the valid positions are replaced instead of the padding after them"),
      (("X[~mask] = value", "X[mask] = value"),)),
    M("mask-no-column", "sequence_mask", "sequence_mask",
      N_("the positions are compared with valid_len as a row, not as a column (one length per row "
         "of X needs shape (B, 1) to broadcast against (1, T))"),
      ((MASK_LINE, "mask = positions[None, :] < valid_len"),)),
    M("mask-returns-mask", "sequence_mask", "sequence_mask",
      N_("the boolean mask is returned instead of the masked X"),
      (("    return X\n    ### END SOLUTION", "    return mask\n    ### END SOLUTION"),)),
    # -- masked_softmax ------------------------------------------------------------------
    M("softmax-repeat", "masked_softmax", "masked_softmax",
      N_("1-D valid_lens is repeated as a whole vector, one copy after another, instead of each "
         "example's length once per query in a row (query q of example b then gets another "
         "example's length)"),
      (("valid_lens = torch.repeat_interleave(valid_lens, shape[1])",
        "valid_lens = valid_lens.repeat(shape[1])"),)),
    M("softmax-neg-inf", "masked_softmax", "masked_softmax",
      N_("masked scores are set to -inf (a row whose valid length is 0 then becomes NaN instead "
         "of uniform)"),
      ((FILL, "valid_lens, value=float('-inf'))"),)),
    M("softmax-mask-zero", "masked_softmax", "masked_softmax",
      N_("masked scores are set to 0, which is not small enough to vanish in the softmax"),
      ((FILL, "valid_lens)"),)),
    M("softmax-fill-positive", "masked_softmax", "masked_softmax",
      N_("masked scores are set to a very large positive number, so the masked keys take all the "
         "weight"),
      ((FILL, "valid_lens, value=1e6)"),)),
    M("softmax-fill-small", "masked_softmax", "masked_softmax", *_fill("-1"),
      infer=_infer_fill, param=_fill),  # any fill from -1000 to 0 (-10, -1e2): its own value
    M("softmax-wrong-axis", "masked_softmax", "masked_softmax", *_axis("1"),
      infer=_infer_axis, param=_axis),  # whichever axis the weights sum to 1 over
    M("softmax-log", "masked_softmax", "masked_softmax",
      N_("log_softmax is used, so the weights are log-probabilities"),
      ((SOFTMAX_LAST, "return nn.functional.log_softmax(X.reshape(shape), dim=-1)"),)),
    M("softmax-no-2d-case", "masked_softmax", "masked_softmax",
      N_("2-D valid_lens (one length per query) is treated like 1-D lengths and repeated"),
      (("    if valid_lens.dim() == 1:\n"
        "        valid_lens = torch.repeat_interleave(valid_lens, shape[1])  # (B,) -> (B*Q,)\n"
        "    else:\n        valid_lens = valid_lens.reshape(-1)  # (B, Q) -> (B*Q,)\n",
        "    valid_lens = torch.repeat_interleave(valid_lens, shape[1])\n"),)),
    M("softmax-2d-transposed", "masked_softmax", "masked_softmax",
      N_("2-D valid_lens is flattened query by query across the batch, so row (b, q) gets the "
         "length of another query or example"),
      (("valid_lens = valid_lens.reshape(-1)  # (B, Q) -> (B*Q,)",
        "valid_lens = valid_lens.t().reshape(-1)"),)),
    M("softmax-none-unhandled", "masked_softmax", "masked_softmax",
      N_("valid_lens=None (no masking) is not handled"),
      (("    if valid_lens is None:\n        return nn.functional.softmax(X, dim=-1)\n", ""),)),
    M("softmax-zero-after", "masked_softmax", "masked_softmax",
      N_("the masked weights are set to 0 after the softmax, so the rows no longer sum to 1"),
      ((SOFTMAX_LAST,
        "keep = (X.reshape(shape) != -1e6).to(X.dtype)\n"
        "    return nn.functional.softmax(X.reshape(shape) * keep, dim=-1) * keep"),)),
    M("softmax-float32-output", "masked_softmax", "masked_softmax",
      N_("the scores are cast to float32, so float64 inputs come back as float32"),
      ((SOFTMAX_LAST, "return nn.functional.softmax(X.reshape(shape).float(), dim=-1)"),)),
    M("softmax-detached", "masked_softmax", "masked_softmax",
      N_("the scores are detached from autograd before masking, so no gradient reaches them"),
      (("X = sequence_mask(X.reshape(-1, shape[-1]), valid_lens, value=-1e6)",
        "X = sequence_mask(X.detach().reshape(-1, shape[-1]), valid_lens, value=-1e6)"),)),
    # -- AdditiveAttention ---------------------------------------------------------------
    M("additive-squeeze-all", "AdditiveAttention", "AdditiveAttention",
      N_("squeeze() without an axis also removes batch, query or key axes of size 1"),
      (("scores = self.w_v(features).squeeze(-1)", "scores = self.w_v(features).squeeze()"),)),
    M("additive-no-tanh", "AdditiveAttention", "AdditiveAttention",
      N_("tanh is left out, so the score w_v(W_q q + W_k k) is linear"),
      ((TANH, "features = queries.unsqueeze(2) + keys.unsqueeze(1)"),)),
    M("additive-relu", "AdditiveAttention", "AdditiveAttention",
      N_("ReLU is used where additive attention has tanh"),
      ((TANH, "features = torch.relu(queries.unsqueeze(2) + keys.unsqueeze(1))"),)),
    M("additive-swapped-unsqueeze", "AdditiveAttention", "AdditiveAttention",
      N_("the unsqueeze axes are swapped, so the features are laid out keys x queries"),
      ((TANH, "features = torch.tanh(queries.unsqueeze(1) + keys.unsqueeze(2))"),)),
    M("additive-bias", "AdditiveAttention", "AdditiveAttention", *_biases("W_q"),
      infer=_infer_biases, param=_biases),  # any set of its layers with a bias
    M("additive-bias-w_v", "AdditiveAttention", "AdditiveAttention",
      N_("w_v is built with a bias (the model has none)"),
      (("self.w_v = nn.Linear(num_hiddens, 1, bias=False)", "self.w_v = nn.Linear(num_hiddens, 1)"),)),
    M("additive-swapped-sizes", "AdditiveAttention", "AdditiveAttention",
      N_("W_k is built from query_size and W_q from key_size"),
      (("self.W_k = nn.Linear(key_size, num_hiddens, bias=False)\n"
        "        self.W_q = nn.Linear(query_size, num_hiddens, bias=False)",
        "self.W_k = nn.Linear(query_size, num_hiddens, bias=False)\n"
        "        self.W_q = nn.Linear(key_size, num_hiddens, bias=False)"),)),
    M("additive-masks-nothing", "AdditiveAttention", "AdditiveAttention",
      N_("valid_lens is not passed on to the masked softmax, so nothing is masked"),
      (_additive_end(
          "        self.attention_weights = masked_softmax(scores, None)\n"
          "        return torch.bmm(self.dropout(self.attention_weights), values)"),)),
    M("additive-weights-not-stored", "AdditiveAttention", "AdditiveAttention",
      N_("the attention weights are kept in a local variable, not in self.attention_weights"),
      (_additive_end(
          "        attention_weights = masked_softmax(scores, valid_lens)\n"
          "        return torch.bmm(self.dropout(attention_weights), values)"),)),
    M("additive-dropout-stored", "AdditiveAttention", "AdditiveAttention",
      N_("the weights are stored after dropout (the stored weights should be the ones before it)"),
      (_additive_end(
          "        self.attention_weights = self.dropout(masked_softmax(scores, valid_lens))\n"
          "        return torch.bmm(self.attention_weights, values)"),)),
    M("additive-no-dropout", "AdditiveAttention", "AdditiveAttention",
      N_("dropout is never applied"),
      (_additive_end(
          "        self.attention_weights = masked_softmax(scores, valid_lens)\n"
          "        return torch.bmm(self.attention_weights, values)"),)),
    # -- DotProductAttention -------------------------------------------------------------
    M("dot-no-scale", "DotProductAttention", "DotProductAttention",
      N_("the scores are not divided by sqrt(d)"),
      ((SCORES, "scores = torch.bmm(queries, keys.transpose(1, 2))"),)),
    M("dot-scale-by-d", "DotProductAttention", "DotProductAttention",
      N_("the scores are divided by d instead of sqrt(d)"),
      ((SCORES, "scores = torch.bmm(queries, keys.transpose(1, 2)) / d"),)),
    M("dot-scale-by-keys", "DotProductAttention", "DotProductAttention",
      N_("d is taken from the number of keys instead of the feature size of the queries"),
      (("d = queries.shape[-1]", "d = keys.shape[1]"),)),
    M("dot-scale-by-ndim", "DotProductAttention", "DotProductAttention",
      N_("the scores are divided by the square root of the number of axes of the queries (3) "
         "instead of sqrt(d), d being their feature size"),
      (("d = queries.shape[-1]", "d = queries.dim()"),)),  # seen in a real submission
    M("dot-scale-after-softmax", "DotProductAttention", "DotProductAttention",
      N_("the weights are divided by sqrt(d) after the softmax instead of the scores before it"),
      ((SCORES, "scores = torch.bmm(queries, keys.transpose(1, 2))"),
       _dot_end("        self.attention_weights = masked_softmax(scores, valid_lens) / math.sqrt(d)\n"
                "        return torch.bmm(self.dropout(self.attention_weights), values)"))),
    M("dot-masks-nothing", "DotProductAttention", "DotProductAttention",
      N_("valid_lens is not passed on to the masked softmax, so nothing is masked"),
      (_dot_end("        self.attention_weights = masked_softmax(scores, None)\n"
                "        return torch.bmm(self.dropout(self.attention_weights), values)"),)),
    M("dot-weights-not-stored", "DotProductAttention", "DotProductAttention",
      N_("the attention weights are kept in a local variable, not in self.attention_weights"),
      (_dot_end("        attention_weights = masked_softmax(scores, valid_lens)\n"
                "        return torch.bmm(self.dropout(attention_weights), values)"),)),
    M("dot-dropout-stored", "DotProductAttention", "DotProductAttention",
      N_("the weights are stored after dropout (the stored weights should be the ones before it)"),
      (_dot_end("        self.attention_weights = self.dropout(masked_softmax(scores, valid_lens))\n"
                "        return torch.bmm(self.attention_weights, values)"),)),
    M("dot-no-dropout", "DotProductAttention", "DotProductAttention",
      N_("dropout is never applied"),
      (_dot_return("return torch.bmm(self.attention_weights, values)"),)),
    M("dot-functional-dropout", "DotProductAttention", "DotProductAttention",
      N_("dropout is applied as a function that does not know the module is in eval mode"),
      (_dot_return("return torch.bmm(nn.functional.dropout(self.attention_weights, "
                   "self.dropout.p), values)"),)),
    M("dot-dropout-on-output", "DotProductAttention", "DotProductAttention",
      N_("dropout is applied to the output instead of the attention weights"),
      (_dot_return("return self.dropout(torch.bmm(self.attention_weights, values))"),)),
    M("dot-default-none-missing", "DotProductAttention", "DotProductAttention",
      N_("valid_lens is a required argument (it should default to None)"),
      (("def forward(self, queries, keys, values, valid_lens=None):",
        "def forward(self, queries, keys, values, valid_lens):"),)),
    M("dot-keys-not-transposed", "DotProductAttention", "DotProductAttention",
      N_("the keys are multiplied without being transposed, which only has the right shape when "
         "d equals the number of keys"),
      ((SCORES, "scores = torch.bmm(queries, keys) / math.sqrt(d)"),)),
    # -- transpose -----------------------------------------------------------------------
    M("transpose-no-permute", "transpose", "transpose_qkv",
      N_("the heads are split with reshape alone, without moving the head axis next to the "
         "batch axis first"),
      ((SPLIT, ""),)),
    M("transpose-head-major", "transpose", "transpose_qkv",
      N_("the heads are stacked head-major (row h*B + b) instead of the book's order (row "
         "b*num_heads + h)"),
      ((SPLIT + "    return X.reshape(-1, X.shape[2], X.shape[3])",
        "    X = X.permute(2, 0, 1, 3)\n    return X.reshape(-1, X.shape[2], X.shape[3])"),)),
    M("transpose-heads-interleaved", "transpose", "transpose_qkv",
      N_("the features are dealt out to the heads one by one in turn instead of in consecutive "
         "blocks"),
      (("X = X.reshape(X.shape[0], X.shape[1], num_heads, -1)  # (B, n, heads, hidden/heads)",
        "X = X.reshape(X.shape[0], X.shape[1], -1, num_heads).transpose(2, 3)"),)),
    M("transpose-output-no-permute", "transpose", "transpose_output",
      N_("the heads are merged with reshape alone, without moving the head axis back first"),
      ((MERGE, ""),)),
    M("transpose-output-head-major", "transpose", "transpose_output",
      N_("the heads are merged as if they were stacked head-major (row h*B + b)"),
      (("X = X.reshape(-1, num_heads, X.shape[1], X.shape[2])  # (B, heads, n, hidden/heads)\n"
        + MERGE,
        "X = X.reshape(num_heads, -1, X.shape[1], X.shape[2]).permute(1, 2, 0, 3)\n"),)),
    # -- MultiHeadAttention --------------------------------------------------------------
    M("mha-repeat", "MultiHeadAttention", "MultiHeadAttention",
      N_("valid_lens is repeated as a whole, one copy after another, so head h of example b gets "
         "another example's length (each example's length must be repeated once per head in a row)"),
      ((REPEAT, "valid_lens = valid_lens.repeat(self.num_heads) if valid_lens.dim() == 1 "
                "else valid_lens.repeat(self.num_heads, 1)"),)),
    M("mha-interleave-no-dim", "MultiHeadAttention", "MultiHeadAttention",
      N_("2-D valid_lens is flattened while being repeated per head (the repetition must be "
         "along axis 0 only)"),
      ((REPEAT, "valid_lens = torch.repeat_interleave(valid_lens, repeats=self.num_heads)"),)),
    M("mha-none-unhandled", "MultiHeadAttention", "MultiHeadAttention",
      N_("valid_lens=None is repeated per head like a tensor instead of being passed on as None"),
      (("        if valid_lens is not None:\n            # (B,) -> (B*h,) or (B, Q) -> (B*h, Q)\n"
        "            " + REPEAT, "        " + REPEAT),)),
    M("mha-no-output-projection", "MultiHeadAttention", "MultiHeadAttention",
      N_("the output projection W_o is left out"),
      (("return self.W_o(output_concat)", "return output_concat"),)),
    M("mha-ignores-bias", "MultiHeadAttention", "MultiHeadAttention",
      N_("W_q ignores the `bias` argument"),
      (("self.W_q = nn.Linear(query_size, num_hiddens, bias=bias)",
        "self.W_q = nn.Linear(query_size, num_hiddens, bias=False)"),)),
    M("mha-no-value-projection", "MultiHeadAttention", "MultiHeadAttention",
      N_("the values are split into heads without going through W_v"),
      (("values = transpose_qkv(self.W_v(values), self.num_heads)",
        "values = transpose_qkv(values, self.num_heads)"),)),
    M("mha-swapped-projections", "MultiHeadAttention", "MultiHeadAttention",
      N_("W_q is applied to the keys and W_k to the queries"),
      (("queries = transpose_qkv(self.W_q(queries), self.num_heads)",
        "queries = transpose_qkv(self.W_k(queries), self.num_heads)"),
       ("keys = transpose_qkv(self.W_k(keys), self.num_heads)",
        "keys = transpose_qkv(self.W_q(keys), self.num_heads)"))),
    M("mha-dropout-missing", "MultiHeadAttention", "MultiHeadAttention",
      N_("self.attention is built without the dropout rate, so dropout never acts on the weights"),
      (("self.attention = DotProductAttention(dropout)", "self.attention = DotProductAttention(0.0)"),)),
    M("mha-head-major", "MultiHeadAttention", "MultiHeadAttention",
      N_("the heads are stacked head-major (row h*B + b) with the lengths repeated to match: the "
         "output is right, but attention.attention_weights is in another order than the book's "
         "(row b*num_heads + h), which its heatmaps rely on"),
      ((SPLIT + "    return X.reshape(-1, X.shape[2], X.shape[3])",
        "    X = X.permute(2, 0, 1, 3)\n    return X.reshape(-1, X.shape[2], X.shape[3])"),
       ("X = X.reshape(-1, num_heads, X.shape[1], X.shape[2])  # (B, heads, n, hidden/heads)\n"
        + MERGE,
        "X = X.reshape(num_heads, -1, X.shape[1], X.shape[2]).permute(1, 2, 0, 3)\n"),
       (REPEAT, "valid_lens = valid_lens.repeat(self.num_heads) if valid_lens.dim() == 1 "
                "else valid_lens.repeat(self.num_heads, 1)"))),
    # -- GPU -----------------------------------------------------------------------------
    M("gpu-arange-no-device", "GPU", "sequence_mask",
      N_("the positions are created without saying on which device, so they are on the CPU "
         "whatever device X is on"),
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
