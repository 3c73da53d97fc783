"""DIR/similarity.csv and DIR/similarity.html: the pairs, the clusters, the shared passages.

The page is for the instructor, in the class's language (that of most students' results,
as report.html: report/html.class_language); similarity.csv's columns stay English. It is
self-contained under the same Content-Security-Policy as the kit's other pages
(report/html.py: nothing fetched, no script), and every string from a submission (code,
names, ids) is made safe and escaped. Code is shown for the flagged pairs only, each side
cut to CODE_LINES lines around its shared passages, and the page is held to PAGE_BYTES
(pairs beyond it are in the CSV). At a laptop's 1,280 px nothing is cut: the pair table
scrolls inside its box with the first column kept in view, long cells and code lines wrap.
"""
import csv
import html
import io
import os

from .. import files, i18n
from ..i18n import N_, _, ngettext
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
VERDICT = N_("A review aid, never a verdict: these scores change no grade, and a high score "
             "is a reason to read two submissions side by side, not evidence of copying.")

CSS = """body { font-family: system-ui, sans-serif; margin: 1rem auto; max-width: 90rem;
  padding: 0 1rem; line-height: 1.4; color: #1b1b1b; }
table { border-collapse: collapse; margin: 0.5rem 0; } th, td { border: 1px solid #ccc;
  padding: 0.2rem 0.5rem; text-align: left; vertical-align: top; background: #fff; }
.num { text-align: right; white-space: nowrap; }
.scroll { overflow-x: auto; max-width: 100%; }
.pairs th:first-child, .pairs td:first-child { position: sticky; left: 0; z-index: 1;
  box-shadow: 1px 0 0 #ccc; }
.pairs td { overflow-wrap: anywhere; } .pairs td.who { min-width: 8rem; max-width: 16rem; }
.pairs td.lines { min-width: 7rem; max-width: 18rem; } .range { white-space: nowrap; }
.verdict { background: #fff4d6; border: 1px solid #e0b84a; padding: 0.6rem; }
.pair { display: grid; grid-template-columns: minmax(0, 1fr) minmax(0, 1fr); gap: 0.6rem; }
.pair > div { min-width: 0; } pre { background: #f6f6f6; padding: 0.4rem;
  font-size: 0.8rem; white-space: pre-wrap; overflow-wrap: anywhere; max-width: 100%; }
mark { background: #ffd54a; }
.gap { color: #777; } .flag { font-weight: bold; color: #8a1c00; } .why { color: #555; }
@media (max-width: 50rem) { .pair { grid-template-columns: minmax(0, 1fr); } }"""


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
            out.append('<span class="gap">' + esc(ngettext(
                "... cut at {n} line", "... cut at {n} lines", limit).format(n=limit)) + "</span>")
            break
        if number != previous + 1:
            folded = number - previous - 1
            out.append('<span class="gap">' + esc(ngettext(
                "... ({n} line)", "... ({n} lines)", folded).format(n=folded)) + "</span>")
        body = "".join(f"<mark>{esc(p, None)}</mark>" if s else esc(p, None)
                       for p, s in lines[number])
        out.append(f"{number + 1:>4}  {body}")
        shown, previous = shown + 1, number
    return "<pre>" + "\n".join(out) + "</pre>"


def _status(pair, settings):
    """The table's last cell: flagged, or why a pair at or above the threshold is not."""
    if pair.flagged:
        return '<span class="flag">' + esc(_("flagged")) + "</span>"
    if pair.score >= settings["threshold"]:
        return '<span class="why">' + esc(ngettext(
            "not flagged: {shared} shared character, under the {floor} a pair needs",
            "not flagged: {shared} shared characters, under the {floor} a pair needs",
            pair.shared).format(shared=pair.shared, floor=settings["min_shared"])) + "</span>"
    return esc(_("no"))


def _pair_row(pair, sources, settings):
    a, b = sources[pair.a], sources[pair.b]
    return (f"<tr><td class=\"who\">{esc(a.label)}</td><td class=\"who\">{esc(b.label)}</td>"
            f"<td class=\"num\">{pair.score:.2f}</td><td class=\"num\">{pair.shared}</td>"
            f"<td class=\"lines\">{_lines_html(line_ranges(a.text, pair.spans_a))}</td>"
            f"<td class=\"lines\">{_lines_html(line_ranges(b.text, pair.spans_b))}</td>"
            f"<td>{_status(pair, settings)}</td></tr>")


def _lines_html(ranges, limit=60):
    """Line ranges for the table, each kept on one line (a cell wraps between ranges)."""
    shown = [f'<span class="range">{esc(lines_text([r]))}</span>' for r in ranges[:limit]]
    return " ".join(shown) + (" ..." if len(ranges) > limit else "")


