"""`grader grade`: grade a batch of submissions against the hidden suite.

For each submission: intake stages the assignment's plain module file; a trusted process
runs the hidden suite (grader/suite/, over the assignment's table), reaching the submission
only through its sandboxed worker; the outcomes become DIR/<folder>/results.json
(Gradescope's format), DIR/<folder>/feedback.txt, and a row of DIR/grades.csv. A broken submission gets a row and a reason; a failure of the grader is
reported as a grader error, never as a zero.

grades.csv's total is the final score: each kept row as graded, then the instructor's
overrides (DIR/overrides.json) and the course's late policy (DIR/course.toml or --course),
applied whenever the gradebook is built (report/rebuild.py), never stored into a row.

<folder> is the submission's name made safe and unique (report/folders.py): the name itself
for ordinary names. Every file is written atomically and capped (grader/files.py); a
failure to write one submission's files is that row's grader error, and grades.csv is
written whatever happened to the rows.
"""
import concurrent.futures
import dataclasses
import os
import shutil
import tempfile
import time
import traceback

from .. import assignment as assignments
from .. import course as courses
from .. import intake
from .. import overrides as ledger
from .. import shards
from ..i18n import _
from ..intake import layouts
from ..report.console import Table
from ..sandbox import isolation
from .. import files
from ..report import folders
from ..similarity import code as kept_code
from ..report.feedback import feedback_text
from ..report import gradebook
from ..report import html as pages
from ..report.gradescope import results_text
from ..report.rebuild import rebuild
from ..textsafety import safe_text
from . import fingerprint, outcome, trusted
from .trusted import SuiteFailed, SuiteOptions

DEFAULT_DISCLOSURE = {"feedback": "full", "visibility": "visible"}

__all__ = ["BatchInterrupted", "SuiteFailed", "SuiteOptions", "grade_batch", "grade_one"]


def grade_one(path, name, catalog, options, workdir, zygote=None, suite=None, previous=None,
              companions=()):
    """Stage and grade one submission; always returns a SubmissionResult.

    suite: the suite's fingerprint; previous: the fingerprint of this submission's row in
    the gradebook. When what was staged has the same fingerprint, nothing is graded and
    the result says `unchanged` (its row is kept)."""
    started = time.monotonic()
    stage_root = tempfile.mkdtemp(prefix=f"{folders.candidate(name)[:40]}-", dir=workdir)
    os.chmod(stage_root, 0o711)
    try:
        staged = intake.stage(path, os.path.join(stage_root, "staged"), name,
                              module=options.assignment.module,
                              earlier=student_provided(options.assignment),
                              companions=companions)
        code = kept_code.staged_code(staged)  # kept in the gradebook for `grader similarity`
        mark = fingerprint.submission_fingerprint(suite, staged) if suite else None
        if mark is not None and mark == previous:
            return kept_code.attach(outcome.SubmissionResult(
                name, path, [], unchanged=True, fingerprint=mark,
                seconds=time.monotonic() - started), code)
        result = kept_code.attach(_grade_staged(staged, name, path, catalog, options, stage_root,
                                                zygote, started), code)
        # a grader error is never kept: the next run grades it again
        result.fingerprint = mark if result.status != "grader error" else None
        result.carry_forward = options.carry_forward  # the policy its row was graded with
        return result
    finally:
        shutil.rmtree(stage_root, ignore_errors=True)


def student_provided(assignment):
    """The module names of the earlier assignments a student hands in with this one
    (`builds_on` with provide = "student"); () when it builds on none (or they cannot be
    loaded: the worker then says why, as it does for every submission)."""
    try:
        return tuple(assignment.provided_by_student().values())
    except (ValueError, OSError):
        return ()


