"""The grader speaks English or Chinese (`grader grade --lang zh`): its message catalog.

grader/i18n.py is Python's gettext over grader/locale/zh_CN/LC_MESSAGES/grader.po (compiled
into grader.mo beside it), then each assignment's own catalog,
tests_hidden/<name>/locale/zh_CN/LC_MESSAGES/assignment.po (and .mo). These tests check that
every message the source passes to _(), N_() or ngettext() has a Chinese translation with the
same {name} fields, that grader.po holds exactly the messages of grader/ and each
assignment.po exactly those of its own tests_hidden/<name>/ that grader/ does not use, that
each committed .mo holds exactly its .po, that no message is built so that extraction cannot
see it, and that a real grading run in Chinese writes Chinese feedback.
"""
import ast
import gettext
import html
import json
import os
import re
import string
import subprocess
import sys

import pytest

from conftest import KIT, student_env
from grader import assignment

babel = pytest.importorskip("babel", reason="Babel (the test extra) extracts the messages")
from babel.messages.extract import extract_from_dir  # noqa: E402
from babel.messages.pofile import read_po  # noqa: E402
from grading import run_grader

LOCALE = os.path.join(KIT, "grader", "locale")
PO = os.path.join(LOCALE, "zh_CN", "LC_MESSAGES", "grader.po")
MO = os.path.join(LOCALE, "zh_CN", "LC_MESSAGES", "grader.mo")
SOURCES = ("grader", "tests_hidden")  # grader.pot reads grader; each assignment's, its own folder
KEYWORDS = {"_": None, "N_": None, "ngettext": (1, 2)}
# as grader/locale/babel.cfg: the source, and each declaration's title
METHODS = [("**.py", "python"), ("**/assignment.toml", "grader.i18n:extract_declaration")]
CJK = re.compile(r"[\u4e00-\u9fff]")
CJK_PUNCTUATION = re.compile(r"[\u3001\u3002\uff0c\uff1a\uff1b]")   # 、。，：；
EXAMPLES = os.path.join(KIT, "examples")


# each assignment's own words (grader/i18n.py assignment_catalogs): (its .po, its .mo)
ASSIGNMENT_CATALOGS = [(path[:-3] + ".po", path) for path in
                       __import__("grader.i18n", fromlist=["i18n"]).assignment_catalogs("zh", KIT)]
# every assignment, read from the folder (not from the code under test)
ASSIGNMENTS = sorted(name for name in os.listdir(os.path.join(KIT, "tests_hidden"))
                     if os.path.isdir(os.path.join(KIT, "tests_hidden", name))
                     and not name.startswith(("_", ".")))


def _own_po(name):
    return os.path.join(KIT, "tests_hidden", name, "locale", "zh_CN", "LC_MESSAGES",
                        "assignment.po")


def _catalog():
    """grader.po with every assignment's own catalog added: together they must translate
    every message of the source, and hold nothing the source does not use. No assignment
    repeats a msgid of grader.po; two assignments that use the same words both hold them,
    with the same Chinese (the first catalog found answers for both at run time)."""
    with open(PO, "rb") as handle:
        catalog = read_po(handle, locale="zh_CN")
    graders = {m.id for m in catalog if m.id}
    for po, _mo in ASSIGNMENT_CATALOGS:
        with open(po, "rb") as handle:
            for message in read_po(handle, locale="zh_CN"):
                if message.id:
                    assert message.id not in graders, f"{po}: {message.id!r} is in grader.po too"
                    other = catalog.get(message.id)
                    assert other is None or other.string == message.string, \
                        f"{po}: {message.id!r} is said otherwise in another assignment's catalog"
                    catalog[message.id] = message
    return catalog


def _msgids(po):
    """The msgids of a .po (the singular of a plural message); none when there is no .po."""
    if not os.path.isfile(po):
        return set()
    with open(po, "rb") as handle:
        return {m.id[0] if isinstance(m.id, (list, tuple)) else m.id
                for m in read_po(handle, locale="zh_CN") if m.id}


def _extracted(folders=SOURCES):
    """{msgid or (singular, plural): [file:line, ...]} as pybabel extract sees `folders`."""
    found = {}
    for folder in folders:
        root = os.path.join(KIT, folder)
        for filename, lineno, message, _comments, _context in extract_from_dir(
                root, method_map=METHODS, keywords=KEYWORDS,
                comment_tags=(), strip_comment_tags=True):
            key = tuple(message) if isinstance(message, (list, tuple)) else message
            if isinstance(key, tuple) and len(key) == 1:
                key = key[0]
            found.setdefault(key, []).append(f"{folder}/{filename}:{lineno}")
    return found


def _fields(text):
    return sorted({name for _, name, _, _ in string.Formatter().parse(text) if name is not None})


