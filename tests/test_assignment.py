"""The assignment declaration (grader/assignment.py): what it accepts, what it refuses and why.

The attention declaration's figures are asserted as literals (its README's points table), and
every refusal is checked by the key its message names."""
import os
import tomllib

import pytest

from conftest import KIT, copy_kit
from grader import assignment
from grading import run_grader

DECLARATION = os.path.join(KIT, "tests_hidden", "attention", "assignment.toml")


def _data():
    with open(DECLARATION, "rb") as handle:
        return tomllib.load(handle)


def _parse(data, named="attention"):
    return assignment.parse(data, os.path.join(KIT, "tests_hidden", "attention"), KIT,
                            named=named)


def test_the_attention_declaration_reads_as_the_readme_says():
    declared = assignment.load("attention")
    assert declared.module_file == "attention.py" and declared.notebook_file == "attention.ipynb"
    assert declared.solution == os.path.join(KIT, "solutions", "attention.py")
    assert declared.skeleton == os.path.join(KIT, "assignments", "attention", "attention.py")
    assert [(p.name, p.points) for p in declared.parts] == [
        ("sequence_mask", 11), ("masked_softmax", 20), ("AdditiveAttention", 15),
        ("DotProductAttention", 15), ("transpose", 9), ("MultiHeadAttention", 20), ("GPU", 10)]
    assert declared.total_points == 100
    assert declared.part_of("transpose_output") == "transpose"
    assert declared.gpu_parts == ("GPU",)
    assert set(declared.callers("sequence_mask")) == {
        "masked_softmax", "AdditiveAttention", "DotProductAttention", "MultiHeadAttention"}
    assert declared.callers("MultiHeadAttention") == ()


def _declare(root, name, text=""):
    folder = root / "tests_hidden" / name
    folder.mkdir(parents=True)
    (folder / "assignment.toml").write_text(text)
    return str(folder / "assignment.toml")


def test_the_default_is_the_only_declared_assignment_or_the_one_that_says_so(tmp_path):
    assert assignment.resolve("transformer") == "transformer"
    assert assignment.resolve(None) == "attention"  # the kit's attention.toml says default = true
    _declare(tmp_path, "solo")
    assert assignment.resolve(None, str(tmp_path)) == "solo"  # one assignment needs no default
    _declare(tmp_path, "duo", "default = true\n")
    assert assignment.resolve(None, str(tmp_path)) == "duo"
    _declare(tmp_path, "trio", "default = false\n")
    assert assignment.resolve(None, str(tmp_path)) == "duo"


def test_the_kits_own_default_is_declared_in_one_file_only():
    """The kit holds two assignments: exactly one declaration says default = true (read
    with tomllib here, not through the code under test)."""
    said = {}
    for name in ("attention", "transformer"):
        with open(os.path.join(KIT, "tests_hidden", name, "assignment.toml"), "rb") as handle:
            said[name] = tomllib.load(handle).get("default", False)
    assert said == {"attention": True, "transformer": False}
    assert assignment.load("attention").is_default()
    assert not assignment.load("transformer").is_default()
    assert assignment.load("transformer").mistakes_docs == "docs/mistakes-transformer.md"
    assert assignment.load("attention").mistakes_docs == "docs/mistakes.md"


def test_two_declarations_claiming_the_default_are_refused_naming_both(tmp_path):
    first = _declare(tmp_path, "one", "default = true\n")
    second = _declare(tmp_path, "two", "default = true\n")
    _declare(tmp_path, "three")
    with pytest.raises(assignment.AssignmentError) as refused:
        assignment.resolve(None, str(tmp_path))
    assert str(refused.value) == (f"more than one assignment says `default = true`: {first}, "
                                  f"{second}; keep it in one of them")
    assert assignment.resolve("three", str(tmp_path)) == "three"  # a named one needs no default


def test_several_declarations_and_no_default_are_refused_naming_each_file(tmp_path):
    first = _declare(tmp_path, "one")
    second = _declare(tmp_path, "two", "default = false\n")
    with pytest.raises(assignment.AssignmentError) as refused:
        assignment.resolve(None, str(tmp_path))
    assert str(refused.value) == (f"the kit declares 2 assignments and none says "
                                  f"`default = true`: add it to one of {first}, {second} "
                                  "(or name one with --assignment)")


