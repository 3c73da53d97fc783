"""The transformer assignment, proved in this process: its case table against its solution,
its correct alternatives, its released skeleton and every mistake of its catalog.

The hidden suite's own checks (grader/suite/checks.py) grade each implementation here as
they grade a student, without a worker: the solution and the alternatives pass every case,
the skeleton none, and every catalog mistake fails a case of its own part with results no
other mistake of the catalog gives (so the diagnosis can name it alone). The expectations
that do not come from the solution are computed here from the book's formulas.
"""
import difflib
import math
import os
import re
import sys

import pytest
import torch

from grader import assignment as assignments
from grader.catalog.build import MistakeImplementation
from grader.catalog.diagnose import same_results
from grader.catalog.mistakes import Catalog, Mistake
from grader.harness import Reference
from grader.harness.failures import StudentFailure
from grader.harness.implementations import load_module_from
from grader.harness.results import ProbeResult
from grader.sandbox.runtime.probes import run_probe
from grader.suite import checks
from grader.suite.session import Session

from conftest import student_env
from grading import run_grader

KIT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOLUTIONS = os.path.join(KIT, "solutions")
API = ("PositionalEncoding", "PositionWiseFFN", "AddNorm", "TransformerEncoderBlock")


@pytest.fixture(scope="module")
def kit():
    """The transformer's declaration, table, catalog and reference, with the attention
    solution importable as `attention` (what builds_on "given" provides) for this module
    only."""
    saved_path, saved = list(sys.path), sys.modules.pop("attention", None)
    sys.path.insert(0, SOLUTIONS)
    try:
        declared = assignments.load("transformer")
        yield {"assignment": declared, "session": Session(declared),
               "catalog": Catalog.of(declared), "reference": Reference(declared.solution, declared)}
    finally:
        sys.path[:] = saved_path
        sys.modules.pop("attention", None)
        if saved is not None:
            sys.modules["attention"] = saved


class Loaded:
    """A module file graded in this process, as a worker would run it."""

    diagnosable = False

    def __init__(self, module):
        self.module = module

    def run(self, probe, call_text, expected=None):
        return ProbeResult(run_probe(self.module, probe), probe, "test", call_text).check_ran()


def _grade(kit, implementation):
    """{case id: None when it passes, else the failure's text}, for every case that runs on
    this machine's kind (the CUDA cases need a GPU: their device-guard twins stand in)."""
    session, reference = kit["session"], kit["reference"]
    out = {}
    for case in session.table:
        if case.check == "cuda":
            continue
        try:
            checks.CHECKS[case.check](session, case, implementation, reference)
            out[case.id] = None
        except StudentFailure as failure:
            out[case.id] = str(failure)
    return out


# -- the declaration --------------------------------------------------------------------
def test_the_declaration_says_what_the_assignment_is(kit):
    declared = kit["assignment"]
    assert declared.module_file == "transformer.py"
    assert declared.api == API
    assert [(p.name, p.points) for p in declared.parts] == [
        ("PositionalEncoding", 24), ("PositionWiseFFN", 10), ("AddNorm", 18),
        ("TransformerEncoderBlock", 36), ("GPU", 12)]
    assert declared.gpu_parts == ("GPU",)
    assert [(b.assignment, b.provide) for b in declared.builds_on] == [("attention", "given")]
    assert declared.weights == {"TransformerEncoderBlock": "attention.attention.attention_weights"}
    assert declared.callers("AddNorm") == ("TransformerEncoderBlock",)


def test_the_table_gives_each_part_its_declared_points(kit):
    totals = kit["session"].table.max_points()
    assert totals == {"PositionalEncoding": 24, "PositionWiseFFN": 10, "AddNorm": 18,
                      "TransformerEncoderBlock": 36, "GPU": 12}
    cases = list(kit["session"].table)
    assert len(cases) == 47
    # the kinds the issue asks for are there
    names = " | ".join(c.name for c in cases)
    for said in ("more sequences than positions", "X = 0 shows P", "exactly max_len",
                 "dropout in training mode", "eval mode with dropout=0.5", "float64",
                 "gradients of X and every parameter", "padding changes the output"):
        assert said in names, said
    assert {c.degenerate != "" for c in cases if c.target == "PositionWiseFFN"} == {False}


