"""An assignment, declared as data: `tests_hidden/<name>/assignment.toml`, read and checked here.

The grader names no assignment: everything it needs to know about one (the file students
hand in, what they write, the parts and their points, which function calls which, where the
case table, the catalog and the correct alternatives are) comes from this declaration. An
unknown key, a missing one or a value of the wrong type is refused with the key's name,
as otter-grader's `Assignment` config does; so are parts whose points do not add up to the
total and targets the API does not name.

    assignment = load("attention")        # or load(): the kit's only one, or the one
                                          # whose declaration says `default = true`
    assignment.module_file                # "<module>.py", the file students hand in
    assignment.part_of(target)            # the part whose cases call `target`
"""
import dataclasses
import functools
import hashlib
import importlib.util
import keyword
import os
import re
import sys
import tomllib

from . import paths

DECLARATION = "assignment.toml"
PROVIDE = ("student", "given")   # how an earlier assignment reaches a later one's worker


class AssignmentError(ValueError):
    """The declaration is wrong: the message names the file and the key."""


@dataclasses.dataclass(frozen=True)
class Part:
    name: str
    points: float
    targets: tuple          # the functions and classes whose cases make up the part
    short: str              # the console's column heading (at most 9 characters)
    gpu: bool = False       # the part re-runs its targets' cases on CUDA
    selfcheck: str = ""     # pytest -k keyword of its public self-checks (the Classroom step);
                            # default test_<name in snake_case>; "" for a GPU part


@dataclasses.dataclass(frozen=True)
class BuildsOn:
    assignment: str         # the earlier assignment's name
    provide: str            # "student": the student's own earlier module is importable by its
                            # name in the worker; "given": the earlier solution is, as given code


@dataclasses.dataclass(frozen=True)
class Assignment:
    name: str
    title: str              # in English: the msgid its folder's catalogs (locale/) translate
    module: str             # the module's name: students hand in <module>.py or <module>.ipynb
    solution: str           # absolute path of the instructor's solution
    student_folder: str     # absolute path of the folder students get
    api: tuple              # what students write, in the skeleton's order
    given: tuple            # what the kit provides whole (kept in the skeleton, public)
    total_points: float
    parts: tuple            # of Part, in the order the gradebook shows them
    calls: dict             # target -> tuple of what it calls in the solution
    weights: dict           # module -> where it stores its attention weights ("a.b")
    heatmaps: tuple         # targets whose weights the report draws
    builds_on: tuple        # of BuildsOn
    folder: str             # absolute path of tests_hidden/<name>/
    kit_root: str = ""      # absolute path of its kit: where builds_on's names are looked up
    default: bool = False   # its declaration says `default = true` (see default_name)

    def is_default(self):
        """Whether --assignment means this one when none is named (default_name)."""
        return self.name == default_name(self.kit_root or None)

    # -- files ---------------------------------------------------------------------------
    @property
    def module_file(self):
        return f"{self.module}.py"

    @property
    def notebook_file(self):
        return f"{self.module}.ipynb"

    @property
    def skeleton(self):
        return os.path.join(self.student_folder, self.module_file)

    @property
    def public_tests(self):
        return os.path.join(self.student_folder, f"test_{self.module}.py")

    @property
    def hidden_tests(self):
        return self.folder

    @property
    def alternatives(self):
        return os.path.join(self.folder, "alternatives")

    # -- parts ---------------------------------------------------------------------------
    @property
    def part_names(self):
        return tuple(part.name for part in self.parts)

    def part(self, name):
        for part in self.parts:
            if part.name == name:
                return part
        raise KeyError(name)

    def part_of(self, target):
        """The CPU part that grades `target` (a part may grade several targets)."""
        for part in self.parts:
            if not part.gpu and target in part.targets:
                return part.name
        raise KeyError(target)

    @property
    def gpu_parts(self):
        return tuple(part.name for part in self.parts if part.gpu)

    def earlier(self):
        """((BuildsOn, Assignment), ...): each assignment this one builds on, loaded from
        its kit (AssignmentError if one is not declared there)."""
        return tuple((dep, load(dep.assignment, self.kit_root or None))
                     for dep in self.builds_on)

    def provided_by_student(self):
        """{earlier assignment's name: its module} for each assignment this one builds on
        whose module the student hands in (`builds_on` with provide = "student")."""
        return {earlier.name: earlier.module for dep, earlier in self.earlier()
                if dep.provide == "student"}

    def callers(self, target):
        """The targets whose solution calls `target`, directly or not."""
        return tuple(name for name, callees in self.calls.items() if target in callees)

    @property
    def catalog_file(self):
        """Where its catalog of mistakes lives, as a path an instructor reads
        (`tests_hidden/<name>/mistakes.py`, relative to the kit)."""
        path = os.path.join(self.folder, "mistakes.py")
        return os.path.relpath(path, self.kit_root) if self.kit_root else path

    @property
    def mistakes_docs(self):
        """Where its catalog is written up (`grader validate --docs`): docs/mistakes.md for
        the default assignment, docs/mistakes-<name>.md for any other."""
        return "docs/mistakes.md" if self.is_default() else f"docs/mistakes-{self.name}.md"

    # -- tables --------------------------------------------------------------------------
    def cases(self):
        """The hidden suite's case table (tests_hidden/<name>/cases.py)."""
        return _import(os.path.join(self.folder, "cases.py"), f"attnkit_cases_{self.name}")

    def catalog(self):
        """The catalog of mistakes (tests_hidden/<name>/mistakes.py); an assignment without
        that file has an empty one (nothing is diagnosed, every grade stands)."""
        path = os.path.join(self.folder, "mistakes.py")
        if not os.path.isfile(path):
            return _NO_CATALOG
        return _import(path, f"attnkit_mistakes_{self.name}")


