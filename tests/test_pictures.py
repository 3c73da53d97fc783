"""feedback.html and report.html: self-contained pages with heatmaps and charts.

One real batch (chen: -inf masking, erik: a syntax error) is graded once for the module
and read by several tests; the rest use made-up results. The pages are checked with an
HTML parser (well-formed, nothing external, a viewport, every image a data: URI that
decodes as a PNG or as an SVG that runs and fetches nothing: tests/test_charts.py) and, where Debian's chromium is installed, in the real browser at a
phone's width with name resolution switched off.
"""
import base64
import hashlib
import html
import html.parser
import io
import json
import os
import re
import shutil
import subprocess

import pytest

from grader import grade, i18n
from grader.grade import outcome
from grader.report import html as pages
from grader.report import pictures

from conftest import KIT
from test_charts import SVG, inert_svg, svg_of

EXAMPLES = os.path.join(KIT, "examples")
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
        "track", "wbr"}
FORBIDDEN = {"link", "iframe", "object", "embed", "base", "form", "video", "audio",
             "source", "frame", "frameset", "svg"}


class Page(html.parser.HTMLParser):
    """Parses a page, records what the tests look at, and fails on a tag left open or
    closed out of order."""

    def __init__(self, text):
        super().__init__(convert_charrefs=True)
        self.stack, self.errors, self.tags, self.images, self.urls = [], [], [], [], []
        self.meta, self.text, self.scripts = [], [], []
        self.feed(text)
        self.close()
        if self.stack:
            self.errors.append(f"left open: {self.stack}")

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.append(tag)
        if tag == "img":
            self.images.append(attrs)
        if tag == "meta":
            self.meta.append(attrs)
        for key in ("src", "href", "srcset", "poster", "data", "action", "background"):
            if attrs.get(key) is not None:
                self.urls.append((tag, key, attrs[key]))
        if "style" in attrs and "url(" in attrs["style"]:
            self.urls.append((tag, "style", attrs["style"]))
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        before = len(self.stack)
        self.handle_starttag(tag, attrs)
        if len(self.stack) > before:
            self.stack.pop()

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1:] or 'nothing'}")
            return
        self.stack.pop()

    def handle_data(self, data):
        if self.stack[-1:] == ["script"]:
            self.scripts.append(data)
        elif self.stack[-1:] not in (["style"], ["title"]):
            self.text.append(data)


def check_page(text, limit=pages.PAGE_BYTES):
    """The checks every page passes; returns the parsed Page."""
    assert text.startswith("<!DOCTYPE html>")
    assert len(text.encode("utf-8")) <= limit
    page = Page(text)
    assert not page.errors, page.errors
    assert not FORBIDDEN & set(page.tags), FORBIDDEN & set(page.tags)
    assert any(m.get("name") == "viewport" and "width=device-width" in m.get("content", "")
               for m in page.meta)
    assert any(m.get("charset") == "utf-8" for m in page.meta)
    csp = [m["content"] for m in page.meta if m.get("http-equiv") == "Content-Security-Policy"]
    assert csp and "default-src 'none'" in csp[0]
    # a script only inline, and only one the CSP names by its hash: nothing else runs
    allowed = re.findall(r"'(sha256-[A-Za-z0-9+/=]+)'", csp[0])
    assert page.tags.count("script") == len(page.scripts)
    for script in page.scripts:
        digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
        assert f"sha256-{digest}" in allowed
    assert "unsafe-inline" not in "".join(re.findall(r"script-src[^;]*", csp[0]))
    for tag, key, url in page.urls:  # nothing external: data: images and relative links only
        if tag == "img" and key == "src":  # every picture an SVG the kit drew (svg.py)
            assert url.startswith("data:image/svg+xml;base64,"), url[:80]
            inert_svg(base64.b64decode(url.split(",", 1)[1]))
        else:
            assert tag == "a" and key == "href", (tag, key, url[:80])
            assert not re.match(r"^([a-z][a-z0-9+.-]*:|//)", url, re.I), url
    assert not re.search(r"(?i)(src|href|srcset)\s*=\s*[\"']?\s*(https?:)?//|url\(|@import", text)
    for image in page.images:
        assert image.get("alt")
    assert "max-width: 100%" in text
    return page


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    out = tmp_path_factory.mktemp("pictures") / "grades"
    paths = [os.path.join(EXAMPLES, n) for n in ("chen.py", "erik")]
    results = grade.grade_batch(paths, str(out), jobs=2, stream=io.StringIO(), force=True)
    return out, {r.name: r for r in results}


