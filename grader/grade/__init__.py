"""`grader grade`: grade a batch of submissions against the hidden suite.

For each submission: intake stages a plain attention.py; a trusted process runs the hidden
suite, reaching the submission only through its sandboxed worker; the outcomes become
DIR/<name>/results.json (Gradescope's format), DIR/<name>/feedback.txt, and a row of
DIR/grades.csv. A broken submission gets a row and a reason; a failure of the grader is
reported as a grader error, never as a zero.
"""
import concurrent.futures
import dataclasses
import json
import os
import shutil
import tempfile
import time
import traceback

from .. import intake
from ..report.console import Table
from ..sandbox import isolation
from ..report.feedback import feedback_text
from ..report.gradebook import write_gradebook
from ..report.gradescope import results_json
from . import outcome, trusted
from .trusted import SuiteFailed, SuiteOptions

__all__ = ["SuiteFailed", "SuiteOptions", "grade_batch", "grade_one"]


def grade_one(path, name, catalog, options, workdir, zygote=None):
    """Stage and grade one submission; always returns a SubmissionResult."""
    started = time.monotonic()
    stage_root = tempfile.mkdtemp(prefix=f"{_safe(name)}-", dir=workdir)
    os.chmod(stage_root, 0o711)
    try:
        staged = intake.stage(path, os.path.join(stage_root, "staged"), name)
        if staged.error:
            tests = outcome.from_catalog(catalog, "failed", f"Not graded: {staged.error}")
            return outcome.SubmissionResult(name, path, tests, staged.notes,
                                            intake_error=staged.error,
                                            seconds=time.monotonic() - started)
        os.chmod(os.path.join(stage_root, "staged"), 0o755)
        workers = os.path.join(stage_root, "workers")
        os.makedirs(workers)
        os.chmod(workers, 0o711)
        try:
            report = trusted.run_suite(options, staged.file, workers, zygote)
        except SuiteFailed as failure:
            tests = outcome.from_catalog(catalog, "grader-error", "Not graded: the grader failed.")
            return outcome.SubmissionResult(name, path, tests, staged.notes,
                                            grader_error=str(failure),
                                            seconds=time.monotonic() - started)
        result = outcome.SubmissionResult(
            name, path, outcome.from_suite(report, catalog), staged.notes,
            isolation=report.get("isolation"), summary=report.get("submission"),
            seconds=time.monotonic() - started)
        if report.get("errors"):
            result.grader_error = "; ".join(report["errors"])[:2000]
        result.console = report.get("console", "")
        return result
    finally:
        shutil.rmtree(stage_root, ignore_errors=True)


def _safe(name):
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)[:40] or "submission"


def write_result(result, out_dir):
    folder = os.path.join(out_dir, result.name)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "results.json"), "w", encoding="utf-8") as handle:
        json.dump(results_json(result), handle, indent=2, ensure_ascii=False)
    with open(os.path.join(folder, "feedback.txt"), "w", encoding="utf-8") as handle:
        handle.write(feedback_text(result))
    log = os.path.join(folder, "grader-errors.log")
    problems = [f"{t.name}:\n{t.grader_traceback}" for t in result.grader_failures]
    if result.grader_error:
        problems.insert(0, result.grader_error)
    if problems:
        with open(log, "w", encoding="utf-8") as handle:
            handle.write("\n\n".join(problems) + "\n\n" + getattr(result, "console", ""))
    elif os.path.exists(log):
        os.remove(log)


def grade_batch(paths, out_dir, options=SuiteOptions(), jobs=1, stream=None):
    """Grade every submission in `paths`; returns the SubmissionResults in input order."""
    os.makedirs(out_dir, exist_ok=True)
    # probe the isolation level once here, not again in every trusted process
    options = dataclasses.replace(options, isolation=isolation.choose(options.isolation).level)
    zygote = trusted.start_zygote()
    try:
        return _grade_batch(paths, out_dir, options, jobs, stream, zygote)
    finally:
        if zygote is not None:
            zygote.close()


def _grade_batch(paths, out_dir, options, jobs, stream, zygote):
    catalog = trusted.catalog(options, zygote)
    parts = list(dict.fromkeys(t["part"] for t in catalog))
    names = intake.submission_names(paths)
    table = Table(parts, len(paths), **({"stream": stream} if stream else {}))
    table.header()
    results = [None] * len(paths)
    workdir = tempfile.mkdtemp(prefix="attnkit-grade-")
    os.chmod(workdir, 0o711)
    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            futures = {pool.submit(grade_one, path, name, catalog, options, workdir, zygote): i
                       for i, (path, name) in enumerate(zip(paths, names))}
            for future in concurrent.futures.as_completed(futures):
                index = futures[future]
                try:
                    result = future.result()
                except Exception:  # a bug of ours: reported as such, and the batch goes on
                    tests = outcome.from_catalog(catalog, "grader-error", "Not graded: the grader failed.")
                    result = outcome.SubmissionResult(names[index], paths[index], tests,
                                                      grader_error=traceback.format_exc()[-4000:])
                results[index] = result
                write_result(result, out_dir)
                table.row(result)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    write_gradebook(results, parts, os.path.join(out_dir, "grades.csv"))
    return results