_NO_CATALOG = type("NoCatalog", (), {"MISTAKES": (), "EXPERIMENTS": {}, "DOCS": {}})()


@functools.lru_cache(maxsize=None)
def _import(path, name):
    """The module at `path`, imported once per process under `name` plus a digest of its
    real path (a copied suite of the same name is its own module, never the first one's)."""
    real = os.path.realpath(path)
    name = f"{name}_{hashlib.sha256(real.encode('utf-8', 'surrogatepass')).hexdigest()[:12]}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, real)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]  # a table that does not import is not kept half-made
        raise
    return module


def names(kit_root=None):
    """The assignments a kit declares: the folders of tests_hidden/ holding assignment.toml."""
    root = os.path.join(kit_root or paths.KIT_ROOT, "tests_hidden")
    try:
        entries = sorted(os.listdir(root))
    except OSError:
        return []
    return [n for n in entries if os.path.isfile(os.path.join(root, n, DECLARATION))]


def resolve(name=None, kit_root=None):
    """The name --assignment means: `name`, else the kit's default (default_name)."""
    return name or default_name(kit_root)


def default_name(kit_root=None):
    """The assignment a command grades when none is named: the kit's only one, else the one
    whose declaration says `default = true`. AssignmentError, naming the files, when the kit
    declares none, or several and not exactly one of them is the default."""
    kit_root = os.path.abspath(kit_root or paths.KIT_ROOT)
    declared = names(kit_root)
    files = {n: os.path.join(kit_root, "tests_hidden", n, DECLARATION) for n in declared}
    if not declared:
        raise AssignmentError(f"the kit declares no assignment: no "
                              f"{os.path.join(kit_root, 'tests_hidden', '<name>', DECLARATION)}")
    claims = [n for n in declared if _claims_default(files[n])]
    if len(declared) == 1:
        return declared[0]
    if len(claims) == 1:
        return claims[0]
    if claims:
        raise AssignmentError("more than one assignment says `default = true`: "
                              f"{', '.join(files[n] for n in claims)}; keep it in one of them")
    raise AssignmentError(f"the kit declares {len(declared)} assignments and none says "
                          f"`default = true`: add it to one of {', '.join(files.values())} "
                          "(or name one with --assignment)")


def _claims_default(path):
    """Whether the declaration at `path` says `default = true` (a declaration that does not
    read is refused with its file's name)."""
    try:
        with open(path, "rb") as handle:
            value = tomllib.load(handle).get("default", False)
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise AssignmentError(f"{path}: {error}") from None
    if not isinstance(value, bool):
        raise AssignmentError(f"{path}: 'default' must be true or false, got {value!r}")
    return value


@functools.lru_cache(maxsize=None)
def load(name=None, kit_root=None):
    """The declared assignment `name` (see resolve), checked; AssignmentError if it is wrong."""
    kit_root = os.path.abspath(kit_root or paths.KIT_ROOT)
    name = resolve(name, kit_root)
    folder = os.path.join(kit_root, "tests_hidden", name)
    path = os.path.join(folder, DECLARATION)
    if not os.path.isfile(path):
        known = ", ".join(names(kit_root)) or "none"
        raise AssignmentError(f"no assignment {name!r}: {path} does not exist "
                              f"(the kit declares: {known})")
    return load_folder(folder, kit_root, named=name)


