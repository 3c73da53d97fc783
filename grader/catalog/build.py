"""A catalog mistake as an implementation: the solution with the mistake's edit, run here.

It is trusted code (the instructor's solution, edited by the catalog), so it runs in the
trusted process like the reference, with the same probe runner, and answers `run` like a
Submission does: the checks of the hidden suite can grade it as they grade a student.
"""
import types

from ..harness import memo
from ..harness.implementations import earlier_solutions_of
from ..harness.failures import StudentFailure
from ..harness.results import ProbeResult
from ..sandbox.runtime.probes import run_probe

_MODULES = {}  # (solution path, module, mistake id) -> module: built once per process


def mistake_module(mistake, solution_path, module):
    """The solution at `solution_path` with `mistake` made, as the module
    `<module>_mistake_<id>` (`module`: the assignment's module name, Catalog.module)."""
    key = (solution_path, module, mistake.id)
    if key not in _MODULES:
        with open(solution_path, encoding="utf-8") as handle:
            source = mistake.apply(handle.read())
        built = types.ModuleType(f"{module}_mistake_{mistake.id.replace('-', '_')}")
        built.__file__ = f"<mistake {mistake.id}>"
        with earlier_solutions_of(solution_path):  # builds_on: earlier solutions by name
            exec(compile(source, built.__file__, "exec"), built.__dict__)
        _MODULES[key] = built
    return _MODULES[key]


class MistakeImplementation:
    """`mistake` in the solution at `solution_path`, graded like a submission; `module`: the
    assignment's module name (Catalog.module)."""

    diagnosable = False  # the checks never diagnose a mistake with the catalog itself

    def __init__(self, mistake, solution_path, module):
        self.mistake = mistake
        self.solution_path = solution_path
        self.module = mistake_module(mistake, solution_path, module)

    def raw(self, probe):
        """The probe's raw result (what a worker would send), never raising; computed once
        per batch (harness/memo.py), since a case's probe is the same for every submission."""
        owner = ("mistake", self.solution_path, self.mistake.id)
        raw = memo.get(owner, probe)
        if raw is None:
            raw = memo.put(owner, probe, run_probe(self.module, probe))
        return raw

    def run(self, probe, call_text, expected=None):
        result = ProbeResult(self.raw(probe), probe, "mistake", call_text)
        return result.check_ran()


__all__ = ["MistakeImplementation", "StudentFailure", "mistake_module"]
