"""A plain-text feedback file per submission, for courses that hand feedback out themselves.

    feedback_text(result, feedback, module_file)   # feedback: "full" (default) | "summary" | "score"
                                                   # module_file: the assignment's <module>.py

The file opens with the summary (summary.py: one block per part, its score and, when it
lost points, what is wrong and an experiment), then the notes, then — at `full` only — the
failing cases: the same failure in several cases of a part is said once, with a count and
the other cases' names (grouped by the catalog mistakes the result equals, else by the
message's first line with numbers and bracketed values normalised). Passing cases are one
count per part in the summary. A file that did not import is one message and one line for
the cases that did not run; a function the student's file does not define is said once. Cases
passed as error carried forward are said in their part (carried.py), never counted as
passed without it.

`summary` shows the summary and notes only (no case inputs, expected values or what the
code printed); `score` shows the scores only. The file is held to MAX_LINES lines and
MAX_BYTES bytes, the failing cases cut first with a visible "... N more failing cases not
shown" line (files.write_text also caps it at FEEDBACK_BYTES when it is written).
"""
import re

from ..i18n import N_, _, case_title
from ..textsafety import safe_text
from . import summary as summaries
from ..files import MESSAGE_CHARS

MAX_LINES = 120
MAX_BYTES = 12 * 1024
CASE_LINES = 12          # lines of one failing case's message
LINE_CHARS = 400         # characters of one of those lines
NAMES_SHOWN = 6          # names listed in "(and N more cases like this: ...)"

_BLANK_RUN = re.compile(r"\n[ \t]*\n(?:[ \t]*\n)+")  # three or more line breaks: two
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|\bnan\b|\binf\b")
_BRACKETED = re.compile(r"\([^()]*\)|\[[^\[\]]*\]")


def group_key(test):
    """Failures with the same key are "the same failure": the catalog mistakes the result
    equals, else the first line of the message with bracketed values and numbers dropped."""
    if test.mistakes:
        return ("mistakes",) + tuple(sorted(test.mistakes))
    line = summaries.first_line(test.message, 2000)
    previous = None
    while previous != line:
        previous, line = line, _BRACKETED.sub("()", line)
    return ("line", _NUMBER.sub("#", line))


def failure_groups(tests):
    """[[test, ...], ...]: the failed tests grouped by group_key, in order of first failure."""
    groups = {}
    for test in tests:
        groups.setdefault(group_key(test), []).append(test)
    return list(groups.values())


def _message_lines(test):
    message = _BLANK_RUN.sub("\n\n", safe_text(test.message or "", MESSAGE_CHARS)).strip()
    lines = [summaries._clip(line.rstrip(), LINE_CHARS) if len(line) > LINE_CHARS else
             line.rstrip() for line in message.splitlines()]
    if len(lines) > CASE_LINES:
        lines = lines[:CASE_LINES] + [_("[... {count} more lines]").format(
            count=len(lines) - CASE_LINES)]
    return ["    " + line for line in lines]


def _mark(test):
    marks = {"failed": N_("FAIL"), "grader-error": N_("GRADER ERROR")}
    return _(marks[test.status]) if test.status in marks else "?"


def _group_lines(group):
    first = group[0]
    lines = [f"[{_mark(first)}] {case_title(safe_text(first.name, 500))} "
             f"({first.score:g}/{first.max_score:g})"] + _message_lines(first)
    if len(group) > 1:
        names = "; ".join(summaries.case_name(t) for t in group[1:1 + NAMES_SHOWN])
        more = _("; ... {count} others").format(count=len(group) - 1 - NAMES_SHOWN) \
            if len(group) > 1 + NAMES_SHOWN else ""
        lines.append(_("    (and {count} more cases like this: {names}{more})").format(
            count=len(group) - 1, names=names, more=more))
    return lines


