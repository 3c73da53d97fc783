"""Benchmark: seconds per graded submission, against a bare `python -c "import torch"`.

    python -m grader.bench [--copies 12] [--class-size 200] [--isolation auto] [--assignment NAME]

Measures, in one run and on one machine, each against the bare torch import (median of 5):

- one submission, intake to results (median over the batch of copies at --jobs 1);
- a batch of `--copies` copies of the solution at --jobs 1, then at --jobs 2: the whole
  batch's wall time (worker template, fork server and catalog included) per submission;
- a class of `--class-size` submissions at --jobs 2: copies of examples/ (files, a
  notebook, a zip, a folder; right and wrong), wall time in all and per submission;
- for each of those three batches, its CPU seconds per submission by side (the trusted
  processes with their fork server, the workers with their template, and this parent
  process: the kernel's accounting, so the figures hold on a loaded machine), the round
  trips each submission took with its workers, the load average around it, and its ratio
  to a bare import timed just before and after it (3 runs each);
- `grader validate` at --jobs 2 (solution, skeleton, alternatives and every catalog
  mistake, each diagnosed), wall time in all and per check;
- `grader similarity` on a class of `--similarity-class` submissions (rows and kept code
  written by the gradebook's own writers, each a renamed copy of a file of
  tests/similarity/ or examples/; nothing graded): wall time in all and per pair
  (`--only-similarity` runs this alone).

- the same copies graded as `--shards` shards one after another, each at --jobs 1 as one
  machine of a cluster would, then `grader merge`: seconds per submission, the merge's
  time per row, whether the merged grades.csv equals the one run's, and the projection
  for 10,000 submissions on N machines from these figures;
- where one trusted process's time goes (`--phases`, in this process, warm as the fork
  server's children are): pytest's configuration and collection, the tests, the session's
  end, and within the tests the worker protocol's encoding and decoding (the frame codec,
  runtime/protocol.py) — CPU seconds, median of 5 runs of the solution.

`--fresh` grades the copies again with workers started fresh (ATTNKIT_WORKER_START=fresh:
each imports torch itself), for the worker template's share. Run it on an idle machine;
no test asserts these numbers.
"""
import argparse
import contextlib
import csv
import functools
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from . import assignment as assignments
from . import intake, paths, shards
from .grade import SuiteOptions, grade_batch, trusted
from .merge import plan, write
from .report import gradebook
from .report.book import Gradebook
from .sandbox import isolation, template
from .similarity import code, command
from .validate import validate

EXAMPLES = os.path.join(paths.KIT_ROOT, "examples")


def bare_import(repeats=5):
    """[(wall seconds, CPU seconds)] of `repeats` runs of a bare `python -c "import torch"`."""
    runs = []
    for _ in range(repeats):
        started = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-c", "import torch"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode:
            raise RuntimeError("python -c 'import torch' failed")
        runs.append((time.perf_counter() - started, usage.ru_utime + usage.ru_stime))
    return runs


def bare_torch_import(repeats=5):
    """The median wall seconds of a bare `python -c "import torch"`."""
    return statistics.median(wall for wall, _ in bare_import(repeats))


