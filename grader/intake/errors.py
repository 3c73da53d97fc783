class IntakeError(Exception):
    """The submission cannot be graded as uploaded; the message tells the student why."""


class NothingFound(IntakeError):
    """Nothing gradable was found in what was handed in (no code file at all): the row is
    "missing work", not an earned zero."""