# -- the solution, by the book's formulas -------------------------------------------------
def test_the_positional_encoding_is_the_books_sine_cosine_table(kit):
    module = kit["reference"].module
    encoding = module.PositionalEncoding(6, 0.0, max_len=5).eval()
    got = encoding(torch.zeros(2, 4, 6, dtype=torch.float64))
    assert got.shape == (2, 4, 6) and got.dtype == torch.float64
    for i in range(4):
        for j in range(3):
            angle = i / 10000 ** (2 * j / 6)
            assert got[1, i, 2 * j].item() == pytest.approx(math.sin(angle), abs=1e-6)
            assert got[1, i, 2 * j + 1].item() == pytest.approx(math.cos(angle), abs=1e-6)
    assert tuple(encoding.P.shape) == (1, 5, 6)
    assert list(encoding.state_dict()) == []  # P is no weight: load_state_dict never sees it


def test_add_norm_and_the_ffn_are_what_the_book_defines(kit):
    module = kit["reference"].module
    torch.manual_seed(0)
    X, Y = torch.randn(2, 3, 4), torch.randn(2, 3, 4)
    mean = (X + Y).mean(-1, keepdim=True)
    var = (X + Y).var(-1, unbiased=False, keepdim=True)
    expected = (X + Y - mean) / torch.sqrt(var + 1e-5)
    assert torch.allclose(module.AddNorm(4, 0.5).eval()(X, Y), expected, atol=1e-5)
    ffn = module.PositionWiseFFN(4, 6, 8)
    by_hand = torch.clamp(X @ ffn.dense1.weight.T + ffn.dense1.bias, min=0) @ ffn.dense2.weight.T \
        + ffn.dense2.bias
    assert torch.allclose(ffn(X), by_hand, atol=1e-6)


def test_the_block_keeps_padding_out_of_the_attention(kit):
    module = kit["reference"].module
    torch.manual_seed(1)
    block = module.TransformerEncoderBlock(8, 8, 8, 8, [8], 8, 16, 2, 0.0).eval()
    X = torch.randn(2, 5, 8)
    out = block(X, torch.tensor([2, 5]))
    weights = block.attention.attention.attention_weights
    assert out.shape == (2, 5, 8) and weights.shape == (4, 5, 5)
    assert torch.all(weights[:2, :, 2:] == 0)  # both heads of example 0: positions 2.. are padding
    changed = X.clone()
    changed[0, 3] += 5.0  # padding of example 0: its real positions do not see it
    again = block(changed, torch.tensor([2, 5]))
    assert torch.allclose(again[0, :2], out[0, :2], atol=1e-6)
    assert not torch.allclose(block(X, None)[0, :2], out[0, :2], atol=1e-3)


# -- graded by the hidden suite's checks ---------------------------------------------------
def test_the_solution_passes_every_case(kit):
    graded = _grade(kit, Loaded(kit["reference"].module))
    assert len(graded) == 43
    assert {k: v for k, v in graded.items() if v} == {}


ALTERNATIVES = sorted(n[:-3] for n in os.listdir(os.path.join(
    KIT, "tests_hidden", "transformer", "alternatives")) if n.endswith(".py"))


def test_there_are_correct_alternatives_written_differently():
    assert ALTERNATIVES == ["book_d2l_0_17", "buffer_exp", "lazy_linear_d2l_1_0",
                            "loops_functional"]


@pytest.mark.parametrize("name", ALTERNATIVES)
def test_a_correct_alternative_passes_every_case(kit, name):
    path = os.path.join(kit["assignment"].alternatives, f"{name}.py")
    graded = _grade(kit, Loaded(load_module_from(path, f"transformer_alternative_{name}")))
    assert {k: v for k, v in graded.items() if v} == {}