def test_every_message_of_the_source_has_a_chinese_translation():
    catalog = _catalog()
    extracted = _extracted()
    assert len(extracted) > 100, "extraction found too few messages: is the source marked?"
    missing, fuzzy = [], []
    for key, where in sorted(extracted.items(), key=lambda kv: str(kv[0])):
        msgid = key[0] if isinstance(key, tuple) else key
        message = catalog.get(msgid)
        strings = (message.string if isinstance(message.string, (list, tuple)) else [message.string]) \
            if message is not None else [""]
        if message is None or not all(s.strip() for s in strings):
            missing.append(f"{where[0]}: {msgid!r}")
        elif message.fuzzy:
            fuzzy.append(f"{where[0]}: {msgid!r}")
    assert not missing, "no Chinese for (run pybabel update, see grader/i18n.py):\n" + "\n".join(missing)
    assert not fuzzy, "translations marked fuzzy:\n" + "\n".join(fuzzy)


def test_the_catalog_holds_only_messages_the_source_uses():
    extracted = {k[0] if isinstance(k, tuple) else k for k in _extracted()}
    unused = sorted(m.id if isinstance(m.id, str) else m.id[0]
                    for m in _catalog() if m.id and (m.id if isinstance(m.id, str) else m.id[0])
                    not in extracted)
    assert not unused, f"grader.po has entries the source no longer uses: {unused}"


def test_placeholders_are_the_same_in_both_languages():
    for message in _catalog():
        if not message.id:
            continue
        ids = message.id if isinstance(message.id, (list, tuple)) else [message.id]
        strings = message.string if isinstance(message.string, (list, tuple)) else [message.string]
        english = sorted(set().union(*(_fields(i) for i in ids)))
        for text in strings:
            assert _fields(text) == (english if len(ids) == 1 else _fields(ids[-1])), (message.id, text)
            # a leading or trailing line break, and the number of lines, are layout: keep them
            assert text.startswith("\n") == ids[0].startswith("\n"), message.id
            assert text.count("\n") == ids[0].count("\n"), message.id
            # Chinese words, or (a message of fields alone: "{first}、{second}") its punctuation
            assert CJK.search(text) or CJK_PUNCTUATION.search(text), (message.id, text)


@pytest.mark.parametrize("po, mo", [(PO, MO)] + ASSIGNMENT_CATALOGS)
def test_the_mo_is_compiled_from_the_po(po, mo):
    """The committed .mo holds exactly the .po's translations: after editing the .po run
    `pybabel compile -d grader/locale -D grader -l zh_CN` (see grader/i18n.py; an
    assignment's: -d tests_hidden/<name>/locale -D assignment)."""
    expected = {}
    with open(po, "rb") as handle:
        messages = list(read_po(handle, locale="zh_CN"))
    for message in messages:
        if not message.id or message.fuzzy:
            continue
        if isinstance(message.id, (list, tuple)):
            for index, text in enumerate(message.string):
                expected[(message.id[0], index)] = text
        else:
            expected[message.id] = message.string
    with open(mo, "rb") as handle:
        mo = gettext.GNUTranslations(handle)
    catalog = {k: v for k, v in mo._catalog.items() if k != ""}  # the stdlib's reader, as at runtime
    assert catalog == {k: v for k, v in expected.items() if k != ""}
    assert mo.info().get("content-type", "").lower() == "text/plain; charset=utf-8"
    assert mo.info().get("plural-forms", "").replace(" ", "").startswith("nplurals=1")


def _marked_calls(tree):
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in ("_", "N_", "ngettext"):
            yield node


def test_every_marked_message_is_a_constant_string():
    """_(f"...") or _("..." + x) would escape extraction and never be translated: the
    varying pieces are {name} fields filled in by .format() after _()."""
    wrong = []
    for folder in SOURCES:
        for root, dirs, files in os.walk(os.path.join(KIT, folder)):
            dirs[:] = [d for d in dirs if d != "__pycache__"]
            for name in files:
                if not name.endswith(".py"):
                    continue
                path = os.path.join(root, name)
                with open(path, encoding="utf-8") as handle:
                    source = handle.read()
                if "_(" not in source and "ngettext(" not in source:
                    continue
                tree = ast.parse(source)
                imports_i18n = any(isinstance(n, ast.ImportFrom) and (n.module or "").endswith("i18n")
                                   for n in ast.walk(tree))
                if not imports_i18n:
                    continue
                for call in _marked_calls(tree):
                    count = 2 if call.func.id == "ngettext" else 1
                    args = call.args[:count]
                    constant = all(isinstance(a, ast.Constant) and isinstance(a.value, str) for a in args)
                    # _(CONSTANT) translates a string marked with N_ where it was defined
                    lookup = call.func.id == "_" and len(call.args) == 1 and not isinstance(
                        call.args[0], (ast.JoinedStr, ast.BinOp))
                    if not (constant or lookup) or call.keywords:
                        wrong.append(f"{os.path.relpath(path, KIT)}:{call.lineno}")
    assert not wrong, f"messages extraction cannot read: {wrong}"


