"""The attention assignment's golden outputs: record them, or compare a tree with them.

A fixed class (the six examples, read from examples/, and the ten submissions built from
catalog mistakes in tests/golden/attention/class/) is graded with `grader grade --jobs 1
--no-gpu`, once in English and once with `--lang zh`; grades.csv, each student's feedback.txt and results.json are kept,
normalized (`normalize_*` below), under tests/golden/attention/{en,zh}/. `grader validate
--no-gpu`'s per-entry results (validate's table, and each entry's total, part scores and
diagnosis per part) are kept in tests/golden/attention/validate.json, with the sample
tests/test_assignment_unchanged.py grades.

    python tools/golden.py                      # rewrite every golden from this tree
    python tools/golden.py --tree /tmp/base     # ... from another checkout (e.g. a worktree)
    python tools/golden.py --check              # compare this tree with the goldens in full
                                                # (validate's every entry, not the sample)
    python tools/golden.py --build-class        # rebuild class/ from the tree's catalog
                                                # (the built ten; the examples stay in examples/)

Grading runs `python -m grader` in a subprocess with the tree as its folder, so the grader
graded is the tree's, never the one this file was imported with.
"""
import argparse
import csv
import difflib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile

KIT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES_DIR = os.path.join(KIT, "examples")
GOLDEN = os.path.join(KIT, "tests", "golden", "attention")
CLASS = os.path.join(GOLDEN, "class")
VALIDATE = os.path.join(GOLDEN, "validate.json")
LANGS = ("en", "zh")
# every file of the class gets this modification time when it is staged for grading, so the
# submission time the plain layout reads from it (grades.csv's submitted_at) is fixed
MTIME = 1764590400  # 2025-12-01T12:00:00Z
CLASS_DIR_TOKEN = "<class>"
OUT_DIR_TOKEN = "<out>"

# the class's mistake submissions: (file name, mistake ids applied in order, what it adds)
# covering every part; one is a notebook, one fails on import, one holds two mistakes
BUILT = [
    ("mask-maxlen-from-batch.py", ["mask-maxlen-from-batch"], None),
    ("softmax-fill-small.ipynb", ["softmax-fill-small"], "notebook"),
    ("additive-bias.py", ["additive-bias"], None),
    ("dot-scale-by-ndim.py", ["dot-scale-by-ndim"], None),
    ("transpose-output-head-major.py", ["transpose-output-head-major"], None),
    ("mha-head-major.py", ["mha-head-major"], None),
    ("gpu-arange-no-device.py", ["gpu-arange-no-device"], None),
    ("two-mistakes.py", ["mask-off-by-one", "dot-no-scale"], None),
    ("softmax-repeat.py", ["softmax-repeat"], None),
    ("import-fails.py", ["mha-interleave-no-dim"], "import-error"),
]
EXAMPLES = ["alice.py", "bob.ipynb", "chen.py", "dana.zip", "erik", "fatima.py"]
# a check a student left at the bottom of the file: it calls masked_softmax with one argument
# too many, so importing the module raises TypeError and nothing can be graded
IMPORT_ERROR_TAIL = ("\n\n# quick check before handing in\n"
                     "print(masked_softmax(torch.rand(2, 2, 4), torch.tensor([2, 3]), 1))\n")


# ---- normalizing: only what varies from run to run or machine to machine -----------------

def normalize_text(text, class_dir, out_dir):
    """The staged class's and the output folder's absolute paths (temporary folders, new each
    run) become <class> and <out>; nothing else changes."""
    for path, token in ((class_dir, CLASS_DIR_TOKEN), (out_dir, OUT_DIR_TOKEN)):
        for spelling in {path, os.path.realpath(path)}:
            text = text.replace(spelling, token)
    return text


