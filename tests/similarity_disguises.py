"""Disguises a copier applies to a classmate's file, as rewrites of Python source.

Each takes the source and the names the assignment's API fixes (what the hidden tests call,
which a working copy must keep), and returns a copy that still parses and, for every
disguise but `inline` and `extract` where the helper's names move, runs the same code. They
are written here from the source (tokenize and ast positions), not with grader/similarity,
so what they do is independent of what the report undoes.

    comments      a comment line above every statement, and one at the end of others
    docstrings    every docstring replaced, a new one on every definition without one
    parentheses   every assigned and returned expression in parentheses (returns twice)
    formatting    2-space indents, a line per argument, other spacing (what a formatter
                  with other settings does)
    rename        every name the code chooses (locals, helpers, their arguments, `self`,
                  attributes it stores) renamed consistently; the API's names, method names
                  and the API's arguments kept
    imports       `mod.f` through imported modules written `from mod import f`, aliased
                  where the short name is taken (`softmax_2`)
    order         top-level definitions, and the methods of each class, in reverse order
    inline        a helper called once replaced by its body at the call
    extract       the middle of every function of four statements or more moved into a
                  new helper function, called with what it reads, returning what it sets
    padding       a dead assignment after every statement of a function (tests/similarity
                  has one such copy, gus_padded.py)

`apply(source, names, api)` runs several in order; `COMBINATIONS` are the pairs and triples
measured in bench/similarity.py.
"""
import ast
import builtins
import io
import itertools
import keyword
import tokenize

WORDS = ["alpha", "beta", "gamma", "delta", "eps", "zeta", "eta", "theta", "iota", "kappa",
         "lam", "mu", "nu", "xi", "omicron", "pi_", "rho", "sigma", "tau", "upsilon", "phi",
         "chi", "psi", "omega"]


def _lines(source):
    return source.split("\n")


def _offset(lines, lineno, col_bytes):
    """The character offset in the whole text of (line, UTF-8 byte column) as ast gives it."""
    before = sum(len(line) + 1 for line in lines[:lineno - 1])
    return before + len(lines[lineno - 1].encode("utf-8")[:col_bytes].decode("utf-8", "ignore"))


def _replace(source, edits):
    """`source` with [(start, end, text)] character edits applied (non-overlapping)."""
    out, at = [], 0
    for start, end, text in sorted(edits, key=lambda e: (e[0], e[1])):
        if start < at:
            continue
        out += [source[at:start], text]
        at = end
    return "".join(out) + source[at:]


def _span(source, node):
    lines = _lines(source)
    return (_offset(lines, node.lineno, node.col_offset),
            _offset(lines, node.end_lineno, node.end_col_offset))


def _indent_of(source, lineno):
    line = _lines(source)[lineno - 1]
    return line[:len(line) - len(line.lstrip())]


def _statements(tree):
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            value = getattr(node, field, None)
            for statement in value if isinstance(value, list) else []:
                if isinstance(statement, ast.stmt):
                    yield statement
        for handler in getattr(node, "handlers", []) or []:
            yield from handler.body


def _docstring_node(node):
    body = getattr(node, "body", None)
    if isinstance(body, list) and body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        return body[0]
    return None


DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)


# --- comments and docstrings -----------------------------------------------------------

def comments(source, api=()):
    tree = ast.parse(source)
    lines = _lines(source)
    starts = sorted({s.lineno for s in _statements(tree)} | {s.lineno for s in tree.body})
    docs = {d.lineno for n in ast.walk(tree) if (d := _docstring_node(n)) is not None}
    strings = set()
    for node in ast.walk(tree):   # lines inside a multi-line string or expression
        if isinstance(node, ast.stmt) and node.end_lineno > node.lineno \
                and not isinstance(node, DEFS + (ast.If, ast.For, ast.While, ast.With, ast.Try)):
            strings.update(range(node.lineno + 1, node.end_lineno + 1))
    out = []
    for number, line in enumerate(lines, start=1):
        if number in starts and number not in docs:
            indent = line[:len(line) - len(line.lstrip())]
            out.append(f"{indent}# step {number}: what happens next, as I understood it")
        if number in starts and number not in docs and number not in strings \
                and number % 2 == 0 and line.rstrip().endswith((")", "]")) \
                and "#" not in line:
            line += "  # checked by hand"
        out.append(line)
    return "\n".join(out)


