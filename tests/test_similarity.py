"""`grader similarity` (issue 18): disguised copies are flagged and rank above every
independent pair, independent work (two that follow the book closely among it) is not,
hostile names and code are escaped, oversized or odd stored code is skipped with its reason,
and the command works end to end on a gradebook graded for real, changing no grade.

The test set is tests/similarity/: wei.py and six disguised copies of it (names changed,
functions reordered, Chinese comments added and docstrings translated, reformatted, a
notebook, a dead line after every statement), ana.py and one copy (renamed, reordered and reformatted at once), and eight
independent correct implementations: liu_book, zhang_book, he_skeleton_book and
xu_skeleton_book follow the book closely (the last two fill the skeleton with its code),
the others are einsum, loops, helpers and torch.where styles. Every file scores 100.
"""
import csv
import hashlib
import io
import json
import os
import re
import subprocess
import sys

import pytest

from conftest import KIT

import copydetect  # noqa: E402,F401  (the test extra has it: tests/test_dependencies.py checks)

from grader import intake  # noqa: E402
from grader.report import gradebook, html as pages  # noqa: E402
from grader.similarity import DEFAULT_THRESHOLD, MIN_SHARED, base, code, command, compare  # noqa: E402
from grader.similarity import fingerprint, page, sources  # noqa: E402

from grader import assignment  # noqa: E402
from grading import run_grader

ATTENTION = assignment.load("attention")
SET = os.path.join(KIT, "tests", "similarity")
# who copied whom: the ground truth the test set was built to (not computed by the code)
COPIES = [{"wei", "tom_renamed", "uma_reordered", "li_comments_zh", "finn_formatted",
           "nora_notebook", "gus_padded"}, {"ana", "ben_mixed"}]
BOOK_FOLLOWERS = {"liu_book", "zhang_book", "he_skeleton_book", "xu_skeleton_book"}
INDEPENDENT = BOOK_FOLLOWERS | {"park_einsum", "omar_loops", "sara_functional", "kim_where"}


def _staged(path, tmp_path):
    """The code as `grader grade` keeps it: real intake (a notebook's cells as intake
    recorded them), read back as the report compares it."""
    name = os.path.splitext(os.path.basename(path))[0]
    staged = intake.stage(path, str(tmp_path / "staged" / name), name)
    assert staged.error is None, staged.error
    kept = code.staged_code(staged)
    return code.code_of(kept.text, kept.cells)


@pytest.fixture(scope="module")
def class_pairs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("set")
    texts = {os.path.splitext(n)[0]: _staged(os.path.join(SET, n), tmp) for n in sorted(os.listdir(SET))}
    hashes = fingerprint.base_hashes([t for _, t in base.base_texts()])
    prints = {k: fingerprint.Fingerprint(t, hashes) for k, t in texts.items()}
    return texts, prints, compare.all_pairs(prints)


def test_the_base_code_is_the_assignments():
    """What never counts comes from the assignment: its declaration's skeleton, public
    self-checks and solution, and its folder's similarity_base.toml."""
    labels = [label for label, _ in base.base_texts(ATTENTION)]
    assert labels == ["assignments/attention/attention.py", "assignments/attention/test_attention.py",
                      "solutions/attention.py",
                      "tests_hidden/attention/alternatives/book_d2l_0_17.py",
                      "tests_hidden/attention/alternatives/lazy_linear_d2l_1_0.py",
                      "the book's example calls (tests_hidden/attention/similarity_base.toml)"]
    examples = dict(base.base_texts(ATTENTION))[labels[-1]]
    assert "attention(X, Y, Y, valid_lens).shape" in examples


