"""`grader validate`: does the hidden suite grade the way it should?

Grades, in one batch: the solution (must get full marks), the skeleton released from it
(must get 0), every correct alternative in alternatives/ (full marks: loops, einsum,
torch.where, the book's own code, and no diagnosis), and every mistake of the catalog
(grader/catalog: it must lose points in its part, and the diagnosis of that part must name
it; with error carried forward on, the default, no case of a function that calls the
mistake's function may lose points). Prints a table and returns whether every check held.
"""
import dataclasses
import os
import shutil
import tempfile

from .. import paths
from ..grade import grade_batch
from ..harness.implementations import API_NAMES
from ..release import release
from ..catalog import MISTAKES, callers

ALTERNATIVES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "alternatives")


@dataclasses.dataclass
class Expectation:
    kind: str         # "solution" | "skeleton" | "alternative" | "mistake"
    name: str
    path: str
    part: str = None  # for mistakes: the part that must lose points and name it
    about: str = ""
    target: str = None  # for mistakes: the function it is in (its callers' cases keep
                        # their points under error carried forward, grader/catalog/carry.py)

    def check(self, result):
        """(ok, what happened) for this submission's SubmissionResult."""
        if result.status != "graded":
            return False, f"{result.status}: {result.grader_error or result.intake_error}"
        got = f"{result.score:g}/{result.max_score:g}"
        named = [d.get("mistake") for d in result.diagnoses if d.get("mistake")]
        if self.kind in ("solution", "alternative"):
            if named:
                return False, f"{got}, diagnosed as {', '.join(named)} (no diagnosis expected)"
            return result.score == result.max_score, f"{got} (full marks expected)"
        if self.kind == "skeleton":
            return result.score == 0, f"{got} (0 expected)"
        score, top = result.by_part().get(self.part, (0.0, 0.0))
        diagnosed = [d.get("mistake") for d in result.diagnoses if d.get("part") == self.part]
        detail = (f"{self.part} {score:g}/{top:g}, total {got}, diagnosed as "
                  f"{diagnosed[0] if diagnosed and diagnosed[0] else 'nothing'}")
        lost = self.callers_lost(result)
        if lost:
            detail += f"; with error carried forward its callers still lost: {', '.join(lost[:3])}"
        return score < top and diagnosed == [self.name] and not lost, detail

    def callers_lost(self, result):
        """The cases of the functions that call this mistake's function that lost points
        although error carried forward was on (none may)."""
        if self.kind != "mistake" or result.carry_forward != "on" or not self.target:
            return []
        reach = callers(self.target) - {self.target}
        return [t.name for t in result.tests if t.target in reach
                and t.status not in ("passed", "skipped")]


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
    for mistake in MISTAKES:
        write("mistake", mistake.id, mistake.apply(source), part=mistake.part, about=mistake.en,
              target=mistake.target)
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
            item.result = result
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
    settings = {getattr(getattr(item, "result", None), "carry_forward", None) for item, _, _ in rows}
    if "on" in settings:  # grader/catalog/carry.py; validate grades with the default
        print("\nGraded with error carried forward on (the default): no case of a function "
              "that calls a mistake's function may lose points.", file=stream)
    print(f"\n{len(rows) - len(bad)} of {len(rows)} checks hold" +
          (f"; failing: {', '.join(bad)}" if bad else "."), file=stream)


def docs_table(rows, date):
    """docs/mistakes.md from a validation: one row per catalog mistake with what it cost."""
    lines = [
        "# The mistake catalog", "",
        "Each row is a realistic student mistake, applied to the solution as a small edit",
        "(`grader/catalog/mistakes.py`, where each also has its sentence in Chinese).",
        "`grader validate` grades them all and checks that each one loses points in its part",
        "and is diagnosed as itself; `tests/test_zoo.py` runs it in CI and checks that this",
        "table names every mistake. A mistake in an early part shows in the parts built on it",
        "(a `sequence_mask` bug in `masked_softmax` and the attentions), and the diagnosis of",
        "those parts names it there too; with error carried forward (the default) it costs",
        "only its own part: their cases keep their points when they give what a correct",
        "caller gives on top of it (`grader validate` checks it for every mistake below).", "",
        f"Scores below are from one run of `grader validate` ({date}, CPU machine: the GPU",
        "part graded by the device-discipline tests); `grader validate --docs docs/mistakes.md`",
        "writes this file again from a run.", "",
        "| mistake | part | your result is exactly what you get if ... | points left in that part "
        "| total /100 | diagnosed as |",
        "|---|---|---|---|---|---|",
    ]
    for item, ok, detail in rows:
        if item.kind != "mistake":
            continue
        result = getattr(item, "result", None)
        score, top = result.by_part().get(item.part, (0.0, 0.0)) if result else (0, 0)
        named = [d.get("mistake") for d in (result.diagnoses if result else [])
                 if d.get("part") == item.part]
        lines.append(f"| `{item.name}` | {item.part} | {item.about} | {score:g}/{top:g} | "
                     f"{result.score:g} | {named[0] if named and named[0] else '(nothing)'}"
                     f"{'' if ok else ' !!'} |" if result else
                     f"| `{item.name}` | {item.part} | {item.about} | ? | ? | {detail} |")
    lines += ["", "Correct solutions written in other styles get full marks and no diagnosis",
              "(`grader/validate/alternatives/`): the book's own d2l 0.17 code, the 1.0 edition's",
              "`nn.LazyLinear`, a non-mutating one with `torch.where`/`matmul`/`view`, einsum with",
              "`masked_fill` and the dtype's minimum, Python loops, and one that scales the",
              "queries first and builds the mask by arithmetic.", ""]
    return "\n".join(lines)
