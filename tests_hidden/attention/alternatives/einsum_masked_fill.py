"""A correct solution in einsum, with masked_fill and the dtype's most negative number."""
import math

import torch
from torch import nn


def sequence_mask(X, valid_len, value=0):
    positions = torch.arange(X.size(1), device=X.device, dtype=valid_len.dtype)
    padding = positions[None, :] >= valid_len[:, None]              # (B, T): True where masked
    while padding.dim() < X.dim():
        padding = padding.unsqueeze(-1)
    return X.masked_fill(padding, value)


def masked_softmax(X, valid_lens):
    if valid_lens is None:
        return torch.softmax(X, dim=-1)
    B, Q, K = X.shape
    if valid_lens.dim() == 1:
        valid_lens = valid_lens[:, None].expand(B, Q)               # one length per query
    positions = torch.arange(K, device=X.device)
    padding = positions[None, None, :] >= valid_lens[:, :, None]    # (B, Q, K)
    scores = X.masked_fill(padding, torch.finfo(X.dtype).min)
    return torch.softmax(scores, dim=-1)


class AdditiveAttention(nn.Module):
    def __init__(self, key_size, query_size, num_hiddens, dropout, **kwargs):
        super().__init__(**kwargs)
        self.W_k = nn.Linear(key_size, num_hiddens, bias=False)
        self.W_q = nn.Linear(query_size, num_hiddens, bias=False)
        self.w_v = nn.Linear(num_hiddens, 1, bias=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens):
        features = torch.tanh(self.W_q(queries).unsqueeze(2) + self.W_k(keys).unsqueeze(1))
        scores = torch.einsum("bqkh,h->bqk", features, self.w_v.weight[0])
        self.attention_weights = masked_softmax(scores, valid_lens)
        return torch.einsum("bqk,bkv->bqv", self.dropout(self.attention_weights), values)


class DotProductAttention(nn.Module):
    def __init__(self, dropout, **kwargs):
        super().__init__(**kwargs)
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens=None):
        scores = torch.einsum("bqd,bkd->bqk", queries, keys) / math.sqrt(queries.size(-1))
        self.attention_weights = masked_softmax(scores, valid_lens)
        return torch.einsum("bqk,bkv->bqv", self.dropout(self.attention_weights), values)


def transpose_qkv(X, num_heads):
    X = X.unflatten(-1, (num_heads, -1))                            # (B, n, h, d)
    return X.movedim(2, 1).flatten(0, 1)                            # (B*h, n, d)


def transpose_output(X, num_heads):
    X = X.unflatten(0, (-1, num_heads))                             # (B, h, n, d)
    return X.movedim(1, 2).flatten(2)                               # (B, n, h*d)


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

    def forward(self, queries, keys, values, valid_lens):
        h = self.num_heads
        q, k, v = (transpose_qkv(f(x), h) for f, x in
                   ((self.W_q, queries), (self.W_k, keys), (self.W_v, values)))
        if valid_lens is not None:
            valid_lens = torch.repeat_interleave(valid_lens, h, dim=0)
        return self.W_o(transpose_output(self.attention(q, k, v, valid_lens), h))