def read(path):
    with open(path, encoding="utf-8") as handle:
        return handle.read()


@pytest.mark.slow
def test_feedback_page_shows_expected_and_returned_weights(batch):
    out, results = batch
    text = read(out / "chen" / "feedback.html")
    page = check_page(text)
    chen = results["chen"]
    # one picture for each module whose first failing case has weights to draw
    # the declaration's heatmaps (attention: each its own part)
    modules = [m for m in ("masked_softmax", "AdditiveAttention", "DotProductAttention",
                           "MultiHeadAttention")
               if any(t.part == m and t.status == "failed" and t.heatmap for t in chen.tests)]
    assert len(modules) >= 1 and len(page.images) == len(modules)
    body = " ".join(page.text)
    assert f"{chen.score:g} / {chen.max_score:g} points" in body
    for module in modules:
        assert module in body
    assert "Left: the weights the reference solution stores" in body
    # the per-part summary: each part's score, and why points were lost
    for part, (score, top) in chen.by_part().items():
        assert re.search(f"{part}\\s*{score:g} / {top:g}", body)  # the table
        assert (f"{part}: {score:g} / {top:g}" in body) == (score < top)  # what to look at
    print(f"chen feedback.html: {len(text.encode())} bytes, {len(page.images)} pictures")


@pytest.mark.slow
def test_feedback_page_of_a_file_that_does_not_parse(batch):
    out, _ = batch
    page = check_page(read(out / "erik" / "feedback.html"))
    assert not page.images
    body = " ".join(page.text)
    assert "line 59" in body
    # said once at the top (and once in the list of failing cases), not again in each part
    assert "None of its cases could run" in body and body.count("not valid Python") <= 2


@pytest.mark.slow
def test_summary_and_score_show_no_hidden_values(batch, tmp_path):
    _, results = batch
    chen = results["chen"]
    grade.write_result(chen, str(tmp_path), feedback="summary")
    summary = read(tmp_path / chen.folder / "feedback.html")
    score = pages.feedback_html(chen, "score")
    for text in (summary, score):
        page = check_page(text)
        assert not page.images
        body = " ".join(page.text)
        for test in chen.tests:
            if test.heatmap:  # the case's inputs, and the message that shows the values
                assert html.unescape(test.heatmap["title"])[:60] not in body
            if test.status == "failed":
                assert test.message.splitlines()[0][:60] not in body
    assert "What to look at" in summary and "cases in this part failed" in summary
    assert "What to look at" not in score and "cases in this part" not in score
    assert f"{chen.score:g} / {chen.max_score:g} points" in score


@pytest.mark.slow
def test_an_observation_quotes_a_hidden_case_so_only_full_shows_it(batch, tmp_path):
    """A part's observation (no catalog mistake) names a hidden case's inputs: the summary
    page leaves it out, as results.json and feedback.txt do; a named mistake stays."""
    import copy
    _, results = batch
    chen = copy.deepcopy(results["chen"])
    part = next(p for p, (s, t) in chen.by_part().items() if s < t)
    chen.diagnoses = [{"part": part, "mistake": None, "experiment": "",
                       "text": "observed HIDDEN-INPUTS-7731 in case x"}]
    assert "HIDDEN-INPUTS-7731" in pages.feedback_html(chen, "full")
    assert "HIDDEN-INPUTS-7731" not in pages.feedback_html(chen, "summary")
    chen.diagnoses[0]["mistake"] = "softmax-neg-inf"
    assert "HIDDEN-INPUTS-7731" in pages.feedback_html(chen, "summary")


@pytest.mark.slow
def test_report_page_for_the_class(batch):
    out, results = batch
    text = read(out / "report.html")
    page = check_page(text, 4 * pages.PAGE_BYTES)
    body = " ".join(page.text)
    assert len(page.images) >= 2  # score distribution and per-part means (no diagnoses here)
    assert "2 submissions in the statistics" in body
    # pass rate per case, from each folder's results.json
    passed = sum(any(t.name == "masked_softmax: length 0 gives a uniform row"
                     and t.status == "passed" for t in r.tests) for r in results.values())
    assert re.search(r"masked_softmax: length 0 gives a uniform row\s*" + f"{passed} / 2", body)
    links = {url for tag, _, url in page.urls if tag == "a"}
    assert {"chen/feedback.html", "erik/feedback.html"} <= links
    print(f"report.html: {len(text.encode())} bytes")