def _distribution(pairs):
    bins = [0] * 10
    for pair in pairs:
        bins[min(9, int(pair.score * 10))] += 1
    rows = []
    for i, n in enumerate(bins):
        low, high = f"{i / 10:.1f}", f"{(i + 1) / 10:.1f}"
        label = _("{low} to {high}").format(low=low, high=high) if i == 9 else \
            _("{low} to {high} (not incl.)").format(low=low, high=high)
        rows.append(f"<tr><td>{esc(label)}</td><td class=\"num\">{n}</td></tr>")
    return (f"<table><tr><th>{esc(_('score'))}</th><th class=\"num\">{esc(_('pairs'))}</th></tr>"
            + "".join(rows) + "</table>")


def counts_text(submissions, pairs, flagged, skipped, settings):
    """The page's line of counts, each noun in the right number."""
    return _("{submissions} compared, {pairs}; {flagged} (score at least {threshold} and at "
             "least {floor} shared characters of normalised code); {skipped} (below).").format(
        submissions=ngettext("{n} submission", "{n} submissions", submissions).format(n=submissions),
        pairs=ngettext("{n} pair", "{n} pairs", pairs).format(n=pairs),
        flagged=ngettext("{n} pair flagged", "{n} pairs flagged", flagged).format(n=flagged),
        skipped=ngettext("{n} submission skipped", "{n} submissions skipped", skipped).format(n=skipped),
        threshold=f"{settings['threshold']:g}", floor=settings["min_shared"])


