"""Sara's solution: small pure helpers, the modules only glue them together."""
import math

import torch
import torch.nn.functional as F
from torch import nn

NEG = -1.0e6


def _lengths_per_query(valid_lens, num_queries):
    # (B,) -> (B, Q); (B, Q) stays
    return valid_lens if valid_lens.dim() == 2 else valid_lens.unsqueeze(1).repeat(1, num_queries)


def _positions_below(lengths, size):
    return torch.arange(size, device=lengths.device) < lengths.unsqueeze(-1)


def sequence_mask(X, valid_len, value=0):
    visible = _positions_below(valid_len, X.size(1))
    visible = visible.view(*visible.shape, *([1] * (X.dim() - 2)))
    return X * visible + torch.logical_not(visible) * value if value != 0 else X * visible


def masked_softmax(X, valid_lens):
    if valid_lens is None:
        return F.softmax(X, -1)
    visible = _positions_below(_lengths_per_query(valid_lens, X.size(1)), X.size(-1))
    return F.softmax(X.masked_fill(~visible, NEG), -1)


def _attend(scores, values, valid_lens, dropout):
    weights = masked_softmax(scores, valid_lens)
    return weights, torch.bmm(dropout(weights), values)


class AdditiveAttention(nn.Module):
    def __init__(self, key_size, query_size, num_hiddens, dropout, **kwargs):
        super().__init__(**kwargs)
        self.W_k = nn.Linear(key_size, num_hiddens, bias=False)
        self.W_q = nn.Linear(query_size, num_hiddens, bias=False)
        self.w_v = nn.Linear(num_hiddens, 1, bias=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens):
        mixed = self.W_q(queries).unsqueeze(-2) + self.W_k(keys).unsqueeze(-3)
        scores = self.w_v(mixed.tanh()).flatten(-2)
        self.attention_weights, out = _attend(scores, values, valid_lens, self.dropout)
        return out


class DotProductAttention(nn.Module):
    def __init__(self, dropout, **kwargs):
        super().__init__(**kwargs)
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens=None):
        scores = torch.bmm(queries / math.sqrt(queries.size(-1)), keys.mT)
        self.attention_weights, out = _attend(scores, values, valid_lens, self.dropout)
        return out


def transpose_qkv(X, num_heads):
    return X.unflatten(2, (num_heads, -1)).transpose(1, 2).flatten(0, 1)


def transpose_output(X, num_heads):
    return X.unflatten(0, (-1, num_heads)).transpose(1, 2).flatten(2, 3)


class MultiHeadAttention(nn.Module):
    def __init__(self, key_size, query_size, value_size, num_hiddens,
                 num_heads, dropout, bias=False, **kwargs):
        super().__init__(**kwargs)
        self.num_heads = num_heads
        self.attention = DotProductAttention(dropout)
        self.W_q = nn.Linear(query_size, num_hiddens, bias=bias)
        self.W_k = nn.Linear(key_size, num_hiddens, bias=bias)
        self.W_v = nn.Linear(value_size, num_hiddens, bias=bias)
        self.W_o = nn.Linear(num_hiddens, num_hiddens, bias=bias)

    def _split(self, layer, X):
        return transpose_qkv(layer(X), self.num_heads)

    def forward(self, queries, keys, values, valid_lens):
        lens = None if valid_lens is None else valid_lens.repeat_interleave(self.num_heads, 0)
        out = self.attention(self._split(self.W_q, queries), self._split(self.W_k, keys),
                             self._split(self.W_v, values), lens)
        return self.W_o(transpose_output(out, self.num_heads))
