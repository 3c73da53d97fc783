"""The Transformer encoder block in PyTorch: positional encoding, position-wise FFN, add & norm.

Replace every `raise NotImplementedError(...)` below with your code, keeping the names,
signatures and parameter names as they are: the grader calls them exactly so. Run
`pytest` in this folder to check yourself; README.md explains each part.
`MultiHeadAttention` comes from `attention.py` (the previous assignment, d2l 10.5), which
sits next to this file.

Shapes use these names:
    B  batch size            T  number of positions (tokens) in a sequence
    d  num_hiddens, the feature size of every position
"""
import torch
from torch import nn

from attention import MultiHeadAttention


class PositionalEncoding(nn.Module):
    """Add the sine/cosine positional encoding P to X, then apply dropout.

    P has shape (1, max_len, num_hiddens) and is computed once, in __init__:
        P[0, i, 2j]   = sin(i / 10000^(2j / num_hiddens))
        P[0, i, 2j+1] = cos(i / 10000^(2j / num_hiddens))
    for positions i = 0 .. max_len-1 (num_hiddens is even). Keep P a plain attribute
    (self.P), not a parameter or a buffer: the grader loads its own weights into your
    modules with load_state_dict, and P is no weight. self.dropout is an nn.Dropout.
    """

    def __init__(self, num_hiddens, dropout, max_len=1000, **kwargs):
        super().__init__(**kwargs)
        # Hint: make a column of positions, shape (max_len, 1), and a row of the even
        # dimensions 2j = 0, 2, 4, ..., shape (num_hiddens/2,); dividing the one by
        # 10000^(2j/num_hiddens) broadcasts to (max_len, num_hiddens/2). Even columns of P
        # (0::2) take the sine, odd columns (1::2) the cosine.
        # YOUR CODE HERE
        raise NotImplementedError("PositionalEncoding.__init__ is not written yet")

    def forward(self, X):
        """X (B, T, num_hiddens) with T <= max_len. Returns dropout(X + P[:, :T, :]),
        shape (B, T, num_hiddens).
        """
        # Hint: only the first T rows of P belong to this X; P was made on the CPU, so move
        # it to X's device.
        # YOUR CODE HERE
        raise NotImplementedError("PositionalEncoding.forward is not written yet")


class PositionWiseFFN(nn.Module):
    """The position-wise feed-forward network: dense2(relu(dense1(X))), the same MLP at
    every position.

    Parameters: dense1 = nn.Linear(ffn_num_input, ffn_num_hiddens), relu = nn.ReLU(),
    dense2 = nn.Linear(ffn_num_hiddens, ffn_num_outputs) (both Linear layers with bias).
    """

    def __init__(self, ffn_num_input, ffn_num_hiddens, ffn_num_outputs, **kwargs):
        super().__init__(**kwargs)
        # YOUR CODE HERE
        raise NotImplementedError("PositionWiseFFN.__init__ is not written yet")

    def forward(self, X):
        """X (B, T, ffn_num_input) -> (B, T, ffn_num_outputs).
        """
        # Hint: nn.Linear acts on the last axis, so no reshape is needed.
        # YOUR CODE HERE
        raise NotImplementedError("PositionWiseFFN.forward is not written yet")


class AddNorm(nn.Module):
    """The residual connection followed by layer normalization: ln(X + dropout(Y)).

    Parameters: dropout = nn.Dropout(dropout), ln = nn.LayerNorm(normalized_shape), where
    normalized_shape is the shape of the trailing axes to normalize over (an int or a list,
    as nn.LayerNorm takes it).
    """

    def __init__(self, normalized_shape, dropout, **kwargs):
        super().__init__(**kwargs)
        # YOUR CODE HERE
        raise NotImplementedError("AddNorm.__init__ is not written yet")

    def forward(self, X, Y):
        """X, the sublayer's input, and Y, its output, both (B, T, d). Returns (B, T, d).
        """
        # Hint: dropout acts on the sublayer's output only, before the residual sum.
        # YOUR CODE HERE
        raise NotImplementedError("AddNorm.forward is not written yet")


class TransformerEncoderBlock(nn.Module):
    """One Transformer encoder block: multi-head self-attention, add & norm, position-wise
    FFN, add & norm (d2l 10.7; the 0.17 edition calls it EncoderBlock).

    Parameters: attention = MultiHeadAttention(key_size, query_size, value_size,
    num_hiddens, num_heads, dropout, use_bias), addnorm1 = AddNorm(norm_shape, dropout),
    ffn = PositionWiseFFN(ffn_num_input, ffn_num_hiddens, num_hiddens),
    addnorm2 = AddNorm(norm_shape, dropout).
    """

    def __init__(self, key_size, query_size, value_size, num_hiddens, norm_shape,
                 ffn_num_input, ffn_num_hiddens, num_heads, dropout, use_bias=False, **kwargs):
        super().__init__(**kwargs)
        # YOUR CODE HERE
        raise NotImplementedError("TransformerEncoderBlock.__init__ is not written yet")

    def forward(self, X, valid_lens):
        """X (B, T, num_hiddens), valid_lens None or (B,): how many positions of each
        sequence are real (the rest is padding, which no position may attend to).
        Returns (B, T, num_hiddens); self.attention.attention.attention_weights is
        (B*num_heads, T, T).
        """
        # Hint: self-attention uses X as queries, keys and values. The FFN reads the output
        # of the first add & norm, and the second add & norm adds the FFN's output to that
        # same tensor.
        # YOUR CODE HERE
        raise NotImplementedError("TransformerEncoderBlock.forward is not written yet")
