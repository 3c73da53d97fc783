"""Attention in PyTorch: masking, additive and scaled dot-product attention, multi-head attention.

This file is given: the reference solution of an earlier assignment, which this one builds on.
Import from it by its module name, `attention`, and leave it as it is: the grader uses its
own copy, not yours.

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
    maxlen = X.size(1)
    positions = torch.arange(maxlen, dtype=torch.float32, device=X.device)  # (T,)
    mask = positions[None, :] < valid_len[:, None]  # (1, T) < (B, 1) -> (B, T)
    X[~mask] = value  # masks whole feature vectors when X has trailing dims
    return X


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
    if valid_lens is None:
        return nn.functional.softmax(X, dim=-1)
    shape = X.shape  # (B, Q, K)
    if valid_lens.dim() == 1:
        valid_lens = torch.repeat_interleave(valid_lens, shape[1])  # (B,) -> (B*Q,)
    else:
        valid_lens = valid_lens.reshape(-1)  # (B, Q) -> (B*Q,)
    X = sequence_mask(X.reshape(-1, shape[-1]), valid_lens, value=-1e6)  # (B*Q, K)
    return nn.functional.softmax(X.reshape(shape), dim=-1)  # (B, Q, K)


class AdditiveAttention(nn.Module):
    """Additive attention: score(q, k) = w_v . tanh(W_q q + W_k k).

    Parameters (all nn.Linear with bias=False): W_k (key_size -> num_hiddens),
    W_q (query_size -> num_hiddens), w_v (num_hiddens -> 1); dropout is an nn.Dropout.
    """

    def __init__(self, key_size, query_size, num_hiddens, dropout, **kwargs):
        super().__init__(**kwargs)
        # Hint: the parameter names W_k, W_q, w_v and bias=False are part of the interface:
        # the grader loads its own weights into your module with load_state_dict.
        self.W_k = nn.Linear(key_size, num_hiddens, bias=False)
        self.W_q = nn.Linear(query_size, num_hiddens, bias=False)
        self.w_v = nn.Linear(num_hiddens, 1, bias=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens):
        """queries (B, Q, query_size), keys (B, K, key_size), values (B, K, V),
        valid_lens None, (B,) or (B, Q). Returns (B, Q, V) and stores
        self.attention_weights (B, Q, K), taken before dropout.
        """
        # Hint: after W_q and W_k, queries.unsqueeze(2) is (B, Q, 1, num_hiddens) and
        # keys.unsqueeze(1) is (B, 1, K, num_hiddens); their sum broadcasts to
        # (B, Q, K, num_hiddens). Drop only the last axis of w_v's output.
        queries, keys = self.W_q(queries), self.W_k(keys)  # (B, Q, hidden), (B, K, hidden)
        features = torch.tanh(queries.unsqueeze(2) + keys.unsqueeze(1))  # (B, Q, K, hidden)
        scores = self.w_v(features).squeeze(-1)  # (B, Q, K, 1) -> (B, Q, K)
        self.attention_weights = masked_softmax(scores, valid_lens)  # (B, Q, K)
        return torch.bmm(self.dropout(self.attention_weights), values)  # (B, Q, V)


class DotProductAttention(nn.Module):
    """Scaled dot-product attention: softmax(Q K^T / sqrt(d)) V. Dropout acts on the weights.
    """

    def __init__(self, dropout, **kwargs):
        super().__init__(**kwargs)
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens=None):
        """queries (B, Q, d), keys (B, K, d), values (B, K, V), valid_lens None, (B,)
        or (B, Q). Returns (B, Q, V) and stores self.attention_weights (B, Q, K).
        """
        # Hint: d is the size of the last axis of queries; keys.transpose(1, 2) is (B, d, K).
        d = queries.shape[-1]
        scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(d)  # (B, Q, K)
        self.attention_weights = masked_softmax(scores, valid_lens)  # (B, Q, K)
        return torch.bmm(self.dropout(self.attention_weights), values)  # (B, Q, V)


def transpose_qkv(X, num_heads):
    """Split the last axis into heads and stack the heads along the batch axis.

    X: (B, n, num_hiddens) -> (B*num_heads, n, num_hiddens/num_heads); row b*num_heads + i
    of the result holds head i of example b.
    """
    # Hint: reshape to (B, n, num_heads, -1), then permute so the head axis comes right after
    # the batch axis, then merge those two axes.
    X = X.reshape(X.shape[0], X.shape[1], num_heads, -1)  # (B, n, heads, hidden/heads)
    X = X.permute(0, 2, 1, 3)  # (B, heads, n, hidden/heads)
    return X.reshape(-1, X.shape[2], X.shape[3])  # (B*heads, n, hidden/heads)


def transpose_output(X, num_heads):
    """Undo transpose_qkv: (B*num_heads, n, num_hiddens/num_heads) -> (B, n, num_hiddens).
    """
    X = X.reshape(-1, num_heads, X.shape[1], X.shape[2])  # (B, heads, n, hidden/heads)
    X = X.permute(0, 2, 1, 3)  # (B, n, heads, hidden/heads)
    return X.reshape(X.shape[0], X.shape[1], -1)  # (B, n, hidden)


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
        self.num_heads = num_heads
        self.attention = DotProductAttention(dropout)
        self.W_q = nn.Linear(query_size, num_hiddens, bias=bias)
        self.W_k = nn.Linear(key_size, num_hiddens, bias=bias)
        self.W_v = nn.Linear(value_size, num_hiddens, bias=bias)
        self.W_o = nn.Linear(num_hiddens, num_hiddens, bias=bias)

    def forward(self, queries, keys, values, valid_lens):
        """queries (B, Q, query_size), keys (B, K, key_size), values (B, K, value_size),
        valid_lens None, (B,) or (B, Q). Returns (B, Q, num_hiddens);
        self.attention.attention_weights is (B*num_heads, Q, K).
        """
        # Hint: every head of example b needs example b's valid length, so repeat each entry
        # of valid_lens num_heads times in a row along axis 0 (torch.repeat_interleave with
        # dim=0), not the whole tensor one copy after another (Tensor.repeat).
        queries = transpose_qkv(self.W_q(queries), self.num_heads)  # (B*h, Q, hidden/h)
        keys = transpose_qkv(self.W_k(keys), self.num_heads)  # (B*h, K, hidden/h)
        values = transpose_qkv(self.W_v(values), self.num_heads)  # (B*h, K, hidden/h)
        if valid_lens is not None:
            # (B,) -> (B*h,) or (B, Q) -> (B*h, Q)
            valid_lens = torch.repeat_interleave(valid_lens, repeats=self.num_heads, dim=0)
        output = self.attention(queries, keys, values, valid_lens)  # (B*h, Q, hidden/h)
        output_concat = transpose_output(output, self.num_heads)  # (B, Q, hidden)
        return self.W_o(output_concat)  # (B, Q, hidden)
