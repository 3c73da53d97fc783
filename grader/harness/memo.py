"""Results that depend only on the case, computed once per batch.

The reference's result for a probe, and each catalog mistake's (grader/catalog), are the
same for every submission. A trusted process keeps them here; the fork server computes the
reference's for every probe the suite asks before it forks any (grader/suite/warm.py), and
takes what each trusted process added when it ends (grader/grade/serving.py), so every
trusted process forked after it starts with them. Only trusted code writes here: the
reference and the catalog's mistakes, run in the trusted process. Nothing a worker sent is
ever kept.

A kept result is read as it is, never copied: its tensors are write-protected (inference
tensors: an in-place write raises), and no reader changes its containers (tests/test_memo.py
checks every kept result after a whole session). A probe's digest hashes each input tensor's bytes
once: a tensor seen before (the same object, unchanged since) is not hashed again.

    raw = memo.get(owner, probe)            # None when not computed yet
    memo.put(owner, probe, raw)
    data = memo.export()                    # what this process added (torch.save bytes)
    memo.absorb(data)                       # in the fork server
"""
import hashlib
import io
import weakref

import torch

MAX_EXPORT_BYTES = 64 * 2**20
_RESULTS = {}   # (owner, digest of the probe) -> raw result (write-protected: frozen())
_ADDED = set()  # keys computed by this process (what export sends)
_COUNTS = {}    # (kind of owner, "computed" | "reused") -> how many, in this process
_KEPT = {}      # key -> digest of the result as it was kept (intact())
_TENSORS = {}   # id of a tensor -> (weak reference, its version, digest of its bytes)
_STATES = {}    # (solution, target, init, seed) -> a fresh module's weights (frozen())
_SHARED = {}    # id of such weights -> (them, their digest): not walked again
_PROBES = {}    # id of a probe digested -> (the probe, its digest): not walked again


def _tensor_digest(tensor, cached=True):
    """The digest of a tensor's dtype, shape and bytes, hashed once per tensor object (and
    again only after an in-place change, which bumps its version)."""
    key = id(tensor)
    # an inference tensor keeps no version: an in-place write to one raises (memo.frozen)
    version = -1 if tensor.is_inference() else tensor._version
    found = _TENSORS.get(key)
    if cached and found is not None and found[0]() is tensor and found[1] == version:
        return found[2]
    plain = tensor.detach().cpu().contiguous()
    h = hashlib.sha256(f"T{plain.dtype}{tuple(plain.shape)}{tensor.requires_grad}".encode())
    h.update(plain.reshape(-1).view(torch.uint8).numpy().tobytes())
    done = h.digest()
    try:
        ref = weakref.ref(tensor, lambda _gone, key=key: _TENSORS.pop(key, None))
    except TypeError:
        return done
    _TENSORS[key] = (ref, version, done)
    return done


def digest(probe, cached=True):
    """A digest of everything a probe asks (tensors by dtype, shape and bytes). `cached`: a
    probe digested before is not walked again (a probe is never changed once made: a case
    hands out the same probe for the same question, suite/case.py; intact() checks them),
    nor a module case's weights kept here by state(), and a tensor hashed before and
    unchanged since is not hashed again."""
    if cached:
        found = _PROBES.get(id(probe))
        if found is not None and found[0] is probe:
            return found[1]
    done = _digest(probe, cached, cached)
    if cached and type(probe) is dict:
        _PROBES[id(probe)] = (probe, done)
    return done


def _digest(probe, cached, shared):
    """`cached`: tensors hashed before are not hashed again; `shared`: state()'s weights
    stand for their digest (taken when they were kept)."""
    parts = []
    add = parts.append

    def walk(value):
        kind = type(value)
        if kind is dict:
            known = _SHARED.get(id(value)) if shared else None
            if known is not None and known[0] is value:
                add(known[1])
                return
            add(b"{")
            keys = sorted(value) if all(type(k) is str for k in value) \
                else sorted(value, key=repr)
            for key in keys:
                add(repr(key).encode())
                walk(value[key])
            add(b"}")
        elif kind is list or kind is tuple:
            add(b"[" if kind is list else b"(")
            for item in value:
                walk(item)
            add(b"]")
        elif isinstance(value, torch.Tensor):
            add(_tensor_digest(value, cached))
        elif isinstance(value, dict):
            walk(dict(value))
            return
        elif isinstance(value, (list, tuple)):
            walk(list(value) if isinstance(value, list) else tuple(value))
            return
        else:
            add(f"{kind.__name__}:{value!r}".encode())
        add(b",")

    walk(probe)
    return hashlib.sha256(b"".join(parts)).hexdigest()


