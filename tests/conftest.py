"""Shared helpers for the kit's own tests, and the order the suite runs its files in."""
import json
import os
import shutil
import sys
import tempfile

import pytest

KIT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if KIT not in sys.path:
    sys.path.insert(0, KIT)

from grader.nbgrader_bridge import leave_out_iri_checker  # noqa: E402 - the kit on the path first

# the test processes import nbformat as `grader nbgrader` does, without jsonschema's IRI
# checker (no schema nbformat or nbgrader validates uses an IRI format): with Jupyter's
# extras installed, building that module's parsers was half of each xdist worker's
# collection and of .ci/test-extra's (9.5 s -> 4.8 s of CPU, the whole suite collected)
leave_out_iri_checker()

SOLUTION = os.path.join(KIT, "solutions", "attention.py")
SKELETON = os.path.join(KIT, "assignments", "attention", "attention.py")
SUBMISSIONS = os.path.join(KIT, "tests", "submissions")

_STAGES = []  # the folders stage_folder() made in this session (xdist: in this worker)


def student_env(*leave_out, **extra):
    """The environment a student folder's `pytest` runs in here: a student has torch and
    pytest and nothing else, so none of the plugins this venv has for the kit's own tests
    loads (hypothesis, xdist, anyio, timeout: their loading was 1.2 s of a 1.9 s run of
    the self-checks), and the kit is not on the path. `leave_out`: variables removed;
    `extra`: variables set."""
    env = {k: v for k, v in os.environ.items() if k not in leave_out}
    return {**env, "PYTHONPATH": "", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", **extra}


def processes_naming(*texts):
    """["pid command line"] of each process but this one whose command line names any of
    `texts` (a folder or marker of one test's own: other test runs on the machine never
    match)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                cmdline = handle.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if any(text in cmdline for text in texts):
            found.append(f"{entry} {cmdline[:160]}")
    return found


def stage_folder(prefix="attnkit-test-stage-"):
    """A folder a sandboxed worker can reach (0o711, under /tmp: tmp_path's parents are
    private to the user running the tests), removed when the test session ends."""
    folder = tempfile.mkdtemp(prefix=prefix)
    os.chmod(folder, 0o711)
    _STAGES.append(folder)
    return folder


def pytest_unconfigure(config):
    """The tests leave no folder of stage_folder() behind (they did: hundreds an hour). Here,
    not in a session fixture: a module that makes one as it is imported (test_fuzz_replies)
    made it in a run that only collects (.ci/test-extra's check), where no fixture runs, and
    one folder stayed behind each CI run."""
    while _STAGES:
        shutil.rmtree(_STAGES.pop(), ignore_errors=True)


# how long each test file took (tools/test_durations.py records it from a run's junit XML)
DURATIONS = os.path.join(KIT, "tests", "durations.json")


def pytest_configure(config):
    """With pytest-xdist, hand the files out in the order collected (below), not xdist's
    default of the files with the most tests first."""
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False


def pytest_collection_modifyitems(session, config, items):
    """The longest files first (tests/durations.json), so that under `-n 2 --dist loadfile`
    the last files to start are short ones and both workers finish together (the slowest
    file, the nbgrader round trip, ran last and alone before). A file's tests keep their
    order; a file not in the table runs after those in it."""
    try:
        with open(DURATIONS, encoding="utf-8") as handle:
            seconds = json.load(handle)
    except (OSError, ValueError):
        return
    items.sort(key=lambda item: -seconds.get(item.nodeid.split("::")[0], 0))


@pytest.fixture(scope="session")
def solution_source():
    with open(SOLUTION, encoding="utf-8") as handle:
        return handle.read()


def isolation_levels():
    """Every isolation level this machine offers, as the grader would choose it."""
    from grader.sandbox import isolation
    found = []
    for name in isolation.LEVELS:
        try:
            found.append(isolation.choose(name))
        except isolation.IsolationUnavailable:
            pass
    return found


def copy_kit(dest, parts=("grader", "solutions", "tests_hidden")):
    """A copy of the kit's `parts` (folders of the checkout) at `dest`; its path.

    The compiled modules are copied with the sources and their times (shutil.copy2), so
    they stay valid for the copy: where PYTHONDONTWRITEBYTECODE is set (as in CI), each
    command line and fork server started in a copy compiled the kit's modules again, about
    0.1 s of CPU each, and nothing kept them. A source a test then changes gets a new time,
    and Python compiles that one again. pytest's own caches are left out."""
    dest = str(dest)
    for part in parts:
        shutil.copytree(os.path.join(KIT, part), os.path.join(dest, part),
                        ignore=shutil.ignore_patterns(".pytest_cache"))
    return dest


def student_provided_kit(dest, parts=("grader", "tests_hidden", "solutions")):
    """A copy of the kit at `dest` (a pathlib.Path) whose transformer declares its
    `builds_on` attention with provide = "student": each student's own attention module is
    graded with their transformer. Grade in it with cwd=dest (PYTHONPATH=dest)."""
    copy_kit(dest, parts)
    toml = dest / "tests_hidden" / "transformer" / "assignment.toml"
    text = toml.read_text(encoding="utf-8")
    assert text.count('provide = "given"') == 1
    toml.write_text(text.replace('provide = "given"', 'provide = "student"'), encoding="utf-8")
    return dest