def _grade_staged(staged, name, path, catalog, options, stage_root, zygote, started):
    """Grade what intake staged (or record why it could not be): a SubmissionResult."""
    if staged.error and getattr(staged, "grader_failed", False):   # intake's own failure
        tests = outcome.from_catalog(catalog, "grader-error", _("Not graded: the grader failed."))
        return outcome.SubmissionResult(name, path, tests, staged.notes,
                                        grader_error=f"intake failed: {staged.error}",
                                        seconds=time.monotonic() - started)
    if staged.error:
        tests = outcome.from_catalog(catalog, "failed", _("Not graded: {reason}").format(reason=staged.error))
        return outcome.SubmissionResult(name, path, tests, staged.notes,
                                        intake_error=staged.error,
                                        missing_work=getattr(staged, "missing", False),
                                        seconds=time.monotonic() - started)
    os.chmod(os.path.join(stage_root, "staged"), 0o755)
    workers = os.path.join(stage_root, "workers")
    os.makedirs(workers)
    os.chmod(workers, 0o711)
    try:
        report = trusted.run_suite(options, staged.file, workers, zygote, tests=catalog)
    except SuiteFailed as failure:
        tests = outcome.from_catalog(catalog, "grader-error", _("Not graded: the grader failed."))
        return outcome.SubmissionResult(name, path, tests, staged.notes,
                                        grader_error=str(failure),
                                        seconds=time.monotonic() - started)
    result = outcome.SubmissionResult(
        name, path, outcome.from_suite(report, catalog, options.assignment), staged.notes,
        isolation=report.get("isolation"), summary=report.get("submission"),
        seconds=time.monotonic() - started, diagnoses=outcome.diagnoses_from(report),
        case_results=outcome.case_results_from(report),
        carry_forward=outcome.carry_setting(report), costs=outcome.costs_from(report))
    if report.get("errors"):
        result.grader_error = "; ".join(report["errors"])[:2000]
    result.console = report.get("console", "")
    return result


def write_result(result, out_dir, feedback="full", visibility="visible", assignment=None):
    """results.json, feedback.txt and (when the grader failed) grader-errors.log in the
    result's folder, each written atomically and capped.

    feedback: how much of a hidden case students see (full | summary | score, see
    report/feedback.py); visibility: Gradescope's visibility of each test in results.json;
    assignment: whose file the messages name and whose weights feedback.html draws (None:
    the default assignment's)."""
    folder = os.path.join(out_dir, getattr(result, "folder", None) or folders.candidate(result.name))
    os.makedirs(folder, exist_ok=True)
    module_file = assignment.module_file if assignment is not None else None
    files.write_text(os.path.join(folder, "results.json"),
                     results_text(result, feedback=feedback, visibility=visibility,
                                  module_file=module_file))
    files.write_text(os.path.join(folder, "feedback.txt"),
                     feedback_text(result, feedback, module_file=module_file),
                     files.FEEDBACK_BYTES)
    pages.write_feedback_page(result, folder, feedback, assignment)  # never raises
    log = os.path.join(folder, "grader-errors.log")
    problems = [f"{safe_text(t.name, 500)}:\n{safe_text(t.grader_traceback, 16000)}"
                for t in result.grader_failures[:100]]
    if result.grader_error:
        problems.insert(0, safe_text(result.grader_error, 64000))
    if problems:
        console = safe_text(getattr(result, "console", "") or "", 256000)
        files.write_text(log, "\n\n".join(problems) + "\n\n" + console, files.LOG_BYTES)
    elif os.path.exists(log):
        os.remove(log)


def _not_graded(catalog, name, path, why):
    tests = outcome.from_catalog(catalog, "grader-error", _("Not graded: the grader failed."))
    return outcome.SubmissionResult(name, path, tests, grader_error=why)


def _could_not_write(result, out_dir, feedback="full", visibility="visible", assignment=None):
    """Writing the result failed: the row becomes a grader error, and the traceback goes
    where it can (the folder's grader-errors.log, else nowhere but the row)."""
    trace = traceback.format_exc()[-4000:]
    result.grader_error = ("the grader could not write its results for this submission: "
                           + (trace.strip().splitlines() or ["?"])[-1])
    try:
        folder = os.path.join(out_dir, result.folder)
        os.makedirs(folder, exist_ok=True)
        files.write_text(os.path.join(folder, "grader-errors.log"),
                         result.grader_error + "\n\n" + trace, files.LOG_BYTES)
        files.write_text(os.path.join(folder, "results.json"),
                         results_text(result, feedback=feedback, visibility=visibility,
                                      module_file=assignment.module_file if assignment else None))
    except Exception:
        pass


