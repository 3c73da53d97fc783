"""The whole student folder, as {relative path: bytes}: the kit's folder of the assignment
as it is, with the skeleton, the generated files (generated.py) and the earlier
assignments' solutions it provides as given code written fresh, in one language. In
Chinese, pytest.ini's addopts also say `--lang zh`, so a plain `pytest` there answers in
Chinese."""
import os
import re

from .. import assignment as declared
from . import generated
from .core import ReleaseError, given, release

SKIP = ("__pycache__", ".pytest_cache")
ZH_INI_NOTE = ("# 中文版文件夹（grader release --lang zh）：下面的 --lang zh 让自检信息默认用中文；"
               "`pytest --lang en` 改用英文。")


def read_folder(folder):
    """{relative path: bytes} of the regular files of `folder` (no links, no caches)."""
    files = {}
    for root, dirs, names in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d not in SKIP)
        for name in sorted(names):
            path = os.path.join(root, name)
            if name.endswith(".pyc") or os.path.islink(path) or not os.path.isfile(path):
                continue
            with open(path, "rb") as handle:
                files[os.path.relpath(path, folder).replace(os.sep, "/")] = handle.read()
    return files


def _reader(folder):
    def current(name):
        path = os.path.join(folder, name)
        if not os.path.isfile(path):
            return None
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    return current


def given_modules(assignment, lang="en"):
    """{file name: text} of the earlier assignments' solutions this one provides as given
    code (`builds_on` with provide = "given"): students import them by their module name."""
    kit_root = os.path.dirname(os.path.dirname(assignment.folder))  # <kit>/tests_hidden/<name>
    out = {}
    for dep in assignment.builds_on:
        if dep.provide == "given":
            earlier = declared.load(dep.assignment, kit_root)
            out[earlier.module_file] = given(earlier.solution, lang)
    return out


def generated_files(assignment, lang="en"):
    """{relative path: text} of the generated files, from the kit's student folder (the
    given modules in `lang`)."""
    files = generated.files(assignment, _reader(assignment.student_folder))
    files.update(given_modules(assignment, lang))
    return files


def student_folder(solution=None, api_names=None, lang="en", assignment=None):
    """{relative path: bytes} of the whole student folder of `assignment` (a
    grader.assignment.Assignment; default: the default one) in `lang`."""
    if assignment is None:
        assignment = declared.load()
    folder = assignment.student_folder
    files = read_folder(folder)
    for name, text in generated_files(assignment, lang).items():
        files[name] = text.encode("utf-8")
    files[assignment.module_file] = release(solution or assignment.solution,
                                            api_names or assignment.api, lang).encode("utf-8")
    if lang == "zh":
        ini = files.get("pytest.ini", b"").decode("utf-8").split("\n")
        at = [i for i, line in enumerate(ini) if re.match(r"addopts\s*=", line)]
        if len(at) != 1:
            raise ReleaseError(f"{folder}/pytest.ini: expected one `addopts =` line to add "
                               f"--lang zh to, found {len(at)}")
        ini[at[0]:at[0] + 1] = [ZH_INI_NOTE, ini[at[0]].rstrip() + " --lang zh"]
        files["pytest.ini"] = "\n".join(ini).encode("utf-8")
    return files
