"""The documentation site (issue 31): its reference pages are generated from the code and fail
the build when the code and tools/docs_hooks.py disagree; every page is in the navigation;
every repository path a page names exists; the README stays under 8 KB and links only to
pages that exist; and, where MkDocs is installed (the docs extra), `mkdocs build --strict`
passes."""
import importlib.util
import logging
import os
import re
import subprocess
import sys

import pytest
import yaml

from conftest import KIT
from grading import run_grader

DOCS = os.path.join(KIT, "docs")


def _hooks():
    spec = importlib.util.spec_from_file_location("docs_hooks", os.path.join(KIT, "tools",
                                                                             "docs_hooks.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


HOOKS = _hooks()


def _pages():
    return sorted(os.path.relpath(os.path.join(root, name), DOCS).replace(os.sep, "/")
                  for root, _, names in os.walk(DOCS) for name in names if name.endswith(".md"))


def _nav_pages(nav):
    for entry in nav:
        value = next(iter(entry.values())) if isinstance(entry, dict) else entry
        if isinstance(value, list):
            yield from _nav_pages(value)
        else:
            yield value


def _config():
    with open(os.path.join(KIT, "mkdocs.yml"), encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def test_every_page_is_in_the_navigation_once_and_every_entry_is_a_page():
    listed = list(_nav_pages(_config()["nav"]))
    assert sorted(listed) == _pages()


def test_no_plugin_fetches_anything_at_build_time():
    config = _config()
    plugins = [p if isinstance(p, str) else next(iter(p)) for p in config["plugins"]]
    assert plugins == ["search"]
    assert config["theme"]["font"] is False   # Material would link Google Fonts otherwise


def test_the_site_has_a_page_per_platform_each_naming_its_pitfalls():
    for name in ("canvas", "moodle", "gradescope", "nbgrader", "github-classroom",
                 "plain-folder"):
        with open(os.path.join(DOCS, "how-to", f"{name}.md"), encoding="utf-8") as handle:
            text = handle.read()
        assert '!!! warning "Pitfalls"' in text, name
    with open(os.path.join(DOCS, "how-to", "moodle.md"), encoding="utf-8") as handle:
        moodle = handle.read()
    assert "timezone = \"Asia/Shanghai\"" in moodle
    with open(os.path.join(DOCS, "how-to", "canvas.md"), encoding="utf-8") as handle:
        canvas = handle.read()
    assert "`LATE` flag and your extensions" in canvas and "Group assignments" in canvas


def test_the_command_reference_is_every_commands_own_help():
    text = HOOKS.cli()
    env = dict(os.environ, COLUMNS="100")
    for name in ("release", "grade", "gradescope", "export", "gradebook", "show", "override",
                 "nbgrader", "merge", "similarity", "validate"):
        done = run_grader(name, "--help", env=env, timeout=120)
        assert done.returncode == 0, done.stderr
        # the usage line names the program as run; the rest is the same text
        body = done.stdout.split("\n\n", 1)[1].rstrip()
        assert f"## `grader {name}`" in text and body in text, name


def test_the_assignment_reference_gives_each_keys_type_default_and_error():
    text = HOOKS.assignment_toml()
    assert ("| `total_points` | a number | required | the assignment's total; the parts must "
            "add up to it | `assignment.toml: 'total_points' must be a number, got 'x'` |") in text
    assert ("| `gpu` | true or false | `False` | the part that reruns its targets' cases on a "
            "GPU | `assignment.toml: parts[0]: 'gpu' must be true or false, got 1` |") in text
    assert "`assignment.toml: builds_on[0]: 'provide' must be a string, got 7`" in text


def test_the_course_reference_gives_each_keys_type_default_and_error():
    text = HOOKS.course_toml()
    assert ("| `late_policy.unknown_days` | whole number | 1 | the LMS said late but gave no "
            "time: charged as this many days | `late_policy.unknown_days = 1.5`: `course.toml: "
            "late_policy.unknown_days: expected a whole number, got 1.5` |") in text
    assert "`course.toml: late_policy.percent: at most 100, got 120`" in text
    assert "| `grace_minutes` | number | 0.0 |" in text


def test_the_files_reference_lists_grades_csv_columns_as_written():
    text = HOOKS.output_files()
    columns = ["submission", "student_id", "name", "status", "total", "max",
               "sequence_mask (/11)", "masked_softmax (/20)", "AdditiveAttention (/15)",
               "DotProductAttention (/15)", "transpose (/9)", "MultiHeadAttention (/20)",
               "GPU (/10)", "diagnoses", "reason", "source", "folder", "late", "days_late",
               "submitted_at", "time_source", "time_zone", "raw_total", "penalty", "overrides",
               "flags"]
    assert "\n".join(f"{i}. `{c}`" for i, c in enumerate(columns, 1)) in text
    assert "`results.json` | Gradescope's format; capped at 1024 KB" in text


def test_a_key_added_to_the_code_and_not_to_the_reference_fails_the_build(monkeypatch):
    from grader import assignment, course
    from grader.report import folders
    monkeypatch.setattr(course, "POLICY_KEYS", course.POLICY_KEYS | {"weekends"})
    with pytest.raises(HOOKS.DocsError, match="late_policy.weekends"):
        HOOKS.course_toml()
    monkeypatch.setattr(assignment, "_TOP", dict(assignment._TOP, deadline=str))
    with pytest.raises(HOOKS.DocsError, match="'deadline' is checked by grader/assignment.py"):
        HOOKS.assignment_toml()
    monkeypatch.setattr(folders, "RESERVED", folders.RESERVED | {"summary.csv"})
    with pytest.raises(HOOKS.DocsError, match="summary.csv"):
        HOOKS.output_files()


def test_a_documented_refusal_the_code_accepts_fails_the_build(monkeypatch):
    from grader import course
    real = course.from_data

    def lenient(data, path=""):
        if isinstance(data.get("late_policy"), dict):   # as if unknown_days = 1.5 were fine
            data["late_policy"].pop("unknown_days", None)
        return real(data, path)
    monkeypatch.setattr(course, "from_data", lenient)
    with pytest.raises(HOOKS.DocsError, match="unknown_days = 1.5 was accepted"):
        HOOKS.course_toml()


class _Page:
    def __init__(self, uri):
        self.file = type("F", (), {"src_uri": uri})()


def test_the_hook_fills_markers_and_refuses_a_lost_or_unknown_one():
    filled = HOOKS.on_page_markdown("# x\n\n<!-- generated: course-toml -->\n",
                                    _Page("reference/course-toml.md"), None, None)
    assert "<!-- generated" not in filled and "| `due` |" in filled
    with pytest.raises(HOOKS.DocsError, match="must hold <!-- generated: cli -->"):
        HOOKS.on_page_markdown("# Commands\n", _Page("reference/cli.md"), None, None)
    with pytest.raises(HOOKS.DocsError, match="names no generator"):
        HOOKS.on_page_markdown("<!-- generated: colours -->", _Page("index.md"), None, None)


def test_every_repository_path_a_page_names_exists(caplog):
    with caplog.at_level(logging.WARNING, logger=HOOKS.log.name):
        HOOKS._paths_exist("see `grader/release.py` and `grader/release/core.py`", "x.md")
        assert [r.getMessage() for r in caplog.records] == [
            "x.md: names `grader/release.py`, which is not in the repository"]
        caplog.clear()
        for page in _pages():
            with open(os.path.join(DOCS, page), encoding="utf-8") as handle:
                HOOKS._paths_exist(handle.read(), page)
    assert [r.getMessage() for r in caplog.records] == []


def test_the_readme_is_short_and_links_only_to_pages_that_exist():
    path = os.path.join(KIT, "README.md")
    assert os.path.getsize(path) < 8 * 1024
    with open(path, encoding="utf-8") as handle:
        readme = handle.read()
    links = re.findall(r"\]\((docs/[^)#]+)(?:#[^)]*)?\)", readme)
    assert len(links) >= 8
    for link in links:
        assert os.path.isfile(os.path.join(KIT, link)), link
    assert "mkdocs serve" in readme


def test_the_site_builds_strictly(tmp_path):
    pytest.importorskip("mkdocs", reason="the docs extra (pip install -e '.[docs]') builds "
                                         "the site; .ci/run installs it")
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir",
                           str(tmp_path / "site")], cwd=KIT, capture_output=True, text=True,
                          timeout=600, env=dict(os.environ, NO_MKDOCS_2_WARNING="1"))
    assert done.returncode == 0, done.stdout + done.stderr
    for page in ("index.html", "reference/cli/index.html", "how-to/moodle/index.html",
                 "tutorials/first-self-check-zh/index.html"):
        assert (tmp_path / "site" / page).is_file(), page
    with open(tmp_path / "site" / "reference" / "course-toml" / "index.html",
              encoding="utf-8") as handle:
        page = handle.read()
    assert "late_policy.unknown_days" in page and "generated:" not in page


def test_the_isolation_page_counts_the_hostile_zoo_as_it_stands():
    """The page says how many hostile submissions tests/hostile_zoo.py holds: the number is
    the zoo's own, so an entry added or removed without the page fails here."""
    import hostile_zoo
    with open(os.path.join(DOCS, "explanation", "isolation.md"), encoding="utf-8") as handle:
        said = re.search(r"`tests/hostile_zoo\.py` holds (\d+) hostile", handle.read())
    assert said, "the isolation page no longer says how many entries the zoo holds"
    assert int(said.group(1)) == len(hostile_zoo.ZOO)
