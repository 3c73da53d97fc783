"""A correct solution that never writes into its inputs: torch.where, matmul, view/transpose."""
import torch
from torch import nn
import torch.nn.functional as F


def sequence_mask(X, valid_len, value=0):
    steps = torch.arange(X.shape[1], device=X.device)              # (T,)
    keep = steps.unsqueeze(0) < valid_len.unsqueeze(1)             # (B, T)
    keep = keep.reshape(keep.shape + (1,) * (X.dim() - 2))          # (B, T, 1, ...)
    return torch.where(keep, X, torch.as_tensor(value, dtype=X.dtype, device=X.device))


def masked_softmax(X, valid_lens):
    if valid_lens is None:
        return F.softmax(X, dim=-1)
    batch, queries, keys = X.shape
    if valid_lens.dim() == 1:
        per_row = valid_lens.repeat_interleave(queries)             # (B*Q,)
    else:
        per_row = valid_lens.flatten()                              # (B*Q,)
    masked = sequence_mask(X.reshape(batch * queries, keys), per_row, value=-1e6)
    return F.softmax(masked.view(batch, queries, keys), dim=-1)


class AdditiveAttention(nn.Module):
    def __init__(self, key_size, query_size, num_hiddens, dropout, **kwargs):
        super().__init__(**kwargs)
        self.W_k = nn.Linear(key_size, num_hiddens, bias=False)
        self.W_q = nn.Linear(query_size, num_hiddens, bias=False)
        self.w_v = nn.Linear(num_hiddens, 1, bias=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens):
        q = self.W_q(queries)[:, :, None, :]                        # (B, Q, 1, H)
        k = self.W_k(keys)[:, None, :, :]                           # (B, 1, K, H)
        scores = self.w_v(torch.tanh(q + k))[..., 0]                # (B, Q, K)
        self.attention_weights = masked_softmax(scores, valid_lens)
        return torch.matmul(self.dropout(self.attention_weights), values)


class DotProductAttention(nn.Module):
    def __init__(self, dropout, **kwargs):
        super().__init__(**kwargs)
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens=None):
        scores = torch.matmul(queries, keys.transpose(-2, -1)) / queries.shape[-1] ** 0.5
        self.attention_weights = masked_softmax(scores, valid_lens)
        return torch.matmul(self.dropout(self.attention_weights), values)


def transpose_qkv(X, num_heads):
    batch, n, hidden = X.shape
    return X.view(batch, n, num_heads, hidden // num_heads).transpose(1, 2).reshape(
        batch * num_heads, n, hidden // num_heads)


def transpose_output(X, num_heads):
    rows, n, size = X.shape
    return X.view(rows // num_heads, num_heads, n, size).transpose(1, 2).reshape(
        rows // num_heads, n, num_heads * size)


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
        q = transpose_qkv(self.W_q(queries), self.num_heads)
        k = transpose_qkv(self.W_k(keys), self.num_heads)
        v = transpose_qkv(self.W_v(values), self.num_heads)
        if valid_lens is not None:
            valid_lens = valid_lens.repeat_interleave(self.num_heads, dim=0)
        out = self.attention(q, k, v, valid_lens)
        return self.W_o(transpose_output(out, self.num_heads))
