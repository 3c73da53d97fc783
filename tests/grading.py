"""The one way the kit's tests run the grader and read back what it wrote.

`run_grader` starts `python -m grader ARGS` in a subprocess, as an instructor would; with
`kit=` it runs the grader of a copy of the kit (that copy's package first on the path, run
from inside it), so a test can change a copy and never the tree other tests share.
`grades` reads a grades.csv (or an export) the way a spreadsheet would (its byte order mark
dropped), keyed by a column.
"""
import csv
import os
import subprocess
import sys

KIT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))



def run_grader(*args, kit=None, cwd=None, env=None, timeout=900, **kwargs):
    """`python -m grader ARGS` (each argument str()'d); the CompletedProcess, text captured.

    kit: a copy of the kit whose grader runs (PYTHONPATH and cwd set to it); cwd: where it
    runs (the kit by default); env: the whole environment (os.environ by default)."""
    env = dict(os.environ if env is None else env)
    if kit is not None:
        env["PYTHONPATH"] = str(kit)
    return subprocess.run([sys.executable, "-m", "grader", *map(str, args)],
                          cwd=str(cwd or kit or KIT), env=env, capture_output=True, text=True,
                          timeout=timeout, **kwargs)


def fast(jobs=1):
    """The options of a quick grading run: `jobs` workers, a student's call or import cut off
    well before the defaults (the submissions the tests grade answer in milliseconds)."""
    return ["--jobs", str(jobs), "--call-seconds", "8", "--import-seconds", "10"]


FAST = fast()


def grades(path, key="submission"):
    """The rows of a grades.csv (or of any CSV the grader writes), {row[key]: row}; `path`
    is the file or the output folder that holds grades.csv."""
    path = str(path)
    if os.path.isdir(path):
        path = os.path.join(path, "grades.csv")
    with open(path, encoding="utf-8-sig", newline="") as handle:
        return {row[key]: row for row in csv.DictReader(handle)}