def normalize_results(data, class_dir, out_dir):
    """results.json without what varies run to run or machine to machine:

    - `execution_time`: wall-clock seconds of the grading, different every run;
    - `extra_data.isolation`: the sandbox level this machine offers (bwrap or not, cgroup
      v1 or v2, how workers start), a fact about the machine, not the grade;
    - `extra_data.case_results`: cache counters (how many reference and mistake results the
      submission computed and how many it reused from earlier submissions of the batch),
      which depend on the batch's order and the fork server's memo, not on the grade;
    - in every string, the staged class's and the output folder's temporary paths.
    Everything else (score, every test's name, score, status and output, the summary, the
    diagnoses, lang, feedback, status, max_score, carry_forward, skipped) stays as written.
    """
    data = json.loads(normalize_text(json.dumps(data, ensure_ascii=False), class_dir, out_dir))
    data.pop("execution_time", None)
    extra = data.get("extra_data") or {}
    extra.pop("isolation", None)
    extra.pop("case_results", None)
    return data


def normalize_grades(text, class_dir, out_dir):
    """grades.csv as written (byte order mark, every column) with the staged class's path in
    the `source` column, a temporary folder new each run, as <class>. The submission times
    are fixed by staging every file with the same modification time (MTIME)."""
    return normalize_text(text, class_dir, out_dir)


def normalize_feedback(text, class_dir, out_dir):
    """feedback.txt as written, with temporary paths as <class> and <out> (none is expected:
    the feedback names files relative to the submission)."""
    return normalize_text(text, class_dir, out_dir)


# ---- running the grader of a tree ----------------------------------------------------------

def run_grader(tree, args, timeout=1800):
    """`python -m grader ARGS` in `tree` (its own package first on the path); the process."""
    env = dict(os.environ, PYTHONPATH=tree, PYTHONDONTWRITEBYTECODE="1")
    return subprocess.run([sys.executable, "-m", "grader", *args], cwd=tree, env=env,
                          capture_output=True, text=True, timeout=timeout)


def class_names():
    """The class's entries, in name order: the examples and the built submissions."""
    return sorted(EXAMPLES + [name for name, _, _ in BUILT])


def class_source(name):
    """Where an entry of the class is kept: an example in examples/ (read, never copied into
    the goldens), a built submission in class/."""
    return os.path.join(EXAMPLES_DIR if name in EXAMPLES else CLASS, name)


def stage_class(dest, names=None):
    """Copy the class (or the named entries of it) into dest with every file's and folder's
    modification time set to MTIME; the staged paths, in name order."""
    names = class_names() if names is None else names
    staged = []
    for name in names:
        source, target = class_source(name), os.path.join(dest, name)
        if os.path.isdir(source):
            shutil.copytree(source, target)
        else:
            shutil.copyfile(source, target)
        for root, dirs, files in os.walk(target):  # a folder's files (nothing for a file)
            for entry in dirs + files:
                os.utime(os.path.join(root, entry), (MTIME, MTIME))
        os.utime(target, (MTIME, MTIME))
        staged.append(target)
    return staged


