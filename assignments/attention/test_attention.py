"""Self-check tests for attention.py.

Run `pytest` in this folder (see README.md). These checks try every behaviour the grader
grades, on a small sample of inputs: the values, the parameter names, eval mode, the dropout
order of the three modules, and the GPU rule (on a machine without a GPU, with the grader's
own device-discipline rule; see DeviceDiscipline). The hidden suite adds edge cases (other
dtypes, sizes of one, gradients, ...; README.md lists them), so passing here does not yet
mean full marks.

Every check says what it expected, what came back and where to look. The tests pass
copies of their inputs to your code, so writing into an input (as the book's code does)
is allowed and changes nothing here.

Messages in Chinese: `pytest --lang zh` (or set ATTN_LANG=zh). The translations are in
locale/zh_CN/LC_MESSAGES/selfcheck.po (compiled into selfcheck.mo next to it).
"""
import gettext
import math
import os
import sys

import pytest
import torch

_LOCALE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "locale")


def _translation(lang):
    """The message catalog for `lang` (the first part of a folder of locale/: "zh" for
    zh_CN); English, or a language without one, needs none."""
    lang = (lang or "en").strip().lower().replace("-", "_").split("_")[0]
    folders = sorted(os.listdir(_LOCALE_DIR)) if os.path.isdir(_LOCALE_DIR) else []
    found = [f for f in folders if f.lower().split("_")[0] == lang]
    if lang == "en" or not found:
        return gettext.NullTranslations()
    return gettext.translation("selfcheck", _LOCALE_DIR, languages=found[:1], fallback=True)


# conftest.py turns `pytest --lang zh` into ATTN_LANG=zh before this file is imported.
_ = _translation(os.environ.get("ATTN_LANG")).gettext


def _import_problem(exc):
    """One short message for an attention.py that cannot be imported."""
    if isinstance(exc, ModuleNotFoundError) and exc.name == "attention":
        return _("attention.py was not found next to test_attention.py: put your attention.py "
                 "in this folder and run `pytest` from here.")
    msg = _("attention.py could not be imported: {kind}: {error}").format(kind=type(exc).__name__, error=exc)
    if isinstance(exc, SyntaxError) and exc.text:
        msg += "\n    " + _("line {line}: {text}").format(line=exc.lineno, text=exc.text.strip())
    where, tb = "", exc.__traceback__
    while tb is not None:  # the innermost line of attention.py that ran
        if tb.tb_frame.f_code.co_filename.replace("\\", "/").split("/")[-1] == "attention.py":
            where = "\n    " + _("attention.py line {line}").format(line=tb.tb_lineno)
        tb = tb.tb_next
    return msg + where


try:
    import attention
except Exception as exc:  # a missing file, a syntax error, an error while attention.py runs
    raise ImportError(_import_problem(exc)) from None


# ---------------------------------------------------------------------------
# Helpers: they turn every failure into a short message in plain words.
# A message says what was expected, what came back and where to look (which step, which
# shape, a small experiment); it never spells out the line of code that fixes it.
# ---------------------------------------------------------------------------

ATOL, RTOL = 1e-5, 1e-4
NAN_HINT = _("the result contains NaN. In a row whose keys are all masked, masking with -inf makes "
             "the softmax compute exp(-inf - (-inf)) = NaN. Try torch.softmax on a row of -inf, "
             "then on a row of the finite value named in masked_softmax's docstring.")


def _num(x):
    if isinstance(x, float):
        return f"{x:.4g}"
    return str(x)


def _fmt(t):
    """A small tensor as a nested list with short numbers."""
    def rec(v):
        if isinstance(v, list):
            return "[" + ", ".join(rec(u) for u in v) + "]"
        return _num(v)
    return rec(t.tolist())


def _describe(x):
    if isinstance(x, torch.Tensor):
        dtype = str(x.dtype).replace("torch.", "")
        if x.device.type == "cpu":
            return _("a tensor of shape {shape} ({dtype})").format(shape=tuple(x.shape), dtype=dtype)
        return _("a tensor of shape {shape} ({dtype}, on {device})").format(
            shape=tuple(x.shape), dtype=dtype, device=x.device)
    if isinstance(x, (tuple, list)):
        return _("a {type} of {count} items").format(type=type(x).__name__, count=len(x))
    if x is None or isinstance(x, (int, float, bool)):
        return repr(x)
    return _("a {type}").format(type=type(x).__name__)


def fail(message, hint=None):
    if hint:
        message += "\n  " + _("Where to look: ") + hint
    message += _earlier_parts_note()
    pytest.fail(message, pytrace=False)


def check_close(name, got, expected, hint=None, mistakes=(), atol=ATOL, rtol=RTOL):
    """Compare `got` with `expected` and fail with a readable message.

    mistakes: pairs (what a known wrong implementation returns, what that mistake is);
    when `got` matches one of them, the message names the mistake.
    """
    expected = torch.as_tensor(expected)
    if not isinstance(got, torch.Tensor):
        fail(_("{name}: expected a tensor of shape {shape}, got {got}.").format(
            name=name, shape=tuple(expected.shape), got=_describe(got)), hint)
    if tuple(got.shape) != tuple(expected.shape):
        fail(_("{name}: expected shape {expected}, got shape {got}.").format(
            name=name, expected=tuple(expected.shape), got=tuple(got.shape)), hint)
    g = got.detach().cpu().double()
    e = expected.detach().cpu().double()
    bad = ~torch.isclose(g, e, rtol=rtol, atol=atol)
    if not bad.any():
        return
    first = tuple(bad.nonzero()[0].tolist())
    msg = _("{name}: {bad} of {total} entries are wrong; the first is at index {index}: "
            "expected {expected}, got {got}.").format(
        name=name, bad=int(bad.sum()), total=e.numel(), index=list(first),
        expected=_num(e[first].item()), got=_num(g[first].item()))
    if e.numel() <= 16:
        msg += "\n" + _("  expected {expected}\n  got      {got}").format(expected=_fmt(e), got=_fmt(g))
    elif e.dim() >= 2:  # show the row (last axis) that holds the first wrong entry
        row = first[:-1]
        msg += ("\n  " + _("in row {row}:").format(row=list(row)) + "\n"
                + _("  expected {expected}\n  got      {got}").format(expected=_fmt(e[row]), got=_fmt(g[row])))
    for wrong, why in mistakes:
        wrong = torch.as_tensor(wrong).detach().cpu().double()
        if wrong.shape == g.shape and torch.allclose(g, wrong, rtol=rtol, atol=atol):
            msg += "\n  " + _("Likely cause: ") + why
            break
    else:
        if torch.isnan(g).any() and not torch.isnan(e).any():
            msg += "\n  " + _("Likely cause: ") + NAN_HINT
    fail(msg, hint)


# Each part builds on the earlier ones; when a check fails, say which earlier part does not
# pass its own tiny example yet (a bug there shows up here as well).
_USES = {
    "test_masked_softmax": ["sequence_mask"],
    "test_additive_attention": ["sequence_mask", "masked_softmax"],
    "test_dot_product_attention": ["sequence_mask", "masked_softmax"],
    "test_multihead_attention": ["sequence_mask", "masked_softmax", "DotProductAttention",
                                 "transpose_qkv", "transpose_output"],
    "test_runs_on_the_gpu": ["sequence_mask", "masked_softmax", "DotProductAttention",
                             "transpose_qkv", "transpose_output"],
}
_CURRENT_TEST = {"name": ""}
_PROBED = {}


@pytest.fixture(autouse=True)
def _remember_current_test(request):
    _CURRENT_TEST["name"] = request.node.name
    yield
    _CURRENT_TEST["name"] = ""


def _probe(name):
    """True when attention.<name> gets a tiny known example right; None when it is not written."""
    X16 = torch.arange(16.0).reshape(2, 2, 4)
    heads = torch.tensor([[[0.0, 1], [4, 5]], [[2, 3], [6, 7]], [[8, 9], [12, 13]], [[10, 11], [14, 15]]])
    try:
        if name == "sequence_mask":
            got = attention.sequence_mask(torch.tensor([[1.0, 2, 3], [4, 5, 6]]), torch.tensor([1, 0]), value=-1)
            return torch.equal(got, torch.tensor([[1.0, -1, -1], [-1, -1, -1]]))
        if name == "masked_softmax":
            got = attention.masked_softmax(torch.tensor([[[0.0, math.log(3.0), 9.0]], [[1.0, 2.0, 3.0]]]),
                                           torch.tensor([2, 0]))
            return torch.allclose(got, torch.tensor([[[0.25, 0.75, 0.0]], [[1 / 3] * 3]]), atol=1e-6)
        if name == "DotProductAttention":
            m = attention.DotProductAttention(0).eval()
            got = m(torch.tensor([[[1.0, -1.0, 2.0, 0.5]]]),
                    torch.tensor([[[0.0, 0, 0, 0], [0, 0, math.log(3.0), 0], [5, 0, 5, 0]]]),
                    torch.tensor([[[1.0, 0], [0, 1], [50, 50]]]), torch.tensor([2]))
            return torch.allclose(got, torch.tensor([[[0.25, 0.75]]]), atol=1e-5)
        if name == "transpose_qkv":
            return torch.equal(attention.transpose_qkv(X16.clone(), 2), heads)
        if name == "transpose_output":
            return torch.equal(attention.transpose_output(heads.clone(), 2), X16)
    except NotImplementedError:
        return None
    except Exception:
        return False
    return True


