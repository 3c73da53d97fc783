"""The output folder is the course's gradebook: regrading some students keeps everyone
else's row, unchanged submissions are not graded twice, and Ctrl-C loses nothing."""
import csv
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from conftest import KIT, SOLUTION, SUBMISSIONS

FAST = ["--jobs", "1", "--call-seconds", "8", "--import-seconds", "10"]


def _run(paths, out, *extra):
    return subprocess.run([sys.executable, "-m", "grader", "grade", *map(str, paths), "--out",
                           str(out), *FAST, *extra], cwd=KIT, capture_output=True, text=True,
                          timeout=900)


def _rows(out):
    with open(out / "grades.csv", encoding="utf-8-sig") as handle:
        return {row["submission"]: row for row in csv.DictReader(handle)}


def _class(tmp_path):
    subs = tmp_path / "subs"
    subs.mkdir()
    shutil.copy(SOLUTION, subs / "alice.py")
    shutil.copy(os.path.join(SUBMISSIONS, "zero_stub.py"), subs / "bob.py")
    source = open(SOLUTION, encoding="utf-8").read()
    broken = source.replace("torch.repeat_interleave(valid_lens, repeats=self.num_heads, dim=0)",
                            "valid_lens.repeat(self.num_heads)", 1)
    assert broken != source
    (subs / "carl.py").write_text(broken, encoding="utf-8")
    return subs


@pytest.mark.slow
def test_regrading_one_student_keeps_the_others_and_unchanged_ones_are_kept(tmp_path):
    subs, out = _class(tmp_path), tmp_path / "grades"
    first = _run(sorted(subs.iterdir()), out)
    assert first.returncode == 0, first.stderr
    before = _rows(out)
    assert set(before) == {"alice", "bob", "carl"} and before["alice"]["total"] == "100"
    assert float(before["carl"]["total"]) < 100

    shutil.copy(SOLUTION, subs / "carl.py")  # carl fixes his work and hands it in again
    again = _run([subs / "carl.py"], out)
    assert again.returncode == 0, again.stderr
    after = _rows(out)
    assert set(after) == {"alice", "bob", "carl"}, "regrading one student wiped the gradebook"
    assert after["carl"]["total"] == "100"
    assert after["alice"] == before["alice"] and after["bob"] == before["bob"]

    unchanged = _run(sorted(subs.iterdir()), out)
    assert unchanged.returncode == 0 and unchanged.stdout.count("unchanged since it was graded") == 3
    assert "3 unchanged" in unchanged.stdout and _rows(out) == after
    forced = _run([subs / "bob.py"], out, "--force")
    assert "unchanged" not in forced.stdout and _rows(out) == after


@pytest.mark.slow
def test_ctrl_c_writes_the_gradebook_for_what_was_graded_and_a_rerun_finishes(tmp_path):
    subs, out = _class(tmp_path), tmp_path / "grades"
    # dana and erik are right but slow to import (4 s each, under the 10 s limit), so the batch
    # is still running when Ctrl-C comes, however late a loaded machine lets this test send it
    # (a batch of five fast files once finished before it: exit 0)
    slow = "import time\ntime.sleep(4)\n" + open(SOLUTION, encoding="utf-8").read()
    for name in ("dana", "erik"):
        (subs / f"{name}.py").write_text(slow, encoding="utf-8")
    paths = sorted(subs.iterdir())
    # Ctrl-C as a terminal delivers it: a test run started in the background of a shell
    # without job control inherits SIGINT ignored, and Python then leaves it ignored
    proc = subprocess.Popen([sys.executable, "-m", "grader", "grade", *map(str, paths), "--out",
                             str(out), *FAST], cwd=KIT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 600
    for line in proc.stdout:  # wait for the first graded row, then press Ctrl-C
        if line.startswith("[  1/5"):
            break
        assert time.monotonic() < deadline
    proc.send_signal(signal.SIGINT)
    rest, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr and "interrupted:" in stderr
    assert len(stderr.strip().splitlines()) == 1, stderr
    graded = _rows(out)
    assert 1 <= len(graded) < 5 and all(r["status"] == "graded" for r in graded.values())

    rerun = _run(paths, out)
    assert rerun.returncode == 0, rerun.stderr
    assert rerun.stdout.count("unchanged since it was graded") == len(graded)
    final = _rows(out)
    assert set(final) == {"alice", "bob", "carl", "dana", "erik"}
    assert final["dana"]["total"] == final["erik"]["total"] == "100"
