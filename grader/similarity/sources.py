"""The submissions of a gradebook folder, as code to compare: who each is, and its text.

A row of DIR (gradebook.load_records: DIR/<folder>/gradebook-row.json) names the student
(`student_id`, from the LMS's own fields, never from text the student chose) and its
folder, where `grader grade` kept the code it graded (code.CODE_FILE) and what intake
recorded of it (code.RECORD_FILE: a notebook's cells, or a plain file). A row without code
(missing work, an upload intake refused, a row graded before the kit kept code) or with
code over the cap is listed as skipped, with the reason. Code that calls exec, eval or the
like is noted (HIDDEN_CODE: what it runs is a string, which no token-based comparison
sees into).
"""
import dataclasses
import os
import re

from ..i18n import _
from ..report import gradebook
from ..textsafety import safe_text
from .code import MAX_CODE_BYTES, Unreadable, read_code


# Code built at run time from strings or bytes is invisible to any token-based comparison
# (a string is one token): such submissions are listed for the instructor to read.
# (`model.eval()` and `re.compile(...)` are attribute calls, not these)
HIDDEN_CODE = re.compile(r"(?<![\w.])(exec|eval|compile|__import__)\s*\(|"
                         r"\b(marshal\.loads|pickle\.loads|b64decode|codecs\.decode)\s*\(")


@dataclasses.dataclass
class Source:
    key: str            # the row's name in the gradebook (unique in DIR)
    student_id: str     # "" when the layout gives none (an anonymous Canvas download)
    name: str           # the student's name as the LMS gave it, else the submission's
    folder: str
    text: str = ""      # the code as the student wrote it (a notebook's cells)
    code: object = None  # the code.Code read back (its blocks are what is compared)
    hidden: list = dataclasses.field(default_factory=list)  # calls that build code from data

    @property
    def label(self):
        """How the pages name it: the student id, else the folder, marked."""
        return self.student_id or f"(no id) {self.folder}"


def load(out_dir, limit=MAX_CODE_BYTES):
    """([Source with text], [(Source, reason skipped)]) for every kept row of `out_dir`."""
    found, skipped = [], []
    for key, row in sorted(gradebook.load_records(out_dir).items()):
        source = Source(key=safe_text(key, 400),
                        student_id=safe_text(row.get("student_id") or "", 100),
                        name=safe_text(row.get("student_name") or row.get("name") or "", 200),
                        folder=safe_text(row.get("folder") or "", 200))
        if row.get("status") == "missing work":
            skipped.append((source, _("missing work: nothing gradable was handed in")))
            continue
        try:
            source.code = read_code(os.path.join(out_dir, row["folder"]), limit)
            source.text = source.code.text
        except Unreadable as why:
            skipped.append((source, str(why)))
            continue
        source.hidden = sorted({m.group(1) or m.group(2) for m in HIDDEN_CODE.finditer(source.text)})
        found.append(source)
    return found, skipped
