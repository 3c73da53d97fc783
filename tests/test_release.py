"""`grader release`: the skeleton is generated from the solution, in sync, and leaks nothing."""
import importlib.util
import os
import re
import subprocess
import sys

import nbformat
import pytest

from conftest import KIT, SKELETON, SOLUTION, copy_kit
from grader import assignment
from grader.release import ReleaseError, SelectLanguage, Source, release
from grading import run_grader

ATTENTION = assignment.load("attention")
API_NAMES = ATTENTION.api

STUB_LINES = {"# YOUR CODE HERE", "raise NotImplementedError()"}


def test_checked_in_skeleton_is_what_release_generates():
    with open(SKELETON, encoding="utf-8") as handle:
        assert handle.read() == release(SOLUTION, API_NAMES), "run `grader release`"


@pytest.mark.parametrize("name", assignment.names())
def test_release_check_command_agrees(name):
    """Every assignment's student folder holds what release writes now (its skeleton, its
    generated files and the given modules of what it builds on)."""
    done = run_grader("release", "--assignment", name, "--check")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "is up to date" in done.stdout


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
    # nbgrader has no instructor-only or language block: give it the English source, as
    # `grader release --notebook` does (grader/nbgrader_bridge/notebook.py)
    english = SelectLanguage("en").apply(Source(SOLUTION, lines[:begin] + lines[end + 1:]))
    source = "\n".join(english.lines)
    assert "BEGIN ZH" not in source and "### BEGIN SOLUTION" in source
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
    from grader.nbgrader_bridge import notebook
    readme = f"{ATTENTION.student_folder}/README.zh-CN.md"
    text = notebook.notebook_text(ATTENTION, readme)
    assert text == notebook.notebook_text(ATTENTION, readme)
    cells = json.loads(text)["cells"]
    markdown = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    assert "## 第 1 部分" in markdown and "## 第 6 部分" in markdown and "贯穿所有部分" in markdown
    assert "INSTRUCTOR" not in text and "instructor's solution" not in text
    graded = {c["metadata"]["nbgrader"]["grade_id"]: c["metadata"]["nbgrader"]
              for c in cells if "points" in c["metadata"].get("nbgrader", {})}
    assert {k: v["points"] for k, v in graded.items()} == {
        "sequence_mask": 11, "masked_softmax": 20, "AdditiveAttention": 15,
        "DotProductAttention": 15, "transpose": 9, "MultiHeadAttention": 20, "GPU": 10}
    # the README's generated table is in the notebook, its markers are not
    assert "| `transpose_qkv` / `transpose_output` | 9 |" in markdown and "GENERATED" not in text
    assert graded["GPU"]["task"] and not graded["GPU"]["solution"]
    code = {c["metadata"]["nbgrader"]["grade_id"]: "".join(c["source"]) for c in cells
            if c["cell_type"] == "code" and c["metadata"]["nbgrader"]["solution"]}
    assert code["transpose"].count("### BEGIN SOLUTION") == 2
    # the code cells speak the README's language: the Chinese docstrings and hints, no marker
    assert "加性注意力" in code["AdditiveAttention"] and "提示：" in code["MultiHeadAttention"]
    assert "BEGIN ZH" not in text and "Additive attention" not in code["AdditiveAttention"]
    assert code["transpose"].count("### END SOLUTION") == 2
    assert all(c.rstrip().endswith("### END SOLUTION") for c in code.values())


# -- the skeleton in Chinese (`grader release --lang zh`) ---------------------------------------

def _code_only(text):
    """The module's code as ast.dump, every docstring taken out (comments never reach the AST)."""
    import ast
    tree = ast.parse(text)
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef)) and ast.get_docstring(node):
            node.body = node.body[1:]
    return ast.dump(tree)