class Figures:
    """One batch, measured: wall seconds, and CPU seconds by side (from the kernel's
    accounting: each trusted process as its fork server reaped it, each worker as its keeper
    did, the fork servers as `grader grade` did, and this process), the round trips of each
    submission, the machine's load average around it, and a bare import measured beside it."""

    def __init__(self, label, results, wall, cpu, load, bare):
        self.label, self.results, self.wall, self.load, self.bare = label, results, wall, load, bare
        self.cpu = cpu  # {"trusted", "worker", "parent"}: seconds for the whole batch
        self.count = max(1, len(results))

    def lines(self):
        bare_wall = statistics.median(w for w, _ in self.bare)
        bare_cpu = statistics.median(c for _, c in self.bare)
        per = self.wall / self.count
        cpu = {k: v / self.count for k, v in self.cpu.items()}
        total = sum(cpu.values())
        exchanges = [r.costs.get("exchanges") for r in self.results if r.costs]
        right = [e for r, e in zip(self.results, exchanges)
                 if e is not None and r.score == r.max_score]
        wrong = [e for r, e in zip(self.results, exchanges)
                 if e is not None and r.score != r.max_score]

        def spread(values):
            return "-" if not values else (f"{min(values)}" if min(values) == max(values)
                                           else f"{min(values)}..{max(values)} "
                                                f"(median {statistics.median(values):g})")
        yield (f"{self.label}: {self.wall:.2f} s wall, {per:.3f} s per submission "
               f"= {per / bare_wall:.2f} x a bare import ({bare_wall:.2f} s wall beside it); "
               f"load {self.load[0]:.1f} -> {self.load[1]:.1f}")
        yield (f"  CPU per submission: trusted {cpu['trusted']:.3f} s, worker "
               f"{cpu['worker']:.3f} s, parent {cpu['parent']:.3f} s; {total:.3f} s in all "
               f"= {total / bare_cpu:.2f} x the bare import's {bare_cpu:.2f} s of CPU "
               f"(fork servers' start-up included)")
        own = [(r.costs.get("trusted_cpu"), r.costs.get("worker_cpu")) for r in self.results
               if r.costs and None not in (r.costs.get("trusted_cpu"), r.costs.get("worker_cpu"))]
        if own:
            yield (f"  one submission's own processes (median): trusted "
                   f"{statistics.median(t for t, _ in own):.3f} s, worker "
                   f"{statistics.median(w for _, w in own):.3f} s of CPU")
        yield (f"  round trips per submission: full marks {spread(right)}; "
               f"the others {spread(wrong)}")


def measure(label, submissions, out, options, jobs, shard=None, bare_repeats=3):
    """A Figures of grading `submissions` at `jobs`, with a bare import timed just before and
    just after it (bare_repeats each)."""
    bare = bare_import(bare_repeats)
    load = os.getloadavg()[0]
    me, children = (resource.getrusage(resource.RUSAGE_SELF),
                    resource.getrusage(resource.RUSAGE_CHILDREN))
    wall, results = _batch(submissions, out, options, jobs, shard)
    me2, children2 = (resource.getrusage(resource.RUSAGE_SELF),
                      resource.getrusage(resource.RUSAGE_CHILDREN))
    load = (load, os.getloadavg()[0])
    bare += bare_import(bare_repeats)

    def spent(before, after):
        return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    servers = dict(trusted.SERVERS_CPU)
    trusted_cpu = servers.get("zygote") or sum((r.costs or {}).get("trusted_cpu") or 0.0
                                               for r in results)
    template = servers.get("template") or 0.0
    worker_cpu = template + sum((r.costs or {}).get("worker_cpu") or 0.0 for r in results)
    others = spent(children, children2) - (servers.get("zygote") or 0.0) - template
    cpu = {"trusted": trusted_cpu, "worker": worker_cpu,
           "parent": spent(me, me2) + max(0.0, others)}
    return Figures(label, results, wall, cpu, load, bare)


def _copies(folder, count, sources):
    """`count` submissions in `folder`, cycling through `sources` (files or folders)."""
    made = []
    for i in range(count):
        source = sources[i % len(sources)]
        name = os.path.basename(source.rstrip(os.sep))
        stem, ext = os.path.splitext(name) if os.path.isfile(source) else (name, "")
        target = os.path.join(folder, f"student{i:03d}-{stem}{ext}")
        if os.path.isdir(source):
            shutil.copytree(source, target)
        else:
            shutil.copy(source, target)
        made.append(target)
    return made


@contextlib.contextmanager
def _worker_start(mode):
    before = os.environ.get(template.ENV_MODE)
    if mode:
        os.environ[template.ENV_MODE] = mode
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(template.ENV_MODE, None)
        else:
            os.environ[template.ENV_MODE] = before


def _batch(submissions, out, options, jobs, shard=None):
    started = time.perf_counter()
    with open(os.devnull, "w") as quiet:
        results = grade_batch(submissions, out, options, jobs=jobs, stream=quiet, force=True,
                              shard=shard)
    return time.perf_counter() - started, results