def docstrings(source, api=()):
    tree = ast.parse(source)
    edits = []
    for node in ast.walk(tree):
        if not isinstance(node, DEFS + (ast.Module,)):
            continue
        doc = _docstring_node(node)
        name = getattr(node, "name", "module")
        text = f'"""My notes on {name}: the shapes go in, the result comes out, see the lecture."""'
        if doc is not None:
            start, end = _span(source, doc)
            edits.append((start, end, text))
        elif not isinstance(node, ast.Module):
            first = node.body[0]
            start = _offset(_lines(source), first.lineno, first.col_offset)
            edits.append((start, start, text + "\n" + _indent_of(source, first.lineno)))
    return _replace(source, edits)


# --- parentheses ------------------------------------------------------------------------

def parentheses(source, api=()):
    tree = ast.parse(source)
    edits = []
    for node in ast.walk(tree):
        value = None
        if isinstance(node, (ast.Assign, ast.AugAssign)) or \
                isinstance(node, ast.AnnAssign) and node.value is not None:
            value, twice = node.value, False
        elif isinstance(node, ast.Return) and node.value is not None:
            value, twice = node.value, True
        if value is not None:
            start, end = _span(source, value)
            edits.append((start, end, ("((" if twice else "(") + source[start:end]
                          + ("))" if twice else ")")))
    return _replace(source, edits)


# --- formatting -------------------------------------------------------------------------

OPEN, CLOSE = "([{", ")]}"
TIGHT_AFTER = set("([{.~") | {"**"}
TIGHT_BEFORE = set(")]}.,:;") | {"("}


def formatting(source, api=()):
    """Print the tokens again: 2-space indents, every comma inside brackets followed by a
    new line, no spaces around `=`, `*`, `/`, three blank lines between definitions."""
    tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    out, level, depth, line_start = [], 0, 0, True
    previous = None
    for tok in tokens:
        kind, text = tok.type, tok.string
        if kind in (tokenize.ENCODING, tokenize.ENDMARKER):
            continue
        if kind == tokenize.INDENT:
            level += 1
            continue
        if kind == tokenize.DEDENT:
            level -= 1
            continue
        if kind in (tokenize.NEWLINE, tokenize.NL):
            if depth == 0:
                out.append("\n")
                line_start, previous = True, None
            continue
        if kind == tokenize.COMMENT:
            out.append(("" if line_start else "  ") + ("  " * level if line_start else "") + text)
            if depth:
                out.append("\n" + "  " * (level + depth + 1))
                previous = "\n"
            continue
        if line_start:
            if text in ("def", "class", "async", "@") and level == 0 and out[-2:] != ["\n", "\n"]:
                out.append("\n\n")
            out.append("  " * level)
            line_start = False
        elif previous is not None and previous != "\n":
            tight = previous in TIGHT_AFTER or text in TIGHT_BEFORE and not (
                text == "(" and previous in keyword.kwlist) or text in ("=", "*", "/") and depth \
                or previous in ("=",) and depth
            if text == "(" and previous in (",", "=", "in", "return", "and", "or", "not", "if"):
                tight = False
            if not tight:
                out.append(" ")
        if kind == tokenize.OP and text in OPEN:
            depth += 1
        elif kind == tokenize.OP and text in CLOSE:
            depth -= 1
        out.append(text)
        previous = text
        if kind == tokenize.OP and text == "," and depth:
            out.append("\n" + "  " * (level + depth + 1))
            previous = "\n"
    return "".join(out)


# --- rename -----------------------------------------------------------------------------