def test_another_assignments_base_code_and_a_wrong_declaration(tmp_path):
    import dataclasses
    folder = tmp_path / "transformer"
    folder.mkdir()
    (tmp_path / "skeleton").mkdir()
    (tmp_path / "skeleton" / "transformer.py").write_text("class AddNorm: pass\n")
    (tmp_path / "solution.py").write_text("S = 1\n")
    (folder / "book.py").write_text("B = 1\n")
    other = dataclasses.replace(ATTENTION, name="transformer", module="transformer",
                                folder=str(folder), student_folder=str(tmp_path / "skeleton"),
                                solution=str(tmp_path / "solution.py"))
    # no similarity_base.toml: the declaration's files only (those that exist)
    assert [t for _, t in base.base_texts(other)] == ["class AddNorm: pass\n", "S = 1\n"]
    (folder / base.DECLARATION).write_text('files = ["book.py"]\nexamples = "pe(X)"\n')
    assert [t for _, t in base.base_texts(other)] == ["class AddNorm: pass\n", "S = 1\n",
                                                       "B = 1\n", "pe(X)"]
    for text, why in (('files = ["../solution.py"]', "which is outside"),
                      ('file = ["book.py"]', "unknown key 'file'"),
                      ('examples = ["pe(X)"]', "'examples' must be a string")):
        (folder / base.DECLARATION).write_text(text + "\n")
        with pytest.raises(base.BaseError, match=why):
            base.base_texts(other)


def _is_copy(pair):
    return any({pair.a, pair.b} <= group for group in COPIES)


def test_the_set_is_what_the_docstring_says(class_pairs):
    texts, _, _ = class_pairs
    assert set(texts) == set().union(*COPIES) | INDEPENDENT
    assert len(texts) == 17
    assert "# cell 3" in texts["nora_notebook"].text
    assert "__attnkit_run_cell__" not in texts["nora_notebook"].text
    assert texts["nora_notebook"].notebook and not texts["wei"].notebook


def test_copies_are_flagged_and_rank_above_every_independent_pair(class_pairs):
    _, _, pairs = class_pairs
    copies = [p for p in pairs if _is_copy(p)]
    others = [p for p in pairs if not _is_copy(p)]
    assert len(copies) == 21 + 1 and len(others) == 136 - 22
    assert all(p.flagged for p in copies), [(p.a, p.b, p.score) for p in copies if not p.flagged]
    assert not any(p.flagged for p in others), [(p.a, p.b, p.score) for p in others if p.flagged]
    assert min(p.score for p in copies) > max(p.score for p in others)
    # measured (docs/how-to/similarity.md): every copy scores 1, sharing 493 characters and up
    # (all of its own code); independent pairs 0.17 at most, sharing 124 at most
    assert min(p.score for p in copies) == 1.0 and max(p.score for p in others) == 0.1708
    assert min(p.shared for p in copies) == 493 and max(p.shared for p in others) == 124
    assert pairs[:22] == sorted(copies, key=lambda p: (-p.score, -p.shared, p.a, p.b))


def test_the_clusters_are_the_two_groups_of_copies(class_pairs):
    _, _, pairs = class_pairs
    assert compare.clusters(pairs) == [sorted(COPIES[0]), sorted(COPIES[1])]


def test_the_book_is_base_code(class_pairs):
    """Students who follow the book share the book, which never counts: the two that fill
    the skeleton with the book's code have no code of their own at all."""
    _, prints, pairs = class_pairs
    assert prints["he_skeleton_book"].token_coverage == 0
    assert prints["xu_skeleton_book"].token_coverage == 0
    for pair in pairs:
        if {pair.a, pair.b} <= BOOK_FOLLOWERS:
            assert pair.score == 0 and pair.shared == 0, (pair.a, pair.b)


