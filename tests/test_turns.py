"""A submission's turn (grader/grade/turns.py): `grader grade --jobs N` prepares one trusted
process more than N ahead, but never runs more than N submissions' code at once, in the
order they were given; the wait for a turn is no part of a result's time; and a prepared
process a classmate kills while it waits costs its submission nothing."""
import csv
import json
import os
import subprocess
import sys
import time

import pytest

from conftest import KIT
from grader import assignment as assignments
from grader.grade import SuiteOptions, grade_batch
from grader.sandbox import isolation
from hostile_zoo import GRADER_PROCESSES, KILL_TRUSTED_NOW, OWN_GRADER, solution, zero_stub

SLEEP = 2.0  # seconds each submission's code sleeps at import


def _none_without_uid():
    try:
        return isolation.choose("none").uid is None
    except isolation.IsolationUnavailable:
        return False


def _sleeper(log, name, leave_behind=False):
    """A zero stub that logs when its code starts and ends, sleeping SLEEP s in between (at
    level none a worker may write where the test tells it); `leave_behind`: it also forks a
    process that logs a tick every 50 ms until it is killed."""
    ticking = (f"import os as _os\n"
               f"if _os.fork() == 0:\n"
               f"    while True:\n"
               f"        with open({str(log)!r}, 'a') as _h:\n"
               f"            _h.write('tick {name} %r\\n' % _t.time())\n"
               f"        _t.sleep(0.05)\n") if leave_behind else ""
    return zero_stub(f"import time as _t\n"
                     f"with open({str(log)!r}, 'a') as _h:\n"
                     f"    _h.write('start {name} %r\\n' % _t.time())\n"
                     + ticking +
                     f"_t.sleep({SLEEP})\n"
                     f"with open({str(log)!r}, 'a') as _h:\n"
                     f"    _h.write('end {name} %r\\n' % _t.time())\n")


@pytest.mark.slow
@pytest.mark.skipif(not _none_without_uid(), reason="the sleepers log from level none")
def test_one_job_runs_one_submissions_code_at_a_time_and_times_leave_the_wait_out(tmp_path):
    log = tmp_path / "log.txt"
    paths = []
    for name in ("a", "b", "c"):
        path = tmp_path / f"{name}.py"
        path.write_text(_sleeper(log, name, leave_behind=name == "a"), encoding="utf-8")
        paths.append(str(path))
    options = SuiteOptions(isolation="none", assignment=assignments.load(None))
    started = time.monotonic()
    with open(os.devnull, "w") as quiet:
        results = grade_batch(paths, str(tmp_path / "out"), options, jobs=1, stream=quiet,
                              force=True)
    wall = time.monotonic() - started
    spans = {}
    for line in log.read_text().splitlines():
        what, name, when = line.split()
        spans.setdefault(name, {})[what] = float(when)  # a tick: the last one stays
    assert sorted(spans) == ["a", "b", "c"]
    # what a's code left running was stopped before b's code began: the slot a trusted
    # process hands back early (turns.done) comes only once its worker's processes are gone
    assert spans["a"]["start"] < spans["a"]["tick"] < spans["b"]["start"], spans
    # in the order they were given, one at a time
    assert sorted(spans, key=lambda name: spans[name]["start"]) == ["a", "b", "c"], spans
    ordered = sorted(spans.values(), key=lambda span: span["start"])
    for earlier, later in zip(ordered, ordered[1:]):
        assert later["start"] >= earlier["end"], spans  # never two submissions' code at once
    # the two that came later were prepared ahead and waited for their turn ...
    waits = sorted(r.costs["turn_wait"] for r in results)
    assert waits[0] < 0.5 and waits[1] > SLEEP / 2 and waits[2] > SLEEP / 2, waits
    # ... and their times leave that wait out: the three ran one after the other in `wall`
    assert all(r.seconds >= SLEEP for r in results), [r.seconds for r in results]
    assert sum(r.seconds for r in results) < wall, ([r.seconds for r in results], wall)


# kills every trusted process and the fork server once a classmate's trusted process waits
# for its turn (the first run only: graded alone, it kills at once, and is charged). A
# process waits when it is seen on every look for 3 s: the batch's catalog, a fork that comes
# and goes, is not one. (It killed at the first other fork it saw before: once in 9 runs of
# the suite the classmate was then graded as usual, most likely because that fork was not
# the classmate's.) Where its own trusted process is not known (OWN_GRADER finds it by its
# uid's lease) it waits for two, its own and the classmate's. The marker says whether it
# found the classmate's.
KILL_THE_WAITING = GRADER_PROCESSES + OWN_GRADER + """
import time as _time
if not os.path.exists(MARKER):
    _own = _own_grader()
    _needed = 1 if _own else 2
    _seen, _waiting, _deadline = {}, [], _time.monotonic() + 60
    while len(_waiting) < _needed and _time.monotonic() < _deadline:
        _now = _time.monotonic()
        _seen = {p: _seen.get(p, _now) for p in _trusted_forks() if p not in _own}
        _waiting = [p for p, _since in _seen.items() if _now - _since >= 3]
        _time.sleep(0.05)
    with open(MARKER, "w") as _h:
        _h.write("killed" if len(_waiting) >= _needed else
                 f"no classmate's process waited: {sorted(_seen)}")
""" + KILL_TRUSTED_NOW


@pytest.mark.slow
@pytest.mark.skipif(not _none_without_uid(), reason="the attack needs level none without a "
                                                    "throwaway uid")
def test_a_prepared_process_killed_while_it_waits_costs_its_submission_nothing(tmp_path):
    marker = tmp_path / "killed.txt"
    (tmp_path / "a_kill.py").write_text(
        zero_stub("MARKER = " + repr(str(marker)) + "\n" + KILL_THE_WAITING), encoding="utf-8")
    (tmp_path / "b_right.py").write_text(solution(), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "grader", "grade", str(tmp_path / "a_kill.py"),
         str(tmp_path / "b_right.py"), "--out", str(tmp_path / "out"), "--isolation", "none",
         "--jobs", "1", "--import-seconds", "90", "--submission-seconds", "200"],
        cwd=KIT, capture_output=True, text=True, timeout=1200,
        env={**os.environ, "PYTHONPATH": KIT})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert marker.read_text() == "killed"
    with open(tmp_path / "out" / "grades.csv", encoding="utf-8-sig") as handle:
        rows = {row["submission"]: row for row in csv.DictReader(handle)}
    # the right one, killed while it waited: graded again alone, full marks, no grader error
    assert (rows["b_right"]["status"], rows["b_right"]["total"]) == ("graded", "100"), rows
    results = json.loads((tmp_path / "out" / "b_right" / "results.json").read_text())
    alone = results["extra_data"]["isolation"]["graded_alone"]
    assert alone.startswith("graded again alone: the trusted process was stopped (") and \
        alone.endswith("while its submission's worker was not running"), alone
    # the attacker is charged as before: stopped while its own code ran, again alone
    assert (rows["a_kill"]["status"], rows["a_kill"]["total"]) == ("graded", "0"), rows
    feedback = (tmp_path / "out" / "a_kill" / "feedback.txt").read_text(encoding="utf-8")
    assert ("was stopped while the submission's code was running, and again when it was graded "
            "alone") in feedback, feedback[:1500]
