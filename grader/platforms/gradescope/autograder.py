"""The autograder zip for Gradescope (`grader gradescope`, commands/gradescope.py).

Gradescope builds an image from the zip once (running `setup.sh` as root), then runs
`run_autograder` for every submission with the student's files in /autograder/submission,
and reads /autograder/results/results.json. The zip grades one assignment (`--assignment
NAME`, the kit's default when not given) and holds those two scripts, `lock_hidden`, and
under kit/ the kit's public part (grader/, pyproject.toml, README.md), every hidden suite
(tests_hidden/ whole) and the solutions the assignment needs: its own and those of the
assignments it builds on, whatever they provide (the reference of a later assignment runs
the earlier one's).

Gradescope's containers run as root under Docker's default seccomp profile, which forbids
namespaces: `--isolation auto` then grades at level `none` with a throwaway uid. Everything
the zip holds beyond the public part is secret: `lock_hidden`, which `build` writes from the
zip's own list of files, makes each of them (and its folders) owned by root and closed to
group and others (go-rwx), then checks that every one is, and stops otherwise. setup.sh
runs it when the image is built and `run_autograder` before every grading, which it does
not start when the lock fails.

Disclosure (`--feedback`, `--visibility`): each hidden test in results.json carries
Gradescope's visibility (visible, after_due_date, after_published, hidden), while the total
score and the top-level output stay visible; with the tests hidden that output holds the
per-part summary only, never a case's inputs or expected values. A course that allows
resubmissions uses e.g. `--visibility after_due_date`.
"""
import os
import shlex
import stat
import zipfile

from ... import assignment as declared
from ... import i18n, paths
from ...report.summary import VISIBILITIES, check_level

SETUP = """#!/usr/bin/env bash
# Run once by Gradescope, as root, when it builds the autograder image.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
apt-get update > /dev/null        # the image's package lists may be absent or stale
apt-get install -y python3 python3-pip python3-venv > /dev/null
python3 -m venv /autograder/venv
/autograder/venv/bin/pip install --quiet --index-url https://download.pytorch.org/whl/cpu "torch=={torch}"
/autograder/venv/bin/pip install --quiet numpy "pytest>=7" "pytest-timeout>=2"
/autograder/venv/bin/pip install --quiet --no-deps -e /autograder/source/kit
bash /autograder/source/lock_hidden    # (an unzip may not keep its mode bits)
"""

RUN = """#!/usr/bin/env bash
# Run by Gradescope for every submission, as root. AUTOGRADER_ROOT and AUTOGRADER_PYTHON
# exist so the script can be tried outside Gradescope.
set -u
ROOT="${{AUTOGRADER_ROOT:-/autograder}}"
PY="${{AUTOGRADER_PYTHON:-$ROOT/venv/bin/python}}"
# every hidden suite and solution: root's only, or no grading at all
AUTOGRADER_ROOT="$ROOT" bash "$ROOT/source/lock_hidden" || exit 1
cd "$ROOT/source/kit"
mkdir -p "$ROOT/results"
exec "$PY" -m grader grade "$ROOT/submission" --out "$(mktemp -d)" \\
    --results-json "$ROOT/results/results.json" --isolation {isolation} \\
    --feedback {feedback} --visibility {visibility} --layout plain --lang {lang} \\
    --assignment {assignment}
"""

LOCK = """#!/usr/bin/env bash
# Written by `grader gradescope` from the list of what this zip holds: every hidden suite
# and solution below kit/ (and each folder of them) becomes root's, closed to group and
# others, so the worker's throwaway uid reads none of them. Then each is checked: one left
# open stops this script (and run_autograder, which grades nothing then).
set -euo pipefail
ROOT="${{AUTOGRADER_ROOT:-/autograder}}"
cd "$ROOT/source/kit"
LOCKED=(
{paths}
)
if [ "$(id -u)" = 0 ]; then chown root:root -- "${{LOCKED[@]}}"; fi
chmod go-rwx -- "${{LOCKED[@]}}"
if [ "$(id -u)" = 0 ]; then open=$(find "${{LOCKED[@]}}" -maxdepth 0 \\( -perm /077 -o ! -uid 0 \\) -print)
else open=$(find "${{LOCKED[@]}}" -maxdepth 0 -perm /077 -print); fi
if [ -n "$open" ]; then
    echo "lock_hidden: still readable by others, nothing graded: $open" >&2
    exit 1
fi
"""

