"""Code rewritten into one canonical spelling with Python's own parser, before fingerprinting.

What a copier changes without changing the code makes no difference here:

- comments, docstrings (and any other bare string or constant statement), blank lines,
  formatting and redundant parentheses: the code is parsed and printed again statement by
  statement (`ast.unparse`), one statement or compound statement's header a line;
- dead lines: a constant assigned to a name nothing reads (`_debug = 1`), a `pass` beside
  other statements;
- identifier names: every name the code binds (variables, arguments, functions, classes;
  `self` too) is printed as one placeholder; builtins (`len`, `range`, `super`) keep theirs;
- import spelling: a name bound by an import is printed as the dotted name it stands for,
  and the import statements themselves are left out, so `from torch.nn.functional import
  softmax` ... `softmax(x)`, `import torch.nn.functional as F` ... `F.softmax(x)` and
  `torch.nn.functional.softmax(x)` print alike; `elif` and `else: if` alike, and an `else:` after a
  branch that returns (or raises, breaks, continues) alike with its statements after the `if`;
- the order of definitions: each definition (function, method, class header with its
  class-level statements) and each run of other top-level statements is its own piece, and
  fingerprints never span two pieces, so pieces in any order share every fingerprint.

copydetect (fingerprint.py) then tokenises what is printed here, as before. What this
module adds is only what neither copydetect nor Dolos does: both tokenise the text as
written, so parentheses, import spelling and docstrings reach their fingerprints.

Every printed line remembers the lines of the original it came from, so shared passages are
shown in the student's own code. Code that does not parse (a syntax error, a notebook cell
that is not Python) is kept as it is, cut at its `def` and `class` lines, docstrings blanked:
the comparison before this module, for that block only.
"""
import ast
import builtins
import copy
import dataclasses
import re

from pygments import lexers, token

PLACEHOLDER = "v"          # every name the code binds
KEEP = frozenset(dir(builtins))     # names that keep their meaning (len, range, super)
DEFINITION = re.compile(r"^[ \t]{0,8}(?:async[ \t]+def|def|class)[ \t]", re.MULTILINE)
MAX_DEPTH = 200            # nesting beyond this is printed as it is (ast.unparse recurses)
DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
TRIES = (ast.Try, ast.TryStar) if hasattr(ast, "TryStar") else (ast.Try,)


@dataclasses.dataclass
class Normalised:
    """The canonical text, `lines[i]` = (first, last) original lines (from 1) of its line i,
    and `pieces`: (start, end) character ranges of `text` fingerprinted each on its own."""
    text: str
    lines: list
    pieces: list


class _Out:
    """Printed lines, where each came from, and the cuts between pieces."""

    def __init__(self):
        self.lines, self.origin, self.cuts = [], [], {0}

    def line(self, text, first, last, depth):
        for part in text.split("\n"):
            self.lines.append("    " * depth + part)
            self.origin.append((first, max(first, last)))

    def cut(self):
        self.cuts.add(len(self.lines))

    def result(self):
        text = "\n".join(self.lines)
        offsets, at = [], 0
        for line in self.lines:
            offsets.append(at)
            at += len(line) + 1
        bounds = sorted(self.cuts | {len(self.lines)})
        pieces = [(offsets[a], offsets[b - 1] + len(self.lines[b - 1]))
                  for a, b in zip(bounds, bounds[1:]) if b > a]
        return Normalised(text, list(self.origin), pieces)


def imported_names(trees):
    """{local name: dotted name} for every name an import binds in `trees`."""
    names = {}
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:   # `import a.b` binds a; `import a.b as c`, c
                    names[alias.asname or alias.name.split(".")[0]] = \
                        alias.name if alias.asname else alias.name.split(".")[0]
            elif isinstance(node, ast.ImportFrom):
                module = "." * (node.level or 0) + (node.module or "")
                for alias in node.names:
                    if alias.name != "*":
                        names[alias.asname or alias.name] = \
                            f"{module}.{alias.name}" if module and not module.endswith(".") \
                            else module + alias.name
    return names


def _dotted(name, like):
    parts = name.split(".")
    node = ast.Name(id=parts[0] or PLACEHOLDER, ctx=ast.Load())
    for part in parts[1:]:
        if part:
            node = ast.Attribute(value=node, attr=part, ctx=ast.Load())
    return ast.copy_location(node, like)


class _Canonical(ast.NodeTransformer):
    """Names as placeholders or their imported dotted names; no docstrings, no imports, no
    dead lines (a constant assigned to a name nothing reads, a `pass` beside other code)."""

    def __init__(self, imports, read):
        self.imports, self.read = imports, read

    def _dead(self, statement):
        if isinstance(statement, ast.Pass):
            return True
        return isinstance(statement, ast.Assign) and isinstance(statement.value, ast.Constant) \
            and all(isinstance(t, ast.Name) and t.id not in self.read for t in statement.targets)

    def visit_Name(self, node):
        if isinstance(node.ctx, ast.Load) and node.id in self.imports:
            return _dotted(self.imports[node.id], node)
        if node.id not in KEEP or not isinstance(node.ctx, ast.Load):
            node.id = PLACEHOLDER
        return node

    def visit_arg(self, node):
        node.arg = PLACEHOLDER
        node.annotation = self.visit(node.annotation) if node.annotation else None
        return node

    def _body(self, statements):
        kept = []
        for statement in statements:
            if isinstance(statement, (ast.Import, ast.ImportFrom)):
                continue
            if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
                continue   # a docstring, or any bare string or number: a comment
            if self._dead(statement):
                continue
            result = self.visit(statement)
            for node in result if isinstance(result, list) else [result] if result else []:
                if isinstance(node, ast.If) and node.orelse and \
                        isinstance(node.body[-1], (ast.Return, ast.Raise, ast.Continue, ast.Break)):
                    kept += [node] + node.orelse      # `else:` after a return says nothing
                    node.orelse = []
                else:
                    kept.append(node)
        return kept

    def generic_visit(self, node):
        for field, value in ast.iter_fields(node):
            if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                body = self._body(value)
                if not body and field in ("body", "finalbody"):
                    body = [ast.copy_location(ast.Pass(), value[0])]
                setattr(node, field, body)
            elif isinstance(value, list):
                setattr(node, field, [self.visit(v) if isinstance(v, ast.AST) else v
                                      for v in value])
            elif isinstance(value, ast.AST):
                setattr(node, field, self.visit(value))
        return node

    def visit_FunctionDef(self, node):
        node.name = PLACEHOLDER
        return self.generic_visit(node)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node):
        node.name = PLACEHOLDER
        return self.generic_visit(node)

    def visit_ExceptHandler(self, node):
        if node.name:
            node.name = PLACEHOLDER
        return self.generic_visit(node)

    def visit_alias(self, node):
        return node

    def visit_Global(self, node):
        node.names = [PLACEHOLDER] * len(node.names)
        return node

    visit_Nonlocal = visit_Global


