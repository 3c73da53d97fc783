"""The solution -> the student's skeleton (the core of `grader release`; imports nothing of
the kit, so the notebook writer and the folder writer both build on it).

A pipeline of small steps over the lines of the source, in the manner of nbgrader's
preprocessors:

    FindRegions        locate `### BEGIN SOLUTION` / `### END SOLUTION` pairs; refuse
                       unbalanced, nested or mis-indented markers
    DropInstructorOnly remove `### BEGIN INSTRUCTOR ONLY` / `### END INSTRUCTOR ONLY` blocks
    StubRegions        replace each solution region by `raise NotImplementedError(...)`
    SelectLanguage     keep one language: a `### BEGIN ZH` / `### END ZH` block is the
                       Chinese of the English text right above it (see SelectLanguage)
    CheckNoLeak        refuse when a solution line survives outside its region, or when a
                       function of the student API keeps a body that no region covers
    CheckLanguage      refuse a skeleton with a docstring or comment not in its language
    GivenPreface       (given code only) the module docstring says the file is given, and
                       loses its paragraphs about stubs, which given code has none of

The solution markers are nbgrader's, so the same source also works in an nbgrader course.
"""
import ast
import dataclasses
import io
import re
import tokenize

BEGIN = "### BEGIN SOLUTION"
END = "### END SOLUTION"
BEGIN_INSTRUCTOR = "### BEGIN INSTRUCTOR ONLY"
END_INSTRUCTOR = "### END INSTRUCTOR ONLY"
BEGIN_ZH = "### BEGIN ZH"
END_ZH = "### END ZH"
# the languages a skeleton is written in: the solution's English and the Chinese of its
# ### BEGIN ZH blocks (text of the solution, not of a catalog: a language the grader's
# catalogs add is refused by `grader release` with this list)
LANGUAGES = ("en", "zh")
CJK = re.compile(r"[\u4e00-\u9fff]")
# what a stub says, per language (the Chinese as in the self-checks: "还没有写")
STUB = {"en": ("# YOUR CODE HERE", "{owner} is not written yet"),
        "zh": ("# 在这里写你的代码", "{owner} 还没有写")}
STUB_CALL = 'raise NotImplementedError("'
# lines too common to count as a leak when they appear outside a region
GENERIC = re.compile(r"^(return( \w+)?|else:|pass|\)|\]|\}|#.*|\"\"\"|)$")


class ReleaseError(Exception):
    """The solution cannot be released as it stands; the message names the line."""


@dataclasses.dataclass
class Region:
    begin: int      # 0-based line index of the BEGIN marker
    end: int        # 0-based line index of the END marker
    indent: str
    owner: str      # the function it is in: "a_function" or "AClass.forward"


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
    def __init__(self, lang="en"):
        self.comment, self.message = STUB[lang]

    def apply(self, source):
        out, last = [], 0
        for region in source.regions:
            out += source.lines[last:region.begin]
            body = source.lines[region.begin + 1:region.end]
            source.solution_lines += body
            out.append(f"{region.indent}{self.comment}")
            message = self.message.format(owner=region.owner)
            out.append(f'{region.indent}raise NotImplementedError("{message}")')
            last = region.end + 1
        out += source.lines[last:]
        source.lines = out
        return source


