"""HTML pages: DIR/<folder>/feedback.html for a student, DIR/report.html for the instructor.

Both are one self-contained file: inline CSS, pictures as SVG data: URIs the kit draws
itself (heatmaps: pictures.py; the class page's charts: charts.py), no script, no font,
nothing fetched (a Content-Security-Policy says so to the browser too), and readable on a
phone (viewport meta, a single fluid column, images at most the page's
width). Every string that comes from a submission or a test's message is made safe
(textsafety.safe_text) and then HTML-escaped; everything else is the grader's own text.

feedback.html follows the disclosure level (`feedback`): "full" shows the per-part summary,
the failing cases and, for the first failing case of each target the assignment draws
(its declaration's `heatmaps`) that has picture data, the expected and the returned
attention weights side by side; "summary" shows the per-part
summary only (no pictures: they would show the expected values of hidden cases); "score"
the scores only. report.html is titled with the assignment's title (`title`, in the page's
language from the assignment's catalog). Both take the loaded Assignment (`assignment`; None: the default one).

A page stays under PAGE_BYTES: pictures are dropped first. Making a picture can fail (odd
data): the page is then written without it, with a note, and never costs the row.
"""
import base64
import hashlib
import html
import json
import re
import os
import urllib.parse

from .. import course as courses
from .. import i18n
from ..assignment import load as load_assignment
from ..catalog.mistakes import Catalog
from ..i18n import N_, _, case_title
from ..textsafety import finite_number as _number, safe_text
from .. import files
from . import charts as class_charts, pictures
from .carried import carried_lines
from .gradebook import safe_record

PAGE_BYTES = 2 * 1024 * 1024
# what the page says, marked for the message catalog and translated where it is used
TRY_THIS = N_("Try this:")
FIRST_FAILING = N_("First failing case:")
SCORE_BY_PART = N_("Score by part")
PART = N_("part")
SCORE = N_("score")
WHAT_TO_LOOK_AT = N_("What to look at")
EVERY_PART_PASSED = N_("Every part passed.")
WEIGHTS_HEADING = N_("Attention weights: expected and yours")
CLASS_TITLE = N_("{title}: the class")
# a row's status (grades.csv's `status`, a stable identifier) as the class table says it
STATUS_WORDS = {"graded": N_("graded"), "not gradable": N_("not gradable"),
                "missing work": N_("missing work"), "grader error": N_("grader error")}

LEVELS = ("full", "summary", "score")

CSS = """
:root { color-scheme: light; }
* { box-sizing: border-box; }
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", "PingFang SC",
       "Microsoft YaHei", sans-serif; line-height: 1.5; color: #1d1d1f; background: #fff;
       margin: 0 auto; padding: 1rem; max-width: 56rem; overflow-wrap: anywhere; }
h1 { font-size: 1.4rem; margin: 0.2rem 0 0.6rem; }
h2 { font-size: 1.15rem; margin: 1.6rem 0 0.5rem; border-bottom: 1px solid #ddd; }
h3 { font-size: 1rem; margin: 1.2rem 0 0.3rem; }
img { max-width: 100%; height: auto; display: block; margin: 0.4rem 0; }
table { border-collapse: collapse; width: 100%; font-size: 0.95rem; }
th, td { text-align: left; padding: 0.3rem 0.4rem; border-bottom: 1px solid #eee;
         vertical-align: top; }
td.num, th.num { text-align: right; white-space: nowrap; }
.bar { background: #f3d6d2; height: 0.6rem; border-radius: 0.3rem; min-width: 3rem; }
.bar > span { display: block; height: 100%; background: #c0392b; border-radius: 0.3rem; }
.part { border-left: 4px solid #c0392b; padding: 0.2rem 0 0.2rem 0.8rem; margin: 0.8rem 0; }
.part.ok { border-left-color: #2e8b57; }
.note { background: #fff8e1; border: 1px solid #f0d98c; padding: 0.5rem 0.7rem;
        border-radius: 0.3rem; }
.total { font-size: 1.2rem; font-weight: 600; }
.small { font-size: 0.85rem; color: #555; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; background: #f6f6f6; padding: 0.5rem;
      border-radius: 0.3rem; font-size: 0.85rem; max-width: 100%; }
code { font-size: 0.9em; }
details { margin: 0.4rem 0; }
.wide { overflow-x: auto; max-width: 100%; margin: 0.4rem 0; overflow-wrap: normal; }
.wide td.list, .wide td:first-child { overflow-wrap: break-word; }  /* no word cut in two */
.wide table { width: 100%; font-size: 0.88rem; }
.wide th, .wide td { padding: 0.25rem 0.3rem; }
.wide td { white-space: nowrap; }
.wide th { vertical-align: bottom; min-width: 2.6rem; font-size: 0.85rem; }
.wide td.list { white-space: normal; min-width: 7rem; max-width: 17rem; }  /* long flags wrap */
.wide td.wrap { white-space: normal; min-width: 4rem; }
body.class-view { max-width: 110rem; }
.wide th:first-child, .wide td:first-child { position: sticky; left: 0; background: #fff;
  z-index: 1; box-shadow: 1px 0 0 #ddd; }
.wide td:first-child { white-space: normal; min-width: 7rem; max-width: 12rem; }
th button { font: inherit; font-weight: 600; color: inherit; background: none; border: 0;
            padding: 0; cursor: pointer; text-align: inherit; white-space: normal; }
th[aria-sort="ascending"] button::after { content: " \\25B2"; }
th[aria-sort="descending"] button::after { content: " \\25BC"; }
td.lost { font-weight: 700; color: #a3261b; }
th code.partname { font: inherit; }  /* a part's name: an identifier, in the heading's type */
dt { font-weight: 600; margin-top: 0.4rem; }
dd { margin: 0 0 0 1rem; }
@media (max-width: 30rem) { body { padding: 0.6rem; font-size: 0.95rem; }
  th, td { padding: 0.25rem 0.2rem; }
  .wide th, .wide td { font-size: 0.8rem; min-width: 2.5rem; overflow-wrap: normal; }
  .wide td:first-child, .wide td:nth-child(2) { white-space: normal; min-width: 5.5rem;
    max-width: 7.5rem; overflow-wrap: break-word; } }
"""

CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"

# report.html's one script: sorts a table.sortable by the header button clicked (numbers by
# each cell's data-key, blanks last); the CSP allows exactly this text by its hash. Without
# it (or without scripts) the table stays in its order, by name.
SORT_SCRIPT = """(function () {
  function key(cell, numeric) {
    var v = cell.hasAttribute('data-key') ? cell.getAttribute('data-key') : cell.textContent;
    v = v.trim();
    if (v === '') { return null; }
    if (!numeric) { return v.toLowerCase(); }
    return isNaN(parseFloat(v)) ? null : parseFloat(v);
  }
  [].forEach.call(document.querySelectorAll('table.sortable'), function (table) {
    var heads = table.tHead.rows[0].cells;
    [].forEach.call(heads, function (head, column) {
      var button = head.querySelector('button');
      if (!button) { return; }
      button.addEventListener('click', function () {
        var up = head.getAttribute('aria-sort') !== 'ascending';
        var numeric = head.hasAttribute('data-numeric');
        [].forEach.call(heads, function (h) { h.removeAttribute('aria-sort'); });
        head.setAttribute('aria-sort', up ? 'ascending' : 'descending');
        var body = table.tBodies[0], rows = [].slice.call(body.rows);
        rows.sort(function (a, b) {
          var x = key(a.cells[column], numeric), y = key(b.cells[column], numeric);
          if (x === null || y === null) { return (x === null) - (y === null); }
          var order = numeric ? (x < y ? -1 : x > y ? 1 : 0)
                              : x.localeCompare(y, undefined, {numeric: true});
          return order * (up ? 1 : -1);
        });
        rows.forEach(function (row) { body.appendChild(row); });
      });
    });
  });
})();"""
SORT_HASH = "sha256-" + base64.b64encode(hashlib.sha256(SORT_SCRIPT.encode()).digest()).decode()


def esc(value, limit=2000):
    """Text from a submission or a message, safe and HTML-escaped."""
    return html.escape(safe_text(value if value is not None else "", limit), quote=True)


def _fmt(value):
    try:
        return f"{float(value):g}"
    except (TypeError, ValueError):
        return "?"


def _page(title, body, sortable=False):
    """A whole page; sortable: with SORT_SCRIPT, which the CSP then allows by its hash."""
    lang = i18n.tag()
    csp = CSP + (f"; script-src '{SORT_HASH}'" if sortable else "")
    script = f"<script>{SORT_SCRIPT}</script>\n" if sortable else ""
    view = ' class="class-view"' if sortable else ""
    return (f"<!DOCTYPE html>\n<html lang=\"{lang}\">\n<head>\n<meta charset=\"utf-8\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            f"<meta http-equiv=\"Content-Security-Policy\" content=\"{csp}\">\n"
            "<meta name=\"referrer\" content=\"no-referrer\">\n"
            f"<title>{title}</title>\n<style>{CSS}</style>\n</head>\n"
            f"<body{view}>\n"
            f"{body}\n{script}</body>\n</html>\n")


def _bar(score, top):
    try:
        share = max(0.0, min(1.0, float(score) / float(top))) if float(top) > 0 else 0.0
    except (TypeError, ValueError):
        share = 0.0
    return f'<div class="bar"><span style="width:{share * 100:.0f}%"></span></div>'


def _first_line(text, limit=300):
    lines = safe_text(text or "", 4000).strip().splitlines()
    return safe_text(lines[0].strip(), limit) if lines else ""


# ---------------------------------------------------------------- the student's page

def _status_notes(result, feedback):
    notes = []
    if result.grader_error or result.grader_failures:
        notes.append(_("The grader itself failed on part of this submission. This is not your "
                       "fault; your instructor has been told, and those tests are not counted "
                       "as zeros."))
    if result.intake_error:
        notes.append(_("Your submission could not be graded: {reason}").format(
            reason=esc(result.intake_error, 1000))
            if feedback != "score" else _("Your submission could not be graded."))
    summary = result.summary or {}
    if summary.get("load_error") and feedback != "score":
        notes.append(f"<pre>{esc(summary['load_error'], 2000)}</pre>")
    return notes


