#!/usr/bin/env python3
"""Mutation score of the trust-critical modules (a benchmark, not a CI gate).

    python tools/mutants.py [MODULE ...] [--before] [--budget MINUTES] [--sample N]

For each module (default: all of MODULES) the working tree is copied to a temporary folder,
cosmic-ray (pip install -e '.[mutants]') makes one small edit at a time to that module in
the copy (the operators below) and runs the tests that cover it, stopping at the first
failure. A mutant no test notices "survived". Survivors are written to
bench/mutants/<module>.txt (operator, line and diff), and the score per module is printed:
killed / (killed + survived); a mutant that makes the tests run past the time limit counts
as killed (cosmic-ray's rule), one cosmic-ray could not run ("incompetent") counts as
neither.

--before runs the tests that covered each module before the mutant tests were added (the
"before" figure of issue 19; with --commit af97aea, the tree before them); --sample N runs
N mutants drawn at random (seeded, in source order) instead of all; --budget stops a
module after that many minutes and scores what ran.
The copy is made so that other people's test runs in this tree never see a mutant.
"""
import argparse
import json
import os
import random
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

KIT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(KIT, "bench", "mutants")

def edges(path):
    """The node ids of the tests under `path`'s "# ---- at its edges" banner: the mutant tests of
    issue 19, folded into the module's own test file (issue 30)."""
    ids, below = [], False
    with open(os.path.join(KIT, path), encoding="utf-8") as handle:
        for line in handle:
            below = below or line.startswith("# ---- at its edges")
            if below and line.startswith("def test_"):
                ids.append(f"{path}::{line[4:line.index('(')]}")
    return " ".join(ids)


# module -> (path, or a list of paths, tests before issue 19, tests added for it (edges():
# those folded into an older file), [older tests run after them instead of the first]);
# pytest node ids or -k selections, kept to what runs in seconds (the batch-grading tests
# are left out); --before on this tree runs an older file with its folded-in tests: for the
# figure of issue 19 add --commit af97aea
FAST_OUTPUTS = "tests/test_outputs.py -k 'not batch and not grader_grade and not gradebook'"
REPLY_TESTS = ("tests/test_fuzz_replies.py -k 'not arbitrary and not one_part_replaced and "
               "not flipped_bytes and not random_bytes and not stride0_tensors'")
# test_overrides' unit tests (its graded batches take minutes a mutant)
FAST_OVERRIDES = ("tests/test_overrides.py -k 'refusal or named_by or last_action or "
                  "all_or_nothing or exports_send or times_and_flags or said_once or "
                  "report_lists or no_row or no_longer'")
# intake's unit tests (test_intake's real grading run left out) and its Hypothesis fuzz test
FAST_INTAKE = "tests/test_intake.py tests/test_fuzz_intake.py -k 'not in_grading'"
FAST_TIMES = ("tests/test_layouts.py -k 'submission_times or timestamps_read or "
              "nbgrader_timestamp or canvas_late_flag or gradescope_times'")
# the unit tests that build gradebook rows directly (export, gradebook, adjustments); the
# override CLI tests (each runs the command several times, ~8 s) and every graded batch
# (test_gradebook, test_platforms, the layouts' graded exports) are left out
FAST_GRADEBOOK = " ".join(
    [f"tests/test_overrides.py::test_{t}" for t in (
        "each_refusal_says_why", "a_student_is_named_by_id_or_submission_name_and_bonus_needs_a_flag",
        "the_last_action_per_student_and_part_is_in_effect",
        "an_import_is_all_or_nothing_and_a_broken_ledger_is_an_error",
        "exports_send_final_scores_and_leave_missing_work_out_unless_asked",
        "the_layouts_times_and_flags_reach_the_row",
        "the_adjustment_is_said_once_in_the_students_language_and_removed_cleanly",
        "report_lists_lateness_penalties_overrides_flags_and_what_to_review",
        "an_adjustment_keeps_a_full_results_json_valid_and_under_its_cap")]
    + [f"tests/test_outputs.py::test_{t}" for t in (
        "formulas_are_neutralised", "plain_cells_are_left_alone",
        "gradebook_neutralises_text_cells_but_not_scores", "gradebook_is_written_even_with_an_odd_row")]
    + ["tests/test_layouts.py::test_export_leaves_out_grader_errors_and_neutralises_cells",
       "tests/test_layouts.py::test_export_usage_errors",
       "tests/test_layouts_attacks.py::test_one_student_id_in_two_rows_is_never_exported_twice"])