def _earlier_parts_note():
    test = _CURRENT_TEST["name"]
    uses = next((v for k, v in _USES.items() if test.startswith(k)), [])
    broken = []
    for name in uses:
        if name not in _PROBED:
            _PROBED[name] = _probe(name)
        if _PROBED[name] is False:  # written, but wrong (not written yet is reported by call())
            broken.append(name)
    if not broken:
        return ""
    names = ", ".join(f"attention.{n}" for n in broken)
    if len(broken) == 1:
        note = _("Note: {names} does not pass its own tests yet; if this part uses it, fix that first "
                 "(start with the earliest failing part).")
    else:
        note = _("Note: {names} do not pass their own tests yet; if this part uses them, fix that first "
                 "(start with the earliest failing part).")
    return "\n  " + note.format(names=names)


def _frame_name(frame):
    code = frame.f_code
    qualname = getattr(code, "co_qualname", None)  # Python 3.11+
    if qualname:
        return qualname
    owner = frame.f_locals.get("self")
    return f"{type(owner).__name__}.{code.co_name}" if owner is not None else code.co_name


_SOURCE = {}


def _source_line(lineno):
    if "lines" not in _SOURCE:
        try:
            with open(attention.__file__, encoding="utf-8") as f:
                _SOURCE["lines"] = f.read().splitlines()
        except OSError:
            _SOURCE["lines"] = []
    lines = _SOURCE["lines"]
    return lines[lineno - 1].strip() if 0 < lineno <= len(lines) else ""


def _student_frames(tb):
    """(function name, line number) of every frame of attention.py in a traceback, innermost last."""
    frames = []
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == attention.__file__:
            frames.append((_frame_name(tb.tb_frame), tb.tb_lineno))
        tb = tb.tb_next
    return frames


def _copy(x):
    return x.clone() if isinstance(x, torch.Tensor) else x


def call(label, fn, *args, hint=None, **kwargs):
    """Call the student's fn on copies of the arguments; turn exceptions into short messages.

    label is what the message calls fn, e.g. "masked_softmax" or "AdditiveAttention.forward";
    hint is added to the message when fn raises something other than NotImplementedError.
    """
    args = [_copy(a) for a in args]
    kwargs = {k: _copy(v) for k, v in kwargs.items()}
    where = None
    try:
        return fn(*args, **kwargs)
    except NotImplementedError as exc:
        frames = _student_frames(exc.__traceback__)
        raiser = frames[-1][0] if frames else label
        if raiser == label.split(" ")[0]:
            problem = _("attention.{name} is not written yet (it raises NotImplementedError).").format(name=label)
        else:
            problem = _("attention.{name} calls attention.{other}, which is not written yet "
                        "(it raises NotImplementedError); write that part first.").format(name=label, other=raiser)
    except Exception as exc:  # anything else the student's code raised
        text = str(exc).strip().splitlines()
        problem = _("attention.{name} raised {kind}: {error}").format(
            name=label, kind=type(exc).__name__, error=text[0] if text else "")
        shown = [_describe(a) for a in args] + [f"{k}={_describe(v)}" for k, v in kwargs.items()]
        problem += "\n  " + _("called with: {arguments}").format(arguments=", ".join(shown))
        for name, lineno in _student_frames(exc.__traceback__):
            problem += "\n  " + _("attention.py line {line}, in {function}: {source}").format(
                line=lineno, function=name, source=_source_line(lineno))
        where = hint
    fail(problem, where)  # outside the except block, so that pytest shows only our message


def api(name):
    """attention.<name>, or a clear failure when it is missing."""
    if not hasattr(attention, name):
        fail(_("attention.py defines no `{name}`: the grader imports it by exactly this name.").format(name=name))
    return getattr(attention, name)


def build(cls_name, *args, **kwargs):
    return call(f"{cls_name}.__init__", api(cls_name), *args, **kwargs)


def stored_weights(owner, label, expected_shape):
    weights = getattr(owner, "attention_weights", None)
    if weights is None:
        fail(_("{name} did not store self.attention_weights (expected a tensor of shape {shape}, "
               "the weights after the masked softmax and before dropout).").format(name=label, shape=expected_shape))
    return weights


INNER_ATTENTION_HINT = _("__init__ must create the inner scaled dot-product attention under the name "
                         "`attention`, with the module's dropout; see the table of attributes in part 6 "
                         "of README.md.")


def mha_weights(m, expected_shape):
    inner = getattr(m, "attention", None)
    if inner is None:
        fail(_("MultiHeadAttention has no self.attention (expected a DotProductAttention)."), INNER_ATTENTION_HINT)
    return stored_weights(inner, _("MultiHeadAttention.forward (through self.attention)"), expected_shape)


def check_parameters(label, module, expected):
    """expected: {state_dict key: shape}."""
    found = {k: tuple(v.shape) for k, v in module.state_dict().items()}
    missing = sorted(set(expected) - set(found))
    extra = sorted(set(found) - set(expected))
    if missing or extra:
        msg = _("{name}: the parameters are not the expected ones.").format(name=label)
        msg += "\n" + _("  expected {expected}\n  found    {found}").format(
            expected=sorted(expected), found=sorted(found))
        if any(k.endswith(".bias") for k in extra):
            msg += "\n  " + _("Likely cause: ") + _(
                "a layer has a bias it should not have: look at what each nn.Linear you create "
                "does with its bias argument, and compare with the table of attributes in README.md.")
        elif any(k.endswith(".bias") for k in missing):
            msg += "\n  " + _("Likely cause: ") + _(
                "the layers should have a bias here: each nn.Linear must follow the module's own "
                "`bias` argument instead of a fixed setting.")
        fail(msg, _("the names and bias settings are part of the interface: the grader loads its "
                    "own weights into your module with load_state_dict. Print "
                    "module.state_dict().keys() to see what yours has."))
    for key, shape in expected.items():
        if found[key] != tuple(shape):
            fail(_("{name}: parameter {key} has shape {found}, expected {expected}.").format(
                name=label, key=key, found=found[key], expected=tuple(shape)),
                _("nn.Linear(in_features, out_features) stores a weight of shape (out_features, in_features)."))


def load_random(label, module, shapes, gen):
    """Give the module known random weights, the way the grader does (load_state_dict)."""
    check_parameters(label, module, shapes)
    state = {k: torch.randn(s, generator=gen) * 0.5 for k, s in shapes.items()}
    module.load_state_dict(state)
    return state


def randn(*shape, gen):
    return torch.randn(*shape, generator=gen)


def check_shape(name, got, shape, hint=None):
    if not isinstance(got, torch.Tensor):
        fail(_("{name}: expected a tensor of shape {shape}, got {got}.").format(
            name=name, shape=tuple(shape), got=_describe(got)), hint)
    if tuple(got.shape) != tuple(shape):
        fail(_("{name}: expected shape {expected}, got shape {got}.").format(
            name=name, expected=tuple(shape), got=tuple(got.shape)), hint)


def kept_keys(weights):
    """How many keys get a nonzero weight in each row."""
    return (weights.detach() != 0).sum(-1)


DROPOUT_STORED = _("self.attention_weights holds the weights as masked_softmax returns them, before dropout; "
                   "dropout acts only on the weights that are multiplied with the values. A stored row that "
                   "does not sum to 1 in training mode, or that differs from eval mode, has been through "
                   "dropout. See \"Rules for every part\" in README.md.")
DROPOUT_TRAINING = _("in training mode (module.train()) dropout sets each attention weight to 0 with probability "
                     "p and multiplies the others by 1/(1-p), and it acts on the weights that are multiplied "
                     "with the values: not on the scores, not on the stored weights, not on the output.")
DROPOUT_EVAL = _("in eval mode (module.eval()) dropout does nothing, so the output is exactly the stored weights "
                 "times the values. A dropout layer created in __init__ follows the module's mode; a dropout "
                 "that still acts in eval mode does not know that mode.")