def test_the_chinese_uses_the_terms_of_the_chinese_edition():
    text = "\n".join(s for m in _catalog() if m.id
                     for s in (m.string if isinstance(m.string, (list, tuple)) else [m.string]))
    for term in ("形状", "梯度", "张量"):
        assert term in text, term
    for wrong in ("留意力", "屏蔽softmax", "掩码softmax", "遮蔽softmax"):
        assert wrong not in text, wrong


def test_set_language_switches_and_english_is_the_default():
    from grader import i18n
    from grader.intake.text import decode_source
    try:
        assert i18n.language() == "en"
        assert decode_source(b"x = 1\r\n", "a.py")[1] == [
            "a.py had Windows (CRLF) line endings; the grader converted them."]
        assert i18n.set_language("zh_CN") == "zh"
        note = decode_source(b"x = 1\r\n", "a.py")[1][0]
        assert CJK.search(note) and "a.py" in note
        with pytest.raises(ValueError):
            i18n.set_language("fr")
    finally:
        i18n.set_language("en")
    assert decode_source(b"x = 1\r\n", "a.py")[1][0].startswith("a.py had Windows")


# catalog mistakes graded in Chinese beside chen and fatima: "many" fails in every part
# (a device failure, a wrong mask, -inf, no scaling, dropout order, heads, no projection)
MISTAKE_FILES = {"many": ("gpu-arange-no-device", "softmax-neg-inf", "dot-no-scale",
                          "additive-dropout-stored", "transpose-no-permute",
                          "mha-no-output-projection", "mask-off-by-one"),
                 "device": ("gpu-arange-no-device",), "heads": ("mha-repeat",)}


def _mistake_file(folder, name, ids):
    from grader.catalog import Catalog
    MISTAKES = Catalog.of(assignment.load("attention")).mistakes
    with open(os.path.join(KIT, "solutions", "attention.py"), encoding="utf-8") as handle:
        source = handle.read()
    for mistake in ids:
        source = next(m for m in MISTAKES if m.id == mistake).apply(source)
    path = folder / f"{name}.py"
    path.write_text(source, encoding="utf-8")
    return str(path)


