"""DIR/similarity.csv and DIR/similarity.html: the pairs, the clusters, the shared passages.

The page is for the instructor and in English. It is self-contained under the same
Content-Security-Policy as the kit's other pages (report/html.py: nothing fetched, no
script), and every string from a submission (code, names, ids) is made safe and escaped.
Code is shown for the flagged pairs only, each side cut to CODE_LINES lines around its
shared passages, and the page is held to PAGE_BYTES (pairs beyond it are in the CSV).
"""
import csv
import html
import io
import os

from ..report import files
from ..report.gradebook import text_cell
from ..report.html import CSP
from ..textsafety import safe_text

PAGE_BYTES = 8 * 1024 * 1024
CODE_LINES = 400            # lines of one side of a pair shown on the page
CONTEXT = 3                 # unshared lines kept around a shared passage
DETAILED_PAIRS = 100        # flagged pairs shown side by side; the rest are in the table
MAX_SKIPPED = 500           # skipped submissions listed
TABLE_PAIRS = 300           # rows of the pair table (flagged, then the highest others)
MAX_CSV_ROWS = 200_000      # pairs in similarity.csv (all pairs of a class of 630)
CSV_COLUMNS = ["student_a", "student_b", "folder_a", "folder_b", "score", "flagged",
               "shared_tokens", "shared_lines_a", "shared_lines_b", "share_a", "share_b"]
VERDICT = ("A review aid, never a verdict: these scores change no grade, and a high score "
           "is a reason to read two submissions side by side, not evidence of copying. "
           "(This page is for the instructor and is in English only.)")

CSS = """body { font-family: system-ui, sans-serif; margin: 1rem auto; max-width: 90rem;
  padding: 0 1rem; line-height: 1.4; color: #1b1b1b; }
table { border-collapse: collapse; margin: 0.5rem 0; } th, td { border: 1px solid #ccc;
  padding: 0.2rem 0.5rem; text-align: left; vertical-align: top; } .num { text-align: right; }
.verdict { background: #fff4d6; border: 1px solid #e0b84a; padding: 0.6rem; }
.pair { display: grid; grid-template-columns: 1fr 1fr; gap: 0.6rem; }
.pair > div { min-width: 0; } pre { background: #f6f6f6; padding: 0.4rem; overflow-x: auto;
  font-size: 0.8rem; white-space: pre; } mark { background: #ffd54a; }
.gap { color: #777; } .flag { font-weight: bold; color: #8a1c00; }
@media (max-width: 50rem) { .pair { grid-template-columns: 1fr; } }"""


def esc(value, limit=400):
    return html.escape(safe_text(value, limit), quote=True)


def line_ranges(text, spans):
    """[(first, last)] line numbers (from 1) of the lines each span touches, merged."""
    starts = [0] + [i + 1 for i, c in enumerate(text) if c == "\n"]
    ranges = []
    for start, end in sorted(spans):
        first = _line_of(starts, start)
        last = _line_of(starts, max(start, end - 1))
        if ranges and first <= ranges[-1][1] + 1:
            ranges[-1] = (ranges[-1][0], max(last, ranges[-1][1]))
        else:
            ranges.append((first, last))
    return ranges


def _line_of(starts, offset):
    low, high = 0, len(starts) - 1
    while low < high:
        middle = (low + high + 1) // 2
        if starts[middle] <= offset:
            low = middle
        else:
            high = middle - 1
    return low + 1


def lines_text(ranges):
    return " ".join(f"{a}-{b}" if b > a else f"{a}" for a, b in ranges)


