"""Every mistake on the `grader` command line is one line on stderr and exit status 2,
before anything is read, graded or written (each command's `problem` in grader/commands/,
and the parser grader/cli.py builds)."""
import os

import pytest

from conftest import KIT, SOLUTION
from grading import run_grader

ALICE = os.path.join(KIT, "examples", "alice.py")

# (arguments, a piece of the one line that must say why); {tmp} is a fresh empty folder,
# which is also the current folder of the command
MISTAKES = [
    # docs/how-to/nbgrader.md's own example, run from a course folder instead of the kit
    (["release", "--output", "{tmp}/s.py", "--notebook", "{tmp}/nb/a.ipynb",
      "--readme", "assignments/attention/README.zh-CN.md"],
     "--readme assignments/attention/README.zh-CN.md: no such file (relative paths are read "
     "from the current folder, {tmp}); the kit's Chinese README is "
     + os.path.join(KIT, "assignments", "attention", "README.zh-CN.md")),
    (["release", "--solution", "nope.py", "--output", "{tmp}/s.py"],
     "--solution nope.py: no such file (relative paths are read from the current folder, {tmp})"),
    (["release", "--solution", "{tmp}", "--output", "{tmp}/s.py"], "--solution {tmp} is not a file"),
    (["release", "--output", "{tmp}"], "--output {tmp} is a folder; give the file to write"),
    (["release", "--output", "{tmp}", "--check"], "--output {tmp} is a folder"),
    (["release", "--output", "{tmp}/s.py", "--notebook", "{tmp}"], "--notebook {tmp} is a folder"),
    (["release", "--output", "{tmp}/s.py", "--frobnicate"], "unrecognized arguments: --frobnicate"),
    (["gradescope", "--out", "{tmp}/missing/autograder.zip"],
     "--out {tmp}/missing/autograder.zip: the folder {tmp}/missing does not exist"),
    (["gradescope", "--out", "{tmp}"], "--out {tmp} is a folder"),
    (["gradescope", "--out", "{tmp}/a.zip", "--visibility", "sometimes"],
     "argument --visibility: invalid choice: 'sometimes'"),
    (["export", "canvas", "--out", "{tmp}/missing/x.csv", "--from", "{tmp}"],
     "the folder {tmp}/missing does not exist"),
    (["export", "blackboard", "--out", "{tmp}/x.csv"], "invalid choice: 'blackboard'"),
    (["grade", ALICE, "--out", "{tmp}/g", "--solution", "nope.py"], "--solution nope.py: no such file"),
    (["grade", ALICE, "--out", "{tmp}/g", "--hidden-tests", "{tmp}"],
     "--hidden-tests {tmp} holds no cases.py: it is not a hidden suite"),
    (["grade", ALICE, "--out", "{tmp}/g", "--hidden-tests", "{tmp}/none"],
     "--hidden-tests {tmp}/none: no such folder"),
    (["grade", ALICE, "--out", "{tmp}/g", "--jobs", "0"], "--jobs 0: give 1 or more"),
    (["grade", ALICE, "--out", "{tmp}/g", "--results-json", "{tmp}/missing/r.json"],
     "--results-json {tmp}/missing/r.json: the folder {tmp}/missing does not exist"),
    (["grade", ALICE, "--out", "{tmp}/g", "--jobs", "two"], "argument --jobs: invalid int value"),
    (["grade", "--out", "{tmp}/g"], "the following arguments are required: SUBMISSION"),
    (["validate", "--solution", "nope.py"], "--solution nope.py: no such file"),
    (["validate", "--docs", "{tmp}/missing/mistakes.md"], "the folder {tmp}/missing does not exist"),
    (["nbgrader", "--course", "{tmp}", "attention", "--solution", "nope.py"],
     "--solution nope.py: no such file"),
    (["nbgrader", "--course", "{tmp}", "attention", "--jobs", "-1"], "--jobs -1: give 1 or more"),
    (["frobnicate"], "invalid choice: 'frobnicate'"),
    # a limit of 0 (or below, or not a number) grades every submission, the solution too, as 0
    (["grade", ALICE, "--out", "{tmp}/g", "--memory-mb", "-5"],
     "--memory-mb -5: give a number above 0 (default 3072)"),
    (["grade", ALICE, "--out", "{tmp}/g", "--call-seconds", "0"],
     "--call-seconds 0: give a number above 0 (default 10)"),
    (["validate", "--submission-seconds", "nan"], "--submission-seconds nan: give a number above 0"),
    (["nbgrader", "--course", "{tmp}", "attention", "--processes", "0"], "--processes 0"),
    (["validate", "--out", "{tmp}/file"], "--out {tmp}/file exists and is not a folder"),
]


@pytest.mark.parametrize("argv, reason", MISTAKES, ids=[" ".join(m[0][:2]) + f" #{i}"
                                                       for i, m in enumerate(MISTAKES)])