class MixedSettings(SuiteFailed):
    """The gradebook holds rows graded with the other --carry-forward setting."""


def _same_carry_forward(kept, names, setting):
    """A gradebook never mixes rows graded with and without error carried forward: rows of
    the other setting that this batch does not grade again stop it before anything runs."""
    other = sorted(n for n, row in kept.items() if n not in set(names)
                   and row.get("carry_forward") in ("on", "off") and row["carry_forward"] != setting)
    if other:
        raise MixedSettings(
            f"{len(other)} row(s) of this gradebook were graded with --carry-forward "
            f"{kept[other[0]]['carry_forward']} (e.g. {other[0]!r}), and this batch grades with "
            f"--carry-forward {setting}: grade the whole class again with one setting, or "
            "grade into another --out")


def _same_assignment(kept, name, kit_root=None):
    """A gradebook holds one assignment: rows graded for another (a row without the field
    was graded before assignments were declared: the default one) stop the batch before
    anything runs, since their scores would sit in this assignment's columns."""
    default = assignments.default_name(kit_root) if any(
        "assignment" not in row for row in kept.values()) else None
    other = sorted(n for n, row in kept.items() if row.get("assignment", default) != name)
    if other:
        theirs = kept[other[0]].get("assignment", default)
        raise MixedSettings(
            f"{len(other)} row(s) of this gradebook were graded for the assignment "
            f"{safe_text(str(theirs), 100)!r} (e.g. {safe_text(other[0], 100)!r}), and this batch "
            f"grades {name!r}: grade into another --out (one gradebook per assignment)")


class BatchInterrupted(Exception):
    """Ctrl-C: the gradebook was written for the submissions graded so far."""

    def __init__(self, graded, total):
        super().__init__(f"{graded} of {total}")
        self.graded, self.total = graded, total


def grade_batch(paths, out_dir, options=None, jobs=1, stream=None, force=False,
                feedback="full", visibility="visible", course_file=None, shard=None,
                parts=None):
    """Grade every submission in `paths` into the gradebook `out_dir`; returns the
    SubmissionResults in input order (`unchanged` ones were not regraded: see force).
    Raises BatchInterrupted on Ctrl-C, after writing the gradebook for what was graded.
    feedback, visibility: the disclosure of the files written (write_result); a row written
    with another disclosure is graded again.

    paths: file or folder paths (named as intake.submission_names does), or
    intake.layouts.Submission objects (from layouts.resolve: a name, a student id and a
    display name each).

    course_file: the course file (--course; default DIR/course.toml when it exists) and
    DIR/overrides.json decide the final scores of grades.csv (gradebook.final_rows); both
    are read before anything is graded, and a CourseError or OverrideError stops the
    batch then.

    shard: a shards.Shard (K of N): only the submissions whose key hashes to K are graded
    (their folder names settled over the whole class, as one run would); parts: only these
    parts' tests run (shards.parse_parts: None, "cpu", "gpu" or names; an unknown part raises
    shards.ShardError before anything is graded). With either, DIR/shard.json records the
    run (grader/shards.py), for `grader merge`.

    options: a SuiteOptions (default: the default assignment's, SuiteOptions()); its
    `assignment` names the parts, in the gradebook's order."""
    options = options if options is not None else SuiteOptions()
    policy = courses.find(out_dir, course_file)
    ledger.load(out_dir)  # a ledger that does not read stops the batch before it starts
    os.makedirs(out_dir, exist_ok=True)
    # probe the isolation level once here, not again in every trusted process
    trusted.SERVERS_CPU.clear()
    chosen = isolation.choose(options.isolation)
    options = dataclasses.replace(options, isolation=chosen.level)
    trusted.vouch_isolation(chosen)  # the trusted processes take it as checked
    workers = trusted.start_worker_template()  # torch imported once for every worker
    zygote = trusted.start_zygote(options, max(1, jobs))  # torch, pytest, the suite: once
    try:
        return _grade_batch(paths, out_dir, options, jobs, stream, zygote, force,
                            {"feedback": feedback, "visibility": visibility}, policy,
                            shard, parts)
    finally:
        trusted.stop_zygote(zygote)
        trusted.stop_worker_template(workers)