@pytest.fixture(scope="module")
def graded_in_chinese(tmp_path_factory):
    out = tmp_path_factory.mktemp("zh") / "out"
    made = tmp_path_factory.mktemp("mistakes")
    mistakes = [_mistake_file(made, name, ids) for name, ids in MISTAKE_FILES.items()]
    done = run_grader("grade", "--lang", "zh", os.path.join(EXAMPLES, "chen.py"),
                      os.path.join(EXAMPLES, "fatima.py"), *mistakes, "--out",
                      str(out), "--jobs", "1", timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    return out


def _read(out, name, file):
    with open(out / name / file, encoding="utf-8") as handle:
        return handle.read()


@pytest.mark.slow
def test_grading_in_chinese_writes_chinese_feedback(graded_in_chinese):
    chen = _read(graded_in_chinese, "chen", "feedback.txt")
    # intake's notes (GBK, CRLF) and the failing cases' explanations are in Chinese
    assert "评分程序" in chen and "GBK 编码" in chen, chen[:3000]
    fatima = _read(graded_in_chinese, "fatima", "feedback.txt")
    assert "导入 attention.py 失败" in fatima and "`d2l`" in fatima, fatima[:3000]
    # what the submission itself said (its exception) is kept as it was
    assert "No module named 'd2l'" in fatima



@pytest.mark.slow
def test_grading_in_chinese_records_the_language(graded_in_chinese):
    results = json.loads(_read(graded_in_chinese, "chen", "results.json"))
    assert results["extra_data"].get("lang") == "zh"
    assert CJK.search(results["output"])


def test_the_chinese_uses_the_terms_of_the_chinese_edition_in_the_feedback():
    text = "\n".join(s for m in _catalog() if m.id
                     for s in (m.string if isinstance(m.string, (list, tuple)) else [m.string]))
    for term in ("掩蔽softmax", "有效长度", "多头注意力", "注意力权重", "查询", "键", "值",
                 "暂退法", "梯度", "形状"):
        assert term in text, term


@pytest.mark.slow
def test_grading_in_chinese_explains_the_failing_cases_in_chinese(graded_in_chinese):
    chen = _read(graded_in_chinese, "chen", "feedback.txt")
    assert chen.startswith("chen：93 / 100 分"), chen[:200]  # -inf costs masked_softmax only
    assert "未通过的用例" in chen and "值不对" in chen and "NaN" in chen, chen[:3000]
    assert "（通过：" in chen  # the summary's blocks, one per part
    assert "Failing cases" not in chen and "wrong values" not in chen


@pytest.mark.slow
def test_the_feedback_page_is_in_chinese_too(graded_in_chinese):
    page = _read(graded_in_chinese, "chen", "feedback.html")
    assert '<html lang="zh-CN"' in page
    for heading in ("各部分得分", "需要查看的地方", "注意力权重：期望的与你的"):
        assert heading in page, heading
    for english in ("Score by part", "What to look at", "First failing case"):
        assert english not in page, english


# -- no English prose in Chinese feedback ----------------------------------------------------
# What may stay English in a Chinese page, and is not counted: code (identifiers with _ . or
# digits, CamelCase, calls with their arguments, `backticks`, keyword=, shapes such as
# (batch, heads, queries, keys)), numbers and tensors ([0.25, nan]), and text quoted from
# Python or PyTorch or the student's own file (an exception after "SomethingError:", a
# source line shown in a traceback, anything in quotes): the student meets those verbatim.
CODE_WORDS = {"torch", "softmax", "d2l", "eval", "train", "None", "True", "False", "nan", "inf",
              "exp", "sqrt", "bias", "dim", "return", "squeeze", "unsqueeze", "permute",
              "reshape", "transpose", "view", "device", "dtype", "forward", "Tensor",
              "dropout", "Dropout", "Linear", "Python", "README", "GBK", "UTF", "CRLF",
              "Windows", "nbgrader",
              # names of programs, formats and parameters a Chinese text keeps as they are
              "zip", "matplotlib", "Jupyter", "pytest", "bool", "self", "value", "detach", "cuda",
              "ln", "shell",
              # a function and a model the Chinese edition names as they are (the catalogs'
              # mistakes and titles)
              "tanh", "Transformer",
              # the encoder block's parts, named as the code names them (its self-checks)
              "attention", "ffn",
              # the platforms a course runs on, named as they name themselves
              "Canvas", "Moodle"}


def _without(text, pattern, opener, closer):
    """`text` with each match of `pattern` (ending in `opener`) cut out up to its closer."""
    out, at, start = [], 0, re.compile(pattern)
    while True:
        found = start.search(text, at)
        if not found:
            return "".join(out) + text[at:]
        depth, end = 0, found.end() - 1
        while end < len(text):
            depth += {opener: 1, closer: -1}.get(text[end], 0)
            if depth == 0:
                break
            end += 1
        out.append(text[at:found.start()] + " ")
        at = end + 1


def page_text(page):
    page = re.sub(r"(?is)<(style|script|code|title)\b.*?</\1>", " ", page).replace("<wbr>", "")
    return html.unescape(re.sub(r"(?s)<[^>]+>", " ", page))


def english_words(text):
    """The English words of prose in `text` (see above for what is not prose)."""
    text = re.sub(r"`[^`\n]*`|\u201c[^\u201d]{0,400}\u201d|'[^'\n]{0,400}'|\"[^\"\n]{0,400}\"",
                  " ", text)
    text = re.sub(r"\b[A-Z]\w*(Error|Exception|Warning)\b:?[^\n\u3002]*", " ", text)
    text = re.sub(r"(?m)(\u4e2d: |in \S+: ).*$", " ", text)    # a traceback's source line
    text = re.sub(r"<[\w.]+>", " ", text)                             # a frame: <module>
    text = _without(text, r"[A-Za-z_][\w.]*\(", "(", ")")          # calls, with arguments
    text = re.sub(r"\(\s*\w+(\s*,\s*\w+)+\s*\)", " ", text)          # shapes
    text = re.sub(r"\[[-+\d\s.,:e\[\]naninf]*\]", " ", text)            # numbers, indices
    text = re.sub(r"[A-Za-z_]\w*\s*=", " ", text)                        # keyword=
    text = re.sub(r"(?<!\w)--[A-Za-z][\w-]*", " ", text)            # an option: --lang
    text = re.sub(r"(?<![\w.])[./][A-Za-z][\w/]*", " ", text)       # .data, .py, /dev/zero
    text = re.sub(r"\uff08[A-Za-z]+( [A-Za-z]+){0,2}\uff09", " ", text)  # a gloss: 嵌套张量（nested tensor）
    words = []
    for token in re.findall(r"[A-Za-z_][A-Za-z0-9_.'-]*", text):      # ASCII: not softmax之后
        token = token.rstrip(".'-")
        if len(token) < 2 or token in CODE_WORDS or re.search(r"[_\d.]", token) \
                or re.search(r"[A-Z]", token[1:]):
            continue
        words.append(token)
    return words


def test_the_word_counter_sees_english_prose_and_not_code():
    said = ("GPU: sequence_mask makes no tensor on the default device: calling "
            "MultiHeadAttention(num_heads=2) in eval mode, forward(queries (2, 3) float32) "
            "gives [0.25, nan]; shape (batch, heads, queries, keys); ModuleNotFoundError: No "
            "module named 'd2l'\n[... cut by the grader: 3 more characters]")
    assert english_words(said) == ["makes", "no", "tensor", "on", "the", "default", "calling",
                                   "in", "mode", "gives", "shape", "cut", "by", "the",
                                   "grader", "more", "characters"]
    assert english_words("查询 (2, 3) float32，torch.arange(3)，`x`，有效长度 [0, 3]") == []


@pytest.mark.slow
def test_chinese_feedback_has_no_english_prose(graded_in_chinese):
    """Every student-facing message of a real run in Chinese: the summary, each failing
    case's call and name, the device check, the catalog's sentences, the HTML page."""
    counts = {}
    for name in ("chen", "fatima", *MISTAKE_FILES):
        for file in ("feedback.txt", "feedback.html"):
            text = _read(graded_in_chinese, name, file).replace(name, "student_file")
            found = english_words(page_text(text) if file.endswith(".html") else text)
            assert found == [], (name, file, found)
            counts[(name, file)] = CJK.findall(text)
    assert all(len(found) > 50 for found in counts.values())  # the pages were read


@pytest.mark.slow
def test_the_class_report_is_in_chinese_too(graded_in_chinese):
    with open(graded_in_chinese / "report.html", encoding="utf-8") as handle:
        page = handle.read()
    assert '<html lang="zh-CN"' in page and \
        "<h1>注意力：掩蔽、注意力评分函数与多头注意力（d2l 10.1–10.5）：全班</h1>" in page
    for heading in ("<h2>提交</h2>", "<h2>分数分布</h2>", "<h2>各部分平均分</h2>",
                    "<h2>最常见的诊断</h2>", "<h2>诊断出的错误</h2>"):
        assert heading in page, heading
    assert '<button type="button">学生</button>' in page
    # case names in the pass-rate table are said in Chinese too, after their part
    assert "masked_softmax: 有效长度为 0 的行是均匀分布" in page
    for english in ("Score distribution", "Most frequent diagnoses", "Pass rate per case"):
        assert english not in page, english


def test_the_device_guards_sentence_is_said_in_the_chosen_language():
    from grader import i18n
    from grader.harness.devices import said
    guard = ("torch.arange(...) without device= made a tensor on the default device (the CPU), "
             "and torch.lt then combined it with a tensor on the input's device; on a GPU this "
             "fails with 'Expected all tensors to be on the same device'. Pass device=X.device "
             "(X being one of the inputs) when you create it.")
    try:
        assert said(guard) == guard
        i18n.set_language("zh")
        assert said(guard) == (
            "torch.arange(...)（没有传入 device=）在默认设备（CPU）上创建了张量，随后 torch.lt "
            "把它与输入所在设备上的张量组合在一起；在 GPU 上这会报错 “Expected all tensors to "
            "be on the same device”。创建张量时请传入 device=X.device（X 是某个输入）。")
        # anything else the worker reported is shown as it came, made safe
        assert said("made up \x1b[2J by the worker") == "made up [2J by the worker"
    finally:
        i18n.set_language("en")


# -- every student-facing message, rendered: no English prose ------------------------------

SELFCHECK_PO = os.path.join(KIT, "assignments", "attention", "locale", "zh_CN", "LC_MESSAGES",
                            "selfcheck.po")


@pytest.mark.parametrize("po, least", [(PO, 300), (SELFCHECK_PO, 100),
                                       (SELFCHECK_PO.replace("attention", "transformer"), 20)]
                         + [(_own_po(name), 30) for name in ("attention", "transformer")],
                         ids=["grader", "selfcheck", "selfcheck-transformer", "attention",
                              "transformer"])
def test_every_chinese_message_of_each_catalog_reads_without_english_prose(po, least):
    """Each msgstr as a student reads it ({fields} filled in): the grader's feedback, pages
    and notes (grader.po), the public self-checks (selfcheck.po) and each assignment's case
    names and what its cases try (its assignment.po)."""
    with open(po, "rb") as handle:
        catalog = read_po(handle, locale="zh_CN")
    said = [s for m in catalog if m.id
            for s in (m.string if isinstance(m.string, (list, tuple)) else [m.string])]
    assert len(said) >= least
    found = {s: english_words(re.sub(r"\{[^{}]*\}", "0", s)) for s in said}
    assert {s: w for s, w in found.items() if w} == {}


def _skeleton_prose(lang):
    """The docstrings and the comments of the skeleton `grader release --lang` writes."""
    import tokenize
    from grader.release import release
    API_NAMES = assignment.load("attention").api
    text = release(os.path.join(KIT, "solutions", "attention.py"), API_NAMES, lang)
    said = [ast.get_docstring(n) for n in ast.walk(ast.parse(text))
            if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef)) and ast.get_docstring(n)]
    comments = [t.string for t in tokenize.generate_tokens(iter(text.splitlines(True)).__next__)
                if t.type == tokenize.COMMENT]
    return said, comments


