# Omar - attention assignment (I wrote it step by step with loops to understand it)
import math
import torch
from torch import nn


def sequence_mask(X, valid_len, value=0):
    result = X.clone()
    batch_size, steps = X.shape[0], X.shape[1]
    for row in range(batch_size):
        n = int(valid_len[row].item())
        if n < steps:
            result[row, max(n, 0):] = value
    return result


def masked_softmax(X, valid_lens):
    if valid_lens is None:
        return torch.nn.functional.softmax(X, dim=-1)
    output = torch.empty_like(X)
    for b in range(X.shape[0]):
        for q in range(X.shape[1]):
            if valid_lens.dim() == 1:
                n = int(valid_lens[b].item())
            else:
                n = int(valid_lens[b][q].item())
            row = X[b, q].clone()
            if n < X.shape[2]:
                row[max(n, 0):] = -1e6
            output[b, q] = torch.nn.functional.softmax(row, dim=0)
    return output


class AdditiveAttention(nn.Module):
    def __init__(self, key_size, query_size, num_hiddens, dropout, **kwargs):
        super().__init__(**kwargs)
        self.W_k = nn.Linear(key_size, num_hiddens, bias=False)
        self.W_q = nn.Linear(query_size, num_hiddens, bias=False)
        self.w_v = nn.Linear(num_hiddens, 1, bias=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens):
        qh = self.W_q(queries)
        kh = self.W_k(keys)
        rows = []
        for j in range(qh.shape[1]):
            combined = torch.tanh(qh[:, j:j + 1, :] + kh)      # (B, K, H)
            rows.append(self.w_v(combined).squeeze(-1))     # (B, K)
        scores = torch.stack(rows, dim=1)
        self.attention_weights = masked_softmax(scores, valid_lens)
        return torch.bmm(self.dropout(self.attention_weights), values)


class DotProductAttention(nn.Module):
    def __init__(self, dropout, **kwargs):
        super().__init__(**kwargs)
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens=None):
        dim = queries.shape[-1]
        scores = []
        for b in range(queries.shape[0]):
            scores.append(torch.mm(queries[b], keys[b].t()) / math.sqrt(dim))
        scores = torch.stack(scores)
        self.attention_weights = masked_softmax(scores, valid_lens)
        weights = self.dropout(self.attention_weights)
        return torch.stack([torch.mm(weights[b], values[b]) for b in range(weights.shape[0])])


def transpose_qkv(X, num_heads):
    piece = X.shape[-1] // num_heads
    out = []
    for b in range(X.shape[0]):
        for h in range(num_heads):
            out.append(X[b, :, h * piece:(h + 1) * piece])
    return torch.stack(out, dim=0)


def transpose_output(X, num_heads):
    out = []
    for b in range(0, X.shape[0], num_heads):
        out.append(torch.cat(list(X[b:b + num_heads]), dim=-1))
    return torch.stack(out, dim=0)


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
            repeated = []
            for b in range(valid_lens.shape[0]):
                for _ in range(self.num_heads):
                    repeated.append(valid_lens[b])
            valid_lens = torch.stack(repeated)
        heads = self.attention(q, k, v, valid_lens)
        return self.W_o(transpose_output(heads, self.num_heads))
