"""The hidden suites' library (grader/suite/) names no assignment: a second, tiny one, written
here as an instructor would (a declaration, a three-case table, a one-function solution), is
graded by `grader grade --assignment tiny` in a copy of the kit: its solution gets 100, an
empty stub 0, and a wrong one loses exactly its cases' points."""
import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import KIT, copy_kit
from grading import grades, run_grader

DECLARATION = """\
name = "tiny"
title = "Doubling"
module = "tiny"
solution = "solutions/tiny.py"
student_folder = "assignments/tiny"
api = ["double"]
total_points = 100

[calls]
double = []

[[parts]]
name = "doubling"
points = 100
targets = ["double"]
short = "dbl"
"""

CASES = """\
import os

import torch

from grader.assignment import load_folder
from grader.suite.case import Inputs, case_class, device_cases

ASSIGNMENT = load_folder(os.path.dirname(os.path.abspath(__file__)))
Case = case_class(ASSIGNMENT)
r = Inputs("doubling")

CASES = [
    Case("doubling", "a vector", 30, "double", (r.randn(5),)),
    Case("doubling", "a float64 matrix", 30, "double", (r.randn(2, 3, dtype=torch.float64),)),
    Case("doubling", "its gradient", 40, "double", (r.randn(4),), grad_args=(0,)),
    *device_cases(ASSIGNMENT, points=0, case=Case),  # no GPU part: none
]
"""

SOLUTION = '''\
import torch


def double(values):
    """Twice the values."""
    return values * 2
'''

STUB = '''\
import torch


def double(values):
    """Twice the values."""
    raise NotImplementedError
'''

# right on the vector, wrong in float64 (it casts to float32): loses exactly that case
HALF = '''\
import torch


def double(values):
    return (values * 2).float()
'''


def _kit(tmp_path, cases=CASES):
    """A copy of the kit's grader with only the tiny assignment declared."""
    kit = tmp_path / "kit"
    copy_kit(kit, ("grader",))
    suite = kit / "tests_hidden" / "tiny"
    suite.mkdir(parents=True)
    (suite / "assignment.toml").write_text(DECLARATION, encoding="utf-8")
    (suite / "cases.py").write_text(cases, encoding="utf-8")
    (suite / "mistakes.py").write_text("MISTAKES = []  # no mistake catalogued yet\n",
                                       encoding="utf-8")
    (suite / "conftest.py").write_text('pytest_plugins = ["grader.suite.plugin"]\n',
                                       encoding="utf-8")
    # every kind of check, though the table has only `match` cases: the others collect nothing
    (suite / "test_tiny.py").write_text(
        "from grader.suite.tests import (test_device_discipline, test_dropout_acts_on_the_weights,"
        "  # noqa: F401\n    test_eval_mode_is_deterministic, test_matches_reference, test_on_cuda)\n",
        encoding="utf-8")
    shutil.copy(os.path.join(KIT, "tests_hidden", "attention", "pytest.ini"), suite)
    (kit / "solutions").mkdir()
    (kit / "solutions" / "tiny.py").write_text(SOLUTION, encoding="utf-8")
    (kit / "assignments" / "tiny").mkdir(parents=True)
    return kit


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("tiny")
    kit = _kit(tmp_path)
    subs = tmp_path / "subs"
    subs.mkdir()
    for name, text in (("right", SOLUTION), ("stub", STUB), ("half", HALF)):
        (subs / f"{name}.py").write_text(text, encoding="utf-8")
    done = run_grader("grade", *sorted(str(p) for p in subs.iterdir()), "--assignment", "tiny",
                      "--out", str(tmp_path / "out"), "--jobs", "1", kit=kit, timeout=900)
    rows = {}
    if (tmp_path / "out" / "grades.csv").exists():
        rows = grades(tmp_path / "out")
    return done, rows, tmp_path / "out"


@pytest.mark.slow
def test_the_solution_gets_100_and_an_empty_stub_0(graded):
    done, rows, out = graded
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert set(rows) == {"right", "stub", "half"}
    assert (rows["right"]["status"], rows["right"]["total"], rows["right"]["max"]) == \
        ("graded", "100", "100")
    assert (rows["stub"]["status"], rows["stub"]["total"]) == ("graded", "0")
    results = json.loads((out / "right" / "results.json").read_text(encoding="utf-8"))
    assert sorted(t["name"] for t in results["tests"]) == [
        "doubling: a float64 matrix", "doubling: a vector", "doubling: its gradient"]


@pytest.mark.slow
def test_the_parts_are_the_declarations(graded):
    """grades.csv's part columns and the console's headings come from assignment.toml."""
    done, rows, _ = graded
    assert [k for k in rows["right"] if k.startswith("doubling")] == ["doubling (/100)"]
    header = next(line.split() for line in done.stdout.splitlines()
                  if line.split()[:2] == ["submission", "score"])
    assert header[2:] == ["dbl", "time", "note"]