PUBLIC = ("pyproject.toml", "README.md", "grader")   # the kit's code and docs: no answer in them
HIDDEN_SUITES = "tests_hidden"                         # shipped whole, locked


def _add_tree(archive, source, inside):
    """Add a file or a folder (no caches); the names it got in the zip."""
    if os.path.isfile(source):
        archive.write(source, inside)
        return [inside]
    added = []
    for folder, dirs, files in os.walk(source):
        dirs[:] = sorted(d for d in dirs if d not in ("__pycache__", ".pytest_cache"))
        for name in sorted(files):
            if name.endswith(".pyc"):
                continue
            path = os.path.join(folder, name)
            added.append(os.path.join(inside, os.path.relpath(path, source)))
            archive.write(path, added[-1])
    return added


def solutions_needed(assignment, kit_root):
    """The solution files (relative to the kit) grading `assignment` runs: its own and, through
    builds_on, every earlier assignment's, whatever it provides (the reference builds on
    the earlier reference)."""
    needed, todo, seen = [], [assignment], set()
    while todo:
        current = todo.pop(0)
        if current.name in seen:
            continue
        seen.add(current.name)
        needed.append(os.path.relpath(current.solution, kit_root))
        todo += [declared.load(dep.assignment, kit_root) for dep in current.builds_on]
    return needed


def locked_paths(names):
    """What lock_hidden locks, from the zip's names below kit/: every file that is not the
    kit's public part, and each folder of them (parents first)."""
    files = [n[len("kit/"):] for n in names if n.startswith("kit/")
             and n[len("kit/"):].split("/")[0] not in PUBLIC]
    folders = sorted({"/".join(f.split("/")[:i]) for f in files
                      for i in range(1, f.count("/") + 1)})
    return folders + sorted(files)


def _script(archive, name, text):
    info = zipfile.ZipInfo(name)
    info.external_attr = (stat.S_IFREG | 0o755) << 16
    archive.writestr(info, text)


def build(out_path, torch_version, isolation="auto", kit_root=paths.KIT_ROOT, feedback="full",
          visibility="visible", lang="en", assignment=None):
    """Write the autograder zip for `assignment` (a name, or None: the kit's default).
    feedback and visibility go to `grader grade` in run_autograder: how much of a hidden
    case students see, and each test's Gradescope visibility (after_due_date: shown only
    once the deadline has passed)."""
    check_level(feedback)
    if visibility not in VISIBILITIES:
        raise ValueError(f"visibility must be one of {', '.join(VISIBILITIES)}")
    if lang not in i18n.languages():
        raise ValueError(f"lang must be one of {', '.join(i18n.languages())}")
    kit_root = os.path.abspath(kit_root)
    partial = f"{out_path}.partial"   # a zip cut short never takes the name of a good one
    try:
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as archive:
            names = []
            for part in PUBLIC + (HIDDEN_SUITES,):
                names += _add_tree(archive, os.path.join(kit_root, part), f"kit/{part}")
            chosen = declared.load(getattr(assignment, "name", assignment), kit_root)
            for solution in solutions_needed(chosen, kit_root):
                names += _add_tree(archive, os.path.join(kit_root, solution), f"kit/{solution}")
            locked = locked_paths(names)
            _script(archive, "setup.sh", SETUP.format(torch=torch_version))
            _script(archive, "run_autograder", RUN.format(
                isolation=isolation, feedback=feedback, visibility=visibility, lang=lang,
                assignment=shlex.quote(chosen.name)))
            _script(archive, "lock_hidden", LOCK.format(
                paths="\n".join(f"  {shlex.quote(path)}" for path in locked)))
        os.replace(partial, out_path)
    finally:
        if os.path.exists(partial):
            os.remove(partial)
    return out_path