class SelectLanguage:
    """Keep the text students read in one language.

    A `### BEGIN ZH` ... `### END ZH` block holds the Chinese of the English right above it:
    inside a docstring, of that docstring's text from its opening quotes to the block; as
    comment lines, of the run of comment lines just above it (same indentation). "en" drops
    the blocks; "zh" puts each block where its English was. A block that translates
    nothing, an unclosed, nested or misspelt marker is refused with its line."""

    def __init__(self, lang="en"):
        if lang not in LANGUAGES:
            raise ReleaseError(f"unknown language {lang!r}: choose one of {', '.join(LANGUAGES)}")
        self.lang = lang

    def apply(self, source):
        blocks = self._blocks(source)
        strings = self._strings(source) if blocks else []
        lines = list(source.lines)
        for begin, end in reversed(blocks):  # from the end: the lines above stay where they were
            if self.lang == "zh":
                lines = self._translate(source.path, lines, begin, end, strings, blocks)
            else:
                del lines[begin:end + 1]
        source.lines = lines
        return source

    @staticmethod
    def _blocks(source):
        blocks, open_at = [], None
        for number, line in enumerate(source.lines):
            marker = line.strip()
            if marker == BEGIN_ZH:
                if open_at is not None:
                    raise ReleaseError(f"{source.path}:{number + 1}: {BEGIN_ZH} inside the block "
                                       f"opened at line {open_at + 1}")
                open_at = number
            elif marker == END_ZH:
                if open_at is None:
                    raise ReleaseError(f"{source.path}:{number + 1}: {END_ZH} without a {BEGIN_ZH}")
                if not any(l.strip() not in ("", "#") for l in source.lines[open_at + 1:number]):
                    raise ReleaseError(f"{source.path}:{open_at + 1}: an empty {BEGIN_ZH} block")
                blocks.append((open_at, number))
                open_at = None
            elif re.search(r"\b(BEGIN|END)\s*ZH\b", marker, re.IGNORECASE):
                raise ReleaseError(f"{source.path}:{number + 1}: malformed marker {marker!r}; write "
                                   f"exactly {BEGIN_ZH!r} or {END_ZH!r} on a line of its own")
        if open_at is not None:
            raise ReleaseError(f"{source.path}:{open_at + 1}: {BEGIN_ZH} is never closed by {END_ZH}")
        return blocks

    @staticmethod
    def _strings(source):
        """[(first line, last line, column)] (0-based) of every triple-quoted string."""
        try:
            tokens = list(tokenize.generate_tokens(io.StringIO("\n".join(source.lines)).readline))
        except (tokenize.TokenError, SyntaxError) as error:
            raise ReleaseError(f"{source.path}: does not read as Python: {error}") from None
        return [(t.start[0] - 1, t.end[0] - 1, t.start[1]) for t in tokens
                if t.type == tokenize.STRING and t.string.endswith(('"""', "'''"))]

    @staticmethod
    def _translate(path, lines, begin, end, strings, blocks):
        block = lines[begin + 1:end]
        where = f"{path}:{begin + 1}"
        inside = [s for s in strings if s[0] < begin < s[1]]
        if inside:  # the Chinese of a docstring: from its opening quotes to the block
            first, last, column = inside[0]
            if sum(first < b < last for b, _ in blocks) > 1:
                raise ReleaseError(f"{where}: a second {BEGIN_ZH} block in one docstring")
            opening = lines[first]
            start = column + len(opening[column:]) - len(opening[column:].lstrip("rRuUbBfF"))
            prefix = opening[:start + 3]
            if first + 1 == begin and not opening[len(prefix):].strip():
                raise ReleaseError(f"{where}: a {BEGIN_ZH} block with no English before it "
                                   f"in its docstring")
            return lines[:first] + [prefix + block[0].lstrip()] + block[1:] + lines[end + 1:]
        marker = lines[begin]
        indent = marker[:len(marker) - len(marker.lstrip())]
        if not all(line.strip().startswith("#") for line in block):
            raise ReleaseError(f"{where}: a {BEGIN_ZH} block outside a docstring must be "
                               f"comment lines")
        keep = begin
        while keep and lines[keep - 1].startswith(indent + "#") \
                and not lines[keep - 1].strip().startswith("###"):
            keep -= 1
        if keep == begin:
            raise ReleaseError(f"{where}: a {BEGIN_ZH} block of comments with no English "
                               f"comment right above it")
        return lines[:keep] + block + lines[end + 1:]