def main(argv=None):
    """Run the benchmark the command line `argv` asks for (see --help); its exit status."""
    args = _parser().parse_args(argv)
    if args.only_similarity:
        return _similarity_class(args.similarity_class)
    declared = assignments.load(args.assignment)
    if args.phases:
        return _phases(args.isolation, declared)

    level = isolation.choose(args.isolation)
    options = SuiteOptions(isolation=args.isolation, assignment=declared)
    bare = bare_torch_import(args.bare_repeats or 5)
    print(f"isolation level:   {level.level}{' (throwaway uid)' if level.uid is not None else ''}")
    print(f"bare `python -c 'import torch'`: {bare:.2f} s (median of "
          f"{args.bare_repeats or 5}); load average "
          f"{os.getloadavg()[0]:.1f}", flush=True)
    line = functools.partial(_line, bare)
    workdir = tempfile.mkdtemp(prefix="attnkit-bench-")
    try:
        _time_copies(args, declared, options, workdir, line, bare)
        if args.class_size and declared.is_default():
            _time_class(args.class_size, options, workdir)
        if not args.no_validate:
            _time_validate(options, line)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    if args.similarity_class:
        _similarity_class(args.similarity_class)
    return 0


def _parser():
    """The benchmark's command line."""
    parser = argparse.ArgumentParser(prog="python -m grader.bench", description=__doc__.split("\n")[0])
    parser.add_argument("--copies", type=int, default=12)
    parser.add_argument("--class-size", type=int, default=200, help="0 skips the class")
    parser.add_argument("--no-validate", action="store_true")
    parser.add_argument("--fresh", action="store_true",
                        help="also grade the copies with workers started fresh")
    parser.add_argument("--isolation", default="auto", choices=isolation.CHOICES)
    parser.add_argument("--assignment", default=None, metavar="NAME",
                        help="grade this assignment's solution (default: the kit's default); "
                             "the class of examples/ is the default assignment's")
    parser.add_argument("--similarity-class", type=int, default=200, help="0 skips it")
    parser.add_argument("--only-similarity", action="store_true")
    parser.add_argument("--shards", type=int, default=3, help="0 skips the shard/merge path")
    parser.add_argument("--bare-repeats", type=int, default=None, metavar="N",
                        help="time the bare import N times for the headline and before and "
                             "after each batch (default 5 and 3; 1 for a quick check of the "
                             "benchmark itself, as tests/test_bench.py runs it)")
    parser.add_argument("--phases", action="store_true",
                        help="only time the phases of one trusted process (pytest's own "
                             "cost against the tests')")
    return parser


def _line(bare, what, seconds, count=None, unit="submission"):
    """Print `seconds` (for `count` of `unit`, if given: also per one) against the bare
    import's `bare` seconds."""
    per = seconds / count if count else seconds
    total = f"{seconds:.1f} s in all, " if count else ""
    print(f"{what:<48} {total}{per:.2f} s{f' per {unit}' if count else ''} "
          f"= {per / bare:.2f} x the bare import", flush=True)


def _show(figures):
    """Print the lines of a Figures."""
    for text in figures.lines():
        print(text, flush=True)


def _time_copies(args, declared, options, workdir, line, bare):
    """Grade args.copies copies of the solution of `declared` at --jobs 1 and 2 (and, as
    args asks, as shards and with fresh workers) in `workdir`, printing the figures."""
    os.makedirs(os.path.join(workdir, "copies"))
    copies = _copies(os.path.join(workdir, "copies"), args.copies, [declared.solution])
    figures = measure(f"batch of {len(copies)} at --jobs 1", copies,
                      os.path.join(workdir, "out1"), options, 1,
                      bare_repeats=args.bare_repeats or 3)
    results = figures.results
    assert all(r.score == r.max_score for r in results), "the solution did not get full marks"
    line("one submission, intake to results (median)", statistics.median(r.seconds for r in results))
    _show(figures)
    _show(measure(f"batch of {len(copies)} at --jobs 2", copies,
                  os.path.join(workdir, "out2"), options, 2,
                  bare_repeats=args.bare_repeats or 3))
    if args.shards:
        _shard_path(copies, workdir, options, args.shards, line, bare)
    if args.fresh:
        with _worker_start("fresh"):
            wall, _ = _batch(copies, os.path.join(workdir, "out3"), options, 1)
        line(f"batch of {len(copies)} at --jobs 1, workers fresh", wall, len(copies))