def test_the_book_without_docstrings_in_any_order_is_still_base():
    """Deleting the docstrings and reordering the functions joins the book's lines in new
    ways; fingerprinting one definition at a time, docstrings left out, keeps it base."""
    with open(os.path.join(ATTENTION.alternatives, "book_d2l_0_17.py"), encoding="utf-8") as handle:
        book = handle.read()
    bare = re.sub(r'\n[ \t]*"""[^"\n]*"""(?=\n)', "", re.sub(r"super\(\w+, self\)", "super()", book))
    assert bare.count('"""') == 2 and "def sequence_mask(X, valid_len, value=0):\n    maxlen" in bare
    head, body = bare.split("\n\n\n", 1)
    reversed_book = head + "\n\n\n" + "\n\n\n".join(reversed(body.split("\n\n\n")))
    hashes = fingerprint.base_hashes([t for _, t in base.base_texts()])
    assert fingerprint.Fingerprint(bare, hashes).token_coverage == 0
    assert fingerprint.Fingerprint(reversed_book, hashes).token_coverage == 0
    # without the base, the same two files are one long shared passage
    pair = compare.compare("a", "b", fingerprint.Fingerprint(bare), fingerprint.Fingerprint(reversed_book))
    assert pair.score > 0.9 and pair.flagged


def _book_plus(extra):
    with open(os.path.join(ATTENTION.alternatives, "book_d2l_0_17.py"), encoding="utf-8") as handle:
        return handle.read() + "\n\n" + extra


SHORT = "def _pad(t, n):\n    return torch.cat([t, t.new_zeros(n - t.shape[0])])\n"
LONG = SHORT + '''

def _check_shapes(queries, keys, values):
    assert queries.dim() == 3 and keys.dim() == 3 and values.dim() == 3, "batch, steps, features"
    assert keys.shape[1] == values.shape[1], "as many keys as values"
    assert queries.shape[-1] == keys.shape[-1] or True, "features"
    return queries.shape[0], queries.shape[1], keys.shape[1]


def _describe(weights):
    rows = weights.reshape(-1, weights.shape[-1])
    return {"rows": rows.shape[0], "max": float(rows.max()), "sums": rows.sum(-1).tolist()}
'''


def test_a_small_shared_helper_in_the_book_is_not_flagged_a_larger_one_is():
    """Two submissions that are the book plus the same helper: both score 1 (all their own
    code is shared), flagged only once the shared code reaches MIN_SHARED characters."""
    assert MIN_SHARED == 200 and DEFAULT_THRESHOLD == 0.5
    hashes = fingerprint.base_hashes([t for _, t in base.base_texts()])
    short_a, short_b = (fingerprint.Fingerprint(_book_plus(SHORT), hashes) for _ in range(2))
    small = compare.compare("a", "b", short_a, short_b)
    assert small.score == 1.0 and 0 < small.shared < MIN_SHARED and not small.flagged
    long_a, long_b = (fingerprint.Fingerprint(_book_plus(LONG), hashes) for _ in range(2))
    large = compare.compare("a", "b", long_a, long_b)
    assert large.score == 1.0 and large.shared >= MIN_SHARED and large.flagged
    assert not compare.compare("a", "b", long_a, long_b, threshold=1.0001).flagged


