"""The student folder works alone: plain `pytest` fails clearly on the skeleton and passes
with a correct solution, using only torch, pytest and the student's attention.py."""
import ast
import os
import shutil
import subprocess
import sys

from conftest import KIT, SOLUTION

FOLDER = os.path.join(KIT, "assignments", "attention")


def _run_pytest(folder):
    return subprocess.run([sys.executable, "-m", "pytest"], cwd=folder, capture_output=True,
                          text=True, timeout=300, env={**os.environ, "PYTHONPATH": ""})


def _copy(tmp_path):
    target = tmp_path / "attention"
    shutil.copytree(FOLDER, target, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    return target


def test_skeleton_fails_each_check_with_a_one_line_reason(tmp_path):
    folder = _copy(tmp_path)
    done = _run_pytest(folder)
    assert done.returncode == 1, done.stdout[-3000:]
    assert "is not written yet" in done.stdout
    assert "Traceback" not in done.stdout
    assert " passed" not in done.stdout.splitlines()[-1]


def test_solution_passes(tmp_path):
    folder = _copy(tmp_path)
    shutil.copy(SOLUTION, folder / "attention.py")
    done = _run_pytest(folder)
    assert done.returncode == 0, done.stdout[-3000:]
    assert "passed" in done.stdout.splitlines()[-1]


def test_a_realistic_mistake_is_explained(tmp_path, solution_source):
    folder = _copy(tmp_path)
    wrong = solution_source.replace(
        "valid_lens = torch.repeat_interleave(valid_lens, repeats=self.num_heads, dim=0)",
        "valid_lens = valid_lens.repeat(self.num_heads)")
    assert wrong != solution_source
    (folder / "attention.py").write_text(wrong, encoding="utf-8")
    done = _run_pytest(folder)
    assert done.returncode == 1
    assert "repeat_interleave" in done.stdout


def test_public_tests_import_only_torch_pytest_and_the_student_file():
    allowed = {"torch", "pytest", "math", "attention"}
    for name in os.listdir(FOLDER):
        if not name.endswith(".py") or name == "attention.py":
            continue
        with open(os.path.join(FOLDER, name), encoding="utf-8") as handle:
            tree = ast.parse(handle.read())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                roots = {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom):
                roots = {(node.module or "").split(".")[0]}
            else:
                continue
            assert roots <= allowed, f"{name} imports {roots - allowed}"


def test_folder_is_small_and_self_contained():
    size = sum(os.path.getsize(os.path.join(FOLDER, n)) for n in os.listdir(FOLDER)
               if os.path.isfile(os.path.join(FOLDER, n)))
    assert size < 200_000
    assert {"attention.py", "test_attention.py", "README.md", "pytest.ini"} <= set(os.listdir(FOLDER))
