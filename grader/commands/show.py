"""`grader show STUDENT --gradebook DIR`: one student's final row from the gradebook: each
part (and its override), the submission time and the zone it was read in, lateness and
penalty, overrides with their reasons, diagnoses and flags. STUDENT: a student id or a
submission name as in grades.csv (exactly one row, as an override names it).
"""
import json
import os

from .. import course as courses
from .. import overrides as ledger
from ..report import gradebook
from ..report.console import adjustment_notes, score_cell
from ..textsafety import safe_text
from .arguments import course_argument, gradebook_argument
from .gradebook import fail, rows_of

NAME = "show"


def add_parser(commands):
    parser = commands.add_parser(
        NAME, help="print one student's result: parts, penalties, overrides and diagnoses",
        description="Print one student's final row from the gradebook: each part (and its "
                    "override), the submission time and the zone it was read in, lateness and "
                    "penalty, overrides with their reasons, diagnoses and flags. STUDENT: a "
                    "student id or a submission name as in grades.csv (exactly one row).")
    parser.add_argument("student", metavar="STUDENT")
    gradebook_argument(parser)
    course_argument(parser)
    return parser


def _results_diagnoses(out_dir, row):
    """[(part, mistake or None, text)] from the student's results.json (extra_data)."""
    folder = row.get("folder")
    if not isinstance(folder, str) or not folder or "/" in folder or folder in (".", ".."):
        return []
    path = os.path.join(out_dir, folder, "results.json")
    try:
        if os.path.islink(path) or os.path.getsize(path) > 8 * 1024 * 1024:
            return []
        with open(path, encoding="utf-8") as handle:
            listed = json.load(handle).get("extra_data", {}).get("diagnoses") or []
    except (OSError, ValueError, AttributeError):
        return []
    return [(d.get("part"), d.get("mistake"), d.get("text")) for d in listed if isinstance(d, dict)]


def show_lines(out_dir, student, course_file=None):
    """What `grader show` prints for one student: their final row, part by part."""
    rows = rows_of(out_dir)
    row = ledger.find_row(rows, student)   # exactly one row, as an override names it
    policy = courses.find(out_dir, course_file)
    final = gradebook.final_row(row, policy, ledger.active(ledger.load(out_dir)))

    def number(value):
        return "" if value is None else f"{float(value):g}"
    shown = lambda value, limit=300: safe_text(str(value or ""), limit)  # noqa: E731
    lines = [f"{shown(final.get('name'))}: {shown(final.get('student_name'))} "
             f"(student id {shown(final.get('student_id')) or 'none'}, {shown(final.get('layout'))})",
             f"  status: {shown(final.get('status'))}; final score {score_cell(final)}"
             + (f" ({'; '.join(adjustment_notes(final))})" if adjustment_notes(final) else "")]
    if final.get("reason"):
        lines.append(f"  reason: {shown(final.get('reason'), 500)}")
    changed = {o.get("part"): o for o in final.get("overrides") or []}
    lines.append("  parts:")
    for part, (score, top) in (final.get("parts") or {}).items():
        override = changed.get(part)
        lines.append(f"    {shown(part, 60)}: {number(score)}/{number(top)}"
                     + (f" (graded {number(override.get('graded'))}; override)" if override else ""))
    lines.append(f"  submitted: {shown(final.get('submitted_at')) or 'no time'}"
                 + (f" ({shown(final.get('time_source'))}; {shown(final.get('time_zone'))})"
                    if final.get("submitted_at") else "")
                 + (f"; due {shown(final.get('due'))}" if final.get("due") else ""))
    late = {True: "yes", False: "no"}.get(final.get("late"), "unknown")
    lines.append(f"  late: {late}"
                 + (f", {final.get('days_late')} day(s)" if final.get("days_late") else "")
                 + (f"; penalty -{number(final.get('penalty'))}" if final.get("penalty") else "")
                 + (" (on the LMS's late mark)" if final.get("late_basis") == "lms-flag" else ""))
    for override in final.get("overrides") or []:
        lines.append(f"  override: {shown(override.get('part'), 60)} "
                     f"{number(override.get('graded'))} -> {number(override.get('points'))} "
                     f"({shown(override.get('reason'), 500)}; {shown(override.get('who'), 60)}, "
                     f"{shown(override.get('time'), 40)})")
    diagnoses = _results_diagnoses(out_dir, final)
    for part, mistake, text in diagnoses[:20]:
        first = (shown(text, 2000).strip().splitlines() or [""])[0]
        lines.append(f"  diagnosis: {shown(part, 60)}: {shown(mistake, 100) or 'observed'}: {first}")
    if not diagnoses and final.get("diagnoses"):
        lines.append("  diagnoses: " + " ".join(shown(d, 100) for d in final["diagnoses"]))
    for flag in list(final.get("flags") or []) + list(final.get("review") or []):
        lines.append(f"  flag: {shown(flag, 500)}")
    lines.append(f"  source: {shown(final.get('source'), 500)}")
    lines.append(f"  feedback: {os.path.join(out_dir, shown(final.get('folder'), 200), 'feedback.txt')}")
    return lines


def run(args):
    try:
        for line in show_lines(args.out, args.student, args.course):
            print(line)
    except (courses.CourseError, ledger.OverrideError) as error:
        return fail(NAME, error)
    return 0
