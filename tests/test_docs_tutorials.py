"""Every command a tutorial of the documentation site shows is run, and every output line it
shows is checked (issue 31: the tutorials are checked like code).

A tutorial's blocks, in order, in one working folder (a temporary one holding links to the
kit's examples/ and solutions/ and, for the student pages, a copy of the student folder):

    ```console    each `$ command` runs in bash, from the folder the previous one ended in, and
                  must exit 0 (a page that expects a failure shows `; echo "exit status: $?"`);
                  each line shown after it must be in what it printed (spaces collapsed; `...`
                  stands for any text)
    ```toml title="PATH"     the block is written to PATH
    ```python title="FILE"   the python block shown just before it is replaced by this one
                             in FILE (the student's edit of a stub)

Blocks without a title (```bash, ```python shown as what a file holds) are prose.
"""
import os
import re
import shutil
import subprocess
import sys

import pytest

from conftest import KIT

DOCS = os.path.join(KIT, "docs")
TUTORIALS = ["tutorials/first-class.md", "tutorials/first-self-check.md",
             "tutorials/first-self-check-zh.md"]
FENCE = re.compile(r'^```(\w+)(?:\s+title="([^"]+)")?\n(.*?)^```\n', re.DOTALL | re.MULTILINE)


def steps(text):
    """The page's steps: ("run", command, [shown lines]), ("write", path, text),
    ("replace", file, old, new)."""
    out, shown_python = [], None
    for lang, title, body in FENCE.findall(text):
        if lang == "console":
            for line in body.splitlines():
                if line.startswith("$ "):
                    out.append(("run", line[2:], []))
                elif line.strip():
                    assert out and out[-1][0] == "run", f"output before any command: {line!r}"
                    out[-1][2].append(line)
        elif lang == "python" and title:
            assert shown_python, f"nothing shown to replace with {title}'s block"
            out.append(("replace", title, shown_python, body))
        elif lang == "python":
            shown_python = body
        elif title:
            out.append(("write", title, body))
    return out


def _normal(line):
    return " ".join(line.replace("\ufeff", "").split())


def shown_line_found(shown, printed):
    """Is the page's line `shown` (with `...` for any text) one of the lines printed?"""
    pattern = ".*".join(re.escape(part) for part in _normal(shown).split("..."))
    return any(re.search(pattern, _normal(line)) for line in printed.splitlines())


def test_the_steps_reader_reads_each_kind_of_block():
    page = ('```console\n$ echo hi\nhi\n$ true\n```\n```bash\npip install x\n```\n'
            '```toml title="a/b.toml"\nx = 1\n```\n```python\n    raise X\n```\n'
            '```python title="m.py"\n    return 1\n```\n')
    assert steps(page) == [("run", "echo hi", ["hi"]), ("run", "true", []),
                           ("write", "a/b.toml", "x = 1\n"),
                           ("replace", "m.py", "    raise X\n", "    return 1\n")]
    assert shown_line_found("35 failed, 1 skipped in ...", "x\n35 failed,  1 skipped in 5.2s\n")
    assert not shown_line_found("35 failed, 1 skipped in ...", "34 failed, 1 skipped in 5.2s")
    assert not shown_line_found("final score 83/100", "final score 93/100")


def _workspace(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    for name in ("examples", "solutions"):
        os.symlink(os.path.join(KIT, name), work / name)
    shutil.copytree(os.path.join(KIT, "assignments", "attention"), work / "attention",
                    ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    return work


@pytest.mark.slow
@pytest.mark.parametrize("page", TUTORIALS)
def test_each_tutorial_runs_as_written(page, tmp_path):
    with open(os.path.join(DOCS, page), encoding="utf-8") as handle:
        todo = steps(handle.read())
    assert sum(1 for s in todo if s[0] == "run") >= 3, "a tutorial with hardly any commands"
    cwd = str(_workspace(tmp_path))
    where = tmp_path / "cwd"
    # a reader has torch and pytest and none of the plugins this venv has for the kit's own
    # tests: the self-checks run without them (conftest.student_env), as on a laptop
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"],
               COLUMNS="100", PYTHONDONTWRITEBYTECODE="1", PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
    for step in todo:
        if step[0] == "write":
            path = os.path.join(cwd, step[1])
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(step[2])
            continue
        if step[0] == "replace":
            path = os.path.join(cwd, step[1] if step[1].endswith(".py") else "attention.py")
            with open(path, encoding="utf-8") as handle:
                text = handle.read()
            assert text.count(step[2]) == 1, f"{page}: the stub shown is not in {path} once"
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(text.replace(step[2], step[3]))
            continue
        _, command, shown = step
        script = f'cd "$1" || exit 99\n{command}\nstatus=$?\npwd > "$2"\nexit $status\n'
        done = subprocess.run(["bash", "-c", script, "tutorial", cwd, str(where)], env=env,
                              capture_output=True, text=True, timeout=600)
        printed = done.stdout + done.stderr
        assert done.returncode == 0, f"{page}: `{command}` exited {done.returncode}:\n{printed}"
        for line in shown:
            assert shown_line_found(line, printed), \
                f"{page}: `{command}` did not print {line!r}; it printed:\n{printed}"
        cwd = where.read_text().strip()