def check_dropout(label, module, args, weights_of, used_of, shape, p=0.5):
    """The dropout order of one attention module, the rule the hidden suite grades.

    The values are the unit vectors and a column of ones (see `showing_values`), so the output
    shows the weights it was built from and their row sums: used_of(out) returns both, the
    weights in the stored weights' shape. In eval mode they must equal the stored weights; in
    training mode the stored weights must not change (taken before dropout), each weight used
    must be 0 or the stored one times 1/(1-p), and the output must be those weights times the
    values (dropout on the output instead drops the ones column on its own).
    """
    module.eval()
    out = call(f"{label}.forward", module, *args)
    stored = weights_of(module)
    check_shape(f"{label}.attention_weights", stored, shape)
    stored = stored.detach().clone()
    check_close(_("{name} in eval mode, the weights the output was built from (values chosen so that the output "
                  "shows them) vs. the stored weights").format(name=label), used_of(out)[0], stored, hint=DROPOUT_EVAL)
    module.train()
    torch.manual_seed(0)  # for the dropout mask
    out = call(f"{label}.forward", module, *args)
    kept = weights_of(module)
    check_shape(f"{label}.attention_weights", kept, shape)
    rows = tuple(shape[:-1])
    check_close(_("{name}.attention_weights in training mode (dropout={p}): the sum of each row").format(
        name=label, p=p), kept.sum(-1), torch.ones(rows), hint=DROPOUT_STORED)
    check_close(_("{name}.attention_weights in training mode vs. eval mode (dropout={p})").format(name=label, p=p),
                kept, stored, hint=DROPOUT_STORED)
    used, sums = (t.detach().cpu().double() for t in used_of(out))
    stored = stored.cpu().double()
    if torch.allclose(used, stored, rtol=RTOL, atol=ATOL):
        fail(_("{name}: in training mode (dropout={p}) the output was built from the stored weights unchanged: "
               "dropout did not act on the attention weights.").format(name=label, p=p), DROPOUT_TRAINING)
    scaled = stored / (1 - p)
    bad = ~(torch.isclose(used, torch.zeros_like(used), rtol=RTOL, atol=ATOL)
            | torch.isclose(used, scaled, rtol=RTOL, atol=ATOL))
    if bad.any():
        first = tuple(bad.nonzero()[0].tolist())
        fail(_("{name}: in training mode (dropout={p}), {bad} of {total} weights the output was built from are "
               "neither 0 nor the stored weight times 1/(1-p) = {scale}; the first is at index {index}: stored "
               "{stored}, used {used}.").format(
            name=label, p=p, bad=int(bad.sum()), total=bad.numel(), scale=_num(1 / (1 - p)), index=list(first),
            stored=_num(stored[first].item()), used=_num(used[first].item())), DROPOUT_TRAINING)
    check_close(_("{name} in training mode (dropout={p}): the column of the output that sums each row of the "
                  "weights used (the values hold a column of ones) vs. the sum of those weights").format(
        name=label, p=p), sums, used.sum(-1), hint=DROPOUT_TRAINING)


def showing_values(B, K):
    """(B, K, K + 1) values [unit vectors | 1]: weights @ values = [the weights | their row sums]."""
    return torch.cat([torch.eye(K), torch.ones(K, 1)], dim=1).expand(B, K, K + 1).clone()


def split_shown(out):
    """The weights and row sums that an output computed from `showing_values` shows."""
    if not isinstance(out, torch.Tensor) or out.dim() < 1:
        return out, out
    return out[..., :-1], out[..., -1]


# ---------------------------------------------------------------------------
# Independent reference computations (plain loops, float64), used for random inputs.
# ---------------------------------------------------------------------------

def ref_masked_softmax(X, valid_lens):
    X = X.detach().double()
    B, Q, K = X.shape
    out = torch.zeros(B, Q, K, dtype=torch.float64)
    for b in range(B):
        for q in range(Q):
            if valid_lens is None:
                n = K
            else:
                n = valid_lens[b] if valid_lens.dim() == 1 else valid_lens[b, q]
                n = min(K, math.ceil(float(n)))
            if n <= 0:
                out[b, q] = 1.0 / K  # every score is -1e6: a uniform row
            else:
                out[b, q, :n] = torch.softmax(X[b, q, :n], dim=0)
    return out


def ref_additive(p, queries, keys, values, valid_lens):
    q = queries.double() @ p["W_q.weight"].double().T  # (B, Q, H)
    k = keys.double() @ p["W_k.weight"].double().T  # (B, K, H)
    w = p["w_v.weight"].double()[0]  # (H,)
    B, Q, K = q.shape[0], q.shape[1], k.shape[1]
    scores = torch.zeros(B, Q, K, dtype=torch.float64)
    for b in range(B):
        for i in range(Q):
            for j in range(K):
                scores[b, i, j] = (w * torch.tanh(q[b, i] + k[b, j])).sum()
    weights = ref_masked_softmax(scores, valid_lens)
    return weights @ values.double(), weights


def ref_dot(queries, keys, values, valid_lens):
    d = queries.shape[-1]
    scores = queries.double() @ keys.double().transpose(1, 2) / math.sqrt(d)
    weights = ref_masked_softmax(scores, valid_lens)
    return weights @ values.double(), weights


def ref_mha(p, queries, keys, values, valid_lens, num_heads):
    def linear(x, name):
        y = x.double() @ p[name + ".weight"].double().T
        return y + p[name + ".bias"].double() if name + ".bias" in p else y
    q, k, v = linear(queries, "W_q"), linear(keys, "W_k"), linear(values, "W_v")
    B, Q, H = q.shape
    K, d = k.shape[1], H // num_heads
    heads = torch.zeros(B, Q, H, dtype=torch.float64)
    weights = torch.zeros(B * num_heads, Q, K, dtype=torch.float64)
    for b in range(B):
        lens = None if valid_lens is None else valid_lens[b:b + 1]  # this example's length(s)
        for i in range(num_heads):
            cols = slice(i * d, (i + 1) * d)
            out, w = ref_dot(q[b:b + 1, :, cols], k[b:b + 1, :, cols], v[b:b + 1, :, cols], lens)
            heads[b, :, cols] = out[0]
            weights[b * num_heads + i] = w[0]
    return linear(heads, "W_o"), weights



# ---------------------------------------------------------------------------
# Part 1: sequence_mask
# ---------------------------------------------------------------------------

def test_sequence_mask_book_example():
    X = torch.tensor([[1, 2, 3], [4, 5, 6]])
    got = call("sequence_mask", api("sequence_mask"), X, torch.tensor([1, 2]))
    check_close("sequence_mask(X, valid_len=[1, 2])", got, [[1, 0, 0], [4, 5, 0]],
                hint=_("position t of row i is kept when t < valid_len[i], and sequence_mask returns the "
                       "result. Print your (B, T) mask for this example and compare it with the picture "
                       "in part 1 of README.md."),
                mistakes=[([[1, 2, 0], [4, 5, 6]],
                           _("every row kept one position too many: a valid length of 1 keeps only "
                             "position 0. Look at the comparison that builds your mask.")),
                          ([[0, 2, 3], [0, 0, 6]],
                           _("the mask is the wrong way round: the entries past the valid length must be "
                             "replaced and those before it kept. Print your mask: is True where a "
                             "position is kept, and do you replace where it is True or where it is False?")),
                          ([[1, 0, 0], [4, 0, 0]],
                           _("every row used the first valid length. Print the shapes of the two sides of "
                             "your comparison: the positions should be a row (1, T) and the lengths a "
                             "column (B, 1), so that broadcasting gives (B, T).")),
                          ])


def test_sequence_mask_value_length_zero_and_full():
    X = torch.tensor([[0.5, -1.5, 2.0, 3.0],
                      [1.0, 2.0, -3.0, 4.0],
                      [7.0, 8.0, 9.0, -0.5]])
    got = call("sequence_mask", api("sequence_mask"), X, torch.tensor([2, 0, 4]), value=-1)
    check_close("sequence_mask(X, valid_len=[2, 0, 4], value=-1)", got,
                [[0.5, -1.5, -1.0, -1.0],
                 [-1.0, -1.0, -1.0, -1.0],
                 [7.0, 8.0, 9.0, -0.5]],
                hint=_("masked entries take `value`; length 0 masks the whole row, length T masks nothing."))


def test_sequence_mask_float_lengths_and_lengths_past_the_end():
    X = torch.tensor([[1.5, 2.5, 3.5], [4.0, 5.0, 6.0]])
    got = call("sequence_mask", api("sequence_mask"), X, torch.tensor([2.0, 1.0]))
    check_close(_("sequence_mask(X, valid_len=[2.0, 1.0]) (float lengths)"), got,
                [[1.5, 2.5, 0.0], [4.0, 0.0, 0.0]],
                hint=_("valid lengths may be a float tensor of whole numbers and must act like the integers "
                       "[2, 1]. Try your mask with both and compare."))
    got = call("sequence_mask", api("sequence_mask"), X, torch.tensor([5, 3]))
    check_close(_("sequence_mask(X, valid_len=[5, 3]) (lengths >= T)"), got, X,
                hint=_("a valid length of T or more masks nothing."))


