"""Disguised copies against independent pairs: `grader similarity`'s comparison and Dolos's.

    python bench/similarity.py [--no-dolos] [--json OUT.json] [--only NAME,...]

For each disguise and each combination of two and three (tests/similarity_disguises.py),
every original below is disguised and compared with itself (a copy: it should be flagged)
and with every other original of its assignment (independent: it should not be). Then the
independent pairs as they are: every two of the originals and of the catalog's mistakes
(tests_hidden/*/mistakes.py applied to the solution) of one assignment.

Originals: the independent implementations of tests/similarity/ (not the copies of wei and
ana), the alternatives of tests_hidden/*/alternatives/ (those the base code does not hold)
and examples/ (variants of one file by the kit's authors: compared with the others, never
with each other). The base code is the assignment's (grader/similarity/base.py), removed
by both tools (Dolos: as its one "ignore" template, the base files concatenated).

Both tools see the same files. This kit: `grader similarity`'s own code (normalised,
copydetect, one piece at a time; flagged at score >= 0.5 and 200 shared characters).
Dolos (@dodona/dolos-lib 3.5.1, tree-sitter tokens, k-grams of 23 tokens, windows of 17,
its defaults): its pair similarity, flagged here at >= 0.5, and its range is printed so
that any threshold can be read off. Dolos needs node and `npm install` in bench/dolos/
(see bench/README.md); --no-dolos measures this kit alone.

A benchmark, not a test: the figures in docs/how-to/similarity.md came from it; tests/
test_similarity_disguises.py asserts one pair per disguise.
"""
import argparse
import ast
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))

import similarity_disguises as disguises  # noqa: E402
from grader import assignment as assignments  # noqa: E402
from grader import intake  # noqa: E402
from grader.catalog.mistakes import Catalog  # noqa: E402
from grader.similarity import MIN_SHARED, DEFAULT_THRESHOLD, base, code, compare, fingerprint  # noqa: E402

SET = os.path.join(ROOT, "tests", "similarity")
EXAMPLES = os.path.join(ROOT, "examples")
DOLOS = os.path.join(ROOT, "bench", "dolos")
COPIES_IN_SET = {"tom_renamed", "uma_reordered", "li_comments_zh", "finn_formatted",
                 "nora_notebook", "gus_padded", "ben_mixed"}
BOOK_FOLLOWERS = {"liu_book", "zhang_book", "he_skeleton_book", "xu_skeleton_book"}
DOLOS_THRESHOLD = 0.5


def _staged_text(path):
    """A submission's code as intake stages it (a notebook's cells one after another)."""
    name = os.path.splitext(os.path.basename(path))[0]
    folder = tempfile.mkdtemp(prefix="bench-similarity-")
    kept = code.staged_code(intake.stage(path, os.path.join(folder, "staged"), name))
    return code.code_of(kept.text, kept.cells).text


def originals():
    """{assignment name: {"api", "base", "items": {name: (text, group)}, "mistakes": {...}}}"""
    found = {}
    for name in ("attention", "transformer"):
        declared = assignments.load(name)
        base_labels = {os.path.realpath(p) for p in base.base_files(declared)}
        items = {}
        if name == "attention":
            for entry in sorted(os.listdir(SET)):
                stem = os.path.splitext(entry)[0]
                if stem not in COPIES_IN_SET:
                    items[stem] = (_staged_text(os.path.join(SET, entry)),
                                   "book" if stem in BOOK_FOLLOWERS else "independent")
            for entry in sorted(os.listdir(EXAMPLES)):
                items["example-" + os.path.splitext(entry)[0]] = (
                    _staged_text(os.path.join(EXAMPLES, entry)), "example")
        for entry in sorted(os.listdir(declared.alternatives)):
            path = os.path.join(declared.alternatives, entry)
            if entry.endswith(".py") and os.path.realpath(path) not in base_labels:
                with open(path, encoding="utf-8") as handle:
                    items["alt-" + entry[:-3]] = (handle.read(), "alternative")
        with open(declared.solution, encoding="utf-8") as handle:
            solution = handle.read()
        mistakes = {}
        for mistake in Catalog.of(declared):
            try:
                mistakes["mistake-" + mistake.id] = mistake.apply(solution)
            except Exception as error:  # noqa: BLE001 - a catalog entry the bench cannot apply
                print(f"  (mistake {mistake.id} not applied: {error})", file=sys.stderr)
        found[name] = {"api": declared.api, "base": [t for _, t in base.base_texts(declared)],
                       "items": items, "mistakes": mistakes}
    return found


