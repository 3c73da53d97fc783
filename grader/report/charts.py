"""The class page's charts, drawn as SVG by the kit itself: no plotting library imported.

A histogram of the total scores and bar charts (the mean of each part; how many
submissions have each diagnosed mistake), in the look the page had when matplotlib drew
them: red bars (#c0392b), an axes frame, ticks at round values (whole numbers only for
counts), a title and axis labels. They come back as `data:image/svg+xml` URIs for an
`<img>`: a picture an `<img>` shows runs no script and fetches nothing, and the page's
Content-Security-Policy (`img-src data:`) allows it. The browser writes the words, in
whatever font it has for them, so a Chinese page's charts are in Chinese.

Every chart is bounded: at most MAX_BARS bars, labels cut to LABEL_CHARS, a capped size.
Its words are the grader's own (translated titles, part names, catalog ids), made safe
(no control characters) and escaped for XML; its numbers are floats, anything not finite
drawn as 0. The heatmaps of attention weights stay with matplotlib (pictures.py).

    uri = histogram(totals, N_("Total scores"), N_("total score"), top)
    uri = bar_chart(labels, values, title, xlabel, horizontal=False, maximum=None, counts=False)
"""
import base64
import html
import math

from ..i18n import N_, _
from ..textsafety import safe_text

MAX_BARS = 80       # bars in one chart
LABEL_CHARS = 60    # one label
RED = "#c0392b"
FONT = "DejaVu Sans, Verdana, Arial, 'Noto Sans CJK SC', 'Microsoft YaHei', sans-serif"
TICK_PX, LABEL_PX, TITLE_PX = 10, 12, 13
SUBMISSIONS = N_("submissions")


def _number(value):
    try:
        value = float(value)
    except (TypeError, ValueError, OverflowError):
        return 0.0
    return value if math.isfinite(value) else 0.0


def label(text, limit=LABEL_CHARS):
    """One line of at most `limit` characters with no control characters (escaped where
    it is written)."""
    text = " ".join(safe_text(text, limit * 2).split())
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def _width(text, size):
    """About how wide `text` is at `size` px: wide characters (CJK) count double."""
    return sum(size * (1.0 if ord(ch) > 0x2E7F else 0.6) for ch in text)


def ticks(top, counts=False, most=6):
    """Round tick values from 0 to at least `top`: steps of 1, 2, 2.5 or 5 times a power of
    ten, at most `most` + 1 ticks; `counts`: whole numbers only."""
    top = top if top > 0 else 1.0
    raw = top / most
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw - 1e-12)
    if counts:
        step = max(1, math.ceil(step))
    count = math.ceil(top / step - 1e-9)
    return [round(i * step, 10) for i in range(count + 1)]


def _tick_text(value):
    return f"{value:g}"


class _Svg:
    def __init__(self, width, height, title):
        self.width, self.height = int(width), int(height)
        self.parts = [f"<title>{html.escape(title)}</title>",
                      f'<rect width="{self.width}" height="{self.height}" fill="white"/>']

    def rect(self, x, y, w, h, fill=RED, stroke=None):
        edge = f' stroke="{stroke}" stroke-width="1"' if stroke else ""
        self.parts.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{max(w, 0):.1f}" '
                          f'height="{max(h, 0):.1f}" fill="{fill}"{edge}/>')

    def line(self, x1, y1, x2, y2):
        self.parts.append(f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" '
                          'stroke="black" stroke-width="0.8"/>')

    def text(self, x, y, words, size, anchor="middle", rotate=None):
        turn = f' transform="rotate({rotate} {x:.1f} {y:.1f})"' if rotate is not None else ""
        self.parts.append(f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" '
                          f'text-anchor="{anchor}"{turn}>{html.escape(words)}</text>')

    def frame(self, left, top, right, bottom):
        self.parts.append(f'<rect x="{left:.1f}" y="{top:.1f}" width="{right - left:.1f}" '
                          f'height="{bottom - top:.1f}" fill="none" stroke="black" '
                          'stroke-width="0.8"/>')

    def uri(self):
        svg = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{self.width}" '
               f'height="{self.height}" viewBox="0 0 {self.width} {self.height}" '
               f'font-family="{html.escape(FONT)}">' + "".join(self.parts) + "</svg>")
        return "data:image/svg+xml;base64," + base64.b64encode(svg.encode("utf-8")).decode("ascii")


def _value_axis_y(svg, scale, left, right, bottom, top_px, words):
    """Ticks and their numbers up the left side (vertical bars, the histogram)."""
    for value in scale:
        y = bottom - (bottom - top_px) * value / scale[-1]
        svg.line(left - 4, y, left, y)
        svg.text(left - 6, y + 3.5, _tick_text(value), TICK_PX, anchor="end")
    if words:
        svg.text(14, (top_px + bottom) / 2, words, LABEL_PX, rotate=-90)