def _chosen_names(tree, api):
    """Names the code chooses and may change: locals, helpers and their arguments, `self`,
    attributes stored on self; never the API, its methods and arguments, a builtin, a
    keyword argument's name or a dunder."""
    fixed = set(api) | set(dir(builtins)) | set(keyword.kwlist)
    keywords = {k.arg for n in ast.walk(tree) if isinstance(n, ast.Call) for k in n.keywords if k.arg}
    api_functions = set()
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name in api:
            api_functions.update(id(m) for m in node.body if isinstance(m, FUNCS))
        elif isinstance(node, FUNCS) and node.name in api:
            api_functions.add(id(node))
    imported = {a.asname or a.name.split(".")[0] for n in ast.walk(tree)
                if isinstance(n, (ast.Import, ast.ImportFrom)) for a in n.names}
    methods = {m.name for n in ast.walk(tree) if isinstance(n, ast.ClassDef)
               for m in n.body if isinstance(m, FUNCS)}   # forward: what nn.Module calls
    fixed |= methods
    chosen = set()
    for node in ast.walk(tree):
        if isinstance(node, DEFS):
            chosen.add(node.name)
            if isinstance(node, FUNCS):
                arguments = node.args.posonlyargs + node.args.args + node.args.kwonlyargs
                for index, arg in enumerate(arguments):
                    if id(node) not in api_functions or (index == 0 and arg.arg == "self"):
                        chosen.add(arg.arg)
                for arg in (node.args.vararg, node.args.kwarg):
                    if arg is not None and id(node) not in api_functions:
                        chosen.add(arg.arg)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            chosen.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) \
                and isinstance(node.value, ast.Name) and node.value.id == "self":
            chosen.add(("attr", node.attr))
    return {n for n in chosen if (n[1] if isinstance(n, tuple) else n) not in fixed | keywords
            | imported and not (n[1] if isinstance(n, tuple) else n).startswith("__")
            and (n[1] if isinstance(n, tuple) else n) != "attention_weights"}


def rename(source, api=()):
    tree = ast.parse(source)
    chosen = sorted(_chosen_names(tree, api), key=str)
    new = {}
    for index, name in enumerate(chosen):
        base = name[1] if isinstance(name, tuple) else name
        new[name] = f"{WORDS[index % len(WORDS)]}{index // len(WORDS) or ''}" + (
            "_" if base.startswith("_") else "")
    edits, lines = [], _lines(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in new:
            start, end = _span(source, node)
            edits.append((start, end, new[node.id]))
        elif isinstance(node, ast.arg) and node.arg in new:
            start = _offset(lines, node.lineno, node.col_offset)
            edits.append((start, start + len(node.arg), new[node.arg]))
        elif isinstance(node, ast.Attribute) and ("attr", node.attr) in new:
            end = _offset(lines, node.end_lineno, node.end_col_offset)
            edits.append((end - len(node.attr), end, new[("attr", node.attr)]))
        elif isinstance(node, ast.keyword) and node.arg in new:
            pass   # keyword names are never chosen (see _chosen_names)
    tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    for before, tok in zip(tokens, tokens[1:]):
        if before.string in ("def", "class") and tok.string in new:
            start = _offset(lines, tok.start[0], len(lines[tok.start[0] - 1][:tok.start[1]].encode()))
            edits.append((start, start + len(tok.string), new[tok.string]))
    return _replace(source, edits)


# --- imports ----------------------------------------------------------------------------

def imports(source, api=()):
    tree = ast.parse(source)
    modules = {}
    last_import = 0
    for node in tree.body:
        if isinstance(node, ast.Import):
            for alias in node.names:
                modules[alias.asname or alias.name.split(".")[0]] = \
                    alias.name if alias.asname else alias.name.split(".")[0]
            last_import = node.end_lineno
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                modules[alias.asname or alias.name] = f"{node.module}.{alias.name}"
            last_import = node.end_lineno
    taken = set(dir(builtins)) | {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} \
        | {n.name for n in ast.walk(tree) if isinstance(n, DEFS)} \
        | {n.arg for n in ast.walk(tree) if isinstance(n, ast.arg)}
    parents = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parents[child] = node
    short_of, lines_added, edits = {}, [], []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute) or not isinstance(node.ctx, ast.Load):
            continue
        if isinstance(parents.get(node), ast.Attribute):
            continue            # only the whole chain
        chain, root = [node.attr], node.value
        while isinstance(root, ast.Attribute):
            chain.insert(0, root.attr)
            root = root.value
        if not isinstance(root, ast.Name) or root.id not in modules:
            continue
        module = ".".join([modules[root.id]] + chain[:-1])
        dotted = f"{module}.{chain[-1]}"
        if dotted not in short_of:
            short, count = chain[-1], 1
            while short in taken or short in short_of.values():
                count += 1
                short = f"{chain[-1]}_{count}"
            short_of[dotted] = short
            lines_added.append(f"from {module} import {chain[-1]}"
                               + (f" as {short}" if short != chain[-1] else ""))
        start, end = _span(source, node)
        edits.append((start, end, short_of[dotted]))
    if not lines_added:
        return source
    lines = _lines(source)
    where = sum(len(line) + 1 for line in lines[:last_import])
    edits.append((where, where, "\n".join(lines_added) + "\n"))
    return _replace(source, edits)