def ours(pairs_wanted, texts, base_hashes):
    """{(a, b): (score, shared, flagged)} of this kit for the wanted pairs."""
    prints = {name: fingerprint.Fingerprint(text, base_hashes) for name, text in texts.items()}
    result = {}
    for a, b in pairs_wanted:
        pair = compare.compare(a, b, prints[a], prints[b], DEFAULT_THRESHOLD)
        result[(a, b)] = (pair.score, pair.shared, pair.flagged)
    return result, prints


def dolos(texts, base_texts, folder):
    """{(a, b) and (b, a): similarity} of Dolos on `texts` ({name: source})."""
    os.makedirs(folder, exist_ok=True)
    files = []
    for index, (name, text) in enumerate(sorted(texts.items())):
        path = os.path.join(folder, f"f{index:04d}.py")
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
        files.append([name, path])
    ignore = os.path.join(folder, "base.py")
    with open(ignore, "w", encoding="utf-8") as handle:
        handle.write("\n\n".join(base_texts))
    done = subprocess.run(["node", os.path.join(DOLOS, "dolos_pairs.mjs")], cwd=DOLOS,
                          input=json.dumps({"files": files, "ignore": ignore}),
                          capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-2000:])
    out = {}
    for line in done.stdout.splitlines():
        a, b, similarity = json.loads(line)[:3]
        out[(a, b)] = out[(b, a)] = similarity
    return out


def normal_parse(text):
    try:
        return ast.parse(text)
    except SyntaxError:
        return None


