class IntakeError(Exception):
    """The submission cannot be graded as uploaded; the message tells the student why."""
