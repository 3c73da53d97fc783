"""The class's similarity report (`grader similarity --from DIR [--threshold T]`:
commands/similarity.py).

`run` reads the code `grader grade` kept in the gradebook DIR (a merged one too), compares every
pair with the base code removed, writes DIR/similarity.csv and DIR/similarity.html, and
writes DIR/report.html again (the same rows, course file and overrides as `grader
gradebook`; grades.csv and the students' files are not touched) so that it links the page.
No grade changes; nothing is run.
"""
import os
import time

from .. import course as courses
from .. import i18n
from .. import overrides as ledger
from ..i18n import _
from ..report import gradebook
from ..report import html as pages
from ..textsafety import safe_text
from . import DEFAULT_THRESHOLD, MIN_SHARED, base, page, sources


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
    # copydetect (the similarity extra): imported only when a class is compared
    from . import compare, fingerprint
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
