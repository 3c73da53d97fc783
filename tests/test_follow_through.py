"""A mistake costs points once, whatever it is, and never pays (issue 26), by real grading.

Error carried forward judges each dependent part on the student's own code
(grader/catalog/carry.py): a case of a function whose code reaches a function that failed
its own cases is run again with those callees answered by the solution. Graded here through
real trusted processes and sandboxed workers:

- callee mistakes in no catalog, of five kinds (another activation, a module built another
  way so its weights do not load, a wrong scale, a wrong branch, a wrong reshape), in every
  function others call, in both assignments and across the assignment edge: every caller
  keeps full marks;
- every catalog mistake of the earlier assignment's module, provided by the student: the
  encoder block keeps full marks;
- class mistakes carried whatever their parameter; a callee mistake that only its callers'
  cases show costs there, once, never carried;
- the gaming classes: a mimicked error, and a caller's own device bug dressed as a callee's,
  score no more than their honest version;
- never pays: a catalog mistake put into a function that was right never raises the total
  (a seeded sample of submission x mistake pairs, the solution's left to `grader validate`;
  tools/never_pays.py runs them all);
- causal sentences name only functions the file defines and whose code reaches them.
"""
import ast
import os
import random
import re

import pytest

from conftest import KIT, student_provided_kit
from grader import assignment
from grader.catalog import Catalog
from grader.grade import SuiteOptions, grade_batch
from grading import grades, run_grader

pytestmark = pytest.mark.slow

ATTENTION = assignment.load("attention")
TRANSFORMER = assignment.load("transformer")
CATALOG = Catalog.of(ATTENTION)
T_CATALOG = Catalog.of(TRANSFORMER)
MAX = {"sequence_mask": 11, "masked_softmax": 20, "AdditiveAttention": 15,
       "DotProductAttention": 15, "transpose": 9, "MultiHeadAttention": 20, "GPU": 10}
T_MAX = {"PositionalEncoding": 24, "PositionWiseFFN": 10, "AddNorm": 18,
         "TransformerEncoderBlock": 36, "GPU": 12}


def read(path):
    with open(path, encoding="utf-8") as handle:
        return handle.read()


SOLUTION = read(ATTENTION.solution)
T_SOLUTION = read(TRANSFORMER.solution)


def edited(source, *edits):
    for old, new in edits:
        assert source.count(old) == 1, old
        source = source.replace(old, new)
    return source


def with_mistakes(source, catalog, *ids):
    """`source` with each catalog mistake; "id@value": a class mistake's instance."""
    for mistake_id in ids:
        base, _, value = mistake_id.partition("@")
        mistake = catalog.by_id(base)
        source = (catalog.instance(mistake, value) if value else mistake).apply(source)
    return source