def _time_class(size, options, workdir):
    """Grade a class of `size` copies of examples/ at --jobs 2 in `workdir`, printing the
    figures and how many rows were grader errors."""
    sources = sorted(os.path.join(EXAMPLES, n) for n in os.listdir(EXAMPLES)
                     if not n.startswith("."))
    os.makedirs(os.path.join(workdir, "class"))
    members = _copies(os.path.join(workdir, "class"), size, sources)
    figures = measure(f"class of {len(members)} (copies of examples/) at --jobs 2",
                      members, os.path.join(workdir, "out4"), options, 2)
    _show(figures)
    errors = sum(r.status == "grader error" for r in figures.results)
    if errors:
        print(f"  ({errors} grader errors)")


def _time_validate(options, line):
    """Time `grader validate` at --jobs 2 and print how many of its checks hold."""
    started = time.perf_counter()
    with open(os.devnull, "w") as quiet:
        ok, rows = validate(options, jobs=2, stream=quiet)
    wall = time.perf_counter() - started
    line(f"grader validate ({len(rows)} checks) at --jobs 2", wall, len(rows), "check")
    print(f"  ({sum(ok for _, ok, _ in rows)} of {len(rows)} checks hold)")


def _shard_path(copies, workdir, options, count, line, bare):
    """The copies as `count` shards graded one after another at --jobs 1 (each what one
    machine of a cluster does), merged; compared with the one run in workdir/out1."""
    walls, folders = [], []
    for index in range(1, count + 1):
        folder = os.path.join(workdir, f"shard-{index}")
        wall, _ = _batch(copies, folder, options, 1, shard=shards.Shard(index, count))
        walls.append(wall)
        folders.append(folder)
    merged_dir = os.path.join(workdir, "merged")
    started = time.perf_counter()
    with open(os.devnull, "w") as quiet, contextlib.redirect_stdout(quiet):
        merged, groups = plan(folders, merged_dir)
        write(merged, groups, Gradebook.open(merged_dir), options.assignment)
    merge_wall = time.perf_counter() - started

    def rows(folder):
        with open(os.path.join(folder, "grades.csv"), encoding="utf-8", newline="") as handle:
            return sorted(tuple(row.items()) for row in csv.DictReader(handle))
    line(f"{count} shards of {len(copies)} at --jobs 1, wall (summed)", sum(walls), len(copies))
    line(f"grader merge of {count} shards", merge_wall, len(copies), "row")
    same = rows(merged_dir) == rows(os.path.join(workdir, "out1"))
    print(f"  merged grades.csv equal to the one run's: {'yes' if same else 'NO'}")
    per = sum(walls) / len(copies)
    merge_per = merge_wall / len(copies)
    for machines in (1, 10, 50, 200):
        hours = (10000 * per / machines + 10000 * merge_per) / 3600
        print(f"  projection, 10,000 submissions on {machines:>3} machine(s) at --jobs 1: "
              f"{hours:.2f} h ({per:.2f} s a submission, {1000 * merge_per:.1f} ms a row "
              f"to merge; {per / bare:.2f} x the bare import)", flush=True)


