"""The catalog is passed in, never imported (issue 16): `Catalog.of(assignment)` reads the
assignment's own table (tests_hidden/<name>/mistakes.py) and its declaration (calls, parts,
the device parts, the module's name); diagnose, carry, build and validate use the catalog
they are given, and grader/catalog and grader/validate name no assignment."""
import dataclasses
import os
import re
import shutil
import types

import pytest
import torch

from conftest import KIT, SOLUTION
from grader import assignment
from grader.catalog import Catalog, CatalogError, Mistake, diagnose
from grader.catalog.build import MistakeImplementation
from grader.suite.case import Case
from grader.validate import Expectation, alternatives, docs_table, expectations

ATTENTION = assignment.load("attention")
CATALOG = Catalog.of(ATTENTION)


def test_the_attention_catalog_is_its_table_with_its_declarations_calls_and_parts():
    assert len(CATALOG) == 60 and CATALOG.module == "attention" and CATALOG.name == "attention"
    assert CATALOG.calls["MultiHeadAttention"] == ("DotProductAttention", "masked_softmax",
                                                   "sequence_mask", "transpose_qkv",
                                                   "transpose_output")
    assert CATALOG.callers("sequence_mask") == {"sequence_mask", "masked_softmax",
                                                "AdditiveAttention", "DotProductAttention",
                                                "MultiHeadAttention"}
    assert CATALOG.part_of("transpose_output") == "transpose"
    assert CATALOG.targets_of("transpose") == ("transpose_qkv", "transpose_output")
    assert CATALOG.device_parts == {"GPU"} and CATALOG.is_device("GPU")
    assert not CATALOG.is_device("sequence_mask")
    # an observation of the device part shows no experiment; one of transpose its first
    # target's
    assert CATALOG.part_experiment("GPU") == "" and CATALOG.part_experiment("GPU", "zh") == ""
    assert CATALOG.part_experiment("transpose").startswith("Try transpose_qkv(")
    assert CATALOG.experiment("no-such-target") == ""
    assert [m.id for m in CATALOG.suspects_for("masked_softmax")][:3] == [
        "softmax-repeat", "softmax-neg-inf", "softmax-mask-zero"]
    assert CATALOG.suspects_for("masked_softmax")[-1].target == "sequence_mask"


def _fake(mistakes, name="fake", parts=(("p", ("f",), False),), api=("f",)):
    """A declared assignment as Catalog.of reads it (its catalog() returns the table)."""
    table = types.SimpleNamespace(MISTAKES=mistakes, EXPERIMENTS={})
    return types.SimpleNamespace(
        name=name, module="fake", api=api, given=(), calls={t: () for t in api},
        parts=tuple(assignment.Part(n, 1, ts, n[:9], gpu) for n, ts, gpu in parts),
        part_names=tuple(n for n, _, _ in parts),
        gpu_parts=tuple(n for n, _, gpu in parts if gpu), catalog=lambda: table)


def _mistake(id, part="p", target="f"):
    return Mistake(id, part, target, "it is wrong", (("a", "b"),))


@pytest.mark.parametrize("mistakes, words", [
    ([_mistake("m1"), _mistake("m1")], "mistake id 'm1' is used twice"),
    ([_mistake("m@1")], "mistake id 'm@1' is used twice or holds @ or &"),
    ([_mistake("m1", part="q")], "mistake 'm1' costs part 'q', which the declaration does "
                                 "not have"),
    ([_mistake("m1", target="g")], "mistake 'm1' is in 'g', which api and given do not name"),
    ([("m1", "p")], "is not a Mistake"),
])
def test_a_wrong_catalog_is_refused_naming_its_entry(mistakes, words):
    with pytest.raises(CatalogError) as refused:
        Catalog.of(_fake(mistakes))
    assert words in str(refused.value) and "catalog 'fake'" in str(refused.value)


def test_each_catalog_keeps_its_own_instances_and_combinations():
    """No table is shared between catalogs: a class mistake's instance or a combination is
    found only in a catalog that has its entries."""
    keep = [m for m in CATALOG.mistakes if m.id not in ("softmax-fill-small", "dot-no-scale")]
    other = Catalog(keep, calls=CATALOG.calls, parts=CATALOG.parts, module="other")
    assert CATALOG.by_id("softmax-fill-small@-20").id == "softmax-fill-small@-20"
    assert other.by_id("softmax-fill-small@-20") is None
    assert CATALOG.by_id("dot-dropout-on-output&dot-no-scale") is not None
    assert other.by_id("dot-dropout-on-output&dot-no-scale") is None
    assert other.by_id("dot-dropout-on-output").id == "dot-dropout-on-output"
    from grader.catalog import mistakes
    assert not {"_BY_ID", "_INSTANCES", "CALLS_", "PART_TARGETS"} & set(vars(mistakes))


