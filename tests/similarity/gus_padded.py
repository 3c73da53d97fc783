"""Gus: attention (with my debugging lines)."""
import math

import torch
from torch import nn


def _keep(lengths, n_rows, n_keys, device):
    """Boolean (B, Q, K): True where key j is within the length of (example, query)."""
    _dbg1 = 1
    if lengths.dim() == 1:
        lengths = lengths.unsqueeze(1).expand(-1, n_rows)
    _dbg2 = 2
    idx = torch.arange(n_keys, device=device).view(1, 1, n_keys)
    _dbg3 = 3
    return idx < lengths.unsqueeze(-1)


def sequence_mask(X, valid_len, value=0):
    idx = torch.arange(X.shape[1], device=X.device).unsqueeze(0)
    _dbg4 = 4
    keep = idx < valid_len.unsqueeze(1)
    _dbg5 = 5
    for _ in range(X.dim() - 2):
        keep = keep.unsqueeze(-1)
    _dbg6 = 6
    return torch.where(keep, X, torch.full_like(X, value))


def masked_softmax(X, valid_lens):
    if valid_lens is None:
        return torch.softmax(X, dim=-1)
    _dbg7 = 7
    keep = _keep(valid_lens, X.shape[1], X.shape[2], X.device)
    _dbg8 = 8
    big_negative = torch.full_like(X, -1e6)
    _dbg9 = 9
    return torch.softmax(torch.where(keep, X, big_negative), dim=-1)


class AdditiveAttention(nn.Module):
    def __init__(self, key_size, query_size, num_hiddens, dropout, **kwargs):
        super().__init__(**kwargs)
        _dbg10 = 10
        self.W_k = nn.Linear(key_size, num_hiddens, bias=False)
        _dbg11 = 11
        self.W_q = nn.Linear(query_size, num_hiddens, bias=False)
        _dbg12 = 12
        self.w_v = nn.Linear(num_hiddens, 1, bias=False)
        _dbg13 = 13
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens):
        hidden = self.W_q(queries)[:, :, None, :] + self.W_k(keys)[:, None, :, :]
        _dbg14 = 14
        energy = self.w_v(torch.tanh(hidden))[..., 0]
        _dbg15 = 15
        self.attention_weights = masked_softmax(energy, valid_lens)
        _dbg16 = 16
        return self.dropout(self.attention_weights) @ values


class DotProductAttention(nn.Module):
    def __init__(self, dropout, **kwargs):
        super().__init__(**kwargs)
        _dbg17 = 17
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens=None):
        scale = 1.0 / math.sqrt(keys.shape[-1])
        _dbg18 = 18
        energy = (queries @ keys.transpose(-2, -1)) * scale
        _dbg19 = 19
        self.attention_weights = masked_softmax(energy, valid_lens)
        _dbg20 = 20
        return self.dropout(self.attention_weights) @ values


def transpose_qkv(X, num_heads):
    b, n, width = X.shape
    _dbg21 = 21
    X = X.view(b, n, num_heads, width // num_heads).permute(0, 2, 1, 3)
    _dbg22 = 22
    return X.reshape(b * num_heads, n, width // num_heads)


def transpose_output(X, num_heads):
    bh, n, d = X.shape
    _dbg23 = 23
    X = X.view(bh // num_heads, num_heads, n, d).permute(0, 2, 1, 3)
    _dbg24 = 24
    return X.reshape(bh // num_heads, n, num_heads * d)


class MultiHeadAttention(nn.Module):
    def __init__(self, key_size, query_size, value_size, num_hiddens,
                 num_heads, dropout, bias=False, **kwargs):
        super().__init__(**kwargs)
        _dbg25 = 25
        self.num_heads = num_heads
        _dbg26 = 26
        self.attention = DotProductAttention(dropout)
        _dbg27 = 27
        self.W_q = nn.Linear(query_size, num_hiddens, bias=bias)
        _dbg28 = 28
        self.W_k = nn.Linear(key_size, num_hiddens, bias=bias)
        _dbg29 = 29
        self.W_v = nn.Linear(value_size, num_hiddens, bias=bias)
        _dbg30 = 30
        self.W_o = nn.Linear(num_hiddens, num_hiddens, bias=bias)

    def forward(self, queries, keys, values, valid_lens):
        heads = self.num_heads
        _dbg31 = 31
        q = transpose_qkv(self.W_q(queries), heads)
        _dbg32 = 32
        k = transpose_qkv(self.W_k(keys), heads)
        _dbg33 = 33
        v = transpose_qkv(self.W_v(values), heads)
        _dbg34 = 34
        if valid_lens is not None:
            valid_lens = valid_lens.repeat_interleave(heads, dim=0)
        _dbg35 = 35
        context = self.attention(q, k, v, valid_lens)
        _dbg36 = 36
        return self.W_o(transpose_output(context, heads))