def _outcome(name, part, status, message="", heatmap=None):
    return outcome.TestOutcome(name, part, 5.0, status, message, heatmap=heatmap)


HOSTILE = '<script>alert(1)</script><img src="http://example.com/x.png"> & "quotes" \x1b[2J'


def _made_up(name=HOSTILE):
    weights = {"title": "w " + HOSTILE, "expected": [[0.5, 0.5], [1.0, 0.0]],
               "got": [[float("nan"), 2.0], [-1.0, 0.0]]}
    tests = [_outcome("DotProductAttention: a case", "DotProductAttention", "failed",
                      HOSTILE + "\nsecond line", weights),
             _outcome("DotProductAttention: " + HOSTILE, "DotProductAttention", "passed"),
             _outcome("masked_softmax: a case", "masked_softmax", "failed", "wrong values")]
    result = outcome.SubmissionResult(name, "x.py", tests)
    result.diagnoses = [{"part": "DotProductAttention", "mistake": "no-scale",
                         "text": "The scores are not divided by sqrt(d). " + HOSTILE,
                         "experiment": "Compare with " + HOSTILE}]
    return result


def test_strings_from_a_submission_are_escaped():
    text = pages.feedback_html(_made_up())
    page = check_page(text)
    assert len(page.images) == 1
    assert "<script>" not in text and 'src="http' not in text and "\x1b" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert "The scores are not divided by sqrt(d)." in " ".join(page.text)


def test_pictures_follow_the_assignments_heatmaps():
    import dataclasses
    from grader import assignment
    attention = assignment.load("attention")
    # DotProductAttention's failing case has weights: drawn when the declaration says so
    assert len(check_page(pages.feedback_html(_made_up(), assignment=attention)).images) == 1
    none = dataclasses.replace(attention, heatmaps=("masked_softmax",))
    assert check_page(pages.feedback_html(_made_up(), assignment=none)).images == []
    # a heatmap of given code (no part grades it) draws nothing and breaks nothing
    given = dataclasses.replace(attention, given=("helper",),
                                heatmaps=("helper", "DotProductAttention"))
    page = check_page(pages.feedback_html(_made_up(), assignment=given))
    assert len(page.images) == 1 and "Feedback:" in " ".join(page.text)


def test_pictures_that_cannot_be_drawn_leave_a_note(monkeypatch, tmp_path):
    def broken(*args, **kwargs):
        raise RuntimeError("odd data")
    monkeypatch.setattr(pictures, "heatmap_pair", broken)
    page = check_page(pages.feedback_html(_made_up("dana")))
    assert not page.images and "could not be drawn" in " ".join(page.text)

    def worse(*args, **kwargs):
        raise RuntimeError("a bug of ours")
    monkeypatch.setattr(pages, "feedback_html", worse)
    pages.write_feedback_page(_made_up("dana"), str(tmp_path))  # never raises
    check_page(read(tmp_path / "feedback.html"))


def test_pictures_go_first_when_the_page_is_too_large():
    result = _made_up("dana")
    full = pages.feedback_html(result)
    small = pages.feedback_html(result, limit=len(full.encode()) - 1)
    page = check_page(small)
    assert not page.images and "left out to keep this page small" in small


def test_report_leaves_out_grader_errors_and_reads_odd_folders(tmp_path):
    (tmp_path / "ann").mkdir()
    (tmp_path / "ann" / "results.json").write_text(json.dumps({"tests": [
        {"name": "case A", "status": "passed"}, {"name": "case B", "status": "failed"},
        "odd", {"status": "passed"}]}))
    (tmp_path / "ben").mkdir()
    (tmp_path / "ben" / "results.json").write_text("{not json")
    rows = [
        {"name": "ann", "status": "graded", "total": 80, "max": 100, "folder": "ann",
         "parts": {"p1": [40, 50], "p2": [40, 50]}, "diagnoses": ["no-scale", "repeat"]},
        {"name": "ben", "status": "graded", "total": 40, "max": 100, "folder": "ben",
         "parts": {"p1": [20, 50], "p2": "odd"}, "diagnoses": ["repeat", None, 3]},
        {"name": "cy" + HOSTILE, "status": "graded", "total": None, "max": "x",
         "folder": "../../etc", "parts": None, "diagnoses": "odd"},
        {"name": "dee", "status": "grader error", "total": None, "max": 100, "folder": "dee",
         "parts": {"p1": [0, 50]}, "reason": "the worker died " + HOSTILE},
        "not a row",
    ]
    text = pages.report_html(rows, str(tmp_path))
    page = check_page(text, 4 * pages.PAGE_BYTES)
    body = " ".join(page.text)
    assert "3 submissions in the statistics; 1 left out" in body
    assert "Grader errors (not in the statistics)" in body and "dee" in body
    assert re.search(r"case A\s*1 / 1", body) and re.search(r"case B\s*0 / 1", body)
    assert re.search(r"repeat\s*2", body) and re.search(r"no-scale\s*1", body)
    assert re.search(r"p1\s*30\.00\s*50", body)
    assert page.scripts == [pages.SORT_SCRIPT]  # the table's sorting, nothing else
    assert len(page.images) == 3  # histogram, part means, diagnoses


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