@functools.lru_cache(maxsize=None)
def load_folder(folder, kit_root=None, named=None):
    """The assignment declared in `folder` (a hidden suite's own folder, or a copy of one:
    then its name need not be the folder's)."""
    folder = os.path.abspath(folder)
    kit_root = os.path.abspath(kit_root or paths.KIT_ROOT)
    path = os.path.join(folder, DECLARATION)
    try:
        with open(path, "rb") as handle:
            data = tomllib.load(handle)
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise AssignmentError(f"{path}: {error}") from None
    return parse(data, folder, kit_root, where=path, named=named)


_TOP = {"name": str, "title": str, "default": bool, "module": str, "solution": str,
        "student_folder": str, "api": list, "given": list, "total_points": (int, float),
        "parts": list, "calls": dict, "weights": dict, "heatmaps": list, "builds_on": list}
_OPTIONAL = {"default": False, "given": [], "weights": {}, "heatmaps": [], "builds_on": []}
_PART = {"name": str, "points": (int, float), "targets": list, "short": str, "gpu": bool,
         "selfcheck": str}
_PART_OPTIONAL = {"gpu": False, "selfcheck": None}
_BUILDS_ON = {"assignment": str, "provide": str}


def _fields(table, schema, optional, where):
    if not isinstance(table, dict):
        raise AssignmentError(f"{where}: expected a table, got {type(table).__name__}")
    unknown = sorted(set(table) - set(schema))
    if unknown:
        raise AssignmentError(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(schema)})")
    out = {}
    for key, kind in schema.items():
        if key not in table:
            if key in optional:
                out[key] = optional[key]
                continue
            raise AssignmentError(f"{where}: missing key {key!r}")
        value = table[key]
        if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
            raise AssignmentError(f"{where}: {key!r} must be {_kind(kind)}, got {value!r}")
        out[key] = value
    return out


def _kind(kind):
    kinds = kind if isinstance(kind, tuple) else (kind,)
    words = {"str": "a string", "list": "a list", "dict": "a table", "int": "a number",
             "float": "a number", "bool": "true or false"}
    return " or ".join(dict.fromkeys(words[k.__name__] for k in kinds))  # a number, said once


def _names(values, where, key):
    for value in values:
        if not isinstance(value, str) or not value.isidentifier() or keyword.iskeyword(value):
            raise AssignmentError(f"{where}: {key} holds {value!r}, not a Python name")
    if len(set(values)) != len(values):
        raise AssignmentError(f"{where}: {key} names something twice")
    return tuple(values)


def parse(data, folder, kit_root, where="assignment.toml", named=None):
    """An Assignment from the declaration's parsed TOML `data`, checked; `named`: the name
    it was looked up by (tests_hidden/<named>/), which its own name must be."""
    top = _fields(data, _TOP, _OPTIONAL, where)
    name = top["name"]
    if named is not None and name != named:
        raise AssignmentError(f"{where}: name {name!r} must be its folder's name {named!r}")
    module = top["module"]
    if not module.isidentifier() or keyword.iskeyword(module) or module.startswith("test"):
        raise AssignmentError(f"{where}: module {module!r} must be a Python module name "
                              "(not test...: pytest would collect it)")
    api, given = _api_and_given(top, where)
    known = set(api) | set(given)
    parts = _parts(top, api, where)
    calls = _calls(top["calls"], api, known, where)
    weights = _weights(top["weights"], known, where)
    heatmaps = _names(top["heatmaps"], where, "heatmaps")
    if any(h not in known for h in heatmaps):
        raise AssignmentError(f"{where}: heatmaps names something api and given do not")
    builds_on = _builds_on(top["builds_on"], name, where)
    solution, student_folder = _inside_the_kit(top, kit_root, where)
    return Assignment(name=name, title=top["title"], default=top["default"], module=module,
                      solution=solution, student_folder=student_folder, api=api, given=given,
                      total_points=top["total_points"], parts=parts, calls=calls,
                      weights=weights, heatmaps=heatmaps, builds_on=builds_on,
                      folder=folder, kit_root=kit_root)


def _api_and_given(top, where):
    """(api, given) of the declaration's fields `top`, checked: api not empty, no name in
    both."""
    api = _names(top["api"], where, "api")
    given = _names(top["given"], where, "given")
    if not api:
        raise AssignmentError(f"{where}: api is empty: students must write something")
    if set(api) & set(given):
        raise AssignmentError(f"{where}: {sorted(set(api) & set(given))[0]!r} is both in api "
                              "and given")
    return api, given


