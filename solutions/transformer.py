"""The Transformer encoder block in PyTorch: positional encoding, position-wise FFN, add & norm.

### BEGIN INSTRUCTOR ONLY
This is the instructor's solution and the only place the answers live.
`grader release --assignment transformer` turns it into the student skeleton
`assignments/transformer/transformer.py`: every region between nbgrader's solution markers
(the `###` comment lines) becomes a stub that raises NotImplementedError, these
instructor-only lines are dropped, and everything else (signatures, docstrings, `# Hint:`
lines, the import of MultiHeadAttention) is copied as it is, so write nothing outside a
region that gives an answer away.

### END INSTRUCTOR ONLY
Replace every `raise NotImplementedError(...)` below with your code, keeping the names,
signatures and parameter names as they are: the grader calls them exactly so. Run
`pytest` in this folder to check yourself; README.md explains each part.
`MultiHeadAttention` comes from `attention.py` (the previous assignment, d2l 10.5), which
sits next to this file.

Shapes use these names:
    B  batch size            T  number of positions (tokens) in a sequence
    d  num_hiddens, the feature size of every position
### BEGIN ZH
PyTorch 中的 Transformer 编码器块：位置编码、基于位置的前馈网络、残差连接和层规范化。

把下面的每个 `raise NotImplementedError(...)` 换成你的代码，名字、签名和参数名都保持原样：
评分程序正是这样调用它们的。在这个文件夹里运行 `pytest` 自检；README.zh-CN.md 讲解了每一部分。
`MultiHeadAttention` 来自与本文件放在一起的 `attention.py`（上一次作业，d2l 10.5）。

形状中用到的名字：
    B  批量大小                T  一个序列中的位置（词元）个数
    d  num_hiddens，每个位置的特征维数
### END ZH
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
    ### BEGIN ZH
    把正弦/余弦位置编码 P 加到 X 上，再做暂退法（dropout）。

    P 的形状是 (1, max_len, num_hiddens)，在 __init__ 中一次算好：
        P[0, i, 2j]   = sin(i / 10000^(2j / num_hiddens))
        P[0, i, 2j+1] = cos(i / 10000^(2j / num_hiddens))
    其中位置 i = 0 .. max_len-1（num_hiddens 为偶数）。P 保持为普通属性 (self.P)，
    不要做成参数或缓冲区：评分程序用 load_state_dict 把它自己的权重加载到你的模块里，
    而 P 不是权重。self.dropout 是一个 nn.Dropout。
    ### END ZH
    """

    def __init__(self, num_hiddens, dropout, max_len=1000, **kwargs):
        super().__init__(**kwargs)
        # Hint: make a column of positions, shape (max_len, 1), and a row of the even
        # dimensions 2j = 0, 2, 4, ..., shape (num_hiddens/2,); dividing the one by
        # 10000^(2j/num_hiddens) broadcasts to (max_len, num_hiddens/2). Even columns of P
        # (0::2) take the sine, odd columns (1::2) the cosine.
        ### BEGIN ZH
        # 提示：做一列位置，形状 (max_len, 1)，和一行偶数维 2j = 0, 2, 4, ...，形状
        # (num_hiddens/2,)；用前者除以 10000^(2j/num_hiddens)，广播得到 (max_len, num_hiddens/2)。
        # P 的偶数列 (0::2) 取正弦，奇数列 (1::2) 取余弦。
        ### END ZH
        ### BEGIN SOLUTION
        self.dropout = nn.Dropout(dropout)
        self.P = torch.zeros((1, max_len, num_hiddens))  # (1, max_len, d)
        positions = torch.arange(max_len, dtype=torch.float32).reshape(-1, 1)  # (max_len, 1)
        dims = torch.arange(0, num_hiddens, 2, dtype=torch.float32)  # (d/2,): 2j = 0, 2, 4, ...
        X = positions / torch.pow(10000, dims / num_hiddens)  # (max_len, d/2)
        self.P[:, :, 0::2] = torch.sin(X)  # even columns
        self.P[:, :, 1::2] = torch.cos(X)  # odd columns
        ### END SOLUTION

    def forward(self, X):
        """X (B, T, num_hiddens) with T <= max_len. Returns dropout(X + P[:, :T, :]),
        shape (B, T, num_hiddens).
        ### BEGIN ZH
        X (B, T, num_hiddens)，T <= max_len。返回 dropout(X + P[:, :T, :])，
        形状 (B, T, num_hiddens)。
        ### END ZH
        """
        # Hint: only the first T rows of P belong to this X; P was made on the CPU, so move
        # it to X's device.
        ### BEGIN ZH
        # 提示：只有 P 的前 T 行属于这个 X；P 是在 CPU 上创建的，要把它移到 X 所在的设备上。
        ### END ZH
        ### BEGIN SOLUTION
        X = X + self.P[:, :X.shape[1], :].to(X.device)  # (B, T, d) + (1, T, d) -> (B, T, d)
        return self.dropout(X)  # (B, T, d)
        ### END SOLUTION


