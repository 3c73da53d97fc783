"""An assignment that builds on an earlier one (the declaration's `builds_on`): in the worker
the submission is imported under its declared module name, and the earlier module is
importable by its own: the student's earlier file (`provide = "student"`) or the earlier
solution (`provide = "given"`). Nothing of a solution reaches a worker unless the
declaration says `given`. On the trusted side the later reference imports the earlier
solution by name, and sys.modules is left as it was.

Every kit here is a small one written in tmp_path (two assignments, `first` and `second`),
graded by real workers at each isolation level this machine offers."""
import json
import os
import stat
import subprocess
import sys

import pytest

from conftest import isolation_levels, stage_folder
from grader import assignment as assignments
from grader.sandbox import stage
from grader.sandbox.client import Worker, WorkerFailure
from grader.sandbox.limits import Limits
from grading import grades, run_grader

MARKER = "FIRST-SOLUTION-MARKER-5d1c"
FIRST_SOLUTION = f'''# {MARKER}
### BEGIN INSTRUCTOR ONLY
# INSTRUCTOR-NOTE-31ab: for the instructor's eyes only
### END INSTRUCTOR ONLY
def double(x):
    return x * 2
'''
GIVEN_FIRST = f"# {MARKER}\ndef double(x):\n    return x * 2\n"   # as the worker gets it
SECOND_SOLUTION = '''from first import double


def quadruple(x):
    return double(double(x))
'''
DECLARATION = '''name = "{name}"
title = "{name}"
module = "{module}"
solution = "solutions/{module}.py"
student_folder = "assignments/{name}"
api = ["{api}"]
total_points = 10
builds_on = [{builds_on}]

[calls]
{api} = []

[[parts]]
name = "{api}"
points = 10
targets = ["{api}"]
short = "{api}"
'''
# what the submission saw while it was imported, printed as one line
SPY = r'''
import json, os, sys
facts = {"name": __name__, "registered": sys.modules.get("second") is not None,
         "attention_registered": "attention" in sys.modules}
try:
    import first
    facts["first_file"] = os.path.basename(first.__file__)
    facts["double"] = first.double(21)
except ImportError as error:
    facts["import_error"] = str(error)
contents = {}
for folder, _, names in os.walk("."):
    for name in names:
        with open(os.path.join(folder, name), "rb") as handle:
            contents[os.path.join(folder, name)] = handle.read().decode("latin-1")
facts["files"] = sorted(contents)
marker = "FIRST-SOLUTION-" + "MARKER-5d1c"   # never whole in this file
facts["marker_seen"] = any(marker in text for text in contents.values())
print("FACTS" + json.dumps(facts))

def quadruple(x):
    return x * 4
'''
STUDENT_FIRST = "def double(x):\n    return x * 3\n"   # the student's own earlier work
LEVELS = isolation_levels()
LIMITS = Limits(processes=16, file_size_mb=8, cpu_seconds=50, memory_mb=1500)


def _kit(root, provide, first_builds_on=""):
    """A kit of two assignments: `second` builds on `first` with `provide`."""
    for name, module, api, source, builds_on in (
            ("first", "first", "double", FIRST_SOLUTION, first_builds_on),
            ("second", "second", "quadruple", SECOND_SOLUTION,
             f'{{assignment = "first", provide = "{provide}"}}' if provide else "")):
        (root / "tests_hidden" / name).mkdir(parents=True)
        (root / "assignments" / name).mkdir(parents=True)
        (root / "tests_hidden" / name / "assignment.toml").write_text(DECLARATION.format(
            name=name, module=module, api=api, builds_on=builds_on))
    (root / "solutions").mkdir()
    (root / "solutions" / "first.py").write_text(FIRST_SOLUTION)
    (root / "solutions" / "second.py").write_text(SECOND_SOLUTION)
    return str(root)


def _submission(folder, with_first):
    folder.mkdir()
    (folder / "second.py").write_text(SPY)
    if with_first:
        (folder / "first.py").write_text(STUDENT_FIRST)
    return str(folder / "second.py")


def _run(level, kit, submission):
    """Start a worker for `submission` as the kit's `second`; (staged files {relative path:
    (bytes, mode)} as the trusted side put them in the worker's folder, load reply, facts)."""
    second = assignments.load("second", kit_root=kit)
    stage_dir = stage_folder()
    os.chmod(stage_dir, 0o711)
    worker = Worker(submission, level, LIMITS, stage_dir, assignment=second)
    try:
        worker.start()
        staged = {}
        for folder, _, names in os.walk(worker.view.work_dir):
            for name in names:
                path = os.path.join(folder, name)
                with open(path, "rb") as handle:
                    staged[os.path.relpath(path, worker.view.work_dir)] = (
                        handle.read(), stat.S_IMODE(os.stat(path).st_mode))
        reply = worker.request({"op": "load", "names": ["quadruple"]}, timeout=60)
    finally:
        worker.stop()
    out, err = worker.output()
    line = [row for row in out.splitlines() if row.startswith("FACTS")]
    return staged, reply, (json.loads(line[0][5:]) if line else None), err


