"""The documentation site's reference pages, generated from the code when the site is built.

mkdocs.yml names this file under `hooks:`. A page holds a marker line
`<!-- generated: NAME -->`, which the build replaces with GENERATED[NAME]() (the text comes
from the parser, the schemas and the constants the grader itself uses, so it cannot drift):

    cli              every command's --help (grader/cli.py's parser)
    assignment-toml  every key of assignment.toml: type, default, the error a wrong value gets
    course-toml      every key of course.toml: the same, from grader/course.py
    output-files     the files the grader writes and their columns

The build fails (`mkdocs build --strict`) when a marker names no generator, when a reference
page lost its marker, when a generator meets a key it has no words for (a key added to the
code and not to this file), or when a page names a repository path (`grader/...`,
`tests/...`) that does not exist. `python tools/docs_hooks.py NAME` prints one generated text.
"""
import argparse
import copy
import datetime
import logging
import os
import re
import sys

KIT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if KIT not in sys.path:
    sys.path.insert(0, KIT)

log = logging.getLogger("mkdocs.plugins.attention_kit")
MARKER = re.compile(r"<!-- generated: ([a-z-]+) -->")
# each reference page and the generated text it must hold
REQUIRED = {"reference/cli.md": "cli", "reference/assignment-toml.md": "assignment-toml",
            "reference/course-toml.md": "course-toml",
            "reference/output-files.md": "output-files"}
# top-level folders and files of the repository: a code span naming a path under one of
# them must name one that exists
ROOTS = ("grader/", "tests/", "tests_hidden/", "tools/", "bench/", "deploy/", "assignments/",
         "solutions/", "examples/", "docs/", ".ci/")
PATH = re.compile(r"`((?:%s)[^`\s]*)`" % "|".join(re.escape(r) for r in ROOTS))
WIDTH = "100"   # --help is wrapped to this many columns, whatever the terminal


class DocsError(Exception):
    """The site cannot be built as the code stands: one line that says what drifted."""


def _table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        out.append("| " + " | ".join(str(c).replace("|", "\\|").replace("\n", " ")
                                     for c in row) + " |")
    return "\n".join(out)