def test_a_mistake_module_is_named_after_the_assignments_module():
    mistake = CATALOG.by_id("dot-no-scale")
    named = MistakeImplementation(mistake, SOLUTION, "mymodule").module
    assert named.__name__ == "mymodule_mistake_dot_no_scale"
    assert named.DotProductAttention.__module__ == "mymodule_mistake_dot_no_scale"
    with pytest.raises(TypeError):
        MistakeImplementation(mistake, SOLUTION)  # no default assignment's name to fall back on


def test_the_device_part_is_whichever_part_the_catalog_says():
    """Under the device guard only device mistakes are searched: those of the parts the
    declaration marks gpu, whatever their name, never a part called "GPU" as such."""
    case = Case(part="CUDA", name="device", points=1, target="sequence_mask",
                args=(torch.ones(2, 4), torch.tensor([1, 3])))
    probe = case.probe(guard=True)
    got = MistakeImplementation(CATALOG.by_id("gpu-arange-no-device"), SOLUTION,
                                "attention").raw(probe)
    renamed = [dataclasses.replace(m, part="CUDA") if m.part == "GPU" else m
               for m in CATALOG.mistakes]
    as_device = Catalog(renamed, calls=CATALOG.calls, parts=CATALOG.parts,
                        device_parts={"CUDA"}, module="attention")
    as_cpu = Catalog(renamed, calls=CATALOG.calls, parts=CATALOG.parts, module="attention")
    assert diagnose.matching(case, probe, got, SOLUTION, catalog=as_device) == \
        ["gpu-arange-no-device"]
    assert diagnose.matching(case, probe, got, SOLUTION, catalog=as_cpu) == []
    assert diagnose.matching(case, probe, got, SOLUTION, catalog=CATALOG) == \
        ["gpu-arange-no-device"]
    with pytest.raises(TypeError):  # no catalog is ever taken for granted
        diagnose.matching(case, probe, got, SOLUTION)


def test_validate_grades_the_assignments_own_alternatives_and_catalog(tmp_path):
    items = expectations(str(tmp_path / "a"), assignment=ATTENTION)
    kinds = {}
    for item in items:
        kinds.setdefault(item.kind, []).append(item.name)
    assert kinds["alternative"] == ["book_d2l_0_17", "einsum_masked_fill",
                                    "lazy_linear_d2l_1_0", "loops", "scale_first_functional",
                                    "where_matmul"]
    assert len(kinds["mistake"]) == 60
    assert kinds["solution"] == ["solution"] and kinds["skeleton"] == ["skeleton"]
    paths = {i.kind: i.path for i in items if i.kind in ("solution", "skeleton")}
    for kind, path in (("solution", ATTENTION.solution), ("skeleton", ATTENTION.skeleton)):
        with open(paths[kind], encoding="utf-8") as made, open(path, encoding="utf-8") as kit:
            assert made.read() == kit.read(), kind  # (release --check keeps the kit's current)
    off_by_one = next(i for i in items if i.name == "mask-off-by-one")
    assert off_by_one.reach == ("AdditiveAttention", "DotProductAttention",
                                "MultiHeadAttention", "masked_softmax")
    assert not os.path.exists(os.path.join(KIT, "grader", "validate", "alternatives"))
    # an assignment without an alternatives folder has none, and still validates the rest
    folder = tmp_path / "suite"
    folder.mkdir()
    shutil.copy(os.path.join(ATTENTION.folder, "mistakes.py"), folder / "mistakes.py")
    bare = dataclasses.replace(ATTENTION, folder=str(folder))
    assert alternatives(bare) == []
    assert [i.kind for i in expectations(str(tmp_path / "b"), assignment=bare)].count(
        "alternative") == 0


def test_validate_grades_with_the_assignments_suite_and_solution():
    """validate(options, assignment=X) grades X's hidden suite against X's solution even
    when the options were made for another assignment (SuiteOptions() is the default's),
    keeping their other settings."""
    from grader.grade import SuiteOptions
    from grader.validate import _options_for
    second = assignment.load("transformer")
    options, chosen = _options_for(SuiteOptions(lang="zh", carry_forward="off"), second)
    assert chosen is second and options.assignment is second
    assert options.hidden_tests == os.path.join(KIT, "tests_hidden", "transformer")
    assert options.solution == os.path.join(KIT, "solutions", "transformer.py")
    assert (options.lang, options.carry_forward) == ("zh", "off")
    same = SuiteOptions(solution=SOLUTION, lang="zh")
    assert _options_for(same, ATTENTION) == (same, ATTENTION)
    assert _options_for(same, None)[1].name == "attention"


