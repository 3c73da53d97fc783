"""The options several commands share, each added the same way wherever it appears, and
what they are read into: the gradebook folder, the course file, the disclosure of the
feedback, the hidden suite and its limits (read into SuiteOptions by commands/run.py), the
assignment (`load_assignment`) and the language.
"""
import dataclasses

from .. import assignment, i18n
from ..report.summary import LEVELS, VISIBILITIES
from ..sandbox.isolation import CHOICES
from ..sandbox.limits import Limits
from . import usage



def gradebook_argument(parser, what="the gradebook folder"):
    """--gradebook DIR: the one name of the gradebook folder (--out: its older spelling)."""
    parser.add_argument("--gradebook", "--out", dest="out", required=True, metavar="DIR",
                        help=f"{what} (--out is the older spelling)")


def course_argument(parser):
    parser.add_argument("--course", default=None, metavar="FILE",
                        help="the course file: due date, extensions, late policy (default: "
                             "course.toml in the gradebook folder, when there is one)")


def language_argument(parser, what):
    parser.add_argument("--lang", choices=i18n.languages(), default=i18n.ENGLISH, help=what)


def isolation_argument(parser, help=None):
    parser.add_argument("--isolation", default="auto", choices=CHOICES, help=help)


def disclosure_arguments(parser):
    parser.add_argument("--feedback", default="full", choices=LEVELS,
                        help="how much of a hidden case students see in feedback.txt and "
                             "results.json: full (inputs, expected values, differences), "
                             "summary (each part's diagnosis and an experiment only) or score "
                             "(the scores only); default full")
    parser.add_argument("--visibility", default="visible", choices=VISIBILITIES,
                        help="Gradescope's visibility of each test in results.json (the total "
                             "score stays visible): after_due_date keeps the hidden suite from "
                             "students who may resubmit until the deadline; default visible")


def suite_arguments(parser):
    """The hidden suite a grading command runs, its isolation, its limits and the language
    students read."""
    parser.add_argument("--solution", default=None,
                        help="the instructor's solution (default: the assignment's)")
    parser.add_argument("--hidden-tests", default=None,
                        help="the hidden suite's folder (default: tests_hidden/<assignment>/)")
    isolation_argument(parser, "auto: the best this machine allows; strict: refuse to grade "
                               "without Linux namespaces; or one level (default auto)")
    parser.add_argument("--no-gpu", action="store_true", help="grade as if there were no GPU")
    language_argument(parser, "language of what students read (feedback.txt, results.json): "
                              "en (default), or a language of the grader's catalogs "
                              "(grader/locale: zh, 中文)")
    limits = parser.add_argument_group("limits for each submission")
    for field in dataclasses.fields(Limits):
        limits.add_argument("--" + field.name.replace("_", "-"), type=field.type
                            if field.type in (int, float) else float, default=field.default,
                            help=f"(default {field.default})")


def suite_problem(args):
    """The first mistake in the suite's arguments (and --jobs), or None."""
    return usage.first(
        lambda: args.solution is not None and usage.input_file("--solution", args.solution),
        lambda: args.hidden_tests is not None and usage.hidden_tests(args.hidden_tests),
        lambda: getattr(args, "jobs", 1) < 1 and f"--jobs {args.jobs}: give 1 or more",
        lambda: usage.limits(args))


def assignment_argument(parser):
    """--assignment NAME, for a command that has no --assignment of its own (export's is the
    Canvas column): the kit's only assignment, else the one declared `default = true`."""
    if "--assignment" in parser._option_string_actions:
        return
    parser.add_argument("--assignment", metavar="NAME", default=None, dest="kit_assignment",
                        help="which assignment (tests_hidden/NAME/assignment.toml); default: "
                             "the kit's only one, else the one whose assignment.toml says "
                             "default = true")


def load_assignment(args, name=None):
    """Load the assignment `name` (None: the kit's only one, else the default) into
    args.kit_assignment and fill the suite's paths left to it; an error message, or None."""
    try:
        args.kit_assignment = assignment.load(name)
    except assignment.AssignmentError as error:
        return str(error)
    if getattr(args, "solution", "") is None:
        args.solution = args.kit_assignment.solution
    if getattr(args, "hidden_tests", "") is None:
        args.hidden_tests = args.kit_assignment.hidden_tests
    return None