# ---- every command's --help ------------------------------------------------------------------
def cli():
    from grader import cli as grader_cli
    saved = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = WIDTH
    try:
        parser = grader_cli.build_parser()
        (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        parts = ["## `grader`\n\n```text\n" + parser.format_help().rstrip() + "\n```"]
        for command in grader_cli.COMMANDS:
            help_text = sub.choices[command.NAME].format_help().rstrip()
            parts.append(f"## `grader {command.NAME}`\n\n```text\n{help_text}\n```")
    finally:
        if saved is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = saved
    return "\n\n".join(parts)


# ---- assignment.toml ------------------------------------------------------------------------
# what each key says; a key the code checks and this table does not name fails the build
ASSIGNMENT_WORDS = {
    "name": "the assignment's name, its folder's under tests_hidden/",
    "title": "report.html's title, in English (its translations: the assignment's catalogs)",
    "default": "`true` in one declaration when the kit holds several: what a command grades "
               "when no `--assignment` is named (exactly one may say it)",
    "module": "the module students hand in (`<module>.py` or `.ipynb`)",
    "solution": "the solution, relative to the kit",
    "student_folder": "the student folder, relative to the kit",
    "api": "what students write, in the skeleton's order",
    "given": "what the kit provides whole in the module",
    "total_points": "the assignment's total; the parts must add up to it",
    "parts": "the parts, `[[parts]]` tables (below)",
    "calls": "which function calls which in the solution (`F = [\"G\", ...]`)",
    "weights": "where a module stores the attention weights the cases compare",
    "heatmaps": "the weights report.html and feedback.html draw",
    "builds_on": "earlier assignments whose module the solution imports, `[[builds_on]]` (below)",
    "parts.name": "the part's name (grades.csv's column)",
    "parts.points": "its points", "parts.targets": "the api names it grades",
    "parts.short": "the console column, 1 to 9 characters",
    "parts.gpu": "the part that reruns its targets' cases on a GPU",
    "parts.selfcheck": "the `pytest -k` of its public checks (default `test_<name in snake case>`)",
    "builds_on.assignment": "the earlier assignment's name",
    "builds_on.provide": "`given` (the earlier solution is staged) or `student` (the student's own file)",
}
# a value of the wrong type for each type, to draw the error the code gives
_WRONG = {str: 7, list: "x", dict: "x", bool: 1, int: "x", float: "x"}


def _wrong(kind):
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return _WRONG[kinds[0]]


def _builds_on(data):
    """The first [[builds_on]] table, made if the declaration has none."""
    data["builds_on"] = data.get("builds_on") or [{"assignment": "attention", "provide": "given"}]
    return data["builds_on"][0]


def assignment_toml():
    from grader import assignment
    declared = os.path.join(KIT, "tests_hidden", "attention", "assignment.toml")
    with open(declared, "rb") as handle:
        base = assignment.tomllib.load(handle)
    folder = os.path.dirname(declared)

    def error(edit):
        data = copy.deepcopy(base)
        edit(data)
        try:
            assignment.parse(data, folder, KIT, where="assignment.toml", named="attention")
        except assignment.AssignmentError as refused:
            return f"`{refused}`"
        raise DocsError(f"assignment.toml: an edit the reference documents was accepted: {edit}")

    sections = []
    for title, schema, optional, prefix, table_of in (
            ("Top-level keys", assignment._TOP, assignment._OPTIONAL, "", lambda d: d),
            ("`[[parts]]`, one table per part", assignment._PART, assignment._PART_OPTIONAL,
             "parts.", lambda d: d["parts"][0]),
            ("`[[builds_on]]`", assignment._BUILDS_ON, {}, "builds_on.", _builds_on)):
        rows = []
        for key, kind in schema.items():
            words = ASSIGNMENT_WORDS.get(prefix + key)
            if words is None:
                raise DocsError(f"assignment.toml key {prefix + key!r} is checked by "
                                "grader/assignment.py but not described in tools/docs_hooks.py")
            default = (f"`{optional[key]!r}`".replace("None", "derived") if key in optional
                       else "required")
            said = error(lambda d, key=key, kind=kind: table_of(d).__setitem__(
                    key, _wrong(kind)))
            rows.append((f"`{key}`", assignment._kind(kind), default, words, said))
        sections.append(f"### {title}\n\n" + _table(
            ("key", "type", "default", "what it says", "a value of the wrong type gets"), rows))
    unknown = error(lambda d: d.update(colour="blue"))
    extra = ASSIGNMENT_WORDS.keys() - {k for k in assignment._TOP} \
        - {"parts." + k for k in assignment._PART} - {"builds_on." + k for k in assignment._BUILDS_ON}
    if extra:
        raise DocsError(f"tools/docs_hooks.py describes assignment.toml keys the code does not "
                        f"check: {sorted(extra)}")
    return "\n\n".join(sections) + (
        "\n\nAn unknown key is refused too, e.g. `colour = \"blue\"`: " + unknown +
        "\n\nThe errors above are what `grader` prints for the kit's own "
        "`tests_hidden/attention/assignment.toml` with that one key changed.")


# ---- course.toml ----------------------------------------------------------------------------
# key: (type, where its default comes from (a Course field) or None, what it says, a wrong value)
COURSE_WORDS = {
    "due": ("date-time with offset", None, "the due date (required)", "2026-12-01"),
    "grace_minutes": ("number", "grace_minutes", "on time up to this many minutes after it", -5),
    "timezone": ("IANA zone name", "timezone", "the LMS server's zone: what a time written "
                 "without one (Moodle's file times) is read in", "Mars/Olympus"),
    "late_policy": ("table", None, "the late policy (below)", "per_day"),
    "extensions": ("table", None, "student id (grades.csv's `student_id`) -> a new due date, "
                   "or `{ days = N }` / `{ hours = N }` more", "10001"),
    "late_policy.kind": ("`none`, `per_day` or `cutoff`", "kind", "the policy", "weekly"),
    "late_policy.percent": ("number, 0 to 100", "percent", "per day started, of the "
                            "assignment's points", 120),
    "late_policy.points": ("number", "points", "or: points per day started", -1),
    "late_policy.cap": ("number", "cap", "at most this much in all, in the same unit "
                        "(default: no cap)", "half"),
    "late_policy.cutoff": ("date-time with offset", "cutoff", "no credit after it (kind "
                           "`cutoff`: the due date unless given)", "2026-11-01T00:00:00+08:00"),
    "late_policy.unknown_days": ("whole number", "unknown_days", "the LMS said late but gave no "
                                 "time: charged as this many days", 1.5),
}
COURSE_BASE = {"due": datetime.datetime(2026, 12, 1, 23, 59,
                                        tzinfo=datetime.timezone(datetime.timedelta(hours=8))),
               "late_policy": {"kind": "per_day", "percent": 10}}


def course_toml():
    from grader import course
    keys = set(course.TOP_KEYS) | {"late_policy." + k for k in course.POLICY_KEYS}
    if keys != set(COURSE_WORDS):
        raise DocsError("course.toml keys differ between grader/course.py and "
                        f"tools/docs_hooks.py: {sorted(keys ^ set(COURSE_WORDS))}")
    defaults = course.Course()
    rows = []
    for key in sorted(COURSE_WORDS, key=lambda k: (k.count("."), list(COURSE_WORDS).index(k))):
        kind, field, words, wrong = COURSE_WORDS[key]
        data = copy.deepcopy(COURSE_BASE)
        if key.startswith("late_policy."):
            if key == "late_policy.points":
                del data["late_policy"]["percent"]   # one of the two, not both
            data["late_policy"][key.split(".", 1)[1]] = wrong
        else:
            data[key] = wrong
        try:
            course.from_data(data, "course.toml")
        except course.CourseError as refused:
            said = f"`{key} = {wrong!r}`: `{refused}`"
        else:
            raise DocsError(f"course.toml: {key} = {wrong!r} was accepted; the reference "
                            "documents it as refused")
        default = "none" if field is None else repr(getattr(defaults, field))
        default = {"None": "none", "''": "none"}.get(default, default)
        rows.append((f"`{key}`", kind, default, words, said))
    return _table(("key", "type", "default", "what it says", "a wrong value gets"), rows) + (
        "\n\nThe errors are what the grader prints for a course file with only that key "
        "wrong (the rest: `due = 2026-12-01T23:59:00+08:00`, `kind = \"per_day\"`, "
        "`percent = 10`).")


# ---- the files the grader writes -------------------------------------------------------------
TOP_FILES = {
    "grades.csv": "the gradebook, one row per submission (columns below), UTF-8 with a BOM",
    "report.html": "the class at a glance for the instructor",
    "grader-errors.log": "the tracebacks of the grader's own failures",
    "index.html": "reserved",
    "results.json": "reserved at the top level (a submission's is in its folder)",
    "feedback.txt": "reserved at the top level (a submission's is in its folder)",
    "course.toml": "the course file you write: due date, extensions, late policy",
    "overrides.json": "the overrides ledger, append-only (`grader override`)",
    "shard.json": "a shard's record (`grader grade --shard`), read by `grader merge`",
    "merge.json": "the shards a merge took, and their machines",
    "similarity.csv": "`grader similarity`'s pairs, one row each (columns below)",
    "similarity.html": "`grader similarity`'s page: the flagged pairs side by side",
}


def output_files():
    from grader import files
    from grader.assignment import load
    from grader.overrides import FIELDS
    from grader.platforms.canvas.scores import CANVAS_COLUMNS
    from grader.platforms.moodle.worksheet import MOODLE_COLUMNS
    from grader.report import folders
    from grader.report.gradebook import ROW_FILE, gradebook_text
    from grader.similarity.code import CODE_FILE, RECORD_FILE
    from grader.similarity.page import CSV_COLUMNS
    if set(folders.RESERVED) - set(TOP_FILES):
        raise DocsError("the grader reserves names tools/docs_hooks.py does not describe: "
                        f"{sorted(set(folders.RESERVED) - set(TOP_FILES))}")
    kb = 1024
    per_submission = [
        ("results.json", f"Gradescope's format; capped at {files.RESULTS_BYTES // kb} KB"),
        ("feedback.txt", f"what the student reads; capped at {files.FEEDBACK_BYTES // kb} KB"),
        ("feedback.html", "the same as one self-contained page, with heatmaps"),
        (ROW_FILE, "the graded row grades.csv is rebuilt from"),
        (CODE_FILE, "the code that was graded, for `grader similarity`"),
        (RECORD_FILE, "what intake recorded of the upload, and the sha256 of the code"),
        ("grader-errors.log", f"only when the grader failed on it; capped at "
                              f"{files.LOG_BYTES // kb} KB"),
    ]
    attention = load("attention")
    maxima = {"name": "-", "parts": {p.name: [0, p.points] for p in attention.parts}}
    header = gradebook_text([maxima], attention.part_names).splitlines()[0]
    columns = next(iter(__import__("csv").reader([header])))
    out = ["## In the gradebook folder `DIR`\n",
           _table(("file", "what it is"), [(f"`{n}`", TOP_FILES[n]) for n in sorted(TOP_FILES)]),
           "\n## In each submission's folder `DIR/<folder>/`\n",
           _table(("file", "what it is"), [(f"`{n}`", w) for n, w in per_submission]),
           "\n## `grades.csv`'s columns\n",
           "For the attention assignment (a part's column is named `<part> (/<its points>)`):\n",
           "\n".join(f"{i}. `{c}`" for i, c in enumerate(columns, 1)),
           "\n## `similarity.csv`'s columns (`grader similarity`)\n",
           ", ".join(f"`{c}`" for c in CSV_COLUMNS),
           "\n## Canvas's import (`grader export canvas`)\n",
           ", ".join(f"`{c}`" for c in CANVAS_COLUMNS) + ", then the assignment's column "
           "(`--assignment`, named as Canvas's own export names it)",
           "\n## Moodle's grading worksheet (`grader export moodle`)\n",
           ", ".join(f"`{c}`" for c in MOODLE_COLUMNS) + " (and `Feedback comments` with "
           "`--with-comments`)",
           "\n## `overrides.json`'s entries (`grader override`)\n",
           ", ".join(f"`{c}`" for c in sorted(FIELDS))]
    return "\n".join(out)


GENERATED = {"cli": cli, "assignment-toml": assignment_toml, "course-toml": course_toml,
             "output-files": output_files}


# ---- the MkDocs hooks ----------------------------------------------------------------------
def _paths_exist(markdown, where):
    """Warn (a failure under --strict) for each repository path a page names that is not there."""
    for path in sorted(set(PATH.findall(markdown))):
        if any(c in path for c in "<>*{}[]$") or "..." in path:
            continue   # a pattern, not a path
        if not os.path.exists(os.path.join(KIT, path.rstrip(".,:;"))):
            log.warning(f"{where}: names `{path}`, which is not in the repository")


def on_page_markdown(markdown, page, config, files):
    where = page.file.src_uri
    wanted = REQUIRED.get(where)
    names = MARKER.findall(markdown)
    if wanted and wanted not in names:
        raise DocsError(f"{where} must hold <!-- generated: {wanted} -->")
    for name in names:
        if name not in GENERATED:
            raise DocsError(f"{where}: <!-- generated: {name} --> names no generator "
                            f"(known: {', '.join(GENERATED)})")
    _paths_exist(MARKER.sub("", markdown), where)
    return MARKER.sub(lambda m: GENERATED[m.group(1)](), markdown)


if __name__ == "__main__":
    print(GENERATED[sys.argv[1]]())
