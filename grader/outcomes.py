"""What grading one submission came to: a list of test outcomes and what surrounds them.

One record per submission, `SubmissionResult`, filled where each thing is learnt: who handed
it in and when (`Provenance`, from the platform's layout resolution: intake/layouts.py
Submission.provenance), the folder the batch settled for it, the code intake staged
(`Kept`), and what the hidden suite found. The reports read its fields; none is added
later.

A leaf module (it imports nothing of the grader): the batch (grader/grade/) makes these and
the reports (grader/report/) read them, and neither imports the other for it.
"""
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
    mistakes: list = dataclasses.field(default_factory=list)  # catalog ids whose result it equals
    heatmap: dict = None       # {"title", "expected", "got"}: 2-D lists of weights
    # passed only as error carried forward (grader/catalog/carry.py): {"target", "in" (the
    # failed callees it was judged apart from), "answered" (what the solution answered),
    # "mistakes" (catalog ids named in those callees' parts), "parts" (theirs)}; else None
    carried: dict = None
    # failed, and a function it calls failed its own part: {"why": "differs" | "refused",
    # "target", "callees", "parts", "error"} (why its points were not carried forward)
    carry_note: dict = None
    target: str = None         # the function or module the case calls (cases.py)

    @property
    def score(self):
        return self.points if self.status == "passed" else 0.0

    @property
    def max_score(self):
        return 0.0 if self.status == "skipped" else self.points


@dataclasses.dataclass
class Provenance:
    """Who handed a submission in, when, and what to flag: what the layout the work arrived
    in says (grader/platforms/; "" when it says nothing). Made safe and capped where it is
    learnt; the gradebook row caps it again (report/gradebook.py identity)."""
    student_id: str = ""          # the LMS's id (Canvas user, Moodle participant, SID...)
    student_name: str = ""        # the display name
    layout: str = ""              # plain | canvas | moodle | gradescope | nbgrader | classroom
    submitted_at: str = ""        # ISO 8601 with an offset (a zoneless Moodle time without)
    time_source: str = ""         # how that time was learnt (gradescope-metadata, file-mtime...)
    late_flag: bool = None        # True/False when the LMS itself said (Canvas's LATE), else None
    flags: list = dataclasses.field(default_factory=list)  # identity warnings, for the instructor


@dataclasses.dataclass
class Kept:
    """What `grader grade` keeps of one submission for `grader similarity` (report/kept.py):
    the staged module's text, and the code cells intake converted ([(number, source)]) when
    the upload was a notebook (else None)."""
    text: str
    cells: list = None


@dataclasses.dataclass
class SubmissionResult:
    name: str
    source: str
    tests: list
    notes: list = dataclasses.field(default_factory=list)
    intake_error: str = None     # the submission could not be read: zero, with this reason
    missing_work: bool = False   # with intake_error: nothing gradable was found (not a zero)
    grader_error: str = None     # the grader failed: not a zero, reported as such
    isolation: dict = None
    summary: dict = None         # what the worker saw: names defined, import error, output
    seconds: float = 0.0
    fingerprint: str = None      # of what was graded (grade/fingerprint.py)
    unchanged: bool = False      # same fingerprint as its row in the gradebook: not regraded
    # one per part that lost points: {"part", "mistake" (catalog id or None), "text",
    # "experiment" (a small experiment the student can run to see it, or "")}
    diagnoses: list = dataclasses.field(default_factory=list)
    # {"reference": {"computed": n, "reused": m}, "mistake": {...}}: see harness/memo.py
    case_results: dict = None
    carry_forward: str = None    # "on" | "off": the policy it was graded with (carry.py)
    # {"exchanges", "worker_cpu", "trusted_cpu"}: what grading it cost (grade/outcome.py
    # costs_from; grader/bench.py reads it, no report shows it)
    costs: dict = None
    console: str = ""            # what the trusted process printed (grader-errors.log shows it)
    # where it came from and where its files go: the batch's folder for it, DIR/<folder>/
    # (report/folders.py; None: the name made safe), and who and when (the layout's)
    folder: str = None
    provenance: Provenance = dataclasses.field(default_factory=Provenance)
    # the code intake staged, kept beside the row for `grader similarity` (report/kept.py);
    # None when intake refused the upload or the grader failed before intake
    staged_code: Kept = None

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
        if self.intake_error and self.missing_work:
            return "missing work"   # nothing gradable found: for review, never exported as 0
        if self.intake_error:
            return "not gradable"
        return "graded"