# --- order ------------------------------------------------------------------------------

def _chunks(source, body, first_line, last_line):
    """(start line, end line, node) of each statement of `body`, comment lines above it
    included, covering first_line..last_line."""
    chunks, at = [], first_line
    for node in body:
        start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        end = node.end_lineno
        chunks.append([at, end, node, start])
        at = end + 1
    if chunks:
        chunks[-1][1] = max(chunks[-1][1], last_line)
    return chunks


def order(source, api=()):
    tree = ast.parse(source)
    lines = _lines(source)
    chunks = _chunks(source, tree.body, 1, len(lines))
    def text(chunk):
        part = lines[chunk[0] - 1:chunk[1]]
        node = chunk[2]
        if isinstance(node, ast.ClassDef):
            methods = [c for c in _chunks(source, node.body, node.body[0].lineno, node.end_lineno)]
            defs = [c for c in methods if isinstance(c[2], FUNCS)]
            if len(defs) > 1:
                head = lines[chunk[0] - 1:methods[0][0] - 1]
                rest = [c for c in methods if not isinstance(c[2], FUNCS)]
                body = [lines[c[0] - 1:c[1]] for c in rest] + \
                       [lines[c[0] - 1:c[1]] for c in reversed(defs)]
                part = head + [line for block in body for line in _padded(block)]
        return _padded(part)
    top = [c for c in chunks if not isinstance(c[2], DEFS)]
    first_def = next((i for i, c in enumerate(chunks) if isinstance(c[2], DEFS)), len(chunks))
    head = [c for c in chunks[:first_def] if not isinstance(c[2], DEFS)]
    tail = [c for c in top if c not in head]
    defs = [c for c in chunks if isinstance(c[2], DEFS)]
    pieces = [text(c) for c in head] + [text(c) for c in reversed(defs)] + [text(c) for c in tail]
    return "\n".join(line for piece in pieces for line in piece).rstrip("\n") + "\n"


def _padded(block):
    """A block of lines ending in one blank line (definitions moved keep apart)."""
    while block and not block[-1].strip():
        block = block[:-1]
    return block + [""]


# --- inline and extract -----------------------------------------------------------------

class _Substitute(ast.NodeTransformer):
    def __init__(self, mapping):
        self.mapping = mapping

    def visit_Name(self, node):
        if isinstance(node.ctx, ast.Load) and node.id in self.mapping:
            return ast.copy_location(self.mapping[node.id], node)
        return node


