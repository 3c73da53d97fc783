"""`grader grade` end to end, as an instructor runs it: the examples, the gradebook, results.json,
and a failure of the grader itself reported as such."""
import csv
import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import KIT, SOLUTION
from grader import forkserver
from grader.grade import SuiteOptions
from grading import grades, run_grader

EXAMPLES = os.path.join(KIT, "examples")
EXPECTED = {"alice": "full", "bob": "MultiHeadAttention", "chen": "masked_softmax",
            "dana": "transpose", "erik": "zero", "fatima": "zero"}


def _grade(args, tmp_path, **kwargs):
    return run_grader("grade", *args, "--out", tmp_path / "out", "--jobs", "2", **kwargs)


@pytest.fixture(scope="module")
def graded_examples(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("examples")
    paths = sorted(os.path.join(EXAMPLES, name) for name in os.listdir(EXAMPLES))
    done = _grade(paths, tmp_path)
    rows = grades(tmp_path / "out")
    return done, rows, tmp_path / "out"


@pytest.mark.slow
def test_grading_runs_and_exits_0(graded_examples):
    done, rows, _ = graded_examples
    assert done.returncode == 0, done.stdout + done.stderr
    assert set(rows) == set(EXPECTED)
    assert "[  6/6  ]" in done.stdout  # progress as it goes


def _part(row, part):
    key = next(k for k in row if k.startswith(part + " "))
    return float(row[key]), float(key.split("/")[1].rstrip(")"))


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_example_scores_as_documented(graded_examples, name):
    _, rows, _ = graded_examples
    row = rows[name]
    total, top = float(row["total"]), float(row["max"])
    assert top == 100
    expected = EXPECTED[name]
    if expected == "full":
        assert total == top
    elif expected == "zero":
        assert total == 0 and row["reason"]
    else:
        score, part_max = _part(row, expected)
        assert score < part_max and 0 < total < top


@pytest.mark.slow
def test_results_json_has_gradescope_fields(graded_examples):
    _, _, out = graded_examples
    for name in EXPECTED:
        with open(out / name / "results.json", encoding="utf-8") as handle:
            results = json.load(handle)
        assert isinstance(results["score"], float)
        assert results["tests"], name
        for test in results["tests"]:
            assert set(test) >= {"name", "score", "max_score", "status", "output", "visibility"}
            assert test["status"] in ("passed", "failed")
            assert test["score"] in (0, test["max_score"])
        assert sum(t["score"] for t in results["tests"]) == results["score"]
        assert results["extra_data"]["isolation"]["level"] in ("bwrap", "unshare", "none")
        # what really limited this submission's workers, not only what the machine offers
        assert results["extra_data"]["isolation"]["memory_limit"] in (
            "cgroup v1", "cgroup v2", "watchdog (PSS)"), results["extra_data"]["isolation"]
        # torch was imported once for the batch: every worker forked from its template
        assert results["extra_data"]["isolation"]["worker_start"] == (
            "forked from a template that imported torch once per batch"), results["extra_data"]


@pytest.mark.slow
def test_feedback_teaches(graded_examples):
    _, _, out = graded_examples
    bob = (out / "bob" / "feedback.txt").read_text(encoding="utf-8")
    assert "valid_lens is repeated" in bob and "%matplotlib inline" in bob
    chen = (out / "chen" / "feedback.txt").read_text(encoding="utf-8")
    assert "GBK" in chen and "-inf" in chen
    erik = (out / "erik" / "feedback.txt").read_text(encoding="utf-8")
    assert "line 59" in erik or "line" in erik and "SyntaxError" in erik
    fatima = (out / "fatima" / "feedback.txt").read_text(encoding="utf-8")
    assert "`d2l`" in fatima


@pytest.mark.slow
def test_a_broken_reference_is_a_grader_error_not_a_zero(tmp_path):
    broken = tmp_path / "solution.py"
    broken.write_text(open(SOLUTION, encoding="utf-8").read().replace(
        "    return nn.functional.softmax(X.reshape(shape), dim=-1)  # (B, Q, K)",
        "    raise RuntimeError('bug in the reference')"), encoding="utf-8")
    done = _grade([os.path.join(EXAMPLES, "alice.py"), "--solution", str(broken)], tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    with open(tmp_path / "out" / "grades.csv", encoding="utf-8-sig") as handle:
        row = next(csv.DictReader(handle))
    assert row["status"] == "grader error" and row["total"] == ""
    results = json.loads((tmp_path / "out" / "alice" / "results.json").read_text())
    failed = [t for t in results["tests"] if t["status"] == "failed"]
    assert failed and all("not your fault" in t["output"] for t in failed)
    log = (tmp_path / "out" / "alice" / "grader-errors.log").read_text()
    assert "bug in the reference" in log


@pytest.mark.slow
def test_a_broken_hidden_suite_stops_with_a_message_and_no_rows(tmp_path):
    hidden = tmp_path / "tests_hidden"
    shutil.copytree(os.path.join(KIT, "tests_hidden", "attention"), hidden,
                    ignore=shutil.ignore_patterns("__pycache__"))
    (hidden / "cases.py").write_text("raise ImportError('a typo in the case table')\n")
    done = _grade([os.path.join(EXAMPLES, "alice.py"), "--hidden-tests", str(hidden)], tmp_path)
    assert done.returncode == 2
    assert "nothing was graded" in done.stderr and "a typo in the case table" in done.stderr
    assert not (tmp_path / "out" / "grades.csv").exists()


def test_command_line_mistakes_are_one_line_and_grade_nothing(tmp_path):
    """A typo'd path or an --out that is a file: exit 2 and one line, before any grading."""
    typo = _grade([SOLUTION, str(tmp_path / "alcie.py")], tmp_path)
    assert typo.returncode == 2 and "alcie.py" in typo.stderr
    assert len(typo.stderr.strip().splitlines()) == 1 and "Traceback" not in typo.stderr
    assert not (tmp_path / "out").exists()
    (tmp_path / "out").write_text("not a folder")
    clash = _grade([SOLUTION], tmp_path)
    assert clash.returncode == 2 and "not a folder" in clash.stderr
    assert len(clash.stderr.strip().splitlines()) == 1


@pytest.mark.slow
def test_points_that_do_not_add_up_to_the_declared_total_stop_the_batch(tmp_path):
    """Changing a case's points without the declaration's is refused, naming the part and the
    total, not graded 101/101."""
    suite = tmp_path / "tests_hidden"
    shutil.copytree(os.path.join(KIT, "tests_hidden", "attention"), suite,
                    ignore=shutil.ignore_patterns("__pycache__"))
    table = (suite / "cases.py").read_text(encoding="utf-8")
    book = 'yield Case(part, N_("the book\'s example"), 1, "sequence_mask",'
    assert table.count(book) == 1
    (suite / "cases.py").write_text(table.replace(book, book.replace(", 1,", ", 2,")),
                                    encoding="utf-8")
    done = _grade([SOLUTION, "--hidden-tests", str(suite)], tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "add up to 101, not the assignment's declared total of 100" in done.stderr
    assert ("part 'sequence_mask': its cases' points add up to 12, not the 11 the declaration "
            "gives it") in done.stderr
    assert not (tmp_path / "out" / "grades.csv").exists()


@pytest.mark.slow
def test_the_readme_example_table_is_what_a_run_gives(graded_examples):
    """The README's table of example scores is kept true by this run."""
    _, rows, _ = graded_examples
    with open(os.path.join(KIT, "README.md"), encoding="utf-8") as handle:
        table = [line for line in handle if line.startswith("| `")]
    documented = {}
    for line in table:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        name = cells[0].strip("`").rstrip("/")
        stem = os.path.splitext(name)[0]
        if stem in EXPECTED:
            documented[stem] = cells[-1].split(":")[0].split(",")[0].strip()
    assert set(documented) == set(EXPECTED)
    assert {n: rows[n]["total"] for n in documented} == documented


SLEEPS_ONCE = """_slept = []


def _sleep_the_first_time():
    if not _slept:
        _slept.append(True)
        import time
        time.sleep(30)
"""


def _suite_by_hand(options, tmp_path, *args, env=None, pass_fds=()):
    """The hidden suite run as pytest in a process of its own, as a trusted process started
    fresh (or an instructor by hand) runs it, with `options`' arguments and `args`."""
    return subprocess.run([sys.executable, "-m", "pytest", *options.pytest_args(), *args],
                          cwd=tmp_path, env=dict(forkserver.environment(), **(env or {})),
                          pass_fds=pass_fds, capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_a_test_stopped_by_pytest_timeout_is_the_students_and_says_its_limit(tmp_path):
    """The trusted process runs the hidden suite with few of pytest's plugins (trusted.py
    leaves capture and warnings out, among others): a test that pytest-timeout stops there is
    still blamed on the submission, with the message a student reads, and the report comes.
    Run as a trusted process started fresh runs it; `sequence_mask`'s first call sleeps past
    a 2 s limit (its later calls, by the session's end, do not)."""
    with open(SOLUTION, encoding="utf-8") as handle:
        lines = handle.read().splitlines(keepends=True)
    first = next(i for i, line in enumerate(lines) if line.startswith("def sequence_mask("))
    body = next(i for i in range(first, len(lines)) if lines[i].rstrip().endswith(":")) + 1
    lines.insert(body, "    _sleep_the_first_time()\n")
    submission = tmp_path / "attention.py"
    submission.write_text(SLEEPS_ONCE + "".join(lines), encoding="utf-8")
    read, write = os.pipe()
    done = _suite_by_hand(SuiteOptions(no_gpu=True, carry_forward="off"), tmp_path,
                          "--submission", str(submission), "--stage-dir", str(tmp_path),
                          "--timeout", "2", "-x", "--attnkit-report-fd", str(write),
                          pass_fds=(write,))
    os.close(write)
    with os.fdopen(read, "rb") as handle:
        report = json.loads(handle.read())
    failed = [t for t in report["tests"] if t["outcome"] == "failed"]
    assert done.returncode == 1 and len(failed) == 1, done.stdout[-3000:]
    assert failed[0]["target"] == "sequence_mask" and failed[0]["blame"] == "student"
    assert failed[0]["message"] == ("This test took longer than its time limit (2.0 s) and "
                                    "was stopped."), failed[0]["message"]
    assert "Timeout (>2.0s) from pytest-timeout." in done.stdout  # its console, as it was


@pytest.mark.slow
def test_the_hidden_suite_run_by_hand_leaves_no_stage_folder(tmp_path):
    """pytest run by hand on a hidden suite (no --stage-dir, which `grader grade` always
    passes) makes the workers' stage folder itself: it goes when the session ends. Each such
    run left one in the temporary folder, with the worker's runtime in it."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    done = _suite_by_hand(SuiteOptions(no_gpu=True), tmp_path, "--submission", SOLUTION,
                          "-k", "sequence_mask", env={"TMPDIR": str(scratch)})
    assert done.returncode == 0 and " passed" in done.stdout, done.stdout[-3000:]
    assert os.listdir(scratch) == []
