"""Every pair of submissions compared: a score, the shared passages, the clusters."""
import dataclasses
import itertools

import numpy as np
from copydetect.detector import compare_files

from . import DEFAULT_THRESHOLD, MIN_SHARED


@dataclasses.dataclass
class Pair:
    a: str                 # submission keys (the gradebook's names)
    b: str
    score: float           # the larger of the two shares (see compare)
    share_a: float
    share_b: float
    shared: int            # normalised characters of a's counted code found in b
    spans_a: list          # [(start, end)] character ranges of a's shared lines, as shown
    spans_b: list
    flagged: bool = False


def _spans(slices, fingerprint):
    """copydetect's slices (in the normalised code) as spans of the code shown."""
    if not len(slices) or not np.size(slices):
        return []
    length = len(fingerprint.raw_code)
    starts, ends = np.asarray(slices[0]).astype(int), np.asarray(slices[1]).astype(int)
    return fingerprint.shown_spans([(max(0, int(s)), min(length, int(e)))
                                    for s, e in zip(starts, ends) if e > s])


def compare(a, b, fa, fb, threshold=DEFAULT_THRESHOLD):
    """The Pair of two Fingerprints. share_a: the part of a's counted code (not base)
    also found in b; score: the larger share, so a small copy inside a large file counts."""
    shared, (share_a, share_b), (slices_a, slices_b) = compare_files(fa, fb)
    share_a, share_b = float(share_a), float(share_b)
    score = round(max(share_a, share_b), 4)
    return Pair(a, b, score, round(share_a, 4), round(share_b, 4), int(shared),
                _spans(slices_a, fa), _spans(slices_b, fb),
                flagged=score >= threshold and int(shared) >= MIN_SHARED)


def all_pairs(prints, threshold=DEFAULT_THRESHOLD):
    """Pairs of every two keys of `prints` ({key: Fingerprint}): the flagged ones first,
    each group by score, highest first."""
    pairs = [compare(a, b, prints[a], prints[b], threshold)
             for a, b in itertools.combinations(sorted(prints), 2)]
    pairs.sort(key=lambda p: (not p.flagged, -p.score, -p.shared, p.a, p.b))
    return pairs


def clusters(pairs):
    """Connected components of the flagged pairs, as sorted lists of keys, largest first."""
    parent = {}

    def root(x):
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for pair in pairs:
        if pair.flagged:
            parent[root(pair.a)] = root(pair.b)
    groups = {}
    for key in parent:
        groups.setdefault(root(key), []).append(key)
    return sorted((sorted(g) for g in groups.values()), key=lambda g: (-len(g), g))