def _could_not_run(result):
    """The file could not be read or imported: every case failed for that one reason."""
    return bool(result.intake_error or (result.summary or {}).get("load_error"))


MAX_DIAGNOSES = 4  # per part, as in summary.py: up to three named mistakes and an observation


def _diagnosis(result, part, feedback="full"):
    """Every diagnosis of `part` with a text, in order (named mistakes, then an observation).
    An observation quotes a hidden case's inputs, so only `full` shows it (as in
    summary.part_summaries)."""
    return [entry for entry in result.diagnoses or []
            if isinstance(entry, dict) and entry.get("part") == part
            and isinstance(entry.get("text"), str) and entry["text"]
            and (entry.get("mistake") or feedback == "full")][:MAX_DIAGNOSES]


def _part_blocks(result, parts, feedback):
    blocks = []
    for part, (score, top) in parts.items():
        if top <= 0:
            continue
        lost = score < top
        head = (f'<div class="part{"" if lost else " ok"}"><h3>{esc(part, 100)}: '
                f'{_fmt(score)} / {_fmt(top)}</h3>')
        if feedback == "score":
            if lost:
                blocks.append(head + "</div>")
            continue
        tests = [t for t in result.tests if t.part == part and t.status != "skipped"]
        # error carried forward (carried.py): said in its part, full marks or not
        carried = [f"<p>{esc(line, 2000)}</p>" for line in carried_lines(tests)]
        if not lost:  # the table above has its score; cases carried forward are said here
            if carried:
                blocks.append(f'<div class="part ok"><h3>{esc(part, 100)}</h3>'
                              + "".join(carried) + "</div>")
            continue
        failing = [t for t in tests if t.status == "failed"]
        body = list(carried)
        diagnoses = _diagnosis(result, part, feedback)
        if _could_not_run(result):  # said once, above: not again in every part
            body.append('<p class="small">' + _("None of its cases could run (see above).")
                        + '</p>')
            blocks.append(head + "".join(body) + "</div>")
            continue
        for diagnosis in diagnoses:
            body.append(f"<p>{esc(diagnosis['text'], 2000)}</p>")
            if isinstance(diagnosis.get("experiment"), str) and diagnosis["experiment"]:
                body.append(f"<p><strong>{_(TRY_THIS)}</strong> "
                            f"{esc(diagnosis['experiment'], 1000)}</p>")
        if not diagnoses and failing and feedback == "full":
            body.append(f"<p>{esc(_first_line(failing[0].message), 400)}</p>")
        body.append('<p class="small">' + _("{failed} of {total} cases in this part failed.")
                    .format(failed=len(failing), total=len(tests)) + '</p>')
        blocks.append(head + "".join(body) + "</div>")
    return blocks


def _assignment(assignment):
    if assignment is None:
        assignment = load_assignment()
    return assignment


def _picture_cases(result, assignment):
    """(target, test) for the first failing case of each target the assignment draws
    (`heatmaps`, graded in its part) that has picture data."""
    cases = []
    for target in assignment.heatmaps:
        try:
            part = assignment.part_of(target)
        except KeyError:   # given code: no part grades it, so no case draws it
            continue
        for test in result.tests:
            if test.part == part and test.status == "failed" and test.heatmap:
                cases.append((target, test))
                break
    return cases


def _pictures(result, notes, assignment):
    """[(target, test, data URI)], with what went wrong added to `notes`."""
    drawn = []
    cases = _picture_cases(result, assignment)
    if not cases:
        return drawn
    failed = 0
    for module, test in cases:
        try:
            heatmap = test.heatmap
            drawn.append((module, test, pictures.heatmap_pair(heatmap.get("expected"),
                                                             heatmap.get("got"))))
        except Exception:
            failed += 1
    if failed:
        notes.append(_("{failed} picture(s) could not be drawn; feedback.txt has those cases "
                       "in words.").format(failed=failed))
    return drawn


def _picture_blocks(drawn):
    blocks = []
    for module, test, uri in drawn:
        heatmap = test.heatmap or {}
        returned = heatmap.get("got") is not None
        alt = _("Heatmaps of the expected and the returned attention weights of {module}").format(
            module=module)
        blocks.append(
            f"<h3>{esc(module, 100)}</h3>"
            f"<p>{_(FIRST_FAILING)} <strong>{esc(case_title(test.name), 300)}</strong></p>"
            f'<p class="small">{esc(heatmap.get("title", ""), 400)}</p>'
            f'<img src="{uri}" alt="{html.escape(alt)}">'
            + ('<p class="small">' + (_(
                "Left: the weights the reference solution stores; right: yours. Same colour "
                "scale (the bar on the right): yellow is more weight, dark blue less, and each "
                "cell up to 8 x 8 has its value; each row is one query and should sum to 1 "
                "over the keys it may attend to.") if returned else _(
                "The expected weights; yours could not be compared cell by cell (a different "
                "shape, or none stored).")) + '</p>')
            + f"<pre>{esc(test.message, 1200)}</pre>")
    return blocks


