"""The per-assignment files of the student folder that the declaration says all of: written
by `grader release`, compared by `grader release --check`, never edited by hand.

    .github/workflows/classroom.yml   GitHub Classroom's autograding: one step per CPU part,
                                      running the part's public self-checks (`pytest -k
                                      <part.selfcheck>`), worth the part's points
    README.md, README.zh-CN.md        the points table, between the GENERATED POINTS markers
                                      (the prose around it stays the instructor's)

The per-part selection of the public self-checks is checked against the public test file:
each CPU part's keyword selects at least one test, no test is selected by two parts, and no
keyword selects the whole file. `assignment` is a grader.assignment.Assignment.
"""
import os
import re

from .core import ReleaseError

WORKFLOW = ".github/workflows/classroom.yml"
READMES = {"README.md": "en", "README.zh-CN.md": "zh"}
BEGIN_POINTS = "<!-- BEGIN GENERATED POINTS: `grader release` writes this table from the " \
               "assignment's declaration -->"
END_POINTS = "<!-- END GENERATED POINTS -->"
# Classroom's runners: the CPU build of torch this course's machines carry
CLASSROOM_TORCH = "2.13.0"
CLASSROOM_PYTHON = "3.12"
STEP_TIMEOUT_MINUTES = 5
NBSP = "\u00a0"
TABLE = {
    "en": {"head": "| part | points |", "total": "total",
           "gpu": "running on a GPU (tensors made on the input's device)"},
    "zh": {"head": "| 部分 | 分数 |", "total": "总计",
           "gpu": "在 GPU 上运行（在输入所在的设备上创建张量）"},
}


def _points(value):
    return f"{value:g}"


def cpu_parts(assignment):
    return [part for part in assignment.parts if not part.gpu]


def step_id(part):
    """The Classroom step's id: the self-check keyword without test_, in kebab case."""
    return part.selfcheck[len("test_"):].replace("_", "-")


def workflow(assignment):
    """The text of .github/workflows/classroom.yml."""
    public = os.path.basename(assignment.public_tests)
    gpu = [part for part in assignment.parts if part.gpu]
    head = [f"GitHub Classroom autograding for the {assignment.name} assignment (this folder is "
            f"the template repository). Each step runs the public self-checks of one part "
            f"({public}, selected by name with -k) and is worth that part's points in the "
            f"kit's hidden suite."]
    if gpu:
        names = " and ".join(part.name for part in gpu)
        worth = _points(sum(part.points for part in gpu))
        head.append(f"The {names} part{'s' if len(gpu) > 1 else ''} ({worth} points) "
                    f"{'are' if len(gpu) > 1 else 'is'} not checked here: Classroom's runners "
                    f"have no GPU.")
    where = "(`grader grade` on the students' repositories, see the kit's " \
            "docs/how-to/github-classroom.md)."
    head.append("The public checks are a sample; the grade of record comes from the kit's "
                "hidden suite " + where.replace(" ", NBSP))  # the reference stays on one line
    lines = _comment(" ".join(head))
    lines += [
        "name: Autograding Tests",
        "'on':", "- push", "- workflow_dispatch", "- repository_dispatch",
        "permissions:", "  checks: write", "  actions: read", "  contents: read",
        "jobs:", "  run-autograding-tests:", "    runs-on: ubuntu-latest",
        "    if: github.actor != 'github-classroom[bot]'",
        "    steps:",
        "    - name: Checkout code", "      uses: actions/checkout@v4",
        "    - name: Set up Python", "      uses: actions/setup-python@v5", "      with:",
        f"        python-version: '{CLASSROOM_PYTHON}'",
        "    - name: Install torch (CPU) and pytest", "      run: |",
        f"        python -m pip install torch=={CLASSROOM_TORCH} --index-url "
        "https://download.pytorch.org/whl/cpu",
        "        python -m pip install pytest",
    ]
    steps = cpu_parts(assignment)
    for number, part in enumerate(steps, start=1):
        title = f"Part {number} {' and '.join(part.targets)}"
        lines += [
            f"    - name: {title}", f"      id: {step_id(part)}",
            "      uses: classroom-resources/autograding-command-grader@v1", "      with:",
            f"        test-name: {title}", "        setup-command: ''",
            f"        command: python -m pytest -k {part.selfcheck}",
            f"        timeout: {STEP_TIMEOUT_MINUTES}", f"        max-score: {_points(part.points)}",
        ]
    ids = [step_id(part) for part in steps]
    lines += ["    - name: Autograding Reporter",
              "      uses: classroom-resources/autograding-grading-reporter@v1", "      env:"]
    lines += [f'        {i.upper()}_RESULTS: "${{{{steps.{i}.outputs.result}}}}"' for i in ids]
    lines += ["      with:", f"        runners: {','.join(ids)}"]
    return "\n".join(lines) + "\n"