def test_sequence_mask_with_feature_axis():
    # X (2, 3, 2): row i, position t holds the feature vector X[i, t, :]
    X = torch.tensor([[[1.0, -1.0], [2.0, -2.0], [3.0, -3.0]],
                      [[4.0, -4.0], [5.0, -5.0], [6.0, -6.0]]])
    got = call("sequence_mask", api("sequence_mask"), X, torch.tensor([2, 1]))
    check_close(_("sequence_mask(X of shape (2, 3, 2), valid_len=[2, 1])"), got,
                [[[1.0, -1.0], [2.0, -2.0], [0.0, 0.0]],
                 [[4.0, -4.0], [0.0, 0.0], [0.0, 0.0]]],
                hint=_("with trailing feature axes a masked position loses its whole feature vector X[i, t, :]. "
                       "The mask is still (B, T): try indexing a (2, 3, 2) tensor with a (2, 3) boolean "
                       "mask and look at what it selects."))


# ---------------------------------------------------------------------------
# Part 2: masked_softmax
# ---------------------------------------------------------------------------

REPEATED_WHOLE = _("the lengths were copied whole, one copy after another ({wrong}), as Tensor.repeat does. "
                   "Rows 0..Q-1 of X flattened to (B*Q, K) are the queries of example 0, so each length must "
                   "be repeated in place ({right}), as torch.repeat_interleave does; part 2 of README.md "
                   "compares the two.")


def test_masked_softmax_hand_example():
    # row 0: scores [0, ln 3, 9, 9], length 2 -> softmax of [0, ln 3] = [1/4, 3/4], then zeros
    # row 1: scores [0, 0, 0, 5], length 3 -> [1/3, 1/3, 1/3, 0]
    X = torch.tensor([[[0.0, math.log(3.0), 9.0, 9.0]],
                      [[0.0, 0.0, 0.0, 5.0]]])
    got = call("masked_softmax", api("masked_softmax"), X, torch.tensor([2, 3]))
    check_close("masked_softmax(X, valid_lens=[2, 3])", got,
                [[[0.25, 0.75, 0.0, 0.0]], [[1 / 3, 1 / 3, 1 / 3, 0.0]]],
                hint=_("the scores past the valid length are replaced before the softmax (by the value "
                       "named in masked_softmax's docstring), and the softmax runs over the keys. Here "
                       "row 0 keeps 2 keys and row 1 keeps 3; work the example out by hand."),
                mistakes=[([[[0.0, 0.0, 0.5, 0.5]], [[0.0, 0.0, 0.0, 1.0]]],
                           _("the mask is the wrong way round: it is the keys past the valid length "
                             "whose scores are replaced."))])


def test_masked_softmax_none_is_plain_softmax():
    gen = torch.Generator().manual_seed(1)
    X = randn(2, 3, 5, gen=gen)
    got = call("masked_softmax", api("masked_softmax"), X, None)
    check_close("masked_softmax(X, None)", got, torch.softmax(X, dim=-1),
                hint=_("valid_lens=None means no masking: a plain softmax over the last axis."))


def test_masked_softmax_rows_sum_to_one_and_masked_weights_are_zero():
    gen = torch.Generator().manual_seed(2)
    X = randn(2, 3, 5, gen=gen)
    lens = torch.tensor([2, 4])
    got = call("masked_softmax", api("masked_softmax"), X, lens)
    check_shape("masked_softmax(X (2, 3, 5), [2, 4])", got, (2, 3, 5),
                hint=_("the result has the shape of X, (B, Q, K)."))
    check_close(_("masked_softmax(X (2, 3, 5), [2, 4]): the sum of each row"), got.sum(-1), torch.ones(2, 3),
                hint=_("the weights of each query must sum to 1 over the keys, the last axis. Print "
                       "weights.sum(axis) for each axis to see which one your softmax normalised."))
    expected = ref_masked_softmax(X, lens)
    check_close(_("masked_softmax(X (2, 3, 5), [2, 4]): number of keys with nonzero weight per row"),
                kept_keys(got), torch.tensor([[2, 2, 2], [4, 4, 4]]),
                hint=_("masked keys must get a weight of exactly 0. What matters is what you replace (the "
                       "scores before the softmax, or the weights after it) and by what value (see the "
                       "docstring)."),
                mistakes=[(torch.tensor([[2, 4, 2], [4, 2, 4]]),
                           REPEATED_WHOLE.format(wrong=[2, 4, 2, 4, 2, 4], right=[2, 2, 2, 4, 4, 4]))])
    check_close("masked_softmax(X (2, 3, 5), valid_lens=[2, 4])", got, expected)


def test_masked_softmax_1d_lengths_apply_to_every_query_of_their_example():
    gen = torch.Generator().manual_seed(3)
    X = randn(2, 3, 4, gen=gen)
    got = call("masked_softmax", api("masked_softmax"), X, torch.tensor([1, 3]))
    check_shape("masked_softmax(X (2, 3, 4), [1, 3])", got, (2, 3, 4))
    check_close(_("masked_softmax(X (2, 3, 4), [1, 3]): number of keys with nonzero weight per row"),
                kept_keys(got), torch.tensor([[1, 1, 1], [3, 3, 3]]),
                hint=_("a (B,) valid_lens gives one length per example, the same for all of its Q queries."),
                mistakes=[(torch.tensor([[1, 3, 1], [3, 1, 3]]),
                           REPEATED_WHOLE.format(wrong=[1, 3, 1, 3, 1, 3], right=[1, 1, 1, 3, 3, 3]))])
    check_close("masked_softmax(X (2, 3, 4), valid_lens=[1, 3])", got, ref_masked_softmax(X, torch.tensor([1, 3])))


def test_masked_softmax_length_zero_gives_a_uniform_row():
    gen = torch.Generator().manual_seed(4)
    X = randn(2, 2, 4, gen=gen)
    got = call("masked_softmax", api("masked_softmax"), X, torch.tensor([0, 2]))
    expected = ref_masked_softmax(X, torch.tensor([0, 2]))
    if isinstance(got, torch.Tensor) and got.shape == expected.shape and torch.isnan(got[0]).any():
        fail(_("masked_softmax(X, [0, 2]): rows of valid length 0 came out NaN."),
             _("in such a row every score is masked; with -inf the softmax computes exp(-inf - (-inf)) = NaN. "
               "Compare torch.softmax on a row of four -inf with the same row of the finite value named in "
               "the docstring: the finite value gives a uniform row (1/K everywhere)."))
    check_close("masked_softmax(X (2, 2, 4), valid_lens=[0, 2])", got, expected,
                hint=_("a row of valid length 0 has all of its scores replaced by the same value, so it "
                       "comes out uniform: 1/K = 0.25 everywhere."))


def test_masked_softmax_length_larger_than_K_masks_nothing():
    gen = torch.Generator().manual_seed(5)
    X = randn(2, 2, 3, gen=gen)
    got = call("masked_softmax", api("masked_softmax"), X, torch.tensor([7, 3]))
    check_close("masked_softmax(X (2, 2, 3), valid_lens=[7, 3])", got, torch.softmax(X, dim=-1),
                hint=_("a valid length of K or more masks nothing: the result is the plain softmax."))


def test_masked_softmax_2d_lengths_one_per_query():
    gen = torch.Generator().manual_seed(6)
    X = randn(2, 3, 4, gen=gen)
    lens = torch.tensor([[1, 2, 4], [3, 0, 2]])
    got = call("masked_softmax", api("masked_softmax"), X, lens)
    check_shape(_("masked_softmax(X (2, 3, 4), (2, 3) valid_lens)"), got, (2, 3, 4))
    check_close(_("masked_softmax(X (2, 3, 4), (2, 3) valid_lens): number of keys with nonzero weight per row"),
                kept_keys(got), torch.tensor([[1, 2, 4], [3, 4, 2]]),
                hint=_("a (B, Q) valid_lens gives every query its own length. Once X is flattened to "
                       "(B*Q, K), the lengths must be a (B*Q,) vector in the same order as those rows. "
                       "A length of 0 gives a uniform row (all K keys nonzero)."))
    check_close("masked_softmax(X (2, 3, 4), valid_lens=[[1, 2, 4], [3, 0, 2]])", got, ref_masked_softmax(X, lens))


def test_masked_softmax_float_lengths():
    gen = torch.Generator().manual_seed(7)
    X = randn(2, 2, 4, gen=gen)
    got = call("masked_softmax", api("masked_softmax"), X, torch.tensor([3.0, 1.0]))
    check_close(_("masked_softmax(X (2, 2, 4), valid_lens=[3.0, 1.0]) (float lengths)"), got,
                ref_masked_softmax(X, torch.tensor([3, 1])),
                hint=_("valid lengths may be floats holding whole numbers; they must act like the integers."))


