"""`grader gradebook --gradebook DIR [--course FILE]`: grades.csv, report.html and the files
of the students whose adjustment changed, rebuilt from the rows kept in DIR, the course file
(late policy, extensions) and DIR/overrides.json. Nothing is graded. `grader override` ends
with the same rebuild (`rebuild`).
"""
import os
import sys

from .. import course as courses
from .. import overrides as ledger
from ..report import gradebook
from ..report.book import Gradebook
from ..report.gradebook import recorded_assignment
from ..textsafety import safe_text
from .arguments import course_argument, gradebook_argument

NAME = "gradebook"


def add_parser(commands):
    parser = commands.add_parser(
        NAME, help="rebuild grades.csv and report.html from the kept rows (no grading)",
        description="Rebuild DIR/grades.csv, DIR/report.html and the feedback of students whose "
                    "adjustment changed, from the rows kept in DIR, the course file (late "
                    "policy, extensions) and DIR/overrides.json. Nothing is graded.")
    gradebook_argument(parser)
    course_argument(parser)
    return parser


def assignment_name(args):
    """The assignment the gradebook's rows were graded for, unless --assignment names one."""
    return args.kit_assignment or recorded_assignment(args.out)


def fail(command, message):
    print(f"grader {command}: {safe_text(str(message), 1000)}", file=sys.stderr)
    return 2


def rows_of(out_dir):
    """The rows kept in the gradebook folder out_dir (OverrideError when there are none)."""
    if not os.path.isdir(out_dir):
        raise ledger.OverrideError(f"--out {out_dir} is not a gradebook folder (the --out of grader grade)")
    rows = gradebook.load_records(out_dir)
    if not rows:
        raise ledger.OverrideError(f"no graded rows in {out_dir}")
    return list(rows.values())


def open_book(out_dir, course_file=None):
    """The gradebook folder out_dir (report/book.py): its rows (OverrideError, said first,
    when there are none), its course file and its overrides ledger, read once."""
    rows = rows_of(out_dir)
    return Gradebook(out_dir, {row["name"]: row for row in rows},
                     courses.find(out_dir, course_file), ledger.load(out_dir))


def rebuild(book, stream=None, assignment=None):
    """Rebuild the Gradebook's grades.csv, report.html (titled with `assignment`'s title) and
    students' adjustments; prints one line."""
    final, changed = book.rebuild(None, assignment)
    for line in book.orphans():
        print(f"warning: {line}", file=sys.stderr)
    for note in courses.notes(final):
        print(courses.say(note), file=stream or sys.stdout)
    late = sum(r.get("late") is True for r in final)
    adjusted = sum(bool(r.get("penalty") or r.get("overrides")) for r in final)
    print(f"Wrote {book.out_dir}/grades.csv: {len(final)} rows, {late} late, {adjusted} adjusted "
          f"(penalty or override), {len(ledger.active(book.entries))} override(s) in effect; "
          f"{changed} student(s)' feedback rewritten"
          + ("" if book.policy else "; no course file, so no late policy"),
          file=stream or sys.stdout)
    return final


def run(args):
    try:
        rebuild(open_book(args.out, args.course), assignment=args.kit_assignment)
    except (courses.CourseError, ledger.OverrideError) as error:
        return fail(NAME, error)
    return 0