@pytest.mark.parametrize("level", LEVELS, ids=[lv.level for lv in LEVELS])
def test_given_stages_the_earlier_solution_read_only_under_its_module_name(tmp_path, level):
    kit = _kit(tmp_path / "kit", "given")
    # the student handed in an attention-like earlier file too: the declaration chose the
    # given one, which replaces it
    staged, reply, facts, err = _run(level, kit, _submission(tmp_path / "sub", with_first=True))
    assert reply["ok"] is True, (reply, err)
    assert staged["first.py"] == (GIVEN_FIRST.encode(), 0o444)   # instructor-only: dropped
    assert sorted(staged) == ["first.py", "second.py"]
    assert facts["name"] == "second" and facts["registered"] is True
    assert facts["attention_registered"] is False   # the default assignment's name is not used
    assert facts["first_file"] == "first.py"
    assert facts["double"] == 42                     # the solution's 2 * 21, not the student's 63
    assert facts["marker_seen"] is True


def test_a_fresh_worker_gets_the_module_name_as_a_forked_one_does(tmp_path, monkeypatch):
    """The name travels on the fresh worker's command line and in a forked one's plan."""
    monkeypatch.setenv("ATTNKIT_WORKER_START", "fresh")
    kit = _kit(tmp_path / "kit", "given")
    staged, reply, facts, err = _run(LEVELS[0], kit, _submission(tmp_path / "sub", False))
    assert reply["ok"] is True, (reply, err)
    assert facts["name"] == "second" and facts["double"] == 42


@pytest.mark.parametrize("level", LEVELS, ids=[lv.level for lv in LEVELS])
def test_student_imports_the_students_own_earlier_file_and_no_byte_of_the_solution(tmp_path, level):
    kit = _kit(tmp_path / "kit", "student")
    staged, reply, facts, err = _run(level, kit, _submission(tmp_path / "sub", with_first=True))
    assert reply["ok"] is True, (reply, err)
    assert facts["name"] == "second" and facts["registered"] is True
    assert facts["double"] == 63                     # the student's own 3 * 21
    assert staged["first.py"][0] == STUDENT_FIRST.encode()
    solution = FIRST_SOLUTION.encode()
    for name, (data, _) in staged.items():           # as the trusted side staged it
        assert MARKER.encode() not in data and solution not in data, name
    assert facts["marker_seen"] is False             # as the worker saw its folder
    assert sorted(staged) == ["first.py", "second.py"]


@pytest.mark.parametrize("level", LEVELS[:1], ids=[lv.level for lv in LEVELS[:1]])
def test_student_without_the_earlier_file_fails_to_import_it_and_gets_no_solution(tmp_path, level):
    kit = _kit(tmp_path / "kit", "student")
    staged, reply, facts, err = _run(level, kit, _submission(tmp_path / "sub", with_first=False))
    assert sorted(staged) == ["second.py"]
    assert facts["import_error"] == "No module named 'first'"
    assert reply["ok"] is True                       # the spy caught it; a real file would not


def test_without_builds_on_nothing_earlier_is_staged(tmp_path):
    kit = _kit(tmp_path / "kit", "")
    second = assignments.load("second", kit_root=kit)
    assert stage.imports_of(second) == stage.Imports("second", (), ())
    work = tmp_path / "work"
    work.mkdir()
    assert stage.given_files(stage.imports_of(second)) == {}
    stage.stage_given({}, str(work))
    assert os.listdir(work) == []


def test_imports_name_the_earlier_modules_as_declared(tmp_path):
    given = assignments.load("second", kit_root=_kit(tmp_path / "g", "given"))
    student = assignments.load("second", kit_root=_kit(tmp_path / "s", "student"))
    assert stage.imports_of(given) == stage.Imports(
        "second", (("first", str(tmp_path / "g" / "solutions" / "first.py")),), ())
    assert stage.imports_of(student) == stage.Imports("second", (), (("first", "first"),))
    assert stage.imports_of(student).earlier_file("first") == "first.py"
    assert stage.imports_of(given).earlier_file("first") is None   # given: never the student's
    assert stage.imports_of(student).earlier_file("torch") is None


