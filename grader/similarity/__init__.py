"""`grader similarity`: which submissions of a class are alike beyond the book's code.

    code.py         the code `grader grade` keeps per row, read back as hostile text
    base.py         the base code that never counts (skeleton, public tests, solution, book)
    fingerprint.py  copydetect's winnowing, one definition at a time, base removed
    compare.py      every pair's score and shared passages; clusters
    sources.py      the gradebook's rows and their code
    page.py         similarity.csv and similarity.html
    command.py      the verb

A review aid, never a verdict: nothing here changes a grade or runs submitted code.
copydetect is the optional extra `similarity` (pip install -e '.[similarity]'); only this
verb needs it.
"""

# A pair is flagged when its score is at least the threshold and it shares at least
# MIN_SHARED characters of normalised code beyond the base. Measured on tests/similarity/
# (README "Similarity"): the disguised copies scored 0.71 and up and shared 439 characters
# or more; independent pairs scored 0.24 at most but shared up to 140 characters by
# coincidence (generic lines), which a submission that is nearly all the book's code can
# turn into a high score: hence the floor.
DEFAULT_THRESHOLD = 0.5
MIN_SHARED = 200
