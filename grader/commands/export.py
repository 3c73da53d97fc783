"""`grader export KIND --out FILE [--gradebook DIR]`: the gradebook in DIR (the `--gradebook`
of `grader grade`) as an LMS takes it. The kinds, their options and what each writes are the
platforms' (grader/platforms/: `Platform.exports`, `Platform.add_export_arguments`):
canvas and moodle write the CSV each LMS imports, canvas-comments and moodle-feedback-zip
(and moodle --with-comments) each student's feedback.

What is exported is each row's final score (gradebook.final_rows: the instructor's
overrides, then the course's late policy; `--course FILE`, default DIR/course.toml); which
rows are left out, and why, is platforms/exports.py. Every refusal is one line on stderr
and exit status 2, before anything is written.
"""
import os
import sys

from .. import course as courses
from .. import overrides as ledger
from .. import platforms
from ..platforms.exports import ExportError
from ..report.gradebook import final_rows, load_records, orphans
from ..textsafety import safe_text
from . import usage
from .arguments import course_argument

NAME = "export"


def add_parser(commands):
    kinds = platforms.export_kinds()
    parser = commands.add_parser(
        NAME, help="write the CSV an LMS imports into its gradebook, from grades in DIR",
        description="Write the gradebook of DIR (the --out of grader grade) as the CSV Canvas "
                    "(Grades > Import) or Moodle (the assignment's 'Upload grading worksheet') "
                    "imports. Rows the grader failed on, and rows without a student id, are "
                    "left out with a note.")
    parser.add_argument("lms", choices=tuple(kinds),
                        help="; ".join(export.help for export in kinds.values()))
    parser.add_argument("--out", required=True, metavar="FILE",
                        help="the CSV (or zip; canvas-comments: the folder) to write")
    parser.add_argument("--gradebook", "--from", dest="source", default="grades", metavar="DIR",
                        help="the gradebook folder (default: grades; --from is the older "
                             "spelling)")
    for platform in platforms.listed():
        platform.add_export_arguments(parser)
    parser.add_argument("--export-missing-as-zero", action="store_true",
                        help="also export 'missing work' rows (nothing gradable was found) as 0; "
                             "by default they are left out with a note, for review")
    course_argument(parser)
    return parser


def problem(args):
    """--out is what the export writes (a file, or a folder it can make); the files the
    platforms' options name are there."""
    export = platforms.export_kinds()[args.lms]
    checks = []
    if export.writes == "folder":
        checks += [lambda: usage.output_folder("--out", args.out),
                   lambda: usage.output_file("--out", os.path.join(args.out, export.first_file),
                                             make_folders=True)]
    else:
        checks.append(lambda: usage.output_file("--out", args.out))
    for platform in platforms.listed():
        for flag, dest in platform.export_inputs:
            if getattr(args, dest, None):
                checks.append(lambda flag=flag, dest=dest: usage.input_file(flag, getattr(args, dest)))
    return usage.first(*checks)


def _say(note):
    print(f"grader export: {note}", file=sys.stderr)


def _refusal(export, args):
    """Why the export cannot run as asked, before the rows are read, or None."""
    if not os.path.isdir(args.source):
        return (f"--gradebook {safe_text(args.source, 200)} is not a gradebook folder (the "
                f"--gradebook of grader grade)")
    if export.writes == "file" and os.path.isdir(args.out):
        return f"--out {safe_text(args.out, 200)} is a folder"
    if export.writes == "folder" and os.path.lexists(args.out) and not os.path.isdir(args.out):
        return (f"--out {safe_text(args.out, 200)} is a file; {export.kind} writes a folder "
                f"({export.holds})")
    return export.refusal(args, args.source)


def run(args):
    export = platforms.export_kinds()[args.lms]
    refused = _refusal(export, args)
    if refused:
        _say(refused)
        return 2
    rows = list(load_records(args.source).values())
    if not rows:
        _say(f"no graded rows in {safe_text(args.source, 200)}")
        return 2
    try:
        policy = courses.find(args.source, getattr(args, "course", None))
        entries = ledger.load(args.source)
        state = export.prepare(args, args.source)
    except (courses.CourseError, ledger.OverrideError, ExportError) as error:
        _say(safe_text(str(error), 500))
        return 2
    for line in orphans(rows, entries):
        _say(f"warning: {line}")
    print(export.write(args, args.source, final_rows(rows, policy, entries), state, _say))
    return 0
