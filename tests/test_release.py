"""`grader release`: the skeleton is generated from the solution, in sync, and leaks nothing."""
import importlib.util
import subprocess
import sys

import nbformat
import pytest

from conftest import KIT, SKELETON, SOLUTION
from grader.harness.implementations import API_NAMES
from grader.release import ReleaseError, release

STUB_LINES = {"# YOUR CODE HERE", "raise NotImplementedError()"}


def test_checked_in_skeleton_is_what_release_generates():
    with open(SKELETON, encoding="utf-8") as handle:
        assert handle.read() == release(SOLUTION, API_NAMES), "run `grader release`"


def test_release_check_command_agrees():
    done = subprocess.run([sys.executable, "-m", "grader", "release", "--check"], cwd=KIT,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def _load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_skeleton_defines_every_name_and_each_stub_says_which_part(tmp_path):
    skeleton = _load(SKELETON, "skeleton_under_test")
    for name in API_NAMES:
        assert hasattr(skeleton, name), name
    with pytest.raises(NotImplementedError, match="sequence_mask is not written yet"):
        skeleton.sequence_mask(None, None)
    with pytest.raises(NotImplementedError, match="AdditiveAttention.__init__ is not written yet"):
        skeleton.AdditiveAttention(2, 2, 2, 0.0)


def test_skeleton_contains_no_solution_line():
    with open(SOLUTION, encoding="utf-8") as handle:
        solution = handle.read().split("\n")
    with open(SKELETON, encoding="utf-8") as handle:
        released = {line.strip() for line in handle.read().split("\n")}
    inside = False
    for line in solution:
        if line.strip() == "### BEGIN SOLUTION":
            inside = True
        elif line.strip() == "### END SOLUTION":
            inside = False
        elif inside and len(line.strip()) > 12:
            assert line.strip() not in released, line
    assert "INSTRUCTOR" not in "\n".join(released)


def _write(tmp_path, text):
    path = tmp_path / "solution.py"
    path.write_text(text, encoding="utf-8")
    return str(path)


GOOD = '''def sequence_mask(X, valid_len, value=0):
    """doc"""
    ### BEGIN SOLUTION
    return X * 2
    ### END SOLUTION
'''


@pytest.mark.parametrize("text, message", [
    (GOOD.replace("    ### END SOLUTION\n", ""), "never closed"),
    (GOOD.replace("    ### BEGIN SOLUTION\n", ""), "without a ### BEGIN SOLUTION"),
    (GOOD.replace("    return X * 2\n", "    ### BEGIN SOLUTION\n    return X\n"), "cannot nest"),
    (GOOD.replace("    ### END SOLUTION", "### END SOLUTION"), "indented differently"),
    (GOOD.replace("### END SOLUTION", "## END SOLUTION"), "malformed marker"),
    (GOOD + '# see BEGIN SOLUTION above\n', "malformed marker"),
    ("def sequence_mask(X, valid_len, value=0):\n    return X * 2\n", "no ### BEGIN SOLUTION"),
    (GOOD + "\ndef masked_softmax(X, valid_lens):\n    return X.softmax(-1)\n", "masked_softmax has code"),
    (GOOD.replace('"""doc"""', '"""doc"""\n    y = X * 2 + 1'), None),
    (GOOD.replace("return X * 2", "secret = X.cumsum(0) * 2\n    return secret")
     + "# secret = X.cumsum(0) * 2\nsecret = X.cumsum(0) * 2\n", "also appears outside"),
], ids=["unclosed", "end-without-begin", "nested", "misindented", "malformed", "words-in-text",
        "no-regions", "unstubbed-api-function", "code-outside-region-is-kept", "leak"])
def test_release_refuses_a_broken_or_leaky_solution(tmp_path, text, message):
    path = _write(tmp_path, text)
    if message is None:
        assert "y = X * 2 + 1" in release(path, API_NAMES)
        return
    with pytest.raises(ReleaseError, match=message) as error:
        release(path, API_NAMES)
    assert "solution.py" in str(error.value)


def test_instructor_only_block_is_dropped(tmp_path):
    text = GOOD.replace('"""doc"""', '"""doc\n    ### BEGIN INSTRUCTOR ONLY\n    grading notes\n'
                                     '    ### END INSTRUCTOR ONLY\n    """')
    out = release(_write(tmp_path, text), API_NAMES)
    assert "grading notes" not in out and "INSTRUCTOR" not in out
    assert 'raise NotImplementedError("sequence_mask is not written yet")' in out


def test_nbgrader_reads_the_same_regions():
    """nbgrader's own ClearSolutions, run on the solution as a notebook cell, removes exactly
    the lines our release removes: the source works in an nbgrader course unchanged."""
    preprocessors = pytest.importorskip(
        "nbgrader.preprocessors", reason="the nbgrader extra is not installed: pip install -e '.[nbgrader]'")
    ClearSolutions = preprocessors.ClearSolutions
    with open(SOLUTION, encoding="utf-8") as handle:
        lines = handle.read().split("\n")
    begin = lines.index("### BEGIN INSTRUCTOR ONLY")
    end = lines.index("### END INSTRUCTOR ONLY")
    source = "\n".join(lines[:begin] + lines[end + 1:])  # nbgrader has no such block
    notebook = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell(source)
    cell.metadata["nbgrader"] = {"grade": False, "solution": True, "locked": False,
                                 "grade_id": "attention", "schema_version": 3}
    notebook.cells.append(cell)
    cleared, _ = ClearSolutions().preprocess(notebook, {"language": "python"})
    theirs = [line for line in cleared.cells[0].source.split("\n") if line.strip() not in STUB_LINES]
    ours = [line for line in release(SOLUTION, API_NAMES).split("\n")
            if line.strip() not in STUB_LINES and "is not written yet" not in line]
    assert theirs == ours


def test_source_notebook_for_nbgrader_in_chinese(tmp_path):
    """`grader release --notebook`: the README's parts (here the Chinese one) as markdown,
    each part's code with nbgrader's markers and none of the instructor-only text, the
    hidden suite's points on one graded cell per part; the same solution, the same file."""
    import json
    from grader import paths
    from grader.nbgrader_bridge import notebook
    readme = f"{paths.ASSIGNMENT}/README.zh-CN.md"
    text = notebook.notebook_text(SOLUTION, readme, paths.HIDDEN_TESTS, API_NAMES)
    assert text == notebook.notebook_text(SOLUTION, readme, paths.HIDDEN_TESTS, API_NAMES)
    cells = json.loads(text)["cells"]
    markdown = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    assert "## 第 1 部分" in markdown and "## 第 6 部分" in markdown and "贯穿所有部分" in markdown
    assert "INSTRUCTOR" not in text and "instructor's solution" not in text
    graded = {c["metadata"]["nbgrader"]["grade_id"]: c["metadata"]["nbgrader"]
              for c in cells if "points" in c["metadata"].get("nbgrader", {})}
    assert {k: v["points"] for k, v in graded.items()} == notebook.part_points(paths.HIDDEN_TESTS)
    assert graded["GPU"]["task"] and not graded["GPU"]["solution"]
    code = {c["metadata"]["nbgrader"]["grade_id"]: "".join(c["source"]) for c in cells
            if c["cell_type"] == "code" and c["metadata"]["nbgrader"]["solution"]}
    assert code["transpose"].count("### BEGIN SOLUTION") == 2
    assert code["transpose"].count("### END SOLUTION") == 2
    assert all(c.rstrip().endswith("### END SOLUTION") for c in code.values())