class PositionWiseFFN(nn.Module):
    """The position-wise feed-forward network: dense2(relu(dense1(X))), the same MLP at
    every position.

    Parameters: dense1 = nn.Linear(ffn_num_input, ffn_num_hiddens), relu = nn.ReLU(),
    dense2 = nn.Linear(ffn_num_hiddens, ffn_num_outputs) (both Linear layers with bias).
    ### BEGIN ZH
    基于位置的前馈网络：dense2(relu(dense1(X)))，每个位置用同一个多层感知机。

    参数：dense1 = nn.Linear(ffn_num_input, ffn_num_hiddens)，relu = nn.ReLU()，
    dense2 = nn.Linear(ffn_num_hiddens, ffn_num_outputs)（两个 Linear 层都带偏置）。
    ### END ZH
    """

    def __init__(self, ffn_num_input, ffn_num_hiddens, ffn_num_outputs, **kwargs):
        super().__init__(**kwargs)
        ### BEGIN SOLUTION
        self.dense1 = nn.Linear(ffn_num_input, ffn_num_hiddens)
        self.relu = nn.ReLU()
        self.dense2 = nn.Linear(ffn_num_hiddens, ffn_num_outputs)
        ### END SOLUTION

    def forward(self, X):
        """X (B, T, ffn_num_input) -> (B, T, ffn_num_outputs).
        ### BEGIN ZH
        输入 X 的形状为 (B, T, ffn_num_input)，输出的形状为 (B, T, ffn_num_outputs)。
        ### END ZH
        """
        # Hint: nn.Linear acts on the last axis, so no reshape is needed.
        ### BEGIN ZH
        # 提示：nn.Linear 作用在最后一个轴上，所以不需要 reshape。
        ### END ZH
        ### BEGIN SOLUTION
        hidden = self.relu(self.dense1(X))  # (B, T, ffn_num_hiddens)
        return self.dense2(hidden)  # (B, T, ffn_num_outputs)
        ### END SOLUTION


class AddNorm(nn.Module):
    """The residual connection followed by layer normalization: ln(X + dropout(Y)).

    Parameters: dropout = nn.Dropout(dropout), ln = nn.LayerNorm(normalized_shape), where
    normalized_shape is the shape of the trailing axes to normalize over (an int or a list,
    as nn.LayerNorm takes it).
    ### BEGIN ZH
    残差连接后接层规范化：ln(X + dropout(Y))。

    参数：dropout = nn.Dropout(dropout)，ln = nn.LayerNorm(normalized_shape)，其中
    normalized_shape 是要规范化的末尾几个轴的形状（整数或列表，与 nn.LayerNorm 的参数相同）。
    ### END ZH
    """

    def __init__(self, normalized_shape, dropout, **kwargs):
        super().__init__(**kwargs)
        ### BEGIN SOLUTION
        self.dropout = nn.Dropout(dropout)
        self.ln = nn.LayerNorm(normalized_shape)
        ### END SOLUTION

    def forward(self, X, Y):
        """X, the sublayer's input, and Y, its output, both (B, T, d). Returns (B, T, d).
        ### BEGIN ZH
        X 是子层的输入，Y 是子层的输出，形状都是 (B, T, d)。返回 (B, T, d)。
        ### END ZH
        """
        # Hint: dropout acts on the sublayer's output only, before the residual sum.
        ### BEGIN ZH
        # 提示：暂退法只作用在子层的输出上，在残差相加之前。
        ### END ZH
        ### BEGIN SOLUTION
        residual = X + self.dropout(Y)  # (B, T, d)
        return self.ln(residual)  # (B, T, d), normalized over normalized_shape
        ### END SOLUTION


