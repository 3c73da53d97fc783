"""Attention in PyTorch: masking, additive and scaled dot-product attention, multi-head attention.

### BEGIN INSTRUCTOR ONLY
This is the instructor's solution and the only place the answers live.
`grader release` turns it into the student skeleton `assignments/attention/attention.py`:
every region between nbgrader's solution markers (the `###` comment lines) becomes a stub
that raises NotImplementedError, these instructor-only lines are dropped, and everything else
(signatures, docstrings, `# Hint:` lines) is copied as it is, so write nothing outside a
region that gives an answer away.

### END INSTRUCTOR ONLY
Replace every `raise NotImplementedError(...)` below with your code, keeping the names,
signatures and parameter names as they are: the grader calls them exactly so. Run
`pytest` in this folder to check yourself; README.md explains each part.

Shapes use these names:
    B  batch size            Q  number of queries       K  number of key-value pairs
    d  query/key feature size V  value feature size      h  number of heads
### BEGIN ZH
PyTorch 中的注意力：掩蔽、加性注意力与缩放点积注意力、多头注意力。

把下面的每个 `raise NotImplementedError(...)` 换成你的代码，名字、签名和参数名都保持原样：
评分程序正是这样调用它们的。在这个文件夹里运行 `pytest` 自检；README.zh-CN.md 讲解了每一部分。

形状中用到的名字：
    B  批量大小                Q  查询的个数              K  键－值对的个数
    d  查询和键的特征维数      V  值的特征维数            h  头数
### END ZH
"""
import math

import torch
from torch import nn


def sequence_mask(X, valid_len, value=0):
    """Replace the entries of X past each row's valid length by `value`.

    X:         (B, T) or (B, T, *features); position t of row i is kept when t < valid_len[i].
    valid_len: (B,), integer or float tensor of whole numbers.
    Returns a tensor shaped like X (the book's version writes into X and returns it).
    ### BEGIN ZH
    把 X 中每一行有效长度之后的元素替换为 `value`。

    X:         (B, T) 或 (B, T, *特征)；当 t < valid_len[i] 时，第 i 行的位置 t 被保留。
    valid_len: (B,)，整数张量，或取值都是整数的浮点张量。
    返回一个形状与 X 相同的张量（书中的版本直接写入 X 并返回它）。
    ### END ZH
    """
    # Hint: compare a row of positions 0..T-1, shape (1, T), with valid_len as a column, shape (B, 1);
    # broadcasting gives a (B, T) boolean mask. Create the positions on X's device.
    ### BEGIN ZH
    # 提示：把一行位置 0..T-1（形状 (1, T)）与竖成一列的 valid_len（形状 (B, 1)）比较；
    # 广播得到一个 (B, T) 的布尔掩码。在 X 所在的设备上创建这些位置。
    ### END ZH
    ### BEGIN SOLUTION
    maxlen = X.size(1)
    positions = torch.arange(maxlen, dtype=torch.float32)  # (T,)
    mask = positions[None, :] < valid_len[:, None]  # (1, T) < (B, 1) -> (B, T)
    X[~mask] = value  # masks whole feature vectors when X has trailing dims
    return X
    ### END SOLUTION