def test_masked_softmax_keeps_the_dtype_and_the_gradient():
    gen = torch.Generator().manual_seed(22)
    X = randn(2, 3, 4, gen=gen).double().requires_grad_(True)
    lens = torch.tensor([2, 3])
    got = call("masked_softmax", api("masked_softmax"), X, lens)
    check_shape(_("masked_softmax(X (2, 3, 4) float64, [2, 3])"), got, (2, 3, 4))
    if got.dtype != torch.float64:
        fail(_("masked_softmax on float64 scores returned {dtype}: the weights must keep the dtype of the "
               "scores.").format(dtype=str(got.dtype).replace("torch.", "")),
             _("work in the dtype of the input: see \"Dtypes\" in the rules for every part of README.md."))
    if not got.requires_grad:
        fail(_("masked_softmax: the weights do not depend on the scores through autograd, so no gradient can "
               "reach them."),
             _("everything must stay differentiable: see \"Gradients\" in the rules for every part of README.md."))
    upstream = randn(2, 3, 4, gen=gen).double()
    (got * upstream).sum().backward()
    # the reference: the same masking, written independently, differentiated by autograd
    Xr = X.detach().clone().requires_grad_(True)
    keep = torch.arange(4)[None, None, :] < lens[:, None, None]
    (torch.softmax(torch.where(keep, Xr, torch.tensor(-1e6, dtype=torch.float64)), dim=-1) * upstream).sum().backward()
    check_close(_("the gradient of masked_softmax(X, [2, 3]) with respect to X"), X.grad, Xr.grad,
                hint=_("everything must stay differentiable: see \"Gradients\" in the rules for every part of README.md."))


# ---------------------------------------------------------------------------
# Part 3: AdditiveAttention
# ---------------------------------------------------------------------------

ADDITIVE_STEPS = _("print the shape after each step (H = num_hiddens): queries after W_q (B, Q, H), keys after "
                   "W_k (B, K, H); every query paired with every key by broadcasting, after inserting an "
                   "axis of size 1 in each, (B, Q, K, H); after w_v (B, Q, K, 1); the scores (B, Q, K); "
                   "the output (B, Q, V).")
ADDITIVE_SHAPES = {"W_k.weight": (8, 2), "W_q.weight": (8, 20), "w_v.weight": (1, 8)}


def test_additive_attention_parameters():
    m = build("AdditiveAttention", key_size=2, query_size=20, num_hiddens=8, dropout=0.1)
    check_parameters("AdditiveAttention(key_size=2, query_size=20, num_hiddens=8)", m, ADDITIVE_SHAPES)
    if not isinstance(getattr(m, "dropout", None), torch.nn.Dropout):
        fail(_("AdditiveAttention has no self.dropout of type nn.Dropout."),
             _("__init__ must create a dropout layer named `dropout` (see the table of attributes in part 3 "
               "of README.md); forward applies it to the attention weights."))


def test_additive_attention_equal_keys_average_the_valid_values():
    # All keys equal -> all scores of a query are equal -> the weights are uniform over the
    # valid keys, and the output is the mean of the valid values (checkable by hand).
    gen = torch.Generator().manual_seed(8)
    m = build("AdditiveAttention", key_size=2, query_size=3, num_hiddens=4, dropout=0)
    load_random("AdditiveAttention(key_size=2, query_size=3, num_hiddens=4)", m,
                {"W_k.weight": (4, 2), "W_q.weight": (4, 3), "w_v.weight": (1, 4)}, gen)
    m.eval()
    queries = randn(2, 2, 3, gen=gen)
    keys = torch.tensor([0.3, -0.7]).repeat(2, 4, 1)  # (2, 4, 2), the same key everywhere
    values = torch.tensor([[1.0, 2.0], [3.0, 0.0], [5.0, 4.0], [100.0, 100.0]]).repeat(2, 1, 1)
    out = call("AdditiveAttention.forward", m, queries, keys, values, torch.tensor([3, 0]), hint=ADDITIVE_STEPS)
    # example 0: mean of the first 3 values = [3, 2]; example 1 (length 0): mean of all 4 = [27.25, 26.5]
    check_close(_("AdditiveAttention output with equal keys, valid_lens=[3, 0]"), out,
                [[[3.0, 2.0], [3.0, 2.0]], [[27.25, 26.5], [27.25, 26.5]]],
                hint=_("with all keys equal, the weights are uniform over the valid keys (all of them for "
                       "length 0), so each output is the mean of those values: [3, 2] for example 0, "
                       "[27.25, 26.5] for example 1. The output has shape (B, Q, V)."))
    weights = stored_weights(m, "AdditiveAttention.forward", (2, 2, 4))
    check_close(_("AdditiveAttention.attention_weights with equal keys, valid_lens=[3, 0]"), weights,
                [[[1 / 3, 1 / 3, 1 / 3, 0.0]] * 2, [[0.25] * 4] * 2])


def test_additive_attention_book_shapes_and_values():
    gen = torch.Generator().manual_seed(9)
    m = build("AdditiveAttention", key_size=2, query_size=20, num_hiddens=8, dropout=0.1)
    p = load_random("AdditiveAttention(key_size=2, query_size=20, num_hiddens=8)", m, ADDITIVE_SHAPES, gen)
    m.eval()
    queries, keys, values = randn(2, 1, 20, gen=gen), randn(2, 10, 2, gen=gen), randn(2, 10, 4, gen=gen)
    lens = torch.tensor([2, 6])
    out = call("AdditiveAttention.forward", m, queries, keys, values, lens, hint=ADDITIVE_STEPS)
    ref_out, ref_w = ref_additive(p, queries, keys, values, lens)
    check_close(_("AdditiveAttention output (queries (2, 1, 20), keys (2, 10, 2), values (2, 10, 4))"),
                out, ref_out, hint=_("the output is (B, Q, V): the (B, Q, K) weights times the values, "
                                     "one batch matrix multiplication."))
    check_close("AdditiveAttention.attention_weights", stored_weights(m, "AdditiveAttention.forward", (2, 1, 10)),
                ref_w, hint=_("score(q, k) = w_v . tanh(W_q q + W_k k) for every pair: (B, Q, K, num_hiddens) "
                              "before w_v, (B, Q, K, 1) after it. Here Q = 1: which axes does your code "
                              "remove from (2, 1, 10, 1)?"))


def test_additive_attention_several_queries_2d_lengths():
    gen = torch.Generator().manual_seed(10)
    m = build("AdditiveAttention", key_size=3, query_size=2, num_hiddens=5, dropout=0)
    p = load_random("AdditiveAttention(key_size=3, query_size=2, num_hiddens=5)", m,
                    {"W_k.weight": (5, 3), "W_q.weight": (5, 2), "w_v.weight": (1, 5)}, gen)
    m.eval()
    queries, keys, values = randn(2, 3, 2, gen=gen), randn(2, 4, 3, gen=gen), randn(2, 4, 2, gen=gen)
    lens = torch.tensor([[1, 4, 2], [3, 2, 5]])
    out = call("AdditiveAttention.forward", m, queries, keys, values, lens, hint=ADDITIVE_STEPS)
    ref_out, ref_w = ref_additive(p, queries, keys, values, lens)
    check_close(_("AdditiveAttention.attention_weights (Q=3 queries, K=4 keys, (B, Q) valid_lens)"),
                stored_weights(m, "AdditiveAttention.forward", (2, 3, 4)), ref_w,
                hint=_("entry [b, q, k] must pair query q with key k. Before the sum, the projected queries "
                       "should be (B, Q, 1, H) and the keys (B, 1, K, H), H = num_hiddens: print them."))
    check_close(_("AdditiveAttention output (Q=3, K=4, (B, Q) valid_lens)"), out, ref_out)


def test_additive_attention_dropout_acts_on_the_weights_in_training_only():
    gen = torch.Generator().manual_seed(19)
    m = build("AdditiveAttention", key_size=2, query_size=3, num_hiddens=4, dropout=0.5)
    load_random("AdditiveAttention(key_size=2, query_size=3, num_hiddens=4)", m,
                {"W_k.weight": (4, 2), "W_q.weight": (4, 3), "w_v.weight": (1, 4)}, gen)
    args = (randn(2, 3, 3, gen=gen), randn(2, 6, 2, gen=gen), showing_values(2, 6), torch.tensor([3, 5]))
    check_dropout("AdditiveAttention", m, args, lambda mod: stored_weights(mod, "AdditiveAttention.forward",
                                                                        (2, 3, 6)), split_shown, (2, 3, 6))


# ---------------------------------------------------------------------------
# Part 4: DotProductAttention
# ---------------------------------------------------------------------------

DOT_STEPS = _("print the shapes: torch.bmm multiplies (B, n, m) by (B, m, p) into (B, n, p). The scores must be "
              "(B, Q, K), so the keys (B, K, d) have to be (B, d, K) in that product; the output is "
              "(B, Q, K) weights times (B, K, V) values, (B, Q, V).")