def test_a_default_that_is_not_true_or_false_and_an_empty_kit_are_refused(tmp_path):
    _declare(tmp_path, "one", 'default = "yes"\n')
    path = _declare(tmp_path, "two")
    with pytest.raises(assignment.AssignmentError) as refused:
        assignment.resolve(None, str(tmp_path))
    assert "one/assignment.toml: 'default' must be true or false, got 'yes'" in str(refused.value)
    (tmp_path / "tests_hidden" / "one" / "assignment.toml").write_text("default = [")
    with pytest.raises(assignment.AssignmentError) as refused:
        assignment.resolve(None, str(tmp_path))
    assert str(refused.value).startswith(str(tmp_path / "tests_hidden" / "one" / "assignment.toml"))
    with pytest.raises(assignment.AssignmentError) as refused:
        assignment.resolve(None, str(tmp_path / "empty"))
    assert str(refused.value).startswith("the kit declares no assignment: no ")
    assert os.path.isfile(path)


def test_a_kit_without_a_default_is_a_one_line_usage_error_naming_the_files(tmp_path):
    """A copy of the kit where no declaration says default = true: `grader grade` without
    --assignment stops with exit 2 and names both files, grading nothing."""
    kit = tmp_path / "kit"
    copy_kit(kit, ("grader", "tests_hidden", "solutions", "assignments"))
    declaration = kit / "tests_hidden" / "attention" / "assignment.toml"
    declaration.write_text(declaration.read_text().replace("default = true", "default = false"))
    done = run_grader("grade", os.path.join(KIT, "examples", "alice.py"), "--out",
                      tmp_path / "out", kit=kit, timeout=300)
    assert done.returncode == 2, done.stderr
    assert "none says `default = true`" in done.stderr
    assert str(declaration) in done.stderr
    assert str(kit / "tests_hidden" / "transformer" / "assignment.toml") in done.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("edit, said", [
    (lambda d: d.update(colour="blue"), "unknown key 'colour'"),
    (lambda d: d.pop("module"), "missing key 'module'"),
    (lambda d: d["parts"][0].update(weight=3), "parts[0]: unknown key 'weight'"),
    (lambda d: d.update(total_points=99), "add up to 100, not total_points 99"),
    (lambda d: d["parts"][1].update(points="20"), "'points' must be a number"),
    (lambda d: d["parts"][1].update(gpu=1), "'gpu' must be true or false"),
    (lambda d: d["parts"][0].update(targets=["sequence_mask", "softmax"]),
     "targets softmax, which api does not name"),
    (lambda d: d["api"].remove("transpose_output"), "targets transpose_output, which api"),
    (lambda d: d["parts"][4].update(targets=["transpose_qkv"]),
     "'transpose_output' is in api but no part grades it"),
    (lambda d: d.update(module="test_attention"), "module 'test_attention' must be"),
    (lambda d: d.update(module="my-attention"), "module 'my-attention' must be"),
    (lambda d: d.update(api=d["api"] + ["class"]), "api holds 'class', not a Python name"),
    (lambda d: d.update(given=["sequence_mask"]), "'sequence_mask' is both in api and given"),
    (lambda d: d["calls"].update(masked_softmax=["masked_softmax"]),
     "calls.masked_softmax names 'masked_softmax'"),
    (lambda d: d["calls"].update(softmax=[]), "calls names 'softmax'"),
    (lambda d: d["parts"][0].update(short="sequencemask"), "short must be 1 to 9"),
    (lambda d: d.update(solution="../solutions/attention.py"), "solution '../solutions/attention.py' is outside the kit"),
    (lambda d: d.update(solution="solutions/nothing.py"), "solution 'solutions/nothing.py' does not exist"),
    (lambda d: d.update(builds_on=[{"assignment": "attention", "provide": "given"}]),
     "cannot build on itself"),
    (lambda d: d.update(builds_on=[{"assignment": "rnn", "provide": "copy"}]),
     "provide must be one of student, given"),
    (lambda d: d["weights"].update(MultiHeadAttention="attention.weights()"),
     "weights.MultiHeadAttention must name"),
    (lambda d: d.update(name="transformer"), "name 'transformer' must be its folder's name"),
    (lambda d: d.update(default="yes"), "'default' must be true or false"),
])
def test_a_wrong_declaration_is_refused_naming_the_key(edit, said):
    data = _data()
    assert _parse(data).name == "attention"  # the unedited one holds
    edit(data)
    with pytest.raises(assignment.AssignmentError) as refused:
        _parse(data)
    assert said in str(refused.value)


def test_an_unknown_assignment_is_a_one_line_usage_error(tmp_path):
    done = run_grader("grade",
                      os.path.join(KIT, "examples",
                           "alice.py"),
                      "--assignment", "rnn", "--out", str(tmp_path / "out"),
                      timeout=300)
    assert done.returncode == 2
    assert "no assignment 'rnn'" in done.stderr and "the kit declares: attention" in done.stderr
    assert not (tmp_path / "out").exists()