def masked_softmax(X, valid_lens):
    """Softmax over the last axis of X that gives zero weight to keys past the valid length.

    X:          (B, Q, K) attention scores.
    valid_lens: None (no masking), (B,) one length per example (the same for all its
                queries), or (B, Q) one length per query.
    Masked scores are replaced by -1e6 before the softmax, so a row whose valid length
    is 0 comes out uniform (1/K everywhere), and a length larger than K masks nothing.
    Returns (B, Q, K); every row sums to 1.
    ### BEGIN ZH
    掩蔽softmax：在 X 的最后一个轴上做 softmax，让有效长度之后的键得到零权重。

    X:          (B, Q, K) 注意力分数。
    valid_lens: None（不掩蔽）；(B,)，每个样本一个长度（该样本的所有查询都用它）；
                或 (B, Q)，每个查询一个长度。
    被掩蔽的分数在 softmax 之前替换为 -1e6，因此有效长度为 0 的行得到均匀分布（处处为 1/K），
    而大于 K 的长度什么也不掩蔽。
    返回 (B, Q, K)；每一行之和为 1。
    ### END ZH
    """
    # Hint: flatten X to (B*Q, K) so that each row needs one length, turn valid_lens into
    # a (B*Q,) vector (torch.repeat_interleave for the 1-D case, reshape for the 2-D case),
    # mask with sequence_mask(..., value=-1e6), reshape back and take the softmax.
    ### BEGIN ZH
    # 提示：把 X 展平成 (B*Q, K)，这样每一行只需要一个长度；把 valid_lens 变成 (B*Q,) 的向量
    # （一维的情况用 torch.repeat_interleave，二维的情况用 reshape），用
    # sequence_mask(..., value=-1e6) 掩蔽，再变回原来的形状并做 softmax。
    ### END ZH
    ### BEGIN SOLUTION
    if valid_lens is None:
        return nn.functional.softmax(X, dim=-1)
    shape = X.shape  # (B, Q, K)
    if valid_lens.dim() == 1:
        valid_lens = torch.repeat_interleave(valid_lens, shape[1])  # (B,) -> (B*Q,)
    else:
        valid_lens = valid_lens.reshape(-1)  # (B, Q) -> (B*Q,)
    X = sequence_mask(X.reshape(-1, shape[-1]), valid_lens, value=-1e6)  # (B*Q, K)
    return nn.functional.softmax(X.reshape(shape), dim=-1)  # (B, Q, K)
    ### END SOLUTION


class AdditiveAttention(nn.Module):
    """Additive attention: score(q, k) = w_v . tanh(W_q q + W_k k).

    Parameters (all nn.Linear with bias=False): W_k (key_size -> num_hiddens),
    W_q (query_size -> num_hiddens), w_v (num_hiddens -> 1); dropout is an nn.Dropout.
    ### BEGIN ZH
    加性注意力：score(q, k) = w_v . tanh(W_q q + W_k k)。

    参数（都是 bias=False 的 nn.Linear）：W_k (key_size -> num_hiddens)，
    W_q (query_size -> num_hiddens)，w_v (num_hiddens -> 1)；dropout 是一个 nn.Dropout（暂退法）。
    ### END ZH
    """

    def __init__(self, key_size, query_size, num_hiddens, dropout, **kwargs):
        super().__init__(**kwargs)
        # Hint: the parameter names W_k, W_q, w_v and bias=False are part of the interface:
        # the grader loads its own weights into your module with load_state_dict.
        ### BEGIN ZH
        # 提示：参数名 W_k、W_q、w_v 和 bias=False 都是接口的一部分：
        # 评分程序会用 load_state_dict 把它自己的权重加载到你的模块里。
        ### END ZH
        ### BEGIN SOLUTION
        self.W_k = nn.Linear(key_size, num_hiddens, bias=False)
        self.W_q = nn.Linear(query_size, num_hiddens, bias=False)
        self.w_v = nn.Linear(num_hiddens, 1, bias=False)
        self.dropout = nn.Dropout(dropout)
        ### END SOLUTION

    def forward(self, queries, keys, values, valid_lens):
        """queries (B, Q, query_size), keys (B, K, key_size), values (B, K, V),
        valid_lens None, (B,) or (B, Q). Returns (B, Q, V) and stores
        self.attention_weights (B, Q, K), taken before dropout.
        ### BEGIN ZH
        `queries`（查询）(B, Q, query_size)，`keys`（键）(B, K, key_size)，`values`（值）(B, K, V)，
        valid_lens 为 None、(B,) 或 (B, Q)。返回 (B, Q, V)，并把注意力权重存进
        self.attention_weights (B, Q, K)：取暂退法（dropout）之前的权重。
        ### END ZH
        """
        # Hint: after W_q and W_k, queries.unsqueeze(2) is (B, Q, 1, num_hiddens) and
        # keys.unsqueeze(1) is (B, 1, K, num_hiddens); their sum broadcasts to
        # (B, Q, K, num_hiddens). Drop only the last axis of w_v's output.
        ### BEGIN ZH
        # 提示：经过 W_q 和 W_k 之后，queries.unsqueeze(2) 是 (B, Q, 1, num_hiddens)，
        # keys.unsqueeze(1) 是 (B, 1, K, num_hiddens)；二者相加，广播成
        # (B, Q, K, num_hiddens)。只去掉 w_v 输出的最后一个轴。
        ### END ZH
        ### BEGIN SOLUTION
        queries, keys = self.W_q(queries), self.W_k(keys)  # (B, Q, hidden), (B, K, hidden)
        features = torch.tanh(queries.unsqueeze(2) + keys.unsqueeze(1))  # (B, Q, K, hidden)
        scores = self.w_v(features).squeeze(-1)  # (B, Q, K, 1) -> (B, Q, K)
        self.attention_weights = masked_softmax(scores, valid_lens)  # (B, Q, K)
        return torch.bmm(self.dropout(self.attention_weights), values)  # (B, Q, V)
        ### END SOLUTION


