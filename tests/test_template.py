"""The worker template (grader/sandbox/template.py): workers forked from a Python that
imported torch once, each in a sandbox of its own, nothing carried from one to the next."""
import os
import signal
import tempfile

import pytest

from conftest import isolation_levels
from grader.sandbox import template
from grader.sandbox.client import Worker
from grader.sandbox.limits import Limits

LEVELS = isolation_levels()

# what one submission leaves in the worker's Python, where the next would find it if the
# two shared a process or the template had run it
MARK = r'''
import os, sys, torch
seen = {"marked_before": hasattr(torch, "_attnkit_mark"), "modules": "attention_other" in sys.modules,
        "pid": os.getpid(), "uid": os.getuid(), "cwd": os.getcwd(), "files": sorted(os.listdir("."))}
torch._attnkit_mark = True
sys.modules["attention_other"] = sys.modules[__name__]
print("SEEN", seen)
'''


def _worker(tmp_path, level, name):
    folder = tmp_path / name
    folder.mkdir()
    (folder / "attention.py").write_text(MARK)
    stage = tempfile.mkdtemp(prefix="attnkit-test-stage-")
    os.chmod(stage, 0o711)
    return Worker(str(folder / "attention.py"), level, Limits(memory_mb=1500), stage)


def _load(worker):
    worker.start()
    reply = worker.request({"op": "load", "names": []}, timeout=60)
    worker.stop()
    out, err = worker.output()
    assert reply["ok"], (reply, err)
    return eval(next(l for l in out.splitlines() if l.startswith("SEEN"))[5:])


@pytest.mark.parametrize("level", LEVELS, ids=[f"{lv.level}{'-uid' if lv.uid else ''}" for lv in LEVELS])
def test_each_worker_is_forked_into_its_own_sandbox_and_inherits_nothing(tmp_path, level):
    first, second = _worker(tmp_path, level, "one"), _worker(tmp_path, level, "two")
    seen = [_load(first), _load(second)]
    assert first.started == second.started == "forked"
    assert first.limited_by()["worker_start"].startswith("forked from a template")
    for facts in seen:
        assert facts["marked_before"] is False and facts["modules"] is False
        assert facts["files"] == ["attention.py"]
    if level.level != "none":
        assert all(f["cwd"] == "/submission" for f in seen)
    if level.uid is not None:  # a throwaway uid each, leased afresh
        assert seen[0]["uid"] != seen[1]["uid"] and seen[0]["uid"] != 0


def test_workers_start_fresh_when_the_template_is_gone(tmp_path):
    level = LEVELS[0]
    used = template.current()
    assert used is not None and used.proc is not None  # this process's own template
    os.kill(used.proc.pid, signal.SIGKILL)
    used.proc.wait()
    try:
        worker = _worker(tmp_path, level, "after")
        facts = _load(worker)
        assert worker.started == "fresh" and facts["marked_before"] is False
        assert "template is not running" in worker.limited_by()["worker_start"]
        again = _worker(tmp_path, level, "again")  # the next one does not try the dead one
        _load(again)
        assert again.started == "fresh"
    finally:
        with template._LOCAL_LOCK:
            template._LOCAL.update(template=None, failed=False)


def test_fresh_mode_never_forks(tmp_path, monkeypatch):
    monkeypatch.setenv(template.ENV_MODE, "fresh")
    worker = _worker(tmp_path, LEVELS[0], "fresh")
    _load(worker)
    assert worker.started == "fresh"
    assert worker.limited_by()["worker_start"] == "fresh process"
