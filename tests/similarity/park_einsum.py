"""Attention with einsum everywhere (Park)."""
import math

import torch
from torch import nn


def sequence_mask(X, valid_len, value=0):
    steps = torch.arange(X.shape[1], device=X.device)
    outside = torch.ge(steps.unsqueeze(0), valid_len.unsqueeze(-1))
    shape = outside.shape + (1,) * (X.dim() - 2)
    return X.masked_fill(outside.reshape(shape), value)


def masked_softmax(X, valid_lens):
    if valid_lens is None:
        return X.softmax(-1)
    if valid_lens.dim() == 1:
        valid_lens = torch.stack([valid_lens] * X.shape[1], dim=1)
    steps = torch.arange(X.shape[-1], device=X.device)
    outside = torch.ge(steps, valid_lens.unsqueeze(-1))
    return X.masked_fill(outside, -1e6).softmax(-1)


class AdditiveAttention(nn.Module):
    def __init__(self, key_size, query_size, num_hiddens, dropout, **kwargs):
        super().__init__(**kwargs)
        self.W_k = nn.Linear(key_size, num_hiddens, bias=False)
        self.W_q = nn.Linear(query_size, num_hiddens, bias=False)
        self.w_v = nn.Linear(num_hiddens, 1, bias=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens):
        q = torch.einsum("bqi,hi->bqh", queries, self.W_q.weight)
        k = torch.einsum("bki,hi->bkh", keys, self.W_k.weight)
        t = torch.tanh(q.unsqueeze(2) + k.unsqueeze(1))
        s = torch.einsum("bqkh,oh->bqko", t, self.w_v.weight).squeeze(3)
        self.attention_weights = masked_softmax(s, valid_lens)
        return torch.einsum("bqk,bkd->bqd", self.dropout(self.attention_weights), values)


class DotProductAttention(nn.Module):
    def __init__(self, dropout, **kwargs):
        super().__init__(**kwargs)
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens=None):
        s = torch.einsum("bqd,bkd->bqk", queries, keys) / math.sqrt(queries.shape[2])
        self.attention_weights = masked_softmax(s, valid_lens)
        return torch.einsum("bqk,bkd->bqd", self.dropout(self.attention_weights), values)


def transpose_qkv(X, num_heads):
    b, n, _ = X.shape
    X = X.reshape(b, n, num_heads, -1)
    return torch.einsum("bnhd->bhnd", X).reshape(b * num_heads, n, -1)


def transpose_output(X, num_heads):
    _, n, d = X.shape
    X = X.reshape(-1, num_heads, n, d)
    return torch.einsum("bhnd->bnhd", X).reshape(X.shape[0], n, num_heads * d)


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
        if valid_lens is not None:
            valid_lens = torch.cat([valid_lens[i:i + 1].expand(h, *valid_lens.shape[1:])
                                    for i in range(valid_lens.shape[0])])
        y = self.attention(transpose_qkv(self.W_q(queries), h),
                           transpose_qkv(self.W_k(keys), h),
                           transpose_qkv(self.W_v(values), h), valid_lens)
        return self.W_o(transpose_output(y, h))
