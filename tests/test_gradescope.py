"""The Gradescope autograder zip, run the way Gradescope runs it (with /autograder moved
into a temporary folder, and this machine's Python instead of the one setup.sh installs)."""
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import zipfile

import pytest

from conftest import KIT, SOLUTION, copy_kit, stage_folder
from grader.platforms.gradescope.autograder import build


def test_autograder_zip_grades_a_submission(tmp_path):
    archive = build(str(tmp_path / "autograder.zip"), "2.13.0")
    root = tmp_path / "autograder"
    with zipfile.ZipFile(archive) as z:
        names = z.namelist()
        assert {"setup.sh", "run_autograder"} <= set(names)
        assert any(n.startswith("kit/tests_hidden/") for n in names)
        assert not any("__pycache__" in n for n in names)
        assert z.getinfo("run_autograder").external_attr >> 16 & stat.S_IXUSR
        z.extractall(root / "source")
    setup = (root / "source" / "setup.sh").read_text()
    assert "torch==2.13.0" in setup and "download.pytorch.org/whl/cpu" in setup
    shutil.copy(root / "source" / "run_autograder", root / "run_autograder")
    os.chmod(root / "run_autograder", 0o755)
    (root / "submission").mkdir()
    shutil.copy(os.path.join(KIT, "examples", "alice.py"), root / "submission" / "attention.py")
    # its --out is a `mktemp -d` (Gradescope's container is thrown away after): here one under
    # a stage folder, removed with it, not one left in /tmp each run
    scratch = stage_folder()
    done = subprocess.run([str(root / "run_autograder")], cwd=root, capture_output=True, text=True,
                          timeout=600, env={**os.environ, "AUTOGRADER_ROOT": str(root),
                                            "AUTOGRADER_PYTHON": sys.executable,
                                            "TMPDIR": scratch})
    assert done.returncode == 0, done.stdout + done.stderr
    assert os.listdir(scratch), "run_autograder wrote its --out elsewhere"
    results = json.loads((root / "results" / "results.json").read_text())
    assert results["score"] == 100.0
    assert results["extra_data"]["isolation"]["level"] in ("bwrap", "unshare", "none")
    mode = os.stat(root / "source" / "kit" / "solutions").st_mode
    assert not mode & (stat.S_IRWXG | stat.S_IRWXO), "solutions/ must be closed to other users"


def test_setup_refreshes_the_package_lists_before_installing(tmp_path):
    """Gradescope's base image may have no apt lists (or stale ones): `apt-get install`
    then fails with 'Unable to locate package'. setup.sh runs `apt-get update` first."""
    with zipfile.ZipFile(build(str(tmp_path / "autograder.zip"), "2.13.0")) as z:
        setup = z.read("setup.sh").decode("utf-8")
    commands = [line.split(">")[0].split("#")[0].strip() for line in setup.splitlines()]
    apt = [c for c in commands if c.startswith("apt-get")]
    assert apt == ["apt-get update", "apt-get install -y python3 python3-pip python3-venv"], apt
    assert "set -euo pipefail" in commands  # a failed update stops the build, not later
    assert commands.index("set -euo pipefail") < commands.index("apt-get update")


# -- what the zip locks (issue 16) --------------------------------------------------------------

PROBE = """import json, os, sys
readable, listable = [], []
for path in sys.argv[1:]:
    try:
        if os.path.isdir(path):
            os.listdir(path)
            listable.append(path)
        else:
            with open(path, "rb") as handle:
                handle.read(1)
            readable.append(path)
    except OSError:
        pass
print(json.dumps({"uid": os.getuid(), "readable": readable, "listable": listable}))
"""


def _as_worker(paths):
    """What a throwaway uid, leased as the grader leases the worker's, can read of `paths`."""
    from grader.sandbox import isolation
    uid = isolation.lease_uid()
    try:
        def drop():
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
        python = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
        done = subprocess.run([python, "-I", "-c", PROBE, *paths], capture_output=True,
                              text=True, timeout=120, preexec_fn=drop, cwd="/")
    finally:
        isolation.release_uid(uid)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["uid"] == uid
    return seen


def _files_below(root, *folders):
    found = []
    for folder in folders:
        for where, dirs, names in os.walk(os.path.join(root, folder)):
            dirs[:] = [d for d in dirs if d not in ("__pycache__", ".pytest_cache")]
            found += [os.path.relpath(os.path.join(where, n), root) for n in names
                      if not n.endswith(".pyc")]
    return sorted(found)


@pytest.mark.skipif(os.geteuid() != 0, reason="the worker's throwaway uid needs root (as on "
                                               "Gradescope)")
