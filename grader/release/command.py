"""`grader release [--check]`: write (or compare) what release generates for the assignment
`args.kit_assignment` (grader/cli.py loads it).

    grader release                  the skeleton, and in the kit's student folder the
                                    generated files (Classroom workflow, README tables)
    grader release --out FILE.py    the skeleton only, to FILE.py (--output FILE: the same)
    grader release --out DIR        the whole student folder, in --lang
    --notebook PATH                 also nbgrader's source notebook, and beside it the
                                    given modules of the assignments it builds on
    --check                         write nothing; exit 1 naming every file that is not
                                    what release would write now
"""
import difflib
import os
import sys

from . import folder as folders
from .core import LANGUAGES, STUB_CALL, release


def _assignment(args):
    chosen = getattr(args, "kit_assignment", None)
    if chosen is None or isinstance(chosen, str):
        from .. import assignment
        chosen = assignment.load(chosen)
    return chosen


def _same_folder(a, b):
    a, b = os.path.realpath(a), os.path.realpath(b)
    return a == b or a.startswith(b + os.sep)


def _read(path):
    if not os.path.isfile(path):
        return None
    with open(path, "rb") as handle:
        return handle.read()


def _write(path, data):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "wb") as handle:
        handle.write(data)


def _stale(expected):
    """The paths of {path: bytes} whose file is missing or differs."""
    return [path for path, data in expected.items() if _read(path) != data]


def _show_diff(path, data):
    current = (_read(path) or b"").decode("utf-8", "replace")
    diff = difflib.unified_diff(current.splitlines(), data.decode("utf-8").splitlines(),
                                path, "generated", lineterm="")
    print("\n".join(list(diff)[:40]))


def _notebook(args, assignment, lang):
    """{PATH: bytes} of `--notebook PATH` (nbgrader's source notebook) and, beside it, the
    given modules of the assignments it builds on (nbgrader's generate_assignment releases
    every file of the source folder with the notebook); {} without --notebook."""
    if not getattr(args, "notebook", None):
        return {}
    from ..nbgrader_bridge import notebook, require_nbformat
    require_nbformat("grader release --notebook")
    readme = getattr(args, "readme", None) or os.path.join(
        assignment.student_folder, "README.zh-CN.md" if lang == "zh" else "README.md")
    files = {args.notebook: notebook.notebook_text(assignment, readme, args.solution)
             .encode("utf-8")}
    beside = os.path.dirname(os.path.abspath(args.notebook))
    for name, text in folders.given_modules(assignment, lang).items():
        files[os.path.join(beside, name)] = text.encode("utf-8")
    return files


def given_notice(assignment, where):
    """The line that says which given modules went into `where`, and that each holds an
    earlier assignment's solution; "" when the assignment provides none."""
    from .. import assignment as declared
    from ..i18n import _
    kit_root = os.path.dirname(os.path.dirname(assignment.folder))
    given = []
    for dep in assignment.builds_on:
        if dep.provide == "given":
            earlier = declared.load(dep.assignment, kit_root)
            given.append(_("{module} (the assignment {earlier}'s full solution)").format(
                module=earlier.module_file, earlier=earlier.name))
    if not given:
        return ""
    return _("Given code in {folder}: {modules}. Students read it whole: hand this folder out "
             "only after the earlier assignment's deadline (builds_on, provide = \"given\" in "
             "{declaration}).").format(folder=where, modules="; ".join(given),
                                       declaration=os.path.join(assignment.folder,
                                                                "assignment.toml"))


