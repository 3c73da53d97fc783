"""The table `grader grade` prints as it goes."""
import sys

SHORT = {"sequence_mask": "mask", "masked_softmax": "softmax", "AdditiveAttention": "additive",
         "DotProductAttention": "dot", "transpose": "transp", "MultiHeadAttention": "multihead",
         "GPU": "gpu"}


class Table:
    def __init__(self, parts, total, stream=sys.stdout):
        self.parts, self.total, self.stream = parts, total, stream
        self.done = 0
        self.width = 24

    def header(self):
        cols = " ".join(f"{SHORT.get(p, p)[:9]:>9}" for p in self.parts)
        self._print(f"{'':>9} {'submission':<{self.width}} {'score':>11} {cols}  time  note")

    def row(self, result):
        self.done += 1
        parts = result.by_part()
        cols = " ".join(f"{_cell(parts.get(p)):>9}" for p in self.parts)
        score = "—" if result.status == "grader error" else f"{result.score:g}"
        note = result.status if result.status != "graded" else ""
        if result.intake_error:
            note += f": {result.intake_error.splitlines()[0][:60]}"
        elif (result.summary or {}).get("load_error"):
            note = result.summary["load_error"].splitlines()[0][:70]
        self._print(f"[{self.done:>3}/{self.total:<3}] {result.name[:self.width]:<{self.width}} "
                    f"{score:>5}/{result.max_score:<5g} {cols} {result.seconds:5.1f}s {note}")

    def _print(self, text):
        print(text, file=self.stream, flush=True)


def _cell(pair):
    if not pair:
        return "-"
    score, top = pair
    return f"{score:g}/{top:g}"