def test_the_zip_locks_every_hidden_suite_and_solution_from_the_workers_user():
    """A kit with a second suite that builds on attention (as given code) and a solution
    it does not need: the zip for the second ships every suite, both solutions it needs and
    not the other, grades --assignment second; its lock step leaves the worker's uid nothing
    of any suite or solution to read or list (it could read all of it before), every file
    root's with mode go-rwx, while the public kit stays readable."""
    base = tempfile.mkdtemp(prefix="attnkit-gradescope-")
    try:
        os.chmod(base, 0o755)  # pytest's own tmp folder is closed to other users: not a test
        kit = os.path.join(base, "kit")
        copy_kit(kit)
        for name in ("pyproject.toml", "README.md"):
            shutil.copy(os.path.join(KIT, name), kit)
        second = os.path.join(kit, "tests_hidden", "second")
        os.makedirs(os.path.join(second, "data"))
        with open(os.path.join(KIT, "tests_hidden", "attention", "assignment.toml")) as handle:
            declaration = handle.read()
        declaration = declaration.replace('name = "attention"', 'name = "second"', 1).replace(
            'solution = "solutions/attention.py"', 'solution = "solutions/second.py"')
        declaration += '\n[[builds_on]]\nassignment = "attention"\nprovide = "given"\n'
        with open(os.path.join(second, "assignment.toml"), "w") as handle:
            handle.write(declaration)
        with open(os.path.join(second, "data", "expected.txt"), "w") as handle:
            handle.write("the second suite's expected values\n")
        shutil.copy(SOLUTION, os.path.join(kit, "solutions", "second.py"))
        shutil.copy(SOLUTION, os.path.join(kit, "solutions", "unused.py"))

        archive = build(os.path.join(base, "autograder.zip"), "2.13.0", kit_root=kit,
                        assignment="second")
        root = os.path.join(base, "autograder")
        with zipfile.ZipFile(archive) as z:
            names = z.namelist()
            z.extractall(os.path.join(root, "source"))
            run = z.read("run_autograder").decode("utf-8")
            setup = z.read("setup.sh").decode("utf-8")
        assert "--assignment second\n" in run and "lock_hidden" in run and "lock_hidden" in setup
        suites = _files_below(kit, "tests_hidden")
        assert "tests_hidden/second/data/expected.txt" in suites
        assert "tests_hidden/transformer/assignment.toml" in suites
        shipped = sorted(n[len("kit/"):] for n in names
                         if n.startswith(("kit/tests_hidden/", "kit/solutions/")))
        assert shipped == sorted(suites + ["solutions/attention.py", "solutions/second.py"])
        extracted = os.path.join(root, "source", "kit")
        secret = [os.path.join(extracted, p) for p in shipped]
        folders = sorted({os.path.dirname(p) for p in secret})
        public = os.path.join(extracted, "grader", "__init__.py")

        before = _as_worker(secret + folders + [public])
        assert sorted(before["readable"]) == sorted(secret + [public])  # the probe can read

        lock = os.path.join(root, "source", "lock_hidden")  # as extracted: run with bash
        done = subprocess.run(["bash", lock], capture_output=True, text=True, timeout=120,
                              env={**os.environ, "AUTOGRADER_ROOT": root})
        assert done.returncode == 0, done.stderr
        after = _as_worker(secret + folders + [public])
        assert after["readable"] == [public] and after["listable"] == []
        for path in secret + folders:
            info = os.stat(path)
            assert info.st_uid == 0 and info.st_gid == 0, path
            assert not info.st_mode & 0o077, (path, oct(info.st_mode))
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root, as on Gradescope")
def test_the_lock_step_stops_when_a_suite_stays_open(tmp_path):
    """A secret the lock step cannot lock (here: a file the zip held is gone) stops it with
    the file's name, and run_autograder then grades nothing (no results.json): a failure of
    the autograder, never a grade given with a suite left open."""
    archive = build(str(tmp_path / "autograder.zip"), "2.13.0")
    root = tmp_path / "autograder"
    with zipfile.ZipFile(archive) as z:
        z.extractall(root / "source")
    os.remove(root / "source" / "kit" / "tests_hidden" / "attention" / "cases.py")
    lock = root / "source" / "lock_hidden"
    done = subprocess.run(["bash", str(lock)], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "AUTOGRADER_ROOT": str(root)})
    assert done.returncode != 0 and "tests_hidden/attention/cases.py" in done.stderr
    shutil.copy(os.path.join(KIT, "tests_hidden", "attention", "cases.py"),
                root / "source" / "kit" / "tests_hidden" / "attention" / "cases.py")
    run = root / "run_autograder"
    shutil.copy(root / "source" / "run_autograder", run)
    os.chmod(run, 0o755)
    os.remove(root / "source" / "kit" / "solutions" / "attention.py")
    done = subprocess.run([str(run)], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "AUTOGRADER_ROOT": str(root),
                               "AUTOGRADER_PYTHON": sys.executable})
    assert done.returncode == 1 and not (root / "results" / "results.json").exists()
    assert "solutions/attention.py" in done.stderr
