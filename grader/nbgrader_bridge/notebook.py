"""The one solution as nbgrader's source notebook (`grader release --notebook PATH`).

For a course, PATH is `COURSE/source/<assignment>/<module>.ipynb`; `nbgrader
generate_assignment <assignment>` then releases it as it is. The notebook is built from
the assignment's declaration (tests_hidden/<name>/assignment.toml), from the same solution
as the skeleton, and from the student README:

    markdown      the README's introduction and its `## Part N` sections (any language:
                  README.zh-CN.md works the same), then its remaining sections
    code, setup   the imports (and the declaration's given code), a read-only cell
    code, part N  the functions and classes part N targets, with nbgrader's solution markers
                  (`### BEGIN SOLUTION` / `### END SOLUTION`, which nbgrader's ClearSolutions
                  turns into stubs) and the `### BEGIN INSTRUCTOR ONLY` text removed (that
                  marker is this kit's, not nbgrader's). Each is a *manually graded answer*
                  cell worth the part's points (grade_id = the part's name), so nbgrader's
                  gradebook knows every part's maximum, while `nbgrader autograde` never
                  scores it in its kernel: `grader nbgrader` writes the kit's scores there
    markdown, GPU the points of a GPU part (running every part on a GPU), a *task* cell (it
                  belongs to no one cell)

Points and which part a function belongs to come from the declaration, so the notebook,
the grader and nbgrader's gradebook agree on every part's maximum. This module builds on
release's core only (grader/release/core.py), never on the release command.
"""
import ast
import os
import re

from ..release.core import (BEGIN_INSTRUCTOR, DropInstructorOnly, FindRegions, ReleaseError,
                            SelectLanguage, Source, release)

SCHEMA_VERSION = 3
PART_HEADING = re.compile(r"^## +(Part +\d+|第 *\d+ *部分)")
CJK = re.compile(r"[\u4e00-\u9fff]")

GPU_TEXT = {
    "en": "**Graded across all parts: running on a GPU ({points} points).** Every part is also "
          "run with its tensors on a GPU (on a machine without one, under a check that every "
          "tensor is made on the input's device); the rules below apply to every part.",
    "zh": "**贯穿所有部分的评分项：在 GPU 上运行（{points} 分）。**每一部分都会在 GPU 上再运行一次"
          "（没有 GPU 的机器上，则检查每个新张量都创建在输入所在的设备上）；下面的规则适用于每一部分。",
}


GENERATED_MARKER = re.compile(r"(?m)^<!-- (BEGIN|END) GENERATED [^\n]*-->\n(\n)?")


def part_points(assignment):
    """{part: points} from the declaration, in its order."""
    return {part.name: part.points for part in assignment.parts}


def _part_of(name, assignment):
    """The CPU part whose targets hold a top-level function or class; None for given code;
    a name the declaration does not know is refused."""
    if name in assignment.given:
        return None
    try:
        return assignment.part_of(name)
    except KeyError:
        raise ReleaseError(f"{assignment.solution}: {name} belongs to no part of the "
                           f"declaration ({', '.join(assignment.part_names)})") from None


def code_by_part(assignment, lang="en", solution=None):
    """[(part or None, code)] of the solution, instructor-only text removed, solution
    markers kept; None is the setup code (imports, given code). Consecutive statements of
    one part share a cell; comments above a statement go with it."""
    solution = solution or assignment.solution
    with open(solution, encoding="utf-8") as handle:
        source = Source(solution, handle.read().split("\n"))
    source = SelectLanguage(lang).apply(DropInstructorOnly().apply(FindRegions().apply(source)))
    lines = source.lines
    tree = ast.parse("\n".join(lines), filename=solution)
    body = list(tree.body)
    start = 0
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        start = body.pop(0).end_lineno  # the module docstring is the .py file's preface
    # each statement's lines run from its first line (with the column-0 comments right above
    # it) to the next statement's: a region's indented END marker stays with its function
    starts = []
    for node in body:
        first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])]) - 1
        while first - 1 >= max([start] + starts[-1:]) and lines[first - 1].startswith("#"):
            first -= 1
        starts.append(first)
    ends = starts[1:] + [len(lines)]
    groups = []
    for node, first, end in zip(body, starts, ends):
        name = getattr(node, "name", None)
        part = _part_of(name, assignment) if name else None
        code = lines[first:end]
        if groups and groups[-1][0] == part:
            groups[-1][1].extend(code)
        else:
            groups.append((part, code))
    cells = []
    for part, code in groups:
        text = "\n".join(code).strip("\n")
        if part is not None and "### BEGIN SOLUTION" not in text:
            raise ReleaseError(f"{solution}: part {part} has no solution region: its cell "
                               f"would give the answer away")
        if BEGIN_INSTRUCTOR in text:
            raise ReleaseError(f"{solution}: instructor-only text survived in part {part}")
        cells.append((part, text))
    return cells