def test_dot_product_attention_hand_example():
    # d = 4, so scores are q.k / 2: key 0 -> 0, key 1 -> ln 3, key 2 -> 15/2 (masked by valid length 2).
    # Weights [1/4, 3/4, 0]; output 1/4 * [1, 0] + 3/4 * [0, 1] = [0.25, 0.75].
    queries = torch.tensor([[[1.0, -1.0, 2.0, 0.5]]])
    keys = torch.tensor([[[0.0, 0.0, 0.0, 0.0],
                          [0.0, 0.0, math.log(3.0), 0.0],
                          [5.0, 0.0, 5.0, 0.0]]])
    values = torch.tensor([[[1.0, 0.0], [0.0, 1.0], [50.0, 50.0]]])
    m = build("DotProductAttention", dropout=0)
    m.eval()
    out = call("DotProductAttention.forward", m, queries, keys, values, torch.tensor([2]), hint=DOT_STEPS)
    sqrt3 = math.sqrt(3.0)
    check_close(_("DotProductAttention.attention_weights (d=4, valid_lens=[2])"),
                stored_weights(m, "DotProductAttention.forward", (1, 1, 3)), [[[0.25, 0.75, 0.0]]],
                hint=_("work it out by hand: the dot products q.k of the three keys are 0, 2 ln 3 and 15, "
                       "d = 4 and the valid length is 2. Which scaling of the scores gives the weights "
                       "[1/4, 3/4, 0]?"),
                mistakes=[([[[0.1, 0.9, 0.0]]],
                           _("the scores were not scaled: scaled dot-product attention divides them by the "
                             "square root of the query size d (here 2).")),
                          ([[[1 / (1 + sqrt3), sqrt3 / (1 + sqrt3), 0.0]]],
                           _("the scores were divided by d (here 4); the scale is the square root of d "
                             "(here 2)."))])
    check_close(_("DotProductAttention output (d=4, valid_lens=[2])"), out, [[[0.25, 0.75]]],
                hint=_("the output is the weighted sum of the values: 1/4 * [1, 0] + 3/4 * [0, 1] = [0.25, 0.75]."))


def test_dot_product_attention_shapes_values_and_no_parameters():
    gen = torch.Generator().manual_seed(11)
    m = build("DotProductAttention", dropout=0.5)
    check_parameters("DotProductAttention(dropout=0.5)", m, {})
    m.eval()
    queries, keys, values = randn(2, 3, 6, gen=gen), randn(2, 5, 6, gen=gen), randn(2, 5, 4, gen=gen)
    lens = torch.tensor([[2, 5, 1], [4, 0, 3]])
    out = call("DotProductAttention.forward", m, queries, keys, values, lens, hint=DOT_STEPS)
    ref_out, ref_w = ref_dot(queries, keys, values, lens)
    check_close("DotProductAttention.attention_weights (B=2, Q=3, K=5, d=6)",
                stored_weights(m, "DotProductAttention.forward", (2, 3, 5)), ref_w)
    check_close(_("DotProductAttention output (B=2, Q=3, K=5, V=4), eval mode"), out, ref_out)
    again = call("DotProductAttention.forward", m, queries, keys, values, lens, hint=DOT_STEPS)
    check_close(_("DotProductAttention output, second call in eval mode"), again, out,
                hint=_("in eval mode dropout does nothing, so two calls must give the same result."))


def test_dot_product_attention_dropout_acts_on_the_weights_in_training_only():
    gen = torch.Generator().manual_seed(12)
    m = build("DotProductAttention", dropout=0.5)
    args = (randn(2, 3, 4, gen=gen), randn(2, 6, 4, gen=gen), showing_values(2, 6), torch.tensor([3, 5]))
    check_dropout("DotProductAttention", m, args, lambda mod: stored_weights(mod, "DotProductAttention.forward",
                                                                          (2, 3, 6)), split_shown, (2, 3, 6))


def test_dot_product_attention_valid_lens_can_be_left_out():
    gen = torch.Generator().manual_seed(23)
    m = build("DotProductAttention", dropout=0)
    m.eval()
    queries, keys, values = randn(2, 3, 4, gen=gen), randn(2, 5, 4, gen=gen), randn(2, 5, 2, gen=gen)
    out = call(_("DotProductAttention.forward (valid_lens left out)"), m, queries, keys, values,
               hint=_("valid_lens is optional: forward must also work when it is left out, and then masks "
                      "nothing. Compare your signature of forward with the one in the skeleton."))
    check_close(_("DotProductAttention output with valid_lens left out"), out, ref_dot(queries, keys, values, None)[0])


# ---------------------------------------------------------------------------
# Part 5: transpose_qkv and transpose_output
# ---------------------------------------------------------------------------

def test_transpose_qkv_hand_example():
    X = torch.arange(16.0).reshape(2, 2, 4)  # B=2, n=2, num_hiddens=4
    got = call("transpose_qkv", api("transpose_qkv"), X, 2)
    # row b*num_heads + i holds head i of example b: columns 2i, 2i+1 of X[b]
    check_close("transpose_qkv(arange(16).reshape(2, 2, 4), num_heads=2)", got,
                [[[0, 1], [4, 5]], [[2, 3], [6, 7]], [[8, 9], [12, 13]], [[10, 11], [14, 15]]],
                hint=_("follow the shapes: (B, n, num_hiddens) -> (B, n, heads, num_hiddens/heads) -> "
                       "(B, heads, n, num_hiddens/heads) -> (B*heads, n, num_hiddens/heads). Print your "
                       "result for this example next to the one in part 5 of README.md."),
                mistakes=[(X.reshape(4, 2, 2),
                           _("a reshape alone gives the right shape with the wrong contents (positions and "
                             "heads mixed): the head axis has to be moved next to the batch axis before "
                             "the last reshape.")),
                          (X.reshape(2, 2, 2, 2).permute(2, 0, 1, 3).reshape(4, 2, 2),
                           _("the heads came first and the examples second (head i of example b at row "
                             "i*B + b); it must be row b*num_heads + i. Check which axes your permute "
                             "puts first."))])


def test_transpose_qkv_head_i_of_example_b_is_row_b_times_heads_plus_i():
    gen = torch.Generator().manual_seed(13)
    X = randn(3, 5, 12, gen=gen)
    got = call("transpose_qkv", api("transpose_qkv"), X, 4)
    expected = torch.stack([X[b, :, 3 * i:3 * (i + 1)] for b in range(3) for i in range(4)])
    check_close("transpose_qkv(X (3, 5, 12), num_heads=4)", got, expected,
                hint=_("the result is (B*num_heads, n, num_hiddens/num_heads) = (12, 5, 3); row b*num_heads + i "
                       "is X[b, :, i*3:(i+1)*3]."))


def test_transpose_output_undoes_transpose_qkv():
    gen = torch.Generator().manual_seed(14)
    Y = randn(6, 4, 5, gen=gen)  # B=2, num_heads=3, n=4, hidden/heads=5
    got = call("transpose_output", api("transpose_output"), Y, 3)
    expected = torch.cat([Y[0:3][i] for i in range(3)], dim=-1)[None]
    expected = torch.cat([expected, torch.cat([Y[3:6][i] for i in range(3)], dim=-1)[None]])
    check_close("transpose_output(Y (6, 4, 5), num_heads=3)", got, expected,
                hint=_("follow the steps of transpose_qkv backwards: (B*heads, n, s) -> (B, heads, n, s) -> "
                       "(B, n, heads, s) -> (B, n, heads*s); the heads of one example end up side by side "
                       "along the last axis, in order."))
    X = randn(2, 3, 8, gen=gen)
    split = call("transpose_qkv", api("transpose_qkv"), X, 2)
    back = call("transpose_output", api("transpose_output"), split, 2)
    check_close(_("transpose_output(transpose_qkv(X, 2), 2) for X (2, 3, 8)"), back, X,
                hint=_("transpose_output must undo transpose_qkv exactly."))


# ---------------------------------------------------------------------------
# Part 6: MultiHeadAttention
# ---------------------------------------------------------------------------

MHA_STEPS = _("print the shapes: queries, keys and values after their linear layer and transpose_qkv are "
              "(B*num_heads, n, num_hiddens/num_heads); valid_lens (B,) or (B, Q) must become "
              "(B*num_heads,) or (B*num_heads, Q); transpose_output gives (B, Q, num_hiddens) before W_o.")


def mha_shapes(key_size, query_size, value_size, num_hiddens, bias):
    shapes = {"W_q.weight": (num_hiddens, query_size), "W_k.weight": (num_hiddens, key_size),
              "W_v.weight": (num_hiddens, value_size), "W_o.weight": (num_hiddens, num_hiddens)}
    if bias:
        shapes.update({k.replace("weight", "bias"): (num_hiddens,) for k in list(shapes)})
    return shapes