def _header(node):
    """The `def ...:`, `class ...:`, `for ...:`, `while ...:` or `with ...:` line."""
    bare = copy.copy(node)
    bare.body, bare.decorator_list = [ast.Pass()], []
    if hasattr(bare, "orelse"):
        bare.orelse = []
    return ast.unparse(bare).split("\n")[-2]


def _emit(statements, out, depth, offset):
    """Print `statements` at `depth`, each line with its original lines (+ offset)."""
    for node in statements:
        first = node.lineno + offset
        last = (node.end_lineno or node.lineno) + offset
        if depth > MAX_DEPTH:
            out.line(ast.unparse(node), first, last, depth)
        elif isinstance(node, ast.If):
            out.line(f"if {ast.unparse(node.test)}:", first, first, depth)
            _emit(node.body, out, depth + 1, offset)
            _else(node.orelse, "else:", out, depth, offset)
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith)):
            out.line(_header(node), first, node.body[0].lineno + offset - 1, depth)
            _emit(node.body, out, depth + 1, offset)
            _else(getattr(node, "orelse", []), "else:", out, depth, offset)
        elif isinstance(node, TRIES):
            out.line("try:", first, first, depth)
            _emit(node.body, out, depth + 1, offset)
            for handler in node.handlers:
                head = "except" + (f" {ast.unparse(handler.type)}" if handler.type else "") \
                    + (f" as {handler.name}" if handler.name else "") + ":"
                out.line(head, handler.lineno + offset, handler.lineno + offset, depth)
                _emit(handler.body, out, depth + 1, offset)
            _else(node.orelse, "else:", out, depth, offset)
            _else(node.finalbody, "finally:", out, depth, offset)
        elif isinstance(node, DEFINITIONS):
            out.cut()
            for decorator in node.decorator_list:
                out.line("@" + ast.unparse(decorator), decorator.lineno + offset,
                         (decorator.end_lineno or decorator.lineno) + offset, depth)
            out.line(_header(node), first, max(first, node.body[0].lineno + offset - 1), depth)
            _emit(node.body, out, depth + 1, offset)
            out.cut()
        else:
            out.line(ast.unparse(node), first, last, depth)


def _else(body, word, out, depth, offset):
    if body:
        where = body[0].lineno + offset
        out.line(word, where, where, depth)
        _emit(body, out, depth + 1, offset)


def _raw(text, out, offset):
    """A block that does not parse: as it is, cut at def/class lines, docstrings blanked."""
    blanked = blank_docstrings(text)
    starts = {blanked.count("\n", 0, m.start()) for m in DEFINITION.finditer(blanked)}
    for number, line in enumerate(blanked.split("\n")):
        if number in starts:
            out.cut()
        out.line(line, number + 1 + offset, number + 1 + offset, 0)


def blank_docstrings(text):
    """`text` with every docstring's characters replaced by spaces (newlines kept)."""
    lexer = lexers.get_lexer_by_name("python", stripnl=False, stripall=False, ensurenl=False)
    chars = list(text)
    for start, kind, value in lexer.get_tokens_unprocessed(text):
        if kind in token.String.Doc:
            for i in range(start, min(start + len(value), len(chars))):
                if chars[i] != "\n":
                    chars[i] = " "
    return "".join(chars)


def parse(text):
    """The module's tree, or None when it does not parse (or is too deep to)."""
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        return None


def normalise(blocks):
    """Normalised code of `blocks`: [(text, offset)], each parsed on its own (a notebook's
    cells; a plain file is one block), its line L being line L + offset of what is shown.
    Imports of every block count for all (a notebook's cells share their names). Never
    raises on what a submission holds: a block that fails is kept as it is (_raw)."""
    trees = [parse(text) for text, _ in blocks]
    imports = imported_names([t for t in trees if t is not None])
    read = {n.id for t in trees if t is not None for n in ast.walk(t)
            if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Store)} | \
        {n.attr for t in trees if t is not None for n in ast.walk(t) if isinstance(n, ast.Attribute)}
    out = _Out()
    for (text, offset), tree in zip(blocks, trees):
        out.cut()
        if tree is not None:
            size = len(out.lines)
            try:
                _emit(_Canonical(imports, read).visit(tree).body, out, 0, offset)
                out.cut()
                continue
            except Exception:  # noqa: BLE001 - too deep to print, or odder: kept as it is
                del out.lines[size:], out.origin[size:]
                out.cuts = {c for c in out.cuts if c <= size}
        _raw(text, out, offset)
    return out.result()