def grade_class(tree, lang, workdir):
    """Grade the whole class with `tree`'s grader in `lang`; {relative path: normalized
    content} for grades.csv and each folder's feedback.txt and results.json."""
    class_dir = os.path.join(workdir, "class")
    out_dir = os.path.join(workdir, f"out-{lang}")
    os.makedirs(class_dir)
    staged = stage_class(class_dir)
    proc = run_grader(tree, ["grade", *staged, "--out", out_dir, "--jobs", "1", "--no-gpu",
                             "--lang", lang])
    if proc.returncode != 0:
        raise RuntimeError(f"grader grade --lang {lang} exited {proc.returncode}:\n"
                           f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return collect(out_dir, class_dir)


def collect(out_dir, class_dir):
    """The normalized outputs of one graded folder: grades.csv, <folder>/feedback.txt and
    <folder>/results.json for every folder that has them."""
    found = {}
    with open(os.path.join(out_dir, "grades.csv"), encoding="utf-8", newline="") as handle:
        found["grades.csv"] = normalize_grades(handle.read(), class_dir, out_dir)
    for folder in sorted(os.listdir(out_dir)):
        base = os.path.join(out_dir, folder)
        if not os.path.isdir(base):
            continue
        with open(os.path.join(base, "feedback.txt"), encoding="utf-8", newline="") as handle:
            found[f"{folder}/feedback.txt"] = normalize_feedback(handle.read(), class_dir, out_dir)
        with open(os.path.join(base, "results.json"), encoding="utf-8") as handle:
            data = normalize_results(json.load(handle), class_dir, out_dir)
        found[f"{folder}/results.json"] = json.dumps(data, ensure_ascii=False, indent=1,
                                                     sort_keys=True) + "\n"
    return found


# ---- validate ------------------------------------------------------------------------------

def entry_result(folder):
    """What validate's verdict on one entry rests on, from its output folder: status, total,
    max and every part's [score, max] (gradebook-row.json, the result's own sums), and each
    part's diagnoses (results.json: catalog ids, null for an observation)."""
    with open(os.path.join(folder, "gradebook-row.json"), encoding="utf-8") as handle:
        row = json.load(handle)
    with open(os.path.join(folder, "results.json"), encoding="utf-8") as handle:
        results = json.load(handle)
    diagnoses = {}
    for item in (results.get("extra_data") or {}).get("diagnoses") or []:
        diagnoses.setdefault(item["part"], []).append(item.get("mistake"))
    return {"status": row["status"], "total": row["total"], "max": row["max"],
            "parts": row["parts"], "diagnoses": diagnoses}


def parse_table(stdout):
    """validate's printed table: {name: {"kind", "ok", "detail"}}."""
    rows = {}
    for line in stdout.splitlines():
        if line[:3] in ("ok ", "!! ") and len(line.split(None, 3)) == 4:
            mark, kind, name, detail = line.split(None, 3)
            rows[name] = {"kind": kind, "ok": mark == "ok", "detail": detail.strip()}
    return rows


def run_validate(tree, workdir):
    """`grader validate --jobs 1 --no-gpu` of `tree`: {name: table row + entry_result}."""
    out_dir = os.path.join(workdir, "validate")
    proc = run_grader(tree, ["validate", "--jobs", "1", "--no-gpu", "--out", out_dir])
    table = parse_table(proc.stdout)
    if not table:
        raise RuntimeError(f"grader validate printed no table (exit {proc.returncode}):\n"
                           f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    entries = {}
    for name, row in table.items():
        entries[name] = {**row, **entry_result(os.path.join(out_dir, name))}
    return entries


def choose_sample(entries):
    """Every entry that is not a catalog mistake (solution, skeleton, alternatives), and two
    mistakes of each part (the first and the middle one by id; the GPU part has one): 13
    mistakes over all seven parts. Deterministic: it depends on the names and parts only."""
    sample = sorted(n for n, e in entries.items() if e["kind"] != "mistake")
    by_part = {}
    for name, entry in sorted(entries.items()):
        if entry["kind"] == "mistake":
            part = entry["detail"].split(" ", 1)[0]
            by_part.setdefault(part, []).append(name)
    for part, names in sorted(by_part.items()):
        sample += sorted({names[0], names[len(names) // 2]})
    return sample


def validate_sources(tree, workdir):
    """{name: path} of the files `grader validate` of `tree` would grade (its own
    expectations: the solution, the skeleton, the alternatives and the catalog's mistakes
    applied to the solution), written under workdir."""
    code = ("import json, sys\nfrom grader.validate import expectations\n"
            "print(json.dumps({i.name: i.path for i in expectations(sys.argv[1])}))")
    env = dict(os.environ, PYTHONPATH=tree, PYTHONDONTWRITEBYTECODE="1")
    proc = subprocess.run([sys.executable, "-c", code, workdir], cwd=tree, env=env,
                          capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"validate's expectations failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def grade_validate_sample(tree, names, workdir):
    """The sample graded as `grader validate` grades it (one batch, default settings, no
    GPU); {name: entry_result}."""
    sources = validate_sources(tree, os.path.join(workdir, "sources"))
    missing = [n for n in names if n not in sources]
    if missing:
        raise RuntimeError(f"validate no longer has these entries: {', '.join(missing)}")
    out_dir = os.path.join(workdir, "sample")
    proc = run_grader(tree, ["grade", *[sources[n] for n in names], "--out", out_dir,
                             "--jobs", "1", "--no-gpu"])
    if proc.returncode != 0:
        raise RuntimeError(f"grading validate's sample exited {proc.returncode}:\n"
                           f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    found = {}
    for name in names:
        found[name] = entry_result(os.path.join(out_dir, name))
    return found


# ---- the class -----------------------------------------------------------------------------

def notebook(source):
    """`source` as a Jupyter notebook: a markdown cell, then one code cell per top-level
    block (imports, each definition with the comments above it)."""
    cells, current = [], []
    for line in source.splitlines(keepends=True):
        starts = line.startswith(("def ", "class ", "@"))
        if starts and current and not current[-1].startswith(("@", "#")):
            cells.append(current)
            current = []
        current.append(line)
    cells.append(current)

    def code(lines):
        while lines and not lines[-1].strip():
            lines = lines[:-1]
        return {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                "source": lines}
    head = {"cell_type": "markdown", "metadata": {},
            "source": ["# 注意力机制 作业\n", "My attention homework."]}
    return json.dumps({"cells": [head] + [code(c) for c in cells if "".join(c).strip()],
                       "metadata": {"kernelspec": {"display_name": "Python 3",
                                                   "language": "python", "name": "python3"}},
                       "nbformat": 4, "nbformat_minor": 5}, ensure_ascii=False, indent=1) + "\n"


def build_class(tree):
    """Rewrite class/: BUILT, from `tree`'s solution and catalog (the examples are read from
    examples/ when the class is staged)."""
    # the catalog as each era of the tree offers it: the declared assignment's (issue 16),
    # or the one module-level table of 04d18a4
    code = ("import json, sys\nfrom grader import paths\n"
            "try:\n"
            "    from grader import assignment\n"
            "    from grader.catalog import Catalog\n"
            "    MISTAKES = Catalog.of(assignment.load()).mistakes\n"
            "    SOLUTION = assignment.load().solution\n"
            "except ImportError:\n"
            "    from grader.catalog import MISTAKES\n"
            "    SOLUTION = paths.SOLUTION\n"
            "source = open(SOLUTION, encoding='utf-8').read()\n"
            "by_id = {m.id: m for m in MISTAKES}\nout = {}\n"
            "for name, ids in json.loads(sys.argv[1]):\n"
            "    text = source\n"
            "    for i in ids:\n"
            "        text = by_id[i].apply(text)\n"
            "    out[name] = text\n"
            "print(json.dumps(out))")
    env = dict(os.environ, PYTHONPATH=tree)
    proc = subprocess.run([sys.executable, "-c", code, json.dumps([[n, i] for n, i, _ in BUILT])],
                          cwd=tree, env=env, capture_output=True, text=True, check=True)
    built = json.loads(proc.stdout)
    shutil.rmtree(CLASS, ignore_errors=True)
    os.makedirs(CLASS)
    for name, _, kind in BUILT:
        text = built[name]
        if kind == "import-error":
            text += IMPORT_ERROR_TAIL
        if kind == "notebook":
            text = notebook(text)
        with open(os.path.join(CLASS, name), "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)


# ---- recording and comparing ---------------------------------------------------------------

def record(tree):
    """Rewrite the goldens (en/, zh/, validate.json) from `tree`'s grader."""
    workdir = tempfile.mkdtemp(prefix="attnkit-golden-")
    try:
        for lang in LANGS:
            found = grade_class(tree, lang, os.path.join(workdir, lang))
            target = os.path.join(GOLDEN, lang)
            shutil.rmtree(target, ignore_errors=True)
            for rel, text in found.items():
                path = os.path.join(target, rel)
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "w", encoding="utf-8", newline="") as handle:
                    handle.write(text)
            print(f"{lang}: {len(found)} files")
        entries = run_validate(tree, os.path.join(workdir, "v"))
        data = {"command": "grader validate --jobs 1 --no-gpu",
                "sample": choose_sample(entries), "entries": entries}
        with open(VALIDATE, "w", encoding="utf-8") as handle:
            handle.write(json.dumps(data, ensure_ascii=False, indent=1, sort_keys=True) + "\n")
        print(f"validate: {len(entries)} entries, {sum(e['ok'] for e in entries.values())} ok; "
              f"sample of {len(data['sample'])}")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def load_golden(lang):
    """{relative path: text} of the golden outputs of `lang`."""
    base = os.path.join(GOLDEN, lang)
    found = {}
    for root, _, files in os.walk(base):
        for name in files:
            path = os.path.join(root, name)
            with open(path, encoding="utf-8", newline="") as handle:
                found[os.path.relpath(path, base).replace(os.sep, "/")] = handle.read()
    return found


def differences(golden, found, label):
    """Human-readable differences between two {path: text} maps (empty: the same)."""
    lines = []
    for rel in sorted(set(golden) | set(found)):
        if rel not in found:
            lines.append(f"{label}/{rel}: missing from this run")
        elif rel not in golden:
            lines.append(f"{label}/{rel}: new in this run (not in the golden)")
        elif golden[rel] != found[rel]:
            diff = difflib.unified_diff(golden[rel].splitlines(), found[rel].splitlines(),
                                        f"golden {label}/{rel}", f"now {label}/{rel}",
                                        lineterm="", n=1)
            lines += list(diff)[:40]
    return lines


def entry_differences(golden, found, keys=("status", "total", "max", "parts", "diagnoses")):
    """Differences between validate entries, name by name, on `keys`."""
    lines = []
    for name in sorted(set(golden) | set(found)):
        if name not in found or name not in golden:
            lines.append(f"validate {name}: {'missing from this run' if name not in found else 'new'}")
            continue
        for key in keys:
            if golden[name].get(key) != found[name].get(key):
                lines.append(f"validate {name} {key}: golden {golden[name].get(key)!r}, "
                             f"now {found[name].get(key)!r}")
    return lines


def check(tree):
    """Compare `tree` with every golden, validate in full; the differences."""
    workdir = tempfile.mkdtemp(prefix="attnkit-golden-")
    try:
        lines = []
        for lang in LANGS:
            lines += differences(load_golden(lang),
                                 grade_class(tree, lang, os.path.join(workdir, lang)), lang)
        with open(VALIDATE, encoding="utf-8") as handle:
            golden = json.load(handle)["entries"]
        lines += entry_differences(golden, run_validate(tree, os.path.join(workdir, "v")),
                                   keys=("kind", "ok", "detail", "status", "total", "max",
                                         "parts", "diagnoses"))
        return lines
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tree", default=KIT, help="the checkout whose grader is run")
    parser.add_argument("--check", action="store_true",
                        help="compare with the goldens (validate in full) instead of writing")
    parser.add_argument("--build-class", action="store_true",
                        help="rebuild class/ from the tree's examples and catalog first")
    args = parser.parse_args(argv)
    tree = os.path.abspath(args.tree)
    if args.check:
        lines = check(tree)
        print("\n".join(lines) if lines else "the same as the goldens")
        return 1 if lines else 0
    if args.build_class:
        build_class(tree)
    record(tree)
    return 0


if __name__ == "__main__":
    sys.exit(main())