def test_multihead_attention_parameters_follow_bias():
    for bias in (False, True):
        m = build("MultiHeadAttention", key_size=3, query_size=5, value_size=4, num_hiddens=8,
                  num_heads=2, dropout=0.1, bias=bias)
        check_parameters(f"MultiHeadAttention(key_size=3, query_size=5, value_size=4, num_hiddens=8, bias={bias})",
                         m, mha_shapes(3, 5, 4, 8, bias))
    m = build("MultiHeadAttention", 3, 5, 4, 8, 2, 0.1)
    check_parameters(_("MultiHeadAttention(...) with the default bias (False)"), m, mha_shapes(3, 5, 4, 8, False))
    if not isinstance(getattr(m, "attention", None), api("DotProductAttention")):
        fail(_("MultiHeadAttention has no self.attention of type DotProductAttention."), INNER_ATTENTION_HINT)


def test_multihead_attention_book_shapes():
    gen = torch.Generator().manual_seed(15)
    m = build("MultiHeadAttention", 100, 100, 100, 100, 5, 0.5)
    m.eval()
    X, Y = randn(2, 4, 100, gen=gen), randn(2, 6, 100, gen=gen)
    out = call("MultiHeadAttention.forward", m, X, Y, Y, torch.tensor([3, 2]), hint=MHA_STEPS)
    if not isinstance(out, torch.Tensor) or tuple(out.shape) != (2, 4, 100):
        fail(_("MultiHeadAttention output: expected shape (2, 4, 100) = (B, Q, num_hiddens), got {got}.").format(
            got=_describe(out)),
            _("transpose_output brings (B*heads, Q, num_hiddens/heads) back to (B, Q, num_hiddens) before W_o."))
    w = mha_weights(m, (10, 4, 6))
    if tuple(w.shape) != (10, 4, 6):
        fail(_("MultiHeadAttention: self.attention.attention_weights should have shape (B*num_heads, Q, K) "
               "= (10, 4, 6), got {got}.").format(got=tuple(w.shape)),
             _("the queries, keys and values are split into heads with transpose_qkv before "
               "self.attention sees them."))


def test_multihead_attention_every_head_uses_its_own_example_length():
    gen = torch.Generator().manual_seed(16)
    m = build("MultiHeadAttention", 4, 4, 4, 8, 2, 0)
    load_random("MultiHeadAttention(4, 4, 4, num_hiddens=8, num_heads=2)", m, mha_shapes(4, 4, 4, 8, False), gen)
    m.eval()
    queries, keys = randn(2, 3, 4, gen=gen), randn(2, 5, 4, gen=gen)
    call("MultiHeadAttention.forward", m, queries, keys, keys, torch.tensor([1, 4]), hint=MHA_STEPS)
    w = mha_weights(m, (4, 3, 5))
    check_shape("MultiHeadAttention attention.attention_weights", w, (4, 3, 5),
                hint=_("(B*num_heads, Q, K): the queries, keys and values are split into heads with "
                       "transpose_qkv before self.attention."))
    # rows 0, 1 are the two heads of example 0 (length 1); rows 2, 3 those of example 1 (length 4)
    check_close(_("MultiHeadAttention, valid_lens=[1, 4], 2 heads: keys with nonzero weight per row of "
                  "attention.attention_weights"), kept_keys(w), torch.tensor([[1] * 3, [1] * 3, [4] * 3, [4] * 3]),
                hint=_("every head of example b needs example b's length. Rows b*num_heads to "
                       "b*num_heads + num_heads-1 are the heads of example b, so [1, 4] must become "
                       "[1, 1, 4, 4] (and a (B, Q) valid_lens keeps each of its rows whole). Part 6 of "
                       "README.md shows the ways to repeat a tensor."),
                mistakes=[(torch.tensor([[1] * 3, [4] * 3, [1] * 3, [4] * 3]),
                           _("the lengths were copied whole ([1, 4, 1, 4]), as Tensor.repeat does, instead "
                             "of each entry repeated in place, as torch.repeat_interleave does: head i of "
                             "example b sits at row b*num_heads + i, so the lengths must be [1, 1, 4, 4]."))])


def test_multihead_attention_matches_the_formula():
    gen = torch.Generator().manual_seed(17)
    m = build("MultiHeadAttention", key_size=3, query_size=5, value_size=4, num_hiddens=6,
              num_heads=3, dropout=0.5, bias=True)
    p = load_random("MultiHeadAttention(3, 5, 4, num_hiddens=6, num_heads=3, bias=True)", m,
                    mha_shapes(3, 5, 4, 6, True), gen)
    m.eval()
    queries, keys, values = randn(2, 4, 5, gen=gen), randn(2, 3, 3, gen=gen), randn(2, 3, 4, gen=gen)
    for lens in (torch.tensor([2, 3]), torch.tensor([[1, 3, 2, 0], [3, 1, 2, 5]]), None):
        shown = "None" if lens is None else _fmt(lens)
        out = call("MultiHeadAttention.forward", m, queries, keys, values, lens, hint=MHA_STEPS)
        ref_out, ref_w = ref_mha(p, queries, keys, values, lens, 3)
        check_close(f"MultiHeadAttention attention.attention_weights, valid_lens={shown}",
                    mha_weights(m, (6, 4, 3)), ref_w,
                    hint=_("each head is scaled dot-product attention on its own slice of "
                           "num_hiddens/num_heads features, so its scale is the square root of "
                           "num_hiddens/num_heads."))
        check_close(_("MultiHeadAttention output (eval mode), valid_lens={lens}").format(lens=shown), out, ref_out,
                    hint=_("the outputs of the heads are put back side by side, (B, Q, num_hiddens), and then "
                           "go through the output layer W_o."))
    again = call("MultiHeadAttention.forward", m, queries, keys, values, None, hint=MHA_STEPS)
    check_close(_("MultiHeadAttention output, second call in eval mode"), again, out,
                hint=_("in eval mode dropout does nothing, so two calls must give the same result."))


def test_multihead_attention_dropout_acts_on_the_weights_in_training_only():
    # 2 heads of size K + 1 = 4 (K = 3 keys); W_v and W_o are the identity and head i's slice of
    # every value is [unit vectors | 1], so each head's slice of the output shows its weights.
    gen = torch.Generator().manual_seed(20)
    B, Q, K, h = 2, 3, 3, 2
    H = h * (K + 1)
    m = build("MultiHeadAttention", 4, 4, H, H, h, 0.5)
    check_parameters("MultiHeadAttention(4, 4, 8, num_hiddens=8, num_heads=2)", m, mha_shapes(4, 4, H, H, False))
    m.load_state_dict({"W_q.weight": torch.randn(H, 4, generator=gen), "W_k.weight": torch.randn(H, 4, generator=gen),
                       "W_v.weight": torch.eye(H), "W_o.weight": torch.eye(H)})
    values = showing_values(B, K).repeat(1, 1, h)  # (B, K, h*(K+1))
    args = (randn(B, Q, 4, gen=gen), randn(B, K, 4, gen=gen), values, torch.tensor([2, 3]))

    def used(out):
        check_shape(_("MultiHeadAttention output"), out, (B, Q, H), hint=MHA_STEPS)
        heads = out.reshape(B, Q, h, K + 1).permute(0, 2, 1, 3).reshape(B * h, Q, K + 1)  # row b*h + i
        return split_shown(heads)
    check_dropout("MultiHeadAttention", m, args, lambda mod: mha_weights(mod, (B * h, Q, K)), used, (B * h, Q, K))


# ---------------------------------------------------------------------------
# Without a GPU: the hidden suite's device-discipline check, with the same rule.
# ---------------------------------------------------------------------------

try:
    from torch.overrides import TorchFunctionMode
except ImportError:  # a torch older than 2.0
    TorchFunctionMode = None


def _factories():
    """torch's functions that create a tensor on the default device unless given device=."""
    try:
        from torch.utils._device import _device_constructors
        return frozenset(_device_constructors())
    except Exception:  # that helper is private: fall back to the common ones
        names = ("arange", "empty", "eye", "full", "linspace", "logspace", "ones", "rand", "randint", "randn",
                 "randperm", "range", "scalar_tensor", "tensor", "as_tensor", "asarray", "zeros")
        return frozenset(getattr(torch, n) for n in names if hasattr(torch, n))


_MARK = "_selfcheck_made_on_the_default_device"


def _tensors(tree):
    if isinstance(tree, torch.Tensor):
        return [tree]
    if isinstance(tree, dict):
        tree = list(tree.values())
    if isinstance(tree, (list, tuple)):
        return [t for item in tree for t in _tensors(item)]
    return []


def _marked(tensor):
    return getattr(tensor, "__dict__", {}).get(_MARK)


