"""The transformer assignment's catalog of mistakes: realistic student mistakes, each a small
edit of the solution (solutions/transformer.py).

Every entry names the part it costs, the module it lives in (`target`), and says what the
code does wrong as a clause that completes "your result is exactly what you get if ..."
(`en`, `zh`). The edits are (text of the solution, replacement) pairs; each text must occur
exactly once in the solution. `grader validate --assignment transformer` grades every entry:
it must lose points in its part and be diagnosed as itself.

The sentences point at the concept and never give the line that fixes it. What calls what
and which targets make up a part come from the declaration (assignment.toml); the grader
reads this file through `grader.catalog.Catalog.of(assignment)`, never by importing it.
"""
from grader.catalog.mistakes import Mistake

# a small experiment per target, shown with a diagnosis of that part: what to run to see
# the problem for oneself (never the fixing line)
EXPERIMENTS = {
    "PositionalEncoding": (
        "Build PositionalEncoding(8, 0) in eval mode, call it on torch.zeros(1, 4, 8) and compare "
        "row i with [sin(i), cos(i), sin(i / 10), cos(i / 10), ...] computed by hand "
        "(10000^(2/8) = 10); then call it on torch.zeros(3, 2, 8) and check the shape.",
        "在 eval 模式下构造 PositionalEncoding(8, 0)，用 torch.zeros(1, 4, 8) 调用它，把第 i 行与手算的 "
        "[sin(i), cos(i), sin(i / 10), cos(i / 10), ...] 比较（10000^(2/8) = 10）；再用 "
        "torch.zeros(3, 2, 8) 调用，检查形状。"),
    "PositionWiseFFN": (
        "Build PositionWiseFFN(4, 4, 8), call it on torch.randn(2, 3, 4) and compare with "
        "ffn.dense2(torch.relu(ffn.dense1(X))) computed by hand; print the intermediate shapes.",
        "构造 PositionWiseFFN(4, 4, 8)，用 torch.randn(2, 3, 4) 调用它，与手算的 "
        "ffn.dense2(torch.relu(ffn.dense1(X))) 比较；打印中间结果的形状。"),
    "AddNorm": (
        "Build AddNorm(4, 0.5), call it on X = torch.randn(2, 3, 4) and Y = torch.zeros(2, 3, 4) "
        "in eval mode and in training mode: with Y = 0 both should equal nn.LayerNorm(4)(X); then "
        "try Y = torch.randn(2, 3, 4) and check that each row of the result has mean 0.",
        "构造 AddNorm(4, 0.5)，在 eval 模式和训练模式下分别用 X = torch.randn(2, 3, 4) 和 "
        "Y = torch.zeros(2, 3, 4) 调用：Y = 0 时两者都应等于 nn.LayerNorm(4)(X)；再试 "
        "Y = torch.randn(2, 3, 4)，检查结果的每一行均值是否为 0。"),
    "TransformerEncoderBlock": (
        "Build TransformerEncoderBlock(8, 8, 8, 8, [8], 8, 16, 2, 0) in eval mode, call it on "
        "X = torch.randn(2, 5, 8) with valid_lens torch.tensor([2, 5]), and look at "
        "attention.attention.attention_weights: in every head of example 0 the weights of "
        "positions 2, 3 and 4 should be 0. Then change X[0, 3] and check that the output of "
        "example 0 at positions 0 and 1 stays the same.",
        "在 eval 模式下构造 TransformerEncoderBlock(8, 8, 8, 8, [8], 8, 16, 2, 0)，用 "
        "X = torch.randn(2, 5, 8) 和有效长度 torch.tensor([2, 5]) 调用，查看 "
        "attention.attention.attention_weights：样本 0 的每个头中，位置 2、3、4 的权重都应为 0。"
        "再改变 X[0, 3]，检查样本 0 在位置 0 和 1 的输出是否保持不变。"),
}

# lines of the solution the edits replace
DIMS = "dims = torch.arange(0, num_hiddens, 2, dtype=torch.float32)  # (d/2,): 2j = 0, 2, 4, ..."
ANGLES = "X = positions / torch.pow(10000, dims / num_hiddens)  # (max_len, d/2)"
POSITIONS = "positions = torch.arange(max_len, dtype=torch.float32).reshape(-1, 1)  # (max_len, 1)"
SIN_COS = ("self.P[:, :, 0::2] = torch.sin(X)  # even columns\n"
           "        self.P[:, :, 1::2] = torch.cos(X)  # odd columns")
ADD_P = "X = X + self.P[:, :X.shape[1], :].to(X.device)  # (B, T, d) + (1, T, d) -> (B, T, d)"
PE_RETURN = "return self.dropout(X)  # (B, T, d)"
FFN = ("hidden = self.relu(self.dense1(X))  # (B, T, ffn_num_hiddens)\n"
       "        return self.dense2(hidden)  # (B, T, ffn_num_outputs)")