def readme_sections(readme):
    """(introduction, [part sections], [the sections after the parts]) of the student
    README, each a markdown string; the sections between the introduction and part 1
    (getting started with the .py file and pytest) are left out, and so are the markers of
    the tables `grader release` writes (the tables stay)."""
    with open(readme, encoding="utf-8") as handle:
        text = GENERATED_MARKER.sub("", handle.read())
    chunks = re.split(r"(?m)^(?=## )", text)
    intro, sections = chunks[0], chunks[1:]
    part_indices = [i for i, s in enumerate(sections) if PART_HEADING.match(s)]
    if not part_indices:
        raise ReleaseError(f"{readme} has no `## Part N` sections to put in the notebook")
    parts = [sections[i] for i in part_indices]
    after = sections[part_indices[-1] + 1:]
    clean = [re.sub(r"\n-{3,}\s*$", "\n", s).strip() for s in [intro, *parts, *after]]
    return clean[0], clean[1:1 + len(parts)], clean[1 + len(parts):]


def _meta(grade_id, *, solution=False, grade=False, locked=False, task=False, points=None):
    meta = {"grade": grade, "grade_id": grade_id, "locked": locked,
            "schema_version": SCHEMA_VERSION, "solution": solution}
    if task:
        meta["task"] = True
    if points is not None:
        meta["points"] = points
    return {"nbgrader": meta}


def build(assignment, readme, solution=None):
    """nbgrader's source notebook (an nbformat NotebookNode)."""
    import nbformat  # optional extra (nbgrader): only when a notebook is built
    from nbformat import v4  # optional extra, as above

    solution = solution or assignment.solution
    points = part_points(assignment)
    intro, part_texts, after = readme_sections(readme)
    lang = "zh" if CJK.search(intro.split("\n", 1)[0]) else "en"  # the docstrings follow it
    code = code_by_part(assignment, lang, solution)
    written = [part for part, _ in code if part is not None]
    if len(set(written)) != len(written):
        raise ReleaseError(f"{solution}: the code of a part is split by another part's code; "
                           f"keep each part's functions together")
    if len(part_texts) != len(written):
        raise ReleaseError(f"{readme} has {len(part_texts)} `## Part` sections, the solution "
                           f"{len(written)} parts ({', '.join(written)})")

    cells = [v4.new_markdown_cell(intro)]
    texts = iter(part_texts)
    for part, text in code:
        if part is None:
            cells.append(v4.new_code_cell(text, metadata=_meta("setup", locked=True)))
            continue
        cells.append(v4.new_markdown_cell(next(texts)))
        cells.append(v4.new_code_cell(text, metadata=_meta(
            part, solution=True, grade=True, points=points[part])))
    for gpu in assignment.gpu_parts:  # the rules of the section after the parts go with it
        rules, rest = (after[0], after[1:]) if after else ("", [])
        task = GPU_TEXT[lang].format(points=points[gpu]) + ("\n\n" + rules if rules else "")
        cells.append(v4.new_markdown_cell(task, metadata=_meta(
            gpu, locked=True, task=True, points=points[gpu])))
        after = rest
    cells += [v4.new_markdown_cell(section) for section in after]
    for number, cell in enumerate(cells, start=1):  # stable ids: the same solution, the same file
        cell["id"] = f"cell-{number}"
    notebook = v4.new_notebook(cells=cells, metadata={
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"}})
    nbformat.validate(notebook)
    return notebook


def notebook_text(assignment, readme, solution=None):
    """The source notebook as the text of a .ipynb file. The solution must first release
    as a skeleton (markers balanced, nothing leaks), or ReleaseError says why not."""
    import nbformat  # optional extra (nbgrader): only when a notebook is written
    release(solution or assignment.solution, assignment.api)
    return nbformat.writes(build(assignment, readme, solution)) + "\n"


def write(path, assignment, readme, solution=None):
    """Write the source notebook to `path`; returns its text."""
    text = notebook_text(assignment, readme, solution)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)
    return text
