"""`grader validate`: does the hidden suite grade the way it should?

Grades, in one batch: the solution (must get full marks), the skeleton released from it
(must get 0), every correct alternative in alternatives/ (full marks: loops, einsum,
torch.where, the book's own code), and every mutant of the mistake zoo (must lose points
in the part it breaks). Prints a table and returns whether every check held.
"""
import dataclasses
import os
import shutil
import tempfile

from .. import paths
from ..grade import grade_batch
from ..harness.implementations import API_NAMES
from ..release import release
from .mutants import MUTANTS

ALTERNATIVES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "alternatives")


@dataclasses.dataclass
class Expectation:
    kind: str         # "solution" | "skeleton" | "alternative" | "mutant"
    name: str
    path: str
    part: str = None  # for mutants: the part that must lose points
    about: str = ""

    def check(self, result):
        """(ok, what happened) for this submission's SubmissionResult."""
        if result.status != "graded":
            return False, f"{result.status}: {result.grader_error or result.intake_error}"
        got = f"{result.score:g}/{result.max_score:g}"
        if self.kind in ("solution", "alternative"):
            return result.score == result.max_score, f"{got} (full marks expected)"
        if self.kind == "skeleton":
            return result.score == 0, f"{got} (0 expected)"
        score, top = result.by_part().get(self.part, (0.0, 0.0))
        return score < top, f"{self.part} {score:g}/{top:g}, total {got}"


def expectations(workdir, solution=paths.SOLUTION):
    with open(solution, encoding="utf-8") as handle:
        source = handle.read()
    items = []

    def write(kind, name, text, **extra):
        folder = os.path.join(workdir, kind)
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, f"{name}.py")
        with open(path, "w", encoding="utf-8") as out:
            out.write(text)
        items.append(Expectation(kind, name, path, **extra))

    write("solution", "solution", source)
    write("skeleton", "skeleton", release(solution, API_NAMES))
    for name in sorted(os.listdir(ALTERNATIVES)):
        if name.endswith(".py"):
            with open(os.path.join(ALTERNATIVES, name), encoding="utf-8") as handle:
                write("alternative", name[:-3], handle.read())
    for mutant in MUTANTS:
        write("mutant", mutant.name, mutant.apply(source), part=mutant.part, about=mutant.mistake)
    return items


def validate(options, jobs=1, out_dir=None, stream=None):
    """Grade the whole zoo; returns (all ok, [(Expectation, ok, detail)])."""
    workdir = tempfile.mkdtemp(prefix="attnkit-validate-")
    try:
        items = expectations(workdir, options.solution)
        out = out_dir or os.path.join(workdir, "out")
        results = grade_batch([i.path for i in items], out, options, jobs=jobs, stream=stream,
                              force=True)  # every check grades afresh
        rows = []
        for item, result in zip(items, results):
            ok, detail = item.check(result)
            rows.append((item, ok, detail))
        return all(ok for _, ok, _ in rows), rows
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def print_table(rows, stream=None):
    import sys
    stream = stream or sys.stdout
    print(f"\n{'':2} {'kind':<12} {'name':<28} result", file=stream)
    for item, ok, detail in rows:
        print(f"{'ok' if ok else '!!':2} {item.kind:<12} {item.name:<28} {detail}", file=stream)
    bad = [item.name for item, ok, _ in rows if not ok]
    print(f"\n{len(rows) - len(bad)} of {len(rows)} checks hold" +
          (f"; failing: {', '.join(bad)}" if bad else "."), file=stream)
