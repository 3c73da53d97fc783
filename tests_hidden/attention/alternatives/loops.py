"""A correct solution written with Python loops, the way a student new to tensors might."""
import math

import torch
from torch import nn


def sequence_mask(X, valid_len, value=0):
    X = X.clone()
    for i in range(X.shape[0]):
        length = int(valid_len[i])
        for t in range(X.shape[1]):
            if t >= length:
                X[i, t] = value
    return X


def masked_softmax(X, valid_lens):
    if valid_lens is None:
        return torch.softmax(X, dim=-1)
    rows = []
    for b in range(X.shape[0]):
        per_query = []
        for q in range(X.shape[1]):
            length = valid_lens[b] if valid_lens.dim() == 1 else valid_lens[b, q]
            length = max(0, min(int(length), X.shape[2]))
            scores = X[b, q]
            if length < X.shape[2]:
                filler = torch.full((X.shape[2] - length,), -1e6, dtype=X.dtype, device=X.device)
                scores = torch.cat([scores[:length], filler])
            per_query.append(torch.softmax(scores, dim=0))
        rows.append(torch.stack(per_query))
    return torch.stack(rows)


class AdditiveAttention(nn.Module):
    def __init__(self, key_size, query_size, num_hiddens, dropout, **kwargs):
        super().__init__(**kwargs)
        self.W_k = nn.Linear(key_size, num_hiddens, bias=False)
        self.W_q = nn.Linear(query_size, num_hiddens, bias=False)
        self.w_v = nn.Linear(num_hiddens, 1, bias=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens):
        q, k = self.W_q(queries), self.W_k(keys)
        scores = torch.stack([
            torch.stack([self.w_v(torch.tanh(q[b, i] + k[b])).squeeze(-1)
                         for i in range(q.shape[1])])
            for b in range(q.shape[0])])
        self.attention_weights = masked_softmax(scores, valid_lens)
        return torch.bmm(self.dropout(self.attention_weights), values)


class DotProductAttention(nn.Module):
    def __init__(self, dropout, **kwargs):
        super().__init__(**kwargs)
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens=None):
        d = queries.shape[-1]
        scores = torch.stack([queries[b] @ keys[b].T for b in range(queries.shape[0])]) / math.sqrt(d)
        self.attention_weights = masked_softmax(scores, valid_lens)
        weights = self.dropout(self.attention_weights)
        return torch.stack([weights[b] @ values[b] for b in range(values.shape[0])])


def transpose_qkv(X, num_heads):
    size = X.shape[2] // num_heads
    heads = []
    for b in range(X.shape[0]):
        for h in range(num_heads):
            heads.append(X[b, :, h * size:(h + 1) * size])
    return torch.stack(heads)


def transpose_output(X, num_heads):
    examples = []
    for b in range(X.shape[0] // num_heads):
        examples.append(torch.cat([X[b * num_heads + h] for h in range(num_heads)], dim=-1))
    return torch.stack(examples)


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
            valid_lens = torch.stack([valid_lens[b] for b in range(valid_lens.shape[0])
                                      for _ in range(self.num_heads)])
        return self.W_o(transpose_output(self.attention(q, k, v, valid_lens), self.num_heads))
