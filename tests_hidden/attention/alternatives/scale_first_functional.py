"""A correct solution that scales the queries before the product, uses nn.functional
throughout and builds the mask by arithmetic instead of indexing."""
import torch
from torch import nn
from torch.nn import functional as F


def sequence_mask(X, valid_len, value=0):
    keep = (torch.arange(X.shape[1], device=X.device)[None, :] < valid_len[:, None]).to(X.dtype)
    keep = keep.view(*keep.shape, *([1] * (X.dim() - 2)))
    return X * keep + (1 - keep) * value


def masked_softmax(X, valid_lens):
    if valid_lens is not None:
        if valid_lens.dim() == 1:
            valid_lens = valid_lens.unsqueeze(1).expand(-1, X.shape[1])
        X = sequence_mask(X.flatten(0, 1), valid_lens.flatten(), value=-1e6).view_as(X)
    return F.softmax(X, dim=-1)


class AdditiveAttention(nn.Module):
    def __init__(self, key_size, query_size, num_hiddens, dropout, **kwargs):
        super().__init__(**kwargs)
        self.W_k = nn.Linear(key_size, num_hiddens, bias=False)
        self.W_q = nn.Linear(query_size, num_hiddens, bias=False)
        self.w_v = nn.Linear(num_hiddens, 1, bias=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens):
        features = torch.tanh(F.linear(queries, self.W_q.weight).unsqueeze(-2)
                              + F.linear(keys, self.W_k.weight).unsqueeze(-3))
        self.attention_weights = masked_softmax(self.w_v(features).squeeze(-1), valid_lens)
        return self.dropout(self.attention_weights) @ values


class DotProductAttention(nn.Module):
    def __init__(self, dropout, **kwargs):
        super().__init__(**kwargs)
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens=None):
        scaled = queries * queries.shape[-1] ** -0.5
        self.attention_weights = masked_softmax(scaled @ keys.mT, valid_lens)
        return self.dropout(self.attention_weights) @ values


def transpose_qkv(X, num_heads):
    B, n, _ = X.shape
    return X.reshape(B, n, num_heads, -1).permute(0, 2, 1, 3).reshape(B * num_heads, n, -1)


def transpose_output(X, num_heads):
    Bh, n, _ = X.shape
    return X.reshape(Bh // num_heads, num_heads, n, -1).permute(0, 2, 1, 3).reshape(
        Bh // num_heads, n, -1)


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
            valid_lens = valid_lens.repeat_interleave(h, dim=0)
        out = self.attention(transpose_qkv(self.W_q(queries), h), transpose_qkv(self.W_k(keys), h),
                             transpose_qkv(self.W_v(values), h), valid_lens)
        return self.W_o(transpose_output(out, h))
