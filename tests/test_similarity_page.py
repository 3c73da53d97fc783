"""similarity.html in a real browser at a laptop's 1,280 px (issue 27, item 5): no column
lost, no code cut at the right; its columns named for what they hold; its counts in the
right number in English and Chinese; an unflagged pair at or above the threshold says why.

The browser is Debian's chromium, headless (.ci/run installs it; without it the layout
test is skipped with that reason). The page runs no script (its CSP forbids it), so the
test measures a copy whose CSP lets one inline script write the layout's figures into the
DOM, which `chromium --dump-dom` prints. Nothing is fetched: the page links nothing.
"""
import html
import json
import os
import re
import shutil
import subprocess
import tempfile

import pytest

from conftest import KIT

import copydetect  # noqa: F401  (the test extra has it)

from grader import i18n, intake  # noqa: E402
from grader.report import gradebook  # noqa: E402
from grader.similarity import code, command, page  # noqa: E402

SET = os.path.join(KIT, "tests", "similarity")
WIDTH = 1280
CHROMIUM = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome")
                 if shutil.which(n)), None)
HEADS = ["Student A", "Student B", "Score", "Shared characters", "Lines of A shared",
         "Lines of B shared", "Flagged?"]
MEASURE = """<script>
const view = document.documentElement.clientWidth;
const boxes = (selector) => [...document.querySelectorAll(selector)].map((e) => {
  const r = e.getBoundingClientRect();
  return {left: r.left, right: r.right, scroll: e.scrollWidth, client: e.clientWidth,
          text: e.textContent.slice(0, 40), position: getComputedStyle(e).position};
});
document.body.setAttribute("data-measured", JSON.stringify({
  view, page: document.documentElement.scrollWidth,
  tables: boxes("table"), heads: boxes("table.pairs th"), firsts: boxes("table.pairs td:first-child"),
  scrolls: boxes(".scroll"), pres: boxes("pre")}));
</script>"""


def _row(out, folder, student_id, lang=None):
    os.makedirs(out / folder, exist_ok=True)
    gradebook.save_record({"name": folder, "folder": folder, "status": "graded", "total": 100.0,
                           "max": 100.0, "parts": {}, "student_id": student_id,
                           "student_name": "", "reason": "", "source": folder}, str(out))
    if lang:   # the language the student was graded in: the page follows the class
        (out / folder / "results.json").write_text(json.dumps({"extra_data": {"lang": lang}}))



def _class(out, tmp_path):
    """tests/similarity/ graded as a class with long student ids, and one copy of wei.py
    with a very long line (what a formatter with a wide setting leaves)."""
    for index, entry in enumerate(sorted(os.listdir(SET))):
        name = os.path.splitext(entry)[0]
        staged = intake.stage(os.path.join(SET, entry), str(tmp_path / "staged" / name), name)
        _row(out, name, f"2024{index:06d}-{name}-exchange-student-at-the-faculty")
        code.keep(str(out), name, code.staged_code(staged))
    with open(os.path.join(SET, "wei.py"), encoding="utf-8") as handle:
        wide = handle.read().replace(
            "    return torch.where(keep, X, torch.full_like(X, value))",
            "    return torch.where(keep, X, torch.full_like(X, value))  # " + "long " * 80)
    _row(out, "wide", "2024999999-wide")
    code.keep(str(out), "wide", wide)


def _measure(path):
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    assert text.count("Content-Security-Policy") == 1
    text = re.sub(r'<meta http-equiv="Content-Security-Policy" content="[^"]*">',
                  "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
                  "style-src 'unsafe-inline'; script-src 'unsafe-inline'\">", text)
    text = text.replace("</body>", MEASURE + "</body>")
    folder = tempfile.mkdtemp(prefix="similarity-page-")
    try:
        copy = os.path.join(folder, "measured.html")
        with open(copy, "w", encoding="utf-8") as handle:
            handle.write(text)
        done = subprocess.run(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
             "--force-device-scale-factor=1", f"--window-size={WIDTH},900",
             f"--user-data-dir={os.path.join(folder, 'profile')}", "--no-first-run",
             "--proxy-server=127.0.0.1:9", "--dump-dom", "file://" + copy],
            capture_output=True, text=True, timeout=180)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    found = re.search(r'data-measured="([^"]*)"', done.stdout)
    assert found, (done.returncode, done.stderr[-2000:])
    return json.loads(html.unescape(found.group(1)))


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install "
                                              "chromium; .ci/run installs it)")
