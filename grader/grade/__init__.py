"""`grader grade`: grade a batch of submissions against the hidden suite.

For each submission: intake stages the assignment's plain module file; a trusted process
runs the hidden suite (grader/suite/, over the assignment's table), reaching the submission
only through its sandboxed worker; the outcomes become DIR/<folder>/results.json
(Gradescope's format), DIR/<folder>/feedback.txt, and a row of DIR/grades.csv. A broken submission gets a row and a reason; a failure of the grader is
reported as a grader error, never as a zero.

grades.csv's total is the final score: each kept row as graded, then the instructor's
overrides (DIR/overrides.json) and the course's late policy (DIR/course.toml or --course),
applied whenever the gradebook is built (report/rebuild.py), never stored into a row.

One submission's walk: the platform's layouts.Submission (who, when, what to flag) and the
folder the batch settled for it make a Job; intake stages it (intake.Staged), the trusted
process answers with its report, and `Job.result` makes the one SubmissionResult
(grader/outcomes.py) that carries all of it as fields: its folder, its Provenance, the code
intake staged. Its row goes into the gradebook folder, a report.book.Gradebook whose course
file and overrides ledger are read once a run.

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
from .. import intake
from .. import shards
from ..i18n import _
from ..intake import layouts
from ..report.console import Table
from ..sandbox import isolation
from .. import files
from ..report import folders
from ..report import kept
from ..report.book import Gradebook
from ..report.feedback import feedback_text
from ..report import gradebook
from ..report import html as pages
from ..report.gradescope import results_text
from ..textsafety import safe_text
from . import fingerprint, outcome, trusted
from .trusted import SuiteFailed, SuiteOptions

DEFAULT_DISCLOSURE = {"feedback": "full", "visibility": "visible"}

__all__ = ["BatchInterrupted", "Job", "SuiteFailed", "SuiteOptions", "grade_batch", "grade_one"]


@dataclasses.dataclass
class Job:
    """One submission of a batch: who it is (an intake.layouts.Submission, as the platform's
    layout resolved it), the folder the batch settled for it (report/folders.py), and the
    fingerprint of its kept row (None: grade it whatever it is)."""
    submission: layouts.Submission
    folder: str
    previous: str = None
    place: int = None  # in the batch's line for turns (turns.py; None: no line)

    def result(self, tests, notes=(), **fields):
        """The SubmissionResult of this submission: its name, source, folder, who and when
        (Submission.provenance), and the layout's notes before `notes` (intake's)."""
        sub = self.submission
        return outcome.SubmissionResult(sub.name, sub.path, list(tests),
                                        list(sub.notes) + list(notes or []), folder=self.folder,
                                        provenance=sub.provenance(), **fields)

    def not_graded(self, catalog, why):
        """The grader failed before intake (or stopped first): a grader error, never a 0."""
        tests = outcome.from_catalog(catalog, "grader-error", _("Not graded: the grader failed."))
        return self.result(tests, grader_error=why)


def grade_one(job, catalog, options, workdir, zygote=None, suite=None):
    """Stage and grade one submission (a Job); always returns its SubmissionResult, which
    carries the code intake staged (kept for `grader similarity`).

    suite: the suite's fingerprint. When what was staged has the fingerprint of the job's
    kept row (`previous`), nothing is graded and the result says `unchanged` (its row is
    kept)."""
    with trusted.in_line(job.place):  # at --jobs N, turns in the order the submissions came
        return _grade_one(job, catalog, options, workdir, zygote, suite)


def _grade_one(job, catalog, options, workdir, zygote, suite):
    started = time.monotonic()
    sub = job.submission
    stage_root = tempfile.mkdtemp(prefix=f"{folders.candidate(sub.name)[:40]}-", dir=workdir)
    os.chmod(stage_root, 0o711)
    try:
        staged = intake.stage(sub.path, os.path.join(stage_root, "staged"), sub.name,
                              module=options.assignment.module,
                              earlier=student_provided(options.assignment),
                              companions=sub.companions)
        code = kept.staged_code(staged)
        mark = fingerprint.submission_fingerprint(suite, staged) if suite else None
        if mark is not None and mark == job.previous:
            return job.result([], unchanged=True, fingerprint=mark, staged_code=code,
                              seconds=time.monotonic() - started)
        return _grade_staged(job, staged, code, mark, catalog, options, stage_root, zygote,
                             started)
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


def _grade_staged(job, staged, code, mark, catalog, options, stage_root, zygote, started):
    """Grade what intake staged (or record why it could not be): a SubmissionResult. `mark`:
    the fingerprint of what was staged (kept unless the grader failed: a grader error is
    graded again next time)."""
    def result(tests, waited=0.0, **fields):
        made = job.result(tests, staged.notes, staged_code=code,
                          carry_forward=options.carry_forward,  # the policy its row is graded with
                          seconds=time.monotonic() - started - waited, **fields)
        # a grader error is never kept: the next run grades it again
        made.fingerprint = mark if made.status != "grader error" else None
        return made
    if staged.error and staged.grader_failed:   # intake's own failure
        tests = outcome.from_catalog(catalog, "grader-error", _("Not graded: the grader failed."))
        return result(tests, grader_error=f"intake failed: {staged.error}")
    if staged.error:
        tests = outcome.from_catalog(catalog, "failed", _("Not graded: {reason}").format(reason=staged.error))
        return result(tests, intake_error=staged.error, missing_work=staged.missing)
    os.chmod(os.path.join(stage_root, "staged"), 0o755)
    workers = os.path.join(stage_root, "workers")
    os.makedirs(workers)
    os.chmod(workers, 0o711)
    try:
        report = trusted.run_suite(options, staged.file, workers, zygote, tests=catalog)
    except SuiteFailed as failure:
        tests = outcome.from_catalog(catalog, "grader-error", _("Not graded: the grader failed."))
        return result(tests, grader_error=str(failure))
    costs = outcome.costs_from(report)
    graded = result(outcome.from_suite(report, catalog, options.assignment),
                    isolation=report.get("isolation"), summary=report.get("submission"),
                    diagnoses=outcome.diagnoses_from(report),
                    case_results=outcome.case_results_from(report),
                    costs=costs, console=report.get("console", ""),
                    grader_error="; ".join(report["errors"])[:2000] if report.get("errors") else None,
                    waited=costs["turn_wait"] or 0.0)  # its time leaves its turn's wait out
    return graded


def write_result(result, out_dir, feedback="full", visibility="visible", assignment=None):
    """results.json, feedback.txt and (when the grader failed) grader-errors.log in the
    result's folder, each written atomically and capped.

    feedback: how much of a hidden case students see (full | summary | score, see
    report/feedback.py); visibility: Gradescope's visibility of each test in results.json;
    assignment: whose file the messages name and whose weights feedback.html draws (None:
    the default assignment's)."""
    folder = os.path.join(out_dir, result.folder or folders.candidate(result.name))
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
        console = safe_text(result.console or "", 256000)
        files.write_text(log, "\n\n".join(problems) + "\n\n" + console, files.LOG_BYTES)
    elif os.path.exists(log):
        os.remove(log)


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
                parts=None, book=None):
    """Grade every submission in `paths` into the gradebook `out_dir`; returns the
    SubmissionResults in input order (`unchanged` ones were not regraded: see force).
    Raises BatchInterrupted on Ctrl-C, after writing the gradebook for what was graded.
    feedback, visibility: the disclosure of the files written (write_result); a row written
    with another disclosure is graded again.

    paths: file or folder paths (named as intake.submission_names does), or
    intake.layouts.Submission objects (from layouts.resolve: a name, a student id and a
    display name each).

    book: out_dir's report.book.Gradebook as the run read it (its course file, overrides
    ledger and kept rows); None: read here, with `course_file` (--course; default
    DIR/course.toml when it exists). Either way they are read before anything is graded, and
    a CourseError or OverrideError stops the batch then; they decide the final scores of
    grades.csv (gradebook.final_rows).

    shard: a shards.Shard (K of N): only the submissions whose key hashes to K are graded
    (their folder names settled over the whole class, as one run would); parts: only these
    parts' tests run (shards.parse_parts: None, "cpu", "gpu" or names; an unknown part raises
    shards.ShardError before anything is graded). With either, DIR/shard.json records the
    run (grader/shards.py), for `grader merge`.

    options: a SuiteOptions (default: the default assignment's, SuiteOptions()); its
    `assignment` names the parts, in the gradebook's order."""
    options = options if options is not None else SuiteOptions()
    book = book if book is not None else Gradebook.open(out_dir, course_file)
    os.makedirs(out_dir, exist_ok=True)
    # probe the isolation level once here, not again in every trusted process
    trusted.SERVERS_CPU.clear()
    chosen = isolation.choose(options.isolation)
    options = dataclasses.replace(options, isolation=chosen.level)
    trusted.vouch_isolation(chosen)  # the trusted processes take it as checked
    zygote = trusted.start_zygote(options, max(1, jobs))  # torch, pytest, the suite: once
    workers = trusted.start_worker_template(zygote)  # torch imported once for every worker
    trusted.pace(max(1, jobs))  # `jobs` submissions' code at once, one more prepared ahead
    try:
        return _grade_batch(paths, book, options, jobs, stream, zygote, force,
                            {"feedback": feedback, "visibility": visibility}, shard, parts)
    finally:
        trusted.pace(None)
        trusted.stop_worker_template(workers)  # first: see stop_zygote
        trusted.stop_zygote(zygote)


