"""Output folder names: one per submission, safe on any file system, never one of ours.

A submission's name comes from whatever was uploaded, so as a folder in `--out` it could
be `grades.csv`, `..`, `.git`, hold a `/`, a NUL, terminal escapes or a lone surrogate
(a file name that is not valid UTF-8), or differ from another only in case or Unicode form
(which macOS and Windows file systems treat as the same name). `folder_names` maps the
list of names to folder names that are

- made of letters, digits, marks, space and `-_.+@()` only (anything else becomes `_`),
  not starting with `.` or `-`, not ending with a space or `.`, at most MAX_BYTES of UTF-8;
- never a name the grader writes at the top of `--out` (RESERVED, anything starting
  with `.`, Windows device names);
- unique under `key` (NFKC, then case folding): the first of a clash keeps its name, the
  others get a suffix `-2`, `-3`, ...

An ordinary name (`alice`, `zhang_san`, `张三`, `hw (1)`) is its own folder name.
"""
import unicodedata

MAX_BYTES = 80
# top-level names the grader writes (or will write) in --out; temporary files start with "."
RESERVED = frozenset({"grades.csv", "report.html", "grader-errors.log", "index.html",
                      "results.json", "feedback.txt",
                      "course.toml", "overrides.json",  # the course file and the ledger
                      "shard.json", "merge.json",  # a shard's record, a merge's (shards.py)
                      "similarity.csv", "similarity.html"})  # grader similarity's (similarity/page.py)
_WINDOWS = frozenset({"con", "prn", "aux", "nul", *(f"com{i}" for i in range(10)),
                      *(f"lpt{i}" for i in range(10))})
_PUNCTUATION = frozenset("-_.+@() ")
FALLBACK = "submission"


def key(name):
    """What two names must not share to be told apart on every file system."""
    return unicodedata.normalize("NFKC", name).casefold()


def reserved(name):
    folded = key(name)
    return folded in RESERVED or folded.startswith(".") or folded.split(".")[0] in _WINDOWS


def _allowed(char):
    if char in _PUNCTUATION:
        return True
    return unicodedata.category(char)[0] in "LNM"


def _cut(text, limit):
    """`text` cut to at most `limit` bytes of UTF-8, at a character boundary."""
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    return data[:limit].decode("utf-8", errors="ignore")


def _tidy(text):
    """No leading `.`/`-` (hidden files, options), no trailing space or `.` (Windows)."""
    text = text.strip(" ")
    if text[:1] in (".", "-"):
        text = "_" + text[1:]
    return text.rstrip(" .") or FALLBACK


def candidate(name):
    """The folder a name asks for, before clashes are settled."""
    if not isinstance(name, str):
        name = str(name)
    text = "".join(c if _allowed(c) else "_" for c in name[:MAX_BYTES])
    return _tidy(_cut(_tidy(text), MAX_BYTES))


def _with_suffix(base, number):
    suffix = f"-{number}"
    return _tidy(_cut(base, MAX_BYTES - len(suffix))) + suffix


def folder_names(names, kept=None):
    """One folder name per name, in the same order (see the module's docstring).

    kept: {name: folder} of the rows already in the gradebook: such a name keeps its folder
    (a regrade lands where the first grading did), and no other name may take one of them."""
    kept = kept or {}
    wanted = [candidate(n) for n in names]
    folders = [None] * len(wanted)
    taken = {key(f) for f in kept.values()}
    for i, name in enumerate(names):
        if name in kept:
            folders[i] = kept[name]
    for i, folder in enumerate(wanted):  # the first of each clash keeps its name
        if folders[i] is not None:
            continue
        k = key(folder)
        if k not in taken and not reserved(folder):
            taken.add(k)
            folders[i] = folder
    for i, folder in enumerate(wanted):  # the others get the first free suffix
        if folders[i] is not None:
            continue
        number = 2
        while True:
            attempt = _with_suffix(folder, number)
            if reserved(attempt):  # `con.txt-2` is still a device name: `_con.txt-2` is not
                attempt = _with_suffix("_" + folder, number)
            k = key(attempt)
            if k not in taken and not reserved(attempt):
                break
            number += 1
        taken.add(k)
        folders[i] = attempt
    return folders
