"""The transformer assignment's catalog of mistakes: realistic student mistakes, each a small
edit of the solution (solutions/transformer.py).

Every entry names the part it costs, the module it lives in (`target`), and says what the
code does wrong as a clause that completes "your result is exactly what you get if ...",
in English (N_: its Chinese is in locale/zh_CN/LC_MESSAGES/assignment.po). The edits are (text of the solution, replacement) pairs; each text must occur
exactly once in the solution. `grader validate --assignment transformer` grades every entry:
it must lose points in its part and be diagnosed as itself.

The sentences point at the concept and never give the line that fixes it. What calls what
and which targets make up a part come from the declaration (assignment.toml); the grader
reads this file through `grader.catalog.Catalog.of(assignment)`, never by importing it.
"""
from grader.catalog.mistakes import Mistake
from grader.i18n import N_

# a small experiment per target, shown with a diagnosis of that part: what to run to see
# the problem for oneself (never the fixing line)
EXPERIMENTS = {
    "PositionalEncoding": N_(
        "Build PositionalEncoding(8, 0) in eval mode, call it on torch.zeros(1, 4, 8) and compare "
        "row i with [sin(i), cos(i), sin(i / 10), cos(i / 10), ...] computed by hand "
        "(10000^(2/8) = 10); then call it on torch.zeros(3, 2, 8) and check the shape."),
    "PositionWiseFFN": N_(
        "Build PositionWiseFFN(4, 4, 8), call it on torch.randn(2, 3, 4) and compare with "
        "ffn.dense2(torch.relu(ffn.dense1(X))) computed by hand; print the intermediate shapes."),
    "AddNorm": N_(
        "Build AddNorm(4, 0.5), call it on X = torch.randn(2, 3, 4) and Y = torch.zeros(2, 3, 4) "
        "in eval mode and in training mode: with Y = 0 both should equal nn.LayerNorm(4)(X); then "
        "try Y = torch.randn(2, 3, 4) and check that each row of the result has mean 0."),
    "TransformerEncoderBlock": N_(
        "Build TransformerEncoderBlock(8, 8, 8, 8, [8], 8, 16, 2, 0) in eval mode, call it on "
        "X = torch.randn(2, 5, 8) with valid_lens torch.tensor([2, 5]), and look at "
        "attention.attention.attention_weights: in every head of example 0 the weights of "
        "positions 2, 3 and 4 should be 0. Then change X[0, 3] and check that the output of "
        "example 0 at positions 0 and 1 stays the same."),
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
      N_("the even columns of P take the cosine and the odd columns the sine"),
      ((SIN_COS, "self.P[:, :, 0::2] = torch.cos(X)\n        self.P[:, :, 1::2] = torch.sin(X)"),)),
    M("pos-exponent-transposed", "PositionalEncoding", "PositionalEncoding",
      N_("positions and dimensions trade places in the formula: the dimension 2j is divided by "
         "10000^(i/d) of the position i, instead of the position by 10000^(2j/d)"),
      ((ANGLES, "X = dims / torch.pow(10000, positions / num_hiddens)"),)),
    M("pos-exponent-not-doubled", "PositionalEncoding", "PositionalEncoding",
      N_("the exponent counts the column pairs j = 0, 1, 2, ... instead of the even dimensions "
         "2j = 0, 2, 4, ... (10000^(j/d) instead of 10000^(2j/d))"),
      ((DIMS, "dims = torch.arange(num_hiddens // 2, dtype=torch.float32)"),)),
    M("pos-positions-from-one", "PositionalEncoding", "PositionalEncoding",
      N_("positions are counted from 1 instead of 0"),
      ((POSITIONS, "positions = torch.arange(1, max_len + 1, dtype=torch.float32).reshape(-1, 1)"),)),
    M("pos-not-sliced", "PositionalEncoding", "PositionalEncoding",
      N_("all max_len rows of P are added, not only the first T (the sequence's length)"),
      ((ADD_P, "X = X + self.P.to(X.device)"),)),
    M("pos-sliced-by-batch", "PositionalEncoding", "PositionalEncoding",
      N_("P is sliced by the batch size (axis 0 of X) instead of the number of positions (axis 1)"),
      ((ADD_P, "X = X + self.P[:, :X.shape[0], :].to(X.device)"),)),
    M("pos-dropout-before-add", "PositionalEncoding", "PositionalEncoding",
      N_("dropout acts on X before P is added, instead of on the sum X + P"),
      ((ADD_P, "X = self.dropout(X) + self.P[:, :X.shape[1], :].to(X.device)"),
       (PE_RETURN, "return X"))),
    M("pos-no-dropout", "PositionalEncoding", "PositionalEncoding",
      N_("dropout is never applied, so training mode gives the same result as eval mode"),
      ((PE_RETURN, "return X"),)),
    M("pos-scales-input", "PositionalEncoding", "PositionalEncoding",
      N_("X is multiplied by sqrt(num_hiddens) before P is added (the book's encoder scales the "
         "embeddings itself before it calls the positional encoding, so they would be scaled "
         "twice)"),
      ((ADD_P, "X = X * X.shape[-1] ** 0.5 + self.P[:, :X.shape[1], :].to(X.device)"),)),
    # -- PositionWiseFFN -----------------------------------------------------------------
    M("ffn-no-relu", "PositionWiseFFN", "PositionWiseFFN",
      N_("the ReLU between the two dense layers is left out, so the network is linear"),
      ((FFN, "return self.dense2(self.dense1(X))"),)),
    M("ffn-relu-after", "PositionWiseFFN", "PositionWiseFFN",
      N_("the ReLU comes after the second dense layer instead of between the two"),
      ((FFN, "return self.relu(self.dense2(self.dense1(X)))"),)),
    # -- AddNorm -------------------------------------------------------------------------
    M("addnorm-y-only", "AddNorm", "AddNorm",
      N_("only the sublayer's output Y is normalized: the residual X is never added"),
      ((RESIDUAL, "residual = self.dropout(Y)"),)),
    M("addnorm-dropout-on-sum", "AddNorm", "AddNorm",
      N_("dropout acts on the sum X + Y instead of on Y alone"),
      ((RESIDUAL, "residual = self.dropout(X + Y)"),)),
    M("addnorm-dropout-on-x", "AddNorm", "AddNorm",
      N_("dropout acts on the residual X instead of on the sublayer's output Y"),
      ((RESIDUAL, "residual = self.dropout(X) + Y"),)),
    M("addnorm-norm-before-add", "AddNorm", "AddNorm",
      N_("Y is normalized first and then added to X, so the sum itself is never normalized"),
      ((RESIDUAL, "residual = self.dropout(Y)"),
       (NORM, "return X + self.ln(residual)"))),
    # -- TransformerEncoderBlock ---------------------------------------------------------
    M("block-no-valid-lens", "TransformerEncoderBlock", "TransformerEncoderBlock",
      N_("valid_lens does not reach the attention, so every position also attends to the padding"),
      ((FIRST, "Y = self.addnorm1(X, self.attention(X, X, X, None))"),)),
    M("block-second-residual-input", "TransformerEncoderBlock", "TransformerEncoderBlock",
      N_("the second add & norm adds the FFN's output to the block's input X instead of to the "
         "output of the first add & norm"),
      ((SECOND, "return self.addnorm2(X, self.ffn(Y))"),)),
    M("block-ffn-on-input", "TransformerEncoderBlock", "TransformerEncoderBlock",
      N_("the FFN reads the block's input X instead of the output of the first add & norm"),
      ((SECOND, "return self.addnorm2(Y, self.ffn(X))"),)),
    M("block-pre-norm", "TransformerEncoderBlock", "TransformerEncoderBlock",
      N_("each sublayer reads the layer norm of its input and its output is added to the input "
         "unnormalized (pre-norm), instead of normalizing after each residual sum (post-norm, "
         "as the book does)"),
      ((FIRST, "H = self.addnorm1.ln(X)\n"
               "        Y = X + self.addnorm1.dropout(self.attention(H, H, H, valid_lens))"),
       (SECOND, "return Y + self.addnorm2.dropout(self.ffn(self.addnorm2.ln(Y)))"))),
    M("block-norm-shape-hidden", "TransformerEncoderBlock", "TransformerEncoderBlock",
      N_("the add & norm layers are built for num_hiddens instead of norm_shape, so a norm_shape "
         "over more axes than the features is ignored"),
      ((ADDNORMS, "self.addnorm1 = AddNorm(num_hiddens, dropout)\n"
                  "        self.ffn = PositionWiseFFN(ffn_num_input, ffn_num_hiddens, num_hiddens)\n"
                  "        self.addnorm2 = AddNorm(num_hiddens, dropout)"),)),
    M("block-bias-dropped", "TransformerEncoderBlock", "TransformerEncoderBlock",
      N_("use_bias is not passed on to MultiHeadAttention, so its layers never have a bias"),
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
