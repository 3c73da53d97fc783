"""Fingerprints of code with copydetect (winnowing over Pygments tokens), one piece at a
time, with the kit's base code removed.

The code is first rewritten into one canonical spelling (normal.py: Python's parser prints
it again without comments, docstrings, redundant parentheses, its own names or its import
spelling, cut into one piece per definition). copydetect
(https://github.com/blingenf/copydetect) then tokenises each piece with Pygments, replaces
every name by one letter, hashes every k-gram of what is left and keeps the winnowed
minimum of each window. No k-gram spans two pieces, so definitions in any order share the
same fingerprints, and two students who paste the book's functions in the same new order
share no seams between them.

Only the k-grams left after removing every k-gram of the base code (normalised the same
way) count: a pair's score is the share of one submission's counted code also found in the
other. k-grams are hashed with BLAKE2b rather than copydetect's Python hash(), which is
salted per process: the same class gives the same report on every run.
"""
import bisect
import hashlib

import numpy as np
from copydetect import utils as winnow

from . import normal

K = 12          # characters of normalised code in a k-gram (copydetect's default is 25)
WINDOW = 8      # winnowing window: any shared run of K + WINDOW - 1 = 19 is found
LEXED_AS = "submission.py"  # the name copydetect is told (the language is given: only logs read it)
# 12 and 8, measured on tests/similarity/ (docs/how-to/similarity.md): with copydetect's 25 and 6
# a copy with a dead line after every statement (gus_padded.py) scored 0.40.


def as_blocks(code):
    """[(source, line offset)] of a code.Code, or of plain text (one block)."""
    if isinstance(code, str):
        return [(code.replace("\r\n", "\n").replace("\r", "\n"), 0)]
    return code.blocks


def shown_text(code):
    return code.replace("\r\n", "\n").replace("\r", "\n") if isinstance(code, str) else code.text


class Fingerprint:
    """What copydetect.detector.compare_files reads of a CodeFingerprint (k, hashes,
    hash_idx, filtered_code, offsets, token_coverage), built one piece of normalised code
    at a time; `raw_code` is the normalised code its slices point into, `shown` the code as
    the page shows it, and `shown_spans` maps the one onto the other."""

    def __init__(self, code, base=None, k=K, window=WINDOW):
        self.k = k
        self.shown = shown_text(code)
        self.normal = normal.normalise(as_blocks(code))
        self.raw_code = self.normal.text
        filtered, offsets, self.hash_idx = [], [], {}
        length = 0
        for start, end in self.normal.pieces:
            code_piece, local = winnow.filter_code(self.raw_code[start:end], LEXED_AS, "python")
            for value, place in _winnowed(code_piece, k, window, base):
                self.hash_idx.setdefault(value, []).append(length + place)
            if len(local):
                offsets.append(np.column_stack([local[:, 0] + length,
                                                local[:, 1] + start - length]))
            filtered.append(code_piece)
            length += len(code_piece)
        self.filtered_code = "".join(filtered)
        self.offsets = np.concatenate(offsets) if offsets else np.array([])
        self.hashes = set(self.hash_idx)
        self.token_coverage = float(winnow.get_token_coverage(self.hash_idx, k, length))
        self._normal_starts = [0] + [i + 1 for i, c in enumerate(self.raw_code) if c == "\n"]
        self._shown_starts = [0] + [i + 1 for i, c in enumerate(self.shown) if c == "\n"]

    def shown_spans(self, spans):
        """Character spans of the normalised code as spans of whole lines of the shown code
        (the lines each normalised line came from), merged."""
        lines = []
        for start, end in spans:
            first = bisect.bisect_right(self._normal_starts, start) - 1
            last = bisect.bisect_right(self._normal_starts, max(start, end - 1)) - 1
            for index in range(max(0, first), min(last, len(self.normal.lines) - 1) + 1):
                lines.append(self.normal.lines[index])
        merged = []
        for first, last in sorted(lines):
            if merged and first <= merged[-1][1] + 1:
                merged[-1] = (merged[-1][0], max(last, merged[-1][1]))
            else:
                merged.append((first, last))
        out = []
        for first, last in merged:
            if first > len(self._shown_starts):
                continue
            start = self._shown_starts[first - 1]
            end = self._shown_starts[last] - 1 if last < len(self._shown_starts) else len(self.shown)
            if end > start:
                out.append((start, end))
        return out


def kgram_hashes(code, k=K):
    """A stable 64-bit hash of every k-gram of `code` (normalised code), in order."""
    return np.array([int.from_bytes(hashlib.blake2b(code[i:i + k].encode("utf-8", "replace"),
                                                    digest_size=8).digest(), "little", signed=True)
                     for i in range(len(code) - k + 1)], dtype=np.int64)


def _winnowed(code, k, window, base):
    """(hash, offset) of the k-grams winnowing keeps (copydetect's robust winnowing), those
    in `base` left out."""
    hashes = kgram_hashes(code, k)
    if not len(hashes):
        return []
    kept, places = winnow.winnow(hashes, window, remove_duplicates=False)
    if base is not None and len(base):
        counted = ~np.isin(kept, base)
        kept, places = kept[counted], places[counted]
    return [(int(h), int(p)) for h, p in zip(kept, places)]


def base_hashes(texts, k=K):
    """Every k-gram hash of the base code, normalised as submissions are (no winnowing:
    all of them are removed)."""
    everything = []
    for text in texts:
        normalised = normal.normalise(as_blocks(text))
        for start, end in normalised.pieces:
            code, _offsets = winnow.filter_code(normalised.text[start:end], LEXED_AS, "python")
            if len(code) >= k:
                everything.append(kgram_hashes(code, k))
    return np.unique(np.concatenate(everything)) if everything else np.array([], dtype=np.int64)
