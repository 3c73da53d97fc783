"""Results that depend only on the case, computed once per batch.

The reference's result for a probe, and each catalog mistake's (grader/catalog), are the
same for every submission. A trusted process keeps them here; when it ends, the fork
server (grader/grade/zygote.py) takes what it added, so every trusted process forked after
it starts with them. Only trusted code writes here: the reference and the catalog's
mistakes, run in the trusted process. Nothing a worker sent is ever kept.

    raw = memo.get(owner, probe)            # None when not computed yet
    memo.put(owner, probe, raw)
    data = memo.export()                    # what this process added (torch.save bytes)
    memo.absorb(data)                       # in the fork server
"""
import copy
import hashlib
import io

import torch

MAX_EXPORT_BYTES = 64 * 2**20
_RESULTS = {}   # (owner, digest of the probe) -> raw result
_ADDED = set()  # keys computed by this process (what export sends)
_COUNTS = {}    # (kind of owner, "computed" | "reused") -> how many, in this process


def digest(probe):
    """A digest of everything a probe asks (tensors by dtype, shape and bytes)."""
    h = hashlib.sha256()

    def walk(value):
        if isinstance(value, dict):
            h.update(b"{")
            for key in sorted(value, key=repr):
                h.update(repr(key).encode())
                walk(value[key])
            h.update(b"}")
        elif isinstance(value, (list, tuple)):
            h.update(b"[" if isinstance(value, list) else b"(")
            for item in value:
                walk(item)
            h.update(b"]")
        elif isinstance(value, torch.Tensor):
            tensor = value.detach().cpu().contiguous()
            h.update(f"T{tensor.dtype}{tuple(tensor.shape)}{value.requires_grad}".encode())
            h.update(tensor.reshape(-1).view(torch.uint8).numpy().tobytes())
        else:
            h.update(f"{type(value).__name__}:{value!r}".encode())
        h.update(b",")

    walk(probe)
    return h.hexdigest()


def get(owner, probe):
    """A copy of the kept raw result of `probe` for `owner`, or None."""
    found = _RESULTS.get((owner, digest(probe)))
    if found is not None:
        _count(owner, "reused")
    return None if found is None else copy_of(found)


def put(owner, probe, raw):
    key = (owner, digest(probe))
    _RESULTS[key] = copy_of(raw)
    _ADDED.add(key)
    _count(owner, "computed")


def _count(owner, how):
    kind = owner[0] if isinstance(owner, tuple) and owner else str(owner)
    _COUNTS[(kind, how)] = _COUNTS.get((kind, how), 0) + 1


def counts():
    """{kind: {"computed": n, "reused": m}} for this process (results.json records it)."""
    found = {}
    for (kind, how), n in sorted(_COUNTS.items()):
        found.setdefault(kind, {"computed": 0, "reused": 0})[how] = n
    return found


def copy_of(value):
    """A copy no caller can change the kept result through: containers rebuilt, tensors
    cloned (copy.deepcopy, with its memo of every object, cost three times as much)."""
    if isinstance(value, dict):
        return {key: copy_of(item) for key, item in value.items()}
    if isinstance(value, list):
        return [copy_of(item) for item in value]
    if isinstance(value, tuple):
        return tuple(copy_of(item) for item in value)
    if isinstance(value, torch.Tensor):
        copied = value.detach().clone()
        return copied.requires_grad_() if value.requires_grad else copied
    if isinstance(value, (str, bytes, int, float, bool, type(None))):
        return value
    return copy.deepcopy(value)


def export():
    """What this process computed, as bytes for absorb(); b"" when nothing (or too much)."""
    if not _ADDED:
        return b""
    buffer = io.BytesIO()
    torch.save([[list(key), _RESULTS[key]] for key in _ADDED if key in _RESULTS], buffer)
    data = buffer.getvalue()
    return data if len(data) <= MAX_EXPORT_BYTES else b""


def absorb(data):
    """Keep what a trusted process exported (in the fork server); bad data is ignored."""
    if not data:
        return 0
    try:
        entries = torch.load(io.BytesIO(data), weights_only=True)
        kept = 0
        for key, raw in entries:
            owner, probe_digest = key
            _RESULTS[(_owner(owner), str(probe_digest))] = raw
            kept += 1
        return kept
    except Exception:  # noqa: BLE001 - a memo is an optimisation; without it, results are recomputed
        return 0


def _owner(owner):
    return tuple(_owner(o) for o in owner) if isinstance(owner, (list, tuple)) else owner


def clear():
    _RESULTS.clear()
    _ADDED.clear()
    _COUNTS.clear()
