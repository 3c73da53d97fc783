"""A real nbgrader round trip: a course in a temporary folder, the kit's source notebook
released by nbgrader itself, two submitted notebooks graded by the kit, and the scores read
back through `nbgrader export`.

Every nbgrader command runs through its own CLI, in the course folder, with HOME and the
Jupyter folders inside tmp_path: the user's Jupyter config is never read or written.
"""
import csv
import json
import os
import re
import subprocess
import sys

import pytest

from conftest import KIT, SOLUTION

pytest.importorskip("nbgrader", reason="the nbgrader extra is not installed: pip install -e '.[nbgrader]'")

ASSIGNMENT = "attention"
PARTS = {"sequence_mask": 11, "masked_softmax": 20, "AdditiveAttention": 15,
         "DotProductAttention": 15, "transpose": 9, "MultiHeadAttention": 20, "GPU": 10}
RIGHT = "valid_lens = torch.repeat_interleave(valid_lens, repeats=self.num_heads, dim=0)"
WRONG = "valid_lens = valid_lens.repeat(self.num_heads)"
TIMESTAMP = "2026-03-02 09:30:00.000000 UTC"


def _env(tmp_path):
    home = tmp_path / "home"
    env = {**os.environ, "HOME": str(home), "JUPYTER_CONFIG_DIR": str(home / ".jupyter"),
           "JUPYTER_DATA_DIR": str(home / "jupyter-data"),
           "JUPYTER_RUNTIME_DIR": str(home / "jupyter-runtime"), "PYTHONPATH": ""}
    env.pop("JUPYTER_CONFIG_PATH", None)
    env.pop("JUPYTER_PATH", None)
    for key in ("HOME", "JUPYTER_CONFIG_DIR", "JUPYTER_DATA_DIR", "JUPYTER_RUNTIME_DIR"):
        os.makedirs(env[key], exist_ok=True)
    return env


def _run(command, cwd, env, timeout=600):
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)
    assert done.returncode == 0, f"{command}\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    return done


def _nbgrader(args, course, env):
    return _run([sys.executable, "-m", "nbgrader", *args], course, env)


def _solution_lines():
    """The code lines a student would have to write (between the solution markers)."""
    lines, inside = [], False
    with open(SOLUTION, encoding="utf-8") as handle:
        for line in handle:
            if "### BEGIN SOLUTION" in line:
                inside = True
            elif "### END SOLUTION" in line:
                inside = False
            elif inside and len(line.split("#")[0].strip()) >= 12:
                lines.append(line.split("#")[0].strip())
    return lines


def _fill(released, source, target, mutate=None):
    """A student's notebook: the released one, every stub cell filled in with the source
    notebook's code of that cell (markers dropped), optionally with a mistake."""
    with open(released, encoding="utf-8") as handle:
        notebook = json.load(handle)
    with open(source, encoding="utf-8") as handle:
        answers = {c["metadata"]["nbgrader"]["grade_id"]: "".join(c["source"])
                   for c in json.load(handle)["cells"]
                   if c["metadata"].get("nbgrader", {}).get("solution")}
    filled = 0
    for cell in notebook["cells"]:
        grade_id = cell["metadata"].get("nbgrader", {}).get("grade_id")
        if grade_id in answers:
            code = "\n".join(line for line in answers[grade_id].split("\n")
                             if line.strip() not in ("### BEGIN SOLUTION", "### END SOLUTION"))
            if mutate:
                code = code.replace(*mutate)
            cell["source"] = code
            cell["outputs"], cell["execution_count"] = [], None
            filled += 1
    assert filled == 6
    os.makedirs(os.path.dirname(target), exist_ok=True)
    with open(target, "w", encoding="utf-8") as handle:
        json.dump(notebook, handle, ensure_ascii=False, indent=1)
    with open(os.path.join(os.path.dirname(target), "timestamp.txt"), "w") as handle:
        handle.write(TIMESTAMP)
    with open(os.path.join(os.path.dirname(target), "submission_secret.txt"), "w") as handle:
        handle.write(os.path.basename(os.path.dirname(os.path.dirname(target))) * 8)