# layouts' unit, attack and Hypothesis tests (test_layouts' graded batch and its exports,
# and test_platforms, which grades a batch per test, left out)
FAST_LAYOUTS = ("tests/test_layouts.py tests/test_layouts_attacks.py tests/test_layouts_property.py "
                "-k 'not grades_csv_names and not junk_are_never_graded and not export'")
MODULES = {
    "textsafety": ("grader/textsafety.py", FAST_OUTPUTS, "tests/test_textsafety.py"),
    "files": ("grader/files.py", FAST_OUTPUTS, "tests/test_files.py"),
    "folders": ("grader/report/folders.py", FAST_OUTPUTS, "tests/test_folders.py"),
    "replies": ("grader/sandbox/replies.py", REPLY_TESTS, "tests/test_replies.py"),
    "compare": ("grader/harness/compare.py", REPLY_TESTS, "tests/test_compare.py"),
    "diagnose": ("grader/catalog/diagnose.py", "tests/test_diagnosis.py",
                 edges("tests/test_diagnosis.py"),
                 # after: test_diagnosis's unit tests only; its graded batch takes minutes
                 # a mutant (so the "after" score leaves out what that batch would kill)
                 "tests/test_diagnosis.py -k 'catalog_is or errors_match or search_narrows'"),
    "course": ("grader/course.py", "tests/test_course.py", edges("tests/test_course.py")),
    "overrides": ("grader/overrides.py", FAST_OVERRIDES, edges("tests/test_overrides.py")),
    # who each file is from: the recognition common to the platforms and each platform's own
    # (issue 30 moved intake/layouts.py there; its exports are in "export")
    "layouts": (["grader/intake/layouts.py", "grader/platforms/base.py",
                 "grader/platforms/recognition.py", "grader/platforms/canvas/__init__.py",
                 "grader/platforms/moodle/__init__.py", "grader/platforms/gradescope/__init__.py",
                 "grader/platforms/gradescope/metadata.py", "grader/platforms/nbgrader.py"],
                FAST_LAYOUTS, edges("tests/test_layouts.py")),
    "intake": ("grader/intake/__init__.py", FAST_INTAKE, edges("tests/test_intake.py")),
    "archive": ("grader/intake/archive.py", FAST_INTAKE, "tests/test_archive.py"),
    "safeio": ("grader/intake/safeio.py", FAST_INTAKE, "tests/test_safeio.py"),
    "text": ("grader/intake/text.py", FAST_INTAKE, "tests/test_text.py"),
    "notebook": ("grader/intake/notebook.py", FAST_INTAKE, "tests/test_notebook.py"),
    "times": ("grader/intake/times.py", FAST_TIMES, "tests/test_times.py"),
    # the score exports (issue 30 moved grader/export.py to the platforms and the command)
    "export": (["grader/platforms/exports.py", "grader/platforms/canvas/scores.py",
                "grader/platforms/moodle/worksheet.py", "grader/commands/export.py"],
               FAST_GRADEBOOK, "tests/test_export.py"),
    "gradebook": ("grader/report/gradebook.py", FAST_GRADEBOOK,
                  edges("tests/test_gradebook.py")),
    "adjustments": ("grader/report/adjustments.py", FAST_GRADEBOOK,
                    "tests/test_adjustments.py"),
}