def inline(source, api=()):
    """Every helper (a top-level function outside the API whose only `return` ends it)
    called exactly once, from a simple statement, is replaced there by its body."""
    tree = ast.parse(source)
    helpers = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name not in api and not node.decorator_list \
                and isinstance(node.body[-1], ast.Return) and node.body[-1].value is not None \
                and sum(isinstance(n, ast.Return) for n in ast.walk(node)) == 1 \
                and not any(isinstance(n, (ast.Yield, ast.YieldFrom, ast.Global, ast.Nonlocal))
                            for n in ast.walk(node)) \
                and not node.args.vararg and not node.args.kwarg and not node.args.kwonlyargs:
            helpers[node.name] = node
    calls = {}
    compound = DEFS + (ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try)
    for statement in _statements(tree):
        if isinstance(statement, compound):
            continue    # its simple statements are walked on their own
        for node in ast.walk(statement):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                    and node.func.id in helpers:
                calls.setdefault(node.func.id, []).append((statement, node))
    edits = []
    for name, helper in helpers.items():
        found = calls.get(name, [])
        if len(found) != 1:
            continue
        statement, call = found[0]
        if not isinstance(statement, (ast.Assign, ast.Return, ast.Expr, ast.AugAssign)) \
                or call.keywords or len(call.args) != len(helper.args.args) \
                or sum(isinstance(n, ast.Name) and n.id == name for n in ast.walk(tree)) != 1:
            continue
        params = [a.arg for a in helper.args.args]
        stored = {n.id for n in ast.walk(helper) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        mapping, lines = {}, []
        for param, arg in zip(params, call.args):
            if param in stored or not isinstance(arg, (ast.Name, ast.Attribute, ast.Constant)):
                lines.append(f"{param} = {ast.unparse(arg)}")
            else:
                mapping[param] = arg
        body = [_Substitute(mapping).visit(ast.parse(ast.unparse(s)).body[0])
                for s in helper.body if _docstring_node(ast.Module(body=[s], type_ignores=[])) is None]
        lines += [ast.unparse(s) for s in body[:-1]]
        result = body[-1].value
        whole = ast.parse(ast.unparse(statement)).body[0]
        class _Call(ast.NodeTransformer):
            def visit_Call(self, node):
                self.generic_visit(node)
                if isinstance(node.func, ast.Name) and node.func.id == name:
                    return result
                return node
        lines.append(ast.unparse(_Call().visit(whole)))
        indent = _indent_of(source, statement.lineno)
        start = _offset(_lines(source), statement.lineno, statement.col_offset)
        end = _offset(_lines(source), statement.end_lineno, statement.end_col_offset)
        edits.append((start, end, ("\n" + indent).join(
            line.replace("\n", "\n" + indent) for line in lines)))
        first = min([helper.lineno] + [d.lineno for d in helper.decorator_list])
        h_start = _offset(_lines(source), first, 0)
        h_end = _offset(_lines(source), helper.end_lineno, helper.end_col_offset)
        edits.append((h_start, h_end, ""))
    return _replace(source, edits)


def _loaded(nodes):
    return {n.id for s in nodes for n in ast.walk(s) if isinstance(n, ast.Name)
            and isinstance(n.ctx, ast.Load)}


def _in_comprehensions(nodes):
    """Names a comprehension of `nodes` binds (they live in the comprehension only)."""
    return {n.id for s in nodes for c in ast.walk(s)
            if isinstance(c, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp))
            for g in c.generators for n in ast.walk(g.target) if isinstance(n, ast.Name)}


def _stored(nodes):
    return {n.id for s in nodes for n in ast.walk(s) if isinstance(n, ast.Name)
            and isinstance(n.ctx, ast.Store)} - _in_comprehensions(nodes)