PROBE = """<!DOCTYPE html><html><body>
<iframe id="f" width="390" height="844" srcdoc="{page}"></iframe>
<script>
document.getElementById('f').addEventListener('load', function () {{
  var d = this.contentDocument, images = [].slice.call(d.images);
  document.body.setAttribute('data-probe', JSON.stringify({{
    scrollWidth: d.documentElement.scrollWidth, clientWidth: d.documentElement.clientWidth,
    images: images.length,
    decoded: images.filter(function (i) {{ return i.complete && i.naturalWidth > 0; }}).length,
    resources: this.contentWindow.performance.getEntriesByType('resource').map(
      function (e) {{ return e.name; }})}}));
}});
</script></body></html>"""


def _in_chromium(path, tmp_path):
    """Load the page at a phone's width (390 px, in an iframe: headless windows are at least
    500 px wide) with every host name unresolvable; what the page did, from its DOM."""
    probe = tmp_path / f"probe-{path.parent.name}-{path.name}"
    probe.write_text(PROBE.format(page=html.escape(read(path), quote=True)), encoding="utf-8")
    command = [CHROMIUM, "--headless", "--disable-gpu", "--no-sandbox", "--no-first-run",
               "--host-resolver-rules=MAP * ~NOTFOUND", "--window-size=600,900",
               f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=5000",
               "--dump-dom", probe.as_uri()]
    done = subprocess.run(command, capture_output=True, text=True, timeout=90)
    found = re.search(r'data-probe="([^"]*)"', done.stdout)
    assert found, done.stderr[-2000:]
    shot = tmp_path / f"{path.parent.name}-{path.stem}.png"
    subprocess.run(command[:-2] + [f"--screenshot={shot}", "--window-size=390,844",
                                   path.as_uri()], capture_output=True, timeout=90)
    return json.loads(html.unescape(found.group(1))), shot


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")
def test_pages_in_a_real_browser_at_a_phones_width(batch, tmp_path):
    out, _ = batch
    for path in (out / "chen" / "feedback.html", out / "report.html"):
        seen, shot = _in_chromium(path, tmp_path)
        expected = len(Page(read(path)).images)
        assert seen["images"] == seen["decoded"] == expected, seen
        assert seen["resources"] == [], seen          # nothing fetched
        assert seen["scrollWidth"] <= seen["clientWidth"] <= 390, seen  # no sideways scrolling
        assert shot.exists() and shot.stat().st_size > 10_000


# ---------------------------------------------------------------- the class view

def _class_rows():
    return [
        {"name": "ann", "student_id": "10001", "status": "graded", "total": 80, "max": 100,
         "folder": "ann", "parts": {"p1": [40, 50], "p2": [40, 50]},
         "diagnoses": ["mha-repeat", "not-in-the-catalog"], "late": False},
        {"name": "Ben", "student_id": "10002", "status": "graded", "total": 9, "max": 100,
         "folder": "Ben", "parts": {"p1": [4, 50], "p2": [5, 50]}, "diagnoses": [],
         "late": True, "days_late": 2, "penalty": 1},
        {"name": "cy", "student_id": "10003", "status": "graded", "total": 100, "max": 100,
         "folder": "cy", "parts": {"p1": [50, 50], "p2": [50, 50]}, "diagnoses": []},
    ]