def test_the_chinese_skeleton_is_the_english_one_in_chinese():
    english, chinese = release(SOLUTION, API_NAMES), release(SOLUTION, API_NAMES, "zh")
    # the same code: the stubs' messages differ only in their words
    assert _code_only(english.replace("is not written yet", "还没有写")) == _code_only(chinese)
    assert 'raise NotImplementedError("MultiHeadAttention.forward 还没有写")' in chinese
    assert chinese.count("# 在这里写你的代码") == english.count("# YOUR CODE HERE") == 10
    # the Chinese edition's terms, and the hints point at the Chinese README
    for term in ("掩蔽softmax", "加性注意力", "缩放点积注意力", "多头注意力", "查询", "键", "值",
                 "有效长度", "暂退法", "提示："):
        assert term in chinese, term
    assert "README.zh-CN.md" in chinese and "README.md" not in chinese
    assert "README.md" in english and "BEGIN ZH" not in chinese + english
    assert not re.search(r"[\u4e00-\u9fff]", english)
    # nothing of the solution leaks in Chinese either
    with open(SOLUTION, encoding="utf-8") as handle:
        solution = handle.read().split("\n")
    inside, regions = False, []
    for line in solution:
        if line.strip() in ("### BEGIN SOLUTION", "### END SOLUTION"):
            inside = line.strip() == "### BEGIN SOLUTION"
        elif inside:
            regions.append(line.strip())
    shown = {line.strip() for line in chinese.split("\n")}
    assert len(regions) > 40 and not [line for line in regions if len(line) > 12 and line in shown]


ZH_GOOD = '''def sequence_mask(X, valid_len, value=0):
    """Mask X.

    Returns X.
    ### BEGIN ZH
    掩蔽 X。

    返回 X。
    ### END ZH
    """
    # Hint: compare positions
    # with lengths.
    ### BEGIN ZH
    # 提示：比较位置与长度。
    ### END ZH
    ### BEGIN SOLUTION
    return X * 2
    ### END SOLUTION
'''


def test_a_chinese_block_takes_the_place_of_the_english_above_it(tmp_path):
    path = _write(tmp_path, ZH_GOOD)
    assert release(path, API_NAMES, "zh") == (
        'def sequence_mask(X, valid_len, value=0):\n    """掩蔽 X。\n\n    返回 X。\n    """\n'
        '    # 提示：比较位置与长度。\n    # 在这里写你的代码\n'
        '    raise NotImplementedError("sequence_mask 还没有写")\n')
    assert release(path, API_NAMES, "en") == (
        'def sequence_mask(X, valid_len, value=0):\n    """Mask X.\n\n    Returns X.\n    """\n'
        '    # Hint: compare positions\n    # with lengths.\n    # YOUR CODE HERE\n'
        '    raise NotImplementedError("sequence_mask is not written yet")\n')


@pytest.mark.parametrize("text, message", [
    (ZH_GOOD.replace("    # 提示：比较位置与长度。\n    ### END ZH\n", "    # 提示：比较位置与长度。\n"),
     "never closed"),
    (ZH_GOOD.replace("    ### BEGIN ZH\n    # 提示", "    # 提示"), "without a ### BEGIN ZH"),
    (ZH_GOOD.replace("    掩蔽 X。\n", "    ### BEGIN ZH\n"), "inside the block"),
    (ZH_GOOD.replace("    ### BEGIN ZH\n    掩蔽", "    ### begin zh\n    掩蔽"), "malformed marker"),
    (ZH_GOOD.replace("    # 提示：比较位置与长度。\n", ""), "empty"),
    (ZH_GOOD.replace("    # Hint: compare positions\n    # with lengths.\n", ""), "no English comment"),
    (ZH_GOOD.replace("    # 提示：比较位置与长度。", "    提示：比较位置与长度。"), "must be comment lines"),
    (ZH_GOOD.replace('"""Mask X.\n\n    Returns X.\n', '"""\n'), "no English before it"),
    (ZH_GOOD.replace("    返回 X。\n    ### END ZH\n", "    返回 X。\n    ### END ZH\n    ### BEGIN ZH\n"
                     "    再一次。\n    ### END ZH\n"), "second ### BEGIN ZH block"),
    (ZH_GOOD.replace("    # Hint: compare positions\n", "    # Hint: compare positions\n    x = 1\n"),
     "no Chinese for '# Hint: compare positions'"),
    (ZH_GOOD.replace("    ### BEGIN ZH\n    掩蔽 X。\n\n    返回 X。\n    ### END ZH\n", ""),
     "no Chinese for 'Mask X"),
], ids=["unclosed", "end-without-begin", "nested", "malformed", "empty", "nothing-to-translate",
        "text-outside-docstring", "docstring-without-english", "two-in-one-docstring",
        "code-line-ends-the-run", "docstring-untranslated"])