class DotProductAttention(nn.Module):
    """Scaled dot-product attention: softmax(Q K^T / sqrt(d)) V. Dropout acts on the weights.
    ### BEGIN ZH
    缩放点积注意力：softmax(Q K^T / sqrt(d)) V。暂退法（dropout）作用在注意力权重上。
    ### END ZH
    """

    def __init__(self, dropout, **kwargs):
        super().__init__(**kwargs)
        ### BEGIN SOLUTION
        self.dropout = nn.Dropout(dropout)
        ### END SOLUTION

    def forward(self, queries, keys, values, valid_lens=None):
        """queries (B, Q, d), keys (B, K, d), values (B, K, V), valid_lens None, (B,)
        or (B, Q). Returns (B, Q, V) and stores self.attention_weights (B, Q, K).
        ### BEGIN ZH
        `queries`（查询）(B, Q, d)，`keys`（键）(B, K, d)，`values`（值）(B, K, V)，valid_lens 为 None、
        (B,) 或 (B, Q)。返回 (B, Q, V)，并把注意力权重存进 self.attention_weights (B, Q, K)。
        ### END ZH
        """
        # Hint: d is the size of the last axis of queries; keys.transpose(1, 2) is (B, d, K).
        ### BEGIN ZH
        # 提示：d 是 `queries` 最后一个轴的长度；keys.transpose(1, 2) 是 (B, d, K)。
        ### END ZH
        ### BEGIN SOLUTION
        d = queries.shape[-1]
        scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(d)  # (B, Q, K)
        self.attention_weights = masked_softmax(scores, valid_lens)  # (B, Q, K)
        return torch.bmm(self.dropout(self.attention_weights), values)  # (B, Q, V)
        ### END SOLUTION


def transpose_qkv(X, num_heads):
    """Split the last axis into heads and stack the heads along the batch axis.

    X: (B, n, num_hiddens) -> (B*num_heads, n, num_hiddens/num_heads); row b*num_heads + i
    of the result holds head i of example b.
    ### BEGIN ZH
    把最后一个轴拆成多个头，再把这些头沿批量轴堆叠起来。

    X: (B, n, num_hiddens) -> (B*num_heads, n, num_hiddens/num_heads)；结果的第
    b*num_heads + i 行是样本 b 的第 i 个头。
    ### END ZH
    """
    # Hint: reshape to (B, n, num_heads, -1), then permute so the head axis comes right after
    # the batch axis, then merge those two axes.
    ### BEGIN ZH
    # 提示：先 reshape 成 (B, n, num_heads, -1)，再用 permute 把头所在的轴换到批量轴之后，
    # 最后把这两个轴合并成一个。
    ### END ZH
    ### BEGIN SOLUTION
    X = X.reshape(X.shape[0], X.shape[1], num_heads, -1)  # (B, n, heads, hidden/heads)
    X = X.permute(0, 2, 1, 3)  # (B, heads, n, hidden/heads)
    return X.reshape(-1, X.shape[2], X.shape[3])  # (B*heads, n, hidden/heads)
    ### END SOLUTION


