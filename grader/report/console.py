"""The table `grader grade` prints as it goes.

Names and reasons come from submissions: they pass through safe_text, so no terminal
escape, control character or lone surrogate reaches the instructor's terminal."""
import sys

from ..textsafety import safe_text


class Table:
    """parts: the part names graded, in order; short: {part: its column heading} (the
    declaration's Part.short, at most 9 characters; None: the default assignment's)."""

    def __init__(self, parts, total, stream=sys.stdout, short=None):
        self.parts, self.total, self.stream = parts, total, stream
        if short is None:
            from ..assignment import load
            short = {part.name: part.short for part in load().parts}
        self.short = dict(short)
        self.done = 0
        self.width = 24

    def header(self):
        cols = " ".join(f"{self.short.get(p, p)[:9]:>9}" for p in self.parts)
        self._print(f"{'':>9} {'submission':<{self.width}} {'score':>11} {cols}  time  note")

    def row(self, result):
        self.done += 1
        parts = result.by_part()
        cols = " ".join(f"{_cell(parts.get(p)):>9}" for p in self.parts)
        score = "—" if result.status == "grader error" else f"{result.score:g}"
        note = result.status if result.status != "graded" else ""
        if result.intake_error:
            note += f": {_line(result.intake_error, 60)}"
        elif (result.summary or {}).get("load_error"):
            note = _line(result.summary["load_error"], 70)
        name = _line(result.name, self.width)
        self._print(f"[{self.done:>3}/{self.total:<3}] {name:<{self.width}} "
                    f"{score:>5}/{result.max_score:<5g} {cols} {result.seconds:5.1f}s {note}")

    def kept(self, result, row):
        """A submission whose row was kept: unchanged since it was graded."""
        self.done += 1
        total = "—" if row.get("total") is None else f"{row['total']:g}"
        name = _line(result.name, self.width)
        self._print(f"[{self.done:>3}/{self.total:<3}] {name:<{self.width}} "
                    f"{total:>5}/{float(row.get('max', 0)):<5g} unchanged since it was graded: "
                    f"row kept (--force regrades it)")

    def _print(self, text):
        text = safe_text(text)
        try:
            print(text, file=self.stream, flush=True)
        except UnicodeEncodeError:  # a terminal that is not UTF-8
            encoding = getattr(self.stream, "encoding", None) or "ascii"
            print(text.encode(encoding, "replace").decode(encoding), file=self.stream, flush=True)


def _line(text, width):
    """The first line of `text`, made safe, at most `width` characters."""
    lines = safe_text(text, 4 * width + 64).splitlines()
    return (lines[0] if lines else "").replace("\t", " ")[:width]


def _cell(pair):
    if not pair:
        return "-"
    score, top = pair
    return f"{score:g}/{top:g}"