class _Result:
    def __init__(self, part, score, top, total, named):
        self._parts, self.score = {part: (score, top)}, total
        self.diagnoses = [{"part": part, "mistake": named}]

    def by_part(self):
        return self._parts


def _rows(text):
    """validate's rows, read back from a docs table (its scores and diagnoses)."""
    rows = []
    for line in text.splitlines():
        found = re.match(r"^\| `([^`]+)` \| (\S+) \| (.*) \| ([\d.]+)/([\d.]+) \| ([\d.]+) \| "
                         r"(\S+)( !!)? \|$", line)
        if found:
            name, part, about, score, top, total, named, bad = found.groups()
            item = Expectation("mistake", name, f"{name}.py", part=part, about=about)
            item.result = _Result(part, float(score), float(top), float(total),
                                  None if named == "(nothing)" else named)
            rows.append((item, not bad, ""))
    return rows


def test_docs_mistakes_md_is_what_validate_writes_for_the_attention_assignment():
    with open(os.path.join(KIT, "docs", "mistakes.md"), encoding="utf-8") as handle:
        text = handle.read()
    rows = _rows(text)
    assert len(rows) == 60
    date = re.search(r"grader validate` \((\d{4}-\d\d-\d\d),", text).group(1)
    assert docs_table(rows, date, ATTENTION) == text
    assert "(`tests_hidden/attention/mistakes.py`, where each" in text
    assert "(`tests_hidden/attention/alternatives/`): the book's own d2l 0.17 code" in text
    # another assignment's page names its own files and command
    other = docs_table(rows[:1], date, dataclasses.replace(ATTENTION, name="second"))
    assert "`grader validate --assignment second --docs docs/mistakes-second.md`" in other
    assert "| total /100 |" in other


def test_the_machinery_names_no_assignment():
    """issue 16's done-when, for grader/catalog and grader/validate."""
    words = re.compile(r"attention|sequence_mask|masked_softmax|AdditiveAttention|"
                       r"DotProductAttention|transpose_qkv|transpose_output|MultiHeadAttention")
    found = []
    for folder in ("catalog", "validate"):
        for root, _, files in os.walk(os.path.join(KIT, "grader", folder)):
            for name in files:
                if name.endswith(".py"):
                    with open(os.path.join(root, name), encoding="utf-8") as handle:
                        found += [f"{name}:{n}" for n, line in enumerate(handle, 1)
                                  if words.search(line)]
    assert found == []


def test_a_catalog_is_passed_in_never_imported():
    """The one-catalog module names (MISTAKES, by_id, ...) are gone: code that wants a
    catalog takes the assignment's (Catalog.of), so no default one can stand in for it."""
    for name in ("MISTAKES", "CALLS", "EXPERIMENTS", "by_id", "callers", "suspects_for"):
        with pytest.raises(ImportError):
            exec(f"from grader.catalog.mistakes import {name}", {})
        with pytest.raises(ImportError):
            exec(f"from grader.catalog import {name}", {})
    with pytest.raises(ImportError):
        from grader.catalog.mistakes import PART_TARGETS  # noqa: F401 - the declaration's now


def test_a_mistake_is_written_once_in_english_and_said_in_chinese_by_the_catalogs():
    """The table holds the English alone (the msgid); the Chinese comes from the assignment's
    catalog, a class mistake's instance and a combination included (literals: the Chinese
    the table held inline before issue 30)."""
    ten = CATALOG.by_id("softmax-fill-small@-10")
    assert ten.en == ("masked scores are set to -10, which is not small enough to vanish in "
                      "the softmax")
    assert ten.text("zh") == "被掩蔽的分数设为 -10，它在 softmax 中不够小，不会消失"
    three = CATALOG.by_id("additive-bias@W_k+W_q+w_v")
    assert three.en == ("W_k, W_q and w_v are built with a bias (nn.Linear's default; the "
                        "model has none)")
    assert three.text("zh") == "W_k、W_q、w_v 带了偏置（nn.Linear 的默认设置；模型中没有偏置）"
    both = CATALOG.by_id("mask-inverted&dot-no-scale")
    assert both.en == ("the valid positions are replaced instead of the padding after them, "
                       "and also the scores are not divided by sqrt(d)")
    assert both.text("zh") == "替换的是有效位置，而不是它们之后的填充位置；同时分数没有除以 sqrt(d)"
    assert not hasattr(ten, "zh")
    assert CATALOG.experiment("transpose_output", "zh") == (
        "对 X = torch.arange(48.).reshape(2, 3, 8) 检查 transpose_output(transpose_qkv(X, 4), 4) "
        "是否还原出 X。")
    # a language without a catalog (or an unknown one) says the English
    assert three.text("fr") == three.en