def _comment(text, width=88):
    """`text` as `# ` comment lines of at most `width` characters (a word joined by NBSP is
    never broken: it may stand longer on a line of its own)."""
    lines, line = [], "#"
    for word in text.split(" "):
        if len(line) + 1 + len(word) > width and line != "#":
            lines.append(line)
            line = "#"
        line += " " + word
    return [line.replace(NBSP, " ") for line in lines + [line]]


def points_table(assignment, lang):
    """The README's points table (markdown lines), in `lang`."""
    words = TABLE[lang]
    rows = [words["head"], "|---|---|"]
    for part in assignment.parts:
        label = words["gpu"] if part.gpu else " / ".join(f"`{t}`" for t in part.targets)
        rows.append(f"| {label} | {_points(part.points)} |")
    rows.append(f"| {words['total']} | {_points(assignment.total_points)} |")
    return rows


def readme(assignment, name, text):
    """README `name`'s `text` with its points table written between the markers."""
    lines = text.split("\n")
    begins = [i for i, line in enumerate(lines) if line.strip() == BEGIN_POINTS]
    ends = [i for i, line in enumerate(lines) if line.strip() == END_POINTS]
    if len(begins) != 1 or len(ends) != 1 or ends[0] < begins[0]:
        raise ReleaseError(
            f"{os.path.join(assignment.student_folder, name)}: expected one points table between "
            f"the lines {BEGIN_POINTS!r} and {END_POINTS!r} (found {len(begins)} and "
            f"{len(ends)}); put them where `grader release` writes the table")
    table = points_table(assignment, READMES[name])
    return "\n".join(lines[:begins[0] + 1] + [""] + table + [""] + lines[ends[0]:])


def check_selection(assignment, public_text):
    """Refuse a per-part selection of the public self-checks that Classroom would run wrong."""
    where = assignment.public_tests
    tests = re.findall(r"^def (test_\w+)\(", public_text, re.M)
    stem = os.path.splitext(os.path.basename(where))[0]
    taken = {}
    for part in cpu_parts(assignment):
        keyword = part.selfcheck
        if keyword in stem:
            raise ReleaseError(f"{where}: part {part.name}'s selfcheck {keyword!r} is part of the "
                               f"file's name, so `pytest -k {keyword}` runs every check")
        chosen = [test for test in tests if keyword in test]
        if not chosen:
            raise ReleaseError(f"{where}: no public self-check is named like part {part.name}'s "
                               f"selfcheck {keyword!r}: its Classroom step would run nothing")
        for test in chosen:
            if test in taken:
                raise ReleaseError(f"{where}: {test} is selected by part {taken[test]} and by "
                                   f"part {part.name} ({keyword!r})")
            taken[test] = part.name


def files(assignment, current):
    """{relative path: text} of the generated files; `current` reads a file of the kit's
    student folder (relative path -> text, or None when it is not there)."""
    public = current(os.path.basename(assignment.public_tests))
    if public is not None:
        check_selection(assignment, public)
    out = {WORKFLOW: workflow(assignment)}
    for name in READMES:
        text = current(name)
        if text is not None:
            out[name] = readme(assignment, name, text)
    return out
