# Kim Jiwoo -- HW: attention mechanisms
import math

import torch
from torch import nn


def sequence_mask(X, valid_len, value=0):
    cols = torch.arange(X.shape[1], device=X.device)
    mask = (cols[None, :] < valid_len[:, None].to(cols.dtype)
            if valid_len.is_floating_point() is False else cols[None, :] < valid_len[:, None])
    while mask.ndim < X.ndim:
        mask = mask[..., None]
    fill = torch.tensor(value, dtype=X.dtype, device=X.device)
    return torch.where(mask, X, fill)


def masked_softmax(X, valid_lens):
    if valid_lens is None:
        return nn.Softmax(dim=-1)(X)
    batch, n_q, n_k = X.shape
    if valid_lens.ndim == 1:
        lens = valid_lens[:, None].expand(batch, n_q)
    else:
        lens = valid_lens
    X2 = sequence_mask(X.reshape(batch * n_q, n_k), lens.reshape(batch * n_q), -1e6)
    return nn.Softmax(dim=-1)(X2.view(batch, n_q, n_k))


class AdditiveAttention(nn.Module):
    def __init__(self, key_size, query_size, num_hiddens, dropout, **kwargs):
        super().__init__(**kwargs)
        self.W_k = nn.Linear(key_size, num_hiddens, bias=False)
        self.W_q = nn.Linear(query_size, num_hiddens, bias=False)
        self.w_v = nn.Linear(num_hiddens, 1, bias=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens):
        n_q, n_k = queries.shape[1], keys.shape[1]
        Q = self.W_q(queries).unsqueeze(2).repeat(1, 1, n_k, 1)
        K = self.W_k(keys).unsqueeze(1).repeat(1, n_q, 1, 1)
        e = self.w_v(torch.tanh(Q + K)).squeeze(dim=3)
        self.attention_weights = masked_softmax(e, valid_lens)
        dropped = self.dropout(self.attention_weights)
        return torch.matmul(dropped, values)


class DotProductAttention(nn.Module):
    def __init__(self, dropout, **kwargs):
        super().__init__(**kwargs)
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens=None):
        e = torch.matmul(queries, torch.transpose(keys, 1, 2))
        e = e / torch.sqrt(torch.tensor(float(queries.shape[-1]), dtype=e.dtype))
        self.attention_weights = masked_softmax(e, valid_lens)
        dropped = self.dropout(self.attention_weights)
        return torch.matmul(dropped, values)


def transpose_qkv(X, num_heads):
    batch, steps, hidden = X.shape
    X = torch.reshape(X, (batch, steps, num_heads, hidden // num_heads))
    X = torch.transpose(X, 1, 2).contiguous()
    return torch.reshape(X, (batch * num_heads, steps, hidden // num_heads))


def transpose_output(X, num_heads):
    bh, steps, d = X.shape
    X = torch.reshape(X, (bh // num_heads, num_heads, steps, d))
    X = torch.transpose(X, 1, 2).contiguous()
    return torch.reshape(X, (bh // num_heads, steps, num_heads * d))


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
        Qh = transpose_qkv(self.W_q(queries), self.num_heads)
        Kh = transpose_qkv(self.W_k(keys), self.num_heads)
        Vh = transpose_qkv(self.W_v(values), self.num_heads)
        if valid_lens is not None:
            valid_lens = torch.repeat_interleave(valid_lens, self.num_heads, dim=0)
        concat = transpose_output(self.attention(Qh, Kh, Vh, valid_lens), self.num_heads)
        return self.W_o(concat)