def test_a_given_solution_needing_an_undeclared_earlier_module_is_refused(tmp_path):
    # first builds on zero; second gets first's solution, which would import zero in the
    # worker, and does not declare zero
    kit = tmp_path / "kit"
    _kit(kit, "given", first_builds_on='{assignment = "zero", provide = "student"}')
    (kit / "tests_hidden" / "zero").mkdir()
    (kit / "assignments" / "zero").mkdir()
    (kit / "tests_hidden" / "zero" / "assignment.toml").write_text(DECLARATION.format(
        name="zero", module="zero", api="zero", builds_on=""))
    (kit / "solutions" / "zero.py").write_text("def zero(x):\n    return x * 0\n")
    second = assignments.load("second", kit_root=str(kit))
    with pytest.raises(ValueError) as refused:
        stage.imports_of(second)
    assert str(refused.value) == (
        "second builds on first (given), whose solution imports zero (first builds on zero): "
        "declare zero in second's builds_on too")
    worker = Worker(str(kit / "solutions" / "second.py"), LEVELS[-1], LIMITS,
                    str(tmp_path), assignment=second)
    with pytest.raises(WorkerFailure) as failed:
        worker.start()
    worker.stop()
    assert failed.value.kind == "start"
    assert "declare zero in second's builds_on too" in failed.value.reason


@pytest.mark.parametrize("name, why", [
    ("json", "taken by a module the worker's Python has"),
    ("torch", "taken by a module the worker's Python has"),
    ("numpy", "taken by a module the worker's Python has"),
    ("sympy", "taken by a module the worker's Python has"),    # installed with torch
    ("class", "is not a Python name"),
    ("first-part", "is not a Python name"),
    ("", "is not a Python name"),
    (None, "is not a Python name"),
    ("m" * 65, "longer than 64 characters"),
])
def test_module_names_a_worker_may_not_register_are_refused(name, why):
    with pytest.raises(ValueError) as refused:
        stage.check_module_name(name)
    assert why in str(refused.value)
    assert stage.check_module_name("m" * 64) == "m" * 64


def test_the_worker_itself_refuses_a_bad_module_name():
    """The worker checks the name it is given again (a second line of defence): given one
    that is taken or not a name, it exits 73 before it reads a request."""
    runtime = os.path.dirname(stage.RUNTIME_DIR)
    for name, said in (("json", "the module name 'json' is taken"),
                       ("sympy", "the module name 'sympy' is taken"),
                       ("a.b", "'a.b' is not a module name"),
                       ("x" * 65, "is not a module name")):
        code = (f"import sys; sys.path.insert(0, {runtime!r}); from runtime import worker, "
                "guards, probes, protocol; import os; r, w = os.pipe(); "
                f"sys.exit(worker.run(w, {{}}, 'x.py', guards, probes, protocol, {name!r}))")
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              timeout=120, stdin=subprocess.DEVNULL)
        assert done.returncode == 73, done.stderr[-2000:]
        assert said in done.stderr


# -- the trusted side: the later reference imports the earlier solution by name ---------------
def test_the_later_reference_imports_the_earlier_solution_by_name_and_leaves_sys_modules_alone(
        tmp_path):
    from grader.harness.implementations import Reference
    kit = _kit(tmp_path / "kit", "student")   # the reference builds on the reference either way
    second = assignments.load("second", kit_root=kit)
    before = object()
    sys.modules["first"] = before             # something else of that name, already there
    try:
        reference = Reference(os.path.join(kit, "solutions", "second.py"), second)
        assert sys.modules["first"] is before
    finally:
        del sys.modules["first"]
    assert reference.module.quadruple(3) == 12                 # 2 * 2 * 3: the solution's double
    assert reference.module.double.__module__ == "first_reference"
    Reference(os.path.join(kit, "solutions", "second.py"), second)
    assert "first" not in sys.modules and "first_reference" not in sys.modules
    first = Reference(os.path.join(kit, "solutions", "first.py"),
                      assignments.load("first", kit_root=kit))
    assert first.module.double(5) == 10 and "first" not in sys.modules


def test_assignments_that_build_on_each_other_are_a_grader_error(tmp_path):
    from grader.harness.failures import GraderError
    from grader.harness.implementations import Reference
    kit = tmp_path / "kit"
    _kit(kit, "given", first_builds_on='{assignment = "second", provide = "given"}')
    with pytest.raises(GraderError) as refused:
        Reference(str(kit / "solutions" / "second.py"),
                  assignments.load("second", kit_root=str(kit)))
    assert "first builds on second, which builds on first" in str(refused.value)
    assert "first" not in sys.modules and "second" not in sys.modules


