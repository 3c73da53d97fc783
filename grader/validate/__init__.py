"""`grader validate`: does an assignment's hidden suite grade the way it should?

Grades, in one batch: the solution (must get full marks), the skeleton released from it
(must get 0), every correct alternative in the assignment's alternatives/ folder
(tests_hidden/<name>/alternatives: correct code in other styles, full marks and no
diagnosis), and every mistake of its catalog (tests_hidden/<name>/mistakes.py, read through
grader/catalog: it must lose points in its part, and the diagnosis of that part must name
it; with error carried forward on, the default, no case of a function that calls the
mistake's function may lose points). Returns whether every check held, and a row per check
(`grader validate`, commands/validate.py, prints them).
Everything assignment-specific comes from the declaration (grader/assignment.py).
"""
import dataclasses
import os
import shutil
import tempfile

from .. import assignment as declarations
from .. import paths
from ..catalog import Catalog
from ..grade import grade_batch
from ..release import release


def _assignment(assignment=None, options=None):
    """The assignment to validate: `assignment`, else the options' (SuiteOptions.assignment),
    else the default one (grader/assignment.py load())."""
    if assignment is None:
        assignment = getattr(options, "assignment", None)
    if assignment is None:
        assignment = declarations.load()
    return assignment


@dataclasses.dataclass
class Expectation:
    kind: str         # "solution" | "skeleton" | "alternative" | "mistake"
    name: str
    path: str
    part: str = None  # for mistakes: the part that must lose points and name it
    about: str = ""
    target: str = None  # for mistakes: the function it is in
    reach: tuple = ()   # for mistakes: the functions that call it, whose cases keep their
                        # points under error carried forward (grader/catalog/carry.py)
    result: object = None  # its SubmissionResult, once graded (validate)

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
        if self.kind != "mistake" or result.carry_forward != "on" or not self.reach:
            return []
        return [t.name for t in result.tests if t.target in self.reach
                and t.status not in ("passed", "skipped")]


def _options_for(options, assignment):
    """(options, assignment): options that grade with `assignment`'s hidden suite and
    solution (SuiteOptions fills them from its assignment) when they were another's."""
    declared = getattr(options, "assignment", None)
    if assignment is None:
        return options, _assignment(None, options)
    if declared is None or os.path.realpath(declared.folder) != os.path.realpath(assignment.folder):
        options = dataclasses.replace(options, assignment=assignment, hidden_tests=None,
                                      solution=None)
    return options, assignment


def expectations(workdir, solution=None, assignment=None):
    """What validate grades, written under `workdir`: the solution (`solution`, else the
    assignment's), its skeleton, the assignment's alternatives and its catalog's mistakes."""
    assignment = _assignment(assignment)
    solution = solution or assignment.solution
    catalog = Catalog.of(assignment)
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
    write("skeleton", "skeleton", release(solution, list(assignment.api)))
    for name in alternatives(assignment):
        with open(os.path.join(assignment.alternatives, name), encoding="utf-8") as handle:
            write("alternative", name[:-3], handle.read())
    for mistake in catalog:
        write("mistake", mistake.id, mistake.apply(source), part=mistake.part, about=mistake.en,
              target=mistake.target,
              reach=tuple(sorted(catalog.callers(mistake.target) - {mistake.target})))
    return items


def alternatives(assignment):
    """The file names of the assignment's correct alternatives (none without the folder)."""
    try:
        names = os.listdir(assignment.alternatives)
    except FileNotFoundError:
        return []
    return sorted(n for n in names if n.endswith(".py"))


def validate(options, jobs=1, out_dir=None, stream=None, assignment=None):
    """Grade the whole zoo of `assignment` (else the options', else the default one) with
    that assignment's suite and solution; returns (all ok, [(Expectation, ok, detail)])."""
    options, assignment = _options_for(options, assignment)
    workdir = tempfile.mkdtemp(prefix="attnkit-validate-")
    try:
        items = expectations(workdir, options.solution, assignment)
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


def docs_path(assignment):
    """Where an assignment's catalog is written up (Assignment.mistakes_docs)."""
    return assignment.mistakes_docs


def _wrap(words, width=85):
    """Markdown prose as lines of at most `width` characters."""
    lines, line = [], ""
    for word in words.split():
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    return lines + ([line] if line else [])


def docs_table(rows, date, assignment=None):
    """An assignment's docs/mistakes*.md (`docs_path`) from a validation: one row per catalog
    mistake with what it cost. The catalog's DOCS say in the assignment's words how a
    mistake spreads ("spread") and what the alternatives are ("alternatives")."""
    assignment = _assignment(assignment)
    docs = Catalog.of(assignment).docs
    table = os.path.relpath(os.path.join(assignment.folder, "mistakes.py"), paths.KIT_ROOT)
    folder = os.path.relpath(assignment.alternatives, paths.KIT_ROOT)
    command = "grader validate" + ("" if assignment.is_default()
                                   else f" --assignment {assignment.name}")
    spread = f" {docs['spread']}" if docs.get("spread") else ""
    lines = [
        "# The mistake catalog", "",
        "Each row is a realistic student mistake, applied to the solution as a small edit",
        f"(`{table}`, where each also has its sentence in Chinese).",
        "`grader validate` grades them all and checks that each one loses points in its part",
        "and is diagnosed as itself; `tests/test_zoo.py` runs it in CI and checks that this",
        *_wrap("table names every mistake. A mistake in an early part shows in the parts built "
               f"on it{spread}; with error carried forward (the default) it costs only its own "
               "part: their cases are judged on their own code, run again with the failing "
               "function answered by the solution (`grader validate` checks it for every "
               "mistake below)."), "",
        f"Scores below are from one run of `grader validate` ({date}, CPU machine: the GPU",
        f"part graded by the device-discipline tests); `{command} --docs "
        f"{docs_path(assignment)}`", "writes this file again from a run.", "",
        "| mistake | part | your result is exactly what you get if ... | points left in that part "
        f"| total /{assignment.total_points:g} | diagnosed as |",
        "|---|---|---|---|---|---|",
    ]
    for item, ok, detail in rows:
        if item.kind != "mistake":
            continue
        result = item.result
        score, top = result.by_part().get(item.part, (0.0, 0.0)) if result else (0, 0)
        named = [d.get("mistake") for d in (result.diagnoses if result else [])
                 if d.get("part") == item.part]
        lines.append(f"| `{item.name}` | {item.part} | {item.about} | {score:g}/{top:g} | "
                     f"{result.score:g} | {named[0] if named and named[0] else '(nothing)'}"
                     f"{'' if ok else ' !!'} |" if result else
                     f"| `{item.name}` | {item.part} | {item.about} | ? | ? | {detail} |")
    if alternatives(assignment):
        lines += ["", *_wrap("Correct solutions written in other styles get full marks and no "
                             f"diagnosis (`{folder}/`)" + (f": {docs['alternatives']}"
                                                           if docs.get("alternatives") else "."))]
    return "\n".join(lines + [""])