RESIDUAL = "residual = X + self.dropout(Y)  # (B, T, d)"
NORM = "return self.ln(residual)  # (B, T, d), normalized over normalized_shape"
FIRST = "Y = self.addnorm1(X, self.attention(X, X, X, valid_lens))  # (B, T, d)"
SECOND = "return self.addnorm2(Y, self.ffn(Y))  # (B, T, d)"
ADDNORMS = ("self.addnorm1 = AddNorm(norm_shape, dropout)\n"
            "        self.ffn = PositionWiseFFN(ffn_num_input, ffn_num_hiddens, num_hiddens)\n"
            "        self.addnorm2 = AddNorm(norm_shape, dropout)")
MHA = ("self.attention = MultiHeadAttention(key_size, query_size, value_size, num_hiddens,\n"
       "                                            num_heads, dropout, use_bias)")

M = Mistake
MISTAKES = [
    # -- PositionalEncoding --------------------------------------------------------------
    M("pos-sin-cos-swapped", "PositionalEncoding", "PositionalEncoding",
      "the even columns of P take the cosine and the odd columns the sine",
      "P 的偶数列取了余弦，奇数列取了正弦",
      ((SIN_COS, "self.P[:, :, 0::2] = torch.cos(X)\n        self.P[:, :, 1::2] = torch.sin(X)"),)),
    M("pos-exponent-transposed", "PositionalEncoding", "PositionalEncoding",
      "positions and dimensions trade places in the formula: the dimension 2j is divided by "
      "10000^(i/d) of the position i, instead of the position by 10000^(2j/d)",
      "公式中位置和维度互换了位置：用维度 2j 除以位置 i 的 10000^(i/d)，而不是用位置除以 "
      "10000^(2j/d)",
      ((ANGLES, "X = dims / torch.pow(10000, positions / num_hiddens)"),)),
    M("pos-exponent-not-doubled", "PositionalEncoding", "PositionalEncoding",
      "the exponent counts the column pairs j = 0, 1, 2, ... instead of the even dimensions "
      "2j = 0, 2, 4, ... (10000^(j/d) instead of 10000^(2j/d))",
      "指数用的是列对的编号 j = 0, 1, 2, ...，而不是偶数维 2j = 0, 2, 4, ...（10000^(j/d) 而不是 "
      "10000^(2j/d)）",
      ((DIMS, "dims = torch.arange(num_hiddens // 2, dtype=torch.float32)"),)),
    M("pos-positions-from-one", "PositionalEncoding", "PositionalEncoding",
      "positions are counted from 1 instead of 0",
      "位置从 1 开始编号，而不是从 0 开始",
      ((POSITIONS, "positions = torch.arange(1, max_len + 1, dtype=torch.float32).reshape(-1, 1)"),)),
    M("pos-not-sliced", "PositionalEncoding", "PositionalEncoding",
      "all max_len rows of P are added, not only the first T (the sequence's length)",
      "把 P 的全部 max_len 行都加上了，而不是只加前 T 行（序列的长度）",
      ((ADD_P, "X = X + self.P.to(X.device)"),)),
    M("pos-sliced-by-batch", "PositionalEncoding", "PositionalEncoding",
      "P is sliced by the batch size (axis 0 of X) instead of the number of positions (axis 1)",
      "P 按批量大小（X 的第 0 维）切片，而不是按位置个数（第 1 维）",
      ((ADD_P, "X = X + self.P[:, :X.shape[0], :].to(X.device)"),)),
    M("pos-dropout-before-add", "PositionalEncoding", "PositionalEncoding",
      "dropout acts on X before P is added, instead of on the sum X + P",
      "暂退法在加上 P 之前作用于 X，而不是作用于和 X + P",
      ((ADD_P, "X = self.dropout(X) + self.P[:, :X.shape[1], :].to(X.device)"),
       (PE_RETURN, "return X"))),
    M("pos-no-dropout", "PositionalEncoding", "PositionalEncoding",
      "dropout is never applied, so training mode gives the same result as eval mode",
      "从不使用暂退法，于是训练模式与 eval 模式的结果相同",
      ((PE_RETURN, "return X"),)),
    M("pos-scales-input", "PositionalEncoding", "PositionalEncoding",
      "X is multiplied by sqrt(num_hiddens) before P is added (the book's encoder scales the "
      "embeddings itself before it calls the positional encoding, so they would be scaled "
      "twice)",
      "在加上 P 之前把 X 乘以了 sqrt(num_hiddens)（书中的编码器在调用位置编码之前已经缩放了"
      "词嵌入，这样就缩放了两次）",
      ((ADD_P, "X = X * X.shape[-1] ** 0.5 + self.P[:, :X.shape[1], :].to(X.device)"),)),
    # -- PositionWiseFFN -----------------------------------------------------------------
    M("ffn-no-relu", "PositionWiseFFN", "PositionWiseFFN",
      "the ReLU between the two dense layers is left out, so the network is linear",
      "漏掉了两个全连接层之间的 ReLU，网络因而是线性的",
      ((FFN, "return self.dense2(self.dense1(X))"),)),
    M("ffn-relu-after", "PositionWiseFFN", "PositionWiseFFN",
      "the ReLU comes after the second dense layer instead of between the two",
      "ReLU 放在了第二个全连接层之后，而不是两个全连接层之间",
      ((FFN, "return self.relu(self.dense2(self.dense1(X)))"),)),
    # -- AddNorm -------------------------------------------------------------------------
    M("addnorm-y-only", "AddNorm", "AddNorm",
      "only the sublayer's output Y is normalized: the residual X is never added",
      "只对子层的输出 Y 做了规范化：残差 X 根本没有加上",
      ((RESIDUAL, "residual = self.dropout(Y)"),)),
    M("addnorm-dropout-on-sum", "AddNorm", "AddNorm",
      "dropout acts on the sum X + Y instead of on Y alone",
      "暂退法作用在和 X + Y 上，而不是只作用在 Y 上",
      ((RESIDUAL, "residual = self.dropout(X + Y)"),)),
    M("addnorm-dropout-on-x", "AddNorm", "AddNorm",
      "dropout acts on the residual X instead of on the sublayer's output Y",
      "暂退法作用在残差 X 上，而不是作用在子层的输出 Y 上",
      ((RESIDUAL, "residual = self.dropout(X) + Y"),)),
    M("addnorm-norm-before-add", "AddNorm", "AddNorm",
      "Y is normalized first and then added to X, so the sum itself is never normalized",
      "先对 Y 做规范化再加到 X 上，于是和本身从未被规范化",
      ((RESIDUAL, "residual = self.dropout(Y)"),
       (NORM, "return X + self.ln(residual)"))),
    # -- TransformerEncoderBlock ---------------------------------------------------------
    M("block-no-valid-lens", "TransformerEncoderBlock", "TransformerEncoderBlock",
      "valid_lens does not reach the attention, so every position also attends to the padding",
      "valid_lens 没有传到注意力中，于是每个位置也关注了填充位置",
      ((FIRST, "Y = self.addnorm1(X, self.attention(X, X, X, None))"),)),
    M("block-second-residual-input", "TransformerEncoderBlock", "TransformerEncoderBlock",
      "the second add & norm adds the FFN's output to the block's input X instead of to the "
      "output of the first add & norm",
      "第二个加法和规范化把前馈网络的输出加到了块的输入 X 上，而不是加到第一个加法和规范化的输出上",
      ((SECOND, "return self.addnorm2(X, self.ffn(Y))"),)),
    M("block-ffn-on-input", "TransformerEncoderBlock", "TransformerEncoderBlock",
      "the FFN reads the block's input X instead of the output of the first add & norm",
      "前馈网络读取的是块的输入 X，而不是第一个加法和规范化的输出",
      ((SECOND, "return self.addnorm2(Y, self.ffn(X))"),)),
    M("block-pre-norm", "TransformerEncoderBlock", "TransformerEncoderBlock",
      "each sublayer reads the layer norm of its input and its output is added to the input "
      "unnormalized (pre-norm), instead of normalizing after each residual sum (post-norm, "
      "as the book does)",
      "每个子层读取其输入的层规范化结果，输出不经规范化直接加到输入上（前置规范化），"
      "而不是在每次残差相加之后再规范化（后置规范化，书中的做法）",
      ((FIRST, "H = self.addnorm1.ln(X)\n"
               "        Y = X + self.addnorm1.dropout(self.attention(H, H, H, valid_lens))"),
       (SECOND, "return Y + self.addnorm2.dropout(self.ffn(self.addnorm2.ln(Y)))"))),
    M("block-norm-shape-hidden", "TransformerEncoderBlock", "TransformerEncoderBlock",
      "the add & norm layers are built for num_hiddens instead of norm_shape, so a norm_shape "
      "over more axes than the features is ignored",
      "加法和规范化层按 num_hiddens 构造，而不是按 norm_shape，于是覆盖多于特征维的 norm_shape "
      "被忽略了",
      ((ADDNORMS, "self.addnorm1 = AddNorm(num_hiddens, dropout)\n"
                  "        self.ffn = PositionWiseFFN(ffn_num_input, ffn_num_hiddens, num_hiddens)\n"
                  "        self.addnorm2 = AddNorm(num_hiddens, dropout)"),)),
    M("block-bias-dropped", "TransformerEncoderBlock", "TransformerEncoderBlock",
      "use_bias is not passed on to MultiHeadAttention, so its layers never have a bias",
      "use_bias 没有传给 MultiHeadAttention，于是它的各层从来没有偏置",
      ((MHA, "self.attention = MultiHeadAttention(key_size, query_size, value_size, "
             "num_hiddens,\n                                            num_heads, dropout)"),)),
]


# what docs/mistakes.md says of this assignment in its own words (grader validate --docs)
DOCS = {
    "spread": "(an `AddNorm` bug in `TransformerEncoderBlock`)",
    "alternatives": "the book's own d2l 0.17 code, the 1.0 edition's `nn.LazyLinear`, a "
                    "loop-built P with `torch.nn.functional` calls, and one that registers P "
                    "as a non-persistent buffer and computes the angles with `torch.exp`.",
}