def test_a_catalog_mistake_in_the_later_solution_imports_the_earlier_one_too(tmp_path):
    from grader.catalog.build import MistakeImplementation
    from grader.catalog.mistakes import Mistake
    kit = _kit(tmp_path / "kit", "given")
    assignments.load("second", kit_root=kit)
    mistake = Mistake("once", "quadruple", "quadruple", "doubled once",
                      (("double(double(x))", "double(x)"),))
    from grader.harness import implementations
    solution = os.path.join(kit, "solutions", "second.py")
    with implementations.earlier_solutions_of(solution):   # found in the solution's own kit
        assert sys.modules["first"].double(4) == 8
    assert "first" not in sys.modules
    built = MistakeImplementation(mistake, solution, "second")
    assert built.module.quadruple(3) == 6                   # double(3): the mistake, made
    assert "first" not in sys.modules


def test_a_missing_earlier_file_is_asked_for_by_name(tmp_path):
    from grader import i18n
    from grader.harness.implementations import explain_import_error
    imports = stage.Imports("second", (), (("first", "first"),))
    error = {"type": "ModuleNotFoundError", "message": "No module named 'first'"}
    said = explain_import_error(error, imports)
    assert said.startswith(
        "importing second.py failed: it imports `first`, the module of an earlier assignment "
        "this one builds on, and no first.py was handed in with it. Hand in your first.py "
        "beside second.py (in the same folder or zip).")
    other = explain_import_error({"type": "ModuleNotFoundError",
                                  "message": "No module named 'numpyy'"}, imports)
    assert "first.py" not in other and "numpyy" in other     # any other module: the old advice
    given = stage.Imports("second", (("first", "/kit/solutions/first.py"),), ())
    assert "no first.py was handed in" not in explain_import_error(error, given)
    i18n.set_language("zh")
    try:
        assert explain_import_error(error, imports).startswith(
            "导入 second.py 失败：它导入了 `first`，即本次作业所基于的前一次作业的模块，但提交中没有 "
            "first.py。请把你自己的 first.py 和 second.py 放在一起提交（同一个文件夹或同一个 zip 中）。")
    finally:
        i18n.set_language("en")


def test_a_submission_without_its_earlier_file_is_told_which_file_it_needs(tmp_path):
    import torch
    from grader.harness import StudentFailure, Submission
    kit = _kit(tmp_path / "kit", "student")
    folder = tmp_path / "sub"
    folder.mkdir()
    (folder / "second.py").write_text(SECOND_SOLUTION)       # imports first, not handed in
    stage_dir = stage_folder()
    os.chmod(stage_dir, 0o711)
    student = Submission(str(folder / "second.py"), LEVELS[0], LIMITS, stage_dir,
                         assignment=assignments.load("second", kit_root=kit))
    try:
        with pytest.raises(StudentFailure) as failed:
            student.run({"target": "quadruple", "args": [torch.ones(2)], "kwargs": {}},
                        "quadruple(X)")
    finally:
        student.stop()
    assert "it imports `first`, the module of an earlier assignment" in str(failed.value)
    assert "Hand in your first.py beside second.py" in str(failed.value)
    (folder / "first.py").write_text(STUDENT_FIRST)           # handed in: it loads and runs
    student = Submission(str(folder / "second.py"), LEVELS[0], LIMITS, stage_dir,
                         assignment=assignments.load("second", kit_root=kit))
    try:
        result = student.run({"target": "quadruple", "args": [torch.ones(2)], "kwargs": {}},
                             "quadruple(X)")
    finally:
        student.stop()
    assert result.tensor().tolist() == [9.0, 9.0]           # the student's own double: 3 * 3


def test_a_given_solution_that_cannot_be_staged_stops_the_worker_before_it_starts(tmp_path):
    kit = tmp_path / "kit"
    _kit(kit, "given")
    (kit / "solutions" / "first.py").write_text("### BEGIN INSTRUCTOR ONLY\ndef double(x):\n")
    second = assignments.load("second", kit_root=str(kit))
    with pytest.raises(ValueError) as refused:
        stage.given_files(stage.imports_of(second))
    assert "the given first.py" in str(refused.value)
    assert "### BEGIN INSTRUCTOR ONLY is never closed" in str(refused.value)
    worker = Worker(_submission(tmp_path / "sub", False), LEVELS[-1], LIMITS, str(tmp_path),
                    assignment=second)
    with pytest.raises(WorkerFailure) as failed:
        worker.start()
    worker.stop()
    assert failed.value.kind == "start" and "the given first.py" in failed.value.reason


def test_a_submission_named_as_the_given_module_is_never_replaced_by_the_solution(tmp_path):
    """Staged under the earlier module's name (first.py), the work would be overwritten by
    the given solution and graded as if it were the student's: the worker refuses to start,
    the grader's error, never a grade."""
    kit = _kit(tmp_path / "kit", "given")
    folder = tmp_path / "sub"
    folder.mkdir()
    (folder / "first.py").write_text(SPY)
    worker = Worker(str(folder / "first.py"), LEVELS[-1], LIMITS, str(tmp_path),
                    assignment=assignments.load("second", kit_root=kit))
    with pytest.raises(WorkerFailure) as failed:
        worker.start()
    worker.stop()
    assert failed.value.kind == "start"
    assert failed.value.reason == (
        "the grader could not start a worker: the submission's file is named first.py, as the "
        "given earlier module is: it must be staged as second.py")