def test_release_refuses_a_broken_translation(tmp_path, text, message):
    path = _write(tmp_path, text)
    with pytest.raises(ReleaseError, match=message) as error:
        release(path, API_NAMES, "zh")
        release(path, API_NAMES, "en")
    assert "solution.py" in str(error.value)


def test_release_lang_zh_writes_and_checks_a_whole_student_folder(tmp_path):
    def grader(*args):
        return run_grader("release", *args)
    refused = grader("--lang", "zh")  # would overwrite the English skeleton
    assert refused.returncode == 2 and "--lang zh needs --out DIR" in refused.stderr
    inside = grader("--lang", "zh", "--out", ATTENTION.student_folder + "/zh")
    assert inside.returncode == 2 and "kit's assignment folder" in inside.stderr
    out = tmp_path / "zh"
    done = grader("--lang", "zh", "--out", str(out))
    assert done.returncode == 0 and "in zh (9 files; attention.py has 10 stubs)" in done.stdout
    written = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    assert written == [".github/workflows/classroom.yml", "README.md", "README.zh-CN.md",
                       "attention.py", "conftest.py", "locale/zh_CN/LC_MESSAGES/selfcheck.mo",
                       "locale/zh_CN/LC_MESSAGES/selfcheck.po", "pytest.ini", "test_attention.py"]
    assert (out / "attention.py").read_text(encoding="utf-8") == release(SOLUTION, API_NAMES, "zh")
    assert (out / "test_attention.py").read_bytes() == (
        open(os.path.join(ATTENTION.student_folder, "test_attention.py"), "rb").read())
    ini = (out / "pytest.ini").read_text(encoding="utf-8")
    assert "addopts = -q --tb=short -rfE --lang zh\n" in ini
    assert grader("--lang", "zh", "--out", str(out), "--check").returncode == 0
    (out / "README.zh-CN.md").write_text("old", encoding="utf-8")
    stale = grader("--lang", "zh", "--out", str(out), "--check")
    assert stale.returncode == 1 and "out of date (README.zh-CN.md)" in stale.stdout


# -- the generated files of the student folder (issue 16) ---------------------------------------

from grader.release import generated  # noqa: E402

POINTS_EN = ["| part | points |", "|---|---|", "| `sequence_mask` | 11 |",
             "| `masked_softmax` | 20 |", "| `AdditiveAttention` | 15 |",
             "| `DotProductAttention` | 15 |", "| `transpose_qkv` / `transpose_output` | 9 |",
             "| `MultiHeadAttention` | 20 |",
             "| running on a GPU (tensors made on the input's device) | 10 |", "| total | 100 |"]
POINTS_ZH = ["| 部分 | 分数 |", "|---|---|"] + POINTS_EN[2:8] + [
    "| 在 GPU 上运行（在输入所在的设备上创建张量） | 10 |", "| 总计 | 100 |"]


def _table(text):
    return text.split(generated.BEGIN_POINTS)[1].split(generated.END_POINTS)[0].strip().split("\n")


def test_the_readmes_points_tables_are_the_declarations():
    """Both READMEs show the attention declaration's points (the figures of the README's
    'Parts and points'), between the markers release writes them in."""
    for name, expected in (("README.md", POINTS_EN), ("README.zh-CN.md", POINTS_ZH)):
        with open(os.path.join(ATTENTION.student_folder, name), encoding="utf-8") as handle:
            assert _table(handle.read()) == expected, name


def _kit_copy(tmp_path):
    """A kit of its own (the grader, the attention declaration, solution and student folder),
    so a test may change what release reads without touching the checkout."""
    kit = tmp_path / "kit"
    copy_kit(kit, ("grader", "solutions", "assignments/attention", "tests_hidden/attention"))
    return kit


def _release(kit, *args):
    return run_grader("release", *args, kit=kit, timeout=300)


def _edit(path, old, new):
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, old
    path.write_text(text.replace(old, new), encoding="utf-8")