def _range(values):
    return f"{min(values):.2f}-{max(values):.2f}" if values else "-"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--no-dolos", action="store_true")
    parser.add_argument("--json", help="write every figure to this file")
    parser.add_argument("--only", help="comma-separated combinations (a+b) to run")
    args = parser.parse_args(argv)
    use_dolos = not args.no_dolos
    started = time.perf_counter()
    sets = originals()
    combos = disguises.COMBINATIONS
    if args.only:
        combos = [tuple(c.split("+")) for c in args.only.split(",")]
    results = {"copies": {}, "independent": {}}
    work = tempfile.mkdtemp(prefix="bench-similarity-dolos-")
    hashes = {name: fingerprint.base_hashes(data["base"]) for name, data in sets.items()}
    own = {}
    for name, data in sets.items():   # which originals have enough code of their own
        _, prints = ours([], {k: t for k, (t, _) in data["items"].items()}, hashes[name])
        # own code: normalised characters left after the base
        own.update({(name, k): p.token_coverage for k, p in prints.items()})
    print("own code (normalised characters beyond the base):",
          ", ".join(f"{k}: {int(v)}" for (_, k), v in sorted(own.items())))

    # independent pairs as they are
    for name, data in sets.items():
        texts = {k: t for k, (t, _) in data["items"].items()} | data["mistakes"]
        group = {k: g for k, (_, g) in data["items"].items()} | {k: "mistake" for k in data["mistakes"]}
        wanted = [(a, b) for i, a in enumerate(sorted(texts)) for b in sorted(texts)[i + 1:]
                  if not (group[a] == group[b] == "example")]
        mine, _ = ours(wanted, texts, hashes[name])
        theirs = dolos(texts, data["base"], os.path.join(work, f"independent-{name}")) \
            if use_dolos else {}
        results["independent"][name] = {
            "pairs": len(wanted),
            "ours_flagged": sorted(f"{a}|{b}" for (a, b), v in mine.items() if v[2]),
            "ours_max": max(v[0] for v in mine.values()),
            "ours_max_shared": max(v[1] for v in mine.values()),
            # the margins of the rule: a pair is flagged only with both
            "ours_max_score_sharing_floor": max((v[0] for v in mine.values() if v[1] >= MIN_SHARED),
                                                default=0.0),
            "ours_max_shared_above_threshold": max((v[1] for v in mine.values()
                                                    if v[0] >= DEFAULT_THRESHOLD), default=0),
            "ours_top": sorted(((v[0], v[1], f"{a}|{b}") for (a, b), v in mine.items()),
                               reverse=True)[:5],
            "dolos_max": max((theirs[p] for p in wanted), default=None),
            "dolos_flagged": sorted(f"{a}|{b}" for a, b in wanted
                                    if theirs.get((a, b), 0) >= DOLOS_THRESHOLD),
            "dolos_top": sorted(((theirs[(a, b)], f"{a}|{b}") for a, b in wanted
                                 if (a, b) in theirs), reverse=True)[:5]}
        print(f"independent pairs, {name}: {len(wanted)}; this kit: "
              f"{len(results['independent'][name]['ours_flagged'])} flagged, highest "
              f"{results['independent'][name]['ours_max']:.2f} (up to "
              f"{results['independent'][name]['ours_max_shared']} shared; highest score of those "
              f"sharing {MIN_SHARED}+: {results['independent'][name]['ours_max_score_sharing_floor']:.2f}, "
              f"most shared of those scoring {DEFAULT_THRESHOLD}+: "
              f"{results['independent'][name]['ours_max_shared_above_threshold']}); Dolos: "
              + (f"{len(results['independent'][name]['dolos_flagged'])} at >= {DOLOS_THRESHOLD}, "
                 f"highest {results['independent'][name]['dolos_max']:.2f}" if use_dolos else "not run"),
              flush=True)

    # disguised copies
    for combo in combos:
        label = "+".join(combo)
        row = {"ours_copy": [], "ours_copy_shared": [], "ours_flagged": 0, "copies": 0,
               "ours_independent_max": 0.0, "ours_independent_flagged": 0, "independent": 0,
               "ours_independent_max_sharing_floor": 0.0,
               "ours_independent_max_shared_above_threshold": 0,
               "dolos_copy": [], "dolos_flagged": 0, "dolos_independent_max": 0.0,
               "dolos_independent_flagged": 0, "unchanged": [], "under_floor": []}
        for name, data in sets.items():
            texts, disguised = {}, {}
            for key, (text, group) in data["items"].items():
                texts[key] = text
                if normal_parse(text) is None:
                    row["unchanged"].append(key)   # a syntax error: no disguise applies
                    continue
                changed = disguises.apply(text, combo, data["api"])
                if ast.dump(ast.parse(changed)) == ast.dump(ast.parse(text)) and \
                        changed.strip() == text.strip():
                    row["unchanged"].append(key)
                    continue
                disguised["copy-" + key] = changed
            both = texts | disguised
            copies = [(k[5:], k) for k in disguised]
            counted = [(a, b) for a, b in copies if own[(name, a)] >= MIN_SHARED]
            row["under_floor"] += [a for a, _ in copies if own[(name, a)] < MIN_SHARED]
            independents = [(c, o) for c in disguised for o in texts
                            if o != c[5:] and own[(name, c[5:])] >= MIN_SHARED
                            and not (data["items"][o][1] == data["items"][c[5:]][1] == "example")]
            mine, _ = ours(counted + independents, both, hashes[name])
            for pair in counted:
                score, shared, flagged = mine[pair]
                row["ours_copy"].append(score)
                row["ours_copy_shared"].append(shared)
                row["ours_flagged"] += flagged
                row["copies"] += 1
            for pair in independents:
                row["ours_independent_max"] = max(row["ours_independent_max"], mine[pair][0])
                if mine[pair][1] >= MIN_SHARED:
                    row["ours_independent_max_sharing_floor"] = max(
                        row["ours_independent_max_sharing_floor"], mine[pair][0])
                if mine[pair][0] >= DEFAULT_THRESHOLD:
                    row["ours_independent_max_shared_above_threshold"] = max(
                        row["ours_independent_max_shared_above_threshold"], mine[pair][1])
                row["ours_independent_flagged"] += mine[pair][2]
                row["independent"] += 1
            if use_dolos:
                theirs = dolos(both, data["base"], os.path.join(work, f"{label}-{name}"))
                for pair in counted:
                    row["dolos_copy"].append(theirs[pair])
                    row["dolos_flagged"] += theirs[pair] >= DOLOS_THRESHOLD
                for pair in independents:
                    row["dolos_independent_max"] = max(row["dolos_independent_max"], theirs[pair])
                    row["dolos_independent_flagged"] += theirs[pair] >= DOLOS_THRESHOLD
        results["copies"][label] = row
        print(f"{label:<36} copies {row['ours_flagged']}/{row['copies']} flagged "
              f"({_range(row['ours_copy'])}, shared >= {min(row['ours_copy_shared'], default=0)}), "
              f"independent {row['ours_independent_flagged']}/{row['independent']} "
              f"(<= {row['ours_independent_max']:.2f}; sharing {MIN_SHARED}+: <= "
              f"{row['ours_independent_max_sharing_floor']:.2f}; scoring {DEFAULT_THRESHOLD}+: "
              f"<= {row['ours_independent_max_shared_above_threshold']} shared)"
              + (f" | Dolos copies {row['dolos_flagged']}/{row['copies']} "
                 f"({_range(row['dolos_copy'])}), independent "
                 f"{row['dolos_independent_flagged']}/{row['independent']} "
                 f"(<= {row['dolos_independent_max']:.2f})" if use_dolos else "")
              + (f" | unchanged: {len(row['unchanged'])}" if row["unchanged"] else ""),
              flush=True)
    print(f"{time.perf_counter() - started:.0f} s")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(results, handle, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