def test_the_released_skeleton_passes_no_case(kit, tmp_path):
    from grader.release import release
    skeleton = release(kit["assignment"].solution, list(API))
    assert "from attention import MultiHeadAttention" in skeleton
    assert "self.addnorm1(X, self.attention(" not in skeleton
    path = tmp_path / "transformer.py"
    path.write_text(skeleton, encoding="utf-8")
    graded = _grade(kit, Loaded(load_module_from(str(path), "transformer_skeleton")))
    assert [k for k, v in graded.items() if v is None] == []
    assert "is not written yet" in graded["AddNorm: float64"]


def test_the_catalog_has_the_mistakes_the_issue_lists(kit):
    ids = [m.id for m in kit["catalog"]]
    assert len(ids) >= 15
    for wanted in ("pos-sin-cos-swapped", "pos-exponent-transposed", "pos-exponent-not-doubled",
                   "pos-not-sliced", "pos-dropout-before-add", "pos-no-dropout",
                   "pos-scales-input", "ffn-no-relu", "ffn-relu-after", "addnorm-y-only",
                   "addnorm-dropout-on-sum", "addnorm-norm-before-add", "block-no-valid-lens",
                   "block-second-residual-input", "block-pre-norm", "block-norm-shape-hidden"):
        assert wanted in ids, wanted
    for mistake in kit["catalog"]:
        assert mistake.en and not mistake.en.endswith(".")
        assert re.search(r"[\u4e00-\u9fff]", mistake.text("zh")), mistake.id  # its catalog's


def _failing_probes(kit, mistake):
    """The probes of the non-device cases of its own part that `mistake` fails."""
    session, reference = kit["session"], kit["reference"]
    implementation = MistakeImplementation(mistake, kit["assignment"].solution, "transformer")
    failing = []
    for case in session.table:
        if case.part != mistake.part or case.check not in ("match", "eval"):
            continue
        if not checks.passes(session, case, implementation, reference):
            failing.append(case.probe(checks._state(case, reference)))
    return implementation, failing


def test_every_mistake_fails_its_own_part_and_no_other_mistake_looks_the_same(kit):
    """What `grader validate` asks of each (points lost in its part, diagnosed as itself),
    in this process: a mistake whose every failing result another mistake also gives could
    not be told from it."""
    catalog = list(kit["catalog"])
    runs = {m.id: _failing_probes(kit, m) for m in catalog}
    assert {m: len(probes) for m, (_, probes) in runs.items() if not probes} == {}
    twins = []
    for mistake in catalog:
        _, probes = runs[mistake.id]
        mine = runs[mistake.id][0]
        for other in catalog:
            if other.id == mistake.id:
                continue
            theirs = runs[other.id][0]
            if all(same_results(mine.raw(p), theirs.raw(p), p) for p in probes):
                twins.append((mistake.id, other.id))
    assert twins == []


def test_a_mistake_stays_a_small_edit_of_the_solution(kit):
    with open(kit["assignment"].solution, encoding="utf-8") as handle:
        source = handle.read()
    for mistake in kit["catalog"]:
        diff = list(difflib.unified_diff(source.splitlines(), mistake.apply(source).splitlines(),
                                         lineterm="", n=0))[2:]
        removed = sum(line.startswith("-") for line in diff)
        added = sum(line.startswith("+") for line in diff)
        assert 1 <= max(removed, added) <= 4, mistake.id
    with pytest.raises(ValueError):
        Mistake("x", "AddNorm", "AddNorm", "", (("no such line", ""),)).apply(source)


# -- the student folder ---------------------------------------------------------------------
def _self_checks(folder, *args):
    import subprocess
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:randomly", *args],
                          cwd=folder, capture_output=True, text=True, timeout=300,
                          env=student_env("ATTN_LANG"))
    return done.stdout + done.stderr


