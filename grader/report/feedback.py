"""A plain-text feedback file per submission, for courses that hand feedback out themselves.

Each test's message is made safe and cut at MESSAGE_CHARS; the file as a whole is cut at
FEEDBACK_BYTES when it is written (files.write_text)."""
import re

from ..textsafety import safe_text
from .files import MESSAGE_CHARS
from .gradescope import summary_text


_BLANK_RUN = re.compile(r"\n[ \t]*\n(?:[ \t]*\n)+")  # three or more line breaks: two


def feedback_text(result):
    lines = [f"{safe_text(result.name, 200)}: {result.score:g} / {result.max_score:g} points", "",
             summary_text(result), ""]
    for test in result.tests:
        if test.status == "skipped":
            continue
        mark = {"passed": "PASS", "failed": "FAIL", "grader-error": "GRADER ERROR"}.get(
            test.status, "?")
        lines.append(f"[{mark}] {safe_text(test.name, 500)} ({test.score:g}/{test.max_score:g})")
        if test.status != "passed" and test.message:
            message = _BLANK_RUN.sub("\n\n", safe_text(test.message, MESSAGE_CHARS))
            lines += ["    " + line for line in message.splitlines()]
    return "\n".join(lines) + "\n"