class TransformerEncoderBlock(nn.Module):
    """One Transformer encoder block: multi-head self-attention, add & norm, position-wise
    FFN, add & norm (d2l 10.7; the 0.17 edition calls it EncoderBlock).

    Parameters: attention = MultiHeadAttention(key_size, query_size, value_size,
    num_hiddens, num_heads, dropout, use_bias), addnorm1 = AddNorm(norm_shape, dropout),
    ffn = PositionWiseFFN(ffn_num_input, ffn_num_hiddens, num_hiddens),
    addnorm2 = AddNorm(norm_shape, dropout).
    ### BEGIN ZH
    一个 Transformer 编码器块：多头自注意力、加法和规范化、基于位置的前馈网络、加法和规范化
    （d2l 10.7；0.17 版称之为 EncoderBlock）。

    参数：attention = MultiHeadAttention(key_size, query_size, value_size,
    num_hiddens, num_heads, dropout, use_bias)，addnorm1 = AddNorm(norm_shape, dropout)，
    ffn = PositionWiseFFN(ffn_num_input, ffn_num_hiddens, num_hiddens)，
    addnorm2 = AddNorm(norm_shape, dropout)。
    ### END ZH
    """

    def __init__(self, key_size, query_size, value_size, num_hiddens, norm_shape,
                 ffn_num_input, ffn_num_hiddens, num_heads, dropout, use_bias=False, **kwargs):
        super().__init__(**kwargs)
        ### BEGIN SOLUTION
        self.attention = MultiHeadAttention(key_size, query_size, value_size, num_hiddens,
                                            num_heads, dropout, use_bias)
        self.addnorm1 = AddNorm(norm_shape, dropout)
        self.ffn = PositionWiseFFN(ffn_num_input, ffn_num_hiddens, num_hiddens)
        self.addnorm2 = AddNorm(norm_shape, dropout)
        ### END SOLUTION

    def forward(self, X, valid_lens):
        """X (B, T, num_hiddens), valid_lens None or (B,): how many positions of each
        sequence are real (the rest is padding, which no position may attend to).
        Returns (B, T, num_hiddens); self.attention.attention.attention_weights is
        (B*num_heads, T, T).
        ### BEGIN ZH
        X (B, T, num_hiddens)，valid_lens 为 None 或 (B,)：每个序列中真实位置的个数
        （其余是填充，任何位置都不应关注它们）。返回 (B, T, num_hiddens)；
        self.attention.attention.attention_weights 是 (B*num_heads, T, T)。
        ### END ZH
        """
        # Hint: self-attention uses X as queries, keys and values. The FFN reads the output
        # of the first add & norm, and the second add & norm adds the FFN's output to that
        # same tensor.
        ### BEGIN ZH
        # 提示：自注意力用 X 同时作为查询、键和值。前馈网络读取第一个加法和规范化的输出，
        # 第二个加法和规范化把前馈网络的输出加到这同一个张量上。
        ### END ZH
        ### BEGIN SOLUTION
        Y = self.addnorm1(X, self.attention(X, X, X, valid_lens))  # (B, T, d)
        return self.addnorm2(Y, self.ffn(Y))  # (B, T, d)
        ### END SOLUTION
