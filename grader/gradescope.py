"""`grader gradescope`: the autograder zip for Gradescope.

Gradescope builds an image from the zip once (running `setup.sh` as root), then runs
`run_autograder` for every submission with the student's files in /autograder/submission,
and reads /autograder/results/results.json. The zip holds those two scripts and the kit
(grader/, solutions/, tests_hidden/, pyproject.toml) under kit/.

Gradescope's containers run as root under Docker's default seccomp profile, which forbids
namespaces: `--isolation auto` then grades at level `none` with a throwaway uid, and
`run_autograder` first makes solutions/ and tests_hidden/ readable by root only, so that
uid cannot read them.

Disclosure (`--feedback`, `--visibility`): each hidden test in results.json carries
Gradescope's visibility (visible, after_due_date, after_published, hidden), while the total
score and the top-level output stay visible; with the tests hidden that output holds the
per-part summary only, never a case's inputs or expected values. A course that allows
resubmissions uses e.g. `--visibility after_due_date`.
"""
import os
import stat
import zipfile

from . import paths

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
"""

RUN = """#!/usr/bin/env bash
# Run by Gradescope for every submission, as root. AUTOGRADER_ROOT and AUTOGRADER_PYTHON
# exist so the script can be tried outside Gradescope.
set -u
ROOT="${{AUTOGRADER_ROOT:-/autograder}}"
PY="${{AUTOGRADER_PYTHON:-$ROOT/venv/bin/python}}"
cd "$ROOT/source/kit"
chmod -R go-rwx solutions tests_hidden      # not readable by the worker's throwaway uid
mkdir -p "$ROOT/results"
exec "$PY" -m grader grade "$ROOT/submission" --out "$(mktemp -d)" \\
    --results-json "$ROOT/results/results.json" --isolation {isolation} \\
    --feedback {feedback} --visibility {visibility} --layout plain --lang {lang}
"""

KIT_PARTS = ("pyproject.toml", "README.md", "grader", "solutions", "tests_hidden")


def _add_tree(archive, source, inside):
    if os.path.isfile(source):
        archive.write(source, inside)
        return
    for folder, dirs, files in os.walk(source):
        dirs[:] = [d for d in dirs if d not in ("__pycache__", ".pytest_cache")]
        for name in sorted(files):
            if name.endswith(".pyc"):
                continue
            path = os.path.join(folder, name)
            archive.write(path, os.path.join(inside, os.path.relpath(path, source)))


def _script(archive, name, text):
    info = zipfile.ZipInfo(name)
    info.external_attr = (stat.S_IFREG | 0o755) << 16
    archive.writestr(info, text)


def build(out_path, torch_version, isolation="auto", kit_root=paths.KIT_ROOT, feedback="full",
          visibility="visible", lang="en"):
    """Write the autograder zip. feedback and visibility go to `grader grade` in
    run_autograder: how much of a hidden case students see, and each test's Gradescope
    visibility (after_due_date: shown only once the deadline has passed)."""
    from .report.summary import VISIBILITIES, check_level
    check_level(feedback)
    if visibility not in VISIBILITIES:
        raise ValueError(f"visibility must be one of {', '.join(VISIBILITIES)}")
    if lang not in ("en", "zh"):
        raise ValueError("lang must be en or zh")
    partial = f"{out_path}.partial"   # a zip cut short never takes the name of a good one
    try:
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as archive:
            _script(archive, "setup.sh", SETUP.format(torch=torch_version))
            _script(archive, "run_autograder", RUN.format(isolation=isolation, feedback=feedback,
                                                        visibility=visibility, lang=lang))
            for part in KIT_PARTS:
                _add_tree(archive, os.path.join(kit_root, part), os.path.join("kit", part))
        os.replace(partial, out_path)
    finally:
        if os.path.exists(partial):
            os.remove(partial)
    return out_path


def main(args):
    import torch
    version = args.torch or torch.__version__.split("+")[0]
    build(args.out, version, args.isolation, feedback=args.feedback, visibility=args.visibility,
          lang=args.lang)
    print(f"wrote {args.out}: setup.sh installs torch=={version} (CPU); students see "
          f"--feedback {args.feedback}, each test --visibility {args.visibility}; upload it as "
          f"the assignment's autograder")
    return 0
