"""`grader similarity --from DIR [--threshold T]`: the class's similarity report.

Reads the code `grader grade` kept in the gradebook DIR (a merged one too), compares every
pair with the base code removed, writes DIR/similarity.csv and DIR/similarity.html, and
writes DIR/report.html again (the same rows, course file and overrides as `grader
gradebook`; grades.csv and the students' files are not touched) so that it links the page.
No grade changes; nothing is run.
"""
import os
import sys
import time

from .. import course as courses
from .. import i18n
from .. import overrides as ledger
from ..i18n import _
from ..report import gradebook
from ..report import html as pages
from ..textsafety import safe_text
from . import DEFAULT_THRESHOLD, MIN_SHARED



def _count(n, noun):
    """The console's English: "1 pair", "2 pairs"."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def threshold_value(text):
    """argparse type: a score from 0 to 1."""
    import argparse
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"{text} is not a score above 0 and at most 1")
    return value


def add_parser(commands):
    parser = commands.add_parser(
        "similarity", help="which submissions are alike beyond the book's code: "
                           "DIR/similarity.html and .csv (a review aid; no grade changes)",
        description="Compare the code of every two submissions of the gradebook DIR with "
                    "copydetect, the skeleton, public tests, solution and the book's own code "
                    "removed as base code; write DIR/similarity.csv (every pair) and "
                    "DIR/similarity.html (flagged pairs side by side, clusters), linked from "
                    "report.html. A review aid, never a verdict: no grade changes.")
    parser.add_argument("--from", dest="source", default="grades", metavar="DIR",
                        help="the gradebook folder (the --out of grader grade; default grades)")
    parser.add_argument("--threshold", type=threshold_value, default=DEFAULT_THRESHOLD,
                        metavar="T", help="flag pairs scoring at least T (0 to 1; default "
                                          f"{DEFAULT_THRESHOLD:g})")
    return parser


def run(out_dir, threshold=DEFAULT_THRESHOLD, assignment=None):
    """Compare and write both files; returns (pairs, clusters, sources, skipped).
    assignment: whose base code never counts (base.py; None: the default assignment)."""
    language = i18n.language()   # the page and its reasons speak the class's language
    try:
        i18n.set_language(pages.class_language(list(gradebook.load_records(out_dir).values()),
                                               out_dir))
        return _run(out_dir, threshold, assignment)
    finally:
        i18n.set_language(language)


def _run(out_dir, threshold, assignment):
    from . import base, compare, fingerprint, page, sources
    found, skipped = sources.load(out_dir)
    texts = base.base_texts(assignment)
    hashes = fingerprint.base_hashes([text for _label, text in texts])
    prints = {}
    for source in list(found):   # one file that breaks the tokenizer costs its own row only
        try:
            prints[source.key] = fingerprint.Fingerprint(source.code, hashes)
        except (Exception, RecursionError) as error:
            found.remove(source)
            skipped.append((source, _("not compared: the tokenizer failed on it ({error}); "
                                      "read it yourself").format(error=type(error).__name__)))
    pairs = compare.all_pairs(prints, threshold)
    groups = compare.clusters(pairs)
    by_key = {s.key: s for s in found}
    settings = {"threshold": threshold, "min_shared": MIN_SHARED, "k": fingerprint.K,
                "window": fingerprint.WINDOW, "base": [label for label, _text in texts],
                "made": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    page.write(out_dir, pairs, groups, by_key, skipped, settings)
    return pairs, groups, by_key, skipped


def relink_report(out_dir, assignment=None):
    """report.html again, as `grader gradebook` would write it (it links similarity.html
    when the file is there); None, or why it was not written."""
    if not os.path.exists(os.path.join(out_dir, "report.html")):
        return None
    try:
        rows = list(gradebook.load_records(out_dir).values())
        entries = ledger.load(out_dir)
        final = gradebook.final_rows(rows, courses.find(out_dir, None), entries)
        pages.write_report(final, out_dir, gradebook.orphans(rows, entries), assignment)
    except Exception as error:  # the report is an extra: the similarity files are written
        return f"report.html not rewritten ({safe_text(str(error), 300)}); it links the page " \
               "the next time the gradebook is built"
    return None


def main(args, stream=None):
    stream = stream or sys.stdout
    out_dir = args.source
    if not os.path.isdir(out_dir) or not gradebook.load_records(out_dir):
        print(f"grader similarity: --from {safe_text(out_dir, 300)} is not a graded gradebook "
              "folder (the --out of grader grade)", file=sys.stderr)
        return 2
    try:
        import copydetect  # noqa: F401  (the optional extra)
    except ImportError:
        print("grader similarity: needs copydetect: pip install -e '.[similarity]'",
              file=sys.stderr)
        return 2
    pairs, groups, found, skipped = run(out_dir, args.threshold,
                                        getattr(args, "kit_assignment", None))
    flagged = sum(p.flagged for p in pairs)
    big = sum(len(g) > 2 for g in groups)
    print(f"Wrote {out_dir}/similarity.html and similarity.csv: {_count(len(found), 'submission')}, "
          f"{_count(len(pairs), 'pair')}, {flagged} flagged (score >= {args.threshold:g} and "
          f"{MIN_SHARED} shared characters), {_count(big, 'cluster')} of more than two, "
          f"{len(skipped)} skipped. A review aid: no grade changed.", file=stream)
    note = relink_report(out_dir, getattr(args, "kit_assignment", None))
    if note:
        print(f"note: {note}", file=sys.stderr)
    return 0