def _grade_batch(paths, out_dir, options, jobs, stream, zygote, force, disclosure, policy=None,
                 shard=None, wanted_parts=None):
    catalog = trusted.catalog(options, zygote)
    parts = _declared_parts(options.assignment, catalog)
    all_parts, whole_suite = parts, fingerprint.suite_fingerprint(options)
    gpu_parts = options.assignment.gpu_parts
    parts = shards.select_parts(wanted_parts, all_parts, gpu_parts)  # ShardError: nothing graded
    if parts != all_parts:
        options = dataclasses.replace(options, parts=tuple(parts))
        catalog = [t for t in catalog if t["part"] in parts]
    if shard is not None or parts != all_parts:  # an unfinished run leaves no record to merge
        shards.remove_record(out_dir)
    identities = _identities(paths)
    paths, names = [s.path for s in identities], [s.name for s in identities]
    kept = gradebook.load_records(out_dir)  # rows of earlier batches in this gradebook
    _same_assignment(kept, options.assignment.name, options.assignment.kit_root or None)  # MixedSettings: nothing graded
    _same_carry_forward(kept, names, options.carry_forward)
    folder_names = folders.folder_names(names, {n: r["folder"] for n, r in kept.items()})
    if shard is not None:  # folders were settled over the whole class, as one run's are
        mine = [i for i, s in enumerate(identities) if shards.belongs(s, shard)]
        identities, paths, names, folder_names = (
            [items[i] for i in mine] for items in (identities, paths, names, folder_names))
    suite = fingerprint.suite_fingerprint(options)
    table = Table(parts, len(paths), **({"stream": stream} if stream else {}),
                  short={part.name: part.short for part in options.assignment.parts},
                  course=policy, out_dir=out_dir)  # the console shows final scores
    table.header()
    results = [None] * len(paths)
    interrupted = False
    workdir = tempfile.mkdtemp(prefix="attnkit-grade-")
    os.chmod(workdir, 0o711)
    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            futures = {}
            for i, (path, name) in enumerate(zip(paths, names)):
                row = kept.get(name) or {}
                # a row whose files were written with another disclosure is written again
                same = row.get("disclosure", DEFAULT_DISCLOSURE) == disclosure
                previous = None if force or not same else row.get("fingerprint")
                futures[pool.submit(grade_one, path, name, catalog, options, workdir, zygote,
                                    suite, previous,
                                    getattr(identities[i], "companions", ()))] = i
            try:
                for future in concurrent.futures.as_completed(futures):
                    _finish(future, futures[future], results, names, paths, folder_names,
                            catalog, out_dir, kept, table, identities, disclosure,
                            options.assignment)
            except KeyboardInterrupt:
                interrupted = True
                for future in futures:
                    future.cancel()
                trusted.interrupt_all()  # each trusted process stops its worker and exits
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
        if not interrupted:
            for index, result in enumerate(results):  # grades.csv has a row for everyone
                if result is None:
                    results[index] = _not_graded(catalog, names[index], paths[index],
                                                 "the grader stopped before this submission was graded")
                    results[index].folder = folder_names[index]
                    _identify(results[index], identities[index])
                    kept[names[index]] = gradebook.safe_record(results[index])
                    kept[names[index]]["assignment"] = options.assignment.name
        _write_gradebook(out_dir, list(kept.values()), parts, policy, options.assignment)
        if (shard is not None or parts != all_parts) and not interrupted:
            settings = dict(disclosure, **shards.settings_of(options))
            shards.write_record(out_dir, shard, parts, all_parts, whole_suite, options.isolation,
                                settings, [kept[n] for n in names if n in kept])
    if interrupted:
        raise BatchInterrupted(sum(r is not None for r in results), len(results))
    return results