class CheckLanguage:
    """With "zh", every docstring and comment of the skeleton holds Chinese: a forgotten
    translation is refused. (English text may name a Chinese term: "en" checks nothing.)"""

    def __init__(self, lang="en"):
        self.lang = lang

    def apply(self, source):
        text = "\n".join(source.lines)
        tree = ast.parse(text, filename=source.path)
        said = [(node.body[0].lineno, ast.get_docstring(node, clean=False))
                for node in ast.walk(tree)
                if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef))
                and ast.get_docstring(node, clean=False)]
        said += [(t.start[0], t.string) for t in
                 tokenize.generate_tokens(io.StringIO(text).readline) if t.type == tokenize.COMMENT]
        for line, words in said:
            if self.lang == "zh" and not CJK.search(words):
                raise ReleaseError(f"{source.path}: released line {line}: no Chinese for "
                                   f"{words.strip()[:80]!r} (add a {BEGIN_ZH} block after it)")
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


def release(solution_path, api_names, lang="en"):
    """The student skeleton for `solution_path`, as text, in `lang` ("en" or "zh")."""
    with open(solution_path, encoding="utf-8") as handle:
        source = Source(solution_path, handle.read().split("\n"))
    for step in (FindRegions(), StubRegions(lang), DropInstructorOnly(), SelectLanguage(lang),
                 CheckNoLeak(api_names), CheckLanguage(lang)):
        source = step.apply(source)
    return "\n".join(source.lines)


# what the module docstring of given code says first, per language ({module}: its name)
GIVEN_NOTE = {
    "en": ("This file is given: the reference solution of an earlier assignment, which this "
           "one builds on.\nImport from it by its module name, `{module}`, and leave it as it "
           "is: the grader uses its\nown copy, not yours."),
    "zh": ("这个文件是给定的：本作业所基于的前一个作业的参考答案。\n按模块名 `{module}` 从中导入，"
           "不要修改它：评分时用的是评分程序自己的副本，不是你的。"),
}


class GivenPreface:
    """The module docstring of given code: its first line, then GIVEN_NOTE, then its other
    paragraphs except those about stubs (`NotImplementedError`), which would tell a
    student to write code that is already there. Without a module docstring, one is added."""

    def __init__(self, lang, module):
        self.note = GIVEN_NOTE[lang].format(module=module)

    def apply(self, source):
        lines = source.lines
        tree = ast.parse("\n".join(lines), filename=source.path)
        first = tree.body[0] if tree.body else None
        if not (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)):
            source.lines = ['"""' + self.note + '\n"""'] + lines
            return source
        start, end = first.lineno - 1, first.end_lineno  # the docstring's lines
        text = "\n".join(lines[start:end])
        quote = text.lstrip()[:3]
        body = text.strip()[3:-3]
        title, _, rest = body.partition("\n")
        paragraphs = [p for p in re.split(r"\n[ \t]*\n", rest.strip("\n")) if p.strip()]
        kept = [p for p in paragraphs if "NotImplementedError" not in p]
        docstring = quote + "\n\n".join([title, self.note, *kept]) + "\n" + quote
        source.lines = lines[:start] + docstring.split("\n") + lines[end:]
        return source


def given(solution_path, lang="en"):
    """The solution as given code, what a later assignment's students get whole (`provide =
    "given"`): its instructor-only text dropped, the solution markers taken out with the code
    between them kept, in `lang`; its docstring says it is given (GivenPreface)."""
    with open(solution_path, encoding="utf-8") as handle:
        source = FindRegions().apply(Source(solution_path, handle.read().split("\n")))
    source.lines = [line for line in source.lines if line.strip() not in (BEGIN, END)]
    source = SelectLanguage(lang).apply(DropInstructorOnly().apply(source))
    module = re.sub(r"\.py$", "", solution_path.replace("\\", "/").rsplit("/", 1)[-1])
    return "\n".join(GivenPreface(lang, module).apply(source).lines)