def _failing_list(result):
    """The failing cases, those that failed with the same first line said once."""
    failing = [t for t in result.tests if t.status == "failed"]
    if not failing:
        return ""
    groups = {}
    for test in failing:
        groups.setdefault(_first_line(test.message), []).append(case_title(test.name))
    items = []
    for line, names in list(groups.items())[:60]:
        shown = ", ".join(f"<strong>{esc(n, 300)}</strong>" for n in names[:5])
        more = _(" and {count} more").format(count=len(names) - 5) if len(names) > 5 else ""
        items.append(f"<li>{shown}{more}: {esc(line, 300)}</li>")
    if len(groups) > 60:
        items.append("<li>" + _("and {count} more kinds of failure").format(
            count=len(groups) - 60) + "</li>")
    return ("<details><summary>" + _("All failing cases ({count})").format(count=len(failing))
            + f"</summary><ul>{''.join(items)}</ul><p class=\"small\">"
            + _("feedback.txt has each case in full.") + "</p></details>")


def _feedback_page(result, feedback, drawn, notes):
    parts = result.by_part()
    name = esc(result.name, 200)
    title = _("Feedback: {name}").format(name=name)
    body = [f"<h1>{title}</h1>",
            '<p class="total">' + _("{score} / {max} points").format(
                score=_fmt(result.score), max=_fmt(result.max_score)) + '</p>']
    body += [f'<div class="note">{n}</div>' for n in _status_notes(result, feedback)]
    if parts:
        rows = "".join(f"<tr><td>{esc(p, 100)}</td><td class=\"num\">{_fmt(s)} / {_fmt(t)}</td>"
                       f"<td style=\"width:40%\">{_bar(s, t)}</td></tr>"
                       for p, (s, t) in parts.items() if t > 0)
        body.append(f"<h2>{_(SCORE_BY_PART)}</h2><table><tr><th>{_(PART)}</th>"
                    f"<th class=\"num\">{_(SCORE)}</th><th></th></tr>{rows}</table>")
        if feedback != "score":
            body.append(f"<h2>{_(WHAT_TO_LOOK_AT)}</h2>")
            body += _part_blocks(result, parts, feedback) or [
                f"<p>{_(EVERY_PART_PASSED)}</p>"]
    if feedback == "full":
        if drawn:
            body.append(f"<h2>{_(WEIGHTS_HEADING)}</h2>")
            body += _picture_blocks(drawn)
        body.append(_failing_list(result))
    body += [f'<p class="note">{html.escape(n)}</p>' for n in notes]
    skipped = [t for t in result.tests if t.status == "skipped"]
    if skipped:
        body.append('<p class="small">' + _("{count} tests did not run on this grading "
                                            "machine and carry no points here.").format(
            count=len(skipped)) + "</p>")
    return _page(title, "\n".join(b for b in body if b))


def feedback_html(result, feedback="full", limit=PAGE_BYTES, assignment=None):
    """The student's page for one SubmissionResult, at most `limit` bytes of UTF-8."""
    feedback = feedback if feedback in LEVELS else "summary"
    notes = []
    drawn = _pictures(result, notes, _assignment(assignment)) if feedback == "full" else []
    while True:
        page = _feedback_page(result, feedback, drawn, notes)
        if len(page.encode("utf-8")) <= limit or not drawn:
            break
        drawn = drawn[:-1]
        left_out = _("Some pictures were left out to keep this page small.")
        if left_out not in notes:
            notes.append(left_out)
    if len(page.encode("utf-8")) > limit:  # not with our caps; but never a cut page
        page = _page("Feedback", f"<p>{_fmt(result.score)} / {_fmt(result.max_score)} points. "
                     "The details are in feedback.txt.</p>")
    return page


def write_feedback_page(result, folder, feedback="full", assignment=None):
    """Write folder/feedback.html. Never raises: a page that cannot be made is replaced by
    a short one that says so, and one that cannot be written is left out."""
    path = os.path.join(folder, "feedback.html")
    try:
        page = feedback_html(result, feedback, assignment=assignment)
    except Exception:
        try:
            page = _page("Feedback", f"<p>{_fmt(result.score)} / {_fmt(result.max_score)} "
                         "points.</p><p class=\"note\">This page could not be made in full; "
                         "feedback.txt has your feedback.</p>")
        except Exception:
            return
    try:
        files.write_text(path, page, PAGE_BYTES)
    except Exception:
        pass


# ---------------------------------------------------------------- the instructor's page

def _row_of(item):
    """A gradebook row (dict) from a row or a SubmissionResult, with its tests when known."""
    if isinstance(item, dict):
        return item, None
    row = safe_record(item)
    if isinstance(item.diagnoses, list) and "diagnoses" not in row:
        row["diagnoses"] = [d.get("mistake") for d in item.diagnoses if isinstance(d, dict)]
    tests = [{"name": t.name, "status": "passed" if t.status == "passed" else "failed"}
             for t in item.tests if t.status != "skipped"]
    return row, tests