def page_html(pairs, groups, sources, skipped, settings, detailed=DETAILED_PAIRS):
    """The whole page. settings: {"threshold", "min_shared", "k", "window", "base": [labels]}."""
    flagged = [p for p in pairs if p.flagged]
    title = _("Similarity of submissions")
    body = _introduction(title, pairs, flagged, sources, skipped, settings)
    body += _clusters(groups, sources)
    body += _pairs_table(pairs, flagged, sources, settings)
    body.append(f"<h2>{esc(_('Score distribution'))}</h2>" + _distribution(pairs))
    body += _side_by_side(flagged, sources, detailed)
    body += _unread(sources, skipped)
    lang = i18n.tag()
    page = (f"<!DOCTYPE html>\n<html lang=\"{lang}\">\n<head>\n<meta charset=\"utf-8\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            f"<meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">\n"
            "<meta name=\"referrer\" content=\"no-referrer\">\n"
            f"<title>{esc(title)}</title>\n<style>{CSS}</style>\n</head>\n<body>\n"
            + "\n".join(body) + "\n</body>\n</html>\n")
    if len(page.encode("utf-8")) > PAGE_BYTES and detailed > 0:
        return page_html(pairs, groups, sources, skipped, settings, detailed // 2)
    return page


def _introduction(title, pairs, flagged, sources, skipped, settings):
    """The title, the verdict it never is, the counts, what the score means, the base code."""
    return [f"<h1>{esc(title)}</h1>",
            f'<p class="verdict">{esc(_(VERDICT), 1000)}</p>',
            "<p>" + esc(_("Made {made} from the code the gradebook kept; run `grader similarity` "
                          "again after grading more.").format(made=settings.get("made", "")), 600)
            + "</p>",
            "<p><strong>" + esc(counts_text(len(sources), len(pairs), len(flagged), len(skipped),
                                            settings), 1000) + "</strong></p>",
            "<p>" + esc(_(
                "Score: the share of one submission's own code (what is left after removing the "
                "base code below) that is also in the other, the larger of the two shares. The "
                "code is what intake took in (a notebook's code cells, else the file), "
                "normalised with Python's parser: comments, docstrings, formatting, redundant "
                "parentheses, the names it chooses, how it spells its imports and the order of "
                "its definitions do not matter. It is then compared with copydetect (winnowing, "
                "k = {k} characters, window {window}), one definition at a time. A pair scoring "
                "at or above the threshold that shares fewer characters than the floor is not "
                "flagged: short generic lines are shared by chance. Nothing is run.").format(
                    k=settings["k"], window=settings["window"]), 2000) + "</p>",
            "<p>" + esc(_("Base code, which never counts: {files}.").format(
                files=", ".join(settings["base"])), 3000) + "</p>"]


def _none():
    return "<p>" + esc(_("None.")) + "</p>"


def _clusters(groups, sources):
    big = [g for g in groups if len(g) > 2]
    body = [f"<h2>{esc(_('Clusters of more than two'))}</h2>"]
    if big:
        body.append("<ul>" + "".join(
            "<li>" + esc(ngettext("{n} submission: {names}", "{n} submissions: {names}",
                                  len(g)).format(n=len(g), names=", ".join(
                                      sources[k].label for k in g)), 20000) + "</li>"
            for g in big) + "</ul>")
    else:
        body.append(_none())
    return body


def _pairs_table(pairs, flagged, sources, settings):
    """The flagged pairs, then the highest of the others."""
    body = [f"<h2>{esc(_('Pairs'))}</h2>"]
    table = flagged[:TABLE_PAIRS] + [p for p in pairs if not p.flagged][:max(0, min(
        20, TABLE_PAIRS - len(flagged)))]
    body.append("<p>" + esc(_("The flagged pairs, then the highest of the others; every pair "
                              "is in similarity.csv.")) + "</p>")
    heads = [(_("Student A"), ""), (_("Student B"), ""), (_("Score"), "num"),
             (_("Shared characters"), "num"), (_("Lines of A shared"), ""),
             (_("Lines of B shared"), ""), (_("Flagged?"), "")]
    body.append('<div class="scroll"><table class="pairs"><tr>' + "".join(
        f'<th{f" class={chr(34)}{kind}{chr(34)}" if kind else ""}>{esc(text)}</th>'
        for text, kind in heads) + "</tr>"
        + "".join(_pair_row(p, sources, settings) for p in table) + "</table></div>")
    return body


def _side_by_side(flagged, sources, detailed):
    """The first `detailed` flagged pairs' code side by side, the shared lines marked."""
    body = [f"<h2>{esc(_('Flagged pairs side by side'))}</h2>"]
    if not flagged:
        body.append("<p>" + esc(_("No pair is flagged.")) + "</p>")
    for pair in flagged[:detailed]:
        a, b = sources[pair.a], sources[pair.b]
        heading = ngettext("{a} and {b}: score {score}, {shared} shared character",
                           "{a} and {b}: score {score}, {shared} shared characters",
                           pair.shared).format(a=a.label, b=b.label, score=f"{pair.score:.2f}",
                                               shared=pair.shared)
        body.append(f"<h3>{esc(heading, 1000)}</h3><div class=\"pair\">"
                    f"<div><p>{esc(a.label)} ({esc(a.folder)})</p>{marked_code(a.text, pair.spans_a)}</div>"
                    f"<div><p>{esc(b.label)} ({esc(b.folder)})</p>{marked_code(b.text, pair.spans_b)}</div>"
                    "</div>")
    if len(flagged) > detailed:
        more = len(flagged) - detailed
        body.append("<p>" + esc(ngettext(
            "{n} more flagged pair is in the table and similarity.csv.",
            "{n} more flagged pairs are in the table and similarity.csv.", more).format(n=more))
            + "</p>")
    return body


def _unread(sources, skipped):
    """What the comparison cannot see into, and what it skipped."""
    none = _none()
    hidden = [src for src in sources.values() if src.hidden]
    body = [f"<h2>{esc(_('Read these yourself'))}</h2>"]
    body.append("<p>" + esc(_("Code that builds code from strings or bytes at run time: what it "
                              "runs is a string, which this comparison (and any token-based one) "
                              "does not see into.")) + "</p>"
                + ("<ul>" + "".join(f"<li>{esc(src.label)} ({esc(src.folder)}): "
                                    + ", ".join(esc(c, 40) for c in src.hidden) + "</li>"
                                    for src in hidden[:MAX_SKIPPED]) + "</ul>"
                   if hidden else none))
    body.append(f"<h2>{esc(_('Skipped'))}</h2>")
    body.append("<ul>" + "".join(f"<li>{esc(s.label)} ({esc(s.folder)}): {esc(why, 600)}</li>"
                                 for s, why in skipped[:MAX_SKIPPED]) + "</ul>"
                if skipped else none)
    if len(skipped) > MAX_SKIPPED:
        rest = len(skipped) - MAX_SKIPPED
        body.append("<p>" + esc(ngettext("and {n} more.", "and {n} more.", rest).format(n=rest))
                    + "</p>")
    return body


def write(out_dir, pairs, groups, sources, skipped, settings):
    """Write both files atomically (grader/files.py)."""
    files.write_bytes(os.path.join(out_dir, "similarity.csv"),
                      ("\ufeff" + csv_text(pairs, sources)).encode("utf-8"))
    files.write_text(os.path.join(out_dir, "similarity.html"),
                     page_html(pairs, groups, sources, skipped, settings), PAGE_BYTES + 4096)
