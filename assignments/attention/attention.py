"""Attention in PyTorch: masking, additive and scaled dot-product attention, multi-head attention.

Replace every `raise NotImplementedError(...)` below with your code, keeping the names,
signatures and parameter names as they are: the grader calls them exactly so. Run
`pytest` in this folder to check yourself; README.md explains each part.

Shapes use these names:
    B  batch size            Q  number of queries       K  number of key-value pairs
    d  query/key feature size V  value feature size      h  number of heads
"""
import math

import torch
from torch import nn


def sequence_mask(X, valid_len, value=0):
    """Replace the entries of X past each row's valid length by `value`.

    X:         (B, T) or (B, T, *features); position t of row i is kept when t < valid_len[i].
    valid_len: (B,), integer or float tensor of whole numbers.
    Returns a tensor shaped like X (the book's version writes into X and returns it).
    """
    # Hint: compare a row of positions 0..T-1, shape (1, T), with valid_len as a column, shape (B, 1);
    # broadcasting gives a (B, T) boolean mask. Create the positions on X's device.
    # YOUR CODE HERE
    raise NotImplementedError("sequence_mask is not written yet")


def masked_softmax(X, valid_lens):
    """Softmax over the last axis of X that gives zero weight to keys past the valid length.

    X:          (B, Q, K) attention scores.
    valid_lens: None (no masking), (B,) one length per example (the same for all its
                queries), or (B, Q) one length per query.
    Masked scores are replaced by -1e6 before the softmax, so a row whose valid length
    is 0 comes out uniform (1/K everywhere), and a length larger than K masks nothing.
    Returns (B, Q, K); every row sums to 1.
    """
    # Hint: flatten X to (B*Q, K) so that each row needs one length, turn valid_lens into
    # a (B*Q,) vector (torch.repeat_interleave for the 1-D case, reshape for the 2-D case),
    # mask with sequence_mask(..., value=-1e6), reshape back and take the softmax.
    # YOUR CODE HERE
    raise NotImplementedError("masked_softmax is not written yet")


class AdditiveAttention(nn.Module):
    """Additive attention: score(q, k) = w_v . tanh(W_q q + W_k k).

    Parameters (all nn.Linear with bias=False): W_k (key_size -> num_hiddens),
    W_q (query_size -> num_hiddens), w_v (num_hiddens -> 1); dropout is an nn.Dropout.
    """

    def __init__(self, key_size, query_size, num_hiddens, dropout, **kwargs):
        super().__init__(**kwargs)
        # Hint: the parameter names W_k, W_q, w_v and bias=False are part of the interface:
        # the grader loads its own weights into your module with load_state_dict.
        # YOUR CODE HERE
        raise NotImplementedError("AdditiveAttention.__init__ is not written yet")

    def forward(self, queries, keys, values, valid_lens):
        """queries (B, Q, query_size), keys (B, K, key_size), values (B, K, V),
        valid_lens None, (B,) or (B, Q). Returns (B, Q, V) and stores
        self.attention_weights (B, Q, K), taken before dropout.
        """
        # Hint: after W_q and W_k, queries.unsqueeze(2) is (B, Q, 1, num_hiddens) and
        # keys.unsqueeze(1) is (B, 1, K, num_hiddens); their sum broadcasts to
        # (B, Q, K, num_hiddens). Drop only the last axis of w_v's output.
        # YOUR CODE HERE
        raise NotImplementedError("AdditiveAttention.forward is not written yet")


class DotProductAttention(nn.Module):
    """Scaled dot-product attention: softmax(Q K^T / sqrt(d)) V. Dropout acts on the weights.
    """

    def __init__(self, dropout, **kwargs):
        super().__init__(**kwargs)
        # YOUR CODE HERE
        raise NotImplementedError("DotProductAttention.__init__ is not written yet")

    def forward(self, queries, keys, values, valid_lens=None):
        """queries (B, Q, d), keys (B, K, d), values (B, K, V), valid_lens None, (B,)
        or (B, Q). Returns (B, Q, V) and stores self.attention_weights (B, Q, K).
        """
        # Hint: d is the size of the last axis of queries; keys.transpose(1, 2) is (B, d, K).
        # YOUR CODE HERE
        raise NotImplementedError("DotProductAttention.forward is not written yet")


def transpose_qkv(X, num_heads):
    """Split the last axis into heads and stack the heads along the batch axis.

    X: (B, n, num_hiddens) -> (B*num_heads, n, num_hiddens/num_heads); row b*num_heads + i
    of the result holds head i of example b.
    """
    # Hint: reshape to (B, n, num_heads, -1), then permute so the head axis comes right after
    # the batch axis, then merge those two axes.
    # YOUR CODE HERE
    raise NotImplementedError("transpose_qkv is not written yet")


def transpose_output(X, num_heads):
    """Undo transpose_qkv: (B*num_heads, n, num_hiddens/num_heads) -> (B, n, num_hiddens).
    """
    # YOUR CODE HERE
    raise NotImplementedError("transpose_output is not written yet")


class MultiHeadAttention(nn.Module):
    """Multi-head attention built from num_heads scaled dot-product attentions.

    Parameters: W_q (query_size -> num_hiddens), W_k (key_size -> num_hiddens),
    W_v (value_size -> num_hiddens), W_o (num_hiddens -> num_hiddens), all nn.Linear with
    the given `bias`; self.attention is a DotProductAttention(dropout) and
    self.num_heads the number of heads.
    """

    def __init__(self, key_size, query_size, value_size, num_hiddens,
                 num_heads, dropout, bias=False, **kwargs):
        super().__init__(**kwargs)
        # YOUR CODE HERE
        raise NotImplementedError("MultiHeadAttention.__init__ is not written yet")

    def forward(self, queries, keys, values, valid_lens):
        """queries (B, Q, query_size), keys (B, K, key_size), values (B, K, value_size),
        valid_lens None, (B,) or (B, Q). Returns (B, Q, num_hiddens);
        self.attention.attention_weights is (B*num_heads, Q, K).
        """
        # Hint: every head of example b needs example b's valid length, so repeat each entry
        # of valid_lens num_heads times in a row along axis 0 (torch.repeat_interleave with
        # dim=0), not the whole tensor one copy after another (Tensor.repeat).
        # YOUR CODE HERE
        raise NotImplementedError("MultiHeadAttention.forward is not written yet")