def extract(source, api=()):
    """In every function of four statements or more, the statements between its first and
    its last go into a new top-level helper `_part_<n>`, placed above the definition that
    holds the function."""
    tree = ast.parse(source)
    edits, helpers = [], {}
    counter = itertools.count(1)
    taken = {n.name for n in ast.walk(tree) if isinstance(n, DEFS)}
    for top in tree.body:
        functions = [top] if isinstance(top, FUNCS) else \
            [m for m in top.body if isinstance(m, FUNCS)] if isinstance(top, ast.ClassDef) else []
        for function in functions:
            body = [s for s in function.body if _docstring_node(
                ast.Module(body=[s], type_ignores=[])) is None]
            if len(body) < 4:
                continue
            middle = body[1:-1]
            if any(isinstance(n, (ast.Return, ast.Yield, ast.YieldFrom, ast.Global, ast.Nonlocal,
                                  ast.Break, ast.Continue, ast.Await, ast.FunctionDef,
                                  ast.ClassDef, ast.Lambda))
                   for s in middle for n in ast.walk(s)):
                continue
            if any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
                   and n.func.id == "super" for s in middle for n in ast.walk(s)):
                continue
            params = [a.arg for a in function.args.posonlyargs + function.args.args
                      + function.args.kwonlyargs] + \
                [a.arg for a in (function.args.vararg, function.args.kwarg) if a is not None]
            before = set(params) | _stored(body[:1])
            inputs = sorted((_loaded(middle) - _in_comprehensions(middle)) & before)
            outputs = sorted(_stored(middle) & (_loaded(body[-1:]) - _in_comprehensions(body[-1:])))
            index = next(counter)
            name = f"_part_{index}"
            while name in taken:
                name += "_"
            taken.add(name)
            inner = "\n".join(ast.unparse(s) for s in middle)
            returned = ", ".join(outputs)
            helper = f"def {name}({', '.join(inputs)}):\n" + "\n".join(
                "    " + line for line in inner.split("\n")) + (
                f"\n    return {returned}" if outputs else "") + "\n\n\n"
            call = f"{name}({', '.join(inputs)})"
            call = f"{returned} = {call}" if outputs else call
            start = _offset(_lines(source), middle[0].lineno, middle[0].col_offset)
            end = _offset(_lines(source), middle[-1].end_lineno, middle[-1].end_col_offset)
            edits.append((start, end, call))
            first = min([top.lineno] + [d.lineno for d in getattr(top, "decorator_list", [])])
            helpers.setdefault(first, []).append(helper)
    for first, texts in helpers.items():
        where = _offset(_lines(source), first, 0)
        edits.append((where, where, "".join(texts)))
    return _replace(source, edits)


# --- padding ----------------------------------------------------------------------------

def padding(source, api=()):
    tree = ast.parse(source)
    edits = []
    counter = itertools.count(1)
    for function in ast.walk(tree):
        if not isinstance(function, FUNCS):
            continue
        for statement in function.body[:-1]:
            if isinstance(statement, (ast.Assign, ast.Expr, ast.AugAssign)) and \
                    _docstring_node(ast.Module(body=[statement], type_ignores=[])) is None:
                end = _offset(_lines(source), statement.end_lineno, statement.end_col_offset)
                indent = _indent_of(source, statement.lineno)
                edits.append((end, end, f"\n{indent}_dbg{next(counter)} = {next(counter)}"))
    return _replace(source, edits)


DISGUISES = {"comments": comments, "docstrings": docstrings, "parentheses": parentheses,
             "formatting": formatting, "rename": rename, "imports": imports, "order": order,
             "inline": inline, "extract": extract, "padding": padding}
# the rewrites issue 28 names; padding is the test set's older disguise
NAMED = ["comments", "docstrings", "parentheses", "formatting", "rename", "imports", "order",
         "inline", "extract"]
# applied in this order whatever the combination (the structural rewrites first, the
# formatting last, as a copier would tidy up at the end)
SEQUENCE = ["inline", "extract", "order", "imports", "rename", "parentheses", "padding",
            "docstrings", "comments", "formatting"]
COMBINATIONS = [(name,) for name in NAMED + ["padding"]] + \
    [c for c in itertools.combinations(NAMED, 2)] + [c for c in itertools.combinations(NAMED, 3)]


def apply(source, names, api=()):
    """`source` with the disguises `names` applied (in SEQUENCE's order); each result parses."""
    for name in sorted(names, key=SEQUENCE.index):
        source = DISGUISES[name](source, api)
        ast.parse(source)
    return source


def notebook_cells(source):
    """The source as a notebook's code cells (an import cell, a cell per definition)."""
    tree = ast.parse(source)
    lines = _lines(source)
    cells, at = [], 0
    for node in tree.body:
        if isinstance(node, DEFS):
            start = min([node.lineno] + [d.lineno for d in node.decorator_list]) - 1
            if "\n".join(lines[at:start]).strip():
                cells.append("\n".join(lines[at:start]).strip("\n") + "\n")
            cells.append("\n".join(lines[start:node.end_lineno]) + "\n")
            at = node.end_lineno
    if "\n".join(lines[at:]).strip():
        cells.append("\n".join(lines[at:]).strip("\n") + "\n")
    return cells
