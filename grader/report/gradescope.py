"""Gradescope's results.json for one submission.

Format: https://gradescope-autograders.readthedocs.io/en/latest/specs/ (top-level `score`
and `tests`, each with `name`, `score`, `max_score`, `status`, `output`, `visibility`).
Tests skipped on this machine (the CUDA tier without a GPU) carry no points and are listed
in the top-level output instead, so a test never shows as passed without having run.

The top-level output leads with the per-part summary (summary.py). Disclosure: `feedback`
(full | summary | score) decides what a failing test's output shows (its message; its
part's diagnosis; nothing), and `visibility` is every test's Gradescope visibility
(visible | after_due_date | after_published | hidden). The top-level score and output stay
visible, so with the tests hidden the output says no more than the summary.
`extra_data` records both and `diagnoses`: {"part", "mistake", "text"} per part that lost
points (the catalog id, or null for an observation; never a case's inputs).

Every string that may come from a submission is made safe and capped (grader/files.py):
a test's output at MESSAGE_CHARS, the summary at SUMMARY_CHARS, and `results_text` keeps
the whole file under RESULTS_BYTES by cutting the tests' outputs first.
"""
from .. import i18n
from ..outcomes import SubmissionResult
from ..i18n import _
from ..textsafety import safe_text
from . import summary as summaries
from .carried import carried_lines
from ..files import MESSAGE_CHARS, RESULTS_BYTES, SUMMARY_CHARS, dumps

VISIBILITY = "visible"


def _round(value):
    return round(float(value), 4)


def summary_text(result: SubmissionResult, limit=SUMMARY_CHARS, feedback="full",
                 module_file=None):
    """The summary first (summary.py: a block per part), then the notes; at `score`, the
    part scores only. module_file: the assignment's `<module>.py` (summary.student_file)."""
    whole = summaries.whole_file_problem(result)
    blocks = summaries.part_summaries(result, feedback, module_file)
    if feedback == "score":
        lines = summaries.block_lines(blocks, feedback)
        if result.status != "graded":
            lines.append(_("Status: {status}.").format(status=result.status))
        return safe_text("\n".join(lines), limit)
    head = [whole[1]] if whole is not None else []
    parts = "\n".join(summaries.block_lines(blocks, feedback, whole))
    notes = summaries.notes_lines(result, feedback, whole)
    return safe_text("\n\n".join(head + ([parts] if parts else []) + notes), limit)


def _fmt(value):
    return f"{value:g}"


def top_level_feedback(feedback, visibility):
    """The disclosure of the top-level output, which students always see: with the tests
    hidden (any visibility but `visible`), never more than the summary."""
    return "summary" if feedback == "full" and visibility != "visible" else feedback


def _test_output(test, feedback, blocks, message_chars):
    if test.status == "passed" or feedback == "score":
        return ""
    if feedback == "full":
        return safe_text(test.message or "", message_chars)
    block = blocks.get(test.part) or {}
    said = []  # every diagnosis of the part, each with its experiment
    for diagnosis in block.get("diagnoses") or [block]:
        text = diagnosis.get("text", "")
        if text and diagnosis.get("experiment"):
            text += "\n" + _("Try this: ") + diagnosis["experiment"]
        if text:
            said.append(text)
    return safe_text("\n\n".join(said), message_chars)


def results_json(result: SubmissionResult, message_chars=MESSAGE_CHARS, summary_chars=SUMMARY_CHARS,
                 feedback="full", visibility=VISIBILITY, module_file=None):
    """Gradescope's results.json as data. feedback: how much of a hidden case the tests'
    outputs show (full: the message; summary: the part's diagnosis; score: nothing);
    visibility: each test's Gradescope visibility (the top-level score stays visible);
    module_file: the file the student hands in (summary.student_file)."""
    summaries.check_level(feedback)
    module_file = summaries.student_file(module_file)
    if visibility not in summaries.VISIBILITIES:
        raise ValueError(f"visibility must be one of {', '.join(summaries.VISIBILITIES)}")
    blocks = {b["part"]: b for b in summaries.part_summaries(result, "summary", module_file)}
    tests = []
    for test in result.tests:
        if test.status == "skipped":
            continue
        tests.append({
            "name": safe_text(i18n.case_title(test.name), 500),  # Gradescope shows it
            "score": _round(test.score),
            "max_score": _round(test.max_score),
            "status": "passed" if test.status == "passed" else "failed",
            "output": _test_output(test, feedback, blocks, message_chars),
            "tags": [safe_text(test.part, 100)],
            "visibility": visibility,
        })
        if getattr(test, "carried", None):  # passed as error carried forward, said so
            tests[-1]["carried_forward"] = dict(test.carried)
            tests[-1]["output"] = "" if feedback == "score" else carried_lines([test])[0]
    return {
        "score": _round(result.score),
        "output": summary_text(result, summary_chars, top_level_feedback(feedback, visibility),
                               module_file),
        "visibility": VISIBILITY,
        "stdout_visibility": "hidden",
        "execution_time": _round(result.seconds),
        "tests": tests,
        "extra_data": {
            "diagnoses": summaries.diagnoses_data(result, feedback, module_file),
            "lang": i18n.language(),  # of every sentence here (grader grade --lang)
            "feedback": feedback,
            "visibility": visibility,
            "status": result.status,
            "max_score": _round(result.max_score),
            "isolation": result.isolation,
            "case_results": result.case_results,
            "carry_forward": result.carry_forward,  # grader grade --carry-forward
            "skipped": [{"name": safe_text(t.name, 500), "reason": safe_text(t.message, 500)}
                        for t in result.tests if t.status == "skipped"],
            "grader_errors": len(result.grader_failures) + bool(result.grader_error),
        },
    }


def results_text(result: SubmissionResult, limit=RESULTS_BYTES, feedback="full",
                 visibility=VISIBILITY, module_file=None):
    """results.json as text of at most `limit` bytes of UTF-8, always valid JSON: the tests'
    outputs are cut shorter and shorter first, then the summary, then both go."""
    module_file = summaries.student_file(module_file)
    message_chars, summary_chars = MESSAGE_CHARS, SUMMARY_CHARS
    while True:
        text = dumps(results_json(result, message_chars, summary_chars, feedback, visibility,
                                  module_file))
        if len(text.encode("utf-8")) <= limit:
            return text
        if message_chars > 64:
            message_chars //= 4
        elif summary_chars > 256:
            summary_chars //= 4
        else:
            break
    data = results_json(result, 0, 0, feedback, visibility, module_file)
    data["output"] = _("The results were too large to write; your instructor has the details.")
    for test in data["tests"]:
        test["output"] = ""
    text = dumps(data)
    if len(text.encode("utf-8")) <= limit:
        return text
    return dumps({"score": data["score"], "output": data["output"], "tests": [],
                  "extra_data": {"status": safe_text(result.status), "cut": True}})
