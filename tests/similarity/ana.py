# Ana's attention exercise
import math
import torch
import torch.nn.functional as F
from torch import nn


def sequence_mask(X, valid_len, value=0):
    T = X.size(1)
    dead = torch.arange(T, device=X.device).expand(X.size(0), T) >= valid_len.reshape(-1, 1)
    out = X.clone()
    out[dead] = value
    return out


def masked_softmax(X, valid_lens):
    if valid_lens is None:
        return F.softmax(X, dim=2)
    B, Q, K = X.size()
    lens = valid_lens.reshape(B, -1).expand(B, Q) if valid_lens.dim() == 1 else valid_lens
    flat = sequence_mask(X.reshape(B * Q, K), lens.reshape(B * Q), value=-1e6)
    return F.softmax(flat.reshape(B, Q, K), dim=2)


class AdditiveAttention(nn.Module):
    def __init__(self, key_size, query_size, num_hiddens, dropout, **kwargs):
        super().__init__(**kwargs)
        self.W_k = nn.Linear(key_size, num_hiddens, bias=False)
        self.W_q = nn.Linear(query_size, num_hiddens, bias=False)
        self.w_v = nn.Linear(num_hiddens, 1, bias=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens):
        B, Q, _ = queries.size()
        K = keys.size(1)
        pq = self.W_q(queries).reshape(B, Q, 1, -1).expand(-1, -1, K, -1)
        pk = self.W_k(keys).reshape(B, 1, K, -1).expand(-1, Q, -1, -1)
        a = self.w_v(torch.tanh(pq + pk)).reshape(B, Q, K)
        self.attention_weights = masked_softmax(a, valid_lens)
        return torch.matmul(self.dropout(self.attention_weights), values)


class DotProductAttention(nn.Module):
    def __init__(self, dropout, **kwargs):
        super().__init__(**kwargs)
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens=None):
        a = torch.matmul(queries, keys.permute(0, 2, 1)).div(queries.size(-1) ** 0.5)
        self.attention_weights = masked_softmax(a, valid_lens)
        return torch.matmul(self.dropout(self.attention_weights), values)


def transpose_qkv(X, num_heads):
    B, n, _ = X.size()
    return X.reshape(B, n, num_heads, -1).transpose(1, 2).reshape(B * num_heads, n, -1)


def transpose_output(X, num_heads):
    _, n, d = X.size()
    return X.reshape(-1, num_heads, n, d).transpose(1, 2).reshape(-1, n, num_heads * d)


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
        parts = [transpose_qkv(w(x), self.num_heads) for w, x in
                 ((self.W_q, queries), (self.W_k, keys), (self.W_v, values))]
        if valid_lens is not None:
            valid_lens = torch.repeat_interleave(valid_lens, repeats=self.num_heads, dim=0)
        o = self.attention(*parts, valid_lens)
        return self.W_o(transpose_output(o, self.num_heads))