def test_the_chinese_skeleton_has_no_english_prose():
    """`grader release --lang zh`: every docstring and comment of the student's attention.py
    (the English skeleton, measured the same way, is almost all prose)."""
    said, comments = _skeleton_prose("zh")
    # the module, 3 classes, 4 functions and 3 forward methods; 16 lines of hints, 10 stubs
    assert (len(said), len(comments), comments.count("# 在这里写你的代码")) == (11, 26, 10)
    assert english_words("\n".join(said + comments)) == []
    assert len(CJK.findall("\n".join(said + comments))) > 700
    english = english_words("\n".join(sum(_skeleton_prose("en"), [])))
    assert len(english) > 300 and {"Returns", "heads", "broadcasting"} <= set(english)


def _class_row(name, student_id, status="graded", total=80.0, **more):
    row = {"name": name, "status": status, "total": total, "max": 100.0,
           "parts": {"sequence_mask": [11.0, 11.0], "masked_softmax": [69.0, 89.0]},
           "reason": "", "source": "", "folder": name, "fingerprint": None,
           "student_id": student_id, "student_name": name, "layout": "canvas"}
    row.update(more)
    return row


def test_the_class_report_says_each_status_in_chinese_and_quotes_the_flags():
    """report.html for a Chinese-reading instructor: the status words, lateness and the review
    list are Chinese; identity flags are grades.csv's English record, quoted as such."""
    from grader import course, i18n, overrides
    from grader.report import gradebook, html as pages
    flag = "the uploaded file's own name claims Canvas user 10000; graded as user 10005's"
    rows = [_class_row("wang_10004", "10004", submitted_at="2026-12-03T12:00:00+08:00",
                       time_source="canvas-file-time"),
            _class_row("gone_10003", "10003", status="missing work", total=0.0),
            _class_row("syntax_10006", "10006", status="not gradable", total=0.0),
            _class_row("claim_10005", "10005", flags=[flag]),
            _class_row("err_10002", "10002", status="grader error", total=None,
                       reason="RuntimeError: the worker died")]
    policy = course.from_data({"due": "2026-12-01T23:59:00+08:00",
                               "late_policy": {"kind": "per_day", "percent": 10}})
    i18n.set_language("zh")
    try:
        entry = overrides.entry_for(rows, "10005", "sequence_mask", "10", "重新评分")
        page = pages.report_html(gradebook.final_rows(rows, policy, [entry]), charts=False)
    finally:
        i18n.set_language("en")
    table = page[page.index("<h2>提交</h2>"):]
    for name, status in (("wang_10004", "已评分"), ("gone_10003", "未找到作业"),
                         ("syntax_10006", "无法评分")):
        row = table[table.index(f">{name}</a>"):]
        assert row[:row.index("</tr>")].count(f'<td class="wrap">{status}</td>') == 1, name
    assert '<td class="wrap">迟交 2 天</td><td class="num">-20</td>' in table
    review = page[page.index("<h2>待查看</h2>"):page.index("<h2>提交</h2>")]
    assert "<strong>claim_10005</strong>: 标记（grades.csv 中记录的英文原文）：the uploaded file&#x27;s" in review
    assert "<strong>err_10002</strong>: 评分程序出错" in review
    said = page_text(page).replace(flag, " ").replace(entry["who"], " ")
    assert english_words(said) == [] and len(CJK.findall(said)) > 200