def test_a_usage_error_is_one_line_and_exit_2(tmp_path, argv, reason):
    tmp = str(tmp_path)
    argv = [a.replace("{tmp}", tmp) for a in argv]
    if "{tmp}/file" in reason:
        (tmp_path / "file").write_text("not a folder\n")
    done = run_grader(*argv, cwd=tmp, env={**os.environ, "PYTHONPATH": KIT}, timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert reason.replace("{tmp}", tmp) in lines[0]
    assert lines[0].startswith("grader"), lines[0]
    assert sorted(os.listdir(tmp)) == (["file"] if "{tmp}/file" in reason else []), \
        "nothing is written on a usage error"
    assert done.stdout == ""


def test_a_relative_readme_that_exists_is_read_from_the_current_folder(tmp_path):
    """The fix is not a refusal of relative paths: one that is there is used."""
    pytest.importorskip("nbformat")
    readme = tmp_path / "mine.md"
    with open(os.path.join(KIT, "assignments", "attention", "README.zh-CN.md"), encoding="utf-8") as h:
        readme.write_text(h.read(), encoding="utf-8")
    done = run_grader("release", "--solution", SOLUTION, "--output", "s.py", "--notebook",
                      "nb/a.ipynb", "--readme", "mine.md", cwd=tmp_path,
                      env={**os.environ, "PYTHONPATH": KIT}, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "## 第 1 部分" in (tmp_path / "nb" / "a.ipynb").read_text(encoding="utf-8")


def test_a_zip_that_cannot_be_finished_leaves_no_file(tmp_path):
    """A zip whose writing fails halfway is not left under the name a good one would have
    (nor as the partial file)."""
    from grader.platforms.gradescope.autograder import build
    kit = tmp_path / "kit"
    kit.mkdir()
    (kit / "grader").mkdir()
    (kit / "grader" / "gone.py").symlink_to(tmp_path / "nowhere")  # unreadable halfway
    with pytest.raises(OSError):
        build(str(tmp_path / "autograder.zip"), "2.13.0", kit_root=str(kit))
    assert sorted(os.listdir(tmp_path)) == ["kit"]


# -- issue 27: one name for the gradebook folder, --version ----------------------------------

@pytest.mark.parametrize("args, dest", [
    (["grade", "a.py", "{flag}", "G"], "out"),
    (["gradebook", "{flag}", "G"], "out"),
    (["override", "{flag}", "G", "--list"], "out"),
    (["show", "10000", "{flag}", "G"], "out"),
    (["merge", "s1", "{flag}", "G"], "out"),
    (["nbgrader", "--course", "c", "attention", "{flag}", "G"], "out"),
    (["export", "moodle", "--out", "x.csv", "{flag}", "G"], "source"),
    (["similarity", "{flag}", "G"], "source"),
])
def test_every_command_takes_the_gradebook_as_gradebook_and_its_older_spelling(args, dest):
    from grader.cli import build_parser
    older = "--from" if dest == "source" else "--out"
    for flag in ("--gradebook", older):
        parsed = build_parser().parse_args([a.replace("{flag}", flag) for a in args])
        assert getattr(parsed, dest) == "G", (args, flag)


def test_version_is_the_installed_kits():
    """One version, written once (grader/__init__.py), read by the install (pyproject.toml's
    dynamic version) and said by the command line and each shard's record."""
    import re
    from importlib.metadata import version
    with open(os.path.join(KIT, "grader", "__init__.py"), encoding="utf-8") as handle:
        declared = re.search(r'(?m)^__version__ = "([^"]+)"$', handle.read())[1]
    with open(os.path.join(KIT, "pyproject.toml"), encoding="utf-8") as handle:
        pyproject = handle.read()
    assert re.search(r'(?m)^dynamic = \["version"\]', pyproject)
    assert 'version = { attr = "grader.__version__" }' in pyproject
    assert not re.search(r'(?m)^version = "', pyproject)  # no second place to change
    assert version("attention-kit") == declared  # what the install recorded
    done = run_grader("--version", timeout=120)
    assert done.returncode == 0 and done.stdout == f"grader {declared}\n"


def test_export_canvas_names_its_column_or_takes_a_template(tmp_path):
    done = run_grader("export", "canvas", "--gradebook", str(tmp_path), "--out",
                      str(tmp_path / "x.csv"), "--template",
                      str(tmp_path / "gone.csv"), timeout=120)
    assert done.returncode == 2 and f"--template {tmp_path / 'gone.csv'}: no such file" in done.stderr
    done = run_grader("export", "canvas-comments", "--gradebook", str(tmp_path), "--out",
                      str(SOLUTION), timeout=120)
    assert done.returncode == 2 and f"--out {SOLUTION} exists and is not a folder" in done.stderr