def test_the_class_page_is_titled_with_the_assignments_title():
    import dataclasses
    from grader import assignment, i18n
    attention = assignment.load("attention")
    text = pages.report_html(_class_rows(), charts=False)
    assert ("<h1>Attention: masking, scoring functions and multi-head attention (d2l 10.1-10.5): "
            "the class</h1>") in text
    other = dataclasses.replace(attention, name="transformer", module="transformer",
                                title="Transformer <encoder> block")
    text = pages.report_html(_class_rows(), charts=False, assignment=other)
    assert "<h1>Transformer &lt;encoder&gt; block: the class</h1>" in text
    assert "<title>Transformer &lt;encoder&gt; block: the class</title>" in text
    transformer = assignment.load("transformer")
    before = i18n.language()
    try:
        i18n.set_language("zh")
        untranslated = pages.report_html(_class_rows(), charts=False, assignment=other)
        text = pages.report_html(_class_rows(), charts=False, assignment=transformer)
    finally:
        i18n.set_language(before)
    # the title's Chinese is the assignment's catalog's; a title it lacks stays English
    assert "<h1>Transformer &lt;encoder&gt; block：全班</h1>" in untranslated
    assert ("<h1>Transformer 编码器块：位置编码、基于位置的前馈网络、加法和规范化（d2l "
            "10.6–10.7）：全班</h1>") in text


def test_report_opens_with_the_class_table_and_explains_each_diagnosis():
    from grader import assignment
    from grader.catalog import Catalog
    MISTAKES = Catalog.of(assignment.load("attention")).mistakes
    text = pages.report_html(_class_rows(), charts=False)
    check_page(text, 4 * pages.PAGE_BYTES)
    # the class first, then the charts and the per-case table
    assert text.index("<h2>Submissions</h2>") < text.index("<h2>Score distribution</h2>") \
        < text.index("<h2>Pass rate per case</h2>")
    table = text[text.index("<h2>Submissions</h2>"):text.index("<h2>Score distribution</h2>")]
    heads = [re.sub(r"<[^>]+>", "", h) for h in
             re.findall(r"<th[^>]*><button type=\"button\">(.*?)</button></th>", table)]
    assert heads == ["student", "id", "total", "p1 /50", "p2 /50", "late", "penalty",
                     "diagnoses", "status", "overrides", "flags"]
    assert ('<tr><td><a href="ann/feedback.html">ann</a></td><td>10001</td>'
            '<td class="num" data-key="80">80</td><td class="num lost" data-key="40">40</td>'
            '<td class="num lost" data-key="40">40</td><td class="wrap">on time</td>'
            '<td class="num"></td>') in table
    assert '<td class="num" data-key="50">50</td>' in table  # cy lost nothing: not bold
    assert '<td class="wrap">late, 2 day(s)</td><td class="num">-1</td>' in table
    # a catalog id links to its entry on this page, which says what the mistake is
    assert '<a href="#mistake-mha-repeat"><code>mha-repeat</code></a>' in table
    assert "<code>not-in-the-catalog</code>" in table and "#mistake-not-in" not in text
    assert ("From the catalog (tests_hidden/attention/mistakes.py; docs/mistakes.md has every "
            "mistake with its scores)") in text
    said = {m.id: m.en for m in MISTAKES}["mha-repeat"]
    assert re.search(r'<dt id="mistake-mha-repeat"><code>mha-repeat</code> \(MultiHeadAttention'
                     r'\)</dt><dd>' + re.escape(html.escape(said)) + "</dd>", text)
    # rows by name, whatever the order given
    assert [m for m in re.findall(r'feedback.html">(\w+)</a>', table)] == ["ann", "Ben", "cy"]


def test_the_class_page_explains_the_diagnoses_from_its_own_assignments_catalog():
    """A transformer class's report links and explains the transformer's mistakes, and an
    attention id means nothing there (the catalog is the assignment's, not the default's)."""
    from grader import assignment
    rows = _class_rows()
    rows[0]["diagnoses"] = ["pos-sin-cos-swapped", "mha-repeat"]
    text = pages.report_html(rows, charts=False, assignment=assignment.load("transformer"))
    assert '<a href="#mistake-pos-sin-cos-swapped"><code>pos-sin-cos-swapped</code></a>' in text
    assert re.search(r'<dt id="mistake-pos-sin-cos-swapped"><code>pos-sin-cos-swapped</code> '
                     r'\(PositionalEncoding\)</dt><dd>', text)
    assert "<code>mha-repeat</code>" in text and "#mistake-mha-repeat" not in text
    assert ("From the catalog (tests_hidden/transformer/mistakes.py; docs/mistakes-transformer.md "
            "has every mistake with its scores)") in text