def test_a_classroom_repo_holding_both_files_is_staged_by_intake_and_imports_its_own(tmp_path):
    """provide = student end to end: a repository holding the earlier file beside the later
    one (as GitHub Classroom hands it in) goes through intake, which stages the student's
    other .py files beside <module>.py, and the worker imports the student's own first."""
    from grader import intake
    kit = _kit(tmp_path / "kit", "student")
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "second.py").write_text(SPY)
    (repo / "first.py").write_text(STUDENT_FIRST)
    (repo / "README.md").write_text("my work\n")
    staged = intake.stage(str(repo), str(tmp_path / "staged"), "alice", module="second")
    assert staged.error is None and os.path.basename(staged.file) == "second.py"
    files, reply, facts, err = _run(LEVELS[0], kit, staged.file)
    assert reply["ok"] is True, (reply, err)
    assert sorted(files) == ["first.py", "second.py"]
    assert facts["double"] == 63 and facts["marker_seen"] is False


def _notebook(path, *cells):
    """A minimal nbformat 4 notebook of code cells."""
    path.write_text(json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        {"cell_type": "code", "metadata": {}, "source": cell, "outputs": [],
         "execution_count": None} for cell in cells]}), encoding="utf-8")


def test_an_earlier_module_handed_in_as_a_notebook_is_converted_and_imported(tmp_path):
    """provide = student, as a notebook course hands both in: second.ipynb and first.ipynb
    side by side. Intake converts first.ipynb to first.py as it converts the work, and the
    worker imports the student's own first (3 x 21 x ... : 63), never the solution's. Only a
    module the declaration names is converted; a .py beside it wins over its notebook."""
    from grader import intake
    kit = _kit(tmp_path / "kit", "student")
    repo = tmp_path / "repo"
    repo.mkdir()
    _notebook(repo / "second.ipynb", SPY)
    _notebook(repo / "first.ipynb", "import math\n", STUDENT_FIRST)
    _notebook(repo / "scratch.ipynb", "x = 1\n")
    staged = intake.stage(str(repo), str(tmp_path / "staged"), "alice", module="second",
                          earlier=("first",))
    assert staged.error is None and os.path.basename(staged.file) == "second.py"
    assert sorted(os.listdir(tmp_path / "staged")) == ["first.py", "second.py"]
    assert any(note.startswith("first.ipynb was converted to a module: 2 code cells")
               for note in staged.notes), staged.notes
    files, reply, facts, err = _run(LEVELS[0], kit, staged.file)
    assert reply["ok"] is True, (reply, err)
    assert facts["double"] == 63 and facts["first_file"] == "first.py"
    assert facts["marker_seen"] is False
    # not declared: the notebook stays where it was, and nothing is guessed
    intake.stage(str(repo), str(tmp_path / "alone"), "alice", module="second")
    assert sorted(os.listdir(tmp_path / "alone")) == ["second.py"]
    # a first.ipynb elsewhere in the upload is not beside the work: not converted
    (repo / "old").mkdir()
    (repo / "first.ipynb").rename(repo / "old" / "first.ipynb")
    intake.stage(str(repo), str(tmp_path / "elsewhere"), "alice", module="second",
                 earlier=("first",))
    assert sorted(os.listdir(tmp_path / "elsewhere")) == ["second.py"]
    (repo / "old" / "first.ipynb").rename(repo / "first.ipynb")
    # a first.py beside the notebook is the student's module, as it is without a notebook
    (repo / "first.py").write_text("def double(x):\n    return x * 5\n")
    both = intake.stage(str(repo), str(tmp_path / "both"), "alice", module="second",
                        earlier=("first",))
    assert (tmp_path / "both" / "first.py").read_text() == "def double(x):\n    return x * 5\n"
    assert not any(note.startswith("first.ipynb") for note in both.notes)


