"""The benchmark runs end to end on a small batch (grader/bench.py; its figures are measured by
hand, never asserted here): the copies at both --jobs, the shard path and its merge, which
must equal the one run. Its shard path crashed once for weeks (merge.write was handed a
folder where it takes a Gradebook) because nothing ran it."""
import subprocess
import sys

import pytest

from conftest import KIT


@pytest.mark.slow
def test_the_benchmark_runs_its_copies_and_its_shard_path_and_the_merge_equals_one_run():
    done = subprocess.run([sys.executable, "-m", "grader.bench", "--copies", "2",
                           "--class-size", "0", "--no-validate", "--similarity-class", "0",
                           "--shards", "2", "--bare-repeats", "1"], cwd=KIT, capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    out = done.stdout
    assert "batch of 2 at --jobs 1:" in out and "batch of 2 at --jobs 2:" in out, out
    assert "round trips per submission: full marks 3;" in out, out
    assert "2 shards of 2 at --jobs 1, wall (summed)" in out, out
    assert "merged grades.csv equal to the one run's: yes" in out, out
