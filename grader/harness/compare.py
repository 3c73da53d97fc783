"""Compare a submission's tensor with the reference's and explain any difference.

`torch.testing.assert_close`'s rule decides (the torch.isclose it runs, see _close); when
it says no, the message is rebuilt for a student: the shapes, how many entries differ and
by how much, the first differing position with both values, and hints: symptoms read off the tensors (NaN, rows that do not sum to 1,
masked positions that got weight) and known misconceptions whose result the submission's
output reproduces exactly.
"""
import torch

from ..i18n import _
from .failures import StudentFailure

# (rtol, atol) per dtype: loose enough for any correct way of computing the result
# (loops, einsum, torch.where, another order of operations), tight enough for any mistake.
TOLERANCES = {
    torch.float64: (1e-7, 1e-9),
    torch.float32: (1e-4, 1e-5),
    torch.bfloat16: (4e-2, 2e-2),
    torch.float16: (5e-3, 1e-3),
}


def tolerance(dtype, scale=1.0):
    rtol, atol = TOLERANCES.get(dtype, (0.0, 0.0))
    return rtol * scale, atol * scale


def same(a, b, scale=1.0, equal_nan=False):
    """True when two tensors agree within the tolerance of b's dtype."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    rtol, atol = tolerance(b.dtype, scale)
    return _close(a, b, rtol, atol, equal_nan)


def fmt_index(index):
    return "[" + ", ".join(str(int(i)) for i in index) + "]"


def fmt_value(value):
    if isinstance(value, float):
        if value != value:
            return "nan"
        return f"{value:.6g}"
    return str(value)


def show(tensor, limit=24):
    """The whole tensor, 4 significant digits, when it is small enough to read; else None."""
    if tensor.numel() > limit:
        return None

    def fmt(values):
        if isinstance(values, list):
            return "[" + ", ".join(fmt(v) for v in values) + "]"
        return f"{values:.4g}" if isinstance(values, float) else str(values)

    values = tensor.to(torch.float64) if tensor.is_floating_point() else tensor
    text = fmt(values.tolist())
    return text if len(text) < 400 else None


def expect_close(got, expected, what, context=(), hints=(), suspects=(), scale=1.0,
                 weights=False):
    """Fail with a teaching message unless `got` matches `expected`.

    what:     'the output of f(...)', used as the subject of the message
    context:  what the case is about, in words
    hints:    extra lines to add whenever the values differ
    suspects: (description, tensor) pairs: results of known mistakes on the same inputs
    weights:  the tensor holds attention weights (rows sum to 1, masked entries are 0)
    """
    lines = []
    if got.shape != expected.shape:
        lines.append(_("{what}: expected shape {expected}, got {got}.").format(
            what=what, expected=tuple(expected.shape), got=tuple(got.shape)))
        lines += _shape_hints(got, expected)
        _raise(lines, context, hints)
    if got.dtype != expected.dtype:
        lines.append(_("{what}: expected dtype {expected}, got {got}.").format(
            what=what, expected=_dtype(expected), got=_dtype(got)))
        lines.append(_("  The result should keep the dtype of the inputs: avoid .float(), "
                       "torch.tensor(...) of Python numbers, or dtype= arguments that force "
                       "float32."))
        _raise(lines, context, hints)
    rtol, atol = tolerance(expected.dtype, scale)
    if _close(got, expected, rtol, atol):
        return
    lines.append(_("{what}: wrong values.").format(what=what))
    lines += _difference_lines(got, expected, rtol, atol)
    lines += _symptoms(got, expected, weights)
    for description, suspect in suspects:
        if suspect is not None and same(got, suspect, scale, equal_nan=True):
            lines.append(_("  Your result is exactly what you get if {description}.").format(
                description=description))
            break
    _raise(lines, context, hints, heatmap=heatmap(got, expected, what) if weights else None)


def _close(got, expected, rtol, atol, equal_nan=False):
    """torch.testing.assert_close's verdict for two dense tensors of one shape and dtype:
    the same torch.isclose it runs then, without its 2-4 ms of checks and messages (this
    runs for every tensor of every probe). Anything else goes to assert_close itself."""
    dense = got.layout == expected.layout == torch.strided and not (got.is_quantized or expected.is_quantized)
    if dense and got.device == expected.device:
        try:
            return bool(torch.isclose(got, expected, rtol=rtol, atol=atol, equal_nan=equal_nan).all())
        except RuntimeError:
            pass
    try:
        torch.testing.assert_close(got, expected, rtol=rtol, atol=atol, equal_nan=equal_nan)
        return True
    except AssertionError:
        return False


def _dtype(t):
    return str(t.dtype).replace("torch.", "")


def _raise(lines, context, hints, heatmap=None):
    lines = list(lines) + [f"  {h}" for h in hints if h]
    if context:
        lines.append(_("  About this case: {about}").format(about="; ".join(context)))
    failure = StudentFailure("\n".join(lines))
    failure.heatmap = heatmap
    raise failure


def heatmap(got, expected, what, limit=32):
    """Picture data for weights that differ: the first (Q, K) slab where they do, as
    {"title", "expected", "got"} with 2-D lists of at most limit x limit floats."""
    if expected.dim() < 2 or got.shape != expected.shape or expected.numel() == 0:
        return None
    e = expected.detach().to(torch.float64).reshape(-1, *expected.shape[-2:])
    g = got.detach().to(torch.float64).reshape(-1, *expected.shape[-2:])
    differs = [i for i in range(e.shape[0]) if not torch.equal(e[i], g[i])]
    index = differs[0] if differs else 0
    def rows(t):
        t = torch.nan_to_num(t[index, :limit, :limit], nan=0.0, posinf=1.0, neginf=0.0)
        return [[round(float(v), 6) for v in row] for row in t.tolist()]
    # counted from 1 in both languages, with the index the student would type
    at, rest = [], index  # the slab's index in the leading axes
    for size in reversed(expected.shape[:-2]):
        at.insert(0, rest % size)
        rest //= size
    where = _(" (slab {number} of {count}: [{index}, :, :])").format(
        number=index + 1, count=e.shape[0], index=", ".join(map(str, at))) \
        if e.shape[0] > 1 else ""
    return {"title": f"{what}{where}"[:300], "expected": rows(e), "got": rows(g)}


def _shape_hints(got, expected):
    hints = []
    if got.numel() == expected.numel() and got.numel() > 0:
        if sorted(got.shape) == sorted(expected.shape):
            hints.append(_("  Same sizes in another order: two axes look swapped "
                           "(check permute/transpose and the unsqueeze positions)."))
        else:
            hints.append(_("  Same number of entries, arranged differently: check the reshape "
                           "(a reshape cannot move the head axis; that needs permute)."))
    elif got.dim() < expected.dim():
        hints.append(_("  Your result has fewer axes: a squeeze() without an axis removes every "
                       "axis of size 1 (batch, queries or keys of size 1 too); use squeeze(-1)."))
    elif got.dim() > expected.dim():
        hints.append(_("  Your result has an extra axis: an unsqueeze, or a squeeze that is "
                       "missing."))
    return hints


def _difference_lines(got, expected, rtol, atol):
    g = got.detach().to(torch.float64)
    e = expected.detach().to(torch.float64)
    bad = ~torch.isclose(g, e, rtol=rtol, atol=atol, equal_nan=False)
    count = int(bad.sum())
    lines = []
    finite = torch.isfinite(g) & torch.isfinite(e)
    diff = (g - e).abs()[finite & bad]
    largest = _(", largest difference {value}").format(value=fmt_value(float(diff.max()))) \
        if diff.numel() else ""
    lines.append(_("  {count} of {total} entries differ{largest}.").format(
        count=count, total=got.numel(), largest=largest))
    first = bad.nonzero()
    if first.numel():
        index = tuple(first[0].tolist())
        lines.append(_("  First difference at {index}: expected {expected}, got {got}.").format(
            index=fmt_index(index), expected=fmt_value(e[index].item()),
            got=fmt_value(g[index].item())))
    shown_e, shown_g = show(expected), show(got)
    if shown_e and shown_g:
        lines.append(_("  Expected: {values}").format(values=shown_e))
        lines.append(_("  Got:      {values}").format(values=shown_g))
    return lines


def _symptoms(got, expected, weights):
    g = got.detach().to(torch.float64)
    e = expected.detach().to(torch.float64)
    hints = []
    nan = torch.isnan(g) & ~torch.isnan(e)
    if nan.any():
        where = fmt_index(nan.nonzero()[0].tolist())
        hints.append(_("  Your result has NaN (first at {index}) where a number was expected. A "
                       "row whose keys are all masked gives NaN when masked scores are -inf "
                       "(exp(-inf - -inf)); the book replaces them by -1e6, which makes the row "
                       "uniform instead.").format(index=where))
    if weights and g.dim() >= 1 and g.shape[-1] > 0 and not nan.any():
        hints += _row_sum_hints(g, e, got.dtype)
        leaked = (e == 0) & (g.abs() > 1e-6)
        if leaked.any():
            where = fmt_index(leaked.nonzero()[0].tolist())
            hints.append(_("  Masked keys (at or past the valid length) must get weight 0; "
                           "position {index} got {value}.").format(
                               index=where,
                               value=fmt_value(g[tuple(leaked.nonzero()[0].tolist())].item())))
    return hints


def row_sum_tolerance(dtype):
    """How far from 1 a row of correctly computed weights of `dtype` may sum: the dtype's
    relative tolerance (bfloat16 keeps 8 bits: its rows sum to 1 only within ~0.4%),
    never below 1e-3."""
    return max(1e-3, tolerance(dtype)[0])


def _row_sum_hints(g, e, dtype):
    """The row that should sum to 1 and is furthest from it; the advice to mask the scores
    before the softmax only with that mistake's evidence: in a row that does not sum to 1
    the masked keys got 0 and the others are the expected weights times one factor (the
    probabilities were zeroed after a softmax over all keys), and every other such row is
    that too or all 0 (a row whose keys are all masked)."""
    tol = row_sum_tolerance(dtype)
    sums = g.sum(-1)
    off = ((sums - 1).abs() > tol) & ((e.sum(-1) - 1).abs() <= tol)
    if not off.any():
        return []
    flat = int(torch.where(off, (sums - 1).abs(), torch.zeros_like(sums)).flatten().argmax())
    worst = []  # the flat index as the row's index, last axis first
    for size in reversed(sums.shape):
        flat, at = divmod(flat, size)
        worst.insert(0, at)
    worst = tuple(worst)
    hints = [_("  Each row of attention weights should sum to 1; row {index} sums to "
               "{value}.").format(index=fmt_index(worst), value=fmt_value(float(sums[worst])))]
    rtol, atol = tolerance(dtype)
    rows = [tuple(int(i) for i in r) for r in off.nonzero()]
    shown = [_zeroed_after_softmax(g[row], e[row], rtol, atol) for row in rows]
    # a row with every key masked comes out all 0 that way: consistent, but no evidence alone;
    # one factor shared by every row is a scaling of the whole result, not masking
    factors = {round(float(sums[row]), 3) for s, row in zip(shown, rows) if s}
    if (any(shown) and not (sum(shown) > 1 and len(factors) == 1)
            and all(s or bool((g[row].abs() <= atol).all()) for s, row in zip(shown, rows))):
        hints.append(_("  In the rows that do not sum to 1 the masked keys got 0 and the other "
                       "weights are the expected ones times one factor: the probabilities were "
                       "masked after a softmax over all keys. Mask the scores before the "
                       "softmax."))
    return hints


def _zeroed_after_softmax(g, e, rtol, atol):
    """A row `g` that is the row `e` of masked weights, computed with the masked keys set to
    0 after the softmax: 0 where e is 0, e's proportions elsewhere."""
    masked = e == 0
    if not masked.any() or masked.all() or not bool((g[masked].abs() <= atol).all()):
        return False
    kept = g[~masked]
    total = float(kept.sum())
    return 0 < total < 1 and bool(torch.isclose(kept / total, e[~masked], rtol=rtol, atol=atol).all())


def expect_true(condition, message, context=()):
    if not condition:
        _raise([message], context, ())
