"""`grader gradebook` and `grader override`: the gradebook rebuilt from its kept rows, with
the course file and the overrides ledger, without grading anything.

    grader gradebook --out DIR [--course FILE]
    grader override --out DIR STUDENT PART POINTS --reason "..." [--allow-bonus]
    grader override --out DIR --remove STUDENT PART [--reason "..."]
    grader override --out DIR --import overrides.csv [--allow-bonus]
    grader override --out DIR --list
    grader show STUDENT --out DIR

Each change to the ledger rebuilds the gradebook at once (grades.csv, report.html and the
files of the students whose adjustment changed).
"""
import os
import sys

from . import course as courses
from . import overrides as ledger
from .report import gradebook
from .report.rebuild import rebuild as rebuild_gradebook
from .textsafety import safe_text


def _fail(command, message):
    print(f"grader {command}: {safe_text(str(message), 1000)}", file=sys.stderr)
    return 2


def _rows(out_dir):
    if not os.path.isdir(out_dir):
        raise ledger.OverrideError(f"--out {out_dir} is not a gradebook folder (the --out of grader grade)")
    rows = gradebook.load_records(out_dir)
    if not rows:
        raise ledger.OverrideError(f"no graded rows in {out_dir}")
    return list(rows.values())


def rebuild(out_dir, course_file=None, stream=None, assignment=None):
    """Rebuild DIR's grades.csv, report.html (titled with `assignment`'s title) and students'
    adjustments; prints one line."""
    rows = _rows(out_dir)
    policy = courses.find(out_dir, course_file)
    entries = ledger.load(out_dir)
    final, changed = rebuild_gradebook(out_dir, rows, None, policy, entries, assignment)
    for line in gradebook.orphans(rows, entries):
        print(f"warning: {line}", file=sys.stderr)
    for note in courses.notes(final):
        print(courses.say(note), file=stream or sys.stdout)
    late = sum(r.get("late") is True for r in final)
    adjusted = sum(bool(r.get("penalty") or r.get("overrides")) for r in final)
    print(f"Wrote {out_dir}/grades.csv: {len(final)} rows, {late} late, {adjusted} adjusted "
          f"(penalty or override), {len(ledger.active(entries))} override(s) in effect; "
          f"{changed} student(s)' feedback rewritten"
          + ("" if policy else "; no course file, so no late policy"),
          file=stream or sys.stdout)
    return final


def gradebook_main(args):
    try:
        rebuild(args.out, args.course, assignment=getattr(args, "kit_assignment", None))
    except (courses.CourseError, ledger.OverrideError) as error:
        return _fail("gradebook", error)
    return 0


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


def override_main(args):
    out_dir = args.out
    try:
        if args.list:
            if args.target or args.remove or args.import_file:
                return _fail("override", "--list takes no other arguments")
            if not os.path.isdir(out_dir):
                return _fail("override", f"--out {out_dir} is not a gradebook folder")
            return _list(out_dir)
        rows = _rows(out_dir)
        courses.find(out_dir, args.course)  # a broken course file is said before anything
        if args.import_file:
            if args.target or args.remove:
                return _fail("override", "--import takes no STUDENT PART POINTS")
            entries = ledger.read_import(args.import_file, rows, args.allow_bonus)
            said = f"imported {len(entries)} override(s)"
        elif args.remove:
            if len(args.target) != 2:
                return _fail("override", "--remove takes STUDENT PART")
            student, part = args.target
            current = ledger.active(ledger.load(out_dir))
            if (student, part) in current:  # by the ledger's own key: also when no row is left
                entry = dict(current[(student, part)], action="remove", who=ledger.who(),
                             reason=args.reason or "", time=ledger.now())
                entry.pop("points", None)
            else:
                entry = ledger.entry_for(rows, student, part, None, args.reason or "",
                                         action="remove")
            if (entry["student"], entry["part"]) not in current:
                return _fail("override", f"{safe_text(student, 100)} has no override of "
                                         f"{safe_text(part, 100)} in effect (see --list)")
            entries, said = [entry], f"removed the override of {entry['part']} for {entry['student']}"
        else:
            if len(args.target) != 3:
                return _fail("override", "give STUDENT PART POINTS --reason \"...\" "
                                         "(or --remove, --import, --list)")
            student, part, points = args.target
            entry = ledger.entry_for(rows, student, part, points, args.reason,
                                     args.allow_bonus)
            entries = [entry]
            said = (f"{entry['student']} {entry['part']}: {entry['points']:g} "
                    f"({entry['reason']})")
        ledger.append(out_dir, entries)
        print(f"grader override: {said}")
        rebuild(out_dir, args.course, assignment=getattr(args, "kit_assignment", None))
    except (courses.CourseError, ledger.OverrideError) as error:
        return _fail("override", error)
    return 0


def _results_diagnoses(out_dir, row):
    """[(part, mistake or None, text)] from the student's results.json (extra_data)."""
    import json
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
    rows = _rows(out_dir)
    row = ledger.find_row(rows, student)   # exactly one row, as an override names it
    policy = courses.find(out_dir, course_file)
    final = gradebook.final_row(row, policy, ledger.active(ledger.load(out_dir)))
    from .report.console import adjustment_notes, score_cell

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
                 + (f" (on the LMS's late mark)" if final.get("late_basis") == "lms-flag" else ""))
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


def show_main(args):
    try:
        for line in show_lines(args.out, args.student, args.course):
            print(line)
    except (courses.CourseError, ledger.OverrideError) as error:
        return _fail("show", error)
    return 0
