"""`grader override --gradebook DIR ...`: an instructor's change to a score, recorded in
DIR/overrides.json (an append-only ledger: time, who, reason), then the gradebook rebuilt
(commands/gradebook.py). The graded row is never changed: removing the override restores the
graded score.

    grader override --gradebook DIR STUDENT PART POINTS --reason "..." [--allow-bonus]
    grader override --gradebook DIR --remove STUDENT PART [--reason "..."]
    grader override --gradebook DIR --import overrides.csv [--allow-bonus]
    grader override --gradebook DIR --list
"""
import os

from .. import course as courses
from .. import overrides as ledger
from ..textsafety import safe_text
from .arguments import course_argument, gradebook_argument
from .gradebook import assignment_name, fail, open_book, rebuild

NAME = "override"
__all__ = ["NAME", "add_parser", "assignment_name", "run"]


def add_parser(commands):
    parser = commands.add_parser(
        NAME, help="change a student's part or total score, with a reason (kept in "
                   "DIR/overrides.json; survives regrades)",
        description="Record an instructor's change to a score in DIR/overrides.json (an "
                    "append-only ledger: time, who, reason) and rebuild the gradebook. "
                    "STUDENT: a student id or a submission name as in grades.csv; PART: a part "
                    "name, or total. The graded row is never changed: removing the override "
                    "restores the graded score.")
    parser.add_argument("target", nargs="*", metavar="STUDENT PART [POINTS]")
    gradebook_argument(parser)
    parser.add_argument("--reason", default=None, help="why (the student reads it)")
    parser.add_argument("--remove", action="store_true",
                        help="end the override of STUDENT PART (the graded score is back)")
    parser.add_argument("--import", dest="import_file", metavar="CSV", default=None,
                        help="record every line of a CSV with columns student,part,points,reason "
                             "(all or none)")
    parser.add_argument("--list", action="store_true", help="show the ledger")
    parser.add_argument("--allow-bonus", action="store_true",
                        help="allow more points than the part's (or the total's) maximum")
    course_argument(parser)
    return parser


def _list(out_dir):
    entries = ledger.load(out_dir)
    current = ledger.active(entries)
    print(f"{len(current)} override(s) in effect, {len(entries)} entries in "
          f"{os.path.join(out_dir, ledger.FILE)}:")
    for entry in entries:
        points = f" {entry['points']:g}" if entry["action"] == "set" else ""
        effect = " (in effect)" if current.get((entry["student"], entry["part"])) is entry else ""
        print(f"  {entry['time']} {entry['who']}: {entry['action']} {entry['student']} "
              f"{entry['part']}{points}: {entry['reason']}{effect}")
    return 0


def run(args):
    out_dir = args.out
    try:
        if args.list:
            if args.target or args.remove or args.import_file:
                return fail("override", "--list takes no other arguments")
            if not os.path.isdir(out_dir):
                return fail("override", f"--out {out_dir} is not a gradebook folder")
            return _list(out_dir)
        book = open_book(out_dir, args.course)  # a broken course file is said before anything
        rows = list(book.rows.values())
        if args.import_file:
            if args.target or args.remove:
                return fail("override", "--import takes no STUDENT PART POINTS")
            entries = ledger.read_import(args.import_file, rows, args.allow_bonus)
            said = f"imported {len(entries)} override(s)"
        elif args.remove:
            if len(args.target) != 2:
                return fail("override", "--remove takes STUDENT PART")
            student, part = args.target
            current = ledger.active(book.entries)
            if (student, part) in current:  # by the ledger's own key: also when no row is left
                entry = dict(current[(student, part)], action="remove", who=ledger.who(),
                             reason=args.reason or "", time=ledger.now())
                entry.pop("points", None)
            else:
                entry = ledger.entry_for(rows, student, part, None, args.reason or "",
                                         action="remove")
            if (entry["student"], entry["part"]) not in current:
                return fail("override", f"{safe_text(student, 100)} has no override of "
                                         f"{safe_text(part, 100)} in effect (see --list)")
            entries, said = [entry], f"removed the override of {entry['part']} for {entry['student']}"
        else:
            if len(args.target) != 3:
                return fail("override", "give STUDENT PART POINTS --reason \"...\" "
                                         "(or --remove, --import, --list)")
            student, part, points = args.target
            entry = ledger.entry_for(rows, student, part, points, args.reason,
                                     args.allow_bonus)
            entries = [entry]
            said = (f"{entry['student']} {entry['part']}: {entry['points']:g} "
                    f"({entry['reason']})")
        book.append(entries)
        print(f"grader override: {said}")
        rebuild(book, assignment=args.kit_assignment)
    except (courses.CourseError, ledger.OverrideError) as error:
        return fail("override", error)
    return 0