def _tests_from_folder(out_dir, folder):
    """[{"name", "status"}] from DIR/<folder>/results.json, or None when it does not read."""
    if not out_dir or not isinstance(folder, str) or not folder or "/" in folder \
            or folder in (".", ".."):
        return None
    path = os.path.join(out_dir, folder, "results.json")
    try:
        if os.path.islink(path) or os.path.getsize(path) > 4 * files.RESULTS_BYTES:
            return None
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return None
    tests = data.get("tests") if isinstance(data, dict) else None
    if not isinstance(tests, list):
        return None
    return [{"name": t["name"], "status": t.get("status")} for t in tests
            if isinstance(t, dict) and isinstance(t.get("name"), str)]


def _diagnosis_ids(row):
    """The catalog mistakes a row's diagnoses name, each once: one mistake said in its own
    part and again in a part that calls it is one mistake of that submission."""
    ids = []
    listed = row.get("diagnoses")
    for entry in listed if isinstance(listed, list) else []:
        if isinstance(entry, dict):
            entry = entry.get("mistake")
        if isinstance(entry, str) and entry.strip():
            ids.append(safe_text(entry.strip(), 100))
    return list(dict.fromkeys(ids))


def _statistics(items, out_dir):
    rows, errors, case_order, cases, diagnoses = [], [], [], {}, {}
    for item in items:
        try:
            row, tests = _row_of(item)
        except Exception:
            continue
        if not isinstance(row, dict):
            continue
        if row.get("status") == "grader error":
            errors.append(row)
            continue
        rows.append(row)
        if row.get("status") == "missing work":  # nothing was found: not in the statistics
            continue
        if tests is None:
            tests = _tests_from_folder(out_dir, row.get("folder"))
        for test in tests or []:
            name = safe_text(test["name"], 300)
            if name not in cases:
                case_order.append(name)
                cases[name] = [0, 0]
            cases[name][1] += 1
            cases[name][0] += test.get("status") == "passed"
        for mistake in _diagnosis_ids(row):
            diagnoses[mistake] = diagnoses.get(mistake, 0) + 1
    return rows, errors, [(n, cases[n][0], cases[n][1]) for n in case_order], diagnoses


def _part_means(rows):
    order, sums = [], {}
    for row in rows:
        parts = row.get("parts") if isinstance(row.get("parts"), dict) else {}
        for part, pair in parts.items():
            try:
                score, top = float(pair[0]), float(pair[1])
            except (TypeError, ValueError, IndexError, KeyError):
                continue
            if part not in sums:
                order.append(part)
                sums[part] = [0.0, 0.0, 0]
            sums[part][0] += score
            sums[part][1] = max(sums[part][1], top)
            sums[part][2] += 1
    return [(p, sums[p][0] / sums[p][2], sums[p][1]) for p in order if sums[p][2]]


def _chart(make, notes):
    """A class chart's data URI (charts.py), or None with a note when it cannot be drawn."""
    try:
        return make()
    except Exception as error:
        notes.append(_("A chart could not be drawn ({error}).").format(
            error=type(error).__name__))
    return None


def _img(uri, alt):
    return f'<img src="{uri}" alt="{html.escape(alt)}">' if uri else ""


def _late(row):
    late = row.get("late")
    if late is True:
        days = row.get("days_late")
        return _("late, {days} day(s)").format(days=int(days)) \
            if isinstance(days, (int, float)) else _("late")
    return _("on time") if late is False else ""


def _status(row):
    """The escaped status cell: the grader's own status words in the page's language."""
    status = row.get("status", "")
    return esc(_(STATUS_WORDS[status]) if status in STATUS_WORDS else status, 50)


def _flags(row):
    return [f for key in ("flags", "review") if isinstance(row.get(key), list)
            for f in row[key] if isinstance(f, str)]


def _adjustment_cells(row):
    """The escaped cells late, penalty, overrides and flags of a final row."""
    penalty = _number(row.get("penalty"))
    listed = row.get("overrides") if isinstance(row.get("overrides"), list) else []
    overrides = [o for o in listed if isinstance(o, dict)]
    return [esc(_late(row), 100),
            "" if not penalty else f"-{penalty:g}",
            "<br>".join(f"{esc(o.get('part'), 100)}: {esc(_fmt(o.get('graded')), 20)} &rarr; "
                        f"{esc(_fmt(o.get('points')), 20)} ({esc(o.get('reason'), 300)}, "
                        f"{esc(o.get('who'), 60)})" for o in overrides[:20]),
            _long_cell([esc(f, 400) for f in _flags(row)[:20]],
                       "; ".join(_flags(row)))]


def _long_cell(lines, text, short=110):
    """A table cell's lines; when they run long, folded: the start of the text, and all of
    it one click away (<details>, no script), so a row stays a few lines tall at 1,280 px."""
    if len(text) <= short:
        return "<br>".join(lines)
    return (f"<details><summary>{esc(text[:short - 30].rstrip(), 200)}&hellip;</summary>"
            + "<br>".join(lines) + "</details>")