def grade(folder, named, declared=ATTENTION, jobs=2):
    """{name: source} graded in one batch; {name: SubmissionResult}."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, source in named.items():
        path = folder / "subs" / f"{name}.py"
        path.parent.mkdir(exist_ok=True)
        path.write_text(source, encoding="utf-8")
        paths.append(str(path))
    results = grade_batch(paths, str(folder / "out"), SuiteOptions(assignment=declared),
                          jobs=jobs, force=True)
    return Results({r.name: r for r in results})


def parts(result):
    return {part: score for part, (score, _top) in result.by_part().items()}


# -- callee mistakes in no catalog ----------------------------------------------------------
MASK_LINE = "mask = positions[None, :] < valid_len[:, None]"
# each in a function others call: (the function, the kind of mistake, the edit)
UNCATALOGUED = {
    "mask-length-0-keeps-one": ("sequence_mask", "a wrong branch for length 0", [(
        MASK_LINE, "mask = positions[None, :] < valid_len.clamp(min=1)[:, None]")]),
    "softmax-2d-lengths-capped": ("masked_softmax", "a wrong branch for 2-D lengths", [(
        "valid_lens = valid_lens.reshape(-1)  # (B, Q) -> (B*Q,)",
        "valid_lens = valid_lens.reshape(-1).clamp(max=shape[-1] - 1)")]),
    "softmax-halved-scores": ("masked_softmax", "another activation: a softmax of half the "
                              "scores", [("return nn.functional.softmax(X.reshape(shape), "
                                          "dim=-1)  # (B, Q, K)",
                                          "return nn.functional.softmax(X.reshape(shape) / 2, "
                                          "dim=-1)  # (B, Q, K)")]),
    "dot-scale-by-queries": ("DotProductAttention", "a wrong scale: by the number of queries", [(
        "scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(d)",
        "scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(queries.shape[1])")]),
    "qkv-heads-interleaved": ("transpose_qkv", "a wrong reshape: head i takes every h-th "
                              "feature", [(
        "    X = X.reshape(X.shape[0], X.shape[1], num_heads, -1)  # (B, n, heads, hidden/heads)\n"
        "    X = X.permute(0, 2, 1, 3)  # (B, heads, n, hidden/heads)\n",
        "    X = X.reshape(X.shape[0], X.shape[1], -1, num_heads)  # (B, n, hidden/heads, heads)\n"
        "    X = X.permute(0, 3, 1, 2)  # (B, heads, n, hidden/heads)\n")]),
    "output-heads-reversed": ("transpose_output", "a wrong reshape: the heads put back in "
                              "reverse order", [(
        "    return X.reshape(X.shape[0], X.shape[1], -1)  # (B, n, hidden)",
        "    return X.flip(2).reshape(X.shape[0], X.shape[1], -1)  # (B, n, hidden)")]),
}
T_FFN = ("        self.dense1 = nn.Linear(ffn_num_input, ffn_num_hiddens)\n"
         "        self.relu = nn.ReLU()\n"
         "        self.dense2 = nn.Linear(ffn_num_hiddens, ffn_num_outputs)\n")
T_UNCATALOGUED = {
    "ffn-gelu": ("PositionWiseFFN", "another activation (GELU)", [(
        "        self.relu = nn.ReLU()\n", "        self.relu = nn.GELU()\n")]),
    "ffn-sequential": ("PositionWiseFFN", "a module built another way: its weights, named "
                       "net.0 and net.2, do not load", [(
        T_FFN, "        self.net = nn.Sequential(nn.Linear(ffn_num_input, ffn_num_hiddens), "
               "nn.ReLU(),\n                                 nn.Linear(ffn_num_hiddens, "
               "ffn_num_outputs))\n"), (
        "        hidden = self.relu(self.dense1(X))  # (B, T, ffn_num_hiddens)\n"
        "        return self.dense2(hidden)  # (B, T, ffn_num_outputs)",
        "        return self.net(X)")]),
    "addnorm-no-affine": ("AddNorm", "a module built another way: a LayerNorm without weights",
                          [("        self.ln = nn.LayerNorm(normalized_shape)",
                            "        self.ln = nn.LayerNorm(normalized_shape, "
                            "elementwise_affine=False)")]),
}


@pytest.fixture(scope="module")
def attention_class(tmp_path_factory):
    """One attention batch: the uncatalogued callee mistakes, class mistakes at several
    parameters, the hidden callee mistake, the gaming attacks and their honest versions,
    and real-style files for the sentences."""
    named = {name: edited(SOLUTION, *edits) for name, (_f, _k, edits) in UNCATALOGUED.items()}
    for fill in ("-1", "-10", "-5", "-0.5"):
        named[f"fill{fill}"] = with_mistakes(SOLUTION, CATALOG, f"softmax-fill-small@{fill}")
    for axis in ("1", "0", "rows"):
        named[f"axis-{axis}"] = with_mistakes(SOLUTION, CATALOG, f"softmax-wrong-axis@{axis}")
    named.update(HIDDEN=hidden_callee_mistake(), **gaming(), **real_style())
    results = grade(tmp_path_factory.mktemp("attention"), named)
    results.sources = named
    return results


class Results(dict):
    """{name: SubmissionResult}, with the sources graded (`sources`)."""


def test_a_callee_mistake_in_no_catalog_costs_only_its_own_part(attention_class):
    for name, (function, kind, _edits) in UNCATALOGUED.items():
        result = attention_class[name]
        own = ATTENTION.part_of(function)
        scores = parts(result)
        assert scores[own] < MAX[own], (name, kind)
        for part, top in MAX.items():
            if part not in (own, "GPU"):
                assert scores[part] == top, (name, kind, part, scores)
        # a wrong function that does its work keeps its GPU share: none is lost
        assert scores["GPU"] == MAX["GPU"], (name, kind, scores)
    # the callers' cases its mistake reached were judged with it answered right, and say so
    carried = {name: [t for t in attention_class[name].tests if t.carried]
               for name in UNCATALOGUED}
    assert sum(1 for found in carried.values() if found) >= 4, carried
    for name, found in carried.items():
        function = UNCATALOGUED[name][0]
        assert all(function in t.carried["in"] or t.carried["in"] for t in found), name


def test_a_class_mistake_is_carried_whatever_its_parameter(attention_class):
    for name in ("fill-1", "fill-10", "fill-5", "fill-0.5", "axis-1", "axis-0", "axis-rows"):
        scores = parts(attention_class[name])
        assert scores["masked_softmax"] < MAX["masked_softmax"], name
        assert {p: s for p, s in scores.items() if p != "masked_softmax"} == \
            {p: t for p, t in MAX.items() if p != "masked_softmax"}, (name, scores)


def hidden_callee_mistake():
    """masked_softmax fills with -10 where it gets 6 rows or more: none of its own cases (or
    DotProductAttention's) has that many, MultiHeadAttention's several heads do."""
    return edited(SOLUTION, ("    X = sequence_mask(X.reshape(-1, shape[-1]), valid_lens, "
                             "value=-1e6)  # (B*Q, K)\n",
                             "    X = sequence_mask(X.reshape(-1, shape[-1]), valid_lens,\n"
                             "                      value=-10.0 if shape[0] >= 6 else -1e6)\n"))


def test_a_callee_mistake_only_its_callers_show_costs_there_and_is_never_carried(
        attention_class):
    result = attention_class["HIDDEN"]
    scores = parts(result)
    assert {p: scores[p] for p in ("sequence_mask", "masked_softmax", "AdditiveAttention",
                                   "DotProductAttention", "transpose")} == \
        {p: MAX[p] for p in ("sequence_mask", "masked_softmax", "AdditiveAttention",
                             "DotProductAttention", "transpose")}
    assert scores["MultiHeadAttention"] < MAX["MultiHeadAttention"]
    assert not any(t.carried for t in result.tests)
    failing = [t for t in result.tests if t.part == "MultiHeadAttention" and t.status == "failed"]
    assert failing and not any(t.carry_note for t in failing)
    # masked_softmax passed its own cases, so its mistakes are not searched in its callers':
    # the part says what its failing cases show, and blames no function
    (said,) = [d for d in result.diagnoses if d["part"] == "MultiHeadAttention"]
    assert said["mistake"] is None and said["text"].startswith("MultiHeadAttention: "), said


# -- gaming ---------------------------------------------------------------------------------
RAISES_LIKE = ('    if valid_lens is None:\n        return nn.functional.softmax(X, dim=-1)\n',
               '    if valid_lens is None:\n'
               '        raise AttributeError("\'NoneType\' object has no attribute \'dim\'")\n')


def gaming():
    """Two attacks and their honest versions (the same file without the callee mistake).

    mimic: masked_softmax made to fail on valid_lens None (the catalog's
    softmax-none-unhandled raises AttributeError there), and every caller written to raise
    that same error whatever it is given, hoping to pass as "what the solution with that
    mistake gives" (before follow-through marking it was paid most of four parts).
    device: sequence_mask's catalog GPU mistake (gpu-arange-no-device) together with
    DotProductAttention's own stray tensor made on the default device, hoping the callee's
    mistake covers the caller's."""
    raise_always = ("raise AttributeError(\"'NoneType' object has no attribute 'dim'\")")
    callers = edited(
        SOLUTION,
        ("        queries, keys = self.W_q(queries), self.W_k(keys)",
         "        " + raise_always),
        ("        d = queries.shape[-1]", "        " + raise_always),
        ("        queries = transpose_qkv(self.W_q(queries), self.num_heads)  # (B*h, Q, hidden/h)",
         "        " + raise_always))
    stray = ("        d = queries.shape[-1]",
             "        d = queries.shape[-1]\n"
             "        queries = queries * torch.ones(queries.shape[-1])  # made on the CPU")
    return {
        "mimic": with_mistakes(callers, CATALOG, "softmax-none-unhandled"),
        "mimic-honest": callers,
        "device": with_mistakes(edited(SOLUTION, stray), CATALOG, "gpu-arange-no-device"),
        "device-honest": edited(SOLUTION, stray),
    }


def test_an_attack_scores_no_more_than_its_honest_version(attention_class):
    for attack in ("mimic", "device"):
        dressed, honest = attention_class[attack], attention_class[f"{attack}-honest"]
        assert dressed.status == honest.status == "graded"
        assert dressed.score <= honest.score, (attack, parts(dressed), parts(honest))
    # the callers that raise are never paid for the callee's mistake
    mimic = parts(attention_class["mimic"])
    assert mimic["AdditiveAttention"] == mimic["DotProductAttention"] == \
        mimic["MultiHeadAttention"] == 0, mimic
    # the caller's own stray tensor costs its GPU share, with or without the callee's
    device = attention_class["device"]
    dot = [t for t in device.tests if t.name == "GPU: DotProductAttention makes no tensor on "
           "the default device"]
    # and the verdict says whose code made the stray tensor
    assert dot and dot[0].status == "failed" and \
        "torch.ones(...) without device= (in DotProductAttention.forward, line " in \
        dot[0].message, dot


# -- never pays -----------------------------------------------------------------------------
CALLERS = ("masked_softmax", "AdditiveAttention", "DotProductAttention", "MultiHeadAttention")


def callee_mistakes(catalog, declared):
    """The catalog's mistakes in functions others call (each with the default parameter)."""
    called = {c for callees in declared.calls.values() for c in callees}
    return [m.id for m in catalog if m.target in called]


def bases(source, catalog, declared, callers):
    """Submissions whose callees are right: the solution, and the solution with one caller
    left unwritten, raising, or wrong (its first catalog mistake)."""
    out = {"solution": source}
    for caller in callers:
        own = [m.id for m in catalog if m.target == caller]
        out[f"{caller}-unwritten"] = _body_replaced(source, caller, "raise NotImplementedError")
        out[f"{caller}-raising"] = _body_replaced(source, caller,
                                                  "raise RuntimeError('shapes do not match')")
        if own:
            out[f"{caller}-wrong"] = catalog.by_id(own[0]).apply(source)
    return out


def _body_replaced(source, name, statement):
    """The solution with the code of `name`'s solution region (its forward, for a class)
    replaced by `statement`."""
    tree = ast.parse(source)
    node = next(n for n in tree.body if getattr(n, "name", None) == name)
    if isinstance(node, ast.ClassDef):
        node = next(n for n in node.body if getattr(n, "name", None) == "forward")
    lines = source.splitlines(keepends=True)
    first = node.body[0]
    if isinstance(first, ast.Expr) and isinstance(getattr(first, "value", None), ast.Constant):
        first = node.body[1]  # keep the docstring
    start, end = first.lineno - 1, node.end_lineno
    indent = " " * first.col_offset
    return "".join(lines[:start]) + f"{indent}{statement}\n" + "".join(lines[end:])


def examples():
    """The example submissions written as files (alice's book style, chen's GBK file)."""
    out = {}
    for name in ("alice", "chen"):
        with open(os.path.join(KIT, "examples", f"{name}.py"), "rb") as handle:
            raw = handle.read()
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            text = raw.decode("gbk")
        out[f"example-{name}"] = text.replace("\r\n", "\n")
    return out


def never_pays_pairs(source, catalog, declared, callers, sample=None, seed=26):
    """[(base name, base source, mistake id)] for the property: all of them (sample None:
    tools/never_pays.py), or a seeded sample of `sample` pairs whose base is not the solution.
    The solution's 100 cannot be raised, so a pair of it proves nothing here: each of its
    mistakes, graded on the solution, is `grader validate`'s catalog (tests/test_zoo.py:
    graded, and loses points in its part)."""
    found = bases(source, catalog, declared, callers)
    if declared is ATTENTION:
        found.update(examples())
    pairs = []
    for mistake_id in callee_mistakes(catalog, declared):
        for name, base in found.items():
            try:
                changed = catalog.by_id(mistake_id).apply(base)
            except (AssertionError, ValueError):
                continue  # the base rewrote the line the mistake edits
            if changed != base:
                pairs.append((name, base, mistake_id))
    if sample is not None:
        rest = [p for p in pairs if p[0] != "solution"]
        pairs = random.Random(seed).sample(rest, min(sample, len(rest)))
    return found, pairs


@pytest.mark.parametrize("declared, source, callers, sample", [
    (ATTENTION, SOLUTION, CALLERS, 40),
    (TRANSFORMER, T_SOLUTION, ("TransformerEncoderBlock",), 18)],
    ids=["attention", "transformer"])
def test_a_mistake_put_into_a_right_function_never_raises_the_total(tmp_path, declared, source,
                                                                   callers, sample):
    catalog = Catalog.of(declared)
    found, pairs = never_pays_pairs(source, catalog, declared, callers, sample)
    named = dict(found)
    for base, base_source, mistake_id in pairs:
        named[f"{base}+{mistake_id}"] = catalog.by_id(mistake_id).apply(base_source)
    results = grade(tmp_path, named, declared)
    assert len(pairs) == sample, len(pairs)  # the transformer's 18: all but the solution's
    for base, _source, mistake_id in pairs:
        with_mistake, without = results[f"{base}+{mistake_id}"], results[base]
        assert with_mistake.status == without.status == "graded", (base, mistake_id)
        assert with_mistake.score <= without.score, (base, mistake_id, parts(with_mistake),
                                                     parts(without))
    assert results["solution"].score == 100


# -- the transformer: callee mistakes, and the earlier module the student provides ----------
@pytest.fixture(scope="module")
def transformer_class(tmp_path_factory):
    named = {name: edited(T_SOLUTION, *edits) for name, (_f, _k, edits) in T_UNCATALOGUED.items()}
    return grade(tmp_path_factory.mktemp("transformer"), named, TRANSFORMER)


def test_a_transformer_callee_mistake_in_no_catalog_costs_only_its_own_part(transformer_class):
    for name, (function, kind, _edits) in T_UNCATALOGUED.items():
        result = transformer_class[name]
        scores = parts(result)
        assert scores[function] < T_MAX[function], (name, kind)
        assert scores["TransformerEncoderBlock"] == 36, (name, kind, scores)
        assert scores["PositionalEncoding"] == 24, (name, scores)
        gpu = {t.target: t for t in result.tests if t.part == "GPU" and t.status != "skipped"}
        assert gpu["TransformerEncoderBlock"].status == "passed", name
        if name == "ffn-gelu":  # wrong, but it does its work: its GPU share is graded
            assert scores["GPU"] == 12, (name, scores)
        else:  # a module whose weights do not load runs no case: its share cannot be graded
            assert scores["GPU"] == 9 and gpu[function].message.startswith(
                f"{function} runs through none of its cases on the CPU (each raises an error, "
                f"or its weights do not load: see its own part)"), (name, gpu[function].message)


# the earlier module's functions the encoder block reaches: MultiHeadAttention and all it calls
EARLIER_MISTAKES = [m.id for m in CATALOG if m.target in
                    ("sequence_mask", "masked_softmax", "DotProductAttention", "transpose_qkv",
                     "transpose_output", "MultiHeadAttention")]
EARLIER_UNCATALOGUED = {
    "mha-queries-scaled-by-heads": edited(SOLUTION, (
        "        queries = transpose_qkv(self.W_q(queries), self.num_heads)  # (B*h, Q, hidden/h)",
        "        queries = transpose_qkv(self.W_q(queries) / self.num_heads, self.num_heads)")),
    **{name: edited(SOLUTION, *edits) for name, (_f, _k, edits) in UNCATALOGUED.items()},
}


def test_every_mistake_in_the_earlier_module_the_student_provides_costs_the_block_nothing(
        tmp_path):
    kit = student_provided_kit(tmp_path / "kit")
    folders = []
    earlier = {m: with_mistakes(SOLUTION, CATALOG, m) for m in EARLIER_MISTAKES}
    earlier.update(EARLIER_UNCATALOGUED)
    for name, attention in earlier.items():
        folder = tmp_path / "class" / name
        folder.mkdir(parents=True)
        (folder / "attention.py").write_text(attention, encoding="utf-8")
        (folder / "transformer.py").write_text(T_SOLUTION, encoding="utf-8")
        folders.append(str(folder))
    out = tmp_path / "out"
    done = run_grader("grade", "--assignment", "transformer", *folders, "--out", str(out),
                      "--jobs", "2", kit=kit, timeout=1800)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    rows = grades(out)
    assert len(rows) == len(earlier) >= 50
    lost = {name: row["total"] for name, row in rows.items() if float(row["total"]) != 100}
    assert not lost, lost
    # said so: the block's cases were judged with the earlier module answered right
    told = (out / "mha-repeat" / "feedback.txt").read_text(encoding="utf-8")
    assert ("give the right result once MultiHeadAttention answers correctly, so "
            "TransformerEncoderBlock's own code is right there and their points are kept (error "
            "carried forward): MultiHeadAttention comes from your attention.py, which is graded "
            "in its own assignment.") in told


# -- causal sentences -----------------------------------------------------------------------
def real_style():
    """Files written the way students and public code write them, each with a mistake:
    masking inline (no sequence_mask), a softmax without the helper, the alternatives of
    the suite (other styles), and helpers of their own."""
    alternatives = ATTENTION.alternatives
    out = {}
    for name in sorted(os.listdir(alternatives)):
        if name.endswith(".py"):
            source = read(os.path.join(alternatives, name))
            unscaled = re.sub(r" / (math\.sqrt\(d\)|math\.sqrt\(queries\.size\(-1\)\)|"
                              r"queries\.shape\[-1\] \*\* 0\.5)", "", source, count=1)
            if unscaled != source:
                out[f"style-{name[:-3]}-scale"] = unscaled
            if "-1e6" in source:
                out[f"style-{name[:-3]}-fill"] = source.replace("-1e6", "-1.0", 1)
                out[f"style-{name[:-3]}-fill-zero"] = source.replace("-1e6", "0.0", 1)
    # masking inline, under another name: this file has no sequence_mask
    out["inline-mask"] = edited(SOLUTION, ("def sequence_mask(", "def _mask_past("),
                                ("    X = sequence_mask(X.reshape", "    X = _mask_past(X.reshape"),
                                ("    X = X.permute(0, 2, 1, 3)  # (B, heads, n, hidden/heads)\n",
                                 "    X = X.permute(0, 2, 3, 1)  # (B, heads, hidden/heads, n)\n"))
    out["fill-zero"] = with_mistakes(SOLUTION, CATALOG, "softmax-mask-zero")
    # no sequence_mask at all (masking inline), and a DotProductAttention of its own that
    # does not scale: nothing may blame a sequence_mask the file does not have
    out["inline-mask-no-scale"] = with_mistakes(edited(
        SOLUTION, ("def sequence_mask(", "def _mask_past("),
        ("    X = sequence_mask(X.reshape", "    X = _mask_past(X.reshape")), CATALOG,
        "dot-no-scale")
    return out


def _defs(source):
    """{top-level name: the names its code mentions, through its own helpers too}."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return {}
    mentions = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            mentions[node.name] = {getattr(n, "id", None) or getattr(n, "attr", None)
                                   for n in ast.walk(node)} - {None, node.name}
    reach = {}
    for name in mentions:
        seen, todo = {name}, [name]
        while todo:
            for other in mentions.get(todo.pop(), ()):
                if other in mentions and other not in seen:
                    seen.add(other)
                    todo.append(other)
        reach[name] = set().union(*(mentions[n] for n in seen)) | (seen - {name})
    return reach


def causal_claims(result):
    """(function blamed, function it is blamed for) of every causal sentence: error carried
    forward's (carried, noted) and the diagnoses that name a mistake in a called function."""
    claims = []
    for test in result.tests:
        for record in (test.carried, test.carry_note):
            if record:
                claims += [(callee, record["target"])
                           for callee in record.get("in") or record.get("callees") or []]
    for entry in result.diagnoses:
        found = re.match(r"in (\w+), which (\w+) calls: ", entry.get("text") or "")
        if found:
            claims.append((found[1], found[2]))
    return claims


def test_a_causal_sentence_names_only_what_the_file_defines_and_its_code_calls(
        attention_class):
    checked = 0
    for name, result in attention_class.items():
        reach = _defs(attention_class.sources[name])
        for callee, caller in causal_claims(result):
            checked += 1
            assert callee in reach, (name, callee, caller, "not defined")
            assert callee in reach.get(caller, ()), (name, callee, caller, "not reached")
    assert checked >= 40, checked


def test_no_diagnosis_prints_a_number_the_code_did_not_produce(attention_class):
    text = " ".join(d["text"] for d in attention_class["fill-zero"].diagnoses)
    assert "masked scores are set to 0," in text and "e-0" not in text, text
    for fill in ("-1", "-10", "-5", "-0.5"):
        said = " ".join(d["text"] for d in attention_class[f"fill{fill}"].diagnoses)
        assert f"masked scores are set to {fill}," in said, (fill, said)


def test_a_diagnosis_counts_the_cases_its_part_shows(attention_class):
    for name, result in attention_class.items():
        for entry in result.diagnoses:
            found = re.search(r"in (\d+) of the (\d+) failing cases of this part", entry["text"])
            if not found:
                continue
            failing = sum(1 for t in result.tests if t.part == entry["part"]
                          and t.status == "failed")
            assert int(found[2]) == failing, (name, entry["part"], entry["text"], failing)
            assert int(found[1]) <= failing
