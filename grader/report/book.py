"""The gradebook folder (DIR) as one object: its kept rows, its overrides ledger and its
course policy, each read once a run (`Gradebook.open`), and what derives from them: the
final rows (gradebook.final_rows), the overrides that apply to no row, and the rebuilt
grades.csv, report.html and students' adjustments (rebuild.py).

    book = Gradebook.open(out_dir, course_file)   CourseError, OverrideError: nothing read
    book.rows                                     {name: row} kept in DIR
    book.keep(name, row)                          a row graded now: kept in DIR and here
    book.append(entries)                          overrides recorded in DIR/overrides.json
    book.final_rows(rows)                         overrides, then the late policy
    book.rebuild(parts, assignment)               grades.csv, report.html, the adjustments

The ledger is read again only when overrides.json changed on disk since it was read (an
instructor's `grader override` during a long batch): a run that nobody interrupts reads the
course file once and the ledger once.
"""
import os

from .. import course as courses
from .. import overrides as ledger
from . import gradebook
from .rebuild import rebuild as _rebuild

LEDGER_UNREADABLE = "overrides.json does not read: no override applied"


def _ledger_state(out_dir):
    """What changes when overrides.json is written (it is replaced atomically), or None."""
    try:
        info = os.lstat(os.path.join(out_dir, ledger.FILE))
    except OSError:
        return None
    return (info.st_ino, info.st_size, info.st_mtime_ns)


class Gradebook:
    """DIR's kept rows ({name: row}), its course policy (course.Course or None) and its
    overrides ledger (the entries, oldest first)."""

    def __init__(self, out_dir, rows=None, policy=None, entries=()):
        self.out_dir = out_dir
        self.rows = dict(rows or {})
        self.policy = policy
        self.entries = list(entries)
        self._seen = _ledger_state(out_dir)

    @classmethod
    def open(cls, out_dir, course_file=None):
        """DIR's gradebook: the course (`course_file`, else DIR/course.toml, else none), the
        ledger and the kept rows, read now. CourseError or OverrideError when the course
        file or the ledger cannot be used."""
        policy = courses.find(out_dir, course_file)
        entries = ledger.load(out_dir)
        return cls(out_dir, gradebook.load_records(out_dir), policy, entries)

    def keep(self, name, row):
        """The row of the submission `name`, graded now: kept here and in
        DIR/<folder>/gradebook-row.json (a row that cannot be written still reaches
        grades.csv; a rerun grades it again)."""
        self.rows[name] = row
        try:
            gradebook.save_record(row, self.out_dir)
        except Exception:  # noqa: BLE001 - see above
            pass

    def append(self, new_entries):
        """Record `new_entries` in DIR/overrides.json (overrides.append: under its lock, the
        ledger as it is on disk then, plus these) and take the ledger so written."""
        self.entries = ledger.append(self.out_dir, new_entries)
        self._seen = _ledger_state(self.out_dir)

    def final_row(self, row):
        return gradebook.final_row(row, self.policy, ledger.active(self.entries))

    def final_rows(self, rows=None):
        """The final rows (overrides, then the late policy) of `rows` (default: every kept row)."""
        return gradebook.final_rows(list(self.rows.values()) if rows is None else rows,
                                    self.policy, self.entries)

    def orphans(self):
        """One line per override in effect that applies to no kept row."""
        return gradebook.orphans(list(self.rows.values()), self.entries)

    def rebuild(self, parts=None, assignment=None):
        """grades.csv, report.html and the students' adjustments from the kept rows (rebuild.py);
        returns (final rows, how many students' files were rewritten). The ledger is read
        again first only if overrides.json changed since it was read; if it no longer reads,
        every row says so and no override is applied."""
        rows, entries = list(self.rows.values()), self.entries
        if _ledger_state(self.out_dir) != self._seen:
            try:
                entries = self.entries = ledger.load(self.out_dir)
                self._seen = _ledger_state(self.out_dir)
            except ledger.OverrideError:
                entries = None
                rows = [dict(r, flags=list(r.get("flags") or []) + [LEDGER_UNREADABLE])
                        for r in rows]
        return _rebuild(self.out_dir, rows, parts, self.policy, entries, assignment)
