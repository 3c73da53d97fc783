"""Pictures for the feedback pages: heatmaps of attention weights (the class page's charts
are drawn without a plotting library: charts.py).

Drawn with matplotlib through its Agg canvas (never pyplot, never a display), in the style
of d2l's `show_heatmaps` ("Keys" across, "Queries" down, a colour bar; but the colour-blind-safe
"cividis" instead of "Reds", and each cell's value written in it up to 8 x 8 cells), and
returned as inline PNG data URIs, so a page needs no file next to it and no network.

matplotlib is imported inside the functions: without it grading still works and the pages
say that the pictures are missing (`PicturesUnavailable`). Every picture is bounded: at
most MAX_CELLS x MAX_CELLS cells, a capped figure size and dpi, and only text the grader
writes itself (labels made safe with textsafety.safe_text and cut short). The values are
floats the trusted side checked (grade/outcome.py), treated here as data: anything not a
finite number is drawn as 0.
"""
import base64
import collections
import functools
import io
import math
import os

from ..i18n import ENGLISH, N_, _, language
from ..textsafety import safe_text

MAX_CELLS = 32          # rows and columns of one heatmap
DPI = 100
MAX_INCHES = (9.0, 7.0)  # width, height of any figure
LABEL_CHARS = 60        # one tick label


# drawn in the picture: in Chinese where a font with Chinese glyphs is installed, else in
# English (DejaVu, matplotlib's own font, has none: the page's caption says it in Chinese)
EXPECTED, YOURS, KEYS, QUERIES = N_("expected"), N_("yours"), N_("Keys"), N_("Queries")
CJK_LANGUAGES = ("zh", "ja", "ko")   # written in characters a Latin font lacks
CJK_FONTS = ("Noto Sans CJK SC", "Noto Sans SC", "Source Han Sans SC", "WenQuanYi Micro Hei",
             "WenQuanYi Zen Hei", "Microsoft YaHei", "SimHei", "PingFang SC", "Heiti SC",
             "AR PL UMing CN", "Droid Sans Fallback")
CMAP = "cividis"  # blue to yellow: ordered in lightness, readable with any colour vision


class PicturesUnavailable(Exception):
    """matplotlib is not installed (or cannot start): the page goes without pictures."""


def _matplotlib():
    try:
        import matplotlib  # heavy, optional: only when a page draws pictures
        from matplotlib.backends.backend_agg import FigureCanvasAgg  # as above
        from matplotlib.figure import Figure  # as above
    except Exception as error:  # ImportError, or a broken installation
        raise PicturesUnavailable(f"matplotlib is not available ({type(error).__name__})") from None
    return matplotlib, Figure, FigureCanvasAgg


CJK_FILES = ("wqy", "notosanscjk", "notoserifcjk", "notosanssc", "sourcehansans", "droidsansfallback",
             "msyh", "simhei", "pingfang", "uming")


@functools.lru_cache(maxsize=1)
def cjk_font():
    """The name of an installed font with Chinese glyphs, or None (looked up once: fonts
    installed after matplotlib made its font cache are added from the system's folders)."""
    from matplotlib import font_manager  # heavy, optional: as in _matplotlib
    names = {entry.name for entry in font_manager.fontManager.ttflist}
    found = next((name for name in CJK_FONTS if name in names), None)
    if found:
        return found
    for path in font_manager.findSystemFonts():
        if any(part in os.path.basename(path).lower().replace("-", "").replace("_", "")
               for part in CJK_FILES):
            try:
                font_manager.fontManager.addfont(path)
            except Exception:  # a font file matplotlib cannot read: not this one
                continue
    names = {entry.name for entry in font_manager.fontManager.ttflist}
    return next((name for name in CJK_FONTS if name in names), None)


def picture_words():
    """(font family or None, translate): the words drawn in a picture go through the
    catalog when the language is not English, and for a language written in CJK
    characters only when a font is there to draw them."""
    if language() == ENGLISH:
        return None, (lambda text: text)
    if language() not in CJK_LANGUAGES:
        return None, _
    font = cjk_font()
    return (font, _) if font else (None, (lambda text: text))


def available():
    try:
        _matplotlib()
        return True
    except PicturesUnavailable:
        return False


def _number(value):
    try:
        value = float(value)
    except (TypeError, ValueError, OverflowError):
        return 0.0
    return value if math.isfinite(value) else 0.0


