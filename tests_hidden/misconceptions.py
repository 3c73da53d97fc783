"""What well-known mistakes would return on a case's inputs.

When a submission's result is wrong, the harness checks whether it equals one of these;
if so, the failure message names the mistake. They run only in the trusted process, on
the case's own inputs and the reference's weights, and never decide a score.

Each function takes (case, state) and returns {tensor name: [(description, tensor)]},
where the tensor names are "output" and the captured attributes.
"""
import math

import torch
import torch.nn.functional as F


def _lengths_per_row(X, valid_lens, repeat):
    """valid_lens as one length per row of X.reshape(-1, K)."""
    queries = X.shape[1]
    if valid_lens.dim() == 1:
        if repeat == "repeat":
            return valid_lens.repeat(queries)
        return torch.repeat_interleave(valid_lens, queries)
    return valid_lens.reshape(-1)


def masked_softmax(X, valid_lens, fill=-1e6, repeat="interleave", dim=-1, after=False):
    if valid_lens is None:
        return F.softmax(X, dim=dim)
    shape = X.shape
    rows = X.reshape(-1, shape[-1])
    keep = torch.arange(shape[-1], dtype=torch.float32)[None, :] < \
        _lengths_per_row(X, valid_lens, repeat)[:, None]
    if after:
        weights = F.softmax(rows, dim=-1) * keep
        return weights.reshape(shape)
    rows = rows.masked_fill(~keep, fill)
    return F.softmax(rows.reshape(shape), dim=dim)


def _dot_product(q, k, v, valid_lens, scale):
    weights = masked_softmax(torch.bmm(q, k.transpose(1, 2)) / scale, valid_lens)
    return {"output": torch.bmm(weights, v), "attention_weights": weights}


def _is_float(t):
    return isinstance(t, torch.Tensor) and t.is_floating_point()


def sequence_mask(case, state):
    X, valid_len = case.args[0], case.args[1]
    value = case.args[2] if len(case.args) > 2 else case.kwargs.get("value", 0)
    out = []
    keep = torch.arange(X.shape[1], dtype=torch.float32)[None, :] <= valid_len[:, None]
    wrong = X.clone()
    wrong[~keep] = value
    out.append(("the comparison is <= instead of < (position t is kept when t < valid_len)", wrong))
    if value != 0:
        keep = torch.arange(X.shape[1], dtype=torch.float32)[None, :] < valid_len[:, None]
        wrong = X.clone()
        wrong[~keep] = 0
        out.append(("the `value` argument is ignored (masked entries always become 0)", wrong))
    return {"output": out}


def masked_softmax_suspects(case, state):
    X, valid_lens = case.args
    if valid_lens is None:
        return {"output": [("the softmax is over axis 1 instead of the last axis",
                            F.softmax(X, dim=1))]}
    out = [
        ("masked scores are set to -inf (a row with valid length 0 becomes NaN)",
         masked_softmax(X, valid_lens, fill=float("-inf"))),
        ("masked scores are set to 0 instead of -1e6 (0 is not small enough to vanish)",
         masked_softmax(X, valid_lens, fill=0.0)),
        ("the softmax is over axis 1 instead of the last axis", masked_softmax(X, valid_lens, dim=1)),
        ("the weights are zeroed after the softmax, so rows no longer sum to 1",
         masked_softmax(X, valid_lens, after=True)),
    ]
    if valid_lens.dim() == 1:
        out.insert(0, ("1-D valid_lens is repeated with .repeat(Q) (whole vector, Q times) "
                       "instead of torch.repeat_interleave(valid_lens, Q) (each entry Q times)",
                       masked_softmax(X, valid_lens, repeat="repeat")))
    return {"output": out}