def test_heatmaps_use_a_colour_blind_safe_map_and_write_each_value():
    pictures._DRAWN.clear()
    root = svg_of(pictures.heatmap_pair([[0.5, 0.5, 0.0], [1.0, 0.0, 0.0]],
                                        [[0.2, 0.8, 0.0], [1.0, 0.0, 0.0]]))
    texts = [t.text for t in root.iter(SVG + "text")]
    for numbers in (["0.50", "0.50", "0.00", "1.00", "0.00", "0.00"],
                    ["0.20", "0.80", "0.00", "1.00", "0.00", "0.00"]):
        at = texts.index(numbers[0])
        assert texts[at:at + 6] == numbers, texts
    assert {"expected", "yours", "Keys", "Queries"} <= set(texts)
    # the cells, row by row: one scale from 0 to 1 over both panels, cividis from its dark
    # blue (0) to its yellow (1); 0.5 its middle (matplotlib's cividis at 0.5: #7d7c78); 0.2
    # and 0.8 between two of its 33 points (6.4 and 25.6 of 32), worked out by hand
    cells = [r.get("fill") for r in root.iter(SVG + "rect")
             if r.get("shape-rendering") == "crispEdges"][:12]
    assert cells == ["#7d7c78", "#7d7c78", "#00224e", "#fee838", "#00224e", "#00224e",
                     "#36456d", "#c9b865", "#00224e", "#fee838", "#00224e", "#00224e"]
    # the value written dark on a light cell and light on a dark one
    colours = {t.text: t.get("fill") for t in root.iter(SVG + "text") if t.text in ("1.00", "0.20")}
    assert colours == {"1.00": "black", "0.20": "white"}


def test_a_chinese_page_has_its_heatmap_words_in_chinese():
    before = i18n.language()
    i18n.set_language("zh")
    try:
        pictures._DRAWN.clear()
        root = svg_of(pictures.heatmap_pair([[1.0, 0.0]], [[0.5, 0.5]]))
    finally:
        i18n.set_language(before)
        pictures._DRAWN.clear()
    texts = {t.text for t in root.iter(SVG + "text")}
    # grader/locale/zh_CN/LC_MESSAGES/grader.po
    assert {"期望", "你的", "键", "查询"} <= texts, texts


SORT_PROBE = """<!DOCTYPE html><html><body>
<iframe id="f" width="390" height="844" srcdoc="{page}"></iframe>
<script>
document.getElementById('f').addEventListener('load', function () {{
  var d = this.contentDocument, seen = [];
  function names() {{
    return [].map.call(d.querySelectorAll('table.sortable tbody tr'),
                       function (r) {{ return r.cells[0].textContent; }});
  }}
  var buttons = d.querySelectorAll('table.sortable thead button');
  seen.push(names());
  buttons[2].click(); seen.push(names());   // total, up
  buttons[2].click(); seen.push(names());   // total, down
  buttons[5].click(); seen.push(names());   // late: by its text, numbers as numbers
  document.body.setAttribute('data-probe', JSON.stringify(seen));
}});
</script></body></html>"""


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")
def test_the_class_table_sorts_in_a_real_browser(tmp_path):
    rows = _class_rows() + [{"name": "dee", "student_id": "10004", "status": "graded",
                             "total": 50, "max": 100, "folder": "dee",
                             "parts": {"p1": [25, 50], "p2": [25, 50]}, "late": True,
                             "days_late": 10}]
    probe = tmp_path / "sort.html"
    probe.write_text(SORT_PROBE.format(page=html.escape(
        pages.report_html(rows, charts=False), quote=True)), encoding="utf-8")
    command = [CHROMIUM, "--headless", "--disable-gpu", "--no-sandbox", "--no-first-run",
               "--host-resolver-rules=MAP * ~NOTFOUND", f"--user-data-dir={tmp_path / 'p'}",
               "--virtual-time-budget=5000", "--dump-dom", probe.as_uri()]
    done = subprocess.run(command, capture_output=True, text=True, timeout=90)
    found = re.search(r'data-probe="([^"]*)"', done.stdout)
    assert found, done.stderr[-2000:]
    assert json.loads(html.unescape(found.group(1))) == [
        ["ann", "Ben", "cy", "dee"],     # by name, as written
        ["Ben", "dee", "ann", "cy"],     # total 9, 50, 80, 100
        ["cy", "ann", "dee", "Ben"],
        ["Ben", "dee", "ann", "cy"]]     # late, 2 day(s) < late, 10 day(s) < on time; cy: blank last