def _parts(top, api, where):
    """The declaration's parts (a tuple of Part), checked: at least one, names unique,
    points adding up to total_points, every api name graded by a part that needs no GPU."""
    parts = [_part(index, table, api, where) for index, table in enumerate(top["parts"])]
    if not parts:
        raise AssignmentError(f"{where}: no parts")
    if len({p.name for p in parts}) != len(parts):
        raise AssignmentError(f"{where}: two parts share a name")
    total = sum(p.points for p in parts)
    if total != top["total_points"]:
        raise AssignmentError(f"{where}: the parts' points add up to {total:g}, not "
                              f"total_points {top['total_points']:g}")
    graded = {t for p in parts if not p.gpu for t in p.targets}
    missing = [t for t in api if t not in graded]
    if missing:
        raise AssignmentError(f"{where}: {missing[0]!r} is in api but no part grades it")
    return tuple(parts)


def _part(index, table, api, where):
    """The Part of parts[index], the TOML `table`, checked: it targets names of `api`, its
    short name fits a console column, its selfcheck (default: test_<its name in snake case>;
    none for a GPU part) names public tests."""
    fields = _fields(table, _PART, _PART_OPTIONAL, f"{where}: parts[{index}]")
    targets = _names(fields["targets"], f"{where}: part {fields['name']!r}", "targets")
    strangers = [t for t in targets if t not in api]
    if strangers or not targets:
        raise AssignmentError(f"{where}: part {fields['name']!r} targets "
                              f"{strangers[0] if strangers else 'nothing'}, which api does "
                              "not name")
    if not 0 < len(fields["short"]) <= 9:
        raise AssignmentError(f"{where}: part {fields['name']!r}: short must be 1 to 9 "
                              "characters (a console column)")
    selfcheck = fields["selfcheck"]
    if selfcheck is None:
        selfcheck = "" if fields["gpu"] else "test_" + re.sub(
            r"(?<=[a-z0-9])(?=[A-Z])", "_", fields["name"]).lower()
    if selfcheck and not (selfcheck.startswith("test_") and selfcheck.isidentifier()):
        raise AssignmentError(f"{where}: part {fields['name']!r}: selfcheck must be the name "
                              "(or start of the names) of its public tests, test_...")
    return Part(fields["name"], fields["points"], targets, fields["short"], fields["gpu"],
                selfcheck)


def _calls(declared, api, known, where):
    """{target: (callees)} from the declaration's `calls` table, checked (each name `known`,
    none calling itself); an api name it leaves out calls nothing."""
    calls = {}
    for target, callees in declared.items():
        if target not in known:
            raise AssignmentError(f"{where}: calls names {target!r}, which api and given do "
                                  "not name")
        if not isinstance(callees, list):
            raise AssignmentError(f"{where}: calls.{target} must be a list")
        callees = _names(callees, where, f"calls.{target}")
        stranger = [c for c in callees if c not in known or c == target]
        if stranger:
            raise AssignmentError(f"{where}: calls.{target} names {stranger[0]!r}, which is "
                                  "itself or not in api or given")
        calls[target] = callees
    for target in api:
        calls.setdefault(target, ())
    return calls


def _weights(declared, known, where):
    """{target: attribute path} from the declaration's `weights` table, checked."""
    weights = {}
    for target, attribute in declared.items():
        if target not in known or not isinstance(attribute, str) or not all(
                piece.isidentifier() for piece in attribute.split(".")):
            raise AssignmentError(f"{where}: weights.{target} must name a module of api and an "
                                  "attribute path such as attention.attention_weights")
        weights[target] = attribute
    return weights


def _builds_on(tables, name, where):
    """A tuple of BuildsOn from the declaration's `builds_on` tables, checked (a known way
    to provide, never the assignment `name` itself)."""
    builds_on = []
    for index, table in enumerate(tables):
        fields = _fields(table, _BUILDS_ON, {}, f"{where}: builds_on[{index}]")
        if fields["provide"] not in PROVIDE:
            raise AssignmentError(f"{where}: builds_on[{index}].provide must be one of "
                                  f"{', '.join(PROVIDE)}")
        if fields["assignment"] == name:
            raise AssignmentError(f"{where}: an assignment cannot build on itself")
        builds_on.append(BuildsOn(fields["assignment"], fields["provide"]))
    return tuple(builds_on)


def _inside_the_kit(top, kit_root, where):
    """(solution, student_folder): the declaration's paths joined to `kit_root`, checked to
    lie inside the kit, the solution to exist."""
    solution = os.path.join(kit_root, top["solution"])
    student_folder = os.path.join(kit_root, top["student_folder"])
    for label, path in (("solution", solution), ("student_folder", student_folder)):
        inside = os.path.commonpath([os.path.realpath(path), os.path.realpath(kit_root)])
        if inside != os.path.realpath(kit_root):
            raise AssignmentError(f"{where}: {label} {top[label]!r} is outside the kit")
    if not os.path.isfile(solution):
        raise AssignmentError(f"{where}: solution {top['solution']!r} does not exist")
    return solution, student_folder