def test_the_page_fits_1280_px_without_losing_a_column(tmp_path):
    out = tmp_path / "grades"
    _class(out, tmp_path)
    command.run(str(out))
    measured = _measure(out / "similarity.html")
    assert measured["view"] == WIDTH
    assert measured["page"] <= WIDTH                      # no sideways scrolling of the page
    assert [h["text"] for h in measured["heads"]] == HEADS
    for head in measured["heads"]:                        # every column in view
        assert 0 <= head["left"] and head["right"] <= WIDTH, head
    for table in measured["tables"] + measured["scrolls"]:
        assert table["right"] <= WIDTH, table
    for box in measured["scrolls"]:                       # nothing hidden in the scroll box
        assert box["scroll"] <= box["client"], box
    assert measured["pres"] and all(p["scroll"] <= p["client"] for p in measured["pres"])
    assert {f["position"] for f in measured["firsts"]} == {"sticky"}


def _book_plus(extra):
    with open(os.path.join(KIT, "tests_hidden", "attention", "alternatives", "book_d2l_0_17.py"),
              encoding="utf-8") as handle:
        return handle.read() + "\n\n" + extra


def test_counts_in_the_right_number_and_why_a_pair_above_the_threshold_is_not_flagged(tmp_path):
    """Two submissions, the book plus the same short helper: all their own code is shared
    (score 1) but only 50-odd characters of it, under the 200 a pair needs."""
    helper = "def _pad(t, n):\n    return torch.cat([t, t.new_zeros(n - t.shape[0])])\n"
    for folder in ("a", "b"):
        _row(tmp_path, folder, folder)
        code.keep(str(tmp_path), folder, _book_plus(helper))
    (pair,) = command.run(str(tmp_path))[0]
    assert pair.score == 1.0 and not pair.flagged and 0 < pair.shared < 200
    text = (tmp_path / "similarity.html").read_text(encoding="utf-8")
    assert ("2 submissions compared, 1 pair; 0 pairs flagged (score at least 0.5 and at least "
            "200 shared characters of normalised code); 0 submissions skipped (below).") in text
    assert (f"not flagged: {pair.shared} shared characters, under the 200 a pair needs"
            in text)
    assert "<th>lines</th>" not in text and "pairs flagged" in text
    # one flagged pair, in English, then the same class graded in Chinese
    with open(os.path.join(SET, "wei.py"), encoding="utf-8") as handle:
        wei = handle.read()
    for folder in ("a", "b"):
        code.keep(str(tmp_path), folder, wei)
    command.run(str(tmp_path))
    text = (tmp_path / "similarity.html").read_text(encoding="utf-8")
    assert "2 submissions compared, 1 pair; 1 pair flagged (score" in text
    assert "1 pairs" not in text and '<html lang="en">' in text
    for folder in ("a", "b"):
        _row(tmp_path, folder, folder, lang="zh")
    command.run(str(tmp_path))
    text = (tmp_path / "similarity.html").read_text(encoding="utf-8")
    assert '<html lang="zh-CN">' in text and "<h1>提交之间的相似度</h1>" in text
    assert "比较了 2 份提交，共 1 对提交；1 对被标记（分数至少为 0.5" in text
    assert "<th>学生 A</th>" in text
    assert i18n.language() == "en"                          # the process's language is back


def test_counts_text_says_one_and_many():
    settings = {"threshold": 0.5, "min_shared": 200}
    assert page.counts_text(1, 1, 1, 1, settings) == (
        "1 submission compared, 1 pair; 1 pair flagged (score at least 0.5 and at least 200 "
        "shared characters of normalised code); 1 submission skipped (below).")
    assert page.counts_text(3, 3, 0, 2, settings).startswith(
        "3 submissions compared, 3 pairs; 0 pairs flagged")