def test_scores_are_the_same_on_every_run(class_pairs):
    """k-grams are hashed with BLAKE2b, not the per-process salted hash(): a new process
    gives the same figures."""
    _, _, pairs = class_pairs
    mine = {(p.a, p.b): (p.score, p.shared) for p in pairs if p.a == "wei"}
    script = f"""
import json, os, pathlib, sys, tempfile
sys.path.insert(0, {KIT!r}); sys.path.insert(0, {os.path.join(KIT, 'tests')!r})
from grader.similarity import base, fingerprint, compare
from test_similarity import _staged, SET
with tempfile.TemporaryDirectory() as folder:
    tmp = pathlib.Path(folder)
    texts = {{os.path.splitext(n)[0]: _staged(os.path.join(SET, n), tmp) for n in sorted(os.listdir(SET))}}
hashes = fingerprint.base_hashes([t for _, t in base.base_texts()])
prints = {{k: fingerprint.Fingerprint(t, hashes) for k, t in texts.items()}}
print(json.dumps([[p.a, p.b, p.score, p.shared] for p in compare.all_pairs(prints) if p.a == "wei"]))
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300, env=dict(os.environ, PYTHONHASHSEED="12345"))
    assert done.returncode == 0, done.stderr[-2000:]
    theirs = {(a, b): (s, n) for a, b, s, n in json.loads(done.stdout.strip().splitlines()[-1])}
    assert theirs == mine


# --- a gradebook folder written by the gradebook's own writer ---------------------------

def _row(out, folder, student_id, name="", status="graded"):
    os.makedirs(out / folder, exist_ok=True)
    gradebook.save_record({"name": folder, "folder": folder, "status": status, "total": 50.0,
                           "max": 100.0, "parts": {"sequence_mask": [5.0, 11.0]},
                           "student_id": student_id, "student_name": name, "reason": "",
                           "source": folder}, str(out))



HOSTILE = "<script>alert('x')</script>\u202e"


def test_hostile_names_and_code_are_escaped(tmp_path):
    with open(os.path.join(SET, "wei.py"), encoding="utf-8") as handle:
        wei = handle.read()
    hostile = ('    note = "</pre><script>alert(1)</script><img src=http://x/y.png>"\n'
               '    # </mark><a href="javascript:alert(2)">\u202eevil\n')
    wei = wei.replace("def sequence_mask(X, valid_len, value=0):\n",
                      "def sequence_mask(X, valid_len, value=0):\n" + hostile)
    evil = wei.replace('"""Attention homework, Wei."""', '"""</pre><b>x</b>"""')
    _row(tmp_path, "a", "10001", name=HOSTILE)
    _row(tmp_path, "b", HOSTILE)
    code.keep(str(tmp_path), "a", wei)
    code.keep(str(tmp_path), "b", evil)
    pairs, groups, found, skipped = command.run(str(tmp_path))
    assert [(p.a, p.b, p.flagged) for p in pairs] == [("a", "b", True)] and not skipped
    text = (tmp_path / "similarity.html").read_text(encoding="utf-8")
    assert "<script" not in text and "<img" not in text and "<a " not in text and "<b>" not in text
    assert "&lt;a href=&quot;javascript:alert(2)&quot;&gt;" in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in text   # the student id
    assert "\u202e" not in text
    assert f'content="{pages.CSP}"' in text and "script-src" not in text
    assert "http://x" not in text.replace("&lt;img src=http://x/y.png&gt;", "")
    assert "A review aid, never a verdict" in text
    rows = list(csv.reader(io.StringIO((tmp_path / "similarity.csv").read_text(encoding="utf-8-sig"))))
    assert rows[0] == page.CSV_COLUMNS
    assert rows[1][:2] == ["10001", "<script>alert('x')</script>"] and rows[1][5] == "yes"


def test_a_formula_in_a_student_id_is_neutralised_in_the_csv(tmp_path):
    with open(os.path.join(SET, "ana.py"), encoding="utf-8") as handle:
        ana = handle.read()
    _row(tmp_path, "a", "=HYPERLINK(\"http://x\")")
    _row(tmp_path, "b", "10002")
    code.keep(str(tmp_path), "a", ana)
    code.keep(str(tmp_path), "b", ana)
    command.run(str(tmp_path))
    rows = list(csv.reader(io.StringIO((tmp_path / "similarity.csv").read_text(encoding="utf-8-sig"))))
    assert rows[1][0] == "'=HYPERLINK(\"http://x\")"


def test_oversized_linked_and_missing_code_is_skipped_with_its_reason(tmp_path):
    with open(os.path.join(SET, "wei.py"), encoding="utf-8") as handle:
        wei = handle.read()
    for folder in ("ok1", "ok2", "at_cap", "cap_plus_1", "big", "link", "fifo", "none", "missing"):
        _row(tmp_path, folder, folder, status="missing work" if folder == "missing" else "graded")
    code.keep(str(tmp_path), "ok1", wei)
    code.keep(str(tmp_path), "ok2", wei)
    assert code.MAX_CODE_BYTES == 128 * 1024
    code.keep(str(tmp_path), "big", wei + "#" * (128 * 1024))
    code.keep(str(tmp_path), "at_cap", wei + "#" * (128 * 1024 - len(wei)))
    code.keep(str(tmp_path), "cap_plus_1", wei + "#" * (128 * 1024 + 1 - len(wei)))
    assert os.path.getsize(tmp_path / "at_cap" / code.CODE_FILE) == 131072
    os.symlink(tmp_path / "ok1" / code.CODE_FILE, tmp_path / "link" / code.CODE_FILE)
    os.mkfifo(tmp_path / "fifo" / code.CODE_FILE)
    found, skipped = sources.load(str(tmp_path))
    assert [s.key for s in found] == ["at_cap", "ok1", "ok2"]
    reasons = {s.key: why for s, why in skipped}
    big = os.path.getsize(tmp_path / "big" / code.CODE_FILE)
    assert reasons == {
        "big": f"stored code is {big // 1024} KB, over the 128 KB cap",
        "cap_plus_1": "stored code is 128 KB, over the 128 KB cap",
        "link": "stored code not read (Too many levels of symbolic links)",
        "fifo": "stored code is not a regular file",
        "none": "no stored code (graded before the kit kept it, or intake refused the upload): "
                "run `grader grade` on it again",
        "missing": "missing work: nothing gradable was handed in"}
    command.run(str(tmp_path))
    text = (tmp_path / "similarity.html").read_text(encoding="utf-8")
    assert f"big (big): stored code is {big // 1024} KB, over the 128 KB cap" in text


def test_keep_writes_removes_and_leaves_alone(tmp_path):
    (tmp_path / "a").mkdir()
    code.keep(str(tmp_path), "a", "x = 1\n")
    assert (tmp_path / "a" / code.CODE_FILE).read_text() == "x = 1\n"
    record = json.loads((tmp_path / "a" / code.RECORD_FILE).read_text())
    assert record == {"form": "file", "code_sha256": hashlib.sha256(b"x = 1\n").hexdigest()}
    # the grader failed before intake (a bug of ours): the batch leaves what was kept alone
    from concurrent.futures import Future
    from grader import assignment
    from grader.grade import Job, _Batch
    from grader.intake.layouts import Submission
    from grader.report.book import Gradebook
    from grader.report.console import Table
    failed = Future()
    failed.set_exception(RuntimeError("a bug of ours"))
    batch = _Batch(Gradebook(str(tmp_path)), [Job(Submission(str(tmp_path / "a.py"), "a"), "a")],
                   [], Table([], 1, stream=io.StringIO(), short={}),
                   {"feedback": "full", "visibility": "visible"}, assignment.load())
    batch.finish(0, failed)
    assert batch.results[0].status == "grader error" and batch.results[0].staged_code is None
    assert (tmp_path / "a" / code.CODE_FILE).exists() and (tmp_path / "a" / code.RECORD_FILE).exists()
    code.keep(str(tmp_path), "a", None)   # intake refused the new upload
    assert not (tmp_path / "a" / code.CODE_FILE).exists()
    assert not (tmp_path / "a" / code.RECORD_FILE).exists()


def test_side_by_side_marks_the_shared_lines():
    text = "a = 1\nb = 2\nshared line\nc = 3\n"
    start = text.index("shared")
    assert page.line_ranges(text, [(start, start + 6)]) == [(3, 3)]
    shown = page.marked_code(text, [(start, start + len("shared line"))])
    assert "   3  <mark>shared line</mark>" in shown and "   1  a = 1" in shown


# --- end to end: a gradebook graded for real ---------------------------------------------

def _grader(*args):
    return run_grader(*args, timeout=600)


@pytest.mark.slow
def test_the_command_on_a_graded_gradebook(tmp_path):
    out = tmp_path / "grades"
    subs = [os.path.join(SET, n) for n in ("wei.py", "nora_notebook.ipynb", "kim_where.py")]
    done = _grader("grade", *subs, "--out", str(out), "--jobs", "1")
    assert done.returncode == 0, done.stderr[-3000:]
    # what intake recorded: nora's upload was a notebook (its code cells), wei's a file
    record = json.loads((out / "nora_notebook" / code.RECORD_FILE).read_text(encoding="utf-8"))
    assert record["form"] == "notebook" and [n for n, _ in record["cells"]] == list(range(2, 12))
    assert json.loads((out / "wei" / code.RECORD_FILE).read_text(encoding="utf-8"))["form"] == "file"
    grades = (out / "grades.csv").read_bytes()
    before = {p: (out / p / "results.json").read_bytes() for p in ("wei", "kim_where")}

    done = _grader("similarity", "--from", str(out))
    assert done.returncode == 0, done.stderr[-3000:]
    assert "3 submissions, 3 pairs, 1 flagged (score >= 0.5 and 200 shared characters), " \
           "0 clusters of more than two, 0 skipped" in done.stdout
    rows = list(csv.DictReader(io.StringIO((out / "similarity.csv").read_text(encoding="utf-8-sig"))))
    assert [(r["student_a"], r["student_b"], r["flagged"]) for r in rows][0] == \
        ("nora_notebook", "wei", "yes")
    assert [r["flagged"] for r in rows[1:]] == ["no", "no"]
    assert float(rows[0]["score"]) >= 0.9 and int(rows[0]["shared_tokens"]) >= 400
    page_text = (out / "similarity.html").read_text(encoding="utf-8")
    assert "<mark>" in page_text and "A review aid, never a verdict" in page_text
    assert '<a href="similarity.html">' in (out / "report.html").read_text(encoding="utf-8")
    # a review aid: no grade changes
    assert (out / "grades.csv").read_bytes() == grades
    assert {p: (out / p / "results.json").read_bytes() for p in ("wei", "kim_where")} == before

    bad = _grader("similarity", "--from", str(out), "--threshold", "1.5")
    assert bad.returncode == 2 and "1.5 is not a score above 0 and at most 1" in bad.stderr
    empty = _grader("similarity", "--from", str(tmp_path / "nothing"))
    assert empty.returncode == 2 and "is not a graded gradebook folder" in empty.stderr


def test_code_built_from_strings_is_listed_to_read(tmp_path):
    """A copy hidden in a string run by exec is one token to any token-based comparison:
    it is not flagged, and the page lists it to be read; the book's `attention.eval()` and
    `re.compile` are no such call."""
    with open(os.path.join(SET, "wei.py"), encoding="utf-8") as handle:
        wei = handle.read()
    hidden = "import base64\nexec(base64.b64decode(%r).decode())\n" % __import__("base64").b64encode(
        wei.encode()).decode()
    plain = _book_plus("import re\nPATTERN = re.compile('x')\nattention = DotProductAttention(0.5)\n"
                       "attention.eval()\n")
    for folder, text in (("copy", wei), ("hidden", hidden), ("plain", plain)):
        _row(tmp_path, folder, folder)
        code.keep(str(tmp_path), folder, text)
    pairs, groups, found, skipped = command.run(str(tmp_path))
    assert {k: s.hidden for k, s in found.items()} == {
        "copy": [], "hidden": ["b64decode", "exec"], "plain": []}
    assert not any(p.flagged for p in pairs)
    text = (tmp_path / "similarity.html").read_text(encoding="utf-8")
    read = text[text.index("<h2>Read these yourself</h2>"):text.index("<h2>Skipped</h2>")]
    assert "<li>hidden (hidden): b64decode, exec</li>" in read and "plain" not in read


# --- what is compared comes from intake's record, never from the code's own text --------

def _decoy(body):
    """A plain .py that opens with the line intake writes atop a converted notebook and
    ends with one decoy cell call, as a copier would dress it."""
    prelude = ("# Generated by the grader from 'attention.ipynb': each code cell runs on its "
               "own, and a cell\n")
    return prelude + body + "\n\n__attnkit_run_cell__(1, 'x = 1')\n"


def test_a_plain_file_that_opens_like_a_converted_notebook_is_compared_as_itself(tmp_path):
    """Before: the report took a file for a notebook from its first line and compared its
    decoy cell only (score 0.00), and read only the decoy for exec/b64decode. Now intake's
    record says it was a .py: the whole file is compared and scanned."""
    with open(os.path.join(SET, "wei.py"), encoding="utf-8") as handle:
        wei = handle.read()
    hidden = "import base64\nexec(base64.b64decode(b'cHJpbnQoMSk='))\n"
    uploads = tmp_path / "uploads"
    uploads.mkdir()
    (uploads / "copy.py").write_text(_decoy(wei + "\n" + hidden), encoding="utf-8")
    (uploads / "wei.py").write_text(wei, encoding="utf-8")
    out = tmp_path / "grades"
    for name in ("wei", "copy"):
        staged = intake.stage(str(uploads / f"{name}.py"), str(tmp_path / "staged" / name), name)
        assert staged.error is None and staged.cells is None      # intake: a plain file
        _row(out, name, name)
        code.keep(str(out), name, code.staged_code(staged))
    pairs, groups, found, skipped = command.run(str(out))
    assert not skipped and not found["copy"].code.notebook
    (pair,) = pairs
    assert pair.flagged and pair.score == 1.0 and pair.shared >= 441
    assert found["copy"].hidden == ["b64decode", "exec"]
    # the same cells handed in as a real notebook are compared as cells, and the same code
    notebook = {"cells": [{"cell_type": "code", "source": cell, "metadata": {},
                           "outputs": [], "execution_count": None}
                          for cell in (wei, hidden)], "metadata": {}, "nbformat": 4,
                "nbformat_minor": 5}
    (uploads / "nb.ipynb").write_text(json.dumps(notebook), encoding="utf-8")
    staged = intake.stage(str(uploads / "nb.ipynb"), str(tmp_path / "staged" / "nb"), "nb")
    assert [n for n, _ in staged.cells] == [1, 2]
    _row(out, "nb", "nb")
    code.keep(str(out), "nb", code.staged_code(staged))
    pairs, groups, found, skipped = command.run(str(out))
    assert found["nb"].code.notebook and found["nb"].text.startswith("# cell 1\n")
    assert found["nb"].hidden == ["b64decode", "exec"]
    assert all(p.flagged and p.score == 1.0 for p in pairs)


def test_stored_code_without_its_record_or_with_another_is_skipped(tmp_path):
    """Whether code was a notebook is never guessed from its text: code kept without the
    record (graded before the kit wrote it), or beside a record of other code, is skipped
    with the reason and the way out."""
    with open(os.path.join(SET, "wei.py"), encoding="utf-8") as handle:
        wei = handle.read()
    for folder in ("ok", "old", "other", "broken"):
        _row(tmp_path, folder, folder)
        code.keep(str(tmp_path), folder, wei)
    os.remove(tmp_path / "old" / code.RECORD_FILE)
    (tmp_path / "other" / code.CODE_FILE).write_text(wei + "\n# changed\n", encoding="utf-8")
    (tmp_path / "broken" / code.RECORD_FILE).write_text('{"form": "notebook", "cells": 3}')
    found, skipped = sources.load(str(tmp_path))
    assert [s.key for s in found] == ["ok"]
    assert {s.key: why for s, why in skipped} == {
        "old": "the stored code has no submitted-code.json saying whether it was a notebook "
               "(graded before the kit recorded it): run `grader grade` on it again",
        "other": "submitted-code.json describes other code than submitted-code.py (written by "
                 "another run): run `grader grade` on it again",
        "broken": "submitted-code.json does not read as the kit writes it: run `grader grade` "
                  "on it again"}


# --- the normalisation: what makes no difference ------------------------------------------

PLAIN = '''import torch
from torch import nn
import torch.nn.functional as F


def masked_softmax(X, valid_lens):
    if valid_lens is None:
        return F.softmax(X, dim=-1)
    shape = X.shape
    X = sequence_mask(X.reshape(-1, shape[-1]), valid_lens, value=-1e6)
    return F.softmax(X.reshape(shape), dim=-1)


class Dot(nn.Module):
    def forward(self, q, k):
        return torch.bmm(q, k.transpose(1, 2))
'''
DRESSED = '''"""My homework."""
from torch.nn.functional import softmax as sm
from torch.nn import Module
from torch import bmm


class Scores(Module):
    """Dot products."""
    def forward(me, queries,
                keys):   # the keys
        return (bmm(queries, (keys.transpose(1, 2))))


def masked_softmax(scores, lengths):
    # no lengths: a plain softmax
    if lengths is None:
        return (sm(scores, dim=-1))
    else:
        shape = (scores.shape)
        scores = sequence_mask(scores.reshape(-1, shape[-1]), lengths, value=-1000000.0)
        return sm(scores.reshape(shape), dim=(-1))
'''
# written out by hand from the rules in grader/similarity/normal.py
CANONICAL_PIECES = [
    "def v(v, v):\n    if v is None:\n        return torch.nn.functional.softmax(v, dim=-1)\n"
    "    v = v.shape\n    v = v(v.reshape(-1, v[-1]), v, value=-1000000.0)\n"
    "    return torch.nn.functional.softmax(v.reshape(v), dim=-1)",
    "class v(torch.nn.Module):",
    "    def v(v, v, v):\n        return torch.bmm(v, v.transpose(1, 2))"]


def _pieces(text):
    from grader.similarity import normal
    normalised = normal.normalise([(text, 0)])
    return [normalised.text[a:b] for a, b in normalised.pieces]


def test_comments_docstrings_parentheses_names_imports_and_order_make_no_difference():
    assert sorted(_pieces(PLAIN)) == sorted(CANONICAL_PIECES)
    assert sorted(_pieces(DRESSED)) == sorted(CANONICAL_PIECES)
    # so the two share every fingerprint: a score of 1
    a, b = fingerprint.Fingerprint(PLAIN), fingerprint.Fingerprint(DRESSED)
    assert a.hashes == b.hashes
    assert compare.compare("a", "b", a, b).score == 1.0


def test_the_shared_lines_are_shown_in_the_students_own_code():
    """Normalised code is what is compared; the page marks the lines of the code as the
    student wrote it that each shared passage came from."""
    a, b = fingerprint.Fingerprint(PLAIN), fingerprint.Fingerprint(DRESSED)
    pair = compare.compare("a", "b", a, b)
    marked_b = page.line_ranges(b.shown, pair.spans_b)
    # DRESSED: the class runs over lines 7 to 11, masked_softmax over 14 to 21 but for its
    # `else:` (line 18), which says nothing after a return and is not compared
    assert marked_b == [(7, 11), (14, 17), (19, 21)], marked_b
    assert page.line_ranges(a.shown, pair.spans_a) == [(6, 11), (14, 16)]


def test_code_that_does_not_parse_is_compared_as_it_is():
    """A syntax error (or a cell that is not Python) falls back to the text itself: still
    compared, cut at its definitions, docstrings blanked."""
    from grader.similarity import normal
    broken = PLAIN.replace("def masked_softmax(X, valid_lens):", "def masked_softmax(X, valid_lens)")
    normalised = normal.normalise([(broken, 0)])
    assert normalised.text == broken and len(normalised.pieces) == 4
    a, b = fingerprint.Fingerprint(broken), fingerprint.Fingerprint(broken + "\n")
    assert compare.compare("a", "b", a, b).score == 1.0
    # parsed, but too deep to walk and print again: kept as it is, never an error
    deep = "x = " + " + ".join(["1"] * 5000) + "\n"
    assert normal.normalise([(deep, 0)]).text == deep
    assert normal.normalise([("x = 1 + 1\n", 0)]).text == "v = 1 + 1"