def test_release_check_names_every_generated_file_a_new_declaration_changes(tmp_path):
    """Points moved between two parts in the declaration: --check fails naming the Classroom
    workflow and both READMEs (not the skeleton); release rewrites them, the prose around
    the READMEs' tables stays; a hand edit of the workflow is found again."""
    kit = _kit_copy(tmp_path)
    folder = kit / "assignments" / "attention"
    readme = (folder / "README.md").read_text(encoding="utf-8")
    assert _release(kit, "--check").returncode == 0
    declaration = kit / "tests_hidden" / "attention" / "assignment.toml"
    _edit(declaration, 'name = "sequence_mask"\npoints = 11\n', 'name = "sequence_mask"\npoints = 12\n')
    _edit(declaration, 'name = "masked_softmax"\npoints = 20\n', 'name = "masked_softmax"\npoints = 19\n')
    stale = _release(kit, "--check")
    assert stale.returncode == 1
    named = sorted(line.split(" is out of date")[0] for line in stale.stdout.splitlines()
                   if line.endswith("is out of date: run `grader release`"))
    assert named == [str(folder / ".github/workflows/classroom.yml"), str(folder / "README.md"),
                     str(folder / "README.zh-CN.md")]
    done = _release(kit)
    assert done.returncode == 0 and "and 3 generated files" in done.stdout, done.stdout + done.stderr
    assert _release(kit, "--check").returncode == 0
    workflow = (folder / ".github/workflows/classroom.yml").read_text(encoding="utf-8")
    assert "test-name: Part 1 sequence_mask\n        setup-command: ''\n        command: " \
           "python -m pytest -k test_sequence_mask\n        timeout: 5\n        max-score: 12\n" \
           in workflow
    assert "command: python -m pytest -k test_masked_softmax\n        timeout: 5\n" \
           "        max-score: 19\n" in workflow
    new = (folder / "README.md").read_text(encoding="utf-8")
    assert _table(new)[2:4] == ["| `sequence_mask` | 12 |", "| `masked_softmax` | 19 |"]
    assert _table(new)[4:] == POINTS_EN[4:]
    outside = [t.split(generated.BEGIN_POINTS)[0] + t.split(generated.END_POINTS)[1]
               for t in (readme, new)]
    assert outside[0] == outside[1]
    _edit(folder / ".github/workflows/classroom.yml", "python-version: '3.12'", "python-version: '3.11'")
    stale = _release(kit, "--check")
    assert stale.returncode == 1 and stale.stdout.count("is out of date") == 1
    assert f"{folder / '.github/workflows/classroom.yml'} is out of date" in stale.stdout


@pytest.mark.parametrize("edit, message", [
    (("assignments/attention/README.zh-CN.md", "<!-- END GENERATED POINTS -->\n", ""),
     "README.zh-CN.md: expected one points table between the lines"),
    (("tests_hidden/attention/assignment.toml", 'selfcheck = "test_multihead_attention"', ""),
     "test_attention.py: no public self-check is named like part MultiHeadAttention's "
     "selfcheck 'test_multi_head_attention': its Classroom step would run nothing"),
    (("tests_hidden/attention/assignment.toml", 'selfcheck = "test_multihead_attention"',
      'selfcheck = "test_attention"'), "is part of the file's name"),
    (("tests_hidden/attention/assignment.toml", 'selfcheck = "test_multihead_attention"',
      'selfcheck = "test_sequence"'), "is selected by part sequence_mask and by part MultiHeadAttention"),
], ids=["readme-without-markers", "selects-nothing", "selects-everything", "selects-twice"])
def test_release_refuses_what_it_cannot_generate_right(tmp_path, edit, message):
    """A README without its table's markers, and a per-part selection of the public
    self-checks that a Classroom step would run wrong, stop release and --check alike."""
    kit = _kit_copy(tmp_path)
    path, old, new = edit
    if path.endswith(".toml") and new == "":
        old += "   # the -k of its public checks (default test_<name>)\n"
    _edit(kit / path, old, new)
    for args in ((), ("--check",)):
        done = _release(kit, *args)
        assert done.returncode == 2 and message in done.stderr, done.stdout + done.stderr


