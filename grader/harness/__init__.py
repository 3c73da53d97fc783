"""The comparison harness the hidden tests use.

`Reference` runs probes against the instructor's solution in this (trusted) process;
`Submission` forwards the same probes to the student's worker process. Both return
`ProbeResult`s, and `compare` turns a disagreement into a `StudentFailure` whose message
teaches: what was expected, what came back, the first differing position, and the likely
misconception.
"""
from .failures import GraderError, StudentFailure
from .implementations import Reference, Submission
from .results import ProbeResult

__all__ = ["GraderError", "ProbeResult", "Reference", "StudentFailure", "Submission"]
