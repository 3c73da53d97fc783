"""The hostile zoo: submissions written by people who want points they did not earn, and
submissions broken in every way a class manages. Each entry says what it tries and which
defence must hold; tests/test_hostile.py grades them all in one `grader grade` call.

An entry's submission is built at test time from the zero stub (for attacks that must gain
nothing: any point they score came from the attack) or from the solution (for failures
that must cost only the part they hit), plus the attack itself, so each one is readable here.
"""
import dataclasses
import json
import os
import textwrap
import zipfile

from conftest import SOLUTION, SUBMISSIONS

NAMESPACES = frozenset({"bwrap", "unshare"})
EVERYWHERE = NAMESPACES | {"none", "none-uid"}
WITH_UID = NAMESPACES | {"none-uid"}
ALL_PARTS = ("sequence_mask", "masked_softmax", "AdditiveAttention", "DotProductAttention",
             "transpose", "MultiHeadAttention", "GPU")


@dataclasses.dataclass
class Hostile:
    name: str
    attack: str
    defence: str
    build: object                   # (folder, context) -> path of the submission
    expect: str = "nothing"         # nothing | full | parts | rejected | zero
    full_parts: tuple = ()          # expect == "parts": these parts keep full marks ...
    lost_parts: tuple = ()          # ... and these lose points
    reason: str = None              # text the student's feedback must contain
    levels: frozenset = EVERYWHERE  # isolation levels at which the defence holds
    # also graded at the weaker levels. False only where the attack uses nothing but what its
    # own process says (its replies: their values, types, sizes and strings) or what intake
    # reads, and the defence is the trusted side's reading of it: the same code at every level
    level_sensitive: bool = True
    endless: bool = False           # runs until a time limit stops it: graded in a batch of
                                    # its own, under short time limits (test_hostile TIGHT)


def _read(path):
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def zero_stub(prelude="", replace=(), postlude=""):
    source = _read(os.path.join(SUBMISSIONS, "zero_stub.py"))
    return _compose(source, prelude, replace, postlude)


def solution(prelude="", replace=(), postlude=""):
    return _compose(_read(SOLUTION), prelude, replace, postlude)


def _compose(source, prelude, replace, postlude=""):
    """The source with `prelude` right after the imports, textual replacements, and
    `postlude` at the end (where it can override the definitions above it)."""
    for old, new in replace:
        assert source.count(old) == 1, old
        source = source.replace(old, new)
    marker = "from torch import nn\n"
    source = source.replace(marker, marker + "\n" + textwrap.dedent(prelude) + "\n", 1)
    return source + "\n" + textwrap.dedent(postlude)


def file(name, text, encoding="utf-8", newline="\n"):
    def build(folder, context):
        path = os.path.join(folder, name)
        body = text(context) if callable(text) else text
        with open(path, "wb") as handle:
            handle.write(body.replace("\n", newline).encode(encoding))
        return path
    return build


