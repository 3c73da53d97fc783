"""What grading one submission came to: a list of test outcomes and what surrounds them."""
import dataclasses

from ..i18n import _


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
    heatmap: dict = None       # {"title", "expected", "got"}: 2-D lists of attention weights
    # passed only as error carried forward (grader/catalog/carry.py): {"target", "mistakes",
    # "in", "parts"}, the callee mistakes its result equals the solution's with; else None
    carried: dict = None
    # failed, and a function it calls failed its own part: {"why": "unnamed" | "differs",
    # "callees", "mistakes"} (why its points were not carried forward)
    carry_note: dict = None
    target: str = None         # the function or module the case calls (cases.py)

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


def _strings(value, limit=20):
    return [str(v)[:100] for v in value[:limit] if isinstance(v, str)] \
        if isinstance(value, list) else []


def _matrix(value, limit=64):
    """A 2-D list of at most limit x limit floats, or None."""
    if not isinstance(value, list) or not value or len(value) > limit:
        return None
    rows = []
    for row in value:
        if not isinstance(row, list) or len(row) != len(value[0]) or len(row) > limit:
            return None
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in row):
            return None
        rows.append([float(v) for v in row])
    return rows


def _heatmap(value):
    """The trusted process's picture data for a failed test, checked; None when absent."""
    if not isinstance(value, dict):
        return None
    expected, got = _matrix(value.get("expected")), _matrix(value.get("got"))
    if expected is None:
        return None
    if got is not None and (len(got) != len(expected) or len(got[0]) != len(expected[0])):
        got = None
    return {"title": str(value.get("title", ""))[:300], "expected": expected, "got": got}


def diagnoses_from(report):
    """The trusted process's per-part diagnoses, checked (see grader/catalog/diagnose.py)."""
    out = []
    for entry in report.get("diagnoses") or []:
        if isinstance(entry, dict) and isinstance(entry.get("part"), str):
            mistake = entry.get("mistake")
            out.append({"part": entry["part"][:100],
                        "mistake": mistake[:100] if isinstance(mistake, str) else None,
                        "text": str(entry.get("text", ""))[:2000],
                        "experiment": str(entry.get("experiment", ""))[:1000]})
    return out[:20]


def case_results_from(report):
    """{"reference"|"mistake": {"computed": int, "reused": int}} from the trusted report,
    checked; None when it said nothing usable."""
    found = report.get("case_results")
    if not isinstance(found, dict):
        return None
    out = {}
    for kind in ("reference", "mistake"):
        entry = found.get(kind)
        if isinstance(entry, dict):
            out[kind] = {how: entry[how] if isinstance(entry.get(how), int)
                         and not isinstance(entry.get(how), bool) and 0 <= entry[how] < 10**9 else 0
                         for how in ("computed", "reused")}
    return out or None


def _catalog_ids(value, limit=5):
    """Catalog mistake ids from the trusted report, each one the catalog knows, or None."""
    from ..catalog.mistakes import by_id
    ids = _strings(value, limit)
    return ids if ids and all(by_id(i) is not None for i in ids) else None


def _carried(value, status):
    """A passed test's carried-forward record, checked; the functions and parts it names
    are the catalog's, never the report's."""
    from ..catalog.mistakes import by_id
    from ..harness.implementations import API_NAMES
    if status != "passed" or not isinstance(value, dict) or value.get("target") not in API_NAMES:
        return None
    ids = _catalog_ids(value.get("mistakes"))
    if ids is None:
        return None
    found = [by_id(i) for i in ids]
    return {"target": value["target"], "mistakes": ids,
            "in": list(dict.fromkeys(m.target for m in found)),
            "parts": list(dict.fromkeys(m.part for m in found))}


def _carry_note(value, status):
    """A failed test's note of why it was not carried forward, checked: "unnamed" (the
    functions it calls that failed their own parts) or "differs" (the named mistakes it
    does not equal the solution's with); functions and parts are the catalog's."""
    from ..catalog.carry import part_of
    from ..catalog.mistakes import by_id
    from ..harness.implementations import API_NAMES
    if status != "failed" or not isinstance(value, dict) or value.get("target") not in API_NAMES:
        return None
    why = value.get("why")
    if why == "unnamed":
        callees = [c for c in _strings(value.get("callees"), 7) if c in API_NAMES]
        ids = []
    elif why == "differs":
        ids = _catalog_ids(value.get("mistakes")) or []
        callees = list(dict.fromkeys(by_id(i).target for i in ids))
    else:
        return None
    if not callees:
        return None
    parts = (list(dict.fromkeys(by_id(i).part for i in ids)) if ids
             else list(dict.fromkeys(part_of(c) for c in callees)))
    return {"why": why, "target": value["target"], "callees": callees, "parts": parts,
            "mistakes": ids}


def _target(value):
    from ..harness.implementations import API_NAMES
    return value if value in API_NAMES else None


def carry_setting(report):
    found = report.get("carry_forward")
    return found if found in ("on", "off") else None


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
                                 entry.get("grader_traceback", ""),
                                 _strings(entry.get("mistakes")), _heatmap(entry.get("heatmap")),
                                 _carried(entry.get("carried"), status),
                                 _carry_note(entry.get("carry_note"), status),
                                 _target(entry.get("target"))))
        seen.add(entry["nodeid"])
    missing = [t for t in catalog if t["nodeid"] not in seen]
    for t in missing:  # a test that never reported is the grader's failure, not a zero
        tests.append(TestOutcome(t["name"], t["part"], t["points"], "grader-error",
                                 _("This test did not run to the end in the grader."),
                                 grader_traceback="missing from the trusted process's report"))
    return tests
