"""`grader release [--check]`: write (or compare) what release generates (grader/release/)
for the assignment `args.kit_assignment` (grader/cli.py loads it).

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

from .. import assignment as declarations
from ..i18n import _
from ..nbgrader_bridge import NbgraderMissing, require_nbformat
from ..nbgrader_bridge import notebook as source_notebook
from ..release import ReleaseError
from ..release import folder as folders
from ..release.core import LANGUAGES, STUB_CALL, release
from . import usage
from .arguments import language_argument

NAME = "release"


def add_parser(commands):
    parser = commands.add_parser(NAME, help="write the student skeleton from the solution")
    parser.add_argument("--solution", default=None,
                        help="the instructor's solution (default: the assignment's)")
    parser.add_argument("--output", default=None, metavar="FILE",
                        help="the skeleton alone, to FILE: the older spelling of --out FILE.py "
                             "(default: the assignment's student folder)")
    parser.add_argument("--check", action="store_true",
                        help="only check that the skeleton is up to date (exit 1 if not)")
    parser.add_argument("--notebook", metavar="PATH", default=None,
                        help="also write nbgrader's source notebook here (for a course: "
                             "COURSE/source/<assignment>/<module>.ipynb); needs nbformat")
    parser.add_argument("--readme", metavar="PATH", default=None,
                        help="the student README whose sections become the notebook's "
                             "markdown (default: the assignment's student folder's README.md; "
                             "README.zh-CN.md for Chinese)")
    language_argument(parser, "language of the skeleton's docstrings and comments and of the "
                              "notebook's README: en (default) or zh (needs --out or --output)")
    parser.add_argument("--out", metavar="DIR|FILE.py", default=None,
                        help="write the whole student folder here (the assignment's student "
                             "folder, with <module>.py in --lang); a path ending in .py: the "
                             "skeleton alone; with --check, compare it")
    return parser


def problem(args):
    """The files it reads are there; those it writes are not folders, in folders that exist
    or that it makes (--output defaults to the assignment's skeleton)."""
    if args.output is None:
        args.output = args.kit_assignment.skeleton
    kit = os.path.join(args.kit_assignment.student_folder, "README.zh-CN.md")
    checks = [
        lambda: args.solution is not None and usage.input_file("--solution", args.solution),
        lambda: args.readme is not None and usage.input_file(
            "--readme", args.readme, f"; the kit's Chinese README is {usage.shown(kit)}"),
        lambda: (args.out or "").endswith(".py") and usage.output_file("--out", args.out,
                                                                     make_folders=True),
        lambda: usage.output_file("--output", args.output, make_folders=True),
        lambda: args.notebook and usage.output_file("--notebook", args.notebook,
                                                    make_folders=True)]
    return usage.first(*checks)


def run(args):
    try:
        return _release(args)
    except (ReleaseError, NbgraderMissing) as error:
        print(f"grader release: {error}", file=sys.stderr)
        return 2
    except OSError as error:  # a file it reads or writes (the reason names it)
        print(f"grader release: {error}", file=sys.stderr)
        return 2


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
    require_nbformat("grader release --notebook")
    readme = getattr(args, "readme", None) or os.path.join(
        assignment.student_folder, "README.zh-CN.md" if lang == "zh" else "README.md")
    files = {args.notebook: source_notebook.notebook_text(assignment, readme, args.solution)
             .encode("utf-8")}
    beside = os.path.dirname(os.path.abspath(args.notebook))
    for name, text in folders.given_modules(assignment, lang).items():
        files[os.path.join(beside, name)] = text.encode("utf-8")
    return files


def given_notice(assignment, where):
    """The line that says which given modules went into `where`, and that each holds an
    earlier assignment's solution; "" when the assignment provides none."""
    kit_root = os.path.dirname(os.path.dirname(assignment.folder))
    given = []
    for dep in assignment.builds_on:
        if dep.provide == "given":
            earlier = declarations.load(dep.assignment, kit_root)
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


def _release(args):
    assignment = args.kit_assignment
    args.solution = getattr(args, "solution", None) or assignment.solution
    lang = getattr(args, "lang", None) or "en"
    if lang not in LANGUAGES:   # a catalog's language (--lang offers each) the skeleton lacks
        print(f"grader release: --lang {lang}: the grader speaks it (its catalog), but a "
              f"skeleton is written in {' or '.join(LANGUAGES)} only: its docstrings and "
              f"comments are the solution's own text (### BEGIN ZH blocks)", file=sys.stderr)
        return 2
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
