"""Fingerprints of code with copydetect (winnowing over Pygments tokens), one definition
at a time, with the kit's base code removed.

copydetect (https://github.com/blingenf/copydetect) tokenises Python with Pygments,
replaces every name by one letter (so renaming changes nothing; comments and whitespace are
dropped), hashes every k-gram of what is left and keeps the winnowed minimum of each window.
Two changes of what it is given, both measured on tests/similarity/ (README "Similarity"):

- Docstrings are blanked first (in the base code too). The skeleton and the book carry
  them and students delete or rewrite them; once the text around a deleted docstring
  joins a signature to the book's body, it no longer matches the base.
- Each definition (a top-level statement group, a function, a method) is fingerprinted on
  its own, so no k-gram spans two of them: two students who paste the book's functions
  in the same new order would otherwise share the seams between them (in whole-file
  fingerprints the book without its docstrings kept 254 characters of "own" code, and
  the same file reordered shared 195 of them: a score of 0.77).

Only the k-grams left after removing every k-gram of the base code count: a pair's score
is the share of one submission's counted code also found in the other. k-grams are hashed
with BLAKE2b rather than copydetect's Python hash(), which is salted per process: the same
class gives the same report on every run.
"""
import hashlib
import re

import numpy as np
from copydetect import utils as winnow
from pygments import lexers, token

K = 12          # characters of normalised code in a k-gram (copydetect's default is 25)
WINDOW = 8      # winnowing window: any shared run of K + WINDOW - 1 = 19 is found
LEXED_AS = "submission.py"  # the name copydetect is told (the language is given: only logs read it)
# 12 and 8, measured on tests/similarity/ (README "Similarity"): with copydetect's 25 and 6
# a copy with a dead line after every statement (gus_padded.py) scored 0.40; now 0.71 and
# up, while independent pairs stay at 0.24 at most.
DEFINITION = re.compile(r"^[ \t]{0,8}(?:async[ \t]+def|def|class)[ \t]", re.MULTILINE)


def normalise(text):
    """One newline convention, so offsets agree with what the page shows."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def blank_docstrings(text):
    """`text` with every docstring's characters replaced by spaces (newlines kept), so
    every other character keeps its offset."""
    lexer = lexers.get_lexer_by_name("python", stripnl=False, stripall=False, ensurenl=False)
    chars = list(text)
    for start, kind, value in lexer.get_tokens_unprocessed(text):
        if kind in token.String.Doc:
            for i in range(start, min(start + len(value), len(chars))):
                if chars[i] != "\n":
                    chars[i] = " "
    return "".join(chars)


def definitions(text):
    """(start, end) character ranges: the text cut before every def or class line."""
    cuts = sorted({0, *(m.start() for m in DEFINITION.finditer(text)), len(text)})
    ranges = []
    for a, b in zip(cuts, cuts[1:]):
        while a < b and text[a] == "\n":   # Pygments drops leading newlines: keep offsets true
            a += 1
        if text[a:b].strip():
            ranges.append((a, b))
    return ranges


class Fingerprint:
    """What copydetect.detector.compare_files reads of a CodeFingerprint, built one
    definition at a time: k, hashes, hash_idx, filtered_code, offsets, token_coverage."""

    def __init__(self, text, base=None, k=K, window=WINDOW):
        self.k, self.raw_code = k, normalise(text)
        blanked = blank_docstrings(self.raw_code)
        filtered, offsets, self.hash_idx = [], [], {}
        length = 0
        for start, end in definitions(blanked):
            piece = blanked[start:end]
            code, local = winnow.filter_code(piece, LEXED_AS, "python")
            for value, place in _winnowed(code, k, window, base):
                self.hash_idx.setdefault(value, []).append(length + place)
            if len(local):
                offsets.append(np.column_stack([local[:, 0] + length, local[:, 1] + start - length]))
            filtered.append(code)
            length += len(code)
        self.filtered_code = "".join(filtered)
        self.offsets = np.concatenate(offsets) if offsets else np.array([])
        self.hashes = set(self.hash_idx)
        self.token_coverage = float(winnow.get_token_coverage(self.hash_idx, k, length))


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
    """Every k-gram hash of the base code (no winnowing: all of them are removed)."""
    everything = []
    for text in texts:
        blanked = blank_docstrings(normalise(text))
        for start, end in definitions(blanked):
            code, _offsets = winnow.filter_code(blanked[start:end], LEXED_AS, "python")
            if len(code) >= k:
                everything.append(kgram_hashes(code, k))
    return np.unique(np.concatenate(everything)) if everything else np.array([], dtype=np.int64)
