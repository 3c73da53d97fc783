"""Base code: what every student was given or could copy from the book, which never counts.

The skeleton students start from, the public self-checks, the instructor's solution, the
book's own code as the kit's correct alternatives hold it (d2l 0.17's functions and d2l
1.0's LazyLinear variant, tests_hidden/<name>/alternatives/) and the book's example calls
from the same sections (BOOK_EXAMPLES: students paste them as demos). A k-gram of a
submission found in any of them is removed before two submissions are compared.
"""
import os

from .. import paths

ALTERNATIVES = os.path.join(paths.HIDDEN_TESTS, "alternatives")
BOOK = ("book_d2l_0_17.py", "lazy_linear_d2l_1_0.py")

# The example calls of d2l's sections on masking (9.7), attention scoring functions (10.3)
# and multi-head attention (10.5), PyTorch edition, as students paste them.
BOOK_EXAMPLES = '''
X = torch.tensor([[1, 2, 3], [4, 5, 6]])
sequence_mask(X, torch.tensor([1, 2]))
X = torch.ones(2, 3, 4)
sequence_mask(X, torch.tensor([1, 2]), value=-1)
masked_softmax(torch.rand(2, 2, 4), torch.tensor([2, 3]))
masked_softmax(torch.rand(2, 2, 4), torch.tensor([[1, 3], [2, 4]]))
queries, keys = torch.normal(0, 1, (2, 1, 20)), torch.ones((2, 10, 2))
values = torch.arange(40, dtype=torch.float32).reshape(1, 10, 4).repeat(
    2, 1, 1)
valid_lens = torch.tensor([2, 6])
attention = AdditiveAttention(key_size=2, query_size=20, num_hiddens=8,
                              dropout=0.1)
attention.eval()
attention(queries, keys, values, valid_lens)
d2l.show_heatmaps(attention.attention_weights.reshape((1, 1, 2, 10)),
                  xlabel='Keys', ylabel='Queries')
queries = torch.normal(0, 1, (2, 1, 2))
attention = DotProductAttention(dropout=0.5)
attention.eval()
attention(queries, keys, values, valid_lens)
num_hiddens, num_heads = 100, 5
attention = MultiHeadAttention(num_hiddens, num_hiddens, num_hiddens,
                               num_hiddens, num_heads, 0.5)
attention.eval()
batch_size, num_queries = 2, 4
num_kvpairs, valid_lens = 6, torch.tensor([3, 2])
X = torch.ones((batch_size, num_queries, num_hiddens))
Y = torch.ones((batch_size, num_kvpairs, num_hiddens))
attention(X, Y, Y, valid_lens).shape
'''


def base_files():
    """The base code's files, those that exist (a kit without the skeleton still runs)."""
    candidates = [paths.SKELETON, os.path.join(paths.ASSIGNMENT, "test_attention.py"),
                  paths.SOLUTION] + [os.path.join(ALTERNATIVES, name) for name in BOOK]
    return [path for path in candidates if os.path.isfile(path)]


def base_texts():
    """(label, text) of every piece of base code."""
    texts = []
    for path in base_files():
        with open(path, encoding="utf-8", errors="replace") as handle:
            texts.append((os.path.relpath(path, paths.KIT_ROOT), handle.read()))
    texts.append(("the book's example calls (grader/similarity/base.py)", BOOK_EXAMPLES))
    return texts
