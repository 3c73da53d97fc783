"""The kit's layering is a contract (issue 30), checked by import-linter with the contracts in
pyproject.toml ([tool.importlinter]): the packages in layers, each importing only those below
it; no import circle at any depth; no platform importing another; grade/ importing nothing of
similarity/ but the one import the typed record will replace. The contracts are shown to
catch what they forbid, in a copy of the kit. And throughout grader/, an import inside a
function is a deliberate deferral, said on its line (or the line above its block), and no
function is 80 lines or more."""
import ast
import os
import shutil
import subprocess
import sys

import pytest

from conftest import KIT, copy_kit

pytest.importorskip("importlinter", reason="import-linter (the test extra) checks the layers")

LINT = ("import sys; from importlinter.cli import lint_imports_command; "
        "sys.argv[0] = 'lint-imports'; lint_imports_command()")
CONTRACTS = ("The kit's layers: each imports only those below it",
             "No import circles, at any depth",
             "No platform imports another",
             "grade/ imports nothing of similarity/")
LONGEST = 79  # lines of the longest function (its def to its last line, decorators aside)


def _lint(root):
    return subprocess.run([sys.executable, "-c", LINT, "--no-cache"], cwd=root,
                          capture_output=True, text=True, timeout=600)


def test_the_kit_keeps_every_contract():
    done = _lint(KIT)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    for name in CONTRACTS:
        assert f"{name} KEPT" in done.stdout, done.stdout[-4000:]


def _copy(tmp_path):
    kit = tmp_path / "kit"
    copy_kit(kit, ("grader",))
    shutil.copy(os.path.join(KIT, "pyproject.toml"), kit / "pyproject.toml")
    return kit


def _append(path, line):
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(f"\n{line}\n")


def test_the_contracts_catch_an_arrow_back_up_a_circle_and_one_platform_importing_another(tmp_path):
    kit = _copy(tmp_path)
    assert _lint(kit).returncode == 0
    # a toy platform (a new module, as docs/how-to/add-platform.md says) that reads Canvas's
    # names: one platform importing another
    (kit / "grader" / "platforms" / "toy.py").write_text(
        "from . import base\nfrom .canvas import parse_canvas  # noqa: F401\n", encoding="utf-8")
    # files.py, near the bottom, reaching up to the gradebook: an arrow back up
    _append(kit / "grader" / "files.py", "from .report import gradebook  # noqa: E402,F401")
    # summary.py importing feedback.py, which imports summary.py: a circle inside report/
    _append(kit / "grader" / "report" / "summary.py", "from . import feedback  # noqa: E402,F401")
    # grade/ reaching into similarity/ beyond the one import the typed record will replace
    _append(kit / "grader" / "grade" / "outcome.py",
            "from ..similarity import page  # noqa: E402,F401")
    done = _lint(kit)
    assert done.returncode == 1, done.stdout[-4000:]
    for name in CONTRACTS:
        assert f"{name} BROKEN" in done.stdout, done.stdout[-4000:]
    assert "grader.platforms.toy -> grader.platforms.canvas" in done.stdout
    assert "grader.files -> grader.report.gradebook" in done.stdout
    assert "grader.grade.outcome -> grader.similarity.page" in done.stdout


def _said(lines, number):
    """Is there a comment on line `number` (from 1), or a comment line just above it or
    above the block of imports it is in?"""
    if "#" in lines[number - 1]:
        return True
    above = number - 2
    while above >= 0 and lines[above].strip().startswith(("import ", "from ")):
        above -= 1
    return above >= 0 and lines[above].strip().startswith("#")


def _deferred_imports(path):
    """[(line, text)] of each import inside a function of the file at `path` without a
    comment that says why (on its line, or the line above)."""
    with open(path, encoding="utf-8") as handle:
        source = handle.read()
    lines = source.splitlines()
    found = []
    for node in ast.walk(ast.parse(source, path)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for inner in ast.walk(node):
                if isinstance(inner, (ast.Import, ast.ImportFrom)) \
                        and not _said(lines, inner.lineno):
                    found.append((inner.lineno, lines[inner.lineno - 1].strip()))
    return sorted(set(found))


def _python_files(relative):
    path = os.path.join(KIT, relative)
    if path.endswith(".py"):
        return [relative]
    return sorted(os.path.relpath(os.path.join(folder, name), KIT)
                  for folder, _dirs, names in os.walk(path) for name in names
                  if name.endswith(".py") and "__pycache__" not in folder)


def test_an_import_inside_a_function_of_the_kit_says_why():
    unsaid = {relative: found for relative in _python_files("grader")
              if (found := _deferred_imports(os.path.join(KIT, relative)))}
    assert unsaid == {}


def test_the_check_finds_an_import_inside_a_function_without_its_reason(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("def f():\n    import json\n    return json\n\n\ndef g():\n"
                      "    import torch  # heavy: only to read its version\n    # heavy\n"
                      "    import numpy\n    import scipy\n    x = 1\n    import yaml\n",
                      encoding="utf-8")
    assert _deferred_imports(str(module)) == [(2, "import json"), (12, "import yaml")]


def _long_functions(path, longest=LONGEST):
    """[(name, lines)] of each function (methods and nested ones too) in the file at `path`
    longer than `longest` lines, from its def to its last line, decorators aside."""
    with open(path, encoding="utf-8") as handle:
        tree = ast.parse(handle.read(), path)
    return sorted((node.name, node.end_lineno - node.lineno + 1) for node in ast.walk(tree)
                  if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                  and node.end_lineno - node.lineno + 1 > longest)


def test_no_function_of_the_kit_is_80_lines_or_more():
    long = {(relative, name): lines for relative in _python_files("grader")
            for name, lines in _long_functions(os.path.join(KIT, relative))}
    assert long == {}


def test_the_check_finds_a_function_of_80_lines(tmp_path):
    module = tmp_path / "m.py"
    body = "".join(f"x{n} = {n}\n" for n in range(78))
    function = "    " + body.replace("\n", "\n    ")
    method = "        " + body.replace("\n", "\n        ")
    module.write_text(f"@decorated\ndef short():\n{function}\n\n"
                      f"class C:\n    def long(self):\n{method}return 1\n",
                      encoding="utf-8")
    # short: its def and 78 lines (79, its decorator aside); long, a method: its def, 78
    # lines and its return (80)
    assert _long_functions(str(module)) == [("long", 80)]
