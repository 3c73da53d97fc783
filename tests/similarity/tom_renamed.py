"""Attention homework, Tom."""
import math

import torch
from torch import nn


def _valid_positions(lens, num_q, num_k, device):
    """Boolean (B, Q, K): True where key j is within the length of (example, query)."""
    if lens.dim() == 1:
        lens = lens.unsqueeze(1).expand(-1, num_q)
    pos = torch.arange(num_k, device=device).view(1, 1, num_k)
    return pos < lens.unsqueeze(-1)


def sequence_mask(X, valid_len, value=0):
    pos = torch.arange(X.shape[1], device=X.device).unsqueeze(0)
    inside = pos < valid_len.unsqueeze(1)
    for _ in range(X.dim() - 2):
        inside = inside.unsqueeze(-1)
    return torch.where(inside, X, torch.full_like(X, value))


def masked_softmax(X, valid_lens):
    if valid_lens is None:
        return torch.softmax(X, dim=-1)
    inside = _valid_positions(valid_lens, X.shape[1], X.shape[2], X.device)
    minus_big = torch.full_like(X, -1e6)
    return torch.softmax(torch.where(inside, X, minus_big), dim=-1)


class AdditiveAttention(nn.Module):
    def __init__(self, key_size, query_size, num_hiddens, dropout, **kwargs):
        super().__init__(**kwargs)
        self.W_k = nn.Linear(key_size, num_hiddens, bias=False)
        self.W_q = nn.Linear(query_size, num_hiddens, bias=False)
        self.w_v = nn.Linear(num_hiddens, 1, bias=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens):
        feat = self.W_q(queries)[:, :, None, :] + self.W_k(keys)[:, None, :, :]
        logits = self.w_v(torch.tanh(feat))[..., 0]
        self.attention_weights = masked_softmax(logits, valid_lens)
        return self.dropout(self.attention_weights) @ values


class DotProductAttention(nn.Module):
    def __init__(self, dropout, **kwargs):
        super().__init__(**kwargs)
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens=None):
        factor = 1.0 / math.sqrt(keys.shape[-1])
        logits = (queries @ keys.transpose(-2, -1)) * factor
        self.attention_weights = masked_softmax(logits, valid_lens)
        return self.dropout(self.attention_weights) @ values


def transpose_qkv(X, num_heads):
    b, n, total = X.shape
    X = X.view(b, n, num_heads, total // num_heads).permute(0, 2, 1, 3)
    return X.reshape(b * num_heads, n, total // num_heads)


def transpose_output(X, num_heads):
    bh, n, d = X.shape
    X = X.view(bh // num_heads, num_heads, n, d).permute(0, 2, 1, 3)
    return X.reshape(bh // num_heads, n, num_heads * d)


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
        nh = self.num_heads
        q = transpose_qkv(self.W_q(queries), nh)
        k = transpose_qkv(self.W_k(keys), nh)
        v = transpose_qkv(self.W_v(values), nh)
        if valid_lens is not None:
            valid_lens = valid_lens.repeat_interleave(nh, dim=0)
        out = self.attention(q, k, v, valid_lens)
        return self.W_o(transpose_output(out, nh))
