"""The student folder works alone: plain `pytest` fails clearly on the skeleton and passes
with a correct solution, using only torch, pytest and the student's attention.py.

Its messages teach without giving the answer: they point at the step, the shape or an
experiment, never at the line of code that fixes the mistake, and they exist in English and
in Chinese (`pytest --lang zh` or ATTN_LANG=zh, read from a gettext catalog in the folder).
"""
import ast
import gettext
import json
import os
import re
import shutil
import string
import subprocess
import sys

import pytest

from conftest import KIT, SOLUTION, student_env

FOLDER = os.path.join(KIT, "assignments", "attention")
CHECKS = os.path.join(FOLDER, "test_attention.py")
PO = os.path.join(FOLDER, "locale", "zh_CN", "LC_MESSAGES", "selfcheck.po")
MO = os.path.join(FOLDER, "locale", "zh_CN", "LC_MESSAGES", "selfcheck.mo")
CJK = re.compile(r"[\u4e00-\u9fff]")

# Realistic mistakes: (line of the solution, what the student wrote instead), and a phrase
# the English and the Chinese message must contain.
MUTANTS = {
    "le": (("mask = positions[None, :] < valid_len[:, None]", "mask = positions[None, :] <= valid_len[:, None]"),
           "one position too many", "多保留了一个位置"),
    "wrong_way": (("X[~mask] = value", "X[mask] = value"), "wrong way round", "方向反了"),
    "inf": (("valid_lens, value=-1e6)  #", "valid_lens, value=float('-inf'))  #"), "came out NaN", "结果是 NaN"),
    "softmax_repeat": (("valid_lens = torch.repeat_interleave(valid_lens, shape[1])",
                        "valid_lens = valid_lens.repeat(shape[1])"), "copied whole", "整体复制"),
    "scale_by_d": (("/ math.sqrt(d)", "/ d"), "square root of d", "平方根"),
    "no_permute": (("    X = X.permute(0, 2, 1, 3)  # (B, heads, n, hidden/heads)\n", ""),
                   "a reshape alone", "只做 reshape"),
    "mha_repeat": (("valid_lens = torch.repeat_interleave(valid_lens, repeats=self.num_heads, dim=0)",
                    "valid_lens = valid_lens.repeat(self.num_heads)"), "torch.repeat_interleave does", "整体复制"),
    # right on the CPU, wrong on a GPU: only the device check (or, with CUDA, the GPU test) sees it;
    # the phrase is CUDA's own error text, which both messages quote
    "arange_no_device": (("torch.arange(maxlen, dtype=torch.float32, device=X.device)",
                          "torch.arange(maxlen, dtype=torch.float32)"),
                         "Expected all tensors to be on the same device", "Expected all tensors to be on the same device"),
    # right in eval mode: only the dropout-order check in training mode sees it
    "additive_weights_after_dropout": ((
        "self.w_v(features).squeeze(-1)  # (B, Q, K, 1) -> (B, Q, K)\n"
        "        self.attention_weights = masked_softmax(scores, valid_lens)  # (B, Q, K)\n"
        "        return torch.bmm(self.dropout(self.attention_weights), values)  # (B, Q, V)",
        "self.w_v(features).squeeze(-1)\n"
        "        self.attention_weights = self.dropout(masked_softmax(scores, valid_lens))\n"
        "        return torch.bmm(self.attention_weights, values)"), "before dropout", "暂退法（dropout）之前"),
}

# Fragments of the solution that no message may print (besides every whole solution line).
FIXING_CODE = [
    "math.sqrt(d)", "permute(0, 2, 1, 3)", "repeat_interleave(valid_lens, repeats=", "repeat_interleave(valid_lens",
    "repeat_interleave(..., dim=0)", "dim=0)", "X[~mask]", "valid_len[:, None]", "[None, :]",
    "keys.transpose(1, 2)", "unsqueeze(2) +", "squeeze(-1)", "reshape(-1)", "DotProductAttention(dropout)",
    "self.dropout(self.attention_weights)", "torch.bmm(weights, values)", "bias=bias", "value=-1e6",
    "/ math.sqrt", "W_o(transpose_output(", "device=X.device",
]