def test_a_copied_suite_of_the_same_name_is_its_own_table(tmp_path):
    """tests_hidden/<name>/cases.py and mistakes.py are imported per folder: a copy (the
    tests' edited suites, a second kit) never gets the first folder's module."""
    import shutil
    copy = tmp_path / "attention"
    shutil.copytree(os.path.join(KIT, "tests_hidden", "attention"), copy,
                    ignore=shutil.ignore_patterns("__pycache__"))
    with open(copy / "mistakes.py", "a", encoding="utf-8") as handle:
        handle.write("\nONLY_IN_THE_COPY = True\n")
    original = assignment.load("attention")
    copied = assignment.load_folder(str(copy), KIT)
    assert copied.name == original.name == "attention"
    assert original.catalog() is not copied.catalog()
    assert getattr(copied.catalog(), "ONLY_IN_THE_COPY", False) is True
    assert not hasattr(original.catalog(), "ONLY_IN_THE_COPY")
    assert copied.cases() is not original.cases()
    assert len(copied.cases().CASES) == len(original.cases().CASES)


def _row(folder, name, **fields):
    import json
    (folder / name).mkdir(parents=True)
    row = {"name": name, "folder": name, "status": "graded", "total": 100.0, "max": 100.0,
           "parts": {"p": [100.0, 100.0]}, **fields}
    (folder / name / "gradebook-row.json").write_text(json.dumps(row), encoding="utf-8")


@pytest.mark.slow
@pytest.mark.parametrize("fields, theirs", [({"assignment": "attention"}, "attention"),
                                            ({}, "attention")])  # older rows: the default's
def test_a_gradebook_holds_one_assignment(tmp_path, fields, theirs):
    """Grading the transformer into a gradebook of attention rows (or rows from before
    assignments were declared) would put their scores in its columns: refused, nothing graded."""
    from grader.grade import MixedSettings, SuiteOptions, grade_batch
    book = tmp_path / "book"
    _row(book, "ann", **fields)
    submission = tmp_path / "bo.py"
    submission.write_text("x = 1\n", encoding="utf-8")
    options = SuiteOptions(assignment=assignment.load("transformer"), isolation="none")
    with pytest.raises(MixedSettings) as refused:
        grade_batch([str(submission)], str(book), options)
    assert (f"1 row(s) of this gradebook were graded for the assignment '{theirs}' (e.g. 'ann'), "
            "and this batch grades 'transformer'") in str(refused.value)
    assert sorted(p.name for p in book.iterdir()) == ["ann"]


def test_gradebook_commands_follow_the_assignment_their_rows_name(tmp_path):
    from grader.report.gradebook import recorded_assignment
    book = tmp_path / "book"
    _row(book, "ann", assignment="transformer")
    _row(book, "bo", assignment="transformer")
    assert recorded_assignment(str(book)) == "transformer"
    done = run_grader("gradebook", "--out", str(book), timeout=300)
    assert done.returncode == 0, done.stderr
    import html
    title = html.escape(assignment.load("transformer").title)   # "add & norm": &amp;
    assert f"<h1>{title}: the class</h1>" in (book / "report.html").read_text(encoding="utf-8")
    _row(book, "cy", assignment="attention")
    assert recorded_assignment(str(book)) is None      # two named: none is guessed
    _row(tmp_path / "old", "dee")
    assert recorded_assignment(str(tmp_path / "old")) is None


def test_a_canvas_export_needs_its_column_and_suggests_one_after_the_graded_assignment(tmp_path):
    """Issue 27: a Canvas column Canvas does not have creates a new assignment, so no column
    is guessed: the refusal names the graded assignment's likely column."""
    from grader.platforms.canvas import scores as canvas_scores
    _row(tmp_path / "t", "ann", assignment="transformer", student_id="10001")
    assert canvas_scores.new_column(str(tmp_path / "t")) == "Transformer"
    _row(tmp_path / "old", "ann", student_id="10001")   # before assignments were declared
    assert canvas_scores.new_column(str(tmp_path / "old")) == "Attention"
    done = run_grader("export", "canvas", "--from", str(tmp_path / "t"), "--out",
                      str(tmp_path / "c.csv"), timeout=300)
    assert done.returncode == 2 and not (tmp_path / "c.csv").exists()
    assert 'name the Canvas column to fill: --assignment "Transformer (<id>)"' in done.stderr


def test_an_assignment_without_a_catalog_has_an_empty_one(tmp_path):
    """mistakes.py is optional: without it nothing is diagnosed (no grader error)."""
    import shutil
    from grader.catalog import Catalog
    copy = tmp_path / "attention"
    shutil.copytree(os.path.join(KIT, "tests_hidden", "attention"), copy,
                    ignore=shutil.ignore_patterns("__pycache__", "mistakes.py"))
    catalog = Catalog.of(assignment.load_folder(str(copy), KIT))
    assert list(catalog.mistakes) == []
    assert len(Catalog.of(assignment.load("attention")).mistakes) >= 40