def dot_product_suspects(case, state):
    q, k, v = case.args[:3]
    valid_lens = case.args[3] if len(case.args) > 3 else None
    d, keys = q.shape[-1], k.shape[1]
    variants = [
        ("the scores are not divided by sqrt(d)", 1.0),
        ("the scores are divided by d instead of sqrt(d)", float(d)),
        ("the scores are divided by sqrt(number of keys) instead of sqrt(d)", math.sqrt(keys)),
    ]
    found = {"output": [], "attention_weights": []}
    for description, scale in variants:
        if scale == math.sqrt(d):
            continue
        result = _dot_product(q, k, v, valid_lens, scale)
        for name in found:
            found[name].append((description, result[name]))
    return found


def additive_suspects(case, state):
    q, k, v, valid_lens = case.args
    dtype = q.dtype
    W_q, W_k, w_v = (state[n].to(dtype) for n in ("W_q.weight", "W_k.weight", "w_v.weight"))
    features = F.linear(q, W_q).unsqueeze(2) + F.linear(k, W_k).unsqueeze(1)
    weights = masked_softmax(F.linear(features, w_v).squeeze(-1), valid_lens)
    description = "tanh is left out (score = w_v(W_q q + W_k k) is linear)"
    return {"output": [(description, torch.bmm(weights, v))],
            "attention_weights": [(description, weights)]}


def transpose_qkv_suspects(case, state):
    X, heads = case.args
    b, n, hidden = X.shape
    return {"output": [
        ("the heads are split with reshape alone; the head axis must be moved next to the "
         "batch axis with permute(0, 2, 1, 3) before merging",
         X.reshape(b * heads, n, hidden // heads)),
        ("the heads are stacked head-major (row h*B + b); the book's order is row b*num_heads + h",
         X.reshape(b, n, heads, -1).permute(2, 0, 1, 3).reshape(-1, n, hidden // heads)),
    ]}


def transpose_output_suspects(case, state):
    X, heads = case.args
    bh, n, size = X.shape
    return {"output": [
        ("the heads are merged with reshape alone, without permute(0, 2, 1, 3) first",
         X.reshape(bh // heads, n, size * heads)),
    ]}


def multi_head_suspects(case, state):
    q, k, v, valid_lens = case.args
    if valid_lens is None or "num_heads" not in case.init:
        return {}
    heads = case.init["num_heads"]
    dtype = q.dtype

    def linear(name, x):
        bias = state.get(f"{name}.bias")
        return F.linear(x, state[f"{name}.weight"].to(dtype), None if bias is None else bias.to(dtype))

    def split(x):
        b, n, hidden = x.shape
        return x.reshape(b, n, heads, -1).permute(0, 2, 1, 3).reshape(-1, n, hidden // heads)

    Q, K, V = split(linear("W_q", q)), split(linear("W_k", k)), split(linear("W_v", v))
    wrong_lens = valid_lens.repeat(heads) if valid_lens.dim() == 1 else valid_lens.repeat(heads, 1)
    result = _dot_product(Q, K, V, wrong_lens, math.sqrt(Q.shape[-1]))
    out = result["output"]
    out = out.reshape(-1, heads, out.shape[1], out.shape[2]).permute(0, 2, 1, 3)
    out = linear("W_o", out.reshape(out.shape[0], out.shape[1], -1))
    description = ("valid_lens is repeated with .repeat(num_heads) instead of "
                   "torch.repeat_interleave(valid_lens, num_heads, dim=0): head h of example b "
                   "then gets another example's length")
    return {"output": [(description, out)],
            "attention.attention_weights": [(description, result["attention_weights"])]}


SUSPECTS = {
    "sequence_mask": sequence_mask,
    "masked_softmax": masked_softmax_suspects,
    "DotProductAttention": dot_product_suspects,
    "AdditiveAttention": additive_suspects,
    "transpose_qkv": transpose_qkv_suspects,
    "transpose_output": transpose_output_suspects,
    "MultiHeadAttention": multi_head_suspects,
}


def suspects(case, state):
    """{tensor name: [(description, tensor)]} for the case; {} when none apply."""
    make = SUSPECTS.get(case.target)
    if make is None:
        return {}
    with torch.no_grad():
        try:
            return make(case, state or {})
        except Exception:  # a variant that does not apply to these inputs
            return {}
