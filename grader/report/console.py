"""What `grader grade` prints: a line per submission as it is done, and a summary at the end.

Each line shows the final score, as grades.csv will have it (gradebook.final_row: the
instructor's overrides, then the course's late policy), with what was graded and the
penalty where they differ; a submission in which nothing gradable was found says
`missing`, never 0/100; a grader error says `—`. While submissions remain, each line ends
with an estimate of the time left (the time per submission so far, times those left).
`summary` is the closing block: how many were graded, not gradable, missing, grader
errors, flagged, late, unchanged, and the time taken.

Names and reasons come from submissions: they pass through safe_text, so no terminal
escape, control character or lone surrogate reaches the instructor's terminal."""
import sys
import time

from .. import overrides as ledger
from ..assignment import load
from ..i18n import _, ngettext
from ..textsafety import finite_number as _number, safe_text
from .gradebook import final_row, safe_record

MISSING = "missing"


class Table:
    """parts: the part names graded, in order; short: {part: its column heading} (the
    declaration's Part.short, at most 9 characters; None: the default assignment's);
    course, entries: the course file and the overrides ledger the final scores are derived
    with, as the run read them (report/book.py; None, []: the graded score is the final one);
    clock: seconds (for the estimate)."""

    def __init__(self, parts, total, stream=sys.stdout, short=None, course=None, entries=None,
                 clock=time.monotonic):
        self.parts, self.total, self.stream = parts, total, stream
        if short is None:
            short = {part.name: part.short for part in load().parts}
        self.short = dict(short)
        self.done = 0
        self.width = 24
        self.course = course
        self.current = ledger.active(entries or [])
        self.clock = clock
        self.started = clock()

    def header(self):
        cols = " ".join(f"{self.short.get(p, p)[:9]:>9}" for p in self.parts)
        self._print(f"{'':>9} {'submission':<{self.width}} {'score':>11} {cols}  time  note")

    def final(self, row):
        """The row's final values (gradebook.final_row), or the row itself when they cannot
        be derived (the console is not worth a row)."""
        try:
            return final_row(row, self.course, self.current)
        except Exception:
            return row

    def row(self, result):
        self.done += 1
        final = self.final(safe_record(result))
        parts = final.get("parts") if isinstance(final.get("parts"), dict) else {}
        missing = final.get("status") == "missing work"
        cols = " ".join(f"{'-' if missing else _cell(parts.get(p)):>9}" for p in self.parts)
        notes = [] if final.get("status") == "graded" else [final.get("status") or ""]
        if result.intake_error:
            notes[-1:] = [f"{final.get('status')}: {_line(result.intake_error, 60)}"]
        elif (result.summary or {}).get("load_error"):
            notes = [_line(result.summary["load_error"], 70)]
        notes += adjustment_notes(final)
        name = _line(result.name, self.width)
        self._print(f"[{self.done:>3}/{self.total:<3}] {name:<{self.width}} "
                    f"{score_cell(final):>11} {cols} {result.seconds:5.1f}s "
                    f"{'; '.join(n for n in notes if n)}{self._left()}")

    def kept(self, result, row):
        """A submission whose row was kept: unchanged since it was graded."""
        self.done += 1
        final = self.final(row)
        name = _line(result.name, self.width)
        said = "; ".join(["unchanged since it was graded: row kept (--force regrades it)"]
                         + adjustment_notes(final))
        self._print(f"[{self.done:>3}/{self.total:<3}] {name:<{self.width}} "
                    f"{score_cell(final):>11} {said}{self._left()}")

    def _left(self):
        """"  (about 3 min left)" while submissions remain, from the pace so far."""
        remaining = self.total - self.done
        if remaining <= 0 or self.done <= 0:
            return ""
        left = (self.clock() - self.started) / self.done * remaining
        return "  (" + _("about {time} left").format(time=duration(left)) + ")"

    def _print(self, text):
        print_line(self.stream, text)


def print_line(stream, text):
    """One safe line on `stream` (a terminal that is not UTF-8 gets replacements)."""
    text = safe_text(text)
    try:
        print(text, file=stream, flush=True)
    except UnicodeEncodeError:
        encoding = getattr(stream, "encoding", None) or "ascii"
        print(text.encode(encoding, "replace").decode(encoding), file=stream, flush=True)


def score_cell(final):
    """The score column: the final score of its maximum, `missing`, or — for a grader error."""
    status = final.get("status")
    if status == "grader error" or final.get("total") is None:
        return "—"
    top = _number(final.get("max")) or 0.0
    if status == "missing work":
        return f"{MISSING}/{top:g}"
    return f"{_number(final.get('total')) or 0.0:g}/{top:g}"


def adjustment_notes(final):
    """What lies between the graded score and the final one, said only where they differ:
    ["graded 83", "overrides: 95", "late -10"]."""
    graded, raw = _number(final.get("graded_total")), _number(final.get("raw_total"))
    penalty, total = _number(final.get("penalty")) or 0.0, _number(final.get("total"))
    if graded is None or total is None or (graded == total and not final.get("overrides")):
        return []
    said = [f"graded {graded:g}"]
    if final.get("overrides") and raw is not None:
        said.append(f"overrides: {raw:g}")
    if penalty:
        said.append(f"late -{penalty:g}")
    return said


def duration(seconds):
    """"45 s", "3 min", "1 h 20 min" (rounded up: an estimate never says less)."""
    seconds = max(0, int(seconds + 0.999))
    if seconds < 60:
        return f"{seconds} s"
    minutes = (seconds + 59) // 60
    if minutes < 60:
        return f"{minutes} min"
    return f"{minutes // 60} h" + (f" {minutes % 60} min" if minutes % 60 else "")


def counts(rows):
    """{"graded", "not gradable", "missing work", "grader error", "flagged", "late",
    "adjusted"} over final rows: what the summary says."""
    out = {key: 0 for key in ("graded", "not gradable", "missing work", "grader error",
                              "flagged", "late", "adjusted")}
    for row in rows:
        status = row.get("status")
        if status == "grader error" or (row.get("total") is None and status != "missing work"):
            out["grader error"] += 1
        elif status in out:
            out[status] += 1
        out["flagged"] += bool(row.get("flags"))
        out["late"] += bool(_number(row.get("penalty")))
        out["adjusted"] += bool(row.get("overrides")) or bool(_number(row.get("penalty")))
    return out


def summary(rows, seconds, unchanged=0):
    """The lines that close a batch: counts over its final rows and the time it took."""
    found = counts(rows)
    lines = [_("Summary: {count} submission(s) in {time}").format(count=len(rows),
                                                                  time=duration(seconds)),
             "  " + _("graded: {graded}; not gradable: {not_gradable}; missing work: {missing}; "
                      "grader errors: {errors}").format(
                 graded=found["graded"], not_gradable=found["not gradable"],
                 missing=found["missing work"], errors=found["grader error"]),
             "  " + _("flagged identities: {flagged}; late penalties: {late}; adjusted "
                      "(override or penalty): {adjusted}").format(
                 flagged=found["flagged"], late=found["late"], adjusted=found["adjusted"])]
    if unchanged:
        lines.append("  " + ngettext("{count} unchanged since its last grading, row kept",
                                     "{count} unchanged since their last grading, rows kept",
                                     unchanged).format(count=unchanged))
    return lines


def _line(text, width):
    """The first line of `text`, made safe, at most `width` characters."""
    lines = safe_text(text, 4 * width + 64).splitlines()
    return (lines[0] if lines else "").replace("\t", " ")[:width]


def _cell(pair):
    if not pair:
        return "-"
    score, top = pair
    return f"{score:g}/{top:g}"