def _quoted_flags(row):
    """A row's flags for the review list: as grades.csv records them (English, written at
    intake); a Chinese page says that they are quoted."""
    flags = "; ".join(_flags(row))
    if i18n.language() != i18n.ENGLISH:
        return _("flags, as grades.csv records them: {flags}").format(flags=flags)
    return flags


def _review(rows, errors, more=None):
    """The rows to look at: missing work, identity flags and what to review, grader errors;
    `more`: lines about no row (an override that applies to none)."""
    items = [({"name": "overrides.json"}, line) for line in (more or []) if isinstance(line, str)]
    items += [(r, _("missing work: nothing gradable was found; not exported unless "
                    "{option}").format(option="--export-missing-as-zero"))
              for r in rows if r.get("status") == "missing work"]
    items += [(r, _quoted_flags(r)) for r in rows + errors if _flags(r)]
    items += [(r, _("grader error: {reason}").format(reason=_first_line(r.get("reason", ""))))
              for r in errors]
    if not items:
        return []
    return (["<h2>" + _("To review") + "</h2><ul>"]
            + [f"<li><strong>{esc(r.get('name', ''), 200)}</strong>: {esc(why, 1200)}</li>"
               for r, why in items[:500]]
            + (["<li>" + _("... and {count} more").format(count=len(items) - 500) + "</li>"]
               if len(items) > 500 else [])
            + ["</ul>"])


def _anchor(mistake):
    return "mistake-" + re.sub(r"[^A-Za-z0-9-]", "_", mistake)[:100]


def _catalog(declared):
    """{id: Mistake} of the assignment's catalog (empty when it does not load: the page goes on)."""
    try:
        return {m.id: m for m in Catalog.of(declared).mistakes}
    except Exception:  # noqa: BLE001 - the glossary is left out, the page stands
        return {}


def _part_order(rows):
    order = []
    for row in rows:
        parts = row.get("parts") if isinstance(row.get("parts"), dict) else {}
        order += [p for p in parts if isinstance(p, str) and p not in order]
    return order[:20]


def _top(row, part):
    try:
        return _number(row["parts"][part][1]) or 0.0
    except (TypeError, KeyError, IndexError):
        return 0.0


def _part_cell(row, part):
    parts = row.get("parts") if isinstance(row.get("parts"), dict) else {}
    pair = parts.get(part)
    try:
        score, top = float(pair[0]), float(pair[1])
    except (TypeError, ValueError, IndexError, KeyError):
        return '<td class="num" data-key=""></td>'
    lost = ' lost' if score < top else ''
    return f'<td class="num{lost}" data-key="{score:g}">{score:g}</td>'


def _breakable(name):
    """A part's (escaped) name that may wrap in a narrow column: after _ and before a
    capital inside a word (sequence_<wbr>mask, Additive<wbr>Attention)."""
    return re.sub(r"(?<=_)|(?<=[a-z])(?=[A-Z])", "<wbr>", name)


def _class_table(rows, known, short=None):
    """The class at a glance: a row per submission, sortable by any column (SORT_SCRIPT).
    short: {part: its short name} (the declaration's, as the console heads its columns);
    the full name is the heading's title."""
    parts = _part_order(rows)
    tops = {part: max([_top(r, part) for r in rows] + [0.0]) for part in parts}
    short = short or {}

    def head(text, numeric=False, title=None):
        numeric = ' class="num" data-numeric' if numeric else ""
        titled = f' title="{esc(title, 100)}"' if title else ""
        return f'<th{numeric}{titled}><button type="button">{text}</button></th>'
    heads = ([head(_("student")), head(_("id")), head(_("total"), True)]
             + [head(f'<code class="partname">{_breakable(esc(short.get(p) or p, 60))}</code> '
                     f"/{tops[p]:g}", True, p) for p in parts]
             + [head(_("late")), head(_("penalty"), True), head(_("diagnoses")),
                head(_("status")), head(_("overrides")), head(_("flags"))])
    lines = ["<h2>" + _("Submissions") + "</h2>",
             '<p class="small">' + _("Click a column's title to sort by it (again: the other "
                                     "way). Bold: the part lost points. Each diagnosis links "
                                     "to its entry in the catalog below.") + "</p>",
             '<div class="wide"><table class="sortable"><thead><tr>' + "".join(heads)
             + "</tr></thead><tbody>"]
    for row in sorted(rows, key=lambda r: safe_text(r.get("name", "")).casefold()):
        folder = row.get("folder") if isinstance(row.get("folder"), str) else ""
        name = esc(row.get("name", ""), 200)
        link = (f'<a href="{html.escape(urllib.parse.quote(folder))}/feedback.html">{name}</a>'
                if folder and "/" not in folder and folder not in (".", "..") else name)
        total = _number(row.get("total"))
        late, penalty, overrides, flags = _adjustment_cells(row)
        diagnoses = ", ".join(_mistake_link(m, known) for m in _diagnosis_ids(row)[:10])
        lines.append(
            f"<tr><td>{link}</td><td>{esc(row.get('student_id', ''), 100)}</td>"
            f'<td class="num" data-key="{"" if total is None else f"{total:g}"}">'
            f"{'' if total is None else f'{total:g}'}</td>"
            + "".join(_part_cell(row, p) for p in parts)
            + f'<td class="wrap">{late}</td><td class="num">{penalty}</td>'
            + f'<td class="list">{diagnoses}</td><td class="wrap">{_status(row)}</td>'
            + f'<td class="list">{overrides}</td><td class="list">{flags}</td></tr>')
    lines.append("</tbody></table></div>")
    return lines