def _imports(path, package):
    """The grader modules `path` imports, at any depth of its code (lazy imports too)."""
    import ast
    tree = ast.parse(open(path, encoding="utf-8").read())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = package.split(".")
            if node.level:
                base = base[:len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if node.module:  # from .core import X: core (X may be a name in it)
                found.add(target)
            # from . import core: core, not the package it is read from
            found.update(f"{target}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {name for name in found if name.startswith("grader.")}


def test_release_and_the_notebook_writer_import_each_other_in_one_direction_only():
    """release's core imports nothing of the kit; the notebook writer builds on the core,
    never on the release command that calls it (commands/release.py): no module of either
    imports back."""
    modules = {}
    for package in ("grader.release", "grader.nbgrader_bridge"):
        folder = os.path.join(KIT, *package.split("."))
        for name in os.listdir(folder):
            if name.endswith(".py"):
                module = package if name == "__init__.py" else f"{package}.{name[:-3]}"
                modules[module] = _imports(os.path.join(folder, name), module if
                                           name == "__init__.py" else package)
    assert modules["grader.release.core"] == set()
    assert {m for m in modules["grader.nbgrader_bridge.notebook"]
            if m.startswith("grader.release")} == {"grader.release.core"} | {
        f"grader.release.core.{n}" for n in ("BEGIN_INSTRUCTOR", "DropInstructorOnly",
                                             "FindRegions", "ReleaseError", "SelectLanguage",
                                             "Source", "release")}

    def reach(start):
        seen, todo = set(), [start]
        while todo:
            for target in modules.get(todo.pop(), ()):
                if target in modules and target not in seen:
                    seen.add(target)
                    todo.append(target)
        return seen
    cycles = sorted(m for m in modules if m in reach(m))
    assert cycles == []
    done = subprocess.run([sys.executable, "-c", "import sys, grader.nbgrader_bridge.notebook; "
                           "print(sorted(m for m in sys.modules if m.startswith('grader.')))"],
                          cwd=KIT, capture_output=True, text=True, timeout=120)
    assert "grader.commands" not in done.stdout and "grader.release.core" in done.stdout


def test_an_assignment_that_builds_on_another_as_given_code_gets_its_module_whole():
    """The transformer builds on attention with provide = "given": its student folder gets
    attention.py whole (every line the solution's own, the code of every solution region
    kept, no marker, no instructor-only text), importable and correct; in Chinese, with the
    Chinese docstrings. The attention folder gets no such file."""
    from grader.release.folder import given_modules
    transformer = assignment.load("transformer")
    given = given_modules(transformer)
    assert list(given) == ["attention.py"] and given_modules(ATTENTION) == {}
    text = given["attention.py"]
    with open(SOLUTION, encoding="utf-8") as handle:
        solution = handle.read().split("\n")
    docstring, code = text.split('"""', 2)[1], text.split('"""', 2)[2]
    # the docstring says the file is given, under the solution's own title, and says nothing
    # of stubs to replace (there are none)
    assert docstring.split("\n")[0] == solution[0][3:]
    assert "This file is given" in docstring and "`attention`" in docstring
    assert "NotImplementedError" not in text and "Shapes use these names" in docstring
    lines = code.split("\n")
    assert not [line for line in lines if line not in solution]
    kept = set(lines)
    inside = False
    for line in solution:
        if line.strip() in ("### BEGIN SOLUTION", "### END SOLUTION"):
            inside = line.strip() == "### BEGIN SOLUTION"
        elif inside:
            assert line in kept, line
    assert "SOLUTION" not in text and "INSTRUCTOR" not in text and "BEGIN ZH" not in text
    module = {}
    exec(compile(text, "attention.py", "exec"), module)
    import torch
    weights = module["masked_softmax"](torch.ones(1, 2, 3), torch.tensor([2]))
    assert weights[0, 0].tolist() == [0.5, 0.5, 0.0]
    chinese = given_modules(transformer, "zh")["attention.py"]
    assert "掩蔽" in chinese and "BEGIN ZH" not in chinese
    assert "这个文件是给定的" in chinese and "NotImplementedError" not in chinese