def _results_text(out, name):
    """What results.json shows a student: its output and each test's name and output."""
    data = json.loads(_read(out, name, "results.json"))
    return "\n".join([data.get("output", "")] + [f"{t.get('name', '')}\n{t.get('output', '')}"
                                                  for t in data.get("tests", [])])


@pytest.fixture(scope="module")
def graded_at_each_level(tmp_path_factory, graded_in_chinese):
    """`many` (a mistake in every part) and chen graded in Chinese at --feedback summary and
    score; the full level is graded_in_chinese."""
    made = tmp_path_factory.mktemp("levels")
    many = _mistake_file(made, "many", MISTAKE_FILES["many"])
    outs = {"full": graded_in_chinese}
    for level in ("summary", "score"):
        outs[level] = made / level
        done = run_grader("grade", "--lang", "zh", "--feedback", level, many,
                          os.path.join(EXAMPLES, "chen.py"), "--out",
                          str(outs[level]), "--jobs", "1", timeout=900)
        assert done.returncode == 0, done.stdout + done.stderr
    return outs


@pytest.mark.slow
@pytest.mark.parametrize("level", ["full", "summary", "score"])
def test_chinese_feedback_has_no_english_prose_at_any_level(graded_at_each_level, level):
    """feedback.txt, feedback.html and results.json (its output, each test's name and
    output) at each disclosure level."""
    out = graded_at_each_level[level]
    lengths = {}
    for name in ("many", "chen"):
        for file in ("feedback.txt", "feedback.html", "results.json"):
            text = (_results_text(out, name) if file == "results.json"
                    else _read(out, name, file)).replace(name, "student_file")
            assert english_words(page_text(text) if file.endswith(".html") else text) == [], \
                (level, name, file)
            lengths[(name, file)] = len(CJK.findall(text))
    assert min(lengths.values()) > (0 if level == "score" else 30), lengths
    text = _read(out, "many", "feedback.txt")
    # each of its seven mistakes costs its own part once (error carried forward: 0, 13, 13,
    # 0, 3, 2 and the GPU part's 8 of 10; sequence_mask's is the device mistake's)
    assert text.startswith("student_file：39 / 100 分".replace("student_file", "many"))
    # the per-part summary, with its diagnosis, except at the score level
    assert ("sequence_mask: 0/11（通过：10 个用例中的 0 个）\n    本部分" in text) == (level != "score")