def csv_text(pairs, sources):
    """similarity.csv: one row per pair, the highest score first; cells safe for a
    spreadsheet (gradebook.text_cell)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for pair in pairs[:MAX_CSV_ROWS]:
        a, b = sources[pair.a], sources[pair.b]
        writer.writerow([text_cell(a.label), text_cell(b.label), text_cell(a.folder),
                         text_cell(b.folder), f"{pair.score:.4f}", "yes" if pair.flagged else "no",
                         pair.shared, lines_text(line_ranges(a.text, pair.spans_a)),
                         lines_text(line_ranges(b.text, pair.spans_b)),
                         f"{pair.share_a:.4f}", f"{pair.share_b:.4f}"])
    return out.getvalue()


def marked_code(text, spans, limit=CODE_LINES):
    """The code as HTML: shared passages in <mark>, line numbers, unshared stretches longer
    than 2 * CONTEXT lines folded, at most `limit` lines."""
    pieces, at = [], 0
    for start, end in sorted(spans):
        start = max(start, at)
        if end <= start:
            continue
        pieces += [(text[at:start], False), (text[start:end], True)]
        at = end
    pieces.append((text[at:], False))
    lines, current = [], []          # each line: [(escaped piece, shared)]
    for piece, shared in pieces:
        parts = piece.split("\n")
        for i, part in enumerate(parts):
            if i:
                lines.append(current)
                current = []
            if part:
                current.append((part, shared))
    lines.append(current)
    keep = set()
    for number, line in enumerate(lines):
        if any(shared for _, shared in line):
            keep.update(range(max(0, number - CONTEXT), min(len(lines), number + CONTEXT + 1)))
    out, shown, previous = [], 0, -1
    for number in sorted(keep):
        if shown >= limit:
            out.append(f'<span class="gap">... cut at {limit} lines</span>')
            break
        if number != previous + 1:
            out.append(f'<span class="gap">... ({number - previous - 1} lines)</span>')
        body = "".join(f"<mark>{esc(p, None)}</mark>" if s else esc(p, None)
                       for p, s in lines[number])
        out.append(f"{number + 1:>4}  {body}")
        shown, previous = shown + 1, number
    return "<pre>" + "\n".join(out) + "</pre>"


def _pair_row(pair, sources):
    a, b = sources[pair.a], sources[pair.b]
    flag = '<span class="flag">flagged</span>' if pair.flagged else ""
    return (f"<tr><td>{esc(a.label)}</td><td>{esc(b.label)}</td>"
            f"<td class=\"num\">{pair.score:.2f}</td><td class=\"num\">{pair.shared}</td>"
            f"<td>{esc(lines_text(line_ranges(a.text, pair.spans_a)), 300)}</td>"
            f"<td>{esc(lines_text(line_ranges(b.text, pair.spans_b)), 300)}</td><td>{flag}</td></tr>")


def _distribution(pairs):
    bins = [0] * 10
    for pair in pairs:
        bins[min(9, int(pair.score * 10))] += 1
    return ("<table><tr><th>score</th><th class=\"num\">pairs</th></tr>" + "".join(
        f"<tr><td>{i / 10:.1f} to {(i + 1) / 10:.1f}{'' if i == 9 else ' (not incl.)'}</td>"
        f"<td class=\"num\">{n}</td></tr>" for i, n in enumerate(bins)) + "</table>")


def page_html(pairs, groups, sources, skipped, settings, detailed=DETAILED_PAIRS):
    """The whole page. settings: {"threshold", "min_shared", "k", "window", "base": [labels]}."""
    flagged = [p for p in pairs if p.flagged]
    big = [g for g in groups if len(g) > 2]
    body = ["<h1>Similarity of submissions</h1>",
            f'<p class="verdict">{esc(VERDICT, 1000)}</p>',
            f"<p>Made {esc(settings.get('made', ''), 40)} from the code the gradebook kept; run "
            "<code>grader similarity</code> again after grading more.</p>",
            f"<p>{len(sources)} submissions compared, {len(pairs)} pairs; "
            f"<strong>{len(flagged)} pairs flagged</strong> (score at least "
            f"{settings['threshold']:g} and at least {settings['min_shared']} shared characters "
            f"of normalised code); {len(skipped)} submissions skipped (below).</p>",
            "<p>Score: the share of one submission's own code (what is left after removing the "
            "base code below) that is also in the other, the larger of the two shares. Code is "
            "compared with copydetect (winnowing over Python tokens: names, comments, "
            "docstrings, whitespace and the order of functions do not matter; "
            f"k = {settings['k']}, window {settings['window']}). Nothing is run.</p>",
            "<p>Base code, which never counts: " + ", ".join(esc(b) for b in settings["base"])
            + ".</p>"]
    body.append("<h2>Clusters of more than two</h2>")
    if big:
        body.append("<ul>" + "".join(
            f"<li>{len(g)} submissions: " + ", ".join(esc(sources[k].label) for k in g) + "</li>"
            for g in big) + "</ul>")
    else:
        body.append("<p>None.</p>")
    body.append("<h2>Pairs</h2>")
    table = flagged[:TABLE_PAIRS] + [p for p in pairs if not p.flagged][:max(0, min(
        20, TABLE_PAIRS - len(flagged)))]
    body.append("<p>The flagged pairs, then the highest of the others; every pair is in "
                "similarity.csv.</p>")
    body.append("<table><tr><th>student</th><th>student</th><th class=\"num\">score</th>"
                "<th class=\"num\">shared</th><th>lines</th><th>lines</th><th></th></tr>"
                + "".join(_pair_row(p, sources) for p in table) + "</table>")
    body.append("<h2>Score distribution</h2>" + _distribution(pairs))
    body.append("<h2>Flagged pairs side by side</h2>")
    if not flagged:
        body.append("<p>No pair is flagged.</p>")
    for pair in flagged[:detailed]:
        a, b = sources[pair.a], sources[pair.b]
        body.append(f"<h3>{esc(a.label)} and {esc(b.label)}: score {pair.score:.2f}, "
                    f"{pair.shared} shared characters</h3><div class=\"pair\">"
                    f"<div><p>{esc(a.label)} ({esc(a.folder)})</p>{marked_code(a.text, pair.spans_a)}</div>"
                    f"<div><p>{esc(b.label)} ({esc(b.folder)})</p>{marked_code(b.text, pair.spans_b)}</div>"
                    "</div>")
    if len(flagged) > detailed:
        body.append(f"<p>{len(flagged) - detailed} more flagged pairs are in the table and "
                    "similarity.csv.</p>")
    hidden = [src for src in sources.values() if src.hidden]
    body.append("<h2>Read these yourself</h2>")
    body.append("<p>Code that builds code from strings or bytes at run time: what it runs is a "
                "string, which this comparison (and any token-based one) does not see into.</p>"
                + ("<ul>" + "".join(f"<li>{esc(src.label)} ({esc(src.folder)}): "
                                    + ", ".join(esc(c, 40) for c in src.hidden) + "</li>"
                                    for src in hidden[:MAX_SKIPPED]) + "</ul>"
                   if hidden else "<p>None.</p>"))
    body.append("<h2>Skipped</h2>")
    body.append("<ul>" + "".join(f"<li>{esc(s.label)} ({esc(s.folder)}): {esc(why, 600)}</li>"
                                 for s, why in skipped[:MAX_SKIPPED]) + "</ul>"
                if skipped else "<p>None.</p>")
    if len(skipped) > MAX_SKIPPED:
        body.append(f"<p>and {len(skipped) - MAX_SKIPPED} more.</p>")
    page = ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            f"<meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">\n"
            "<meta name=\"referrer\" content=\"no-referrer\">\n"
            f"<title>Similarity of submissions</title>\n<style>{CSS}</style>\n</head>\n<body>\n"
            + "\n".join(body) + "\n</body>\n</html>\n")
    if len(page.encode("utf-8")) > PAGE_BYTES and detailed > 0:
        return page_html(pairs, groups, sources, skipped, settings, detailed // 2)
    return page


def write(out_dir, pairs, groups, sources, skipped, settings):
    """Write both files atomically (report/files.py)."""
    files.write_bytes(os.path.join(out_dir, "similarity.csv"),
                      ("\ufeff" + csv_text(pairs, sources)).encode("utf-8"))
    files.write_text(os.path.join(out_dir, "similarity.html"),
                     page_html(pairs, groups, sources, skipped, settings), PAGE_BYTES + 4096)
