"""`grader similarity`: which submissions of a class are alike beyond the book's code.

    code.py         the code `grader grade` keeps per row and what intake recorded of it
                    (a notebook's cells, or a file), read back as hostile text
    base.py         the base code that never counts (skeleton, public tests, solution, book)
    normal.py       the code in one canonical spelling, with Python's parser
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
# MIN_SHARED characters of normalised code beyond the base. Measured (docs/how-to/similarity.md,
# bench/similarity.py): 1,550 disguised copies scored 0.82 and up and shared 256 characters
# or more; of the independent pairs, those sharing 200 characters or more scored 0.46 at
# most, and those scoring 0.5 or more shared 45 at most (a few generic or edited lines,
# which a submission that is nearly all the book's code turns into a high score: hence the
# floor).
DEFAULT_THRESHOLD = 0.5
MIN_SHARED = 200