def _declared_parts(declared, catalog):
    """The parts, in the declaration's order; the suite's tests must grade no other part."""
    tested = set(t["part"] for t in catalog)
    strangers = sorted(tested - set(declared.part_names))
    if strangers:
        raise SuiteFailed(f"the hidden suite's tests grade part {strangers[0]!r}, which "
                          f"{declared.folder}/assignment.toml does not declare")
    return list(declared.part_names)


def _write_gradebook(out_dir, rows, parts, policy, assignment=None):
    """grades.csv, report.html and the students' adjustments from the kept rows, with the
    course's policy and the overrides ledger (read again: it may have grown meanwhile)."""
    try:
        entries = ledger.load(out_dir)
    except ledger.OverrideError:  # read at the start; if it broke since, say so in grades.csv
        entries = None
        rows = [dict(r, flags=list(r.get("flags") or [])
                     + ["overrides.json does not read: no override applied"]) for r in rows]
    rebuild(out_dir, rows, parts, policy, entries, assignment)


def _identities(paths):
    """One layouts.Submission per entry of `paths` (bare paths: the plain layout)."""
    if all(isinstance(p, layouts.Submission) for p in paths):
        return list(paths)
    return layouts.plain([os.fspath(p) for p in paths])


def _identify(result, identity):
    """The student the row is about (layouts.resolve), and its notes for the feedback."""
    result.student_id = identity.student_id
    result.student_name = identity.student_name
    result.layout = identity.layout
    # when the work arrived and what the LMS said of it (intake/layouts.py; "" when unknown)
    result.submitted_at = getattr(identity, "submitted_at", "") or ""
    result.time_source = getattr(identity, "time_source", "") or ""
    result.late_flag = getattr(identity, "late_flag", None)
    result.flags = list(getattr(identity, "flags", None) or [])
    if identity.notes:
        result.notes = list(identity.notes) + list(result.notes or [])


def _finish(future, index, results, names, paths, folder_names, catalog, out_dir, kept, table,
            identities, disclosure=None, assignment=None):
    """One submission is done: write its files and its gradebook row, print its line."""
    disclosure = disclosure or DEFAULT_DISCLOSURE
    try:
        result = future.result()
    except Exception:  # a bug of ours: reported as such, and the batch goes on
        result = _not_graded(catalog, names[index], paths[index], traceback.format_exc()[-4000:])
    result.folder = folder_names[index]
    _identify(result, identities[index])
    results[index] = result
    kept_code.keep(out_dir, result)  # DIR/<folder>/submitted-code.py; never raises
    if result.unchanged and names[index] in kept:
        row = kept[names[index]]
        if any(row.get(k) != v for k, v in gradebook.identity(result).items()):
            row.update(gradebook.identity(result))  # a row graded before it knew its student
            try:
                gradebook.save_record(row, out_dir)
            except Exception:
                pass
        table.kept(result, row)
        return
    try:
        write_result(result, out_dir, **disclosure, assignment=assignment)
    except Exception:
        _could_not_write(result, out_dir, **disclosure, assignment=assignment)
    row = gradebook.safe_record(result, result.fingerprint)
    row["disclosure"] = dict(disclosure)  # what its files show (a change rewrites them)
    row["carry_forward"] = getattr(result, "carry_forward", None)  # the policy it was graded with
    row["assignment"] = getattr(assignment, "name", None) or assignments.default_name()  # one gradebook, one assignment (_same_assignment)
    kept[names[index]] = row
    try:
        gradebook.save_record(row, out_dir)
    except Exception:  # the row still reaches grades.csv; a rerun grades it again
        pass
    try:
        table.row(result)
    except Exception:  # the console is not worth a row
        pass