def test_an_earlier_notebook_that_cannot_be_converted_is_said_and_the_work_is_staged(tmp_path):
    """A broken first.ipynb (no JSON) costs the student only what imports it: the work is
    staged, and a note names the notebook, the module it should have become and why not."""
    from grader import intake
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "second.py").write_text(SECOND_SOLUTION)
    (repo / "first.ipynb").write_text("{not json", encoding="utf-8")
    staged = intake.stage(str(repo), str(tmp_path / "staged"), "bob", module="second",
                          earlier=("first",))
    assert staged.error is None and sorted(os.listdir(tmp_path / "staged")) == ["second.py"]
    assert staged.notes == [
        "first.ipynb, your work of the earlier assignment that second.py imports, could not be "
        "converted to first.py: first.ipynb is not a valid notebook: its JSON is broken at line "
        "1, column 2 (Expecting property name enclosed in double quotes). Open it in Jupyter, "
        "save it again, and re-upload; or upload the code as first.py."]
    # a link in its place is never followed: said as the work's own links are
    (repo / "first.ipynb").unlink()
    (repo / "first.ipynb").symlink_to(tmp_path / "repo" / "second.py")
    linked = intake.stage(str(repo), str(tmp_path / "linked"), "bob", module="second",
                          earlier=("first",))
    assert sorted(os.listdir(tmp_path / "linked")) == ["second.py"]
    assert linked.notes[-1] == (
        "first.ipynb, your work of the earlier assignment that second.py imports, could not be "
        "converted to first.py: first.ipynb is a symbolic link; upload the file itself.")


@pytest.mark.slow
def test_grading_converts_the_earlier_notebook_the_declaration_asks_the_student_for(tmp_path):
    """grade_one hands intake the declaration's student-provided modules: the names come
    from `builds_on`, not from the submission (given: none). End to end, in a copy of the
    kit whose transformer says provide = "student": two students hand in transformer.ipynb
    and attention.ipynb (both the solutions' code); dan's attention repeats valid_lens the
    wrong way, which his own TransformerEncoderBlock calls, so he loses points there and
    ann, whose attention is right, gets 100."""
    from conftest import student_provided_kit
    kit = student_provided_kit(tmp_path / "kit")
    attention = (kit / "solutions" / "attention.py").read_text(encoding="utf-8")
    right = "valid_lens = torch.repeat_interleave(valid_lens, repeats=self.num_heads, dim=0)"
    assert right in attention
    for student, code in (("ann", attention),
                          ("dan", attention.replace(right, "valid_lens = valid_lens.repeat("
                                                            "self.num_heads)"))):
        folder = tmp_path / "class" / student
        folder.mkdir(parents=True)
        _notebook(folder / "transformer.ipynb",
                  (kit / "solutions" / "transformer.py").read_text(encoding="utf-8"))
        _notebook(folder / "attention.ipynb", code)
    out = tmp_path / "out"
    done = run_grader("grade", "--assignment", "transformer", str(tmp_path / "class" / "ann"),
                      str(tmp_path / "class" / "dan"), "--out", str(out), "--jobs",
                      "1", kit=kit,
                      timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    rows = grades(out)
    assert float(rows["ann"]["total"]) == 100, rows["ann"]
    # dan's own attention.ipynb ran (the block's cases failed with its MultiHeadAttention),
    # and the block is judged on its own code: his mistake costs the attention assignment
    assert float(rows["dan"]["TransformerEncoderBlock (/36)"]) == 36, rows["dan"]
    assert "MultiHeadAttention comes from your attention.py" in \
        (out / "dan" / "feedback.txt").read_text(encoding="utf-8")
    assert "answers correctly" not in (out / "ann" / "feedback.txt").read_text(encoding="utf-8")
    assert float(rows["dan"]["PositionalEncoding (/24)"]) == 24
    told = (out / "dan" / "feedback.txt").read_text(encoding="utf-8")
    assert "attention.ipynb was converted to a module" in told
    from grader.grade import student_provided
    assert student_provided(assignments.load("second", kit_root=_kit(tmp_path / "s", "student"))) \
        == ("first",)
    assert student_provided(assignments.load("second", kit_root=_kit(tmp_path / "g", "given"))) == ()
    assert student_provided(assignments.load("transformer")) == ()
    assert student_provided(assignments.load("attention")) == ()


def test_an_earlier_module_uploaded_on_its_own_is_staged_beside_the_work(tmp_path):
    """intake.stage's companions (a Canvas upload of first.py apart from second.py): read
    and decoded as the work is (GBK, as a Chinese Windows editor saves it), a notebook
    converted; a link is never followed and is said; a first.py in the work's own folder
    wins over the companion."""
    from grader import intake
    work = tmp_path / "u_1_9_second.py"
    work.write_text(SPY, encoding="utf-8")
    own = tmp_path / "u_1_8_first.py"
    own.write_bytes(("# 注意力\n" + STUDENT_FIRST).encode("gbk"))
    staged = intake.stage(str(work), str(tmp_path / "a"), "u", module="second",
                          earlier=("first",), companions=(("first", str(own)),))
    assert staged.error is None and sorted(os.listdir(tmp_path / "a")) == ["first.py", "second.py"]
    assert (tmp_path / "a" / "first.py").read_text(encoding="utf-8") == "# 注意力\n" + STUDENT_FIRST
    assert staged.notes == [
        "u_1_8_first.py is not UTF-8; the grader read it as GB18030 (the encoding of Chinese "
        "Windows editors). Save as UTF-8 to be sure.",
        "u_1_8_first.py was used as your first.py, the module of the earlier assignment that "
        "second.py imports."]
    files, reply, facts, err = _run(LEVELS[0], _kit(tmp_path / "kit", "student"), staged.file)
    assert reply["ok"] is True and facts["double"] == 63, (reply, err)
    notebook = tmp_path / "u_1_7_first.ipynb"
    _notebook(notebook, "import math\n", STUDENT_FIRST)
    staged = intake.stage(str(work), str(tmp_path / "b"), "u", module="second",
                          companions=(("first", str(notebook)),))
    assert any(n.startswith("u_1_7_first.ipynb was converted to a module: 2 code cells")
               for n in staged.notes), staged.notes
    assert "return x * 3" in (tmp_path / "b" / "first.py").read_text(encoding="utf-8")
    link = tmp_path / "u_1_6_first.py"
    link.symlink_to(own)
    staged = intake.stage(str(work), str(tmp_path / "c"), "u", module="second",
                          companions=(("first", str(link)),))
    assert staged.error is None and sorted(os.listdir(tmp_path / "c")) == ["second.py"]
    assert staged.notes[-1].startswith(
        "u_1_6_first.py, your work of the earlier assignment that second.py imports, could "
        "not be converted to first.py: u_1_6_first.py is a symbolic link"), staged.notes
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "second.py").write_text(SPY, encoding="utf-8")
    (folder / "first.py").write_text("def double(x):\n    return x * 5\n", encoding="utf-8")
    staged = intake.stage(str(folder), str(tmp_path / "d"), "u", module="second",
                          companions=(("first", str(own)),))
    assert (tmp_path / "d" / "first.py").read_text() == "def double(x):\n    return x * 5\n"
    assert staged.notes == ["u_1_8_first.py was not used as your first.py: the work was handed "
                            "in with its own first.py, which was used."]


