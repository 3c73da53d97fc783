"""The class page's charts (grader/report/charts.py): SVG drawn by the kit, no plotting library.

Each chart is read back as XML: its bars' lengths against counts and ratios worked out
here from the data, its ticks, its words (escaped, bounded, translated), and that it is
inert (no script, no link, nothing it could fetch). The page around it, in a real browser,
is tests/test_pictures.py's.
"""
import base64
import json
import subprocess
import sys
import xml.etree.ElementTree as ElementTree

import pytest

from grader import i18n
from grader.report import charts, pictures, svg

from conftest import KIT

SVG = "{http://www.w3.org/2000/svg}"
# what could run, fetch or pull in anything in an SVG
ACTIVE = {"script", "foreignObject", "image", "use", "a", "style", "iframe", "animate", "set",
          "feImage", "link"}


def inert_svg(data):
    """The parsed <svg> of `data` (bytes), after checking it can neither run nor fetch
    anything: no active element, no link attribute, no url(), no event handler."""
    root = ElementTree.fromstring(data)
    assert root.tag == SVG + "svg", root.tag
    for element in root.iter():
        assert element.tag.startswith(SVG), element.tag
        assert element.tag[len(SVG):] not in ACTIVE, element.tag
        for name, value in element.attrib.items():
            assert "href" not in name and not name.startswith("on"), name
            assert "url(" not in value and "javascript:" not in value.lower(), value
    assert b"<!DOCTYPE" not in data and b"<!ENTITY" not in data
    return root


def svg_of(uri):
    assert uri.startswith("data:image/svg+xml;base64,"), uri[:40]
    return inert_svg(base64.b64decode(uri.split(",", 1)[1]))


def _bars(root):
    """[(x, y, width, height)] of the red bars, left to right then top to bottom."""
    found = [tuple(float(r.get(k)) for k in ("x", "y", "width", "height"))
             for r in root.iter(SVG + "rect") if r.get("fill") == charts.RED]
    horizontal = all(b[0] == found[0][0] for b in found)  # they all start at the axis
    return sorted(found, key=lambda b: b[1] if horizontal else b[0])


def _texts(root):
    return [t.text or "" for t in root.iter(SVG + "text")]


def _numbers(root):
    out = []
    for text in _texts(root):
        try:
            out.append(float(text))
        except ValueError:
            pass
    return out


@pytest.fixture
def english():
    before = i18n.language()
    i18n.set_language("en")
    yield
    i18n.set_language(before)


def test_a_histogram_counts_each_score_in_its_tenth(english):
    # 5 -> [0, 10), 10 and 16 -> [10, 20), 20 twice -> [20, 30), 95 and 100 -> [90, 100],
    # -5 and 130 left out (16 and 5 tell a bin by flooring from one by rounding)
    root = svg_of(charts.histogram([5, 10, 16, 20, 20, 95, 100, -5, 130], "Total scores",
                                 "total score", 100))
    bars = sorted(_bars(root))
    assert len(bars) == 10
    tallest = max(b[3] for b in bars)
    counts = [round(2 * b[3] / tallest) for b in bars]  # the tallest bar is a count of 2
    assert counts == [1, 2, 2, 0, 0, 0, 0, 0, 0, 2]
    assert len({round(b[2], 3) for b in bars}) == 1  # ten equal bins
    assert {"Total scores", "total score", "submissions"} <= set(_texts(root))
    assert [n for n in _numbers(root) if n > 2] == [20, 40, 60, 80, 100]  # the score axis


def test_bars_are_as_long_as_their_values_and_stop_at_the_maximum(english):
    root = svg_of(charts.bar_chart(["p1", "p2", "p3", "p4"], [50, 25, float("nan"), 180],
                                 "Mean score by part", "percent", maximum=100))
    bars = _bars(root)
    heights = [b[3] for b in sorted(bars)]
    full = heights[3]  # 180 drawn as the axis's end, 100
    assert heights[0] == pytest.approx(full / 2, abs=0.2)
    assert heights[1] == pytest.approx(full / 4, abs=0.2)
    assert heights[2] == 0.0  # not a number: drawn as 0
    assert _numbers(root) == [0, 20, 40, 60, 80, 100]