def frozen(value):
    """`value` with its containers rebuilt and its tensors write-protected: inference tensors,
    read, compared and drawn like any other, on which an in-place write raises (so a reader
    that writes is a grader error at once, never a quiet change for the next reader)."""
    if isinstance(value, dict):
        return {key: frozen(item) for key, item in value.items()}
    if isinstance(value, list):
        return [frozen(item) for item in value]
    if isinstance(value, tuple):
        return tuple(frozen(item) for item in value)
    if isinstance(value, torch.Tensor):
        if value.is_inference():
            return value
        with torch.inference_mode():
            return value.detach().clone()
    return value


def get(owner, probe):
    """The kept raw result of `probe` for `owner` (not a copy: read it, never write), or None."""
    found = _RESULTS.get((owner, digest(probe)))
    if found is not None:
        _count(owner, "reused")
    return found


def put(owner, probe, raw):
    """Keep `raw` for `probe`; returns what is kept (write-protected: read it, not `raw`)."""
    key = (owner, digest(probe))
    kept = _RESULTS[key] = frozen(raw)
    _KEPT[key] = digest(kept, cached=False)
    _ADDED.add(key)
    _count(owner, "computed")
    return kept


def intact():
    """The keys of kept results that changed since they were kept (a reader wrote into a
    container, or a tensor in place): [] when every kept result is as it was."""
    changed = [key for key, raw in _RESULTS.items()
               if key in _KEPT and digest(raw, cached=False) != _KEPT[key]]
    changed += [("probe", found[1]) for found in _PROBES.values()
                if _digest(found[0], False, True) != found[1]]
    return changed + [key for key, found in _STATES.items()
                      if _SHARED[id(found)][1] != b"S" + digest(found, cached=False).encode()]


def state(key, build):
    """A fresh module's weights for `key` (solution, target, init, seed), built once per
    batch: {name: write-protected tensor}, the same dict each time (read it, never write:
    intact() checks it too); its digest is taken once."""
    try:
        found = _STATES.get(key)
    except TypeError:  # an init value that is no dict key: built each time
        return frozen(build())
    if found is None:
        found = _STATES[key] = frozen(build())
        _SHARED[id(found)] = (found, b"S" + digest(found, cached=False).encode())
    return found


def _count(owner, how):
    kind = owner[0] if isinstance(owner, tuple) and owner else str(owner)
    _COUNTS[(kind, how)] = _COUNTS.get((kind, how), 0) + 1


def counts():
    """{kind: {"computed": n, "reused": m}} for this process (results.json records it)."""
    found = {}
    for (kind, how), n in sorted(_COUNTS.items()):
        found.setdefault(kind, {"computed": 0, "reused": 0})[how] = n
    return found


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
            _RESULTS[(_owner(owner), str(probe_digest))] = frozen(raw)
            kept += 1
        return kept
    except Exception:  # noqa: BLE001 - a memo is an optimisation; without it, results are recomputed
        return 0


def _owner(owner):
    return tuple(_owner(o) for o in owner) if isinstance(owner, (list, tuple)) else owner


def settled():
    """What this process computed so far is not sent again (the fork server, after it
    computed the suite's results before forking: grader/suite/warm.py)."""
    _ADDED.clear()
    _COUNTS.clear()


def clear():
    _RESULTS.clear()
    _ADDED.clear()
    _COUNTS.clear()
    _KEPT.clear()
    _STATES.clear()
    _SHARED.clear()
    _PROBES.clear()