@pytest.mark.parametrize("broken, reason", [
    ("[" * 100000 + "]" * 100000, "RecursionError"),                      # deep JSON
    ('{"cells": [' + "1" * 10000 + "]}", "ValueError: Exceeds the limit")])  # a huge number
def test_an_earlier_notebook_that_breaks_the_reader_costs_only_itself(tmp_path, broken, reason):
    """What reading a notebook may raise besides the grader's own refusals (Python's JSON
    parser on deep nesting or a 10000-digit number) is the earlier notebook's note, beside
    a folder's work and uploaded apart alike; the work is staged either way."""
    from grader import intake
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "second.py").write_text(SECOND_SOLUTION)
    (folder / "first.ipynb").write_text(broken)
    beside = intake.stage(str(folder), str(tmp_path / "a"), "u", module="second",
                          earlier=("first",))
    apart = intake.stage(str(folder / "second.py"), str(tmp_path / "b"), "u", module="second",
                         companions=(("first", str(folder / "first.ipynb")),))
    for staged in (beside, apart):
        assert staged.error is None and os.path.basename(staged.file) == "second.py"
        assert staged.notes[-1].startswith(
            "first.ipynb, your work of the earlier assignment that second.py imports, could "
            f"not be converted to first.py: {reason}"), staged.notes
    assert sorted(os.listdir(tmp_path / "a")) == sorted(os.listdir(tmp_path / "b")) == ["second.py"]


def test_an_earlier_module_handed_in_as_asked_is_never_taken_for_the_work(tmp_path):
    """The work renamed (hw.py, hw.ipynb) with attention's module beside it as asked: the
    renamed file is the work, the earlier module is staged as itself; the earlier module
    alone is no work at all (without `earlier`, as before, the only file is the work)."""
    from grader import intake
    for work, mine in (("hw.py", SECOND_SOLUTION), ("hw.ipynb", None)):
        folder = tmp_path / work
        folder.mkdir()
        if mine is None:
            _notebook(folder / work, SECOND_SOLUTION)
        else:
            (folder / work).write_text(mine)
        (folder / "first.py").write_text(STUDENT_FIRST)
        staged = intake.stage(str(folder), str(tmp_path / f"s-{work}"), "u", module="second",
                              earlier=("first",))
        assert staged.error is None, staged.error
        assert "def quadruple" in (tmp_path / f"s-{work}" / "second.py").read_text()
        assert (tmp_path / f"s-{work}" / "first.py").read_text() == STUDENT_FIRST
    alone = tmp_path / "alone"
    alone.mkdir()
    (alone / "first.py").write_text(STUDENT_FIRST)
    staged = intake.stage(str(alone), str(tmp_path / "s-alone"), "u", module="second",
                          earlier=("first",))
    assert staged.file is None and staged.error.startswith("alone has no second.py")
    assert intake.stage(str(alone), str(tmp_path / "s-old"), "u", module="second").error is None