class _Batch:
    """A batch under way: where each submission's files and row go (the Gradebook), the
    console's table, and the results so far (None: not done)."""

    def __init__(self, book, jobs, catalog, table, disclosure, assignment):
        self.book, self.jobs, self.catalog, self.table = book, jobs, catalog, table
        self.disclosure, self.assignment = disclosure, assignment
        self.results = [None] * len(jobs)

    def finish(self, index, future):
        """One submission is done: write its files and its gradebook row, print its line."""
        job, out_dir = self.jobs[index], self.book.out_dir
        try:
            result = future.result()
        except Exception:  # a bug of ours: reported as such, and the batch goes on
            result = job.not_graded(self.catalog, traceback.format_exc()[-4000:])
        else:  # DIR/<folder>/submitted-code.py (intake reached); never raises
            kept.keep(out_dir, result.folder, result.staged_code)
        self.results[index] = result
        name = job.submission.name
        if result.unchanged and name in self.book.rows:
            row = self.book.rows[name]
            if any(row.get(k) != v for k, v in gradebook.identity(result).items()):
                row.update(gradebook.identity(result))  # a row graded before it knew its student
                self.book.keep(name, row)
            self.table.kept(result, row)
            return
        try:
            write_result(result, out_dir, **self.disclosure, assignment=self.assignment)
        except Exception:
            _could_not_write(result, out_dir, **self.disclosure, assignment=self.assignment)
        row = gradebook.safe_record(result, result.fingerprint)
        row["disclosure"] = dict(self.disclosure)  # what its files show (a change rewrites them)
        row["carry_forward"] = result.carry_forward  # the policy it was graded with
        row["assignment"] = self.assignment.name  # one gradebook, one assignment (_same_assignment)
        self.book.keep(name, row)
        try:
            self.table.row(result)
        except Exception:  # the console is not worth a row
            pass

    def stopped(self):
        """grades.csv has a row for everyone: those not graded say the grader stopped."""
        for index, result in enumerate(self.results):
            if result is None:
                job = self.jobs[index]
                self.results[index] = job.not_graded(
                    self.catalog, "the grader stopped before this submission was graded")
                row = gradebook.safe_record(self.results[index])
                row["assignment"] = self.assignment.name
                self.book.rows[job.submission.name] = row


