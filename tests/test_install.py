"""A lean install where grading happens: nbgrader (and Jupyter) are an extra that only the
nbgrader commands use; grading never imports them; the commands that need nbgrader say how
to install it in one line; and the README's test command is what CI runs."""
import os
import re
import subprocess
import sys

from conftest import KIT

try:
    import tomllib
except ImportError:  # Python 3.10
    tomllib = None

BLOCK_NBGRADER = """
import importlib.abc, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "nbgrader" or name.startswith("nbgrader."):
            raise ModuleNotFoundError("No module named 'nbgrader'", name="nbgrader")
sys.meta_path.insert(0, Block())
from grader.cli import main
sys.exit(main(sys.argv[1:]))
"""


def _pyproject():
    with open(os.path.join(KIT, "pyproject.toml"), encoding="utf-8") as handle:
        text = handle.read()
    return text, (tomllib.loads(text) if tomllib else None)


def test_nbgrader_is_an_extra_not_a_dependency():
    text, data = _pyproject()
    if data is None:  # no tomllib: read the lines
        dependencies = text.split("dependencies = [", 1)[1].split("]", 1)[0]
        assert "nbgrader" not in dependencies and "jupyter" not in dependencies
        assert re.search(r'^nbgrader = \["nbgrader>=0\.9"\]', text, re.M)
        return
    dependencies = " ".join(data["project"]["dependencies"]).lower()
    assert "nbgrader" not in dependencies and "jupyter" not in dependencies
    assert any(d.startswith("nbformat") for d in data["project"]["dependencies"])
    assert data["project"]["optional-dependencies"]["nbgrader"] == ["nbgrader>=0.9"]


def test_readme_test_command_is_what_ci_runs():
    with open(os.path.join(KIT, ".ci", "run"), encoding="utf-8") as handle:
        commands = [line for line in handle.read().splitlines()
                    if line.strip() and not line.lstrip().startswith("#")]
    with open(os.path.join(KIT, "README.md"), encoding="utf-8") as handle:
        readme = handle.read()
    ci = [line for line in commands
          if line.startswith("python -m pip install torch==2.13.0 -e '.[test,nbgrader]'")]
    # the whole suite, on both cores, each test file in one worker (its module fixtures once)
    assert len(ci) == 1 and ci[0].endswith("&& python -m pytest -n 2 --dist loadfile"), commands
    assert ci[0] in readme.split("## Documentation")[0]   # in the two commands
    # it is the last; the check that the test extra alone is enough (.ci/test-extra) runs
    # before it, in the same venv while it has the test extra and nothing more
    assert commands[-1] == ci[0]
    # torch first (this machine's CPU build, by uv or by pip); the extras go on top, the test
    # extra alone before the check, the docs and nbgrader extras after it
    torch = [i for i, line in enumerate(commands) if "torch==2.13.0" in line and i < len(commands) - 1]
    assert [commands[i].strip() for i in torch] == [
        "'torch==2.13.0+cpu' pip", ".venv/bin/python -m pip install -q --no-compile torch==2.13.0"]
    test = commands.index("extras test")
    check = next(i for i, line in enumerate(commands) if "bash .ci/test-extra check-or-fresh .venv" in line)
    rest = commands.index("extras docs,nbgrader")
    assert max(torch) < test < check < rest < commands.index(ci[0]), commands


def test_ci_installs_with_uv_or_pip_alike():
    """`.ci/run` installs with uv where it could be installed, with pip where not: both put
    the same torch wheel (its CPU build, from the folder pip's configuration names) and then
    the same thing (the kit, editable, with the extras named) into the same venv, and
    neither compiles (compileall does, beside the check and the docs build)."""
    with open(os.path.join(KIT, ".ci", "run"), encoding="utf-8") as handle:
        text = handle.read()
    body = text.split("extras() {", 1)[1].split("\n}\n", 1)[0]
    installs = [line.strip() for line in body.splitlines() if " install " in line]
    assert installs == [
        '"$uv" pip install -q --python .venv/bin/python -e ".[$1]"',
        'python -m pip install -q --no-compile -e ".[$1]"'], installs
    assert 'python3 -m pip install -q --target "$tools" uv' in text
    torch = text.split('torch_wheels=${PIP_FIND_LINKS:-}', 1)[1].split("\nfi\n", 1)[0]
    assert 'compgen -G "$torch_wheels/torch-2.13.0+cpu-*.whl"' in torch
    assert ('"$uv" pip install -q --python .venv/bin/python --find-links "$torch_wheels" \\\n'
            "        'torch==2.13.0+cpu' pip") in torch
    assert "    python3 -m venv .venv\n    .venv/bin/python -m pip install -q --no-compile " \
           "torch==2.13.0" in torch


def test_gradescope_setup_installs_no_nbgrader():
    from grader.platforms.gradescope import autograder as gradescope
    setup = gradescope.SETUP.lower()
    assert "nbgrader" not in setup and "jupyter" not in setup
    assert "--no-deps" in setup  # the kit itself pulls nothing in


def test_grading_imports_neither_nbgrader_nor_nbformat():
    done = subprocess.run(
        [sys.executable, "-c",
         "import sys, grader.cli, grader.grade, grader.intake, grader.report.gradebook\n"
         "from grader.intake import notebook\n"
         "print(sorted(m for m in sys.modules if m.split('.')[0] in ('nbgrader', 'nbformat', 'jupyter_core')))"],
        cwd=KIT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_nbgrader_command_without_nbgrader_says_how_to_install_it(tmp_path):
    done = subprocess.run([sys.executable, "-c", BLOCK_NBGRADER, "nbgrader", "--course",
                           str(tmp_path), "attention"], cwd=KIT, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "pip install -e '.[nbgrader]'" in lines[0], done.stderr


def test_a_run_that_only_collects_leaves_no_stage_folder_behind(tmp_path):
    """.ci/test-extra's check collects the whole suite, and test_fuzz_replies makes its stage
    folder (conftest.stage_folder) as it is imported: no fixture runs in such a run, and one
    folder stayed in /tmp after each CI run. The folders go when pytest ends, collecting or not."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "--collect-only", "-p", "no:cacheprovider",
         os.path.join("tests", "test_fuzz_replies.py")],
        cwd=KIT, capture_output=True, text=True, timeout=300,
        env={**os.environ, "TMPDIR": str(scratch)})
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert re.search(r"\b\d+ tests? collected", done.stdout), done.stdout[-2000:]
    assert os.listdir(scratch) == []