@pytest.mark.slow
def test_the_longest_chinese_feedback_has_no_english_word(graded_at_each_level):
    """The figure docs/reference/output-files.md gives: of every feedback.txt graded in Chinese, the longest."""
    texts = [(_read(out, path.name, "feedback.txt"), path.name)
             for out in graded_at_each_level.values() for path in out.iterdir()
             if (path / "feedback.txt").is_file()]
    text, name = max(texts)
    text, name = max(texts, key=lambda pair: len(pair[0]))
    assert name == "many" and len(text.splitlines()) > 60
    assert english_words(text.replace(name, "student_file")) == []


def _selfcheck_failures(output):
    """The self-checks' own messages in a pytest run: the FAILURES section without pytest's
    test headers and without the student's code quoted in a traceback line."""
    start, end = output.find("= FAILURES ="), output.find("short test summary info")
    assert start >= 0, output[-2000:]
    return "\n".join(line for line in output[start:end].splitlines()[1:-1]
                     if not line.startswith("_") and "attention.py 第" not in line)


@pytest.mark.slow
def test_the_chinese_student_folder_says_every_self_check_in_chinese(tmp_path):
    """The folder of `grader release --lang zh`, with plain `pytest` (no --lang): the
    skeleton and catalog mistakes in every part fail in Chinese, with no English prose."""
    from grader.catalog import Catalog
    from grader.release import student_folder
    MISTAKES = Catalog.of(assignment.load("attention")).mistakes
    API_NAMES = assignment.load("attention").api
    solution = os.path.join(KIT, "solutions", "attention.py")
    files = student_folder(solution, API_NAMES, "zh")
    with open(solution, encoding="utf-8") as handle:
        source = handle.read()
    variants = {"skeleton": None, "mask": "mask-off-by-one", "softmax": "softmax-neg-inf",
                "additive": "additive-dropout-stored", "dot": "dot-no-scale",
                "transpose": "transpose-no-permute", "heads": "mha-repeat",
                "device": "gpu-arange-no-device"}
    runs = []
    for name, mistake in variants.items():
        folder = tmp_path / name
        for path, data in files.items():
            (folder / path).parent.mkdir(parents=True, exist_ok=True)
            (folder / path).write_bytes(data)
        if mistake:
            wrong = next(m for m in MISTAKES if m.id == mistake).apply(source)
            (folder / "attention.py").write_text(wrong, encoding="utf-8")
        runs.append([name, str(folder)])
    driver = ("import contextlib, io, json, os, sys\nsys.dont_write_bytecode = True\n"
              "import pytest\nresults = {}\n"
              "for name, folder in json.loads(sys.argv[1]):\n"
              "    for mod in ('attention', 'test_attention', 'conftest'):\n"
              "        sys.modules.pop(mod, None)\n"
              "    out = io.StringIO()\n    os.chdir(folder)\n"
              "    with contextlib.redirect_stdout(out):\n"
              "        rc = pytest.main(['-p', 'no:cacheprovider'])\n"
              "    results[name] = [int(rc), out.getvalue()]\n"
              "    sys.path[:] = [p for p in sys.path if p != folder]\n"
              "print(json.dumps(results))\n")
    done = subprocess.run([sys.executable, "-c", driver, json.dumps(runs)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=900,
                          env=student_env("ATTN_LANG"))
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(done.stdout.splitlines()[-1])
    for name, (rc, output) in results.items():
        said = _selfcheck_failures(output)
        assert rc == 1 and english_words(said) == [], (name, english_words(said), said[:3000])
        assert len(CJK.findall(said)) > 30, (name, said)
    assert results["skeleton"][1].count("还没有写（它抛出 NotImplementedError）") > 5


@pytest.mark.slow
def test_the_class_report_stays_chinese_when_rebuilt_without_lang(graded_in_chinese):
    """`grader gradebook` (and `grader override`) take no --lang: report.html keeps the
    language the class's feedback was written in (each results.json's extra_data.lang)."""
    done = run_grader("gradebook", "--out", str(graded_in_chinese), timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    with open(graded_in_chinese / "report.html", encoding="utf-8") as handle:
        page = handle.read()
    assert '<html lang="zh-CN"' in page and "<h2>分数分布</h2>" in page \
        and '<td class="wrap">已评分</td>' in page


def test_the_class_language_is_the_one_most_students_were_graded_in(tmp_path):
    from grader import i18n
    from grader.report.html import class_language
    rows = []
    for name, lang in (("a", "zh"), ("b", "zh"), ("c", "en"), ("d", None), ("e", "fr")):
        (tmp_path / name).mkdir()
        extra = {"lang": lang} if lang else {}
        (tmp_path / name / "results.json").write_text(json.dumps({"extra_data": extra}),
                                                      encoding="utf-8")
        rows.append({"folder": name})
    rows.append({"folder": "../a"})  # never read outside DIR
    assert class_language(rows, str(tmp_path)) == "zh"
    assert class_language(rows[2:], str(tmp_path)) == "en"
    assert class_language([{"folder": "missing"}], str(tmp_path)) == "en"  # this process's
    try:
        i18n.set_language("zh")
        assert class_language(rows[3:], str(tmp_path)) == "zh"
        assert class_language([rows[0], rows[2]], str(tmp_path)) == "zh"  # a tie: this process's
    finally:
        i18n.set_language("en")
    assert class_language([rows[0], rows[2]], str(tmp_path)) == "en"


def _singular(extracted):
    return {key[0] if isinstance(key, tuple) else key for key in extracted}


def test_the_graders_catalog_holds_exactly_the_graders_words():
    """grader.po is extracted from grader/ alone (grader/i18n.py): it holds every message
    of grader/ (one an assignment uses too stays here, consulted first) and nothing else,
    so no assignment's words live under grader/."""
    graders = _singular(_extracted(("grader",)))
    assert len(graders) > 300, "extraction found too few messages: is grader/ marked?"
    held = _msgids(PO)
    assert sorted(held - graders) == [], "grader.po holds words grader/ does not use " \
        "(an assignment's belong in tests_hidden/<name>/locale/zh_CN/LC_MESSAGES/assignment.po)"
    assert sorted(graders - held) == [], "grader.po lacks words grader/ uses"


def test_every_assignment_is_checked():
    assert {"attention", "transformer"} <= set(ASSIGNMENTS), ASSIGNMENTS


@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_an_assignments_own_words_live_with_it(name):
    """tests_hidden/<name>/locale/zh_CN/LC_MESSAGES/assignment.po holds exactly the messages
    of tests_hidden/<name>/ that grader/ does not use, grader.po none of them, and each is
    said in Chinese from the catalogs at run time: a new assignment adds its Chinese without
    touching grader/, and deleting one assignment takes no other's words with it."""
    from grader import i18n
    graders = _singular(_extracted(("grader",)))
    own = _singular(_extracted((f"tests_hidden/{name}",))) - graders
    assert len(own) >= 30, f"extraction found too few messages in tests_hidden/{name}"
    assert sorted(own & _msgids(PO)) == [], \
        f"grader.po holds words only tests_hidden/{name}/ uses: move them to its assignment.po"
    held = _msgids(_own_po(name))
    assert sorted(own - held) == [], f"tests_hidden/{name}/.../assignment.po lacks its own words"
    assert sorted(held - own) == [], \
        f"tests_hidden/{name}/.../assignment.po holds words that are not its own (or grader/'s)"
    assert _own_po(name)[:-3] + ".mo" in i18n.assignment_catalogs("zh", KIT)
    with open(_own_po(name), "rb") as handle:
        words = {m.id: m.string for m in read_po(handle, locale="zh_CN") if m.id}
    before = i18n.language()
    try:
        i18n.set_language("zh")
        said = {msgid: i18n._(msgid) for msgid in words}
    finally:
        i18n.set_language(before)
    assert said == words
    assert all(CJK.search(text) or CJK_PUNCTUATION.search(text) for text in said.values())
    sample = sorted(words)[-1]
    assert i18n.case_words(sample, "zh") == words[sample]
