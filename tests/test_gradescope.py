"""The Gradescope autograder zip, run the way Gradescope runs it (with /autograder moved
into a temporary folder, and this machine's Python instead of the one setup.sh installs)."""
import json
import os
import shutil
import stat
import subprocess
import sys
import zipfile

from conftest import KIT
from grader.gradescope import build


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
    done = subprocess.run([str(root / "run_autograder")], cwd=root, capture_output=True, text=True,
                          timeout=600, env={**os.environ, "AUTOGRADER_ROOT": str(root),
                                            "AUTOGRADER_PYTHON": sys.executable})
    assert done.returncode == 0, done.stdout + done.stderr
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
