"""The class page's charts, drawn as SVG by the kit itself: no plotting library imported.

A histogram of the total scores and bar charts (the mean of each part; how many
submissions have each diagnosed mistake), in the look the page had when matplotlib drew
them: red bars (#c0392b), an axes frame, ticks at round values (whole numbers only for
counts), a title and axis labels, as SVG data URIs (svg.py).

Every chart is bounded: at most MAX_BARS bars, labels cut short, a capped size (svg.py).
Its words are the grader's own (translated titles, part names, catalog ids); its numbers
are floats, anything not finite drawn as 0.

    uri = histogram(totals, N_("Total scores"), N_("total score"), top)
    uri = bar_chart(labels, values, title, xlabel, horizontal=False, maximum=None, counts=False)
"""
from ..i18n import N_, _
from .svg import Drawing, label, number, text_width, tick_text, ticks

MAX_BARS = 80       # bars in one chart
RED = "#c0392b"
TICK_PX, LABEL_PX, TITLE_PX = 10, 12, 13
SUBMISSIONS = N_("submissions")


def _value_axis_y(drawing, scale, left, bottom, top_px, words):
    """Ticks and their numbers up the left side (vertical bars, the histogram)."""
    for value in scale:
        y = bottom - (bottom - top_px) * value / scale[-1]
        drawing.line(left - 4, y, left, y)
        drawing.text(left - 6, y + 3.5, tick_text(value), TICK_PX, anchor="end")
    if words:
        drawing.text(14, (top_px + bottom) / 2, words, LABEL_PX, rotate=-90)


def _value_axis_x(drawing, scale, left, right, bottom, end):
    """Ticks and their numbers along the bottom, `end` at the right edge (the histogram,
    horizontal bars); a tick past the edge is left out."""
    for value in scale:
        x = left + (right - left) * value / end
        if x <= right + 0.5:
            drawing.line(x, bottom, x, bottom + 4)
            drawing.text(x, bottom + 16, tick_text(value), TICK_PX)


def histogram(values, title, xlabel, top):
    """Scores from 0 to `top` in ten bins, counted (a score outside is left out)."""
    values = [number(v) for v in values]
    top = number(top) or max(values + [1.0])
    counts = [0] * 10
    for v in values:
        if 0 <= v <= top:
            counts[min(9, int(v / top * 10))] += 1
    title, xlabel = label(_(title)), label(_(xlabel))
    drawing = Drawing(600, 340, title)
    left, right, top_px, bottom = 56, 584, 28, 290
    scale = ticks(max(counts + [1]), counts=True)
    width = (right - left) / 10
    for i, n in enumerate(counts):
        h = (bottom - top_px) * n / scale[-1]
        drawing.rect(left + i * width, bottom - h, width, h, RED, stroke="white")
    _value_axis_y(drawing, scale, left, bottom, top_px, label(_(SUBMISSIONS)))
    _value_axis_x(drawing, ticks(top), left, right, bottom, top)
    drawing.frame(left, top_px, right, bottom)
    drawing.text((left + right) / 2, 18, title, TITLE_PX)
    drawing.text((left + right) / 2, 328, xlabel, LABEL_PX)
    return drawing.uri()


def bar_chart(labels, values, title, xlabel="", horizontal=False, maximum=None, counts=False):
    """Bars (vertical, or horizontal for long labels), at most MAX_BARS. `maximum`: the
    value axis's end (else the largest value's); `counts`: whole-number ticks only."""
    labels = [label(t) for t in list(labels)[:MAX_BARS]]
    values = [max(0.0, number(v)) for v in list(values)[:MAX_BARS]]
    if not labels:
        raise ValueError("nothing to draw")
    title = label(_(title))
    xlabel = label(_(xlabel)) if xlabel else ""
    end = number(maximum) if maximum else 0.0
    scale = ticks(end or max(values + [1e-9]), counts=counts)
    if end:
        scale = [v for v in scale if v <= end + 1e-9]
        scale = scale if scale[-1] == end else scale + [end]
    if horizontal:
        return _horizontal(labels, values, title, xlabel, scale)
    longest = max(text_width(t, TICK_PX) for t in labels)
    left, top_px, bottom = 60, 28, 300
    width = min(900, max(400, 80 * len(labels) + 150, text_width(title, TITLE_PX) + 100))
    height = bottom + min(180, longest * 0.5 + 14) + 26
    right = width - 16
    drawing = Drawing(width, height, title)
    slot = (right - left) / len(labels)
    for i, (name, v) in enumerate(zip(labels, values)):
        h = (bottom - top_px) * min(v, scale[-1]) / scale[-1]
        drawing.rect(left + slot * (i + 0.1), bottom - h, slot * 0.8, h, RED)
        middle = left + slot * (i + 0.5)
        drawing.line(middle, bottom, middle, bottom + 4)
        drawing.text(middle + 3, bottom + 14, name, TICK_PX, anchor="end", rotate=-30)
    _value_axis_y(drawing, scale, left, bottom, top_px, xlabel)
    drawing.frame(left, top_px, right, bottom)
    drawing.text((left + right) / 2, 18, title, TITLE_PX)
    return drawing.uri()


def _horizontal(labels, values, title, xlabel, scale):
    longest = max(text_width(t, TICK_PX) for t in labels)
    left = min(520, longest + 16)
    width = min(900, max(left + 380, text_width(title, TITLE_PX) + 60))
    top_px, row = 28, min(22.0, 1100 / len(labels))  # 80 bars fit a drawing's height
    bottom = top_px + row * len(labels)
    right = width - 20
    drawing = Drawing(width, bottom + 48, title)
    for i, (name, v) in enumerate(zip(labels, values)):
        y = top_px + row * i
        drawing.rect(left, y + row * 0.1, (right - left) * min(v, scale[-1]) / scale[-1],
                     row * 0.8, RED)
        drawing.line(left - 4, y + row / 2, left, y + row / 2)
        drawing.text(left - 6, y + row / 2 + 3.5, name, TICK_PX, anchor="end")
    _value_axis_x(drawing, scale, left, right, bottom, scale[-1])
    drawing.frame(left, top_px, right, bottom)
    drawing.text((left + right) / 2, 18, title, TITLE_PX)
    if xlabel:
        drawing.text((left + right) / 2, bottom + 36, xlabel, LABEL_PX)
    return drawing.uri()
