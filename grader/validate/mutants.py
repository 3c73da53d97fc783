"""The mistake zoo: realistic student mistakes, each a small edit of the solution.

Every mutant names the part it breaks; `grader validate` (and the kit's tests) check that
the hidden suite takes points off that part. The list is the table in docs/mistakes.md.
A mutant is (name, part, what the student did, the solution text it replaces, the new text).
"""
import dataclasses


@dataclasses.dataclass(frozen=True)
class Mutant:
    name: str
    part: str
    mistake: str
    old: str
    new: str

    def apply(self, source):
        count = source.count(self.old)
        if count != 1:
            raise ValueError(f"mutant {self.name}: the text to replace occurs {count} times "
                             f"in the solution (it must occur once): {self.old!r}")
        return source.replace(self.old, self.new)


def dot_return(new):
    """(old, new) for DotProductAttention's last line; AdditiveAttention ends with the same line,
    so the text to replace runs on to the next definition to be unique."""
    tail = "\n        ### END SOLUTION\n\n\ndef transpose_qkv"
    return ("        return torch.bmm(self.dropout(self.attention_weights), values)  # (B, Q, V)" + tail,
            "        " + new + tail)


M = Mutant
MUTANTS = [
    # -- sequence_mask -------------------------------------------------------------------
    M("mask-off-by-one", "sequence_mask", "keeps position t when t <= valid_len (one too many)",
      "mask = positions[None, :] < valid_len[:, None]",
      "mask = positions[None, :] <= valid_len[:, None]"),
    M("mask-maxlen-from-batch", "sequence_mask", "takes the sequence length from X.size(0) (the batch)",
      "maxlen = X.size(1)", "maxlen = X.size(0)"),
    M("mask-ignores-value", "sequence_mask", "always writes 0, ignoring `value`",
      "X[~mask] = value", "X[~mask] = 0"),
    M("mask-inverted", "sequence_mask", "masks the valid positions instead of the padding",
      "X[~mask] = value", "X[mask] = value"),
    M("mask-no-column", "sequence_mask", "compares with valid_len instead of valid_len[:, None]",
      "mask = positions[None, :] < valid_len[:, None]",
      "mask = positions[None, :] < valid_len"),
    # -- masked_softmax ------------------------------------------------------------------
    M("softmax-repeat", "masked_softmax", "repeats 1-D lengths with .repeat instead of repeat_interleave",
      "valid_lens = torch.repeat_interleave(valid_lens, shape[1])",
      "valid_lens = valid_lens.repeat(shape[1])"),
    M("softmax-neg-inf", "masked_softmax", "masks with -inf, so rows of length 0 become NaN",
      "valid_lens, value=-1e6)", "valid_lens, value=float('-inf'))"),
    M("softmax-mask-zero", "masked_softmax", "masks with 0 (the default value) instead of -1e6",
      "valid_lens, value=-1e6)", "valid_lens)"),
    M("softmax-wrong-axis", "masked_softmax", "takes the softmax over axis 1 instead of the last axis",
      "return nn.functional.softmax(X.reshape(shape), dim=-1)",
      "return nn.functional.softmax(X.reshape(shape), dim=1)"),
    M("softmax-no-2d-case", "masked_softmax", "forgets the 2-D case: repeat_interleave for every valid_lens",
      "    if valid_lens.dim() == 1:\n"
      "        valid_lens = torch.repeat_interleave(valid_lens, shape[1])  # (B,) -> (B*Q,)\n"
      "    else:\n        valid_lens = valid_lens.reshape(-1)  # (B, Q) -> (B*Q,)\n",
      "    valid_lens = torch.repeat_interleave(valid_lens, shape[1])\n"),
    M("softmax-none-unhandled", "masked_softmax", "does not handle valid_lens=None",
      "    if valid_lens is None:\n        return nn.functional.softmax(X, dim=-1)\n", ""),
    M("softmax-zero-after", "masked_softmax", "zeroes masked weights after the softmax, without renormalising",
      "return nn.functional.softmax(X.reshape(shape), dim=-1)",
      "keep = (X.reshape(shape) != -1e6).to(X.dtype)\n"
      "    return nn.functional.softmax(X.reshape(shape) * keep, dim=-1) * keep"),
    M("softmax-float32-output", "masked_softmax", "casts the scores to float32 (loses float64)",
      "return nn.functional.softmax(X.reshape(shape), dim=-1)",
      "return nn.functional.softmax(X.reshape(shape).float(), dim=-1)"),
    M("softmax-detached", "masked_softmax", "computes the mask on .data, cutting the gradient",
      "X = sequence_mask(X.reshape(-1, shape[-1]), valid_lens, value=-1e6)",
      "X = sequence_mask(X.detach().reshape(-1, shape[-1]), valid_lens, value=-1e6)"),
    # -- AdditiveAttention ---------------------------------------------------------------
    M("additive-squeeze-all", "AdditiveAttention", "squeeze() without an axis drops batch/query axes of size 1",
      "scores = self.w_v(features).squeeze(-1)", "scores = self.w_v(features).squeeze()"),
    M("additive-no-tanh", "AdditiveAttention", "forgets the tanh",
      "features = torch.tanh(queries.unsqueeze(2) + keys.unsqueeze(1))",
      "features = queries.unsqueeze(2) + keys.unsqueeze(1)"),
    M("additive-swapped-unsqueeze", "AdditiveAttention", "swaps the unsqueeze axes (keys x queries)",
      "features = torch.tanh(queries.unsqueeze(2) + keys.unsqueeze(1))",
      "features = torch.tanh(queries.unsqueeze(1) + keys.unsqueeze(2))"),
    M("additive-bias", "AdditiveAttention", "leaves bias=True on W_q",
      "self.W_q = nn.Linear(query_size, num_hiddens, bias=False)",
      "self.W_q = nn.Linear(query_size, num_hiddens)"),
    M("additive-swapped-sizes", "AdditiveAttention", "builds W_k from query_size and W_q from key_size",
      "self.W_k = nn.Linear(key_size, num_hiddens, bias=False)\n        self.W_q = nn.Linear(query_size, num_hiddens, bias=False)",
      "self.W_k = nn.Linear(query_size, num_hiddens, bias=False)\n        self.W_q = nn.Linear(key_size, num_hiddens, bias=False)"),
    M("additive-dropout-stored", "AdditiveAttention", "stores the weights after dropout",
      "        self.attention_weights = masked_softmax(scores, valid_lens)  # (B, Q, K)\n"
      "        return torch.bmm(self.dropout(self.attention_weights), values)  # (B, Q, V)\n"
      "        ### END SOLUTION\n\n\nclass DotProductAttention",
      "        self.attention_weights = self.dropout(masked_softmax(scores, valid_lens))\n"
      "        return torch.bmm(self.attention_weights, values)\n"
      "        ### END SOLUTION\n\n\nclass DotProductAttention"),
    # -- DotProductAttention -------------------------------------------------------------
    M("dot-no-scale", "DotProductAttention", "does not divide the scores by sqrt(d)",
      "scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(d)",
      "scores = torch.bmm(queries, keys.transpose(1, 2))"),
    M("dot-scale-by-d", "DotProductAttention", "divides by d instead of sqrt(d)",
      "scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(d)",
      "scores = torch.bmm(queries, keys.transpose(1, 2)) / d"),
    M("dot-scale-by-keys", "DotProductAttention", "takes d from the number of keys",
      "d = queries.shape[-1]", "d = keys.shape[1]"),
    M("dot-no-dropout", "DotProductAttention", "never applies dropout",
      *dot_return("return torch.bmm(self.attention_weights, values)")),
    M("dot-functional-dropout", "DotProductAttention", "uses F.dropout, which ignores eval mode",
      *dot_return("return torch.bmm(nn.functional.dropout(self.attention_weights, self.dropout.p), values)")),
    M("dot-dropout-on-output", "DotProductAttention", "applies dropout to the output instead of the weights",
      *dot_return("return self.dropout(torch.bmm(self.attention_weights, values))")),
    M("dot-default-none-missing", "DotProductAttention", "makes valid_lens a required argument",
      "def forward(self, queries, keys, values, valid_lens=None):",
      "def forward(self, queries, keys, values, valid_lens):"),
    # -- transpose -----------------------------------------------------------------------
    M("transpose-no-permute", "transpose", "splits the heads with reshape alone",
      "    X = X.permute(0, 2, 1, 3)  # (B, heads, n, hidden/heads)\n", ""),
    M("transpose-head-major", "transpose", "stacks the heads head-major (row h*B + b)",
      "    X = X.permute(0, 2, 1, 3)  # (B, heads, n, hidden/heads)\n"
      "    return X.reshape(-1, X.shape[2], X.shape[3])",
      "    X = X.permute(2, 0, 1, 3)\n    return X.reshape(-1, X.shape[2], X.shape[3])"),
    M("transpose-output-no-permute", "transpose", "merges the heads with reshape alone",
      "    X = X.permute(0, 2, 1, 3)  # (B, n, heads, hidden/heads)\n", ""),
    # -- MultiHeadAttention --------------------------------------------------------------
    M("mha-repeat", "MultiHeadAttention", "repeats valid_lens with .repeat(num_heads)",
      "valid_lens = torch.repeat_interleave(valid_lens, repeats=self.num_heads, dim=0)",
      "valid_lens = valid_lens.repeat(self.num_heads) if valid_lens.dim() == 1 "
      "else valid_lens.repeat(self.num_heads, 1)"),
    M("mha-interleave-no-dim", "MultiHeadAttention", "calls repeat_interleave without dim=0 (flattens 2-D lengths)",
      "valid_lens = torch.repeat_interleave(valid_lens, repeats=self.num_heads, dim=0)",
      "valid_lens = torch.repeat_interleave(valid_lens, repeats=self.num_heads)"),
    M("mha-no-output-projection", "MultiHeadAttention", "forgets W_o",
      "return self.W_o(output_concat)", "return output_concat"),
    M("mha-ignores-bias", "MultiHeadAttention", "hard-codes bias=False",
      "self.W_q = nn.Linear(query_size, num_hiddens, bias=bias)",
      "self.W_q = nn.Linear(query_size, num_hiddens, bias=False)"),
    M("mha-no-value-projection", "MultiHeadAttention", "uses the values without W_v",
      "values = transpose_qkv(self.W_v(values), self.num_heads)",
      "values = transpose_qkv(values, self.num_heads)"),
    M("mha-shared-dropout-missing", "MultiHeadAttention", "builds self.attention without dropout",
      "self.attention = DotProductAttention(dropout)", "self.attention = DotProductAttention(0.0)"),
    # -- GPU -----------------------------------------------------------------------------
    M("gpu-arange-no-device", "GPU", "creates the positions without device=X.device",
      "positions = torch.arange(maxlen, dtype=torch.float32, device=X.device)",
      "positions = torch.arange(maxlen, dtype=torch.float32)"),
]
