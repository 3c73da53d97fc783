"""Loops and torch.nn.functional: P filled entry by entry with Python's math, the layers
called through F.linear, F.relu, F.dropout and F.layer_norm on the modules' own parameters.

Nothing here is the book's code, but every result is the same: the parameter names
(dense1, dense2, ln) are the interface, and F.dropout draws the same masks as nn.Dropout.
"""
import math

import torch
import torch.nn.functional as F
from torch import nn

from attention import MultiHeadAttention


class PositionalEncoding(nn.Module):
    def __init__(self, num_hiddens, dropout, max_len=1000):
        super().__init__()
        self.p = dropout
        rows = []
        for i in range(max_len):
            row = []
            for j in range(0, num_hiddens, 2):
                angle = i / 10000 ** (j / num_hiddens)
                row += [math.sin(angle), math.cos(angle)]
            rows.append(row[:num_hiddens])
        self.P = torch.tensor(rows, dtype=torch.float32).unsqueeze(0)

    def forward(self, X):
        steps = X.shape[1]
        return F.dropout(X + self.P[:, :steps].to(X.device), self.p, self.training)


class PositionWiseFFN(nn.Module):
    def __init__(self, ffn_num_input, ffn_num_hiddens, ffn_num_outputs):
        super().__init__()
        self.dense1 = nn.Linear(ffn_num_input, ffn_num_hiddens)
        self.dense2 = nn.Linear(ffn_num_hiddens, ffn_num_outputs)

    def forward(self, X):
        hidden = F.relu(F.linear(X, self.dense1.weight, self.dense1.bias))
        return F.linear(hidden, self.dense2.weight, self.dense2.bias)


class AddNorm(nn.Module):
    def __init__(self, normalized_shape, dropout):
        super().__init__()
        self.p = dropout
        self.ln = nn.LayerNorm(normalized_shape)

    def forward(self, X, Y):
        summed = X + F.dropout(Y, self.p, self.training)
        return F.layer_norm(summed, self.ln.normalized_shape, self.ln.weight, self.ln.bias,
                            self.ln.eps)


class TransformerEncoderBlock(nn.Module):
    def __init__(self, key_size, query_size, value_size, num_hiddens, norm_shape,
                 ffn_num_input, ffn_num_hiddens, num_heads, dropout, use_bias=False):
        super().__init__()
        self.attention = MultiHeadAttention(key_size, query_size, value_size, num_hiddens,
                                            num_heads, dropout, bias=use_bias)
        self.addnorm1 = AddNorm(norm_shape, dropout)
        self.ffn = PositionWiseFFN(ffn_num_input, ffn_num_hiddens, num_hiddens)
        self.addnorm2 = AddNorm(norm_shape, dropout)

    def forward(self, X, valid_lens):
        sublayers = [lambda H: self.attention(H, H, H, valid_lens), self.ffn]
        for sublayer, addnorm in zip(sublayers, [self.addnorm1, self.addnorm2]):
            X = addnorm(X, sublayer(X))
        return X
