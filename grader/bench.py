"""Benchmark: seconds per graded submission, against a bare `python -c "import torch"`.

    python -m grader.bench [--copies 6] [--jobs 1] [--isolation auto]

Measures, in the same run: the bare torch import (median of 5), then one batch of
`--copies` copies of the solution graded the way `grader grade` does (fork server,
catalog, sandboxed workers), and reports the median time per submission, the batch's
wall time per submission and their ratios to the bare import. Run it on an idle machine;
no test asserts these numbers.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from . import paths
from .grade import SuiteOptions, grade_batch
from .sandbox import isolation


def bare_torch_import(repeats=5):
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import torch"], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m grader.bench", description=__doc__.split("\n")[0])
    parser.add_argument("--copies", type=int, default=6)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--isolation", default="auto", choices=isolation.CHOICES)
    args = parser.parse_args(argv)

    level = isolation.choose(args.isolation)
    bare = bare_torch_import()
    workdir = tempfile.mkdtemp(prefix="attnkit-bench-")
    try:
        submissions = []
        for i in range(args.copies):
            path = os.path.join(workdir, f"student{i:02d}.py")
            shutil.copy(paths.SOLUTION, path)
            submissions.append(path)
        started = time.perf_counter()
        with open(os.devnull, "w") as quiet:
            results = grade_batch(submissions, os.path.join(workdir, "out"),
                                  SuiteOptions(isolation=args.isolation), jobs=args.jobs,
                                  stream=quiet)
        wall = time.perf_counter() - started
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    assert all(r.score == r.max_score for r in results), "the solution did not get full marks"
    per = statistics.median(r.seconds for r in results)
    print(f"isolation level:                    {level.level}"
          f"{' (throwaway uid)' if level.uid is not None else ''}")
    print(f"bare `python -c 'import torch'`:    {bare:.2f} s (median of 5)")
    print(f"one submission, start to results:   {per:.2f} s (median of {len(results)}) "
          f"= {per / bare:.2f} x the bare import")
    print(f"batch of {len(results)} with --jobs {args.jobs}:         {wall:.1f} s wall, "
          f"{wall / len(results):.2f} s per submission = {wall / len(results) / bare:.2f} x "
          f"(includes the fork server and the catalog, once per batch)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
