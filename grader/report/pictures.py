"""Heatmaps of attention weights for the feedback pages, drawn as SVG by the kit (svg.py).

In the style of d2l's `show_heatmaps`: "Keys" across, "Queries" down, a colour bar, the
expected and the returned weights side by side on one colour scale; but the
colour-blind-safe "cividis" (blue to yellow, ordered in lightness) instead of "Reds", and
each cell's value written in it up to 8 x 8 cells. No plotting library is imported (the
pictures were matplotlib's until its import, 0.5 s of CPU, was most of a batch's pictures).

Every picture is bounded: at most MAX_CELLS x MAX_CELLS cells, a capped size, and only
words the grader writes itself (svg.label). The values are floats the trusted side checked
(grade/outcome.py), treated here as data: anything not a finite number is drawn as 0.

    uri = heatmap_pair(expected, got)   # got None: the expected weights alone
"""
import collections

from ..i18n import N_, _
from .svg import Drawing, label, number, tick_text, ticks

MAX_CELLS = 32  # rows and columns of one heatmap
EXPECTED, YOURS, KEYS, QUERIES = N_("expected"), N_("yours"), N_("Keys"), N_("Queries")
CMAP = "cividis"
# matplotlib's cividis at 33 evenly spaced points (0, 1/32, ..., 1), between which colours
# are interpolated: within 5 of 255 of its 256 colours in each channel (tests/test_charts.py)
CIVIDIS = ("00224e 00285b 002e6a 053371 1a386f 273e6e 32436d 3b496c 434e6c 4b546c 535a6d "
           "5a5f6e 61656f 686a71 6f7073 767676 7d7c78 848279 8c8878 938e78 9b9476 a39a74 "
           "aba072 b4a76f bcae6c c4b468 cdbb63 d5c25e dec958 e7d150 f0d846 f9e03a fee838").split()
TICK_PX, LABEL_PX, TITLE_PX = 10, 12, 14


def colour(fraction):
    """The cividis colour at `fraction` (0: dark blue, 1: yellow) as #rrggbb."""
    fraction = min(1.0, max(0.0, number(fraction)))
    position = fraction * (len(CIVIDIS) - 1)
    i = min(int(position), len(CIVIDIS) - 2)
    t = position - i
    a, b = (tuple(int(c[k:k + 2], 16) for k in (0, 2, 4)) for c in CIVIDIS[i:i + 2])
    return "#" + "".join(f"{round(x + (y - x) * t):02x}" for x, y in zip(a, b))


def matrix(value, limit=MAX_CELLS):
    """A rectangular list of lists of finite floats, at most limit x limit; None if `value`
    is not a non-empty 2-D list."""
    if not isinstance(value, (list, tuple)) or not value:
        return None
    rows = [r for r in value[:limit]]
    if not all(isinstance(r, (list, tuple)) and r for r in rows):
        return None
    width = min(min(len(r) for r in rows), limit)
    return [[number(v) for v in r[:width]] for r in rows]


_DRAWN = collections.OrderedDict()  # what was drawn -> its data URI, the latest MAX_KEPT
MAX_KEPT = 256


def heatmap_pair(expected, got, titles=(EXPECTED, YOURS)):
    """Expected and returned attention weights side by side, on the same colour scale, as
    an SVG data URI. `got` may be None (nothing comparable came back): then only the
    expected weights are drawn. Raises ValueError for data that is not a matrix.

    The hidden cases' inputs are fixed, so students who make the same mistake send back
    the same weights: a picture drawn once in a batch is reused."""
    key = repr((matrix(expected), matrix(got), tuple(label(t) for t in titles), _(KEYS)))
    if key in _DRAWN:
        _DRAWN.move_to_end(key)
        return _DRAWN[key]
    uri = _draw_heatmap_pair(expected, got, titles)
    _DRAWN[key] = uri
    while len(_DRAWN) > MAX_KEPT:
        _DRAWN.popitem(last=False)
    return uri


def _draw_heatmap_pair(expected, got, titles):
    expected = matrix(expected)
    if expected is None:
        raise ValueError("no expected weights to draw")
    got = matrix(got)
    if got is not None and (len(got) != len(expected) or len(got[0]) != len(expected[0])):
        got = None
    panels = [(_(titles[0]), expected)] + ([(_(titles[1]), got)] if got is not None else [])
    values = [v for _title, m in panels for row in m for v in row]
    low, high = min(0.0, min(values)), max(values)
    if high - low < 1e-9:
        high = low + 1.0
    rows, cols = len(expected), len(expected[0])
    # each cell about 35 px, a panel between 160 x 120 and 360 x 420 px
    cell_w = min(360, max(160, 35 * cols)) / cols
    cell_h = min(420, max(120, 35 * rows)) / rows
    left, top, gap, bar = 56, 30, 28, 16
    panel_w, panel_h = cell_w * cols, cell_h * rows
    bar_x = left + len(panels) * (panel_w + gap)
    drawing = Drawing(bar_x + bar + 50, top + panel_h + 48, " / ".join(t for t, _m in panels))
    annotate = rows <= 8 and cols <= 8
    middle = (low + high) / 2
    for n, (title, data) in enumerate(panels):
        x0 = left + n * (panel_w + gap)
        for r, row in enumerate(data):
            for c, v in enumerate(row):
                x, y = x0 + c * cell_w, top + r * cell_h
                drawing.rect(x, y, cell_w, cell_h, colour((v - low) / (high - low)), crisp=True)
                if annotate:  # cividis is dark at low values: light text there, dark above
                    drawing.text(x + cell_w / 2, y + cell_h / 2 + 3.5, f"{v:.2f}",
                                 11 if cols <= 5 else 9,
                                 fill="black" if v > middle else "white")
        drawing.frame(x0, top, x0 + panel_w, top + panel_h)
        drawing.text(x0 + panel_w / 2, top - 10, title, TITLE_PX)
        every = 1 if cols <= 16 else 4
        for c in range(0, cols, every):
            x = x0 + (c + 0.5) * cell_w
            drawing.line(x, top + panel_h, x, top + panel_h + 4)
            drawing.text(x, top + panel_h + 15, str(c), TICK_PX)
        drawing.text(x0 + panel_w / 2, top + panel_h + 32, _(KEYS), LABEL_PX)
        if n == 0:
            every = 1 if rows <= 16 else 4
            for r in range(0, rows, every):
                y = top + (r + 0.5) * cell_h
                drawing.line(x0 - 4, y, x0, y)
                drawing.text(x0 - 6, y + 3.5, str(r), TICK_PX, anchor="end")
            drawing.text(16, top + panel_h / 2, _(QUERIES), LABEL_PX, rotate=-90)
    _colour_bar(drawing, bar_x, top, bar, panel_h, low, high)
    return drawing.uri()


def _colour_bar(drawing, x, top, width, height, low, high, steps=64):
    """The colours from `low` (bottom) to `high` (top), with round values beside them."""
    for i in range(steps):
        drawing.rect(x, top + height * (steps - 1 - i) / steps, width, height / steps,
                     colour((i + 0.5) / steps), crisp=True)
    drawing.frame(x, top, x + width, top + height)
    for value in ticks(high, low=low):
        if low - 1e-9 <= value <= high + 1e-9:
            y = top + height * (high - value) / (high - low)
            drawing.line(x + width, y, x + width + 4, y)
            drawing.text(x + width + 6, y + 3.5, tick_text(value), TICK_PX, anchor="start")
