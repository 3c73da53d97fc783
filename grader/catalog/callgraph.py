"""What a student's file defines, and which names of the api each definition's code reaches.

Read on the trusted side from the source's syntax tree (nothing the worker says is
believed): a top-level function or class reaches every api name its body mentions (a call,
a module built from a class, an attribute `mod.name`), and everything the top-level
definitions it mentions reach in turn (a helper of the student's own counts as its caller's
code). Names imported from an earlier assignment's module (`from earlier import Block as B`)
are reached under the name they were imported as. A converted notebook's cells (strings
intake hands its cell runner) are read as the top-level code they run as.

    graph = CallGraph.of_file("<module>.py")
    graph.defines("caller")                  # True: the file defines it at the top level
    graph.reaches("caller", api)             # the names of `api` its code reaches

A file that is not valid Python defines nothing and reaches nothing. This is evidence for
what a sentence may say, and for which callees a case can be judged apart from: code that
reaches a name only through a string (getattr(module, "name")) is not seen, and is then
judged with the code it really runs.
"""
import ast

MAX_SOURCE = 4 * 2**20  # characters: a submission's staged file is far smaller


class CallGraph:
    def __init__(self, definitions, mentions, imported):
        self.definitions = definitions  # top-level name -> "function" | "class"
        self.mentions = mentions        # top-level name -> names its body mentions
        self.imported = imported        # name -> the module it was imported from

    @classmethod
    def of_source(cls, source):
        try:
            tree = ast.parse(source[:MAX_SOURCE] if isinstance(source, str) else "")
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return cls({}, {}, {})
        definitions, mentions, imported = {}, {}, {}
        for node in _top_level(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                definitions[node.name] = "class" if isinstance(node, ast.ClassDef) else "function"
                mentions[node.name] = _mentioned(node)
            elif isinstance(node, ast.Assign) and len(node.targets) == 1 and \
                    isinstance(node.targets[0], ast.Name):
                # `helper = other_function` or a lambda: the name is the value's code
                mentions.setdefault(node.targets[0].id, set()).update(_mentioned(node.value))
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    imported[alias.asname or alias.name] = (node.module, alias.name)
        return cls(definitions, mentions, imported)

    @classmethod
    def of_file(cls, path):
        try:
            with open(path, encoding="utf-8", errors="replace") as handle:
                return cls.of_source(handle.read(MAX_SOURCE))
        except OSError:
            return cls({}, {}, {})

    def defines(self, name):
        return name in self.definitions

    def reaches(self, name, names):
        """The names of `names` (api names, of this module or an earlier one) that the code
        of `name` mentions, directly or through the other top-level definitions it mentions.
        An imported name counts under the name it was imported as."""
        wanted = set(names)
        seen, todo, found = {name}, [name], set()
        while todo:
            for mention in self.mentions.get(todo.pop(), ()):
                local = self.imported.get(mention, (None, mention))[1]
                if local in wanted and mention != name:
                    found.add(local)
                if mention in self.mentions and mention not in seen:
                    seen.add(mention)
                    todo.append(mention)
        found.discard(name)
        return found


CELL_RUNNER = "__attnkit_run_cell__"  # grader/intake/notebook.py: a converted notebook's cells


def _top_level(tree, depth=0):
    """The module's top-level statements; a converted notebook's cells (each handed as a
    string to the runner intake writes) count as top-level code, as they run at the top."""
    for node in tree.body:
        call = node.value if isinstance(node, ast.Expr) else None
        if depth == 0 and isinstance(call, ast.Call) and isinstance(call.func, ast.Name) \
                and call.func.id == CELL_RUNNER and len(call.args) == 2 \
                and isinstance(call.args[1], ast.Constant) and isinstance(call.args[1].value, str):
            try:
                yield from _top_level(ast.parse(call.args[1].value), depth + 1)
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                continue
        else:
            yield node


def _mentioned(node):
    """Every name a definition's body mentions: `name`, `something.name`."""
    out = set()
    for child in ast.walk(node):
        if isinstance(child, ast.Name):
            out.add(child.id)
        elif isinstance(child, ast.Attribute):
            out.add(child.attr)
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        out.discard(node.name)
    return out
