"""Two kinds of failure, kept apart so a grader bug never passes for a student's zero."""


class StudentFailure(AssertionError):
    """The submission did something wrong; the message is shown to the student."""


class GraderError(RuntimeError):
    """The grader itself went wrong (the reference failed, a case is malformed)."""
