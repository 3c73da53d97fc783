"""The summary a student reads first: one block per part, its score and, when it lost
points, what is wrong and an experiment to see it.

    for block in part_summaries(result, feedback):   # feedback: "full" | "summary" | "score"
        block["part"], block["score"], block["max"], block["passed"], block["cases"]
        block["text"], block["experiment"], block["mistake"]   # "" / None when it lost nothing
        block["diagnoses"]   # [{"text", "experiment", "mistake"}]: each mistake named, and
                             # an observation of what none explains; text etc. are the first

What a block says about a part that lost points comes from the trusted process's diagnosis
of that part (result.diagnoses: grader/catalog/), when it names a catalog mistake; the
catalog's own observations (mistake None) quote a case's first line, so they are shown at
`full` only. Otherwise the block says what was observed: the
sentence of a failure message naming a known mistake, else the first line of the part's
first failing case — with `feedback="full"` only, since that line names the case's inputs;
at `summary` it is the failing cases' count and the first one's name (a description, never
inputs or expected values). A file that could not be imported (or was not graded at all)
is said once (`whole_file_problem`), not once per part, and a function the student's file
does not define is said once in its part (`missing_names`, `needs_missing`). The file is named
as the assignment names it (`student_file`: its declaration's `<module>.py`). What both
feedback.txt and results.json say besides the parts (the grader's own failure, notebook
cells that raised, intake's notes, tests that did not run, what the code printed) is
`notes_lines`.
"""
import re

from ..assignment import load as load_assignment
from ..i18n import N_, _, case_title, case_words, ngettext
from ..textsafety import safe_text
from .carried import carried_lines

LEVELS = ("full", "summary", "score")
VISIBILITIES = ("visible", "after_due_date", "after_published", "hidden")

TEXT_CHARS = 600           # a block's diagnosis or observation
EXPERIMENT_CHARS = 500     # a block's experiment
_KNOWN_MISTAKE = N_("Your result is exactly what you get if")  # compare.py's, catalog's sentence


def check_level(feedback):
    if feedback not in LEVELS:
        raise ValueError(f"feedback must be one of {', '.join(LEVELS)}, not {feedback!r}")
    return feedback


def student_file(given=None):
    """The file students hand in, as messages name it: `given`, else the default
    assignment's `<module>.py` (grader/assignment.py)."""
    if given:
        return given
    return load_assignment().module_file


def first_line(message, limit=400):
    lines = safe_text(message or "", 4000).strip().splitlines()
    return _clip(lines[0].strip() if lines else "", limit)


def _clip(text, limit):
    text = " ".join(text.split()) if "\n" not in text else text.strip()
    return text if len(text) <= limit else text[:limit - 1].rstrip() + "…"


def case_name(test):
    """A test's name without its part's prefix ("<part>: float64" -> "float64"),
    in the feedback's language."""
    name = safe_text(test.name, 500)
    prefix = f"{test.part}: "
    return case_words(name[len(prefix):]) if name.startswith(prefix) else case_title(name)


def whole_file_problem(result):
    """(kind, message) when nothing of the submission could be graded case by case —
    "intake" (could not be read), "grader" (the grader failed on all of it), "import"
    (the student's module did not import) or "same" (no case passed and nearly all failed
    with one message: said once) — else None."""
    if result.intake_error:
        return "intake", _("Your submission could not be graded: {reason}").format(
            reason=safe_text(result.intake_error, 4000))
    ran = [t for t in result.tests if t.status != "skipped"]
    if result.grader_error and ran and all(t.status == "grader-error" for t in ran):
        return "grader", _("GRADER ERROR: {error}\nThis is not your fault; your instructor "
                           "has been told.").format(error=safe_text(result.grader_error, 4000))
    load_error = (result.summary or {}).get("load_error")
    if load_error:
        return "import", safe_text(load_error, 4000)
    failed = [t for t in ran if t.status == "failed"]
    if len(failed) >= 2 and not any(t.status == "passed" for t in ran):
        messages = [safe_text(t.message or "", 4000).strip() for t in failed]
        common = max(set(messages), key=messages.count)
        # the GPU part's cases say "fix X first" when nothing ran: all but those agree
        if common and messages.count(common) >= 0.8 * len(messages):
            return "same", common
    return None


def missing_names(result):
    """Functions and classes the worker found missing in the student's module
    (summary["api"])."""
    api = (result.summary or {}).get("api") or {}
    return [safe_text(name, 100) for name, kind in api.items() if kind == "missing"][:50]