def _mistake_link(mistake, known):
    code = f"<code>{esc(mistake, 100)}</code>"
    return f'<a href="#{_anchor(mistake)}">{code}</a>' if mistake in known else code


def _glossary(diagnoses, known, declared):
    """The diagnosed mistakes of the class, each with what the catalog says it is (the
    assignment's catalog, `declared`'s)."""
    listed = [m for m in sorted(diagnoses) if m in known]
    if not listed:
        return []
    lines = ["<h2>" + _("The diagnosed mistakes") + "</h2><p class=\"small\">"
             + _("From the catalog ({source}; {docs} has every mistake with its scores). Each "
                 "reads: the result is exactly what you get if ...").format(
                     source=esc(declared.catalog_file, 300), docs=esc(declared.mistakes_docs, 300))
             + "</p><dl>"]
    for mistake in listed:
        entry = known[mistake]
        said = entry.text(i18n.language()) if hasattr(entry, "text") else ""
        lines.append(f'<dt id="{_anchor(mistake)}"><code>{esc(mistake, 100)}</code> '
                     f'({esc(getattr(entry, "part", ""), 60)})</dt><dd>{esc(said, 600)}</dd>')
    return lines + ["</dl>"]


def report_html(items, out_dir=None, charts=True, review=None, assignment=None):
    """The instructor's page for a class: gradebook rows (gradebook.final_rows of the kept
    rows: total is the final score, with late, penalty, overrides and flags; read
    defensively) or SubmissionResults. out_dir: where each row's folder and its
    results.json are (for the pass rate per case)."""
    items = list(items)
    rows, errors, cases, diagnoses = _statistics(items, out_dir)
    notes = []
    scored = [r for r in rows if r.get("status") != "missing work"]
    totals = [t for t in (_number(r.get("total")) for r in scored) if t is not None]
    top = max([_number(r.get("max")) or 0.0 for r in rows] + [0.0]) or 100.0
    frequent = sorted(diagnoses.items(), key=lambda kv: (-kv[1], kv[0]))[:20]
    declared = _assignment(assignment)
    named = _(declared.title)   # from the assignment's catalog; English where it has none
    title = esc(_(CLASS_TITLE).format(title=named), 400)
    body = [f"<h1>{title}</h1>"] + _opening(rows, scored, errors, totals, top, out_dir)
    known = _catalog(declared)
    body += [f'<p class="note">{esc(courses.say(note), 1200)}</p>'
             for note in courses.notes(rows + errors)]
    body += _review(rows, errors, review)
    body += _class_table(rows, known, {p.name: p.short for p in getattr(declared, "parts", ())
                                       if getattr(p, "short", None)})
    body.append("<h2>" + _("Score distribution") + "</h2>")
    if totals and charts:
        body.append(_img(_chart(lambda: class_charts.histogram(
            totals, N_("Total scores"), N_("total score"), top), notes),
            _("Histogram of total scores")))
    body += _means_section(_part_means(scored), charts, notes)
    body += _cases_section(cases)
    body += _diagnoses_section(frequent, known, charts, notes)
    body += _errors_section(errors)
    body += _glossary(diagnoses, known, declared)
    body += [f'<p class="note">{html.escape(n)}</p>' for n in notes]
    page = _page(title, "\n".join(b for b in body if b), sortable=True)
    if charts and len(page.encode("utf-8")) > PAGE_BYTES * 4:
        return report_html(items, out_dir, charts=False, review=review, assignment=assignment)
    return page


