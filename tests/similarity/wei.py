"""Attention homework, Wei."""
import math

import torch
from torch import nn


def _keep(lengths, n_rows, n_keys, device):
    """Boolean (B, Q, K): True where key j is within the length of (example, query)."""
    if lengths.dim() == 1:
        lengths = lengths.unsqueeze(1).expand(-1, n_rows)
    idx = torch.arange(n_keys, device=device).view(1, 1, n_keys)
    return idx < lengths.unsqueeze(-1)


def sequence_mask(X, valid_len, value=0):
    idx = torch.arange(X.shape[1], device=X.device).unsqueeze(0)
    keep = idx < valid_len.unsqueeze(1)
    for _ in range(X.dim() - 2):
        keep = keep.unsqueeze(-1)
    return torch.where(keep, X, torch.full_like(X, value))


def masked_softmax(X, valid_lens):
    if valid_lens is None:
        return torch.softmax(X, dim=-1)
    keep = _keep(valid_lens, X.shape[1], X.shape[2], X.device)
    big_negative = torch.full_like(X, -1e6)
    return torch.softmax(torch.where(keep, X, big_negative), dim=-1)


class AdditiveAttention(nn.Module):
    def __init__(self, key_size, query_size, num_hiddens, dropout, **kwargs):
        super().__init__(**kwargs)
        self.W_k = nn.Linear(key_size, num_hiddens, bias=False)
        self.W_q = nn.Linear(query_size, num_hiddens, bias=False)
        self.w_v = nn.Linear(num_hiddens, 1, bias=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens):
        hidden = self.W_q(queries)[:, :, None, :] + self.W_k(keys)[:, None, :, :]
        energy = self.w_v(torch.tanh(hidden))[..., 0]
        self.attention_weights = masked_softmax(energy, valid_lens)
        return self.dropout(self.attention_weights) @ values


class DotProductAttention(nn.Module):
    def __init__(self, dropout, **kwargs):
        super().__init__(**kwargs)
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens=None):
        scale = 1.0 / math.sqrt(keys.shape[-1])
        energy = (queries @ keys.transpose(-2, -1)) * scale
        self.attention_weights = masked_softmax(energy, valid_lens)
        return self.dropout(self.attention_weights) @ values


def transpose_qkv(X, num_heads):
    b, n, width = X.shape
    X = X.view(b, n, num_heads, width // num_heads).permute(0, 2, 1, 3)
    return X.reshape(b * num_heads, n, width // num_heads)


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
        heads = self.num_heads
        q = transpose_qkv(self.W_q(queries), heads)
        k = transpose_qkv(self.W_k(keys), heads)
        v = transpose_qkv(self.W_v(values), heads)
        if valid_lens is not None:
            valid_lens = valid_lens.repeat_interleave(heads, dim=0)
        context = self.attention(q, k, v, valid_lens)
        return self.W_o(transpose_output(context, heads))