def _folder(args, assignment, lang, out):
    """`--out DIR`: write (or with --check compare) the whole student folder."""
    if _same_folder(out, assignment.student_folder):
        print(f"grader release: --out {out} is (inside) the kit's assignment folder, which "
              f"`grader release` keeps in English; give another folder", file=sys.stderr)
        return 2
    if os.path.exists(out) and not os.path.isdir(out):
        print(f"grader release: --out {out} exists and is not a folder", file=sys.stderr)
        return 2
    files = folders.student_folder(args.solution, assignment.api, lang, assignment)
    if args.check:
        stale = [os.path.relpath(p, out) for p in _stale(
            {os.path.join(out, name): data for name, data in files.items()})]
        stale += _stale(_notebook(args, assignment, lang))
        if stale:
            print(f"{out} is out of date ({', '.join(stale[:10])}): run "
                  f"`grader release --lang {lang} --out {out}`")
            return 1
        print(f"{out} is up to date ({len(files)} files, {lang})")
        return 0
    notebook = _notebook(args, assignment, lang)
    for name, data in files.items():
        _write(os.path.join(out, name), data)
    stubs = files[assignment.module_file].decode("utf-8").count(STUB_CALL)
    print(f"wrote {out}: the student folder in {lang} ({len(files)} files; "
          f"{assignment.module_file} has {stubs} stubs)")
    notice = given_notice(assignment, out)
    if notice:
        print(notice)
    _write_notebook(notebook, assignment)
    return 0


def _write_notebook(notebook, assignment=None):
    """Write what _notebook made: the notebook first, then the given modules beside it."""
    if notebook and assignment is not None:
        notice = given_notice(assignment, os.path.dirname(os.path.abspath(next(iter(notebook)))))
        if notice and len(notebook) > 1:
            print(notice)
    for path, data in notebook.items():
        _write(path, data)
        if path.endswith(".ipynb"):
            print(f"wrote {path} (nbgrader's source notebook; release it with "
                  f"`nbgrader generate_assignment <assignment>`)")
        else:
            print(f"wrote {path} (given code beside the notebook: nbgrader releases it too)")


def main(args):
    assignment = _assignment(args)
    args.solution = getattr(args, "solution", None) or assignment.solution
    lang = getattr(args, "lang", None) or "en"
    out = getattr(args, "out", None)
    if out and out.endswith(".py"):   # --out FILE.py: the skeleton alone (as --output FILE)
        args.output = out
    elif out:
        return _folder(args, assignment, lang, out)
    target = getattr(args, "output", None) or assignment.skeleton
    in_kit = os.path.abspath(target) == os.path.abspath(assignment.skeleton)
    if lang != "en" and in_kit:
        print(f"grader release: --lang {lang} needs --out DIR (a whole student folder in that "
              f"language) or --output FILE: {assignment.skeleton} is the English skeleton",
              file=sys.stderr)
        return 2
    text = release(args.solution, assignment.api, lang)
    expected = {target: text.encode("utf-8")}
    if in_kit:  # the kit's own student folder: the generated files live next to the skeleton
        expected.update({os.path.join(assignment.student_folder, name): data.encode("utf-8")
                         for name, data in folders.generated_files(assignment).items()})
    notebook = _notebook(args, assignment, lang)
    expected.update(notebook)
    if args.check:
        stale = _stale(expected)
        for path in stale:
            _show_diff(path, expected[path])
            print(f"{path} is out of date: run `grader release`"
                  + (f" --notebook {args.notebook}" if path in notebook else ""))
        if stale:
            return 1
        print(f"{target} is up to date" + (f", and so are {len(expected) - 1} generated files"
                                           if len(expected) > 1 else ""))
        for other in LANGUAGES:
            if other != lang:  # every docstring and comment has its other language
                release(args.solution, assignment.api, other)
                print(f"the {other} skeleton releases too (every docstring and comment "
                      f"translated): `grader release --lang {other} --out DIR`")
        return 0
    for path, data in expected.items():
        if path not in notebook:
            _write(path, data)
    print(f"wrote {target} ({text.count(STUB_CALL)} stubs)"
          + (f" and {len(expected) - 1 - len(notebook)} generated files in "
             f"{assignment.student_folder}" if in_kit else ""))
    if in_kit:
        notice = given_notice(assignment, assignment.student_folder)
        if notice:
            print(notice)
    _write_notebook(notebook, assignment)
    return 0
