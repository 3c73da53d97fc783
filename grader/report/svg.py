"""A small SVG drawing, for the pages' pictures (charts.py, pictures.py): no plotting library.

A picture is drawn as rectangles, lines and text, and comes back as a
`data:image/svg+xml;base64,` URI for an `<img>`: a picture an `<img>` shows runs no script
and fetches nothing, and the pages' Content-Security-Policy (`img-src data:`) allows it.
The browser writes the words, in whatever font it has for them (a Chinese page's pictures
are in Chinese). Every word drawn is made safe (no control characters, one line, cut
short: `label`) and escaped for XML; every number is a finite float.

    drawing = Drawing(width, height, title)
    drawing.rect(x, y, w, h, fill="#c0392b")
    drawing.text(x, y, "words", size, anchor="middle", rotate=None, fill="black")
    uri = drawing.uri()
"""
import base64
import html
import math

from ..textsafety import finite_number, safe_text

FONT = "DejaVu Sans, Verdana, Arial, 'Noto Sans CJK SC', 'Microsoft YaHei', sans-serif"
LABEL_CHARS = 60  # one label
MAX_PIXELS = 1200  # a side of any drawing


def number(value):
    """`value` as a finite float (anything else: 0.0)."""
    found = finite_number(value)
    return 0.0 if found is None else found


def label(text, limit=LABEL_CHARS):
    """One line of at most `limit` characters with no control characters (escaped where
    it is drawn)."""
    text = " ".join(safe_text(text, limit * 2).split())
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def text_width(text, size):
    """About how wide `text` is at `size` px: wide characters (CJK) count about double."""
    return sum(size * (1.0 if ord(ch) > 0x2E7F else 0.6) for ch in text)


def ticks(top, counts=False, most=6, low=0.0):
    """Round tick values from `low` (0 or below) to at least `top`: steps of 1, 2, 2.5 or 5
    times a power of ten, at most about `most` + 1 of them; `counts`: whole numbers only."""
    span = top - low if top - low > 0 else 1.0
    if not math.isfinite(span):  # ends near the float's limits: just the two ends
        return [low, top]
    raw = span / most
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw - 1e-12)
    if counts:
        step = max(1, math.ceil(step))
    first = math.floor(low / step + 1e-9)
    last = math.ceil((low + span) / step - 1e-9)
    return [round(i * step, 10) for i in range(first, last + 1)]


def tick_text(value):
    return f"{value:g}"


class Drawing:
    """An SVG of `width` x `height` px on white, titled `title` (for screen readers)."""

    def __init__(self, width, height, title):
        self.width = int(min(MAX_PIXELS, max(1, width)))
        self.height = int(min(MAX_PIXELS, max(1, height)))
        self.parts = [f"<title>{html.escape(label(title))}</title>",
                      f'<rect width="{self.width}" height="{self.height}" fill="white"/>']

    def rect(self, x, y, w, h, fill, stroke=None, crisp=False):
        """crisp: no anti-aliased edge (cells and colour steps that touch show no seam)."""
        edge = f' stroke="{stroke}" stroke-width="1"' if stroke else ""
        edge += ' shape-rendering="crispEdges"' if crisp else ""
        self.parts.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{max(w, 0):.1f}" '
                          f'height="{max(h, 0):.1f}" fill="{fill}"{edge}/>')

    def line(self, x1, y1, x2, y2):
        self.parts.append(f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" '
                          'stroke="black" stroke-width="0.8"/>')

    def text(self, x, y, words, size, anchor="middle", rotate=None, fill=None):
        turn = f' transform="rotate({rotate} {x:.1f} {y:.1f})"' if rotate is not None else ""
        colour = f' fill="{fill}"' if fill else ""
        self.parts.append(f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" '
                          f'text-anchor="{anchor}"{colour}{turn}>{html.escape(label(words))}</text>')

    def frame(self, left, top, right, bottom):
        self.parts.append(f'<rect x="{left:.1f}" y="{top:.1f}" width="{right - left:.1f}" '
                          f'height="{bottom - top:.1f}" fill="none" stroke="black" '
                          'stroke-width="0.8"/>')

    def uri(self):
        svg = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{self.width}" '
               f'height="{self.height}" viewBox="0 0 {self.width} {self.height}" '
               f'font-family="{html.escape(FONT)}">' + "".join(self.parts) + "</svg>")
        return "data:image/svg+xml;base64," + base64.b64encode(svg.encode("utf-8")).decode("ascii")
