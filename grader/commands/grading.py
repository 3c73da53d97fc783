"""One grading run (`grader grade`, `grader nbgrader`, `grader validate`): its pre-flight,
done once, in one object, before anything is graded.

    run = Run(args)                    the assignment (args.kit_assignment, loaded by the CLI)
                                       and the SuiteOptions of the command's arguments
    run.resolve(paths, layout)         who each submission is (platforms.resolve)
    run.read_gradebook(out, course)    the gradebook (report/book.py): the course file, the
                                       overrides ledger and the kept rows, read once; the
                                       batch, the console's final scores, its summary and
                                       the warnings use what was read here
    run.choose_isolation()             the sandbox's level on this machine
    run.final_rows()                   the gradebook's kept rows, with the course file and
                                       the ledger read above

Each step that finds the run cannot go on raises Refused with one line to say. The commands
that grade reach the grading machinery (grader/grade, the sandbox: `grade_batch` and its
exceptions; grader/validate) through this module, which they import when they run; the
commands that grade nothing never load it.
"""
import dataclasses

from .. import course as courses
from .. import overrides as ledger
from .. import platforms
from ..report.book import Gradebook
from ..grade import (BatchInterrupted, SuiteFailed, SuiteOptions, grade_batch,  # noqa: F401
                     student_provided)
from ..report import gradebook
from ..sandbox.isolation import IsolationUnavailable, choose
from ..sandbox.limits import Limits
from ..validate import docs_table, validate  # noqa: F401

__all__ = ["BatchInterrupted", "IsolationUnavailable", "Refused", "Run", "SuiteFailed", "docs_table",
           "grade_batch", "suite_options", "validate"]


class Refused(Exception):
    """The run cannot go on (one line: why); nothing was graded."""


def suite_options(args):
    """The SuiteOptions of a grading command's arguments (commands/arguments.py)."""
    limits = Limits(**{f.name: getattr(args, f.name) for f in dataclasses.fields(Limits)})
    return SuiteOptions(hidden_tests=args.hidden_tests, solution=args.solution,
                        isolation=args.isolation, limits=limits, no_gpu=args.no_gpu,
                        lang=getattr(args, "lang", "en"),
                        carry_forward=getattr(args, "carry_forward", "on"),
                        assignment=getattr(args, "kit_assignment", None))


class Run:
    def __init__(self, args):
        self.assignment = args.kit_assignment
        self.options = suite_options(args)
        self.book = None          # the gradebook (report/book.py), once read
        self.level = None         # the isolation level chosen

    @property
    def policy(self):
        """The course file (None: none)."""
        return self.book.policy if self.book else None

    def resolve(self, paths, layout="auto"):
        """The Batch of the paths given: one Submission per student (platforms/)."""
        return platforms.resolve(paths, layout, module=self.assignment.module,
                                 earlier=student_provided(self.assignment))

    def read_gradebook(self, out_dir, course_file=None):
        """The course file (`course_file`, else out_dir/course.toml), out_dir's overrides
        ledger and its kept rows, read once for the whole run (the batch takes them:
        grade_batch's `book`)."""
        try:
            self.book = Gradebook.open(out_dir, course_file)
        except (courses.CourseError, ledger.OverrideError) as error:
            raise Refused(str(error)) from None
        return self.policy

    def choose_isolation(self):
        """The isolation level the options ask for, as this machine offers it."""
        try:
            self.level = choose(self.options.isolation)
        except IsolationUnavailable as error:
            raise Refused(str(error)) from None
        return self.level

    def final_rows(self, results=()):
        """The final rows (overrides, then the late policy) of the gradebook's rows; for
        `results`, in their order, a row made from the result where none was kept."""
        kept = self.book.rows
        rows = [kept.get(r.name) or gradebook.safe_record(r) for r in results] if results \
            else None
        return self.book.final_rows(rows)

    def orphans(self):
        """One line per override in effect that applies to no kept row."""
        return self.book.orphans()