def _where_in_attention():
    """'attention.py line N, in f' for the innermost frame of the student's file now running."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_filename == attention.__file__:
            return _("attention.py line {line}, in {function}").format(line=frame.f_lineno,
                                                                        function=_frame_name(frame))
        frame = frame.f_back
    return ""


if TorchFunctionMode is not None:
    class DeviceDiscipline(TorchFunctionMode):
        """The rule of the hidden suite's check on machines without a GPU.

        A tensor made by a factory function (torch.arange, torch.zeros, torch.tensor, ...) without
        device= and with no tensor among its arguments is marked as made on the default device,
        unless it is 0-dimensional (those mix with GPU tensors on a real GPU). What is computed
        from a marked tensor stays marked, unless the code moves it (.to(X.device), .to(X),
        .type_as(X), .cuda()). An operation that combines a marked tensor with an unmarked one
        (made from the inputs or the parameters), and an output still marked, are what would fail
        or stay behind on a GPU. Same blind spots as the hidden check: it does not see .cpu(),
        torch.from_numpy or a hard-coded device="cpu" (the CPU is the default device here), and
        it trusts the code not to switch it off; only a run on a real GPU proves GPU execution.
        """
        FACTORIES = _factories()

        def __init__(self):
            super().__init__()
            self.problems = {}  # one per origin: {where the tensor was made: what happened}

        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            inputs = _tensors((args, kwargs))
            result = func(*args, **kwargs)
            if func in self.FACTORIES and not inputs:
                if kwargs.get("device") is None:
                    made = _("{function}(...) without device=").format(function=f"torch.{func.__name__}")
                    where = _where_in_attention()
                    for tensor in _tensors(result):
                        if tensor.dim() > 0:
                            tensor.__dict__[_MARK] = f"{made} ({where})" if where else made
                return result
            marked = [m for m in (_marked(t) for t in inputs if t.dim() > 0) if m]
            if not marked:
                return result
            if func in (torch.Tensor.cuda, torch.Tensor.type_as) or (func is torch.Tensor.to and (
                    "device" in kwargs or any(isinstance(a, (torch.device, str, torch.Tensor))
                                              for a in list(args[1:]) + list(kwargs.values())))):
                for tensor in _tensors(result):  # .to(X.device) on the CPU returns the same object
                    tensor.__dict__.pop(_MARK, None)
                return result
            if any(t.dim() > 0 and not _marked(t) for t in inputs) and marked[0] not in self.problems:
                self.problems[marked[0]] = _("{made} made a tensor on the default device (the CPU), and {operation} then combined "
                            "it with a tensor on the inputs' device; on a GPU this fails with 'Expected all "
                            "tensors to be on the same device'.").format(made=marked[0], operation=_op_name(func))
            for tensor in _tensors(result):
                if tensor.dim() > 0:
                    tensor.__dict__[_MARK] = marked[0]
            return result
else:
    DeviceDiscipline = None


def _op_name(func):
    owner = getattr(func, "__objclass__", None) or getattr(func, "__self__", None)
    name = getattr(func, "__name__", repr(func))
    if isinstance(owner, type) and (issubclass(owner, torch.Tensor) or issubclass(torch.Tensor, owner)):
        return f"Tensor.{name}"
    return f"torch.{name}"


def device_discipline(label, fn, *args):
    """Call fn on copies of args under the check; fail with what it saw, in plain words."""
    args = [_copy(a) for a in args]
    mode, error, out = DeviceDiscipline(), None, None
    with mode:
        try:
            out = fn(*args)
        except Exception as exc:  # reported below, outside the check
            error = exc
    if error is not None:
        call(label, fn, *args)  # the same call without the check: its usual message
        fail(_("attention.{name} raised {kind} only under the device check: {error}").format(
            name=label, kind=type(error).__name__, error=str(error).strip()[:300]), DEVICE_HINT)
    problems = list(mode.problems.values())
    if isinstance(out, torch.Tensor) and _marked(out):
        problems.append(_("the output was built from {made}, so it would stay on the CPU when the inputs are "
                          "on a GPU.").format(made=_marked(out)))
    if problems:
        fail(_("attention.{name} would fail on a GPU:").format(name=label) + "\n  " + "\n  ".join(problems[:3]),
             DEVICE_HINT)


NO_GPU_CHECK = (torch.cuda.is_available() or DeviceDiscipline is None)
NO_GPU_REASON = _("a CUDA GPU is here (test_runs_on_the_gpu runs your code on it instead), or this torch has no "
                  "TorchFunctionMode (torch 2.0 or newer has it)")


@pytest.mark.skipif(NO_GPU_CHECK, reason=NO_GPU_REASON)
@pytest.mark.parametrize("target", ["sequence_mask", "masked_softmax", "AdditiveAttention", "DotProductAttention",
                                    "MultiHeadAttention"])
def test_no_tensor_made_on_the_default_device(target):
    """What the hidden suite grades for the GPU part on a machine without one: every tensor your
    code creates meets the inputs on their device (see DeviceDiscipline for the rule and what it
    cannot see). On a machine with CUDA, test_runs_on_the_gpu runs instead."""
    gen = torch.Generator().manual_seed(21)
    X = randn(2, 3, 4, gen=gen)
    lens_1d, lens_2d, lens_float = torch.tensor([1, 3]), torch.tensor([[1, 0, 4], [2, 3, 9]]), torch.tensor([2.0, 1.0])
    if target == "sequence_mask":
        fn = api("sequence_mask")
        for args in ((X[:, 0], lens_1d), (X, lens_float), (X[:, :, 0], torch.tensor([0, 2]), -1.0)):
            device_discipline("sequence_mask", fn, *args)
        return
    if target == "masked_softmax":
        for lens in (lens_1d, lens_2d, lens_float, None):
            device_discipline("masked_softmax", api("masked_softmax"), X, lens)
        return
    if target == "AdditiveAttention":
        m = build("AdditiveAttention", key_size=2, query_size=4, num_hiddens=5, dropout=0.1)
        load_random("AdditiveAttention(key_size=2, query_size=4, num_hiddens=5)", m,
                    {"W_k.weight": (5, 2), "W_q.weight": (5, 4), "w_v.weight": (1, 5)}, gen)
        keys, values = randn(2, 5, 2, gen=gen), randn(2, 5, 3, gen=gen)
    elif target == "DotProductAttention":
        m = build("DotProductAttention", dropout=0.1)
        keys, values = randn(2, 5, 4, gen=gen), randn(2, 5, 3, gen=gen)
    else:
        m = build("MultiHeadAttention", 4, 4, 3, 8, 2, 0.1)
        load_random("MultiHeadAttention(4, 4, 3, num_hiddens=8, num_heads=2)", m, mha_shapes(4, 4, 3, 8, False), gen)
        keys, values = randn(2, 5, 4, gen=gen), randn(2, 5, 3, gen=gen)
    m.eval()
    for lens in (lens_1d, lens_2d, lens_float, None):
        device_discipline(f"{target}.forward", m, X, keys, values, lens)


# ---------------------------------------------------------------------------
# Only where a GPU is available: the hidden suite runs this kind of check on a GPU grader.
# ---------------------------------------------------------------------------

DEVICE_HINT = _("every tensor your code creates must be on the inputs' device (X.device): look for "
                "torch.arange, torch.tensor, torch.zeros and the like made without a device, and for "
                "'cpu' or .cpu() in your code.")


@pytest.mark.skipif(not torch.cuda.is_available(), reason=_("no CUDA GPU here; the hidden suite checks on one"))
def test_runs_on_the_gpu():
    gen = torch.Generator().manual_seed(18)
    X = randn(2, 3, 4, gen=gen)
    lens = torch.tensor([[1, 0, 4], [2, 3, 9]])
    got = call(_("masked_softmax (on cuda)"), api("masked_softmax"), X.cuda(), lens.cuda(), hint=DEVICE_HINT)
    if not isinstance(got, torch.Tensor) or got.device.type != "cuda":
        fail(_("masked_softmax on CUDA inputs returned {got}; expected a tensor on the GPU.").format(
            got=_describe(got)), DEVICE_HINT)
    check_close(_("masked_softmax on the GPU"), got, ref_masked_softmax(X, lens),
                hint=DEVICE_HINT)
    m = build("MultiHeadAttention", 4, 4, 4, 8, 2, 0).cuda().eval()
    Y = randn(2, 5, 4, gen=gen).cuda()
    out = call(_("MultiHeadAttention.forward (on cuda)"), m, Y[:, :3], Y, Y, torch.tensor([2, 5]).cuda(),
               hint=DEVICE_HINT)
    if not isinstance(out, torch.Tensor) or out.device.type != "cuda":
        fail(_("MultiHeadAttention on CUDA inputs returned {got}; expected a tensor on the GPU.").format(
            got=_describe(out)), DEVICE_HINT)
