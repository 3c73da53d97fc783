"""A stub with the right interface that returns zeros of the right shape: the floor every
hostile submission is compared with (an attack must not score more than this)."""
import torch
from torch import nn


def _zeros(*shape, like):
    return torch.zeros(*shape, dtype=like.dtype, device=like.device)


def sequence_mask(X, valid_len, value=0):
    return torch.zeros_like(X)


def masked_softmax(X, valid_lens):
    return torch.zeros_like(X)


class AdditiveAttention(nn.Module):
    def __init__(self, key_size, query_size, num_hiddens, dropout, **kwargs):
        super().__init__(**kwargs)
        self.W_k = nn.Linear(key_size, num_hiddens, bias=False)
        self.W_q = nn.Linear(query_size, num_hiddens, bias=False)
        self.w_v = nn.Linear(num_hiddens, 1, bias=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens):
        self.attention_weights = _zeros(queries.shape[0], queries.shape[1], keys.shape[1], like=queries)
        return _zeros(queries.shape[0], queries.shape[1], values.shape[-1], like=values)


class DotProductAttention(nn.Module):
    def __init__(self, dropout, **kwargs):
        super().__init__(**kwargs)
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens=None):
        self.attention_weights = _zeros(queries.shape[0], queries.shape[1], keys.shape[1], like=queries)
        return _zeros(queries.shape[0], queries.shape[1], values.shape[-1], like=values)


def transpose_qkv(X, num_heads):
    return _zeros(X.shape[0] * num_heads, X.shape[1], X.shape[2] // num_heads, like=X)


def transpose_output(X, num_heads):
    return _zeros(X.shape[0] // num_heads, X.shape[1], X.shape[2] * num_heads, like=X)


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
        self.attention(queries, keys, values, valid_lens)
        self.attention.attention_weights = _zeros(
            queries.shape[0] * self.num_heads, queries.shape[1], keys.shape[1], like=queries)
        return _zeros(queries.shape[0], queries.shape[1], self.W_o.out_features, like=queries)
