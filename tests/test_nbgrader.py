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
import shutil
import subprocess
import sys

import pytest

from conftest import KIT, SOLUTION
from grading import run_grader


@pytest.fixture(scope="module", autouse=True)
def _needs_nbgrader():
    """Skips every test here without the nbgrader extra. A fixture, not a line at the top: a
    collection that imports nbgrader (and Jupyter with it) costs each xdist worker 2 s."""
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


# nbgrader's own command line, in a process that leaves jsonschema's optional "iri" format
# checker out, as `grader nbgrader` does (nbgrader_bridge.leave_out_iri_checker: 1.8 s of CPU
# an nbgrader command, about 30 of them here)
NBGRADER = ("import sys; sys.modules['rfc3987_syntax'] = None; sys.argv[0] = 'nbgrader'; "
            "from nbgrader.apps.nbgraderapp import main; sys.exit(main())")


def _nbgrader(args, course, env):
    return _run([sys.executable, "-c", NBGRADER, *args], course, env)


def _add_students(course, env, students):
    """The course's students [id or (id, first name, last name)], in one `nbgrader db
    student import` (an nbgrader command costs a second or more: one, not one per student)."""
    listed = course.parent / f"{course.name}-students.csv"
    with open(listed, "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        named = all(isinstance(s, tuple) for s in students)
        writer.writerow(["id", "first_name", "last_name"] if named else ["id"])
        writer.writerows(students if named else [[s] for s in students])
    _nbgrader(["db", "student", "import", str(listed)], course, env)


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


def _fill(released, source, target, mutate=None, collected=True, cells=6):
    """A student's notebook: the released one, every stub cell filled in with the source
    notebook's code of that cell (markers dropped), optionally with a mistake; `collected`:
    with the timestamp.txt and submission_secret.txt `nbgrader collect` leaves beside it."""
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
    assert filled == cells
    os.makedirs(os.path.dirname(target), exist_ok=True)
    with open(target, "w", encoding="utf-8") as handle:
        json.dump(notebook, handle, ensure_ascii=False, indent=1)
    if not collected:
        return
    with open(os.path.join(os.path.dirname(target), "timestamp.txt"), "w") as handle:
        handle.write(TIMESTAMP)
    with open(os.path.join(os.path.dirname(target), "submission_secret.txt"), "w") as handle:
        handle.write(os.path.basename(os.path.dirname(os.path.dirname(target))) * 8)


COURSE_FILE = """due = 2026-03-01T00:00:00+00:00
[late_policy]
kind = "per_day"
percent = 10
[extensions]
alice = { days = 3650 }
"""
# bob's timestamp.txt (TIMESTAMP) is 33.5 hours after the due date: 2 days started, 10 % of
# 100 points each
BOB_PENALTY = 20.0


def _student_config(folder, tmp_path):
    folder.mkdir()
    (folder / "nbgrader_config.py").write_text(
        "c = get_config()\n"
        "c.CourseDirectory.course_id = 'attention-course'\n"
        f"c.Exchange.root = {str(tmp_path / 'exchange')!r}\n", encoding="utf-8")
    return folder


def _export(course, env, name):
    _nbgrader(["export", "--to", name], course, env)
    with open(course / name, encoding="utf-8") as handle:
        return {row["student_id"]: row for row in csv.DictReader(handle)}


@pytest.mark.slow
def test_nbgrader_round_trip(tmp_path):
    """alice submits through nbgrader's exchange, bob's notebook was collected with its
    timestamp (2 days late), chen's was copied into submitted/ by hand (no timestamp.txt,
    no submission_secret.txt), mallory is no student of the course: the three students are
    graded, exported with their times and bob's
    late penalty, get their feedback released, and an override survives a forced regrade."""
    env = _env(tmp_path)
    course = tmp_path / "course"
    course.mkdir()
    (course / "nbgrader_config.py").write_text(
        "c = get_config()\n"
        "c.CourseDirectory.course_id = 'attention-course'\n"
        f"c.Exchange.root = {str(tmp_path / 'exchange')!r}\n"
        f"c.CourseDirectory.root = {str(course)!r}\n", encoding="utf-8")
    (tmp_path / "exchange").mkdir()
    _add_students(course, env, [("alice", "Alice", "Wang"), ("bob", "Bo", "Li"),
                                ("chen", "Chen", "Xu"), ("dana", "Dana", "Ma")])

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

    # alice: through the exchange, as a student does (fetch, work, submit; the instructor collects)
    _nbgrader(["release_assignment", ASSIGNMENT], course, env)
    alice_home = _student_config(tmp_path / "alice-home", tmp_path)
    _nbgrader(["fetch_assignment", ASSIGNMENT], alice_home, env)
    _fill(released, source, alice_home / ASSIGNMENT / "attention.ipynb", collected=False)
    _nbgrader(["submit", ASSIGNMENT, "--student", "alice"], alice_home, env)
    _nbgrader(["collect", ASSIGNMENT], course, env)
    submitted = course / "submitted"
    assert (submitted / "alice" / ASSIGNMENT / "submission_secret.txt").is_file()
    # bob: collected earlier (his timestamp.txt), with .repeat in MultiHeadAttention
    _fill(released, source, submitted / "bob" / ASSIGNMENT / "attention.ipynb", (RIGHT, WRONG))
    # chen: the notebook alone, copied in by hand (docs/how-to/nbgrader.md allows it)
    _fill(released, source, submitted / "chen" / ASSIGNMENT / "attention.ipynb", collected=False)
    # dana: her folder holds no notebook (she put her answers in a text file)
    (submitted / "dana" / ASSIGNMENT).mkdir(parents=True)
    (submitted / "dana" / ASSIGNMENT / "answers.txt").write_text("see my email\n")
    # mallory: a folder for a student the course does not have (`nbgrader submit --student`
    # lets anyone name one), with a terminal escape in the name
    mallory = "mallory\x1b[2J"
    (submitted / mallory / ASSIGNMENT).mkdir(parents=True)
    shutil.copy(submitted / "chen" / ASSIGNMENT / "attention.ipynb",
                submitted / mallory / ASSIGNMENT / "attention.ipynb")

    # the course's late policy, beside the kit's results for the assignment
    (course / "grader" / ASSIGNMENT).mkdir(parents=True)
    (course / "grader" / ASSIGNMENT / "course.toml").write_text(COURSE_FILE, encoding="utf-8")

    done = _run([sys.executable, "-m", "grader", "nbgrader", "--course", str(course), ASSIGNMENT,
                 "--jobs", "2"], KIT, env)
    assert "alice: 100/100" in done.stdout and "chen: 100/100" in done.stdout, done.stdout
    assert re.search(r"^  bob: [\d.]+/100, late by 2 day\(s\): -20$", done.stdout, re.M), done.stdout
    copied = [line for line in done.stdout.splitlines() if line.startswith("Copied into submitted/")]
    assert len(copied) == 1 and "by hand, not collected: chen, dana." in copied[0], done.stdout
    assert "alice" not in copied[0] and "bob" not in copied[0]
    assert "Not students of the course in sqlite:///" in done.stdout
    assert re.search(r"^Not students of the course in \S+: mallory\[2J\. ", done.stdout, re.M)
    assert "\x1b" not in done.stdout + done.stderr  # a folder's name never reaches the terminal raw
    assert "Wrote 3 student(s)' scores" in done.stdout
    assert re.search(r"^  dana: missing work, no score written \(", done.stdout, re.M), done.stdout
    told = (course / "feedback" / "dana" / ASSIGNMENT / "feedback.txt").read_text(encoding="utf-8")
    assert "attention.ipynb was not found in the submission (it holds: answers.txt)" in told
    assert not (course / "feedback" / mallory).exists()

    rows = _export(course, env, "grades.csv")
    assert set(rows) == {"alice", "bob", "chen", "dana"}  # mallory was not added to the course
    # dana: nbgrader's own row of a student with no submission, not a graded 0
    assert (rows["dana"]["timestamp"], rows["dana"]["score"]) == ("", "0.0")
    from nbgrader.api import Gradebook, MissingEntry
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", "attention-course") as book:
        with pytest.raises(MissingEntry):
            book.find_submission(ASSIGNMENT, "dana")
    for student in rows:
        assert float(rows[student]["max_score"]) == 100
    assert float(rows["alice"]["score"]) == 100 and float(rows["chen"]["score"]) == 100
    bob_raw = float(rows["bob"]["raw_score"])
    assert 0 < bob_raw < 100, rows["bob"]
    assert float(rows["bob"]["late_submission_penalty"]) == BOB_PENALTY
    assert float(rows["bob"]["score"]) == bob_raw - BOB_PENALTY
    assert float(rows["alice"]["late_submission_penalty"]) == 0  # her extension
    assert float(rows["chen"]["late_submission_penalty"]) == 0   # no time: nothing charged
    assert rows["bob"]["timestamp"].startswith("2026-03-02 09:30:00")
    alice_time = (submitted / "alice" / ASSIGNMENT / "timestamp.txt").read_text().strip()
    assert rows["alice"]["timestamp"][:19] == alice_time[:19]  # nbgrader submit's own time
    assert rows["chen"]["timestamp"] == ""  # a copied notebook has none, as in nbgrader
    assert rows["bob"]["first_name"] == "Bo"

    # the per-part grades, as formgrader shows them
    from nbgrader.api import Gradebook
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", "attention-course") as book:
        bob = {part: book.find_grade(part, "attention", ASSIGNMENT, "bob") for part in PARTS}
        assert bob["MultiHeadAttention"].score < 20 and bob["sequence_mask"].score == 11
        assert not any(grade.needs_manual_grade for grade in bob.values())
        bob_mha = bob["MultiHeadAttention"].score

    # feedback where generate_feedback puts it; release_feedback hands out attention.html
    for student in ("alice", "bob", "chen"):
        folder = course / "feedback" / student / ASSIGNMENT
        assert (folder / "feedback.txt").is_file() and (folder / "attention.html").is_file()
    told = (course / "feedback" / "bob" / ASSIGNMENT / "feedback.txt").read_text(encoding="utf-8")
    assert "MultiHeadAttention" in told and "MultiHeadAttention: 20/20" not in told

    # nbgrader hands the kit's feedback out: one page per student, named after the notebook;
    # chen's copied submission no longer stops it (it did: FileNotFoundError, timestamp.txt)
    assert not (course / "feedback" / "bob" / ASSIGNMENT / "feedback.html").exists()
    _nbgrader(["release_feedback", ASSIGNMENT], course, env)
    outbound = tmp_path / "exchange" / "attention-course" / "feedback"
    released_pages = sorted(p.name for p in outbound.glob("*.html"))
    assert len(released_pages) == 4  # dana's says what her folder held
    assert any("MultiHeadAttention" in (outbound / p).read_text(encoding="utf-8")
               for p in released_pages)
    # and alice, who submitted through the exchange, fetches hers
    _nbgrader(["fetch_feedback", ASSIGNMENT, "--student", "alice"], alice_home, env)
    fetched = list((alice_home / ASSIGNMENT / "feedback").glob("*/attention.html"))
    assert len(fetched) == 1
    assert fetched[0].read_bytes() == \
        (course / "feedback" / "alice" / ASSIGNMENT / "attention.html").read_bytes()

    # the graded notebooks are where formgrader and generate_feedback read them, and
    # nbgrader's own feedback shows the kit's scores, less the late penalty
    assert (course / "autograded" / "bob" / ASSIGNMENT / "attention.ipynb").is_file()
    _nbgrader(["generate_feedback", ASSIGNMENT, "--force"], course, env)
    page = (course / "feedback" / "bob" / ASSIGNMENT / "attention.html").read_text(encoding="utf-8")
    final = bob_raw - BOB_PENALTY
    assert re.search(r"Score: %s(\.0)? / 100(\.0)?" % re.escape(f"{final:g}"), page), \
        re.findall(r"Score: [^<]*", page)[:3]
    # nbgrader's own feedback of the copied submission is released too, under the same name
    _nbgrader(["release_feedback", ASSIGNMENT], course, env)
    assert sorted(p.name for p in outbound.glob("*.html")) == released_pages

    # grading one student again (unchanged, so kept unless the grader itself changed since)
    # leaves the gradebook as it was
    again = _run([sys.executable, "-m", "grader", "nbgrader", "--course", str(course), ASSIGNMENT,
                  "bob"], KIT, env)
    assert re.search(r"^  bob: [\d.]+/100", again.stdout, re.M), again.stdout
    assert {s: r["score"] for s, r in _export(course, env, "again.csv").items()} == \
        {s: r["score"] for s, r in rows.items()}

    # an instructor's override of bob's MultiHeadAttention survives a forced regrade and
    # reaches nbgrader's gradebook; the late penalty still applies
    _run([sys.executable, "-m", "grader", "override", "--out", str(course / "grader" / ASSIGNMENT),
          "bob", "MultiHeadAttention", "20", "--reason", "regrade request granted"], KIT, env)
    _run([sys.executable, "-m", "grader", "nbgrader", "--course", str(course), ASSIGNMENT, "bob",
          "--force"], KIT, env)
    after = _export(course, env, "after.csv")
    assert float(after["bob"]["raw_score"]) == bob_raw - bob_mha + 20
    assert float(after["bob"]["late_submission_penalty"]) == BOB_PENALTY
    assert float(after["bob"]["score"]) == bob_raw - bob_mha + 20 - BOB_PENALTY
    assert {s: after[s]["score"] for s in ("alice", "chen")} == \
        {s: rows[s]["score"] for s in ("alice", "chen")}


def _transformer_course(tmp_path, students):
    """(env, course): an nbgrader course folder for the transformer with `students`."""
    env = _env(tmp_path)
    course = tmp_path / "course"
    course.mkdir()
    (course / "nbgrader_config.py").write_text(
        "c = get_config()\n"
        "c.CourseDirectory.course_id = 'transformer-course'\n"
        f"c.CourseDirectory.root = {str(course)!r}\n", encoding="utf-8")
    _add_students(course, env, list(students))
    return env, course


@pytest.mark.slow
def test_nbgrader_round_trip_of_an_assignment_that_builds_on_another(tmp_path):
    """The transformer (`from attention import MultiHeadAttention`, provide = "given"):
    `grader release --notebook` puts the given attention.py beside the source notebook,
    nbgrader releases it with the notebook, the released notebook's setup cell imports it
    where a student opens it, and `grader nbgrader --assignment transformer` grades a
    notebook handed in with that file and one handed in alone (the grader stages its own
    copy) at 100, with the transformer's parts in nbgrader's gradebook."""
    from grader import assignment
    from grader.release.folder import given_modules
    declared = assignment.load("transformer")
    name = declared.name
    env, course = _transformer_course(tmp_path, ("alice", "bob"))
    source = course / "source" / name / "transformer.ipynb"
    done = _run([sys.executable, "-m", "grader", "release", "--assignment", name, "--output",
                 str(tmp_path / "skeleton.py"), "--notebook", str(source)], KIT, env)
    given = given_modules(declared)["attention.py"]
    assert (source.parent / "attention.py").read_text(encoding="utf-8") == given
    assert "given code beside the notebook" in done.stdout

    _nbgrader(["generate_assignment", name], course, env)
    released = course / "release" / name
    assert sorted(p.name for p in released.iterdir()) == ["attention.py", "transformer.ipynb"]
    assert (released / "attention.py").read_text(encoding="utf-8") == given
    cells = json.loads((released / "transformer.ipynb").read_text(encoding="utf-8"))["cells"]
    setup = ["".join(c["source"]) for c in cells
             if c["metadata"].get("nbgrader", {}).get("grade_id") == "setup"]
    assert setup and "from attention import" in setup[0]
    # where a student opens the released notebook, its setup cell runs
    _run([sys.executable, "-c", setup[0]], released, env)
    graded = {c["metadata"]["nbgrader"]["grade_id"]: c["metadata"]["nbgrader"]["points"]
              for c in cells if c["metadata"].get("nbgrader", {}).get("points") is not None}
    assert graded == {"PositionalEncoding": 24, "PositionWiseFFN": 10, "AddNorm": 18,
                      "TransformerEncoderBlock": 36, "GPU": 12}

    submitted = course / "submitted"
    _fill(released / "transformer.ipynb", source,
          submitted / "alice" / name / "transformer.ipynb", cells=4)
    shutil.copy(released / "attention.py", submitted / "alice" / name / "attention.py")
    _fill(released / "transformer.ipynb", source,
          submitted / "bob" / name / "transformer.ipynb", cells=4, collected=False)
    done = _run([sys.executable, "-m", "grader", "nbgrader", "--course", str(course), name,
                 "--assignment", name, "--jobs", "2"], KIT, env)
    assert "alice: 100/100" in done.stdout and "bob: 100/100" in done.stdout, done.stdout
    rows = _export(course, env, "grades.csv")
    assert {s: float(r["score"]) for s, r in rows.items()} == {"alice": 100.0, "bob": 100.0}
    from nbgrader.api import Gradebook
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", "transformer-course") as book:
        assert book.find_grade("AddNorm", "transformer", name, "bob").score == 18


@pytest.mark.slow
def test_nbgrader_command_needs_the_assignment_in_the_gradebook(tmp_path):
    env = _env(tmp_path)
    course = tmp_path / "course"
    course.mkdir()
    done = run_grader("nbgrader", "--course", str(course), ASSIGNMENT, env=env, timeout=300)
    assert done.returncode == 2
    assert "generate_assignment" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.slow
def test_scores_record_writes_the_time_and_penalty_and_keeps_a_manual_score(tmp_path):
    """scores.record through nbgrader's API, without grading: timestamp.txt's time and the
    late penalty land where `nbgrader export` reads them, quietly, and a score an instructor
    gave in formgrader still wins over the kit's."""
    import warnings
    from nbgrader.api import Gradebook
    from grader.nbgrader_bridge import scores
    url = f"sqlite:///{tmp_path / 'gradebook.db'}"
    with Gradebook(url) as book:
        book.add_assignment(ASSIGNMENT)
        book.add_notebook("attention", ASSIGNMENT)
        for part in ("sequence_mask", "masked_softmax"):
            book.add_grade_cell(part, "attention", ASSIGNMENT, max_score=PARTS[part], cell_type="code")
    with Gradebook(url) as book, warnings.catch_warnings():
        warnings.simplefilter("error")  # nbgrader's "not in session" noise stays out of the console
        scores.record(book, ASSIGNMENT, "attention", "bob", TIMESTAMP,
                      {"sequence_mask": 11, "masked_softmax": 7}, penalty=3.5)
    with Gradebook(url) as book:
        submission = book.find_submission(ASSIGNMENT, "bob")
        assert str(submission.timestamp) == "2026-03-02 09:30:00"
        assert (submission.score, submission.late_submission_penalty) == (18.0, 3.5)
        grade = book.find_grade("masked_softmax", "attention", ASSIGNMENT, "bob")
        grade.manual_score = 20.0
        book.db.commit()
        scores.record(book, ASSIGNMENT, "attention", "bob", None,
                      {"sequence_mask": 11, "masked_softmax": 5}, penalty=0)
    with Gradebook(url) as book:
        submission = book.find_submission(ASSIGNMENT, "bob")
        assert submission.score == 31.0 and submission.late_submission_penalty == 0.0
        assert str(submission.timestamp) == "2026-03-02 09:30:00"  # no timestamp.txt: kept


@pytest.mark.slow
def test_nbgrader_takes_a_students_own_earlier_module_from_their_earlier_submission(tmp_path):
    """provide = "student" (a copy of the kit whose transformer says so): each student's
    transformer notebook imports their own attention. alice handed it in for the earlier
    assignment only (submitted/alice/attn-week/attention.ipynb, named by --earlier
    attention=attn-week), bob beside the transformer notebook as attention.py, with a
    mistake in his MultiHeadAttention: his encoder block's cases fail as they run with it,
    and are judged on the block's own code with MultiHeadAttention answered (error carried
    forward), so the mistake costs his attention assignment, not this one; carol handed it
    in nowhere, and her feedback says where it was looked for."""
    from grader import assignment
    from conftest import student_provided_kit
    kit = student_provided_kit(tmp_path / "kit",
                               ("grader", "tests_hidden", "solutions", "assignments"))
    name = assignment.load("transformer").name
    env, course = _transformer_course(tmp_path, ("alice", "bob", "carol"))
    source = course / "source" / name / "transformer.ipynb"
    _run([sys.executable, "-m", "grader", "release", "--assignment", name, "--output",
          str(tmp_path / "skeleton.py"), "--notebook", str(source)], kit, env)
    assert sorted(p.name for p in source.parent.iterdir()) == ["transformer.ipynb"]  # nothing given
    _nbgrader(["generate_assignment", name], course, env)
    released = course / "release" / name / "transformer.ipynb"
    submitted = course / "submitted"
    for student in ("alice", "bob", "carol"):
        _fill(released, source, submitted / student / name / "transformer.ipynb", cells=4)
    attention = (kit / "solutions" / "attention.py").read_text(encoding="utf-8")
    right = "valid_lens = torch.repeat_interleave(valid_lens, repeats=self.num_heads, dim=0)"
    assert right in attention
    (submitted / "alice" / "attn-week").mkdir()
    (submitted / "alice" / "attn-week" / "attention.ipynb").write_text(json.dumps(
        {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
            {"cell_type": "code", "metadata": {}, "source": attention, "outputs": [],
             "execution_count": None}]}), encoding="utf-8")
    (submitted / "bob" / name / "attention.py").write_text(
        attention.replace(right, "valid_lens = valid_lens.repeat(self.num_heads)"),
        encoding="utf-8")
    done = _run([sys.executable, "-m", "grader", "nbgrader", "--course", str(course), name,
                 "--assignment", name, "--earlier", "attention=attn-week", "--jobs", "2"],
                kit, env)
    rows = _export(course, env, "grades.csv")
    assert float(rows["alice"]["score"]) == 100.0, done.stdout
    assert float(rows["bob"]["score"]) == 100.0, done.stdout
    from nbgrader.api import Gradebook
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", "transformer-course") as book:
        assert book.find_grade("PositionalEncoding", "transformer", name, "bob").score == 24
        assert book.find_grade("TransformerEncoderBlock", "transformer", name, "bob").score == 36
        # carol's parts that need no attention stand; the block that imports it cannot run
        assert book.find_grade("AddNorm", "transformer", name, "carol").score == 18
        assert book.find_grade("TransformerEncoderBlock", "transformer", name, "carol").score == 0
    told = {s: (course / "feedback" / s / name / "feedback.txt").read_text(encoding="utf-8")
            for s in ("alice", "bob", "carol")}
    assert "taken from your submission" not in told["bob"]
    # his own attention.py ran: the block's cases failed with it, and say how they were judged
    assert ("give the right result once MultiHeadAttention answers correctly, so "
            "TransformerEncoderBlock's own code is right there") in told["bob"]
    assert "MultiHeadAttention comes from your attention.py" in told["bob"]
    assert "answers correctly" not in told["alice"]
    assert ("attention.ipynb was taken from your submission of the earlier assignment "
            "(attn-week), because it was not handed in with this one") in told["alice"]
    assert ("attention.py, your module of the earlier assignment, was found neither beside "
            "this notebook nor in your submission of the earlier assignment (attn-week)") \
        in told["carol"]
    # a name that is no earlier assignment of this one is refused before anything is graded
    refused = run_grader("nbgrader", "--course", str(course), name, "--assignment", name,
                         "--earlier", "attn=x", cwd=kit, env=env, timeout=300)
    assert refused.returncode == 2
    assert ("--earlier attn=x: expected KIT=COURSE, KIT one of the earlier assignments whose "
            "module students provide (attention)") in refused.stderr