def _run_pytest(folder, *args, env=None):
    return subprocess.run([sys.executable, "-m", "pytest", *args], cwd=folder, capture_output=True,
                          text=True, timeout=300, env=student_env(**(env or {})))


def _copy(tmp_path, name="attention"):
    target = tmp_path / name
    shutil.copytree(FOLDER, target, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    return target


def _msgids():
    """Every string passed to _() in the self-checks, in order."""
    with open(CHECKS, encoding="utf-8") as handle:
        tree = ast.parse(handle.read())
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "_":
            assert len(node.args) == 1 and not node.keywords, f"line {node.lineno}: _() takes one string"
            arg = node.args[0]
            assert isinstance(arg, ast.Constant) and isinstance(arg.value, str), \
                f"line {node.lineno}: _() needs a literal string (use .format after it, not an f-string)"
            found.append(arg.value)
    return list(dict.fromkeys(found))


def _parse_po(path):
    """{msgid: (msgstr, flags)} of a .po file (plain entries, as this catalog uses)."""
    entries, flags, cur, field = {}, set(), None, None

    def close():
        if cur is not None:
            entries[cur["msgid"]] = (cur["msgstr"], frozenset(cur["flags"]))

    with open(path, encoding="utf-8") as handle:
        for raw in handle:
            line = raw.strip()
            if not line:
                continue
            if line.startswith("#,"):
                flags |= {f.strip() for f in line[2:].split(",")}
            elif line.startswith("#"):
                assert not line.startswith("#~"), "obsolete entries: remove them from the .po"
            elif line.startswith("msgid "):
                close()
                cur, field = {"msgid": "", "msgstr": "", "flags": flags}, "msgid"
                flags = set()
                cur["msgid"] = ast.literal_eval(line[6:])
            elif line.startswith("msgstr "):
                field = "msgstr"
                cur["msgstr"] = ast.literal_eval(line[7:])
            elif line.startswith('"'):
                cur[field] += ast.literal_eval(line)
            else:
                raise AssertionError(f"unexpected line in {path}: {line}")
    close()
    return entries


def _fields(text):
    return sorted(name for _, name, _, _ in string.Formatter().parse(text) if name is not None)


def _solution_lines():
    """The code lines between the solution markers, as a student would have to write them."""
    lines, inside = [], False
    with open(SOLUTION, encoding="utf-8") as handle:
        for line in handle:
            if "### BEGIN SOLUTION" in line:
                inside = True
            elif "### END SOLUTION" in line:
                inside = False
            elif inside:
                code = line.split("#")[0].strip()
                if len(code) >= 12:
                    lines.append(code)
    return lines


def _forbidden():
    return FIXING_CODE + _solution_lines()


# ---------------------------------------------------------------------------
# Plain runs
# ---------------------------------------------------------------------------

def test_skeleton_fails_each_check_with_a_one_line_reason(tmp_path):
    folder = _copy(tmp_path)
    done = _run_pytest(folder)
    assert done.returncode == 1, done.stdout[-3000:]
    assert "is not written yet" in done.stdout
    assert "Traceback" not in done.stdout
    assert " passed" not in done.stdout.splitlines()[-1]


HIDE_NUMPY = ("import sys; sys.modules['numpy'] = None; import pytest; "
              "sys.exit(pytest.main(['-p', 'no:cacheprovider']))")


def test_solution_passes_without_numpy_and_without_warnings(tmp_path):
    """Installed as its README says (torch and pytest, no numpy): all pass, nothing else shown."""
    folder = _copy(tmp_path)
    shutil.copy(SOLUTION, folder / "attention.py")
    done = subprocess.run([sys.executable, "-c", HIDE_NUMPY], cwd=folder, capture_output=True, text=True,
                          timeout=300, env=student_env())
    last = done.stdout.splitlines()[-1]
    assert done.returncode == 0, done.stdout[-3000:]
    assert "passed" in last and "warning" not in last, done.stdout[-3000:]
    assert "Failed to initialize NumPy" not in done.stdout + done.stderr


def test_hiding_numpy_does_reproduce_the_warning_that_pytest_ini_silences(tmp_path):
    """The control for the test above: without the filter, the same run shows the warning."""
    folder = _copy(tmp_path)
    shutil.copy(SOLUTION, folder / "attention.py")
    ini = (folder / "pytest.ini").read_text(encoding="utf-8")
    assert "ignore:Failed to initialize NumPy:UserWarning" in ini
    (folder / "pytest.ini").write_text(ini.replace("ignore:Failed to initialize NumPy:UserWarning", ""),
                                       encoding="utf-8")
    done = subprocess.run([sys.executable, "-c", HIDE_NUMPY], cwd=folder, capture_output=True, text=True,
                          timeout=300, env=student_env())
    assert done.returncode == 0, done.stdout[-3000:]
    assert "Failed to initialize NumPy" in done.stdout, done.stdout[-3000:]


# ---------------------------------------------------------------------------
# Broken submissions, in English and in Chinese: one subprocess runs them all in-process
# (torch is imported once), each in its own copy of the folder.
# ---------------------------------------------------------------------------

DRIVER = r"""
import contextlib, io, json, os, sys
sys.dont_write_bytecode = True
import pytest
runs = json.loads(sys.argv[1])
results = {}
for key, folder, args, lang_env in runs:
    for mod in ("attention", "test_attention", "conftest"):
        sys.modules.pop(mod, None)
    os.environ.pop("ATTN_LANG", None)
    if lang_env:
        os.environ["ATTN_LANG"] = lang_env
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = pytest.main([folder, "-p", "no:cacheprovider", *args])
    results[key] = [int(rc), out.getvalue()]
    sys.path[:] = [p for p in sys.path if p != folder]
print(json.dumps(results))
"""


@pytest.fixture(scope="module")
def broken_runs(tmp_path_factory, solution_source):
    base = tmp_path_factory.mktemp("broken")
    runs = []
    for name, ((old, new), _, _) in MUTANTS.items():
        assert solution_source.count(old) == 1, name
        folder = _copy(base, name)
        (folder / "attention.py").write_text(solution_source.replace(old, new), encoding="utf-8")
        runs.append([f"{name}/default", str(folder), ["-x"], None])
        runs.append([f"{name}/zh", str(folder), ["-x", "--lang", "zh"], None])
    for name in ("arange_no_device", "additive_weights_after_dropout"):  # every check, not only the first
        runs.append([f"{name}/all", str(base / name), [], None])
    runs.append(["mha_repeat/env", str(base / "mha_repeat"), ["-x"], "zh"])
    runs.append(["mha_repeat/en", str(base / "mha_repeat"), ["-x", "--lang", "en"], None])
    done = subprocess.run([sys.executable, "-c", DRIVER, json.dumps(runs)], cwd=base, capture_output=True,
                          text=True, timeout=600, env=student_env())
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


def _failure_text(output):
    """What the student reads about the failure: the FAILURES section, less quoted student code."""
    start, end = output.find("= FAILURES ="), output.find("short test summary info")
    assert start >= 0, output[-3000:]
    lines = output[start:end].splitlines()[1:-1]
    return "\n".join(line for line in lines if not line.startswith("_")
                     and not line.strip().startswith("attention.py line"))


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_a_broken_submission_is_explained_in_english_by_default(broken_runs, name):
    rc, output = broken_runs[f"{name}/default"]
    assert rc == 1, output[-3000:]
    text = _failure_text(output)
    assert MUTANTS[name][1] in text, text
    assert "Where to look: " in text or "Likely cause: " in text, text
    assert not CJK.search(text), text


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_a_broken_submission_is_explained_in_chinese_with_lang_zh(broken_runs, name):
    rc, output = broken_runs[f"{name}/zh"]
    assert rc == 1, output[-3000:]
    text = _failure_text(output)
    assert MUTANTS[name][2] in text, text
    assert "该看哪里：" in text or "可能的原因：" in text, text
    for english in ("Where to look", "Likely cause", "entries are wrong", "expected", "Note:"):
        assert english not in text, text
    # every line of the message is Chinese, or only numbers and code (a tensor, a call)
    for line in text.splitlines():
        assert CJK.search(line) or not re.search(r"\b(the|is|are|of|with|must)\b", line), line


@pytest.mark.slow
def test_the_language_can_be_chosen_with_attn_lang_and_lang_en(broken_runs):
    assert "可能的原因：" in _failure_text(broken_runs["mha_repeat/env"][1])
    english = _failure_text(broken_runs["mha_repeat/en"][1])
    assert "Likely cause: " in english and not CJK.search(english)


@pytest.mark.slow
@pytest.mark.parametrize("run", [f"{name}/{lang}" for name in sorted(MUTANTS) for lang in ("default", "zh")])
def test_no_message_prints_the_fixing_code(broken_runs, run):
    text = _failure_text(broken_runs[run][1])
    for fragment in _forbidden():
        assert fragment not in text, f"{run} prints {fragment!r}:\n{text}"


def _failed_tests(output):
    return sorted(line.split("::")[1].split(" - ")[0] for line in output.splitlines() if line.startswith("FAILED "))


@pytest.mark.slow
def test_each_hidden_behaviour_has_its_own_public_check(broken_runs):
    """A mistake that every other public check passes is caught by the check for its behaviour:
    a tensor made without device= by the device-discipline check (by the GPU test where CUDA
    is), weights stored after dropout by the dropout-order check (run without -x: nothing else fails)."""
    rc, output = broken_runs["arange_no_device/all"]
    assert rc == 1, output[-3000:]
    device = [f"test_no_tensor_made_on_the_default_device[{t}]" for t in
              ("AdditiveAttention", "DotProductAttention", "MultiHeadAttention", "masked_softmax", "sequence_mask")]
    assert _failed_tests(output) in (device, ["test_runs_on_the_gpu"]), output[-3000:]
    if _failed_tests(output) == device:
        text = _failure_text(output)
        assert "attention.sequence_mask would fail on a GPU:" in text
        assert "torch.arange(...) without device= (attention.py line " in text and ", in sequence_mask)" in text
    rc, output = broken_runs["additive_weights_after_dropout/all"]
    assert rc == 1, output[-3000:]
    assert _failed_tests(output) == ["test_additive_attention_dropout_acts_on_the_weights_in_training_only"]
    assert "AdditiveAttention.attention_weights in training mode (dropout=0.5): the sum of each row" in output


def test_the_solution_passes_the_device_and_dropout_checks_and_none_is_skipped_without_cuda(tmp_path):
    folder = _copy(tmp_path)
    shutil.copy(SOLUTION, folder / "attention.py")
    done = _run_pytest(folder, "-vv", "-p", "no:cacheprovider", "-k", "default_device or dropout or gpu")  # -vv: pytest.ini adds -q
    assert done.returncode == 0, done.stdout[-3000:]
    passed = sorted(re.findall(r"::(\S+) PASSED", done.stdout))
    skipped = sorted(re.findall(r"::(\S+) SKIPPED", done.stdout))
    modules = ["AdditiveAttention", "DotProductAttention", "MultiHeadAttention"]
    dropout = sorted(["test_additive_attention_dropout_acts_on_the_weights_in_training_only",
                      "test_dot_product_attention_dropout_acts_on_the_weights_in_training_only",
                      "test_multihead_attention_dropout_acts_on_the_weights_in_training_only"])
    device = sorted(f"test_no_tensor_made_on_the_default_device[{t}]"
                    for t in ["sequence_mask", "masked_softmax", *modules])
    if "test_runs_on_the_gpu" in passed:  # a machine with CUDA: the GPU test runs instead
        assert passed == sorted(dropout + ["test_runs_on_the_gpu"]) and skipped == device
    else:
        assert passed == sorted(dropout + device) and skipped == ["test_runs_on_the_gpu"]


# The public device check and the hidden suite's guard (grader/sandbox/runtime/guards.py),
# run on the same calls of the same submissions: they must flag exactly the same ones.
# (the line of the solution, what the variant writes, the targets whose calls meet the tensor)
DEVICE_VARIANTS = {
    "solution": (None, set()),
    "arange_no_device": (MUTANTS["arange_no_device"][0], {"sequence_mask", "masked_softmax", "AdditiveAttention",
                                                          "DotProductAttention", "MultiHeadAttention"}),
    "arange_moved": (("torch.arange(maxlen, dtype=torch.float32, device=X.device)",
                      "torch.arange(maxlen, dtype=torch.float32).to(X.device)"), set()),
    "output_from_zeros": (("d = queries.shape[-1]\n",
                           "d = queries.shape[-1]\n        values = values + torch.zeros(values.shape[1], 1)\n"),
                          {"DotProductAttention", "MultiHeadAttention"}),
    "lengths_rebuilt": (("valid_lens = torch.repeat_interleave(valid_lens, repeats=self.num_heads, dim=0)",
                         "valid_lens = torch.tensor(valid_lens.tolist()).repeat_interleave(self.num_heads, dim=0)"),
                        {"MultiHeadAttention"}),
    "zero_d_scale": (("/ math.sqrt(d)", "/ torch.sqrt(torch.tensor(d))"), set()),  # 0-d mixes on a GPU too
    # a blind spot of both, stated in both docstrings: a hard-coded "cpu" is the default device here
    "hard_coded_cpu": (("torch.arange(maxlen, dtype=torch.float32, device=X.device)",
                        "torch.arange(maxlen, dtype=torch.float32, device='cpu')"), set()),
}

COMPARE = r"""
import json, sys
runs, kit = json.loads(sys.argv[1]), sys.argv[2]
sys.path.insert(0, kit)
import torch
from grader.sandbox.runtime import guards
verdicts = {}
for variant, folder in runs:
    for mod in ("attention", "test_attention"):
        sys.modules.pop(mod, None)
    sys.path.insert(0, folder)
    import test_attention as public
    sys.path.remove(folder)
    a = public.attention
    gen = torch.Generator().manual_seed(5)
    X = torch.randn(2, 3, 4, generator=gen)
    K, V = torch.randn(2, 5, 4, generator=gen), torch.randn(2, 5, 3, generator=gen)
    lens = [torch.tensor([1, 3]), torch.tensor([[1, 0, 4], [2, 3, 9]]), torch.tensor([2.0, 1.0]), None]
    mods = {"AdditiveAttention": a.AdditiveAttention(4, 4, 5, 0.1), "DotProductAttention": a.DotProductAttention(0.1),
            "MultiHeadAttention": a.MultiHeadAttention(4, 4, 3, 8, 2, 0.1)}
    calls = {"sequence_mask": [(a.sequence_mask, (X[:, 0], lens[0])), (a.sequence_mask, (X, lens[2]))],
             "masked_softmax": [(a.masked_softmax, (X, l)) for l in lens]}
    for name, m in mods.items():
        m.eval()
        calls[name] = [(m, (X, K, V, l)) for l in lens]
    verdict = {}
    for target, pairs in calls.items():
        flags = []
        for fn, args in pairs:
            mode = public.DeviceDiscipline()
            with mode:
                out = fn(*[t.clone() if isinstance(t, torch.Tensor) else t for t in args])
            mine = bool(mode.problems) or bool(public._marked(out))
            with guards.device_guard() as watch:
                out = fn(*[t.clone() if isinstance(t, torch.Tensor) else t for t in args])
            theirs = bool(watch.violations) or guards.output_is_marked(out)
            flags.append([mine, theirs])
        verdict[target] = flags
    verdicts[variant] = verdict
print(json.dumps(verdicts))
"""


@pytest.fixture(scope="module")
def device_verdicts(tmp_path_factory, solution_source):
    base = tmp_path_factory.mktemp("device")
    runs = []
    for variant, (edit, _) in DEVICE_VARIANTS.items():
        source = solution_source
        if edit:
            assert source.count(edit[0]) == 1, edit[0]
            source = source.replace(*edit)
        folder = _copy(base, variant)
        (folder / "attention.py").write_text(source, encoding="utf-8")
        runs.append([variant, str(folder)])
    done = subprocess.run([sys.executable, "-c", COMPARE, json.dumps(runs), KIT], cwd=base, capture_output=True,
                          text=True, timeout=600, env=student_env())
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.slow
@pytest.mark.parametrize("variant", sorted(DEVICE_VARIANTS))
def test_the_public_device_check_flags_what_the_hidden_guard_flags(device_verdicts, variant):
    verdict = device_verdicts[variant]
    assert sorted(verdict) == ["AdditiveAttention", "DotProductAttention", "MultiHeadAttention", "masked_softmax",
                               "sequence_mask"]
    for target, flags in verdict.items():
        assert all(mine == theirs for mine, theirs in flags), (target, flags)
    flagged = {target for target, flags in verdict.items() if any(mine for mine, _ in flags)}
    assert flagged == DEVICE_VARIANTS[variant][1]


CATALOG_DRIVER = r"""
import contextlib, io, json, os, shutil, sys
sys.dont_write_bytecode = True
base, kit, folder_src, solution = sys.argv[1:5]
sys.path.insert(0, kit)
import pytest
from grader import assignment
from grader.catalog import Catalog
MISTAKES = Catalog.of(assignment.load("attention")).mistakes
source = open(solution, encoding="utf-8").read()
results = {}
for mistake in MISTAKES:
    folder = os.path.join(base, mistake.id)
    shutil.copytree(folder_src, folder, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    with open(os.path.join(folder, "attention.py"), "w", encoding="utf-8") as handle:
        handle.write(mistake.apply(source))
    for mod in ("attention", "test_attention", "conftest"):
        sys.modules.pop(mod, None)
    with contextlib.redirect_stdout(io.StringIO()):
        results[mistake.id] = int(pytest.main([folder, "-p", "no:cacheprovider", "-x", "-q"]))
    sys.path[:] = [p for p in sys.path if p != folder]
    shutil.rmtree(folder)
print(json.dumps(results))
"""


@pytest.mark.slow
def test_every_catalog_mistake_fails_a_public_check(tmp_path):
    """A student whose public checks all pass loses hidden points only to hidden edge cases: no
    mistake of the catalog (grader/catalog/mistakes.py) passes every public check. Before the
    device and dropout-order checks, 9 of them did (gpu-arange-no-device, additive-dropout-stored, ...)."""
    done = subprocess.run([sys.executable, "-c", CATALOG_DRIVER, str(tmp_path), KIT, FOLDER, SOLUTION],
                          cwd=tmp_path, capture_output=True, text=True, timeout=900,
                          env=student_env())
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(done.stdout.splitlines()[-1])
    assert len(results) >= 50
    assert {"gpu-arange-no-device", "additive-dropout-stored", "dot-dropout-on-output", "mha-dropout-missing",
            "dot-default-none-missing", "softmax-float32-output", "softmax-detached"} <= set(results)
    passing = sorted(mistake for mistake, rc in results.items() if rc != 1)
    assert passing == [], passing


# ---------------------------------------------------------------------------
# The message catalog
# ---------------------------------------------------------------------------

def test_every_message_has_a_chinese_translation():
    msgids = _msgids()
    assert len(msgids) > 100
    po = _parse_po(PO)
    assert "" in po and "charset=UTF-8" in po[""][0]
    missing = [m for m in msgids if m not in po or not po[m][0].strip()]
    assert not missing, f"no Chinese translation for {missing}"
    fuzzy = [m for m in msgids if "fuzzy" in po[m][1]]
    assert not fuzzy, f"translations marked fuzzy: {fuzzy}"
    unused = sorted(set(po) - set(msgids) - {""})
    assert not unused, f"the .po has entries the self-checks no longer use: {unused}"
    for msgid in msgids:
        msgstr = po[msgid][0]
        assert _fields(msgstr) == _fields(msgid), (msgid, msgstr)
        assert CJK.search(msgstr) or re.search(r"[\u3000-\u303f\uff00-\uffef]", msgstr), (msgid, msgstr)
        assert msgstr.startswith("\n") == msgid.startswith("\n") and msgstr.count("\n") == msgid.count("\n")


def test_the_chinese_uses_the_terms_of_the_chinese_edition():
    text = "\n".join(msgstr for msgstr, _ in _parse_po(PO).values())
    for term in ("掩蔽softmax", "有效长度", "缩放点积注意力", "注意力权重", "查询", "键", "值", "头"):
        assert term in text, term
    for wrong in ("留意力", "屏蔽softmax", "掩码softmax"):
        assert wrong not in text, wrong


def test_the_mo_is_compiled_from_the_po():
    """The shipped .mo holds exactly the .po's translations (recompile it after editing the .po:
    `msgfmt --check -o selfcheck.mo selfcheck.po` in its folder)."""
    po = {msgid: msgstr for msgid, (msgstr, flags) in _parse_po(PO).items() if "fuzzy" not in flags}
    with open(MO, "rb") as handle:
        mo = gettext.GNUTranslations(handle)
    catalog = dict(mo._catalog)  # the standard library's reader, as the self-checks use it
    assert catalog == po
    assert mo.info().get("content-type", "").lower() == "text/plain; charset=utf-8"


def test_no_message_in_either_language_contains_the_fixing_code():
    for msgid, (msgstr, _) in _parse_po(PO).items():
        for fragment in _forbidden():
            assert fragment not in msgid, (fragment, msgid)
            assert fragment not in msgstr, (fragment, msgstr)


def test_the_student_readme_links_the_chinese_version():
    with open(os.path.join(FOLDER, "README.md"), encoding="utf-8") as handle:
        head = "".join(handle.readlines()[:5])
    assert "README.zh-CN.md" in head and "--lang zh" in head
    with open(os.path.join(FOLDER, "README.zh-CN.md"), encoding="utf-8") as handle:
        zh = handle.read()
    with open(os.path.join(FOLDER, "README.md"), encoding="utf-8") as handle:
        en = handle.read()
    # the same sections and the same points per part
    assert zh.count("\n## ") == en.count("\n## ")
    points = re.findall(r"\| (\d+) \|", en.split("## How grading works")[1])
    assert points and points == re.findall(r"\| (\d+) \|", zh.split("## 如何评分")[1])


# ---------------------------------------------------------------------------
# A small, self-contained folder
# ---------------------------------------------------------------------------

def test_public_tests_import_only_torch_pytest_and_the_student_file():
    allowed = {"torch", "pytest", "math", "attention", "gettext", "os", "sys"}
    for name in os.listdir(FOLDER):
        if not name.endswith(".py") or name == "attention.py":
            continue
        with open(os.path.join(FOLDER, name), encoding="utf-8") as handle:
            tree = ast.parse(handle.read())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                roots = {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom):
                roots = {(node.module or "").split(".")[0]}
            else:
                continue
            assert roots <= allowed, f"{name} imports {roots - allowed}"


def test_folder_is_small_and_self_contained():
    size = 0
    for root, dirs, files in os.walk(FOLDER):
        dirs[:] = [d for d in dirs if d not in ("__pycache__", ".pytest_cache")]
        size += sum(os.path.getsize(os.path.join(root, n)) for n in files)
    assert size < 300_000
    assert {"attention.py", "test_attention.py", "README.md", "README.zh-CN.md", "pytest.ini",
            "conftest.py", "locale"} <= set(os.listdir(FOLDER))
    assert os.path.isfile(MO) and os.path.isfile(PO)


@pytest.mark.slow
def test_the_chinese_folder_is_as_small_and_passes_the_solution_without_numpy(tmp_path):
    """`grader release --lang zh --out DIR`: the same files (attention.py in Chinese, pytest
    answering in Chinese), as small; with the solution in it, every check passes with only
    torch and pytest, and the messages of `pytest --lang en` are English again."""
    from grader import assignment
    from grader.release import student_folder
    attention = assignment.load("attention")
    files = student_folder(SOLUTION, attention.api, "zh", attention)
    english = student_folder(lang="en", assignment=attention)
    assert set(files) == set(english) and sum(map(len, files.values())) < 300_000
    assert {name for name in files if files[name] != english[name]} == {"attention.py", "pytest.ini"}
    folder = tmp_path / "zh"
    for name, data in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
    shutil.copy(SOLUTION, folder / "attention.py")
    done = subprocess.run([sys.executable, "-c", HIDE_NUMPY], cwd=folder, capture_output=True,
                          text=True, timeout=300, env=student_env(ATTN_LANG=""))
    last = done.stdout.splitlines()[-1]
    assert done.returncode == 0 and "passed" in last and "warning" not in last, done.stdout[-3000:]
    (folder / "attention.py").write_bytes(files["attention.py"])  # the Chinese skeleton
    chinese = _run_pytest(folder, "-x", "-p", "no:cacheprovider", env={"ATTN_LANG": ""})
    english = _run_pytest(folder, "-x", "-p", "no:cacheprovider", "--lang", "en", env={"ATTN_LANG": ""})
    assert "attention.sequence_mask 还没有写（它抛出 NotImplementedError）。" in chinese.stdout
    assert "attention.sequence_mask is not written yet (it raises NotImplementedError)." in english.stdout