def _phases(level, declared, runs=5):
    """CPU seconds of one trusted pytest session grading the solution, by phase, in this
    process after two warm-up runs (as the fork server's children start: imports done, the
    reference's results memoized); the median of `runs`."""
    import pytest  # heavy: pytest and torch, only for --phases
    from .grade import plugin  # noqa: F401 - registered by name in pytest_args
    from .sandbox.runtime import protocol  # heavy: imports torch
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    options = SuiteOptions(isolation=level, assignment=declared)
    spent = {"protocol": 0.0}

    def timed(function):
        def wrapper(*args, **kwargs):
            started = time.process_time()
            try:
                return function(*args, **kwargs)
            finally:
                spent["protocol"] += time.process_time() - started
        return wrapper
    protocol.encode_payload, protocol.decode = timed(protocol.encode_payload), timed(protocol.decode)

    class Phases:
        def __init__(self):
            self.marks, self.start = {}, time.process_time()

        def mark(self, name):
            self.marks[name] = time.process_time() - self.start

        @pytest.hookimpl(tryfirst=True)
        def pytest_sessionstart(self, session):
            self.mark("configured")

        @pytest.hookimpl(trylast=True)
        def pytest_collection_finish(self, session):
            self.mark("collected")

        @pytest.hookimpl(tryfirst=True)
        def pytest_sessionfinish(self, session):
            self.mark("tests")

        @pytest.hookimpl(trylast=True)
        def pytest_unconfigure(self, config):
            self.mark("finished")

    measured = []
    for run in range(runs + 2):
        read, write = os.pipe()
        phases = Phases()
        spent["protocol"] = 0.0
        args = options.pytest_args() + ["--submission", declared.solution,
                                        "--attnkit-report-fd", str(write)]
        with open(os.devnull, "w") as quiet, contextlib.redirect_stdout(quiet):
            pytest.main(args, plugins=[phases])
        os.close(read)  # the plugin closed `write`
        if run >= 2:
            marks = phases.marks
            measured.append({"pytest setup and collection": marks["collected"],
                             "the tests": marks["tests"] - marks["collected"],
                             "  of which the worker protocol": spent["protocol"],
                             "the session's end (diagnosis, report)":
                                 marks["finished"] - marks["tests"],
                             "all": marks["finished"]})
    print(f"one trusted process grading the solution, CPU seconds (median of {runs}, warm):")
    for name in measured[0]:
        value = statistics.median(m[name] for m in measured)
        share = value / statistics.median(m["all"] for m in measured)
        print(f"  {name:<40} {value:.3f} s  {100 * share:4.0f}%")
    return 0


def _similarity_class(size):
    """`grader similarity` on `size` submissions made from the files of tests/similarity/
    and examples/ (intake's staged code, every name of each copy suffixed): the time it takes."""
    folder = tempfile.mkdtemp(prefix="attnkit-bench-similarity-")
    try:
        texts = []
        for root in (os.path.join(paths.KIT_ROOT, "tests", "similarity"), EXAMPLES):
            for name in sorted(os.listdir(root)):
                staged = intake.stage(os.path.join(root, name), os.path.join(folder, ".staged", name), name)
                if not staged.error:
                    texts.append(code.staged_code(staged))
        shutil.rmtree(os.path.join(folder, ".staged"))
        for i in range(size):
            name = f"s{i:04d}"
            os.makedirs(os.path.join(folder, name))
            gradebook.save_record({"name": name, "folder": name, "status": "graded", "total": 100.0,
                                   "max": 100.0, "parts": {}, "student_id": str(10000 + i)}, folder)
            def renamed(text):
                return re.sub(r"\b(X|valid_lens?|queries|keys|values|scores)\b",
                              lambda m: f"{m.group(1)}_{i}", text)
            kept = texts[i % len(texts)]
            copy = code.Kept(renamed(kept.text), None if kept.cells is None else
                             [(n, renamed(cell)) for n, cell in kept.cells])
            code.keep(folder, name, copy)
        started, cpu = time.perf_counter(), time.process_time()
        pairs, groups, found, skipped = command.run(folder)
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu
        print(f"grader similarity, class of {len(found)} ({len(pairs)} pairs, "
              f"{sum(p.flagged for p in pairs)} flagged, from {len(texts)} files): "
              f"{wall:.1f} s in all ({cpu:.1f} s of CPU), "
              f"{1000 * wall / max(1, len(pairs)):.2f} ms per pair; "
              f"similarity.html {os.path.getsize(os.path.join(folder, 'similarity.html')) // 1024} KB",
              flush=True)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