def transpose_output(X, num_heads):
    """Undo transpose_qkv: (B*num_heads, n, num_hiddens/num_heads) -> (B, n, num_hiddens).
    ### BEGIN ZH
    撤销 transpose_qkv：(B*num_heads, n, num_hiddens/num_heads) -> (B, n, num_hiddens)。
    ### END ZH
    """
    ### BEGIN SOLUTION
    X = X.reshape(-1, num_heads, X.shape[1], X.shape[2])  # (B, heads, n, hidden/heads)
    X = X.permute(0, 2, 1, 3)  # (B, n, heads, hidden/heads)
    return X.reshape(X.shape[0], X.shape[1], -1)  # (B, n, hidden)
    ### END SOLUTION


class MultiHeadAttention(nn.Module):
    """Multi-head attention built from num_heads scaled dot-product attentions.

    Parameters: W_q (query_size -> num_hiddens), W_k (key_size -> num_hiddens),
    W_v (value_size -> num_hiddens), W_o (num_hiddens -> num_hiddens), all nn.Linear with
    the given `bias`; self.attention is a DotProductAttention(dropout) and
    self.num_heads the number of heads.
    ### BEGIN ZH
    由 num_heads 个缩放点积注意力组成的多头注意力。

    参数：W_q (query_size -> num_hiddens)，W_k (key_size -> num_hiddens)，
    W_v (value_size -> num_hiddens)，W_o (num_hiddens -> num_hiddens)，都是使用给定 `bias` 的
    nn.Linear；self.attention 是一个 DotProductAttention(dropout)，self.num_heads 是头数。
    ### END ZH
    """

    def __init__(self, key_size, query_size, value_size, num_hiddens,
                 num_heads, dropout, bias=False, **kwargs):
        super().__init__(**kwargs)
        ### BEGIN SOLUTION
        self.num_heads = num_heads
        self.attention = DotProductAttention(dropout)
        self.W_q = nn.Linear(query_size, num_hiddens, bias=bias)
        self.W_k = nn.Linear(key_size, num_hiddens, bias=bias)
        self.W_v = nn.Linear(value_size, num_hiddens, bias=bias)
        self.W_o = nn.Linear(num_hiddens, num_hiddens, bias=bias)
        ### END SOLUTION

    def forward(self, queries, keys, values, valid_lens):
        """queries (B, Q, query_size), keys (B, K, key_size), values (B, K, value_size),
        valid_lens None, (B,) or (B, Q). Returns (B, Q, num_hiddens);
        self.attention.attention_weights is (B*num_heads, Q, K).
        ### BEGIN ZH
        `queries`（查询）(B, Q, query_size)，`keys`（键）(B, K, key_size)，
        `values`（值）(B, K, value_size)，valid_lens 为 None、(B,) 或 (B, Q)。
        返回 (B, Q, num_hiddens)；self.attention.attention_weights 是 (B*num_heads, Q, K)。
        ### END ZH
        """
        # Hint: every head of example b needs example b's valid length, so repeat each entry
        # of valid_lens num_heads times in a row along axis 0 (torch.repeat_interleave with
        # dim=0), not the whole tensor one copy after another (Tensor.repeat).
        ### BEGIN ZH
        # 提示：样本 b 的每个头都需要样本 b 的有效长度，所以要沿第 0 轴把 valid_lens 的每个元素
        # 原地连续重复 num_heads 次（带 dim=0 的 torch.repeat_interleave），而不是把整个张量
        # 一份接一份地复制（Tensor.repeat）。
        ### END ZH
        ### BEGIN SOLUTION
        queries = transpose_qkv(self.W_q(queries), self.num_heads)  # (B*h, Q, hidden/h)
        keys = transpose_qkv(self.W_k(keys), self.num_heads)  # (B*h, K, hidden/h)
        values = transpose_qkv(self.W_v(values), self.num_heads)  # (B*h, K, hidden/h)
        if valid_lens is not None:
            # (B,) -> (B*h,) or (B, Q) -> (B*h, Q)
            valid_lens = torch.repeat_interleave(valid_lens, repeats=self.num_heads, dim=0)
        output = self.attention(queries, keys, values, valid_lens)  # (B*h, Q, hidden/h)
        output_concat = transpose_output(output, self.num_heads)  # (B, Q, hidden)
        return self.W_o(output_concat)  # (B, Q, hidden)
        ### END SOLUTION
