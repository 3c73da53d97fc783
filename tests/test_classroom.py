"""The student folder as a GitHub Classroom template: its autograding workflow
(.github/workflows/classroom.yml) follows Classroom's conventions, and each step's command
really selects the public self-checks of its part, worth the hidden suite's points.
"""
import os
import re
import shlex
import shutil
import subprocess
import sys

import pytest

from conftest import KIT, SOLUTION, student_env
from grader import assignment
from grader.suite.table import Table

FOLDER = os.path.join(KIT, "assignments", "attention")
WORKFLOW = os.path.join(FOLDER, ".github", "workflows", "classroom.yml")
GRADER = "classroom-resources/autograding-command-grader@v1"
REPORTER = "classroom-resources/autograding-grading-reporter@v1"
NODE = re.compile(r"^(PASSED|FAILED|SKIPPED|ERROR) test_attention\.py::(test_\w+)", re.M)


def _parse_textually(text):
    """The parts of the workflow this test reads, without PyYAML: the steps as dicts
    (name, id, uses, run, with: {...}, env: {...})."""
    steps, current, block = [], None, None
    for line in text.split("\n"):
        if re.match(r"^    - name: ", line):
            current = {"name": line.split(": ", 1)[1].strip(), "with": {}, "env": {}}
            steps.append(current)
            block = None
        elif current is not None and re.match(r"^      (\w[\w-]*):", line):
            key, _, value = line.strip().partition(":")
            value = value.strip()
            if key in ("with", "env"):
                block = key
            elif key == "run" and value == "|":
                current["run"], block = "", "run"
            else:
                current[key], block = value, None
        elif current is not None and block == "run" and line.startswith("        "):
            current["run"] += line.strip() + "\n"
        elif current is not None and block in ("with", "env") and line.startswith("        "):
            key, _, value = line.strip().partition(":")
            value = value.strip()
            if value[:1] in "'\"" and value[-1:] == value[:1]:
                value = value[1:-1]
            current[block][key] = value
    return {"on": ["push"] if "\n- push\n" in text else [],
            "jobs": {"run-autograding-tests": {"steps": steps}}}


@pytest.fixture(scope="module")
def workflow():
    with open(WORKFLOW, encoding="utf-8") as handle:
        text = handle.read()
    try:
        import yaml
    except ImportError:
        return text, _parse_textually(text)
    return text, yaml.safe_load(text)


def _graders(steps):
    return [s for s in steps if s.get("uses") == GRADER]


def test_workflow_follows_classroom_conventions(workflow):
    text, data = workflow
    assert "push" in data["on"]
    assert "if: github.actor != 'github-classroom[bot]'" in text
    assert "checks: write" in text
    steps = data["jobs"]["run-autograding-tests"]["steps"]
    assert steps[0]["uses"].startswith("actions/checkout@")
    install = "\n".join(s.get("run", "") for s in steps)
    assert re.search(r"pip install torch==[\d.]+ --index-url https://download\.pytorch\.org/whl/cpu",
                     install), "torch comes from the CPU index"
    assert re.search(r"pip install pytest\b", install)
    graders = _graders(steps)
    for step in graders:
        options = step["with"]
        assert options["test-name"] and options["command"] and 0 < float(options["timeout"]) <= 10
    ids = [s["id"] for s in graders]
    assert len(set(ids)) == len(ids)
    reporter = steps[-1]
    assert reporter["uses"] == REPORTER
    runners = str(reporter["with"]["runners"]).split(",")
    assert [r.strip() for r in runners] == ids
    for step_id in ids:
        assert reporter["env"][f"{step_id.upper()}_RESULTS"] == \
            "${{steps.%s.outputs.result}}" % step_id


def test_points_are_the_hidden_suites_per_part(workflow):
    """One step per part, in the parts' order, each worth the part's points; the GPU part
    has no step (the runners have no GPU), so the total is the rest of the assignment."""
    declared = assignment.load("attention")
    points = Table(declared).max_points()  # the hidden cases' points, part by part
    parts = [p.name for p in declared.parts if not p.gpu]
    graders = _graders(workflow[1]["jobs"]["run-autograding-tests"]["steps"])
    assert len(graders) == len(parts)
    for step, part in zip(graders, parts):
        assert int(step["with"]["max-score"]) == points[part], step["name"]
    total = sum(int(s["with"]["max-score"]) for s in graders)
    assert total == declared.total_points - sum(points[p] for p in declared.gpu_parts)


def _run(command, folder):
    args = shlex.split(command)
    assert args[:3] == ["python", "-m", "pytest"], command
    return subprocess.run([sys.executable, *args[1:], "-rA"], cwd=folder, capture_output=True,
                          text=True, timeout=300, env=student_env())


@pytest.mark.slow
def test_each_step_runs_exactly_its_parts_public_checks(workflow, tmp_path):
    """In a copy of the student folder with the solution in it: every step's command
    passes, runs only tests of its part, and together the steps run every public check
    but the GPU part's two. With the skeleton, a step fails (no points for nothing)."""
    folder = tmp_path / "attention"
    shutil.copytree(FOLDER, folder, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    skeleton = (folder / "attention.py").read_text(encoding="utf-8")
    shutil.copyfile(SOLUTION, folder / "attention.py")
    with open(os.path.join(FOLDER, "test_attention.py"), encoding="utf-8") as handle:
        every = set(re.findall(r"^def (test_\w+)\(", handle.read(), re.M))
    graders = _graders(workflow[1]["jobs"]["run-autograding-tests"]["steps"])
    seen = set()
    for step in graders:
        command = step["with"]["command"]
        keyword = shlex.split(command)[shlex.split(command).index("-k") + 1]
        done = _run(command, folder)
        ran = {name: outcome for outcome, name in NODE.findall(done.stdout)}
        assert done.returncode == 0 and ran, f"{command}:\n{done.stdout[-3000:]}{done.stderr[-2000:]}"
        assert set(ran.values()) == {"PASSED"}, ran
        assert all(name.startswith(keyword) for name in ran), (command, sorted(ran))
        assert not seen & set(ran), f"{command} runs tests of another step: {seen & set(ran)}"
        seen |= set(ran)
    # the GPU part's public checks (on CUDA, or the CPU device-discipline check) are worth
    # no Classroom points: the hidden suite grades that part (docs/how-to/github-classroom.md)
    assert seen == every - {"test_runs_on_the_gpu", "test_no_tensor_made_on_the_default_device"}

    (folder / "attention.py").write_text(skeleton, encoding="utf-8")
    done = _run(graders[0]["with"]["command"], folder)
    assert done.returncode != 0
