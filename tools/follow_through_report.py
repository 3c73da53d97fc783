"""Issue 26's figures, measured on any checkout of the kit (this one, or an older one for
"before"): what callee mistakes cost their callers, and which causal sentences are untrue.

    python tools/follow_through_report.py [--kit PATH] [--jobs 2] [--out DIR]

Grades, with `python -m grader grade` run from --kit (default: this checkout), the callee
mistakes in no catalog that tests/test_follow_through.py writes (attention and transformer),
the earlier module's mistakes the student provides (the transformer with provide =
"student", in a copy of --kit), and the real-style files of that test, then prints:

- the points the callers' parts lost to callee mistakes outside the catalog (0 is the aim);
- the encoder block's points lost to mistakes in the student's own attention.py;
- of the causal sentences (error carried forward's, and diagnoses that name a mistake in a
  called function): how many name a function the file does not define, or whose caller's
  code never reaches it; how many print a fill value that is no round number the code could
  have used; how many name one mistake in two parts; how many give a count of failing cases
  other than the part's.
"""
import argparse
import ast
import csv
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _helpers():
    sys.path.insert(0, os.path.join(HERE, "tests"))
    sys.path.insert(0, HERE)
    spec = importlib.util.spec_from_file_location(
        "attnkit_follow_through", os.path.join(HERE, "tests", "test_follow_through.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _grade(kit, paths, out, assignment, jobs):
    done = subprocess.run([sys.executable, "-m", "grader", "grade", "--assignment", assignment,
                           *paths, "--out", out, "--jobs", str(jobs)], cwd=kit,
                          env=dict(os.environ, PYTHONPATH=kit), capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(done.stdout[-2000:] + done.stderr[-2000:])
    with open(os.path.join(out, "grades.csv"), encoding="utf-8-sig") as handle:
        return {row["submission"]: row for row in csv.DictReader(handle)}


def _write(folder, named):
    os.makedirs(folder, exist_ok=True)
    paths = []
    for name, text in named.items():
        path = os.path.join(folder, f"{name}.py")
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
        paths.append(path)
    return paths


def _score(row, part):
    return float(next(v for k, v in row.items() if k.startswith(part + " (")))


def _results(out, row):
    with open(os.path.join(out, row.get("folder") or row["submission"], "results.json"),
              encoding="utf-8") as handle:
        return json.load(handle)


def sentences(helpers, out, rows, sources, only_callee):
    """The untrue-sentence counts over the graded rows, read as a student reads them
    (feedback.txt and results.json). only_callee: the rows whose every mistake is in a
    function others call (their callers' code is the solution's)."""
    counts = {"claims": 0, "not defined": 0, "not reached": 0, "own mistake untrue": 0,
              "invented fill": 0, "double diagnosis": 0, "count mismatch": 0}
    for name, row in rows.items():
        data = _results(out, row)
        with open(os.path.join(out, row.get("folder") or name, "feedback.txt"),
                  encoding="utf-8") as handle:
            text = handle.read()
        reach = helpers._defs(sources[name])
        claims = []
        for test in data["tests"]:
            carried = test.get("carried_forward") or {}
            claims += [(c, carried.get("target")) for c in carried.get("in") or []]
        for found in re.finditer(r"call (\w+), which failed cases of its own part that no "
                                 r"catalog mistake explains.*?fix \1", text, re.S):
            claims.append((found[1], None))
        for found in re.finditer(r"fail(?:ed)? (?:and do not give what a correct (\w+) gives on "
                                 r"top of the mistakes? in (\w+)|even with (\w+) answering "
                                 r"correctly, so (\w+))", text):
            caller, callee = (found[1], found[2]) if found[1] else (found[4], found[3])
            claims.append((callee, caller))
            if name in only_callee:
                counts["own mistake untrue"] += 1
        diagnoses = data["extra_data"].get("diagnoses") or []
        for entry in diagnoses:
            found = re.match(r"in (\w+), which (\w+) calls: ", entry.get("text") or "")
            if found:
                claims.append((found[1], found[2]))
            for value in re.findall(r"set to (-?[0-9.e+-]+),", entry.get("text") or ""):
                if "e-" in value:
                    counts["invented fill"] += 1
            count = re.search(r"in (\d+) of the (\d+) failing cases of this part", entry["text"])
            if count:
                failing = sum(1 for t in data["tests"] if t.get("tags") == [entry["part"]]
                              and t["score"] < t["max_score"])
                if int(count[2]) != failing:
                    counts["count mismatch"] += 1
        named = [d.get("mistake") for d in diagnoses if d.get("mistake")]
        counts["double diagnosis"] += len(named) - len(set(named))
        for callee, caller in claims:
            counts["claims"] += 1
            if callee not in reach:
                counts["not defined"] += 1
            elif caller and callee not in reach.get(caller, ()):
                counts["not reached"] += 1
    return counts


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kit", default=HERE)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    kit = os.path.abspath(args.kit)
    out = args.out or tempfile.mkdtemp(prefix="follow-through-")
    helpers = _helpers()

    # attention: callee mistakes in no catalog, and the real-style files
    named = {n: helpers.edited(helpers.SOLUTION, *e) for n, (_f, _k, e) in
             helpers.UNCATALOGUED.items()}
    styles = helpers.real_style()
    rows = _grade(kit, _write(os.path.join(out, "a"), {**named, **styles}),
                  os.path.join(out, "a-out"), "attention", args.jobs)
    lost = 0
    for name, (function, _kind, _edits) in helpers.UNCATALOGUED.items():
        own = helpers.ATTENTION.part_of(function)
        lost += sum(top - _score(rows[name], p) for p, top in helpers.MAX.items()
                    if p not in (own, "GPU"))
    print(f"attention: {len(named)} callee mistakes in no catalog; their callers' parts lost "
          f"{lost:g} points")
    t_named = {n: helpers.edited(helpers.T_SOLUTION, *e) for n, (_f, _k, e) in
               helpers.T_UNCATALOGUED.items()}
    t_rows = _grade(kit, _write(os.path.join(out, "t"), t_named), os.path.join(out, "t-out"),
                    "transformer", args.jobs)
    t_lost = sum(36 - _score(t_rows[n], "TransformerEncoderBlock") for n in t_named)
    print(f"transformer: {len(t_named)} callee mistakes in no catalog; the encoder block lost "
          f"{t_lost:g} points")

    # the earlier module the student provides
    copy = os.path.join(out, "kit")
    for part in ("grader", "tests_hidden", "solutions"):
        shutil.copytree(os.path.join(kit, part), os.path.join(copy, part),
                        ignore=shutil.ignore_patterns("__pycache__"))
    toml = os.path.join(copy, "tests_hidden", "transformer", "assignment.toml")
    with open(toml, encoding="utf-8") as handle:
        text = handle.read()
    with open(toml, "w", encoding="utf-8") as handle:
        handle.write(text.replace('provide = "given"', 'provide = "student"'))
    earlier = {m: helpers.with_mistakes(helpers.SOLUTION, helpers.CATALOG, m)
               for m in helpers.EARLIER_MISTAKES}
    earlier.update(helpers.EARLIER_UNCATALOGUED)
    folders = []
    for name, attention in earlier.items():
        folder = os.path.join(out, "e", name)
        os.makedirs(folder)
        _write(folder, {"attention": attention, "transformer": helpers.T_SOLUTION})
        folders.append(folder)
    e_rows = _grade(copy, folders, os.path.join(out, "e-out"), "transformer", args.jobs)
    cut = [n for n, r in e_rows.items() if _score(r, "TransformerEncoderBlock") < 36]
    print(f"provide = \"student\": {len(earlier)} mistakes in the student's attention.py "
          f"({len(helpers.EARLIER_MISTAKES)} of the catalog); the encoder block lost points "
          f"for {len(cut)}, {sum(36 - _score(e_rows[n], 'TransformerEncoderBlock') for n in cut):g}"
          f" points in all")

    sources = {**named, **styles}
    counts = sentences(helpers, os.path.join(out, "a-out"), rows, sources, set(named))
    t_counts = sentences(helpers, os.path.join(out, "t-out"), t_rows, t_named, set(t_named))
    print("causal sentences over the attention files: " +
          ", ".join(f"{k} {v}" for k, v in counts.items()))
    print("causal sentences over the transformer files: " +
          ", ".join(f"{k} {v}" for k, v in t_counts.items()))
    print(f"(graded in {out})")


if __name__ == "__main__":
    main()