def histogram(values, title, xlabel, top):
    """Scores from 0 to `top` in ten bins, counted; a PNG-free data URI."""
    values = [_number(v) for v in values]
    top = _number(top) or max(values + [1.0])
    counts = [0] * 10
    for v in values:
        counts[min(9, max(0, int(v / top * 10)))] += 1 if 0 <= v <= top else 0
    title, xlabel = label(_(title)), label(_(xlabel))
    svg = _Svg(600, 340, title)
    left, right, top_px, bottom = 56, 584, 28, 290
    scale = ticks(max(counts + [1]), counts=True)
    width = (right - left) / 10
    for i, n in enumerate(counts):
        h = (bottom - top_px) * n / scale[-1]
        svg.rect(left + i * width, bottom - h, width, h, stroke="white")
    _value_axis_y(svg, scale, left, right, bottom, top_px, label(_(SUBMISSIONS)))
    for value in ticks(top):
        x = left + (right - left) * value / top
        if x <= right + 0.5:
            svg.line(x, bottom, x, bottom + 4)
            svg.text(x, bottom + 16, _tick_text(value), TICK_PX)
    svg.frame(left, top_px, right, bottom)
    svg.text((left + right) / 2, 18, title, TITLE_PX)
    svg.text((left + right) / 2, 328, xlabel, LABEL_PX)
    return svg.uri()


def bar_chart(labels, values, title, xlabel="", horizontal=False, maximum=None, counts=False):
    """Bars (vertical, or horizontal for long labels), at most MAX_BARS; a data URI.
    `maximum`: the value axis's end (else the largest value's); `counts`: whole-number
    ticks only."""
    labels = [label(t) for t in list(labels)[:MAX_BARS]]
    values = [max(0.0, _number(v)) for v in list(values)[:MAX_BARS]]
    if not labels:
        raise ValueError("nothing to draw")
    title = label(_(title))
    xlabel = label(_(xlabel)) if xlabel else ""
    end = _number(maximum) if maximum else 0.0
    scale = ticks(end or max(values + [1e-9]), counts=counts)
    if end:
        scale = [v for v in scale if v <= end + 1e-9]
        scale = scale if scale[-1] == end else scale + [end]
    if horizontal:
        return _horizontal(labels, values, title, xlabel, scale)
    longest = max(_width(t, TICK_PX) for t in labels)
    left, top_px = 60, 28
    width = int(min(900, max(400, 80 * len(labels) + 150, _width(title, TITLE_PX) + 100)))
    bottom = 300
    height = int(bottom + min(180, longest * 0.5 + 14) + 26)
    right = width - 16
    svg = _Svg(width, height, title)
    slot = (right - left) / len(labels)
    for i, (name, v) in enumerate(zip(labels, values)):
        h = (bottom - top_px) * min(v, scale[-1]) / scale[-1]
        x = left + slot * (i + 0.1)
        svg.rect(x, bottom - h, slot * 0.8, h)
        middle = left + slot * (i + 0.5)
        svg.line(middle, bottom, middle, bottom + 4)
        svg.text(middle + 3, bottom + 14, name, TICK_PX, anchor="end", rotate=-30)
    _value_axis_y(svg, scale, left, right, bottom, top_px, xlabel)
    svg.frame(left, top_px, right, bottom)
    svg.text((left + right) / 2, 18, title, TITLE_PX)
    return svg.uri()


def _horizontal(labels, values, title, xlabel, scale):
    longest = max(_width(t, TICK_PX) for t in labels)
    left = int(min(520, longest + 16))
    width = int(min(900, max(left + 380, _width(title, TITLE_PX) + 60)))
    top_px, row = 28, 22
    bottom = top_px + row * len(labels)
    height = bottom + 48
    right = width - 20
    svg = _Svg(width, height, title)
    for i, (name, v) in enumerate(zip(labels, values)):
        y = top_px + row * i
        svg.rect(left, y + row * 0.1, (right - left) * min(v, scale[-1]) / scale[-1], row * 0.8)
        svg.line(left - 4, y + row / 2, left, y + row / 2)
        svg.text(left - 6, y + row / 2 + 3.5, name, TICK_PX, anchor="end")
    for value in scale:
        x = left + (right - left) * value / scale[-1]
        svg.line(x, bottom, x, bottom + 4)
        svg.text(x, bottom + 16, _tick_text(value), TICK_PX)
    svg.frame(left, top_px, right, bottom)
    svg.text((left + right) / 2, 18, title, TITLE_PX)
    if xlabel:
        svg.text((left + right) / 2, bottom + 36, xlabel, LABEL_PX)
    return svg.uri()
