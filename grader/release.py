"""`grader release`: turn the instructor's solution into the student's skeleton.

A pipeline of small steps over the lines of the source, in the manner of nbgrader's
preprocessors:

    FindRegions        locate `### BEGIN SOLUTION` / `### END SOLUTION` pairs; refuse
                       unbalanced, nested or mis-indented markers
    DropInstructorOnly remove `### BEGIN INSTRUCTOR ONLY` / `### END INSTRUCTOR ONLY` blocks
    StubRegions        replace each solution region by `raise NotImplementedError(...)`
    CheckNoLeak        refuse when a solution line survives outside its region, or when a
                       function of the student API keeps a body that no region covers

The markers are nbgrader's, so the same source also works in an nbgrader course.
"""
import ast
import dataclasses
import difflib
import os
import re

BEGIN = "### BEGIN SOLUTION"
END = "### END SOLUTION"
BEGIN_INSTRUCTOR = "### BEGIN INSTRUCTOR ONLY"
END_INSTRUCTOR = "### END INSTRUCTOR ONLY"
# lines too common to count as a leak when they appear outside a region
GENERIC = re.compile(r"^(return( \w+)?|else:|pass|\)|\]|\}|#.*|\"\"\"|)$")


class ReleaseError(Exception):
    """The solution cannot be released as it stands; the message names the line."""


@dataclasses.dataclass
class Region:
    begin: int      # 0-based line index of the BEGIN marker
    end: int        # 0-based line index of the END marker
    indent: str
    owner: str      # "sequence_mask" or "AdditiveAttention.forward"


@dataclasses.dataclass
class Source:
    path: str
    lines: list
    regions: list = dataclasses.field(default_factory=list)
    solution_lines: list = dataclasses.field(default_factory=list)


def _owner(lines, index):
    """The function (and class) a line belongs to, read from the indentation above it."""
    depth = len(lines[index]) - len(lines[index].lstrip())
    names = []
    for line in reversed(lines[:index]):
        stripped = line.lstrip()
        indent = len(line) - len(stripped)
        match = re.match(r"(?:def|class)\s+(\w+)", stripped)
        if match and indent < depth:
            names.append(match.group(1))
            depth = indent
            if indent == 0:
                break
    return ".".join(reversed(names)) or "<module>"


class FindRegions:
    def apply(self, source):
        open_at = None
        for number, line in enumerate(source.lines):
            marker = line.strip()
            if marker == BEGIN:
                if open_at is not None:
                    raise ReleaseError(f"{source.path}:{number + 1}: {BEGIN} inside the region "
                                       f"opened at line {open_at + 1} (regions cannot nest)")
                open_at = number
            elif marker == END:
                if open_at is None:
                    raise ReleaseError(f"{source.path}:{number + 1}: {END} without a {BEGIN} before it")
                indent = source.lines[open_at][: len(source.lines[open_at]) - len(source.lines[open_at].lstrip())]
                if not line.startswith(indent) or line[len(indent):].startswith((" ", "\t")):
                    raise ReleaseError(f"{source.path}:{number + 1}: {END} is indented differently "
                                       f"from its {BEGIN} at line {open_at + 1}")
                source.regions.append(Region(open_at, number, indent, _owner(source.lines, open_at)))
                open_at = None
            elif "BEGIN SOLUTION" in marker.upper() or "END SOLUTION" in marker.upper():
                # nbgrader takes any line containing these words for a marker
                raise ReleaseError(f"{source.path}:{number + 1}: malformed marker {marker!r}; "
                                   f"write exactly {BEGIN!r} or {END!r} on a line of its own "
                                   f"(nbgrader reads any line containing these words as one)")
        if open_at is not None:
            raise ReleaseError(f"{source.path}:{open_at + 1}: {BEGIN} is never closed by {END}")
        if not source.regions:
            raise ReleaseError(f"{source.path}: no {BEGIN} regions: releasing it would give the "
                               f"whole solution away")
        return source