def test_stage_copies_the_earlier_module_from_beside_else_from_the_earlier_submission(tmp_path):
    """course.stage with an earlier module: beside the notebook wins (the .py over the
    .ipynb), else the same student's earlier submission; a link is never followed, and is
    said; an earlier notebook in the folder is not taken for the renamed work."""
    from grader.nbgrader_bridge import course
    work = tmp_path / "submitted" / "ann" / "week2"
    earlier = tmp_path / "submitted" / "ann" / "week1"
    work.mkdir(parents=True)
    earlier.mkdir()
    (work / "transformer.ipynb").write_text("{}")
    (earlier / "attention.ipynb").write_text("[1]")
    entry = course.Submitted("ann", str(work))
    notes = course.stage(entry, "transformer", str(tmp_path / "a"), [("attention", str(earlier))])
    assert sorted(os.listdir(tmp_path / "a")) == ["attention.ipynb", "transformer.ipynb"]
    assert notes == ["attention.ipynb was taken from your submission of the earlier assignment "
                     "(week1), because it was not handed in with this one"]
    (work / "attention.ipynb").write_text("[2]")
    (work / "attention.py").write_text("x = 3\n")
    assert course.stage(entry, "transformer", str(tmp_path / "b"),
                        [("attention", str(earlier))]) == []
    assert sorted(os.listdir(tmp_path / "b")) == ["attention.py", "transformer.ipynb"]
    (work / "attention.py").unlink()
    (work / "attention.py").symlink_to(earlier / "attention.ipynb")
    assert course.stage(entry, "transformer", str(tmp_path / "c"),
                        [("attention", str(earlier))]) == [
        "attention.py is not a regular file of at most 20 MB; it was not used"]
    assert sorted(os.listdir(tmp_path / "c")) == ["transformer.ipynb"]
    # the work renamed: every notebook but the earlier one goes to intake
    (work / "attention.py").unlink()
    (work / "transformer.ipynb").rename(work / "mine.ipynb")
    course.stage(entry, "transformer", str(tmp_path / "d"), [("attention", str(earlier))])
    assert sorted(os.listdir(tmp_path / "d")) == ["attention.ipynb", "mine.ipynb"]
    assert (tmp_path / "d" / "attention.ipynb").read_text() == "[2]"
    # ... and an earlier notebook that cannot be read is said once, as the earlier module
    (work / "attention.ipynb").unlink()
    (work / "attention.ipynb").symlink_to(earlier / "attention.ipynb")
    assert course.stage(entry, "transformer", str(tmp_path / "e"),
                        [("attention", str(earlier))]) == [
        "transformer.ipynb was not found in the submission (it holds: attention.ipynb, mine.ipynb)",
        "attention.ipynb is not a regular file of at most 20 MB; it was not used"]
    # an earlier submission folder that is a link (to a classmate's) is never followed
    (work / "attention.ipynb").unlink()
    other = tmp_path / "submitted" / "ben" / "week1"
    other.mkdir(parents=True)
    (other / "attention.ipynb").write_text("[3]")
    earlier.rename(tmp_path / "moved")
    earlier.symlink_to(other)
    assert course.stage(entry, "transformer", str(tmp_path / "f"),
                        [("attention", str(earlier))]) == [
        "transformer.ipynb was not found in the submission (it holds: mine.ipynb)",
        "attention.py, your module of the earlier assignment, was found neither beside this "
        "notebook nor in your submission of the earlier assignment (week1)"]
    assert sorted(os.listdir(tmp_path / "f")) == ["mine.ipynb"]


def test_the_notes_before_a_students_nbgrader_feedback_are_in_their_language(tmp_path):
    from grader import i18n
    from grader.nbgrader_bridge import course, feedback
    work = tmp_path / "submitted" / "ann" / "week2"
    work.mkdir(parents=True)
    (work / "mine.ipynb").write_text("{}")
    before = i18n.language()
    try:
        i18n.set_language("zh")
        notes = course.stage(course.Submitted("ann", str(work)), "transformer",
                             str(tmp_path / "staged"), [("attention", str(tmp_path / "none"))])
        feedback.write(str(tmp_path / "no-results"), str(tmp_path / "out"), "transformer", notes)
    finally:
        i18n.set_language(before)
    assert (tmp_path / "out" / "feedback.txt").read_text(encoding="utf-8") == (
        "注意：提交中没有找到 transformer.ipynb（其中有：mine.ipynb）\n"
        "注意：你前一次作业的模块 attention.py 既不在这个笔记本旁边，也不在你对前一次作业（none）的提交中\n"
        "\n评分程序没有为这份提交写出反馈。\n")
