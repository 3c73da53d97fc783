"""A hidden suite's case table, read from its assignment, and the questions asked of it."""
from .checks import CHECKS


class Table:
    """The cases of `assignment` (tests_hidden/<name>/cases.py's CASES), in table order."""

    def __init__(self, assignment, cases=None):
        self.assignment = assignment
        self.all = list(assignment.cases().CASES if cases is None else cases)
        self.by_id = {case.id: case for case in self.all}

    def __iter__(self):
        return iter(self.all)

    def cases(self, *checks):
        return [c for c in self.all if c.check in checks]

    def same_target(self, case):
        """The `match` cases of the same function or module as `case` that another device
        can re-run: not those in training mode, whose dropout masks come from the device's
        own generator (CUDA draws other masks than the CPU from the same seed)."""
        return [c for c in self.all if c.check == "match" and c.target == case.target
                and c.mode != "train"]

    def evidence(self, target):
        """The non-degenerate `match` cases of `target`: passing one shows the function works."""
        return [c for c in self.all if c.check == "match" and c.target == target
                and not c.degenerate]

    def problems(self):
        """What is wrong with the table itself, as messages naming the case: an id (part and
        name) used twice, a part the declaration does not have, a target its api and given
        do not name, a kind of check the library does not know."""
        declared = self.assignment
        where = f"{declared.folder}/cases.py"
        known = set(declared.api) | set(declared.given)
        found, seen = [], set()
        for case in self.all:
            if case.id in seen:
                found.append(f"{where}: the case {case.id!r} is in the table twice (a case is "
                             "known by its part and name)")
            seen.add(case.id)
            if case.part not in declared.part_names:
                found.append(f"{where}: the case {case.id!r} grades part {case.part!r}, which "
                             "the declaration does not have")
            if case.target not in known:
                found.append(f"{where}: the case {case.id!r} calls {case.target!r}, which the "
                             "declaration's api and given do not name")
            if case.check not in CHECKS:
                found.append(f"{where}: the case {case.id!r} has check {case.check!r} (known: "
                             f"{', '.join(CHECKS)})")
        return found

    def max_points(self):
        """Points per part on any machine (the device and cuda variants count once)."""
        totals = dict.fromkeys(self.assignment.part_names, 0)
        for case in self.all:
            if case.check != "cuda":
                totals[case.part] = totals.get(case.part, 0) + case.points
        return totals


def points_problems(assignment, totals):
    """Why the points of the tests that run (`totals`: {part: points}) are not what the
    declaration gives each part and the whole: a list of messages, empty when they are."""
    where = f"{assignment.folder}/assignment.toml"
    total = sum(totals.values())
    problems = []
    if total != assignment.total_points:
        problems.append(
            f"the hidden cases' points add up to {total:g}, not the assignment's declared total "
            f"of {assignment.total_points:g} ({where}): change the cases' points or the "
            "declaration's")
    for part in assignment.parts:
        got = totals.get(part.name, 0)
        if got != part.points:
            problems.append(f"part {part.name!r}: its cases' points add up to {got:g}, not the "
                            f"{part.points:g} the declaration gives it ({where})")
    for name in totals:
        if name not in assignment.part_names:
            problems.append(f"cases of part {name!r}, which the declaration does not name "
                            f"({where})")
    return problems