def matrix(value, limit=MAX_CELLS):
    """A rectangular list of lists of finite floats, at most limit x limit; None if `value`
    is not a non-empty 2-D list."""
    if not isinstance(value, (list, tuple)) or not value:
        return None
    rows = [r for r in value[:limit]]
    if not all(isinstance(r, (list, tuple)) and r for r in rows):
        return None
    width = min(min(len(r) for r in rows), limit)
    return [[_number(v) for v in r[:width]] for r in rows]


def label(text, limit=LABEL_CHARS):
    """A string safe to draw: no control characters, one line, short, and no `$` (which
    matplotlib would read as mathtext)."""
    text = " ".join(safe_text(text, limit * 2).split())
    text = text.replace("$", "S")
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def _png(figure, FigureCanvasAgg):
    canvas = FigureCanvasAgg(figure)
    buffer = io.BytesIO()
    canvas.print_png(buffer)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


_DRAWN = collections.OrderedDict()  # what was drawn -> its data URI, the latest MAX_KEPT
MAX_KEPT = 256


def heatmap_pair(expected, got, titles=(EXPECTED, YOURS)):
    """Expected and returned attention weights side by side, on the same colour scale, as
    a PNG data URI. `got` may be None (nothing comparable came back): then only the
    expected weights are drawn. Raises PicturesUnavailable, or ValueError for data that
    is not a matrix.

    The hidden cases' inputs are fixed, so students who make the same mistake send back
    the same weights: a picture drawn once in a batch (0.2-0.4 s) is reused."""
    key = repr((matrix(expected), matrix(got), tuple(label(t) for t in titles),
                picture_words()[0]))
    if key in _DRAWN:
        _DRAWN.move_to_end(key)
        return _DRAWN[key]
    uri = _draw_heatmap_pair(expected, got, titles)
    _DRAWN[key] = uri
    while len(_DRAWN) > MAX_KEPT:
        _DRAWN.popitem(last=False)
    return uri


def _draw_heatmap_pair(expected, got, titles):
    _, Figure, FigureCanvasAgg = _matplotlib()
    expected = matrix(expected)
    if expected is None:
        raise ValueError("no expected weights to draw")
    got = matrix(got)
    if got is not None and (len(got) != len(expected) or len(got[0]) != len(expected[0])):
        got = None
    font, say = picture_words()
    panels = [(label(say(titles[0])), expected)] + (
        [(label(say(titles[1])), got)] if got is not None else [])
    values = [v for _, m in panels for row in m for v in row]
    low, high = min(0.0, min(values)), max(values)
    if high - low < 1e-9:
        high = low + 1.0
    rows, cols = len(expected), len(expected[0])
    # each panel about 0.35 inch a key and a query, within bounds; room for the colour bar
    panel_w = min(3.6, max(1.6, 0.35 * cols))
    panel_h = min(4.2, max(1.2, 0.35 * rows))
    width = min(MAX_INCHES[0], panel_w * len(panels) + 1.6)
    height = min(MAX_INCHES[1], panel_h + 1.1)
    figure = Figure(figsize=(width, height), dpi=DPI, constrained_layout=True)
    axes = figure.subplots(1, len(panels), sharex=True, sharey=True, squeeze=False)[0]
    image = None
    annotate = rows <= 8 and cols <= 8
    for i, (ax, (title, data)) in enumerate(zip(axes, panels)):
        image = ax.imshow(data, cmap=CMAP, vmin=low, vmax=high, aspect="auto",
                          interpolation="nearest")
        words = {"fontfamily": font} if font else {}
        ax.set_title(title, fontsize=11, **words)
        ax.set_xlabel(say(KEYS), **words)
        if i == 0:
            ax.set_ylabel(say(QUERIES), **words)
        ax.set_xticks(range(cols) if cols <= 16 else range(0, cols, 4))
        ax.set_yticks(range(rows) if rows <= 16 else range(0, rows, 4))
        ax.tick_params(labelsize=8)
        if annotate:
            middle = (low + high) / 2
            for r, row in enumerate(data):
                for c, v in enumerate(row):
                    # cividis is dark at low values: light text there, dark text above
                    ax.text(c, r, f"{v:.2f}", ha="center", va="center",
                            fontsize=8 if cols <= 5 else 7,
                            color="black" if v > middle else "white")
    figure.colorbar(image, ax=list(axes), shrink=0.9)
    return _png(figure, FigureCanvasAgg)