@pytest.mark.slow
def test_a_wrong_case_costs_its_points_with_the_declarations_words(graded):
    """The float64 case (30 points) fails; the message names the case and what came back."""
    _, rows, out = graded
    assert rows["half"]["total"] == "70"
    results = json.loads((out / "half" / "results.json").read_text(encoding="utf-8"))
    failed = [t for t in results["tests"] if t.get("status") == "failed"]
    assert [t["name"] for t in failed] == ["doubling: a float64 matrix"]
    assert "double(values (2, 3) float64)" in failed[0]["output"]


def test_the_result_types_are_a_leaf_the_reports_read_without_the_batch():
    """report/ -> grade/outcome.py -> report/ was a cycle: the types now live in
    grader/outcomes.py, which imports nothing of the grader, and no report module imports
    grader.grade."""
    code = ("import sys, grader.outcomes\n"
            "before = sorted(k for k in sys.modules if k.startswith('grader.') and k != 'grader.outcomes')\n"
            "import grader.report.gradescope, grader.report.feedback, grader.report.gradebook, "
            "grader.report.html, grader.report.console, grader.report.summary\n"
            "print(before, sorted(k for k in sys.modules if k.startswith('grader.grade')))\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=KIT, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTHONPATH": KIT})
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[] []"


def test_a_table_that_does_not_fit_its_declaration_stops_the_batch_naming_each_case(tmp_path):
    """A case twice, a target the api does not name, a kind of check it does not know and
    points the part does not have: the library refuses the table before grading anything, each problem named."""
    wrong = CASES.replace(
        'Case("doubling", "a vector", 30, "double", (r.randn(5),)),',
        'Case("doubling", "a vector", 30, "double", (r.randn(5),)),\n'
        '    Case("doubling", "a vector", 10, "double", (r.randn(5),)),\n'
        '    Case("doubling", "a typo", 5, "dubble", (r.randn(5),)),\n'
        '    Case("doubling", "a guess", 5, "double", (r.randn(5),), check="guess"),')
    assert wrong != CASES
    kit = _kit(tmp_path, wrong)
    (tmp_path / "right.py").write_text(SOLUTION, encoding="utf-8")
    done = run_grader("grade", str(tmp_path / "right.py"), "--assignment", "tiny", "--out",
                      str(tmp_path / "out"), "--jobs", "1", kit=kit, timeout=900)
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-2000:]
    assert "the case 'doubling: a vector' is in the table twice" in done.stderr
    assert "the case 'doubling: a typo' calls 'dubble', which the declaration's api" in done.stderr
    # a kind of check the library does not register (grader/suite/checks.py KINDS), the known
    # ones named in their order (its points count in no part's total)
    assert ("the case 'doubling: a guess' has check 'guess' (known: match, eval, dropout, "
            "device, cuda)") in done.stderr
    assert ("part 'doubling': its cases' points add up to 115, not the 100 the declaration "
            "gives it") in done.stderr
    assert not (tmp_path / "out" / "grades.csv").exists()


def test_a_kind_of_check_is_one_entry_its_check_and_its_test():
    """grader/suite/checks.py KINDS: each kind's hidden test (grader/suite/tests.py) is made
    from its entry, runs its check over the cases of its kind, and is what the suites import."""
    import ast
    from grader.suite import checks, tests
    names = ["match", "eval", "dropout", "device", "cuda"]
    assert [kind.name for kind in checks.KINDS] == list(checks.CHECKS) == names
    assert [kind.check for kind in checks.KINDS] == [checks.check_match, checks.check_eval,
                                                     checks.check_dropout, checks.check_device,
                                                     checks.check_cuda]
    assert tests.__all__ == ["test_matches_reference", "test_eval_mode_is_deterministic",
                             "test_dropout_acts_on_the_weights", "test_device_discipline",
                             "test_on_cuda"]
    for kind in checks.KINDS:
        test = getattr(tests, kind.test)
        assert test.__name__ == kind.test and test.__doc__ == kind.about and kind.about
        assert [m.args for m in test.pytestmark if m.name == "cases"] == [(kind.name,)]
    # a test made from an entry runs that entry's check with the suite's fixtures
    ran = []
    made = tests._test_of(checks.CheckKind("spy", lambda *args: ran.append(args), "test_spy", "A spy."))
    made("suite", "case", "student", "reference")
    assert ran == [("suite", "case", "student", "reference")] and made.__name__ == "test_spy"
    for name in ("attention", "transformer"):
        path = os.path.join(KIT, "tests_hidden", name, f"test_{name}.py")
        with open(path, encoding="utf-8") as handle:
            imported = [alias.name for node in ast.walk(ast.parse(handle.read()))
                        if isinstance(node, ast.ImportFrom) for alias in node.names]
        assert imported and set(imported) <= set(tests.__all__), (name, imported)
