"""Adding a platform is one module (issue 30): in a copy of the kit, a toy Blackboard-style
platform is written as grader/platforms/blackboard.py and nothing else changes; a download
of it is recognised (who, when), graded, charged its lateness and exported, and `--layout`
and `grader export` offer it, while the kit itself does not know it."""
import os
import shutil

import pytest

from conftest import KIT, SOLUTION, copy_kit
from grading import grades, run_grader

CHEN = os.path.join(KIT, "examples", "chen.py")   # 93 points (README)

# Blackboard names each file of its download
# `<assignment>_<username>_attempt_<YYYY-MM-DD-HH-MM-SS>_<the student's file name>` (UTC
# here), and imports a CSV of `Username,<column>`.
TOY = '''"""A Blackboard-style download and grade import (a toy, written by a test)."""
import datetime
import re

from ..intake.layouts import MAX_NAME, display_name, student_id
from . import base
from .exports import CsvExport, exportable, members, score

NAME = re.compile(r"^(?P<assignment>[A-Za-z0-9]+)_(?P<user>[a-z0-9]{1,30})_attempt_"
                  r"(?P<when>[0-9]{4}(?:-[0-9]{2}){5})_(?P<file>.+)$", re.DOTALL)


class Scores(CsvExport):
    kind = "blackboard"
    help = "blackboard: the scores, as Username,Grade"

    def csv(self, args, source, rows, state):
        keep, notes = exportable(rows, getattr(args, "export_missing_as_zero", False))
        lines = ["Username,Grade"]
        for row in keep:
            if row.get("layout") != "blackboard":
                notes.append(f"left out {row.get('name')}: not from a Blackboard download")
                continue
            lines += [f"{ident},{score(row['total'])}" for ident, _name in members(row)]
        return "\\r\\n".join(lines) + "\\r\\n", notes


class Blackboard(base.Platform):
    name = "blackboard"
    title = "Blackboard"
    listed = 70
    tried = 50
    download_names = True
    download_title = "a Blackboard download"
    id_kind = "own"
    id_name = "Blackboard user"
    exports = (Scores(),)

    def names_entry(self, name):
        return bool(NAME.match(name[:MAX_NAME]))

    def download_of(self, names):
        return all("/" not in n and self.names_entry(n) for n in names)

    def find(self, ctx, path, name, is_dir):
        match = NAME.match(name[:MAX_NAME])
        if is_dir or not match:
            return None
        when = datetime.datetime.strptime(match["when"], "%Y-%m-%d-%H-%M-%S").replace(
            tzinfo=datetime.timezone.utc).isoformat()
        return base.Found(path, self.name, "blackboard:" + match["user"],
                          student_id(match["user"]), display_name(match["user"]),
                          base.module_rank(match["file"], ctx.module) + (match["when"],), name,
                          match["user"], submitted_at=when, time_source="blackboard-attempt",
                          file=match["file"])


PLATFORM = base.register(Blackboard())
'''

COURSE = """due = 2026-03-01T00:00:00+00:00
[late_policy]
kind = "per_day"
percent = 10
"""


def _kit(tmp_path):
    kit = tmp_path / "kit"
    copy_kit(kit, ("grader", "tests_hidden", "solutions", "assignments"))
    (kit / "grader" / "platforms" / "blackboard.py").write_text(TOY, encoding="utf-8")
    return kit


def _grader(kit, *args):
    return run_grader(*args, kit=kit)


@pytest.mark.slow
def test_a_platform_added_as_one_module_grades_and_exports_its_download(tmp_path):
    kit = _kit(tmp_path)
    download = tmp_path / "blackboard-download"
    download.mkdir()
    # liu: on time; chen: a day and a minute late; chen's earlier attempt is not graded
    shutil.copy(SOLUTION, download / "Attention_liu_attempt_2026-02-28-23-00-00_attention.py")
    shutil.copy(CHEN, download / "Attention_chen_attempt_2026-03-02-00-01-00_attention.py")
    shutil.copy(os.path.join(KIT, "assignments", "attention", "attention.py"),
                download / "Attention_chen_attempt_2026-02-20-10-00-00_attention.py")
    out = tmp_path / "grades"
    out.mkdir()
    (out / "course.toml").write_text(COURSE, encoding="utf-8")
    done = _grader(kit, "grade", str(download), "--gradebook", str(out), "--jobs", "2",
                   "--call-seconds", "8")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert f"{download.name}: a Blackboard download, 3 entries" in done.stdout
    assert "Grading 2 submission(s) (2 blackboard)" in done.stdout
    rows = grades(out, "student_id")
    assert sorted(rows) == ["chen", "liu"]
    liu, chen = rows["liu"], rows["chen"]
    assert (liu["submission"], liu["name"], liu["time_source"]) == \
        ("liu_liu", "liu", "blackboard-attempt")
    assert liu["submitted_at"] == "2026-02-28T23:00:00+00:00" and liu["late"] == "no"
    assert (liu["raw_total"], liu["total"]) == ("100", "100")
    # 93 graded (README), 2 days started late at 10% of 100: 73
    assert chen["source"].endswith("Attention_chen_attempt_2026-03-02-00-01-00_attention.py")
    assert (chen["raw_total"], chen["days_late"], chen["penalty"], chen["total"]) == \
        ("93", "2", "20", "73")
    target = tmp_path / "blackboard.csv"
    done = _grader(kit, "export", "blackboard", "--gradebook", str(out), "--out", str(target))
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"Wrote {target}: 2 student(s) for blackboard\n"
    assert target.read_bytes().decode("utf-8-sig").splitlines() == [
        "Username,Grade", "chen,73", "liu,100"]
    # the registry offers it to --layout and export, and its rows' ids are its own
    assert "blackboard" in _grader(kit, "grade", "--help").stdout
    canvas = _grader(kit, "export", "canvas", "--gradebook", str(out), "--out",
                     str(tmp_path / "c.csv"), "--assignment", "A (1)")
    assert canvas.returncode == 0 and "its id is a Blackboard user id, which Canvas does not " \
        "know" in canvas.stderr


def test_the_kit_without_the_module_does_not_know_the_platform(tmp_path):
    from grader import platforms
    assert "blackboard" not in platforms.layouts() and platforms.named("blackboard") is None
    done = run_grader("grade", SOLUTION, "--layout", "blackboard", "--gradebook",
                      str(tmp_path / "g"), timeout=300)
    assert done.returncode == 2 and "invalid choice: 'blackboard'" in done.stderr