def test_nbgrader_round_trip(tmp_path):
    env = _env(tmp_path)
    course = tmp_path / "course"
    course.mkdir()
    (course / "nbgrader_config.py").write_text(
        "c = get_config()\n"
        "c.CourseDirectory.course_id = 'attention-course'\n"
        f"c.Exchange.root = {str(tmp_path / 'exchange')!r}\n"
        f"c.CourseDirectory.root = {str(course)!r}\n", encoding="utf-8")
    (tmp_path / "exchange").mkdir()
    for student, first, last in (("alice", "Alice", "Wang"), ("bob", "Bo", "Li")):
        _nbgrader(["db", "student", "add", student, f"--first-name={first}",
                   f"--last-name={last}"], course, env)

    # the source notebook, from the one solution (the skeleton goes to tmp, not the kit)
    source = course / "source" / ASSIGNMENT / "attention.ipynb"
    _run([sys.executable, "-m", "grader", "release", "--output", str(tmp_path / "skeleton.py"),
          "--notebook", str(source)], KIT, env)
    text = source.read_text(encoding="utf-8")
    assert "### BEGIN SOLUTION" in text and "INSTRUCTOR ONLY" not in text
    assert "instructor's solution" not in text  # the instructor-only preface is gone

    _nbgrader(["generate_assignment", ASSIGNMENT], course, env)
    released = course / "release" / ASSIGNMENT / "attention.ipynb"
    released_text = released.read_text(encoding="utf-8")
    cells = json.loads(released_text)["cells"]
    code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    leaked = [line for line in _solution_lines() if line in code]
    assert not leaked, f"the released notebook gives answers away: {leaked[:3]}"
    assert "SOLUTION" not in released_text and "INSTRUCTOR" not in released_text
    with open(SOLUTION, encoding="utf-8") as handle:
        regions = handle.read().count("### BEGIN SOLUTION")
    assert code.count("raise NotImplementedError()") == regions  # a stub per region
    graded = {c["metadata"]["nbgrader"]["grade_id"]: c["metadata"]["nbgrader"]["points"]
              for c in cells if c["metadata"].get("nbgrader", {}).get("points") is not None}
    assert graded == PARTS

    # two students hand in: alice the solution, bob with .repeat in MultiHeadAttention
    submitted = course / "submitted"
    _fill(released, source, submitted / "alice" / ASSIGNMENT / "attention.ipynb")
    _fill(released, source, submitted / "bob" / ASSIGNMENT / "attention.ipynb", (RIGHT, WRONG))

    done = _run([sys.executable, "-m", "grader", "nbgrader", "--course", str(course), ASSIGNMENT,
                 "--jobs", "2"], KIT, env)
    assert "alice: 100/100" in done.stdout, done.stdout

    _nbgrader(["export"], course, env)
    with open(course / "grades.csv", encoding="utf-8") as handle:
        rows = {row["student_id"]: row for row in csv.DictReader(handle)}
    assert set(rows) == {"alice", "bob"}
    assert float(rows["alice"]["score"]) == 100 and float(rows["alice"]["max_score"]) == 100
    assert 0 < float(rows["bob"]["score"]) < 100, rows["bob"]
    assert float(rows["bob"]["max_score"]) == 100
    assert rows["alice"]["timestamp"].startswith("2026-03-02 09:30:00")
    assert rows["bob"]["first_name"] == "Bo"

    # the per-part grades, as formgrader shows them
    from nbgrader.api import Gradebook
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", "attention-course") as book:
        bob = {part: book.find_grade(part, "attention", ASSIGNMENT, "bob") for part in PARTS}
        assert bob["MultiHeadAttention"].score < 20 and bob["sequence_mask"].score == 11
        assert not any(grade.needs_manual_grade for grade in bob.values())

    # feedback where generate_feedback puts it; release_feedback hands out attention.html
    for student in ("alice", "bob"):
        folder = course / "feedback" / student / ASSIGNMENT
        assert (folder / "feedback.txt").is_file() and (folder / "attention.html").is_file()
    told = (course / "feedback" / "bob" / ASSIGNMENT / "feedback.txt").read_text(encoding="utf-8")
    assert "MultiHeadAttention" in told and "MultiHeadAttention: 20/20" not in told

    # nbgrader hands the kit's feedback out: one page per student, named after the notebook
    assert not (course / "feedback" / "bob" / ASSIGNMENT / "feedback.html").exists()
    _nbgrader(["release_feedback", ASSIGNMENT], course, env)
    released_pages = list((tmp_path / "exchange" / "attention-course" / "feedback").glob("*.html"))
    assert len(released_pages) == 2
    assert any("MultiHeadAttention" in p.read_text(encoding="utf-8") for p in released_pages)

    # the graded notebooks are where formgrader and generate_feedback read them, and
    # nbgrader's own feedback shows the kit's scores
    assert (course / "autograded" / "bob" / ASSIGNMENT / "attention.ipynb").is_file()
    _nbgrader(["generate_feedback", ASSIGNMENT, "--force"], course, env)
    page = (course / "feedback" / "bob" / ASSIGNMENT / "attention.html").read_text(encoding="utf-8")
    assert re.search(r"Score: %s(\.0)? / 100(\.0)?" % re.escape(f'{float(rows["bob"]["score"]):g}'), page), \
        re.findall(r"Score: [^<]*", page)[:3]

    # grading one student again (unchanged, so kept unless the grader itself changed since)
    # leaves the gradebook as it was
    again = _run([sys.executable, "-m", "grader", "nbgrader", "--course", str(course), ASSIGNMENT,
                  "bob"], KIT, env)
    assert re.search(r"^  bob: [\d.]+/100", again.stdout, re.M), again.stdout
    _nbgrader(["export", "--to", "again.csv"], course, env)
    with open(course / "again.csv", encoding="utf-8") as handle:
        assert {r["student_id"]: r["score"] for r in csv.DictReader(handle)} == \
            {s: r["score"] for s, r in rows.items()}


def test_nbgrader_command_needs_the_assignment_in_the_gradebook(tmp_path):
    env = _env(tmp_path)
    course = tmp_path / "course"
    course.mkdir()
    done = subprocess.run([sys.executable, "-m", "grader", "nbgrader", "--course", str(course),
                           ASSIGNMENT], cwd=KIT, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 2
    assert "generate_assignment" in done.stderr and "Traceback" not in done.stderr