def test_count_charts_have_whole_number_ticks(english):
    for chart in (charts.bar_chart(["a", "b", "c"], [1, 2, 1], "t", "submissions",
                                   horizontal=True, counts=True),
                  charts.bar_chart(["a", "b"], [3, 1], "t", "submissions", counts=True),
                  charts.histogram([10, 20, 20, 95], "t", "total", 100)):
        numbers = _numbers(svg_of(chart))
        assert len(numbers) >= 2 and all(float(v).is_integer() for v in numbers), numbers
    horizontal = svg_of(charts.bar_chart(["a", "b", "c"], [1, 2, 1], "t", "n",
                                       horizontal=True, counts=True))
    assert _numbers(horizontal) == [0, 1, 2]
    widths = [b[2] for b in _bars(horizontal)]  # top to bottom: a, b, c
    assert widths[1] == pytest.approx(2 * widths[0]) and widths[2] == pytest.approx(widths[0])


def test_ticks_are_round_and_reach_the_top():
    assert svg.ticks(100) == [0, 20, 40, 60, 80, 100]
    assert svg.ticks(3, counts=True) == [0, 1, 2, 3]
    assert svg.ticks(37.5) == [0, 10, 20, 30, 40]
    assert svg.ticks(0.3) == [0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3]
    assert svg.ticks(0) == [0, 0.2, 0.4, 0.6, 0.8, 1.0]
    assert svg.ticks(1, low=-0.5) == [-0.5, -0.25, 0, 0.25, 0.5, 0.75, 1]  # steps of 1.5 / 6
    assert svg.ticks(1e308, low=-1e308) == [-1e308, 1e308]  # a span past the float's range


def test_a_heatmap_of_extreme_values_is_still_drawn():
    # weights a worker sent back are finite floats, but any: one scale from the lowest to
    # the highest, whatever they are
    for expected, got in (([[1e308, -1e308]], [[0.0, 1.0]]), ([[float("nan"), 1.0]], None),
                          ([[5.0]], [[5.0]]), ([[-3.0, -2.0]], [[-1.0, -4.0]])):
        root = svg_of(pictures.heatmap_pair(expected, got))
        assert root.find(SVG + "title").text.startswith("expected")


def test_words_are_escaped_bounded_and_at_most_eighty_bars(english):
    hostile = "<script>alert(1)</script>\x07\u202e" + "x" * 500
    root = svg_of(charts.bar_chart([hostile] + [f"m{i}" for i in range(199)], [1] * 200,
                                 hostile, hostile, horizontal=True, counts=True))
    assert len(_bars(root)) == charts.MAX_BARS == 80
    words = _texts(root)
    assert "m78" in words and "m79" not in words
    for text in words:
        assert len(text) <= svg.LABEL_CHARS and "\x07" not in text
    assert any(text.startswith("<script>alert(1)</script>") for text in words)  # as text
    with pytest.raises(ValueError):
        charts.bar_chart([], [], "t")


def test_a_chinese_page_has_its_charts_in_chinese():
    before = i18n.language()
    i18n.set_language("zh")
    try:
        root = svg_of(charts.histogram([50], "Total scores", "total score", 100))
    finally:
        i18n.set_language(before)
    # grader/locale/zh_CN/LC_MESSAGES/grader.po
    assert {"总分", "提交数"} <= set(_texts(root))
    assert root.find(SVG + "title").text == "总分"


def test_the_class_page_is_drawn_without_a_plotting_library(tmp_path):
    rows = [{"name": n, "status": "graded", "total": t, "max": 100, "folder": n,
             "parts": {"p1": [t / 2, 50], "p2": [t / 2, 50]}, "diagnoses": ["no-scale"]}
            for n, t in (("ann", 80), ("ben", 40))]
    script = ("import json, sys\nfrom grader.report import html\n"
              f"page = html.report_html(json.loads({json.dumps(json.dumps(rows))}), {str(tmp_path)!r})\n"
              "print(json.dumps([page.count('data:image/svg+xml;base64,'), "
              "'matplotlib' in sys.modules]))\n")
    done = subprocess.run([sys.executable, "-c", script], cwd=KIT, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.splitlines()[-1]) == [3, False]


def test_cividis_is_matplotlibs_at_its_points_and_between_them():
    # matplotlib's cividis(0), (0.5), (1): its own table's ends and middle
    assert [pictures.colour(x) for x in (0, 0.5, 1)] == ["#00224e", "#7d7c78", "#fee838"]
    # a third of the way from point 1 (#00285b) to point 2 (#002e6a): 0x28 + 6 / 3 = 0x2a,
    # 0x5b + 15 / 3 = 0x60 (worked out by hand)
    assert pictures.colour((1 + 1 / 3) / 32) == "#002a60"
    assert pictures.colour(-3) == "#00224e" and pictures.colour(float("nan")) == "#00224e"
    assert pictures.colour(7) == "#fee838"