def _grade_batch(paths, book, options, jobs, stream, zygote, force, disclosure, shard=None,
                 wanted_parts=None):
    out_dir = book.out_dir
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
    submissions = _submissions(paths)
    names = [s.name for s in submissions]
    kept_rows = book.rows  # rows of earlier batches in this gradebook
    _same_assignment(kept_rows, options.assignment.name,  # MixedSettings: nothing graded
                     options.assignment.kit_root or None)
    _same_carry_forward(kept_rows, names, options.carry_forward)
    folder_names = folders.folder_names(names, {n: r["folder"] for n, r in kept_rows.items()})
    work = []
    for sub, folder in zip(submissions, folder_names):
        if shard is not None and not shards.belongs(sub, shard):
            continue  # folders were settled over the whole class, as one run's are
        row = kept_rows.get(sub.name) or {}
        # a row whose files were written with another disclosure is written again
        same = row.get("disclosure", DEFAULT_DISCLOSURE) == disclosure
        work.append(Job(sub, folder, None if force or not same else row.get("fingerprint")))
    suite = fingerprint.suite_fingerprint(options)
    table = Table(parts, len(work), **({"stream": stream} if stream else {}),
                  short={part.name: part.short for part in options.assignment.parts},
                  course=book.policy, entries=book.entries)  # the console shows final scores
    table.header()
    batch = _Batch(book, work, catalog, table, disclosure, options.assignment)
    interrupted = False
    workdir = tempfile.mkdtemp(prefix="attnkit-grade-")
    os.chmod(workdir, 0o711)
    try:
        # one more than --jobs: the next submission is staged and its trusted process
        # prepared while the others run; its code waits for a turn (turns.py), and turns
        # come in the order of `work` (its places are issued here, in that order)
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs) + 1) as pool:
            futures = {}
            for i, job in enumerate(work):
                job.place = trusted.place_in_line()
                futures[pool.submit(grade_one, job, catalog, options, workdir, zygote,
                                    suite)] = i
            try:
                for future in concurrent.futures.as_completed(futures):
                    batch.finish(futures[future], future)
            except KeyboardInterrupt:
                interrupted = True
                for future in futures:
                    future.cancel()
                trusted.interrupt_all()  # each trusted process stops its worker and exits
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
        if not interrupted:
            batch.stopped()
        book.rebuild(parts, options.assignment)
        if (shard is not None or parts != all_parts) and not interrupted:
            settings = dict(disclosure, **shards.settings_of(options))
            shards.write_record(out_dir, shard, parts, all_parts, whole_suite, options.isolation,
                                settings, [kept_rows[j.submission.name] for j in work
                                           if j.submission.name in kept_rows])
    if interrupted:
        raise BatchInterrupted(sum(r is not None for r in batch.results), len(batch.results))
    return batch.results


def _declared_parts(declared, catalog):
    """The parts, in the declaration's order; the suite's tests must grade no other part."""
    tested = set(t["part"] for t in catalog)
    strangers = sorted(tested - set(declared.part_names))
    if strangers:
        raise SuiteFailed(f"the hidden suite's tests grade part {strangers[0]!r}, which "
                          f"{declared.folder}/assignment.toml does not declare")
    return list(declared.part_names)


def _submissions(paths):
    """One layouts.Submission per entry of `paths` (bare paths: the plain layout)."""
    if all(isinstance(p, layouts.Submission) for p in paths):
        return list(paths)
    return layouts.plain([os.fspath(p) for p in paths])