def files(folder_name, contents):
    """A folder submission: {relative path: text}."""
    def build(folder, context):
        root = os.path.join(folder, folder_name)
        for rel, text in contents.items():
            path = os.path.join(root, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(text(context) if callable(text) else text)
        return root
    return build


def archive(name, entries):
    """A zip: {entry name: bytes or text}."""
    def build(folder, context):
        path = os.path.join(folder, name)
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
            for entry, data in entries(context).items():
                z.writestr(entry, data)
        return path
    return build


def notebook(name, cells):
    def build(folder, context):
        nb = {"cells": cells, "metadata": {"kernelspec": {"name": "python3", "language": "python",
                                                          "display_name": "Python 3"}},
              "nbformat": 4, "nbformat_minor": 5}
        path = os.path.join(folder, name)
        with open(path, "w", encoding="utf-8") as handle:
            json.dump(nb, handle, ensure_ascii=False)
        return path
    return build


def odd_files(folder_name, contents, odd):
    """A submission holding links and pipes (issue 6, classes 2 and 3): `contents` are
    {relative path: text}, `odd` are {relative path: ("link", target) | ("fifo",)}. With
    `folder_name` None the one odd entry itself is the submission (a command-line link)."""
    def build(folder, context):
        root = os.path.join(folder, folder_name) if folder_name else folder
        os.makedirs(root, exist_ok=True)
        for rel, text in contents.items():
            with open(os.path.join(root, rel), "w", encoding="utf-8") as handle:
                handle.write(text(context) if callable(text) else text)
        for rel, (kind, *target) in odd.items():
            path = os.path.join(root, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            if kind == "link":
                os.symlink(target[0], path)
            else:
                os.mkfifo(path)
        return root if folder_name else os.path.join(root, next(iter(odd)))
    return build


def _code(source):
    return {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
            "source": source.splitlines(True)}


def _markdown(source):
    return {"cell_type": "markdown", "metadata": {}, "source": source}


def _solution_cells():
    body = _read(SOLUTION).split("from torch import nn\n", 1)[1]
    chunks = [c for c in body.split("\n\n\n") if c.strip()]
    return ([_markdown("# 注意力机制作业\n掩蔽softmax、加性注意力、多头注意力"),
             _code("%matplotlib inline\n!pip install d2l\nimport math\nimport torch\nfrom torch import nn")]
            + [_code(c) for c in chunks]
            + [_markdown("## 测试"), _code("%%time\nprint(sequence_mask(torch.ones(2, 3), torch.tensor([1, 2])))")])


# -- attacks inside the student's own process -----------------------------------------
PATCH_COMPARISONS = """
import torch as _t
import torch.testing as _tt
_t.allclose = lambda *a, **k: True
_t.equal = lambda *a, **k: True
_t.isclose = lambda a, b, *x, **k: _t.ones_like(a, dtype=_t.bool)
_tt.assert_close = lambda *a, **k: None
_t.Tensor.__eq__ = lambda self, other: _t.ones_like(self, dtype=_t.bool)
try:
    import numpy as _np
    _np.allclose = lambda *a, **k: True
    _np.testing.assert_allclose = lambda *a, **k: None
except ImportError:
    pass
"""

SUBCLASS = """
class AlwaysEqual(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", "")
        if name in ("allclose", "equal", "__eq__", "eq", "isclose", "assert_close"):
            return True
        return super().__torch_function__(func, types, args, kwargs or {})

    def __eq__(self, other):
        return True

_plain_zeros = _zeros
def _zeros(*shape, like):
    return _plain_zeros(*shape, like=like).as_subclass(AlwaysEqual)
"""

# The worker's own modules leave sys.modules before the submission is imported; an attack
# that patches them finds them through the garbage collector instead.
FIND_RUNTIME = """
import gc as _gc, sys as _sys, types as _types
def _runtime(name):
    found = _sys.modules.get(name)
    for obj in _gc.get_objects() if found is None else ():
        if isinstance(obj, _types.ModuleType) and obj.__name__ == name:
            return obj
    return found
"""

# every function and forward raises, so every call's reply carries an exception
RAISE_EVERYWHERE = """
def _boom(*args, **kwargs):
    raise ValueError("boom")
sequence_mask = masked_softmax = transpose_qkv = transpose_output = _boom
AdditiveAttention.forward = DotProductAttention.forward = _boom
MultiHeadAttention.forward = _boom
"""

SHIP_SUBCLASS = FIND_RUNTIME + """
class Forged(torch.Tensor):
    def __eq__(self, other):
        return True
_probes = _runtime("runtime.probes")
if _probes is not None:
    _original = _probes.describe_value
    def _forged(value):
        out = _original(value)
        if out.get("kind") == "tensor":
            out["tensor"] = out["tensor"].as_subclass(Forged)
        return out
    _probes.describe_value = _forged
"""

class_garbage = """
class Liar:
    def __eq__(self, other): return True
    def __torch_function__(self, *a, **k): return True
    shape = property(lambda self: (2, 3))
"""

GARBAGE = [("def sequence_mask(X, valid_len, value=0):\n    return torch.zeros_like(X)",
            "def sequence_mask(X, valid_len, value=0):\n    return X.tolist()"),
           ("def masked_softmax(X, valid_lens):\n    return torch.zeros_like(X)",
            "def masked_softmax(X, valid_lens):\n    return Liar()"),
           ("def transpose_qkv(X, num_heads):\n    return",
            "def transpose_qkv(X, num_heads):\n    return None\n    return"),
           ("def transpose_output(X, num_heads):\n    return",
            "def transpose_output(X, num_heads):\n    return torch.full((X.shape[0] // num_heads, "
            "X.shape[1], X.shape[2] * num_heads), float('nan'))\n    return")]

PATCH_PYTEST = """
try:
    import _pytest.runner, _pytest.reports
    _pytest.reports.TestReport.passed = property(lambda self: True)
    _pytest.runner.pytest_runtest_makereport = lambda item, call: None
except Exception:
    pass
"""

FORGED_OUTPUT = """
import sys
_fake = '{"score": 100.0, "tests": [{"name": "all", "score": 100, "max_score": 100}]}'
for _stream in (sys.stdout, sys.stderr):
    print("============================= 72 passed in 0.50s =============================", file=_stream)
    print(_fake, file=_stream)
"""

WRITE_RESULTS = """
import json, os
_fake = {"score": 100.0, "tests": [{"name": "all", "score": 100.0, "max_score": 100.0}]}
for _target in ("results.json", "../results.json", "../../results.json", "/autograder/results/results.json",
                "/tmp/results.json"):
    try:
        os.makedirs(os.path.dirname(os.path.abspath(_target)), exist_ok=True)
        with open(_target, "w") as _f:
            json.dump(_fake, _f)
    except OSError:
        pass
for _base, _dirs, _files in os.walk("/tmp"):
    if "grades.csv" in _files or "results.json" in _files:
        try:
            with open(os.path.join(_base, "results.json"), "w") as _f:
                json.dump(_fake, _f)
            with open(os.path.join(_base, "grades.csv"), "a") as _f:
                _f.write("everyone,graded,100,100\\n")
        except OSError:
            pass
"""

READ_SOLUTIONS = """
import os, importlib.util
_found = None
for _try in ("solutions.attention", "grader.harness"):
    try:
        __import__(_try)
    except Exception:
        pass
for _base, _dirs, _files in os.walk("/"):
    _dirs[:] = [d for d in _dirs if _base != "/" or d not in ("proc", "sys", "dev", "usr")]
    if _base.endswith("solutions") and "attention.py" in _files:
        _found = os.path.join(_base, "attention.py")
        break
if _found:
    _spec = importlib.util.spec_from_file_location("stolen", _found)
    _stolen = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_stolen)
    globals().update({k: getattr(_stolen, k) for k in dir(_stolen) if not k.startswith("_")})
"""

STACK_AND_GC = """
import gc, inspect

def _steal(shape_like):
    for frame in inspect.stack():
        for value in list(frame.frame.f_locals.values()):
            if isinstance(value, dict) and "expected" in value:
                return value["expected"]
    for obj in gc.get_objects():
        if isinstance(obj, dict) and "expected" in obj and isinstance(obj["expected"], torch.Tensor):
            return obj["expected"]
    return None
"""

WRITE_KIT = """
import os
_evil = "\\nraise SystemExit('kit sabotaged by a submission')\\n"
for _base, _dirs, _files in os.walk("/"):
    _dirs[:] = [d for d in _dirs if _base != "/" or d not in ("proc", "sys", "dev", "usr")]
    for _name in _files:
        if _name in ("compare.py", "checks.py", "cases.py", "attention.py") or (
                _name == "__init__.py" and _base.endswith("torch")):
            try:
                with open(os.path.join(_base, _name), "a") as _f:
                    _f.write(_evil)
            except OSError:
                pass
"""

DAEMON = """
import os, subprocess
subprocess.Popen(["sleep", "1234.{token}1"], start_new_session=True)
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv("/bin/sleep", ["sleep", "1234.{token}2"])
    os._exit(0)
"""

NETWORK = """
import socket
try:
    _s = socket.create_connection(("127.0.0.1", {port}), timeout=2)
    _s.sendall(b"stolen: the hidden tests")
    _s.close()
except OSError:
    pass
"""

FILL_DISK = """
import os
_chunk = b"x" * (1 << 20)
for _target in ("big.bin", "/tmp/big.bin", os.path.expanduser("~/big2.bin")):
    try:
        with open(_target, "wb") as _f:
            for _ in range(1024):
                _f.write(_chunk)
    except (OSError, MemoryError):
        pass
"""

READ_ENVIRONMENT = """
import os, sys
print(dict(os.environ), "isolated:", bool(sys.flags.isolated), sys.path)
"""

KILL_GRADER = """
import os, signal
for _pid in (os.getppid(), 1):
    try:
        os.kill(_pid, signal.SIGKILL)
    except OSError:
        pass
"""

# the sandbox's placeholder (grader/sandbox/template.py) and any other process in sight:
# junk into every pipe they hold, then SIGKILL; the submission can only cost itself
ATTACK_NEIGHBOURS = """
import os, signal
for _pid in [p for p in os.listdir("/proc") if p.isdigit() and int(p) != os.getpid()]:
    for _fd in ("0", "1", "2", "3"):
        try:
            _f = os.open(f"/proc/{_pid}/fd/{_fd}", os.O_WRONLY | os.O_NONBLOCK)
            os.write(_f, b"4242\\n" * 1000)
            os.close(_f)
        except OSError:
            pass
    try:
        os.kill(int(_pid), signal.SIGKILL)
    except OSError:
        pass
"""

FORK_BOMB = ("        queries, keys = self.W_q(queries), self.W_k(keys)  # (B, Q, hidden), (B, K, hidden)",
             "        import os\n        while True:\n            os.fork()\n"
             "        queries, keys = self.W_q(queries), self.W_k(keys)")

# right on the CPU, wrong on a GPU: the positions are made on the default device
ON_THE_CPU = ("torch.arange(maxlen, dtype=torch.float32, device=X.device)",
              "torch.arange(maxlen, dtype=torch.float32)")

GUARD_OFF = """
_sequence_mask = sequence_mask
def sequence_mask(X, valid_len, value=0):
    with torch._C.DisableTorchFunction():
        return _sequence_mask(X, valid_len, value)
"""

GUARD_POPPED = """
_sequence_mask = sequence_mask
def sequence_mask(X, valid_len, value=0):
    if torch._C._len_torch_function_stack():
        torch._C._pop_torch_function_stack()
    return _sequence_mask(X, valid_len, value)
"""

GUARD_CLEARED = """
import torch.overrides as _overrides
_sequence_mask = sequence_mask
def sequence_mask(X, valid_len, value=0):
    mode = _overrides._get_current_function_mode()
    out = _sequence_mask(X, valid_len, value)
    for name in ("violations", "_watch"):
        found = getattr(mode, name, None)
        if isinstance(found, list):
            found.clear()
        elif found is not None and isinstance(getattr(found, "violations", None), list):
            found.violations.clear()
    out.__dict__.clear()
    return out
"""

GUARD_REPLACED = FIND_RUNTIME + """
import contextlib
_guards = _runtime("runtime.guards")
if _guards is not None:
    @contextlib.contextmanager
    def _nothing_seen(enabled=True, _watch=getattr(_guards, "Watch", None)):
        yield _watch() if _watch is not None else []
    _guards.device_guard = _nothing_seen
"""

KEEP_AN_ANSWER_PRELUDE = """
_KEPT = []


def _keep(value):
    if getattr(value, "_attnkit_answered", None) and not _KEPT:
        _KEPT.append(value)


def _ask_kept(*args):
    kept = _KEPT[0]
    for cell in kept.__closure__ or ():
        if hasattr(cell.cell_contents, "live"):
            cell.cell_contents.live = True
    return kept(*args)
"""
KEEP_AN_ANSWER = [
    ("    if valid_lens is None:\n        return nn.functional.softmax(X, dim=-1)\n",
     "    if _KEPT:\n        return _ask_kept(X, valid_lens)\n"
     "    raise NotImplementedError\n"
     "    if valid_lens is None:\n        return nn.functional.softmax(X, dim=-1)\n"),
    ("        d = queries.shape[-1]\n",
     "        _keep(masked_softmax)\n        d = queries.shape[-1]\n"),
]

ZOO = [
    Hostile("patch-comparisons", "monkeypatches torch.allclose, torch.testing.assert_close, "
            "Tensor.__eq__ and numpy in its own process", "the comparison runs in the trusted process",
            file("patch_comparisons.py", zero_stub(PATCH_COMPARISONS))),
    Hostile("tensor-subclass", "returns a tensor subclass whose __eq__ and __torch_function__ "
            "say everything is equal", "results are stripped to plain tensors and read back with "
            "weights_only", file("tensor_subclass.py", zero_stub(postlude=SUBCLASS)),
            level_sensitive=False),
    Hostile("ship-subclass", "patches the worker's serializer to send a tensor subclass",
            "torch.load(weights_only=True) refuses custom classes",
            file("ship_subclass.py", zero_stub(SHIP_SUBCLASS)), level_sensitive=False),
    Hostile("garbage-returns", "returns a list, None, NaN and an object that equals everything",
            "each reply is type-checked; non-tensors fail with what came back",
            file("garbage.py", zero_stub(class_garbage, GARBAGE)), reason="is a list, not a torch.Tensor",
            level_sensitive=False),
    Hostile("runner-files", "ships conftest.py, pytest.ini, sitecustomize.py, usercustomize.py and "
            "packages named grader/ and torch/", "none of the submission's files but attention.py "
            "is ever imported (python -I, submission folder last on sys.path)",
            files("runner_files", {
                "attention.py": zero_stub(),
                "conftest.py": "import pytest\n@pytest.hookimpl(hookwrapper=True)\n"
                               "def pytest_runtest_makereport(item, call):\n    out = yield\n"
                               "    out.get_result().outcome = 'passed'\n",
                "pytest.ini": "[pytest]\naddopts = -p no:terminal\n",
                "sitecustomize.py": "import torch\ntorch.allclose = lambda *a, **k: True\n",
                "usercustomize.py": "import torch\ntorch.allclose = lambda *a, **k: True\n",
                "grader/__init__.py": "print('score 100')\n",
                "torch/__init__.py": "raise SystemExit('fake torch')\n"})),
    Hostile("patch-pytest", "patches pytest's report classes from the student module",
            "pytest runs only in the trusted process", file("patch_pytest.py", zero_stub(PATCH_PYTEST))),
    Hostile("forged-output", "prints a pytest summary and a Gradescope results file",
            "the report travels over a private pipe; printed text is captured and capped",
            file("forged_output.py", zero_stub(FORGED_OUTPUT))),
    Hostile("write-results", "writes results.json and grades.csv in its folder, its parents, "
            "/autograder/results and every grade folder it finds under /tmp",
            "a private root (namespaces) or a throwaway uid that cannot write there",
            file("write_results.py", zero_stub(WRITE_RESULTS)), levels=WITH_UID),
    Hostile("read-solutions", "imports solutions/ and grader/, and searches the disk for "
            "solutions/attention.py to run it", "the kit is not in the worker's root",
            file("read_solutions.py", zero_stub(postlude=READ_SOLUTIONS)), levels=NAMESPACES),
    Hostile("stack-and-gc", "walks the call stack and gc for the expected tensors",
            "the worker holds no expected values: the reference runs in another process",
            file("stack_gc.py", zero_stub(STACK_AND_GC, [(
                "def masked_softmax(X, valid_lens):\n    return torch.zeros_like(X)",
                "def masked_softmax(X, valid_lens):\n    found = _steal(X)\n"
                "    return found if found is not None else torch.zeros_like(X)")]))),
    Hostile("write-kit", "appends code to every compare.py, checks.py, cases.py, attention.py "
            "and torch/__init__.py it can reach", "read-only mounts and a throwaway uid",
            file("write_kit.py", zero_stub(WRITE_KIT)), levels=WITH_UID),
    Hostile("daemon", "leaves a detached background process running (setsid, double fork)",
            "PID namespace, kill by uid, and the grader as a child subreaper",
            file("daemon.py", lambda c: zero_stub(DAEMON.format(token=c["token"])))),
    Hostile("network", "connects to a port on the grading machine and sends data",
            "no network namespace access", file("network.py", lambda c: zero_stub(NETWORK.format(port=c["port"]))),
            levels=NAMESPACES),
    Hostile("fill-disk", "writes 1 GB files in its folder, /tmp and its home",
            "RLIMIT_FSIZE and size-limited tmpfs folders", file("fill_disk.py", zero_stub(FILL_DISK)),
            levels=NAMESPACES),
    Hostile("read-environment", "prints the environment, hoping for the grader's secrets",
            "the worker starts with a clean environment (python -I, env cleared)",
            file("read_environment.py", zero_stub(READ_ENVIRONMENT))),
    Hostile("kill-grader", "sends SIGKILL to its parent and to pid 1",
            "PID namespace / throwaway uid: no grader process can be signalled",
            file("kill_grader.py", zero_stub(KILL_GRADER)), levels=WITH_UID),
    # -- exhausting resources: the other parts must still be graded -------------------------
    Hostile("attack-neighbours", "writes junk into the pipes of every process it can see (the "
            "sandbox's placeholder among them) and kills them",
            "a throwaway uid and PID namespace: only processes of its own sandbox are in reach, "
            "and the grader reads nothing of theirs once the worker runs",
            file("attack_neighbours.py", zero_stub(ATTACK_NEIGHBOURS)), levels=WITH_UID),
    Hostile("loop-at-import", "loops forever at the top of the file", "the import time limit",
            file("loop_import.py", solution("while True:\n    pass\n")), expect="zero",
            reason="did not finish within", endless=True),
    Hostile("loop-in-one-function", "loops forever in MultiHeadAttention.forward only",
            "the per-call limit; the function is marked broken, the other parts are graded",
            file("loop_one.py", solution(replace=[(
                "        queries = transpose_qkv(self.W_q(queries), self.num_heads)  # (B*h, Q, hidden/h)",
                "        while True:\n            pass")])),
            expect="parts", full_parts=ALL_PARTS[:5], lost_parts=("MultiHeadAttention",),
            reason="did not finish within", endless=True),
    Hostile("exit-at-import", "calls sys.exit(0) at import", "SystemExit is caught and explained",
            file("exit_import.py", solution("import sys\nsys.exit(0)\n")), expect="zero",
            reason="sys.exit"),
    Hostile("os-exit-at-import", "calls os._exit(0) at import", "the worker's death is explained",
            file("os_exit_import.py", solution("import os\nos._exit(0)\n")), expect="zero",
            reason="exited with status 0"),
    Hostile("os-exit-mid-call", "calls os._exit(3) inside transpose_output",
            "that call fails, a fresh worker grades the rest; only transpose_output's part loses "
            "points (MultiHeadAttention is judged with it answered: error carried forward)",
            file("os_exit_call.py", solution(replace=[(
                "    X = X.reshape(-1, num_heads, X.shape[1], X.shape[2])  # (B, heads, n, hidden/heads)",
                "    import os\n    os._exit(3)")])),
            expect="parts", full_parts=ALL_PARTS[:4] + ("MultiHeadAttention",),
            lost_parts=("transpose",), reason="exited with status 3"),
    Hostile("memory-at-once", "allocates 40 GB in DotProductAttention.forward",
            "RLIMIT_AS (the allocation fails in the submission); MultiHeadAttention, judged with "
            "DotProductAttention answered (error carried forward), keeps its points",
            file("memory_once.py", solution(replace=[(
                "        d = queries.shape[-1]", "        hog = torch.ones(10 * 2**30)\n        d = queries.shape[-1]")])),
            expect="parts", full_parts=ALL_PARTS[:3] + ("transpose", "MultiHeadAttention"),
            lost_parts=("DotProductAttention",)),
    Hostile("memory-growing", "grows its memory 100 MB at a time in AdditiveAttention.forward",
            "the resident-memory watchdog kills the worker",
            file("memory_grow.py", solution(replace=[(
                "        queries, keys = self.W_q(queries), self.W_k(keys)  # (B, Q, hidden), (B, K, hidden)",
                "        hog = []\n        while True:\n            hog.append(torch.ones(25 * 2**20))\n"
                "        queries, keys = self.W_q(queries), self.W_k(keys)")])),
            expect="parts", full_parts=("sequence_mask", "masked_softmax", "DotProductAttention",
                                        "transpose", "MultiHeadAttention"),
            lost_parts=("AdditiveAttention",), reason="MB of memory"),
    Hostile("fork-bomb", "forks without end in AdditiveAttention.forward",
            "RLIMIT_NPROC under a throwaway uid; every process of that uid is killed",
            file("fork_bomb.py", solution(replace=[FORK_BOMB])),
            expect="parts", full_parts=("sequence_mask", "masked_softmax", "DotProductAttention",
                                        "transpose", "MultiHeadAttention"),
            lost_parts=("AdditiveAttention",), levels=WITH_UID),
    Hostile("print-flood", "prints 200 MB at import and more in every call",
            "output is drained and capped at 64 KB per stream",
            file("print_flood.py", solution("import sys\nfor _ in range(200):\n"
                                            "    sys.stdout.write('x' * (1 << 20))\n")), expect="full"),
    # -- broken or unusual input --------------------------------------------------------
    Hostile("syntax-error", "a syntax error on one line", "the message names the line",
            file("syntax_error.py", solution(replace=[("def transpose_qkv(X, num_heads):",
                                                       "def transpose_qkv(X, num_heads)")])),
            expect="zero", reason="line", level_sensitive=False),
    Hostile("empty-file", "an empty file", "intake says it is empty", file("empty.py", ""),
            expect="rejected", reason="empty", level_sensitive=False),
    Hostile("binary-file", "a binary file named .py", "intake says it is not text",
            lambda folder, c: _write_bytes(folder, "binary.py", b"\x7fELF\x00\x01\x02" * 100),
            expect="rejected", reason="not a text file", level_sensitive=False),
    Hostile("gbk-file", "saved as GBK by a Chinese Windows editor", "decoded as GB18030",
            file("gbk.py", solution("# 这是我的作业，注释是中文的\n"), encoding="gbk"),
            expect="full", reason="GB18030", level_sensitive=False),
    Hostile("bom-crlf", "UTF-8 with a byte-order mark and CRLF line endings", "both are normalised",
            file("bom_crlf.py", "\ufeff" + solution(), newline="\r\n"), expect="full",
            reason="CRLF", level_sensitive=False),
    Hostile("lms-name", "named `attention (1).py` by the LMS", "found and graded under that name",
            file("attention (1).py", solution()), expect="full", level_sensitive=False),
    Hostile("notebook", "a notebook with %matplotlib, !pip install, %%time and Chinese markdown",
            "magics are commented out, each cell runs on its own",
            notebook("notebook.ipynb", _solution_cells()), expect="full",
            reason="%matplotlib inline", level_sensitive=False),
    Hostile("invalid-notebook", "a notebook whose JSON is cut off", "intake names line and column",
            file("broken.ipynb", '{"cells": [{"cell_type": "code", "source": ["import torch"'),
            expect="rejected", reason="column", level_sensitive=False),
    Hostile("nested-zip", "a zip with a nested folder and __MACOSX junk", "the file is found, junk ignored",
            archive("nested.zip", lambda c: {"hw/attention/attention.py": solution(),
                                             "__MACOSX/hw/attention/._attention.py": b"\x00\x05\x16\x07",
                                             "hw/.DS_Store": b"\x00\x00"}),
            expect="full", reason="junk", level_sensitive=False),
    Hostile("zip-slip", "a zip whose entries climb out with ../ and absolute paths",
            "nothing is written outside the extraction folder",
            archive("slip.zip", lambda c: {"attention.py": solution(),
                                           "../../attnkit-escaped.py": "escaped = True\n",
                                           "/tmp/attnkit-escaped-abs.py": "escaped = True\n"}),
            expect="full", reason="refused", level_sensitive=False),
    Hostile("zip-bomb", "a zip that inflates to 200 MB of zeros", "sizes are capped before and while unpacking",
            lambda folder, c: _zip_bomb(folder), expect="rejected", reason="MB", level_sensitive=False),
    Hostile("partial", "only sequence_mask and masked_softmax are written (the rest is missing)",
            "full credit for the parts that are there",
            file("partial.py", solution().split("class AdditiveAttention")[0]),
            expect="parts", full_parts=("sequence_mask", "masked_softmax"),
            lost_parts=("AdditiveAttention", "MultiHeadAttention"), reason="attention.py defines no `AdditiveAttention`",
            level_sensitive=False),
    Hostile("imports-d2l", "imports d2l, which the grading machine lacks", "said plainly",
            file("uses_d2l.py", solution("from d2l import torch as d2l\n")), expect="zero",
            reason="`d2l`", level_sensitive=False),
    # -- issue 6, class 1: strings that cannot be written, names that collide (outputs) ----
    Hostile("output-name", "is named grades.csv.py, so that its name is the gradebook's own file name",
            "output folders are made safe and unique and never one of the grader's names "
            "(grader/report/folders.py)", file("grades.csv.py", zero_stub()), level_sensitive=False),
    Hostile("unwritable-messages", "raises, in every function, messages full of lone surrogates, "
            "NUL, terminal escapes and bidi overrides", "every string is made safe before it is "
            "written or printed; each file is written atomically and capped",
            file("unwritable_messages.py", zero_stub(postlude="""
                _BAD = "\\udcff\\ud800 \\x00 \\x1b[2J\\x1b]0;owned\\x07 \\u202e" * 200 + "\\n" * 100000
                def _boom(*args, **kwargs):
                    raise ValueError(_BAD)
                sequence_mask = masked_softmax = transpose_qkv = transpose_output = _boom
                AdditiveAttention.forward = DotProductAttention.forward = _boom
                MultiHeadAttention.forward = _boom
                """)), level_sensitive=False),
    Hostile("unwritable-prints", "prints bytes that are not UTF-8, lone surrogates and terminal "
            "escapes at import and in every call", "captured output is decoded, made safe and capped",
            file("unwritable_prints.py", zero_stub("""
                import sys
                def _dirty():
                    sys.stdout.buffer.write(b"\\xff\\xfe\\xed\\xa0\\x80 \\x00\\x1b[2J\\n" * 100)
                    sys.stdout.flush()
                    sys.stderr.buffer.write(b"\\xed\\xb3\\xbf\\x1b]0;owned\\x07\\n")
                    sys.stderr.flush()
                    try:
                        print("caf\\udce9 \\x1b[31m")
                    except UnicodeEncodeError:
                        pass
                _dirty()
                """, postlude="""
                _zero_mask = sequence_mask
                def sequence_mask(X, valid_len, value=0):
                    _dirty()
                    return _zero_mask(X, valid_len, value)
                """)), level_sensitive=False),
    # -- issue 6, class 2: links instead of files (intake) ---------------------------------
    Hostile("link-to-solution", "a folder whose attention.py is a symbolic link to the kit's "
            "solution (read by the grader's user, it would score 100)",
            "intake never follows a link: the chosen file being one is refused",
            odd_files("link_to_solution", {}, {"attention.py": ("link", SOLUTION)}),
            expect="rejected", reason="attention.py is a symbolic link", level_sensitive=False),
    Hostile("link-to-shadow", "a folder whose attention.py links to /etc/shadow, to show its "
            "first line in the feedback", "intake never follows a link",
            odd_files("link_to_shadow", {}, {"attention.py": ("link", "/etc/shadow")}),
            expect="rejected", reason="attention.py is a symbolic link", level_sensitive=False),
    Hostile("link-as-upload", "the uploaded file itself is a link to a classmate's submission",
            "the submitted path is looked at with lstat and refused when it is a link",
            odd_files(None, {}, {"classmate.py": ("link", SOLUTION)}),
            expect="rejected", reason="classmate.py is a symbolic link", level_sensitive=False),
    Hostile("linked-folder", "a folder whose only content is a link to the kit's solutions/ "
            "folder (attention.py behind it)", "the walk never enters a linked folder",
            odd_files("linked_folder", {}, {"hw": ("link", os.path.dirname(SOLUTION))}),
            expect="rejected", reason="hw (a symbolic link)", level_sensitive=False),
    # -- issue 6, class 3: files that are not regular files (intake) -----------------------
    Hostile("fifo-attention", "a folder whose attention.py is a named pipe (opening it would block "
            "the grader forever)", "intake never opens anything but a regular file",
            odd_files("fifo_attention", {}, {"attention.py": ("fifo",)}),
            expect="rejected", reason="attention.py is a named pipe", level_sensitive=False),
    Hostile("zero-upload", "the uploaded file is a link to /dev/zero (read to the end, it fills "
            "the memory)", "lstat of the submitted path; reads capped at the size limit",
            odd_files(None, {}, {"zero.py": ("link", "/dev/zero")}),
            expect="rejected", reason="zero.py is a symbolic link", level_sensitive=False),
    Hostile("odd-helpers", "a correct attention.py beside helpers that are a named pipe and links "
            "to /dev/zero and /dev/urandom", "only regular files are copied; the rest is skipped "
            "with a note", odd_files("odd_helpers", {"attention.py": solution()},
                                     {"helpers.py": ("fifo",), "zeros.py": ("link", "/dev/zero"),
                                      "noise.py": ("link", "/dev/urandom")}),
            expect="full", reason="entries that are not regular files", level_sensitive=False),
    # -- issue 6, class 4: amplification (replies and outputs) -----------------------------
    Hostile("shared-frames", "raises in every call and patches the worker's describe_exception "
            "to send one stack-frame dict referenced 200,000 times (a few hundred KB of pickle, "
            "GBs of feedback once expanded)", "the reply's pickle is bounded before torch.load, "
            "and the schema counts shared parts each time they are used (grader/sandbox/replies.py)",
            file("shared_frames.py", zero_stub(FIND_RUNTIME + textwrap.dedent("""
                _probes = _runtime("runtime.probes")
                if _probes is not None:
                    def _amplified(exc):
                        frame = {"file": "attention.py", "line": 1, "function": "forward",
                                 "code": "x = 1" + "\\n" * 2000}
                        return {"type": "ValueError", "message": "\\n" * 1000, "where": [frame] * 200000}
                    _probes.describe_exception = _amplified
                """), postlude=RAISE_EVERYWHERE)), level_sensitive=False),
    Hostile("shared-strings", "raises in every call and patches describe_exception to send one "
            "100,000-newline string as the message and as every field of 16 frames (under the "
            "pickle bound, 5 million characters expanded)", "the expanded-size budget of the "
            "reply's schema; every string is capped and made safe",
            file("shared_strings.py", zero_stub(FIND_RUNTIME + textwrap.dedent("""
                _probes = _runtime("runtime.probes")
                if _probes is not None:
                    def _amplified(exc):
                        text = "\\n" * 100000
                        frame = {"file": text, "line": 1, "function": text, "code": text}
                        return {"type": text, "message": text, "where": [frame] * 16}
                    _probes.describe_exception = _amplified
                """), postlude=RAISE_EVERYWHERE)), level_sensitive=False),
    Hostile("surrogate-message", "transpose_output raises a message of lone surrogates, terminal "
            "escapes and 20,000 newlines, passed on uncut by a patched describe_exception",
            "strings in replies are made safe (safe_text) and capped; only transpose_output's part "
            "loses points (MultiHeadAttention is judged with it answered: error carried forward)",
            file("surrogate_message.py", solution(postlude=FIND_RUNTIME + textwrap.dedent("""
                _probes = _runtime("runtime.probes")
                if _probes is not None:
                    _plain_describe = _probes.describe_exception
                    def _uncut(exc):
                        out = _plain_describe(exc)
                        out["message"] = str(exc)
                        return out
                    _probes.describe_exception = _uncut
                _BAD = "\\udcff\\ud800\\x1b[2J\\u202e" * 100 + "\\n" * 20000
                def transpose_output(X, num_heads):
                    raise ValueError(_BAD)
                """))),
            expect="parts", full_parts=ALL_PARTS[:4] + ("MultiHeadAttention",),
            lost_parts=("transpose",), reason="ValueError", level_sensitive=False),
    Hostile("oversize-message", "transpose_output raises a message of lone surrogates, terminal "
            "escapes and 200,000 newlines, passed on uncut by a patched describe_exception: a reply "
            "past the frame's bounds",
            "a frame whose structure passes 256 KB is refused unread, with its reason; only "
            "transpose_output's part loses points (MultiHeadAttention is judged with it answered: "
            "error carried forward, though its own raw run failed the worker)",
            file("oversize_message.py", solution(postlude=FIND_RUNTIME + textwrap.dedent("""
                _probes = _runtime("runtime.probes")
                if _probes is not None:
                    _plain_describe = _probes.describe_exception
                    def _uncut(exc):
                        out = _plain_describe(exc)
                        out["message"] = str(exc)
                        return out
                    _probes.describe_exception = _uncut
                _BAD = "\\udcff\\ud800\\x1b[2J\\u202e" * 100 + "\\n" * 200000
                def transpose_output(X, num_heads):
                    raise ValueError(_BAD)
                """))),
            expect="parts", full_parts=ALL_PARTS[:4] + ("MultiHeadAttention",),
            lost_parts=("transpose",), reason="refuses to read", level_sensitive=False),
    # -- issue 6, class 5: memory the watchdog cannot see (resources) ----------------------
    # No process's RSS shows these pages; the kernel's memory cgroup of the worker charges
    # them, so these entries run only where that cgroup exists.
    Hostile("sysv-shm", "creates 8 System V shared memory segments of 256 MB in "
            "DotProductAttention.forward, touches each and detaches it (held by no process)",
            "the worker's memory cgroup charges shared memory; its IPC namespace (or, at level "
            "none, the grader) removes the segments; only DotProductAttention's part loses points "
            "(MultiHeadAttention is judged with it answered: error carried forward)",
            file("sysv_shm.py", solution(replace=[(
                "        d = queries.shape[-1]",
                "        import ctypes\n        _libc = ctypes.CDLL(None, use_errno=True)\n"
                "        _libc.shmat.restype = ctypes.c_void_p\n        for _ in range(8):\n"
                "            _id = _libc.shmget(0, 256 << 20, 0o1600)\n"
                "            _at = _libc.shmat(_id, None, 0)\n"
                "            ctypes.memset(_at, 1, 256 << 20)\n"
                "            _libc.shmdt(ctypes.c_void_p(_at))\n        d = queries.shape[-1]")])),
            expect="parts", full_parts=ALL_PARTS[:3] + ("transpose", "MultiHeadAttention"),
            lost_parts=("DotProductAttention",), reason="MB of memory",
            levels=EVERYWHERE if __import__("grader.sandbox.cgroups", fromlist=["support"]).support()["memory"]
            else frozenset()),
    Hostile("memfd", "fills 160 memfds of 12 MB (each under RLIMIT_FSIZE) in AdditiveAttention.forward",
            "the worker's memory cgroup charges memfd pages",
            file("memfd.py", solution(replace=[(
                "        queries, keys = self.W_q(queries), self.W_k(keys)  # (B, Q, hidden), (B, K, hidden)",
                "        import os\n        _chunk, _held = b'x' * (12 << 20), []\n        for _ in range(160):\n"
                "            _held.append(os.memfd_create('hog'))\n            os.write(_held[-1], _chunk)\n"
                "        queries, keys = self.W_q(queries), self.W_k(keys)")])),
            expect="parts", full_parts=("sequence_mask", "masked_softmax", "DotProductAttention",
                                        "transpose", "MultiHeadAttention"),
            lost_parts=("AdditiveAttention",), reason="MB of memory",
            levels=EVERYWHERE if __import__("grader.sandbox.cgroups", fromlist=["support"]).support()["memory"]
            else frozenset()),
    Hostile("fill-dev-shm", "writes 250 files of 8 MB into the host's /dev/shm in transpose_output",
            "the worker's memory cgroup charges tmpfs pages; the grader removes the files; only "
            "transpose_output's part loses points (MultiHeadAttention is judged with it answered)",
            file("fill_dev_shm.py", solution(replace=[(
                "    X = X.reshape(-1, num_heads, X.shape[1], X.shape[2])  # (B, heads, n, hidden/heads)",
                "    import os\n    _chunk = b'x' * (8 << 20)\n    for _i in range(250):\n"
                "        with open('/dev/shm/attnkit-hog-%d-%d' % (os.getpid(), _i), 'wb') as _f:\n"
                "            _f.write(_chunk)\n"
                "    X = X.reshape(-1, num_heads, X.shape[1], X.shape[2])")])),
            expect="parts", full_parts=ALL_PARTS[:4] + ("MultiHeadAttention",),
            lost_parts=("transpose",), reason="MB of memory",
            levels=frozenset({"none", "none-uid"})
            if __import__("grader.sandbox.cgroups", fromlist=["support"]).support()["memory"] else frozenset()),
    # -- issue 6, class 6: odd tensors (replies) -------------------------------------------
    Hostile("odd-tensor-returns", "returns a sparse COO tensor, a quantized one, a nested one, a "
            "complex one, one on the meta device and a 2**31-entry stride-0 view",
            "only plain dense CPU tensors of a real dtype, no larger than the reference's, are "
            "compared; the others fail the call with the reason (grader/sandbox/replies.py)",
            file("odd_returns.py", zero_stub(postlude="""
                def sequence_mask(X, valid_len, value=0):
                    return torch.zeros_like(X).to_sparse()
                def masked_softmax(X, valid_lens):
                    return torch.quantize_per_tensor(torch.zeros_like(X).float(), 0.1, 0, torch.quint8)
                def transpose_qkv(X, num_heads):
                    return torch.nested.nested_tensor([X[0], X[0][:1]])
                def transpose_output(X, num_heads):
                    return torch.zeros(X.shape[0] // num_heads, X.shape[1], X.shape[2] * num_heads,
                                       dtype=torch.complex64)
                AdditiveAttention.forward = lambda self, queries, keys, values, valid_lens: torch.empty(
                    queries.shape[0], queries.shape[1], values.shape[-1], device="meta")
                DotProductAttention.forward = lambda self, queries, keys, values, valid_lens=None: (
                    torch.zeros(1, dtype=queries.dtype).expand(2**31))
                MultiHeadAttention.forward = lambda self, queries, keys, values, valid_lens: (
                    torch.zeros(queries.shape[0], queries.shape[1], 4).to_sparse_csr())
                """)), level_sensitive=False),
    Hostile("odd-serializer", "computes the right values (the solution) but patches the worker's "
            "describe_value to send each tensor as a sparse, quantized, meta, complex, float8 or "
            "stride-0 giant tensor", "the trusted side refuses every tensor that is not plain, "
            "dense, CPU, real and of a bounded size: densifying one would have to trust it",
            file("odd_serializer.py", solution(postlude=FIND_RUNTIME + textwrap.dedent("""
                _probes = _runtime("runtime.probes")
                _turn = [0]
                def _odd(value):
                    t = value.detach().as_subclass(torch.Tensor).to("cpu").contiguous()
                    _turn[0] += 1
                    pick = _turn[0] % 6
                    if pick == 0:
                        t = t.to_sparse()
                    elif pick == 1:
                        t = torch.quantize_per_tensor(t.float(), 0.001, 0, torch.qint32)
                    elif pick == 2:
                        t = torch.empty(t.shape, dtype=t.dtype, device="meta")
                    elif pick == 3:
                        t = t.to(torch.complex64)
                    elif pick == 4 and t.numel():
                        t = t.reshape(-1)[:1].expand(2**31)
                    else:
                        t = t.to(torch.float8_e5m2)
                    return {"kind": "tensor", "tensor": t, "device": "cpu", "dtype": "float32"}
                if _probes is not None:
                    _plain_value = _probes.describe_value
                    def _describe(value):
                        if isinstance(value, torch.Tensor):
                            try:
                                return _odd(value)
                            except Exception:
                                pass
                        return _plain_value(value)
                    _probes.describe_value = _describe
                """))), level_sensitive=False),
    # -- issue 6, class 7: forging the device verdict --------------------------------------
    Hostile("guard-switched-off", "makes positions without device= (wrong on a GPU) and runs "
            "sequence_mask under torch._C.DisableTorchFunction so the device check sees nothing",
            "the guard's record shows no observed call and a tripped switch; the trusted side "
            "fails closed", file("guard_off.py", solution(replace=[ON_THE_CPU], postlude=GUARD_OFF)),
            expect="parts", full_parts=ALL_PARTS[:6], lost_parts=("GPU",),
            reason="could not watch", level_sensitive=False),
    Hostile("guard-popped", "pops the device check off torch's mode stack inside sequence_mask",
            "the guard finds itself moved (stack depth, exit) and the switch tripped",
            file("guard_popped.py", solution(replace=[ON_THE_CPU], postlude=GUARD_POPPED)),
            expect="parts", full_parts=ALL_PARTS[:6], lost_parts=("GPU",),
            reason="could not watch", level_sensitive=False),
    Hostile("guard-cleared", "finds the active device check with _get_current_function_mode and "
            "clears what it recorded", "handing out the mode is a tripwire",
            file("guard_cleared.py", solution(replace=[ON_THE_CPU], postlude=GUARD_CLEARED)),
            expect="parts", full_parts=ALL_PARTS[:6], lost_parts=("GPU",),
            reason="could not watch", level_sensitive=False),
    Hostile("guard-replaced", "finds the worker's guard module through gc (it is not in "
            "sys.modules) and replaces device_guard with one that records nothing",
            "no record, or a record of no observed call, earns nothing",
            file("guard_replaced.py", solution(replace=[ON_THE_CPU], postlude=GUARD_REPLACED)),
            expect="parts", full_parts=ALL_PARTS[:6], lost_parts=("GPU",), level_sensitive=False),
    # -- follow-through marking (grader/catalog/carry.py): the solution answers a caller's
    # callees while its own code is judged; a stand-in kept past that answers nothing
    Hostile("keep-an-answer", "masked_softmax is left unwritten; DotProductAttention keeps the "
            "stand-in that answers masked_softmax while its own code is judged, and masked_softmax "
            "calls the kept one (its channel forced live) in every later case, its GPU one too",
            "the trusted side reads asks only while an answered case runs, and only for the names "
            "it chose: a kept stand-in's ask is a refused reply",
            file("keep_an_answer.py", solution(KEEP_AN_ANSWER_PRELUDE, replace=KEEP_AN_ANSWER)),
            expect="parts", full_parts=("sequence_mask", "AdditiveAttention",
                                        "DotProductAttention", "transpose", "MultiHeadAttention"),
            lost_parts=("masked_softmax", "GPU"), level_sensitive=False),
]


def _write_bytes(folder, name, data):
    path = os.path.join(folder, name)
    with open(path, "wb") as handle:
        handle.write(data)
    return path


def _zip_bomb(folder):
    path = os.path.join(folder, "bomb.zip")
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("notes.txt", "see attention.py")
        with z.open("attention.py", "w", force_zip64=True) as entry:
            chunk = b"\x00" * (1 << 20)
            for _ in range(200):
                entry.write(chunk)
    return path


# -- issue 14, class 5: the grader's own processes, and the shared folders, at level none ---
# Finds the grader's processes by their command lines, as a submission at level `none`
# without a throwaway uid can (the grader's uid: it may signal them). Elsewhere /proc is
# private or the kill is refused: the attack finds or stops nothing. It aims only at the
# processes below its own `grader grade`, so that the test runs sharing this machine (which
# a real attacker at that level could reach: docs/explanation/isolation.md, "Honest limits") are left alone.
GRADER_PROCESSES = """
import os, signal
def _cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read()
    except OSError:
        return b""
def _stat(pid, field):  # a number of /proc/PID/stat after the name: 1 its parent, 3 its session
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return int(handle.read().rsplit(")", 1)[1].split()[field])
    except (OSError, ValueError, IndexError):
        return 0
def _parent(pid):
    return _stat(pid, 1)
def _batch():  # the `grader grade` grading this submission: its nearest such ancestor
    pid = os.getpid()
    for _ in range(30):
        pid = _parent(pid)
        if pid <= 1:
            return None
        if b"grader\\x00grade\\x00" in _cmdline(pid):
            return pid
    return None
def _pids():
    # only this batch's processes: the test runs sharing the machine are left alone
    root, children = _batch(), {}
    for p in [int(p) for p in os.listdir("/proc") if p.isdigit()]:
        children.setdefault(_parent(p), []).append(p)
    found, todo = set(), [root] if root else []
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    found.discard(os.getpid())
    return sorted(found)
def _servers(mark):  # processes running `mark` whose parent does not: a server, not its forks
    return [p for p in _pids() if mark in _cmdline(p) and mark not in _cmdline(_parent(p))]
SERVER_MARKS = (b"grader.grade.zygote", b"--server")  # a fork server, started either way
def _fork_servers():  # sandbox/template.py --server: the template beside it keeps its mark, in
    def serving(pid):  # a session of its own; a held server (grade/held.py), its server's fork,
        return any(mark in _cmdline(pid) for mark in SERVER_MARKS)  # stays in that one's
    return [p for p in _pids() if serving(p)
            and (not serving(_parent(p)) or _stat(p, 3) == _stat(_parent(p), 3))]
def _my_template():  # the template this worker was forked from: its keeper's parent
    template = _parent(os.getppid())
    return template if b"sandbox/template.py" in _cmdline(template) else None
def _templates():  # its own, else those started alone (never a server beside one)
    mine = _my_template()
    return [mine] if mine else [p for p in _servers(b"sandbox/template.py")
                                if b"--server" not in _cmdline(p)]
def _trusted_forks():  # the fork servers' children but the template beside one and the
    servers = set(_fork_servers())  # held servers (servers themselves)
    return [p for p in _pids() if _parent(p) in servers and p not in servers
            and p != _my_template()]
def _kill(pids):
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
"""
KILL_TEMPLATE = GRADER_PROCESSES + "_kill(_templates())\n"
KILL_FORK_SERVER = GRADER_PROCESSES + "_kill(_fork_servers())\n"
# Its own trusted process, found wherever it is: the one holding the flock on this worker's
# throwaway gid (grader/sandbox/isolation.py lease_uid; /proc/locks names the holder's pid).
# The tree below `grader grade` is not enough: when a classmate kills the fork server first
# (kill-fork-server, graded at the same time), its forks are reparented to init, outside
# that tree; the attack then missed its own grader process and was graded normally
# (the flaky test_hostile[none-kill-trusted-parent] of issue 19's stop).
OWN_GRADER = """
def _own_grader():
    found = []
    for folder in ("/run/attnkit-uids", "/tmp/attnkit-uids"):
        try:
            lease = os.stat(f"{folder}/{os.getgid()}")
            with open("/proc/locks") as handle:
                lines = handle.read().splitlines()
        except OSError:
            continue
        for line in lines:  # "1: FLOCK  ADVISORY  WRITE 2221 fe:00:1496179 0 EOF"
            fields = line.replace("->", " ").split()
            if len(fields) < 6 or fields[1] != "FLOCK" or fields[5].count(":") != 2:
                continue
            major, minor, inode = fields[5].split(":")
            try:
                if int(inode) == lease.st_ino and \\
                        os.makedev(int(major, 16), int(minor, 16)) == lease.st_dev:
                    found.append(int(fields[4]))
            except ValueError:
                pass
    return found
"""
# every trusted process: its own (above), forks of the fork server, and those started fresh
# when it is gone (grade/trusted.py run_pytest; their command line carries the report's fd)
KILL_TRUSTED_NOW = (
    "_kill(_own_grader() + _trusted_forks() + _fork_servers()"
    " + [p for p in _pids() if b'--attnkit-report-fd' in _cmdline(p)] + [os.getppid()])\n")
KILL_TRUSTED = GRADER_PROCESSES + OWN_GRADER + KILL_TRUSTED_NOW
# what the litter entry names its files (test_hostile.py and test_template.py look): this
# test process's own, so that a test run beside it (another pytest-xdist worker) that
# litters at the same time is not mistaken for a failed clean-up here
LITTER_PREFIX = f"attnkit-left-{os.getpid()}-"
LITTER = """
import os
for _folder in ("/tmp", "/var/tmp"):
    try:
        os.makedirs(f"{_folder}/LITTER_PREFIXdir-{os.getpid()}", exist_ok=True)
        for _i in range(2000):
            with open(f"{_folder}/LITTER_PREFIX{os.getpid()}-{_i}", "wb") as _f:
                _f.write(b"x" * 8192)
        with open(f"{_folder}/LITTER_PREFIXdir-{os.getpid()}/big", "wb") as _f:
            for _ in range(12):
                _f.write(b"y" * (1 << 20))
    except OSError:
        pass
""".replace("LITTER_PREFIX", LITTER_PREFIX)

ZOO += [
    Hostile("kill-template", "at import, SIGKILLs the batch's worker template (found by its "
            "command line), so that later students' workers would start another way",
            "both start paths drop the same privileges (runtime/privileges.py); the grader starts "
            "the template again for the next student (grade/trusted.py)",
            file("kill_template.py", zero_stub(KILL_TEMPLATE))),
    Hostile("kill-fork-server", "at import, SIGKILLs the grader's fork server, hoping to turn its "
            "own zero into a grader error that is never exported",
            "a trusted process outlives its fork server: its report still comes, and the server is "
            "started again (grade/zygote.py)",
            file("kill_fork_server.py", zero_stub(KILL_FORK_SERVER))),
    Hostile("kill-trusted-parent", "at import, SIGKILLs every trusted process and the fork server "
            "(its own grader process among them)",
            "a trusted process killed while its worker ran as the grader's uid, again when graded "
            "alone, while a control submission survives, is charged to the submission "
            "(grade/trusted.py run_suite)",
            # it finds its own grader process wherever it is (OWN_GRADER), so both runs die
            file("kill_trusted.py", zero_stub(KILL_TRUSTED)),
            reason="was stopped while the submission's code was running, and again when it "
                   "was graded alone",
            levels=frozenset({"none"})),  # elsewhere it reaches nothing: see kill-fork-server
    Hostile("litter-tmp", "writes 4000 files and 24 MB into /tmp and /var/tmp at import",
            "the worker's files carry its throwaway gid or uid; every one in the shared folders is "
            "removed when it stops (sandbox/cleanup.py); namespaces give it a private /tmp",
            file("litter_tmp.py", zero_stub(LITTER))),
]

# -- issue 14, class 6: no credit by accident (degenerate cases, tests_hidden/cases.py) ----
# Each skips one function's work; the functions it does not reach return zeros, so
# any point it scored would be a degenerate case (one key, nothing masked, one head) or a
# GPU share that such a case unlocked. tests/test_degenerate.py grades the same shortcuts
# with the solution around them and checks their scores part by part.
NO_TRANSPOSES = """
def transpose_qkv(X, num_heads):
    return X.new_zeros(X.shape[0] * num_heads, X.shape[1], X.shape[2] // num_heads)
def transpose_output(X, num_heads):
    return X.new_zeros(X.shape[0] // num_heads, X.shape[1], X.shape[2] * num_heads)
"""
MASK_RETURNS_X = NO_TRANSPOSES + """
def sequence_mask(X, valid_len, value=0):
    return X
"""
UNIFORM_WEIGHTS = NO_TRANSPOSES + """
def sequence_mask(X, valid_len, value=0):
    return torch.zeros_like(X)
def masked_softmax(X, valid_lens):
    return torch.ones_like(X) / X.shape[-1]
"""
MEAN_OF_VALUES = """
def _mean(self, queries, keys, values, valid_lens=None):
    B, Q, K = queries.shape[0], queries.shape[1], keys.shape[1]
    self.attention_weights = queries.new_full((B, Q, K), 1.0 / K)
    return values.mean(dim=1, keepdim=True).expand(B, Q, values.shape[-1])
AdditiveAttention.forward = _mean
DotProductAttention.forward = _mean
def _mha_mean(self, queries, keys, values, valid_lens):
    B, Q, K = queries.shape[0], queries.shape[1], keys.shape[1]
    self.attention.attention_weights = queries.new_full((B * self.num_heads, Q, K), 1.0 / K)
    out = self.W_o(self.W_v(values)).mean(dim=1, keepdim=True)
    return out.expand(B, Q, out.shape[-1])
MultiHeadAttention.forward = _mha_mean
"""
EVERYTHING_IDENTITY = """
def sequence_mask(X, valid_len, value=0):
    return X
def masked_softmax(X, valid_lens):
    return X
def transpose_qkv(X, num_heads):
    return X
def transpose_output(X, num_heads):
    return X
def _values(self, queries, keys, values, valid_lens=None):
    self.attention_weights = queries.new_ones(queries.shape[0], queries.shape[1], keys.shape[1])
    return values
AdditiveAttention.forward = _values
DotProductAttention.forward = _values
def _mha_values(self, queries, keys, values, valid_lens):
    self.attention.attention_weights = queries.new_ones(
        queries.shape[0] * self.num_heads, queries.shape[1], keys.shape[1])
    return values
MultiHeadAttention.forward = _mha_values
"""
DEGENERATE_DEFENCE = ("a degenerate case counts, and a function's GPU share is graded, only once "
                      "the function passes one of its non-degenerate cases (tests_hidden/cases.py)")
WITHHELD = "cannot tell working code from a shortcut"

ZOO += [
    Hostile("degenerate-mask-returns-x", "sequence_mask returns X unchanged (nothing else "
            "written): right wherever nothing is masked or everything is kept", DEGENERATE_DEFENCE,
            file("degenerate_mask_returns_x.py", zero_stub(postlude=MASK_RETURNS_X)),
            level_sensitive=False),  # its reasons come after feedback.txt's first lines
    Hostile("degenerate-uniform-weights", "masked_softmax returns uniform rows "
            "(ones_like(X) / X.shape[-1]), nothing else written: right for one key",
            DEGENERATE_DEFENCE, file("degenerate_uniform.py", zero_stub(postlude=UNIFORM_WEIGHTS)),
            reason=WITHHELD, level_sensitive=False),
    Hostile("degenerate-mean-of-values", "each attention module returns the mean of the values "
            "and stores uniform weights: right for one key", DEGENERATE_DEFENCE,
            file("degenerate_mean.py", zero_stub(postlude=MEAN_OF_VALUES)),
            reason=WITHHELD, level_sensitive=False),
    Hostile("degenerate-identity", "every function returns its input and every module its "
            "values (weights all 1): right for one key, one head or one position",
            DEGENERATE_DEFENCE, file("degenerate_identity.py", zero_stub(postlude=EVERYTHING_IDENTITY)),
            level_sensitive=False),  # its reasons come after feedback.txt's first 120 lines
]
