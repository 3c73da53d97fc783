"""What a student reads about an instructor adjustment: a late penalty or an override.

When a row's final score differs from what was graded (gradebook.final_row), the student's
feedback.txt and feedback.html open with a block that says so (the graded score, each
adjustment and its reason, the final score), and results.json's `score` is the final score,
with `extra_data.raw_score` the graded one and `extra_data.adjustment` what was applied.
`sync` brings every student's files in line with the rows each time the gradebook is built,
and rewrites only those whose adjustment changed (results.json records the one applied):
atomically and capped, like every file (grader/files.py). Removing the last adjustment takes the
block out again. The block is in the language the files were written in (extra_data.lang).
"""
import html
import json
import os
import re

from .. import i18n
from ..i18n import _
from ..textsafety import safe_text
from .. import files

HTML_START, HTML_END = "<!-- instructor-adjustment -->", "<!-- /instructor-adjustment -->"
HTML_BLOCK = re.compile(re.escape(HTML_START) + ".*?" + re.escape(HTML_END) + "\n?", re.DOTALL)


def _g(value):
    return f"{float(value):g}"


def wanted(row):
    """The adjustment a final row carries, as plain data, or None when there is none."""
    if row.get("total") is None or (not row.get("overrides") and not row.get("penalty")):
        return None
    return {"graded": row.get("graded_total"), "raw_total": row.get("raw_total"),
            "late": row.get("late"), "days_late": row.get("days_late"),
            "basis": row.get("late_basis") or "",
            "penalty": row.get("penalty") or 0.0, "final": row.get("total"),
            "max": row.get("max"),
            "overrides": [{"part": o["part"], "graded": o["graded"], "points": o["points"],
                           "reason": o.get("reason", "")} for o in row.get("overrides") or []]}


def lines(adjustment):
    """The block's sentences, in this process's language."""
    out = [_("Instructor adjustment"),
           _("Graded score: {score} of {max}").format(score=_g(adjustment["graded"]),
                                                      max=_g(adjustment["max"]))]
    for item in adjustment["overrides"]:
        part = item["part"] if item["part"] != "total" else _("the total")
        out.append(_("{part}: {graded} changed to {points} by your instructor. Reason: {reason}")
                   .format(part=part, graded=_g(item["graded"]), points=_g(item["points"]),
                           reason=safe_text(item["reason"], 1000)))
    if adjustment["penalty"]:
        days = adjustment.get("days_late")
        if adjustment.get("basis") == "lms-flag":
            # all that is known is the LMS's own "late": say that, not a time nobody saw
            out.append(_("Late penalty: -{points} (the course's system marked your submission "
                         "late without giving its time, which the course's late policy counts "
                         "as {days} day(s) late)")
                       .format(points=_g(adjustment["penalty"]), days=days if days else "?"))
        else:
            out.append(_("Late penalty: -{points} ({days} day(s) late, by the course's late "
                         "policy)").format(points=_g(adjustment["penalty"]),
                                           days=days if days else "?"))
    out.append(_("Final score: {score} of {max}").format(score=_g(adjustment["final"]),
                                                         max=_g(adjustment["max"])))
    return out


def text_block(adjustment):
    body = lines(adjustment)
    rule = "=" * 60
    return "\n".join([rule, body[0], rule] + body[1:] + [rule, "", ""])


def html_block(adjustment):
    body = lines(adjustment)
    return (f'{HTML_START}<section class="note"><h2>{html.escape(body[0])}</h2><ul>'
            + "".join(f"<li>{html.escape(b)}</li>" for b in body[1:])
            + f"</ul></section>{HTML_END}\n")


def _read(path, limit):
    if os.path.islink(path) or not os.path.isfile(path) or os.path.getsize(path) > limit:
        return None
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def _strip_text(text, blocks):
    for block in blocks:
        if block and text.startswith(block):
            text = text[len(block):]
    return text


def apply(folder, row):
    """Bring one student's files in line with their final row; True when they were
    rewritten. Never raises (a student's files are not worth the gradebook)."""
    try:
        return _apply(folder, row)
    except Exception:
        return False


def _fit(data):
    """results.json's text under its cap: the tests' outputs are cut first (never the JSON)."""
    text = files.dumps(data)
    for keep in (1000, 200, 0):
        if len(text.encode("utf-8")) <= files.RESULTS_BYTES:
            return text
        for test in data.get("tests") or []:
            if isinstance(test, dict) and isinstance(test.get("output"), str):
                test["output"] = test["output"][:keep]
        text = files.dumps(data)
    if len(text.encode("utf-8")) > files.RESULTS_BYTES:
        data["output"] = files.cap_bytes(data.get("output") or "", files.RESULTS_BYTES // 2)
        text = files.dumps(data)
    return text


def _apply(folder, row):
    path = os.path.join(folder, "results.json")
    text = _read(path, 4 * files.RESULTS_BYTES)
    if text is None:
        return False
    data = json.loads(text)
    extra = data.setdefault("extra_data", {})
    before, after = extra.get("adjustment"), wanted(row)
    if before == after or (before is None and after is None):
        return False
    language = i18n.language()
    try:
        i18n.set_language(extra.get("lang") or "en")
        new_block = text_block(after) if after else ""
        old_block = extra.get("adjustment_text") or ""
        feedback = os.path.join(folder, "feedback.txt")
        plain = _read(feedback, 4 * files.FEEDBACK_BYTES)
        if plain is not None:
            plain = _strip_text(plain, [old_block, new_block])
            files.write_text(feedback, new_block + plain, files.FEEDBACK_BYTES)
        page_path = os.path.join(folder, "feedback.html")
        page = _read(page_path, 16 * files.RESULTS_BYTES)
        if page is not None:
            page = HTML_BLOCK.sub("", page)
            if after:
                page = page.replace("<body>\n", "<body>\n" + html_block(after), 1)
            files.write_text(page_path, page)
        output = _strip_text(data.get("output") or "", [old_block, new_block])
        if "raw_score" in extra:
            data["score"] = extra["raw_score"]
        if after:
            extra["raw_score"] = data.get("score")
            data["score"] = after["final"]
            extra["adjustment"], extra["adjustment_text"] = after, new_block
            data["output"] = new_block + output
        else:
            for key in ("raw_score", "adjustment", "adjustment_text"):
                extra.pop(key, None)
            data["output"] = output
        files.write_text(path, _fit(data))
    finally:
        i18n.set_language(language)
    return True


def sync(out_dir, rows):
    """apply() for every final row; the number of students whose files were rewritten."""
    changed = 0
    for row in rows:
        folder = row.get("folder")
        if isinstance(folder, str) and folder and "/" not in folder and folder not in (".", ".."):
            changed += apply(os.path.join(out_dir, folder), row)
    return changed