def needs_missing(test, missing):
    """The missing names a failed case stopped at (its message's first line names them)."""
    if test.status != "failed" or not missing:
        return []
    line = first_line(test.message, 2000)
    return [name for name in missing if re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", line)]


def _names(names):
    return ", ".join(f"`{n}`" for n in names)


def _observation(part_tests, failed, feedback, missing, module_file):
    """What a part without a diagnosis says: (text, mistake id or None)."""
    needed = []
    for test in failed:
        needed += [n for n in needs_missing(test, missing) if n not in needed]
    if needed and all(needs_missing(t, missing) for t in failed):
        return ngettext("{module} defines no {names}, so these cases could not run: check "
                        "the spelling (the grader looks for exactly this name).",
                        "{module} defines no {names}, so these cases could not run: check "
                        "the spelling (the grader looks for exactly these names).",
                        len(needed)).format(names=_names(needed), module=module_file), None
    for test in failed:  # a failure message that names a known mistake is a diagnosis
        for line in safe_text(test.message or "", 4000).splitlines():
            if line.strip().startswith((_KNOWN_MISTAKE, _(_KNOWN_MISTAKE))):
                mistakes = test.mistakes or [None]
                return _clip(line.strip(), TEXT_CHARS), mistakes[0]
    if feedback == "full":
        return _clip(_("{failed} of {total} cases fail; the first, \u201c{case}\u201d: "
                       "{line}").format(failed=len(failed), total=len(part_tests),
                                        case=case_name(failed[0]),
                                        line=first_line(failed[0].message, TEXT_CHARS)),
                     TEXT_CHARS), None
    return _clip(_("{failed} of {total} cases fail, for example \u201c{case}\u201d.").format(
        failed=len(failed), total=len(part_tests), case=case_name(failed[0])), TEXT_CHARS), None


def _without_part(text, part):
    """A diagnosis's text without its leading "part: " (the block's head says the part)."""
    text = text.strip()
    if text.startswith(f"{part}: "):
        text = text[len(part) + 2:]
        first = text.split(" ", 1)[0]
        if first.isalpha() and first.islower():  # never a code name: valid_lens, some_function
            text = text[:1].upper() + text[1:]
    elif text.startswith(f"{part}\uff1a"):  # the Chinese colon
        text = text[len(part) + 1:]
    return _clip(text, TEXT_CHARS)


def part_summaries(result, feedback="full", module_file=None):
    """One dict per part, in the parts' order (see the module's docstring); module_file:
    the file the student hands in (student_file)."""
    check_level(feedback)
    module_file = student_file(module_file)
    whole = whole_file_problem(result)
    diagnoses = {}  # part -> its entries: named mistakes first, then an observation
    for entry in result.diagnoses or []:
        diagnoses.setdefault(entry.get("part"), []).append(entry)
    missing = missing_names(result)
    blocks = []
    for part, (score, top) in result.by_part().items():
        part_tests = [t for t in result.tests if t.part == part and t.status != "skipped"]
        if not part_tests:  # every case skipped on this machine: said in the notes
            continue
        failed = [t for t in part_tests if t.status != "passed"]
        block = {"part": safe_text(part, 100), "score": score, "max": top,
                 "passed": len(part_tests) - len(failed), "cases": len(part_tests),
                 "text": "", "experiment": "", "mistake": None, "diagnoses": [],
                 # error carried forward (report/feedback.py): how many passed so, and why
                 "carried": sum(1 for t in part_tests if getattr(t, "carried", None)),
                 "carried_text": [] if feedback == "score" else carried_lines(part_tests)}
        if score < top and feedback != "score":
            stopped = bool(failed) and all(needs_missing(t, missing) for t in failed)
            if whole is not None:
                block["diagnoses"] = [_said(first_line(whole[1], TEXT_CHARS))]
            else:
                # diagnoses with evidence; an observation of the catalog names a case's
                # inputs (its first line), so only `full` shows it
                block["diagnoses"] = [
                    _said(_without_part(safe_text(d["text"], 4000), part), d.get("mistake"),
                          "" if stopped else d.get("experiment"))
                    for d in diagnoses.get(part) or []
                    if d.get("text") and (d.get("mistake") or (feedback == "full" and not stopped))
                ][:MAX_DIAGNOSES]
                if not block["diagnoses"] and failed:
                    text, mistake = _observation(part_tests, failed, feedback, missing,
                                                 module_file)
                    experiment = next((d.get("experiment") for d in diagnoses.get(part) or []),
                                      "")
                    block["diagnoses"] = [_said(text, mistake, "" if stopped else experiment)]
            if block["diagnoses"]:  # the first, as before; "diagnoses" holds them all
                first = block["diagnoses"][0]
                block.update(text=first["text"], experiment=first["experiment"],
                             mistake=first["mistake"])
        blocks.append(block)
    return blocks


MAX_DIAGNOSES = 4  # per part: up to three named mistakes and an observation


def _said(text, mistake=None, experiment=""):
    """One diagnosis of a block: its text, the catalog id it names and its experiment."""
    return {"text": text, "mistake": mistake,
            "experiment": _clip(safe_text(experiment, 2000), EXPERIMENT_CHARS)
            if experiment and text else ""}


def _fmt(value):
    return f"{value:g}"


def block_lines(blocks, feedback="full", whole=None):
    """The summary's lines: `part: score/max` and, per part that lost points, what is wrong
    and the experiment, indented under it."""
    lines = []
    for block in blocks:
        head = f"{block['part']}: {_fmt(block['score'])}/{_fmt(block['max'])}"
        if feedback == "score":
            lines.append(head)
            continue
        if whole is None and block["cases"] and block.get("carried"):
            head += _(" (passed: {passed} of {cases} cases, {carried} of them carried "
                      "forward)").format(passed=block["passed"], cases=block["cases"],
                                         carried=block["carried"])
        elif whole is None and block["cases"]:
            head += _(" (passed: {passed} of {cases} cases)").format(passed=block["passed"],
                                                                     cases=block["cases"])
        lines.append(head)
        if whole is None:
            for said in block.get("diagnoses") or [{"text": block["text"],
                                                     "experiment": block["experiment"]}]:
                if not said["text"]:
                    continue
                lines += ["    " + line for line in said["text"].splitlines()[:3]]
                if said["experiment"]:
                    experiment = said["experiment"].splitlines()
                    lines.append("    " + _("Try this: ") + experiment[0])
                    lines += ["      " + line for line in experiment[1:4]]
            # error carried forward (report/feedback.py): after what is wrong in the part
            lines += ["    " + line for line in block.get("carried_text") or []]
    return lines


def diagnoses_data(result, feedback="full", module_file=None):
    """extra_data.diagnoses: {"part", "mistake", "text"} per part that lost points, as the
    summary says it (below `full`, never a case's inputs or expected values)."""
    blocks = part_summaries(result, "full" if feedback == "full" else "summary",
                            module_file)
    return [{"part": b["part"], "mistake": d["mistake"], "text": d["text"]}
            for b in blocks if b["score"] < b["max"]
            for d in b["diagnoses"] or [{"mistake": b["mistake"], "text": b["text"]}]]


def mistake_ids(result):
    """The catalog ids diagnosed, in the parts' order, each once."""
    ids = []
    for entry in result.diagnoses or []:
        mistake = entry.get("mistake")
        if isinstance(mistake, str) and mistake and mistake not in ids:
            ids.append(safe_text(mistake, 100))
    return ids


def notes_lines(result, feedback="full", whole=None):
    """What the summary says besides the parts: the grader's own failure, notebook cells
    that raised, intake's notes, tests skipped on this machine, and (at `full` only, since
    code can print what it was called with) what the code printed. `whole`: the problem
    already said at the top (summary.whole_file_problem), not said again."""
    lines = []
    if result.grader_error and (whole is None or whole[0] != "grader"):
        lines.append(_("GRADER ERROR: {error}\nThis is not your fault; your instructor has "
                       "been told.").format(error=safe_text(result.grader_error, 4000)))
    summary = result.summary or {}
    cells = summary.get("cell_errors") or []
    for number, kind, message in cells[:5]:
        lines.append(_("Notebook cell {number} raised {kind}: {message} (the cell was "
                       "skipped).").format(number=safe_text(number, 20), kind=safe_text(kind, 100),
                                           message=safe_text(message, 500)))
    if len(cells) > 5:
        lines.append(_("... and {count} more notebook cells raised.").format(count=len(cells) - 5))
    notes = [safe_text(note, 2000) for note in result.notes[:50]]
    lines += notes[:10] + ([_("... and {count} more notes.").format(count=len(notes) - 10)]
                           if len(notes) > 10 else [])
    skipped = [t for t in result.tests if t.status == "skipped"]
    if skipped:
        reasons = sorted({safe_text(t.message, 500) for t in skipped})
        lines.append(_("{count} tests did not run on this grading machine and carry no points "
                       "here: {reasons}").format(count=len(skipped), reasons="; ".join(reasons)))
    printed_out = safe_text((summary.get("stdout") or "")[:4000]).strip()
    if printed_out and feedback == "full":
        shown = printed_out[:2000].splitlines()
        lines.append(_("Your code printed (first part shown):") + "\n" + "\n".join(
            line[:1000] for line in shown[:8]) + ("\n[...]" if len(shown) > 8 else ""))
    return lines