def _opening(rows, scored, errors, totals, top, out_dir):
    """What the class page says first: how many are in the statistics, the similarity
    page's link, the totals' mean, median, lowest and highest."""
    body = ["<p>" + _("{count} submissions in the statistics").format(count=len(scored))
            + (_("; {count} left out (grader errors, listed below)").format(count=len(errors))
               if errors else "")
            + (_("; {count} missing work, left out (to review)").format(
                count=len(rows) - len(scored)) if len(rows) > len(scored) else "")
            + ".</p>"]
    if out_dir and os.path.isfile(os.path.join(out_dir, "similarity.html")):  # grader similarity
        body.append('<p><a href="similarity.html">' + _("Similarity of submissions (a review "
                                                          "aid, never a verdict)") + "</a></p>")
    if totals:
        mean = sum(totals) / len(totals)
        ordered = sorted(totals)
        median = (ordered[len(ordered) // 2] + ordered[(len(ordered) - 1) // 2]) / 2
        body.append('<p class="total">' + _("mean {mean}, median {median}, lowest {low}, "
                                            "highest {high} (of {top})").format(
            mean=f"{mean:.1f}", median=f"{median:g}", low=f"{ordered[0]:g}",
            high=f"{ordered[-1]:g}", top=f"{top:g}") + "</p>")
    return body


def _means_section(means, charts, notes):
    body = ["<h2>" + _("Mean score by part") + "</h2>"]
    if means:
        if charts:
            body.append(_img(_chart(lambda: class_charts.bar_chart(
                [p for p, *rest in means], [100 * m / t if t else 0 for p, m, t in means],
                N_("Mean score by part (percent of the part's points)"),
                N_("percent of the points"),
                maximum=100), notes), _("Bar chart of the mean score of each part")))
        heads = (_(PART), _("mean"), _("of"))
        body.append(f"<table><tr><th>{heads[0]}</th><th class=\"num\">{heads[1]}</th>"
                    f"<th class=\"num\">{heads[2]}</th><th></th></tr>" + "".join(
                        f"<tr><td>{esc(p, 100)}</td><td class=\"num\">{m:.2f}</td>"
                        f"<td class=\"num\">{t:g}</td><td style=\"width:35%\">{_bar(m, t)}</td></tr>"
                        for p, m, t in means) + "</table>")
    return body


def _cases_section(cases):
    body = ["<h2>" + _("Pass rate per case") + "</h2>"]
    if cases:
        # bars drawn by the page itself: about 60 long case names stay legible on a phone
        heads = (_("case"), _("passed"))
        body.append(f"<table><tr><th>{heads[0]}</th><th class=\"num\">{heads[1]}</th>"
                    "<th></th></tr>"
                    + "".join(f"<tr><td>{esc(case_title(n), 300)}</td><td class=\"num\">{p} / {c}</td>"
                              f"<td style=\"width:30%\">{_bar(p, c)}</td></tr>"
                              for n, p, c in cases) + "</table>")
    else:
        body.append("<p>" + _("No per-case results were found (results.json in each "
                               "folder).") + "</p>")
    return body


def _diagnoses_section(frequent, known, charts, notes):
    body = ["<h2>" + _("Most frequent diagnoses") + "</h2>"]
    if frequent:
        if charts:
            body.append(_img(_chart(lambda: class_charts.bar_chart(
                [m for m, _ in frequent], [n for _, n in frequent],
                N_("Submissions with each diagnosed mistake"), class_charts.SUBMISSIONS,
                horizontal=True, counts=True), notes),
                _("Horizontal bars: how many submissions have each diagnosed mistake")))
        heads = (_("mistake"), _(class_charts.SUBMISSIONS))
        body.append(f"<table><tr><th>{heads[0]}</th><th class=\"num\">{heads[1]}</th></tr>"
                    + "".join(f"<tr><td>{_mistake_link(m, known)}</td><td class=\"num\">{n}"
                              "</td></tr>" for m, n in frequent) + "</table>")
    else:
        body.append("<p>" + _("No diagnoses recorded.") + "</p>")
    return body


def _errors_section(errors):
    if not errors:
        return []
    body = ["<h2>" + _("Grader errors (not in the statistics)") + "</h2><p>"
            + _("Regrade these: {command} grades a grader error again.").format(
                command="<code>grader grade</code>") + "</p><ul>"]
    body += [f"<li><strong>{esc(r.get('name', ''), 200)}</strong>: "
             f"{esc(_first_line(r.get('reason', '')), 300)}</li>" for r in errors]
    body.append("</ul>")
    return body


def class_language(items, out_dir):
    """The language of the class page: that of most students' results.json (extra_data.lang,
    the --lang they were graded with), so `grader gradebook` and `grader override`, which
    take no --lang, keep a Chinese class's page Chinese; this process's when none says."""
    said = {}
    for item in items:
        folder = item.get("folder") if isinstance(item, dict) else item.folder
        if not out_dir or not isinstance(folder, str) or not folder or "/" in folder \
                or folder in (".", ".."):
            continue
        path = os.path.join(out_dir, folder, "results.json")
        try:
            if os.path.islink(path) or os.path.getsize(path) > 4 * files.RESULTS_BYTES:
                continue
            with open(path, encoding="utf-8") as handle:
                lang = json.load(handle).get("extra_data", {}).get("lang")
        except (OSError, ValueError, AttributeError):
            continue
        if lang in i18n.languages():
            said[lang] = said.get(lang, 0) + 1
    if not said:
        return i18n.language()
    return max(sorted(said), key=lambda lang: (said[lang], lang == i18n.language()))


def write_report(items, out_dir, review=None, assignment=None):
    """Write DIR/report.html (review: more lines for its "To review" list) in the class's
    language (class_language). Never raises (the gradebook matters more than its charts)."""
    language = i18n.language()
    try:
        items = list(items)
        i18n.set_language(class_language(items, out_dir))
        files.write_text(os.path.join(out_dir, "report.html"),
                         report_html(items, out_dir, review=review, assignment=assignment),
                         PAGE_BYTES * 4)
    except Exception:
        pass
    finally:
        i18n.set_language(language)
