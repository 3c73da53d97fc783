"""report.html in a real browser (issue 27): headless Chromium lays the page out at 1,280 px,
a laptop's width, and a script injected for the test writes what it measured into the DOM,
which --dump-dom prints. The page itself never scrolls sideways, the class table keeps every
column (at 1,280 px it fits a class of the attention assignment: 7 parts, long names, flags,
an override with its reason), and where a narrower window makes the table scroll inside its
box the first column (the student) stays in view.

Chromium comes from Debian (`apt-get install chromium`, which .ci/run does); without it the
test is skipped with that reason. Nothing is fetched: the page is a file, its own
Content-Security-Policy allows nothing from outside, and Chromium's background networking is
off. (The policy also allows only the page's own script, by its hash, so the test's copy of
the page drops that one line to run its measuring script.)
"""
import json
import re
import shutil
import subprocess

import pytest

from grader import course, overrides
from grader.report import gradebook
from grader.report import html as pages

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed "
                                "(apt-get install chromium; .ci/run installs it)")

PARTS = {"sequence_mask": 11, "masked_softmax": 20, "AdditiveAttention": 15,
         "DotProductAttention": 15, "transpose": 9, "MultiHeadAttention": 20, "GPU": 10}

MEASURE = """<script>
(function () {
  var box = document.querySelector('.wide'), table = box.querySelector('table');
  var first = function () { return table.tHead.rows[0].cells[0].getBoundingClientRect().left; };
  var out = {viewport: document.documentElement.clientWidth,
             page: document.documentElement.scrollWidth,
             box: box.getBoundingClientRect().right, boxWidth: box.clientWidth,
             table: table.getBoundingClientRect().width, overflow: getComputedStyle(box).overflowX,
             heads: [].map.call(table.tHead.rows[0].cells, function (c) {
               return [c.getAttribute('title') || c.textContent.trim(), c.getBoundingClientRect().width]; }),
             font: parseFloat(getComputedStyle(table.tBodies[0].rows[0].cells[1]).fontSize),
             firstBefore: first(), boxLeft: box.getBoundingClientRect().left};
  box.scrollLeft = box.scrollWidth;
  out.scrolled = box.scrollLeft;
  out.firstAfter = first();
  var lastHead = table.tHead.rows[0].cells[table.tHead.rows[0].cells.length - 1];
  out.lastRight = lastHead.getBoundingClientRect().right;
  var pre = document.createElement('pre');
  pre.id = 'measured';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>"""


def _class():
    """Thirty students of the attention assignment: long and Chinese names, diagnoses,
    identity flags, Canvas's LATE (one within an extension), missing work, an override."""
    names = ["Wang Li", "王丽", "Maximilian Alexander Oberhauser-Schmidt", "liuyang"]
    rows = []
    for i in range(30):
        parts = {p: [m - (i % 3) if p == "masked_softmax" else m, m] for p, m in PARTS.items()}
        name = f"{names[i % 4]}_{10000 + i}"
        rows.append({"name": name, "status": ["graded", "graded", "missing work", "not gradable"][i % 4],
                     "total": float(sum(v[0] for v in parts.values())), "max": 100.0,
                     "parts": parts, "reason": "", "source": "", "folder": f"s{i}",
                     "student_id": str(10000 + i), "student_name": name, "layout": "canvas",
                     "late_flag": i % 5 == 0,
                     "diagnoses": ["softmax-neg-inf", "mha-repeat"] if i % 3 else [],
                     "flags": ["the uploaded file's own name claims Canvas user 10000; graded as "
                               "user 10005's"] if i % 7 == 0 else []})
    policy = course.from_data({"due": "2026-12-01T23:59:00+08:00",
                               "late_policy": {"kind": "per_day", "percent": 10},
                               "extensions": {"10005": {"days": 2}}})
    entries = [overrides.entry_for(rows, "10001", "MultiHeadAttention", "15",
                                   "regrade request granted after the meeting on Friday")]
    return gradebook.final_rows(rows, policy, entries)


def _measure(tmp_path, width):
    out = tmp_path / "grades"
    out.mkdir(exist_ok=True)
    pages.write_report(_class(), str(out))
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "<div class=\"wide\"><table class=\"sortable\">" in page
    page = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", page, count=1)
    measured = tmp_path / f"measured-{width}.html"
    measured.write_text(page.replace("</body>", MEASURE + "</body>"), encoding="utf-8")
    done = subprocess.run(
        [CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--disable-extensions", "--disable-background-networking", "--disable-sync",
         f"--user-data-dir={tmp_path / f'profile-{width}'}", f"--window-size={width},900",
         "--dump-dom", measured.as_uri()],
        capture_output=True, text=True, timeout=120)
    found = re.search(r'<pre id="measured">([^<]*)</pre>', done.stdout)
    assert found, done.stderr[-2000:]
    return json.loads(found[1].replace("&quot;", '"').replace("&amp;", "&"))


def test_the_class_table_fits_a_laptop_at_1280_px(tmp_path):
    seen = _measure(tmp_path, 1280)
    # the page does not scroll sideways; the table's box ends inside the window
    assert seen["page"] <= seen["viewport"] and seen["box"] <= seen["viewport"]
    # every column is there, and at 1,280 px the table fits its box: nothing to scroll to
    assert [h for h, _w in seen["heads"]] == (
        ["student", "id", "total"] + list(PARTS) + ["late", "penalty", "diagnoses", "status",
                                                    "overrides", "flags"])
    assert seen["table"] <= seen["boxWidth"] + 0.5 and seen["scrolled"] == 0
    assert seen["lastRight"] <= seen["viewport"]
    # each column at least as wide as a score, and the text no smaller than 12 px
    assert min(w for _h, w in seen["heads"]) >= 35 and seen["font"] >= 12


def test_a_narrower_window_scrolls_inside_the_table_and_keeps_the_student_in_view(tmp_path):
    seen = _measure(tmp_path, 800)
    assert seen["page"] <= seen["viewport"] and seen["box"] <= seen["viewport"]
    assert seen["overflow"] == "auto" and seen["table"] > seen["boxWidth"]
    # scrolled to its right end: the last column is in view, the first one stuck at the left
    assert seen["scrolled"] > 0 and seen["lastRight"] <= seen["viewport"] + 0.5
    assert abs(seen["firstAfter"] - seen["boxLeft"]) <= 1
    assert abs(seen["firstBefore"] - seen["boxLeft"]) <= 1
