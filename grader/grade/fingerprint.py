"""What a grade depends on, as one hash: a regrade is skipped when nothing of it changed.

    suite = suite_fingerprint(options)            # hidden suite, solution, grader, limits
    mark = submission_fingerprint(suite, staged)  # + what intake staged (or why it refused)

A row whose fingerprint equals the new one is kept as it is unless `--force`.
"""
import dataclasses
import hashlib
import json
import os


_GRADER = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _hash_tree(digest, root, suffixes=(".py", ".ini")):
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(names):
            if name.endswith(suffixes):
                path = os.path.join(folder, name)
                digest.update(os.path.relpath(path, root).encode("utf-8", "surrogateescape"))
                with open(path, "rb") as handle:
                    digest.update(handle.read())


def suite_fingerprint(options):
    """The hidden suite (its declaration too), the solution, the grader's own code (the
    suites' library, grader/suite/, with it) and the options it grades with."""
    digest = hashlib.sha256(b"attnkit grade v2")
    _hash_tree(digest, os.path.abspath(options.hidden_tests), (".py", ".ini", ".toml"))
    with open(options.solution, "rb") as handle:
        digest.update(handle.read())
    _hash_tree(digest, _GRADER)
    settings = {"isolation": options.isolation, "no_gpu": options.no_gpu,
                "limits": dataclasses.asdict(options.limits),
                # error carried forward (catalog/carry.py): rows of one setting only
                "carry_forward": getattr(options, "carry_forward", "on")}
    if getattr(options, "lang", "en") != "en":  # the feedback's language: another grading
        settings["lang"] = options.lang
    if getattr(options, "parts", None) is not None:  # --parts: only some parts graded
        settings["parts"] = list(options.parts)
    digest.update(json.dumps(settings, sort_keys=True).encode())
    return digest.hexdigest()


def submission_fingerprint(suite, staged):
    """`suite` plus what intake made of one upload (a Staged: its files, or its refusal)."""
    digest = hashlib.sha256(suite.encode())
    if staged.error:
        digest.update(b"refused\0" + staged.error.encode("utf-8", "replace"))
    else:
        _hash_tree(digest, os.path.dirname(staged.file), suffixes=("",))
    for note in staged.notes:
        digest.update(b"\0" + note.encode("utf-8", "replace"))
    return digest.hexdigest()

