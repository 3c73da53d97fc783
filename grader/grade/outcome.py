"""What grading one submission came to: a list of test outcomes and what surrounds them."""
import dataclasses


@dataclasses.dataclass
class TestOutcome:
    name: str
    part: str
    points: float
    status: str                # "passed" | "failed" | "skipped" | "grader-error"
    message: str = ""
    seconds: float = 0.0
    grader_traceback: str = ""

    @property
    def score(self):
        return self.points if self.status == "passed" else 0.0

    @property
    def max_score(self):
        return 0.0 if self.status == "skipped" else self.points


@dataclasses.dataclass
class SubmissionResult:
    name: str
    source: str
    tests: list
    notes: list = dataclasses.field(default_factory=list)
    intake_error: str = None     # the submission could not be read: zero, with this reason
    grader_error: str = None     # the grader failed: not a zero, reported as such
    isolation: dict = None
    summary: dict = None         # what the worker saw: names defined, import error, output
    seconds: float = 0.0
    fingerprint: str = None      # of what was graded (grade/fingerprint.py)
    unchanged: bool = False      # same fingerprint as its row in the gradebook: not regraded

    @property
    def score(self):
        return sum(t.score for t in self.tests)

    @property
    def max_score(self):
        return sum(t.max_score for t in self.tests)

    def by_part(self):
        """{part: (score, max)} in the order the parts first appear."""
        parts = {}
        for test in self.tests:
            score, top = parts.get(test.part, (0.0, 0.0))
            parts[test.part] = (score + test.score, top + test.max_score)
        return parts

    @property
    def grader_failures(self):
        return [t for t in self.tests if t.status == "grader-error"]

    @property
    def status(self):
        if self.grader_error or self.grader_failures:
            return "grader error"
        if self.intake_error:
            return "not gradable"
        return "graded"


def from_catalog(catalog, status, message):
    """Every hidden test with the same outcome (used when none of them could run)."""
    return [TestOutcome(t["name"], t["part"], t["points"],
                        "skipped" if t.get("skip") else status,
                        t.get("skip") or message) for t in catalog]


def from_suite(report, catalog):
    """Outcomes from the trusted process's report, checked against the catalog."""
    tests = []
    seen = set()
    for entry in report.get("tests", []):
        status = entry["outcome"]
        if status == "failed" and entry.get("blame") == "grader":
            status = "grader-error"
        tests.append(TestOutcome(entry["name"], entry["part"], float(entry["points"]), status,
                                 entry.get("message", ""), float(entry.get("seconds", 0.0)),
                                 entry.get("grader_traceback", "")))
        seen.add(entry["nodeid"])
    missing = [t for t in catalog if t["nodeid"] not in seen]
    for t in missing:  # a test that never reported is the grader's failure, not a zero
        tests.append(TestOutcome(t["name"], t["part"], t["points"], "grader-error",
                                 "This test did not run to the end in the grader.",
                                 grader_traceback="missing from the trusted process's report"))
    return tests