class DropInstructorOnly:
    def apply(self, source):
        kept, inside = [], None
        for number, line in enumerate(source.lines):
            marker = line.strip()
            if marker == BEGIN_INSTRUCTOR:
                inside = number
                continue
            if marker == END_INSTRUCTOR:
                if inside is None:
                    raise ReleaseError(f"{source.path}:{number + 1}: {END_INSTRUCTOR} without a begin")
                inside = None
                continue
            if inside is None:
                kept.append(line)
        if inside is not None:
            raise ReleaseError(f"{source.path}:{inside + 1}: {BEGIN_INSTRUCTOR} is never closed")
        source.lines = kept
        return source


class StubRegions:
    def apply(self, source):
        out, last = [], 0
        for region in source.regions:
            out += source.lines[last:region.begin]
            body = source.lines[region.begin + 1:region.end]
            source.solution_lines += body
            out.append(f"{region.indent}# YOUR CODE HERE")
            out.append(f'{region.indent}raise NotImplementedError("{region.owner} is not written yet")')
            last = region.end + 1
        out += source.lines[last:]
        source.lines = out
        return source


class CheckNoLeak:
    def __init__(self, api_names):
        self.api_names = api_names

    def apply(self, source):
        released = {line.strip() for line in source.lines}
        for line in source.solution_lines:
            text = line.strip()
            if not GENERIC.match(text) and text in released:
                raise ReleaseError(f"{source.path}: the solution line {text!r} also appears outside "
                                   f"its region, so the skeleton would give it away")
        tree = ast.parse("\n".join(source.lines), filename=source.path)
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and node.name in self.api_names:
                for item in node.body:
                    if isinstance(item, ast.FunctionDef):
                        self._check_body(source, item, f"{node.name}.{item.name}")
            elif isinstance(node, ast.FunctionDef) and node.name in self.api_names and node.col_offset == 0:
                self._check_body(source, node, node.name)
        return source

    def _check_body(self, source, function, name):
        body = [s for s in function.body
                if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
        raises = any(isinstance(s, ast.Raise) for s in ast.walk(function))
        if body and not raises:
            raise ReleaseError(f"{source.path}:{function.lineno}: {name} has code but no "
                               f"{BEGIN} region, so the skeleton would give it away")


def release(solution_path, api_names):
    """The student skeleton for `solution_path`, as text."""
    with open(solution_path, encoding="utf-8") as handle:
        source = Source(solution_path, handle.read().split("\n"))
    for step in (FindRegions(), StubRegions(), DropInstructorOnly(), CheckNoLeak(api_names)):
        source = step.apply(source)
    return "\n".join(source.lines)


def main(args):
    from .harness.implementations import API_NAMES
    text = release(args.solution, API_NAMES)
    target = args.output
    current = open(target, encoding="utf-8").read() if os.path.exists(target) else None
    if args.check:
        if current != text:
            diff = difflib.unified_diff((current or "").splitlines(), text.splitlines(),
                                        target, "generated", lineterm="")
            print("\n".join(list(diff)[:40]))
            print(f"{target} is out of date: run `grader release`")
            return 1
        print(f"{target} is up to date")
        return 0
    os.makedirs(os.path.dirname(os.path.abspath(target)), exist_ok=True)
    with open(target, "w", encoding="utf-8") as handle:
        handle.write(text)
    print(f"wrote {target} ({text.count('raise NotImplementedError')} stubs)")
    if getattr(args, "notebook", None):
        _write_notebook(args, API_NAMES)
    return 0


def _write_notebook(args, api_names):
    """`--notebook PATH`: nbgrader's source notebook from the same solution."""
    from . import paths
    from .nbgrader_bridge import require_nbformat
    require_nbformat("grader release --notebook")
    from .nbgrader_bridge import notebook
    readme = getattr(args, "readme", None) or os.path.join(paths.ASSIGNMENT, "README.md")
    hidden = getattr(args, "hidden_tests", None) or paths.HIDDEN_TESTS
    notebook.write(args.notebook, args.solution, readme, hidden, api_names)
    print(f"wrote {args.notebook} (nbgrader's source notebook; release it with "
          f"`nbgrader generate_assignment <assignment>`)")