# Operators: cosmic-ray's, less those that multiply the count without finding anything
# new (every binary operator into every other, every comparison into every other) and the
# random variable replacers. Kept: + - * / // swaps, & |, the boundary of each comparison
# (< <=, > >=, == !=, is / is not), `not` added or removed, True/False, and/or,
# break/continue, numbers +1/-1, exception types, zero-iteration loops, decorators removed.
EXCLUDE = [
    r"core/ReplaceBinaryOperator_(?!(Add_Sub|Sub_Add|Mul_Div|Div_Mul|Add_Mul|Mul_Add|"
    r"FloorDiv_Div|Div_FloorDiv|BitOr_BitAnd|BitAnd_BitOr)$)",
    r"core/ReplaceComparisonOperator_(?!(Lt_LtE|LtE_Lt|Gt_GtE|GtE_Gt|Eq_NotEq|NotEq_Eq|"
    r"Is_IsNot|IsNot_Is)$)",
    r"core/Variable(Replacer|Inserter)",
]


def copy_tree(where, commit=None):
    """The working tree (tracked and untracked files, no .git, no venv, no caches), or the
    files of `commit` (git archive)."""
    if commit:
        os.makedirs(where)
        archive = subprocess.run(["git", "-C", KIT, "archive", commit], check=True,
                                 capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", where], input=archive, check=True)
        return
    skip = shutil.ignore_patterns(".git", ".venv", "__pycache__", "*.pyc", ".hypothesis",
                                  "mutants", "*.egg-info", ".pytest_cache")
    shutil.copytree(KIT, where, ignore=skip, symlinks=True)


def test_command(stages, timeout):
    """One shell command: each stage's pytest run, the next only when the last passed (the
    fast mutant tests first: most mutants die there without the slower tests starting)."""
    runs = [f"{sys.executable} -m pytest -x -q -p no:cacheprovider --timeout {int(timeout)} {tests}"
            for tests in stages]
    return "bash -c " + shlex.quote(" && ".join(runs))


def config_text(path, stages, timeout):
    command = test_command(stages, timeout)
    exclude = ",\n    ".join(json.dumps(e) for e in EXCLUDE)
    return (f'[cosmic-ray]\nmodule-path = {json.dumps(path)}\ntimeout = {timeout}\nexcluded-modules = []\n'
            f'test-command = {json.dumps(command)}\n\n[cosmic-ray.distributor]\nname = "local"\n\n'
            f'[cosmic-ray.filters.operators-filter]\nexclude-operators = [\n    {exclude}\n]\n')


def sample(db_path, keep, seed):
    """Mark all but `keep` random pending mutants as skipped (cosmic-ray's own way)."""
    from cosmic_ray.work_db import WorkDB, use_db
    from cosmic_ray.work_item import WorkerOutcome, WorkResult
    with use_db(db_path, WorkDB.Mode.open) as db:
        # in source order (job ids are random), so one seed draws the same mutants each run
        items = sorted(db.pending_work_items, key=lambda item: (
            item.mutations[0].start_pos, item.mutations[0].operator_name,
            item.mutations[0].occurrence))
        pending = [item.job_id for item in items]
        random.Random(seed).shuffle(pending)
        drop = pending[keep:]
        if drop:
            db.set_multiple_results(drop, WorkResult(worker_outcome=WorkerOutcome.SKIPPED))


def tally(db_path):
    from cosmic_ray.work_db import WorkDB, use_db
    from cosmic_ray.work_item import TestOutcome, WorkerOutcome
    counts = {"killed": 0, "survived": 0, "incompetent": 0, "skipped": 0, "not run": 0}
    survivors = []
    with use_db(db_path, WorkDB.Mode.open) as db:
        for item, result in db.completed_work_items:
            if result.worker_outcome == WorkerOutcome.SKIPPED:
                counts["skipped"] += 1
            elif result.worker_outcome == WorkerOutcome.NORMAL:
                if result.test_outcome == TestOutcome.SURVIVED:
                    counts["survived"] += 1
                    survivors.append((item, result))
                elif result.test_outcome == TestOutcome.INCOMPETENT:
                    counts["incompetent"] += 1
                else:
                    counts["killed"] += 1
            elif result.worker_outcome == WorkerOutcome.ABNORMAL:  # timed out
                counts["killed"] += 1
            else:
                counts["incompetent"] += 1
        counts["not run"] = db.num_work_items - db.num_results
    return counts, survivors


def run_module(name, before, budget, keep, seed, commit=None):
    path, tests_before, tests_added, *also = MODULES[name]
    stages = [tests_before] if before else [tests_added, *(also or [tests_before])]
    tests = " && ".join(stages)
    work = tempfile.mkdtemp(prefix=f"attnkit-mutants-{name}-")
    try:
        copy_tree(os.path.join(work, "kit"), commit)
        kit = os.path.join(work, "kit")
        env = dict(os.environ, PYTHONPATH=kit, PYTHONDONTWRITEBYTECODE="1")
        started = time.monotonic()
        baseline = subprocess.run(shlex.split(test_command(stages, 600)), cwd=kit, env=env,
                                  capture_output=True, text=True)
        base_seconds = time.monotonic() - started
        if baseline.returncode != 0:
            print(f"{name}: the unmutated tests fail; no score\n{baseline.stdout[-2000:]}")
            return None
        with open(os.path.join(work, "cr.toml"), "w") as handle:
            handle.write(config_text(path, stages, max(30, round(base_seconds * 4))))
        cr = [sys.executable, "-m", "cosmic_ray.cli"]
        db = os.path.join(work, "session.sqlite")
        cfg = os.path.join(work, "cr.toml")
        subprocess.run(cr + ["init", cfg, db], cwd=kit, env=env, check=True)
        subprocess.run([sys.executable, "-m", "cosmic_ray.tools.filters.operators_filter", db, cfg],
                       cwd=kit, env=env, check=True)
        if keep:
            sample(db, keep, seed)
        started = time.monotonic()
        try:
            subprocess.run(cr + ["exec", cfg, db], cwd=kit, env=env, check=True,
                           timeout=budget * 60 if budget else None)
        except subprocess.TimeoutExpired:
            print(f"{name}: budget of {budget} minutes spent; scoring what ran")
        seconds = time.monotonic() - started
        counts, survivors = tally(db)
        write_survivors(name, path, tests, counts, survivors, seconds, before)
        scored = counts["killed"] + counts["survived"]
        score = counts["killed"] / scored if scored else float("nan")
        print(f"{name:11s} {'before' if before else 'after '} {score:7.1%} killed "
              f"({counts['killed']} of {scored}; {counts['incompetent']} incompetent, "
              f"{counts['not run']} not run, {counts['skipped']} skipped/sampled out) "
              f"in {seconds / 60:.1f} min; one test run {base_seconds:.1f} s", flush=True)
        return score
    finally:
        shutil.rmtree(work, ignore_errors=True)


def write_survivors(name, path, tests, counts, survivors, seconds, before):
    os.makedirs(OUT, exist_ok=True)
    lines = [f"# {path}: {'before' if before else 'after'}; tests: {tests}",
             f"# {json.dumps(counts)}; {seconds / 60:.1f} min", ""]
    for item, result in sorted(survivors, key=lambda p: p[0].mutations[0].start_pos):
        mutation = item.mutations[0]
        lines.append(f"## line {mutation.start_pos[0]}: {mutation.operator_name} "
                     f"(occurrence {mutation.occurrence})")
        lines.append((result.diff or "").strip())
        lines.append("")
    suffix = "-before" if before else ""
    with open(os.path.join(OUT, f"{name}{suffix}.txt"), "w", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("modules", nargs="*", metavar="MODULE", help=", ".join(MODULES))
    parser.add_argument("--before", action="store_true", help="the tests before issue 19 only")
    parser.add_argument("--budget", type=float, default=20, help="minutes per module (20)")
    parser.add_argument("--sample", type=int, default=0, help="run N random mutants only")
    parser.add_argument("--seed", type=int, default=19)
    parser.add_argument("--commit", help="score this commit's files, not the working tree")
    args = parser.parse_args(argv)
    unknown = set(args.modules) - set(MODULES)
    if unknown:
        parser.error(f"unknown module(s) {', '.join(sorted(unknown))}; known: {', '.join(MODULES)}")
    for name in args.modules or list(MODULES):
        run_module(name, args.before, args.budget, args.sample, args.seed, args.commit)


if __name__ == "__main__":
    main()
