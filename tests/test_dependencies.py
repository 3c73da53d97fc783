"""Every third-party module the kit's tests import is declared in pyproject.toml: in
`dependencies` or the `test` extra, or (nbgrader's) imported only in a file that skips
without it (pytest.importorskip), so that `pip install -e '.[test]'` alone runs every test
that does not need nbgrader (issue 19: tests/test_layouts.py needed PyYAML, which only the
nbgrader extra brought)."""
import ast
import os
import re
import sys
from importlib import metadata

import pytest

from conftest import KIT

tomllib = pytest.importorskip("tomllib", reason="reading pyproject.toml needs Python 3.11+")

FOLDERS = ("tests", "tests_hidden/attention")


def _declared():
    with open(os.path.join(KIT, "pyproject.toml"), "rb") as handle:
        project = tomllib.load(handle)["project"]
    requirements = project["dependencies"] + project["optional-dependencies"]["test"]
    return {_normal(re.match(r"[A-Za-z0-9_.-]+", r).group()) for r in requirements}


def _normal(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def _local():
    names = {"grader", "conftest"}
    for folder in FOLDERS:
        for entry in os.listdir(os.path.join(KIT, folder)):
            names.add(entry[:-3] if entry.endswith(".py") else entry)
    return names


def _imports(path):
    """{top-level module: first line}, and the modules the file importorskips."""
    with open(path, encoding="utf-8") as handle:
        tree = ast.parse(handle.read(), path)
    found, skipped = {}, set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                found.setdefault(alias.name.split(".")[0], node.lineno)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.setdefault(node.module.split(".")[0], node.lineno)
        elif (isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "importorskip"
              and node.args and isinstance(node.args[0], ast.Constant)):
            skipped.add(str(node.args[0].value).split(".")[0])
    return found, skipped


def _test_files():
    for folder in FOLDERS:
        for entry in sorted(os.listdir(os.path.join(KIT, folder))):
            if entry.endswith(".py"):
                yield os.path.join(folder, entry)


def undeclared(declared):
    """[(file, line, module, why)] for each third-party import `declared` does not cover."""
    local, distributions = _local(), metadata.packages_distributions()
    problems = []
    for relative in _test_files():
        found, skipped = _imports(os.path.join(KIT, relative))
        for module, line in found.items():
            if module in sys.stdlib_module_names or module in local or module in skipped:
                continue
            owners = {_normal(d) for d in distributions.get(module, ())}
            if not owners:
                problems.append((relative, line, module, "not installed here"))
            elif not owners & declared:
                problems.append((relative, line, module, f"from {', '.join(sorted(owners))}"))
    return problems


def test_every_module_the_tests_import_is_declared_for_the_test_extra():
    assert undeclared(_declared()) == []


def test_the_scan_finds_an_undeclared_module():
    """The check above is not empty by construction: a declared module taken out of the
    list is reported, with the distribution it comes from."""
    declared = _declared()
    assert "pyyaml" in declared and "hypothesis" in declared
    problems = undeclared(declared - {"pyyaml", "hypothesis"})
    modules = {module for _, _, module, _ in problems}
    assert "hypothesis" in modules
    assert any(m == "hypothesis" and why == "from hypothesis" for _, _, m, why in problems)