def _case_sections(result, whole, module_file):
    """[(lines, cases)] of the failing cases, each a block with the number of cases it covers."""
    ran = [t for t in result.tests if t.status != "skipped"]
    failing = [t for t in ran if t.status != "passed"]
    if whole is not None:
        if not failing:
            return []
        if whole[0] == "same":
            return [([_("Failed: {count} of {total} cases, with the message above (the GPU "
                        "part's because the others fail).").format(count=len(failing),
                                                                    total=len(ran))], 0)]
        why = {"intake": N_("the submission could not be read"),
               "grader": N_("the grader failed"),
               "import": N_("{module} could not be imported")}[whole[0]]
        return [([_("Not run: {count} of {total} cases, because {why} (see above).").format(
            count=len(failing), total=len(ran), why=_(why).format(module=module_file))], 0)]
    missing = summaries.missing_names(result)
    stopped = [t for t in failing if summaries.needs_missing(t, missing)]
    sections = []
    if stopped:
        needed = []
        for test in stopped:
            needed += [n for n in summaries.needs_missing(test, missing) if n not in needed]
        parts = ", ".join(dict.fromkeys(t.part for t in stopped))
        sections.append(([_("Not run: {count} cases ({parts}), because {module} defines "
                            "no {names}.").format(count=len(stopped), parts=parts,
                                                  names=summaries._names(needed),
                                                  module=module_file)], 0))
    rest = [t for t in failing if t not in stopped]
    for part in dict.fromkeys(t.part for t in rest):
        for group in failure_groups([t for t in rest if t.part == part]):
            sections.append((_group_lines(group), len(group)))
    return sections


def _fits(lines, extra, max_lines, max_bytes):
    size = sum(len(line.encode("utf-8")) + 1 for line in lines + extra)
    return len(lines) + len(extra) <= max_lines and size <= max_bytes


def feedback_text(result, feedback="full", max_lines=MAX_LINES, max_bytes=MAX_BYTES,
                  module_file=None):
    """feedback.txt for one SubmissionResult; module_file: the file the student hands in
    (the assignment's `<module>.py`; None: the default assignment's)."""
    summaries.check_level(feedback)
    module_file = summaries.student_file(module_file)
    whole = summaries.whole_file_problem(result)
    lines = [_("{name}: {score} / {max} points").format(
        name=safe_text(result.name, 200), score=f"{result.score:g}",
        max=f"{result.max_score:g}"), ""]
    if feedback == "score":
        lines += summaries.block_lines(summaries.part_summaries(result, feedback, module_file),
                                       feedback)
        if result.status != "graded":
            lines += ["", _("Status: {status}.").format(status=result.status)]
        return _finish(lines, max_lines, max_bytes)
    if whole is not None:
        lines += whole[1].splitlines() + [""]
    lines += summaries.block_lines(summaries.part_summaries(result, feedback, module_file),
                                   feedback, whole)
    notes = summaries.notes_lines(result, feedback, whole)
    if notes:
        lines += [""] + notes
    if feedback == "summary":
        lines += ["", _("(This course shows a summary of the hidden cases: their inputs and "
                        "expected values are not shown.)")]
        return _finish(lines, max_lines, max_bytes)
    sections = _case_sections(result, whole, module_file)
    if sections:
        lines += ["", _("Failing cases") if whole is None else _("Cases"), ""]
    for index, (section, _cases) in enumerate(sections):
        left = sum(cases for _lines, cases in sections[index:])
        tail = [_("... {count} more failing cases not shown").format(count=left)] if left else []
        if not _fits(lines, section + tail, max_lines, max_bytes):
            if left:
                lines += tail
            break
        lines += section
    return _finish(lines, max_lines, max_bytes)


def _finish(lines, max_lines, max_bytes):
    """The lines as text, held to the budget even when the summary alone is too long."""
    if not _fits(lines, [], max_lines, max_bytes):
        kept = []
        for line in lines:
            if not _fits(kept + [line], [_("[... the rest was cut by the grader]")],
                         max_lines, max_bytes):
                break
            kept.append(line)
        lines = kept + [_("[... the rest was cut by the grader]")]
    return "\n".join(lines) + "\n"