@pytest.mark.slow
def test_a_canvas_class_uploading_the_earlier_module_apart_is_graded_with_it(tmp_path):
    """End to end, `grader grade --layout canvas` in a copy of the kit whose transformer says
    provide = "student": wangli uploaded transformer.py and attention.py as two files (100),
    zhaomin only transformer.py (it cannot be imported without attention: 0, and her
    feedback asks for the file; nothing of wangli's reaches her), and the row of each keeps
    its Canvas user id."""
    import shutil
    from conftest import student_provided_kit
    kit = student_provided_kit(tmp_path / "kit")
    canvas = tmp_path / "canvas"
    canvas.mkdir()
    transformer = (kit / "solutions" / "transformer.py").read_text(encoding="utf-8")
    (canvas / "wangli_10000_90000_transformer.py").write_text(transformer, encoding="utf-8")
    shutil.copy(kit / "solutions" / "attention.py", canvas / "wangli_10000_90001_attention.py")
    (canvas / "zhaomin_10002_90002_transformer.py").write_text(transformer, encoding="utf-8")
    out = tmp_path / "out"
    done = run_grader("grade", "--assignment", "transformer", "--layout", "canvas", str(canvas),
                      "--out", str(out), "--jobs", "2", kit=kit, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    rows = grades(out)
    assert {n: (r["student_id"], float(r["total"])) for n, r in rows.items()} == {
        "wangli_10000": ("10000", 100.0), "zhaomin_10002": ("10002", 0.0)}
    assert ("wangli_10000_90001_attention.py was used as your attention.py, the module of the "
            "earlier assignment that transformer.py imports.") in \
        (out / "wangli_10000" / "feedback.txt").read_text(encoding="utf-8")
    told = (out / "zhaomin_10002" / "feedback.txt").read_text(encoding="utf-8")
    assert ("it imports `attention`, the module of an earlier assignment this one builds on, "
            "and no attention.py was handed in with it") in told


def test_a_broken_earlier_file_is_named_as_the_one_that_is_not_valid_python(tmp_path):
    """The student's own earlier file does not parse: the message names it, not the later
    file, which is fine; a syntax error in the later file itself still names that one."""
    import torch
    from grader.harness import StudentFailure, Submission
    kit = _kit(tmp_path / "kit", "student")
    said = {}
    for broken in ("first", "second"):
        folder = tmp_path / broken
        folder.mkdir()
        (folder / "second.py").write_text(SECOND_SOLUTION + ("def oops(:\n" if broken == "second"
                                                             else ""))
        (folder / "first.py").write_text(STUDENT_FIRST + ("def oops(:\n" if broken == "first"
                                                           else ""))
        stage_dir = stage_folder()
        os.chmod(stage_dir, 0o711)
        student = Submission(str(folder / "second.py"), LEVELS[0], LIMITS, stage_dir,
                             assignment=assignments.load("second", kit_root=kit))
        try:
            with pytest.raises(StudentFailure) as failed:
                student.run({"target": "quadruple", "args": [torch.ones(2)], "kwargs": {}},
                            "quadruple(X)")
        finally:
            student.stop()
        said[broken] = str(failed.value)
    assert said["first"].startswith(
        "first.py, your module of the earlier assignment that second.py imports, is not valid "
        "Python, so second.py could not be imported and nothing in it could be graded.")
    assert said["second"].startswith("second.py is not valid Python, so nothing in it could "
                                     "be graded.")


def test_nbgrader_earlier_names_come_from_the_declaration_and_are_checked(tmp_path):
    """`grader nbgrader --earlier KIT=COURSE`: only an earlier assignment whose module the
    student provides can be named, and the course's name is a folder name, nothing more."""
    from grader.commands.nbgrader import _earlier
    student = assignments.load("second", kit_root=_kit(tmp_path / "s", "student"))
    assert _earlier(student, []) == [("first", "first")]
    assert _earlier(student, ["first=week-1"]) == [("first", "week-1")]
    for bad in ("first=", "first=..", "first=.", "first=../alice", "first=a/b", "first",
                "second=x", "=x", "first=a\x00b", "first=a\nb"):
        with pytest.raises(ValueError, match="expected KIT=COURSE, KIT one of the earlier "
                                             r"assignments whose module students provide \(first\)"):
            _earlier(student, [bad])
    given = assignments.load("second", kit_root=_kit(tmp_path / "g", "given"))
    assert _earlier(given, []) == []
    with pytest.raises(ValueError, match=r"\(none\)"):
        _earlier(given, ["first=x"])