@pytest.mark.slow
def test_the_student_folder_works_copied_alone(tmp_path):
    """assignments/transformer/ on a laptop with torch and pytest: the given attention.py
    is there, the skeleton fails every self-check (in Chinese with --lang zh), the solution
    passes them all."""
    import shutil
    folder = tmp_path / "transformer"
    shutil.copytree(os.path.join(KIT, "assignments", "transformer"), folder)
    assert (folder / "attention.py").is_file() and (folder / "transformer.py").is_file()
    given = (folder / "attention.py").read_text(encoding="utf-8")
    assert "class MultiHeadAttention" in given and "BEGIN SOLUTION" not in given
    said = _self_checks(folder)
    assert "11 failed" in said and "AddNorm.__init__ is not written yet" in said
    with open(os.path.join(SOLUTIONS, "transformer.py"), encoding="utf-8") as handle:
        solution = handle.read()
    (folder / "transformer.py").write_text(solution, encoding="utf-8")
    assert "11 passed" in _self_checks(folder)
    wrong = solution.replace("residual = X + self.dropout(Y)", "residual = self.dropout(Y)")
    (folder / "transformer.py").write_text(wrong, encoding="utf-8")
    said = _self_checks(folder, "--lang", "zh", "-k", "add_norm")
    assert "2 failed, 9 deselected" in said and "X + Y 的层规范化" in said


def test_each_part_has_its_own_self_checks(kit):
    """The Classroom steps run `pytest -k <part.selfcheck>`: every CPU part selects its own
    tests of test_transformer.py and none of another part's."""
    with open(os.path.join(KIT, "assignments", "transformer", "test_transformer.py"),
              encoding="utf-8") as handle:
        names = [line.split("(")[0][4:] for line in handle if line.startswith("def test_")]
    for part in kit["assignment"].parts:
        if part.gpu:
            continue
        mine = [n for n in names if part.selfcheck in n]
        assert len(mine) >= 1, part.name
    assert sum(1 for part in kit["assignment"].parts if not part.gpu
               for n in names if part.selfcheck in n) == len(names) == 11


# -- the grader, end to end -----------------------------------------------------------------
@pytest.mark.slow
def test_grader_grade_gives_the_solution_100_and_the_skeleton_0(tmp_path):
    """`grader grade --assignment transformer`: real workers (the given attention.py staged
    beside each submission), real trusted processes, grades.csv read back."""
    import csv
    out = tmp_path / "grades"
    done = run_grader("grade", "--assignment", "transformer",
                      os.path.join(SOLUTIONS, "transformer.py"),
                      os.path.join(KIT, "assignments", "transformer", "transformer.py"),
                      "--out", str(out), "--jobs", "1", timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    with open(out / "grades.csv", encoding="utf-8-sig") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 2
    solution, = [r for r in rows if r["source"].endswith("solutions/transformer.py")]
    skeleton, = [r for r in rows if r["source"].endswith("assignments/transformer/transformer.py")]
    assert (solution["status"], solution["total"], solution["max"]) == ("graded", "100", "100")
    assert [solution[f"{p} (/{n})"] for p, n in (("PositionalEncoding", 24), ("PositionWiseFFN", 10),
            ("AddNorm", 18), ("TransformerEncoderBlock", 36), ("GPU", 12))] == \
        ["24", "10", "18", "36", "12"]
    assert (skeleton["status"], skeleton["total"]) == ("graded", "0")
    assert "PositionalEncoding.__init__ is not written yet" in skeleton["reason"]


def test_the_catalogs_docs_name_every_mistake_as_validate_diagnosed_it(kit):
    """docs/mistakes-transformer.md (written by `grader validate --assignment transformer
    --docs`) has a row for every mistake, each diagnosed as itself."""
    with open(os.path.join(KIT, "docs", "mistakes-transformer.md"), encoding="utf-8") as handle:
        rows = [line.split(" | ") for line in handle if line.startswith("| `")]
    assert {row[0].strip("| `") for row in rows} == {m.id for m in kit["catalog"]}
    assert all(row[-1].strip(" |\n") == row[0].strip("| `") for row in rows)


def test_the_gpu_part_reruns_no_training_mode_case(kit):
    """On CUDA dropout draws other masks than on the CPU from the same seed, so the GPU part
    re-runs a target's eval-mode cases only (grader/suite/table.py same_target); the seeded
    training-mode cases are graded on the CPU."""
    table = kit["session"].table
    for case in table.cases("cuda", "device"):
        again = table.same_target(case)
        assert again and all(c.mode == "eval" for c in again), case.id
    train = [c for c in table.cases("match") if c.mode == "train"]
    assert sorted(c.target for c in train) == ["AddNorm", "PositionalEncoding",
                                               "TransformerEncoderBlock"]
