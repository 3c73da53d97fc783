"""The trusted process's report, checked, into outcomes (grader/outcomes.py holds the types)."""
from ..i18n import _
from .. import assignment as assignments
from ..catalog import Catalog
from ..textsafety import safe_text
from ..outcomes import SubmissionResult, TestOutcome

__all__ = ["SubmissionResult", "TestOutcome", "carry_setting", "case_results_from", "costs_from",
           "diagnoses_from", "from_catalog", "from_suite"]


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


def costs_from(report):
    """{"exchanges": int, "worker_cpu": s, "trusted_cpu": s, "turn_wait": s} from the
    report, checked (None for what it does not say); the benchmark reads them, and the
    seconds a result reports leave the wait for its turn (turns.py) out."""
    found = report.get("costs") if isinstance(report.get("costs"), dict) else {}
    out = {}
    for key in ("exchanges", "worker_cpu", "trusted_cpu", "turn_wait"):
        value = found.get(key)
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value < 1e9
        out[key] = value if ok else None
    return out


class _Known:
    """What a report's names are checked against: the assignment's api and parts, and its
    catalog of mistakes (built when a record first names one)."""

    def __init__(self, declared, mistakes=None):
        self.declared, self._mistakes = declared, mistakes

    def by_id(self, mistake_id):
        if self._mistakes is None:
            self._mistakes = Catalog.of(self.declared)
        return self._mistakes.by_id(mistake_id)

    def callable_names(self):
        """The names a caller may be judged apart from: the assignment's api, then that of
        each earlier assignment whose module the student provides."""
        if not hasattr(self, "_callable"):
            self._callable, self._earlier = list(self.declared.api), {}
            for dep, earlier in self.declared.earlier():
                if dep.provide == "student":
                    self._callable += [n for n in earlier.api if n not in self._callable]
                    self._earlier.update({n: earlier for n in earlier.api})
        return self._callable

    def part_of(self, name):
        """The part that grades `name`; for an earlier module's, that module's file."""
        self.callable_names()
        if name in self._earlier:
            return self._earlier[name].module_file
        return self.declared.part_of(name)

    def ids(self, value, limit=5):
        """Catalog mistake ids from the trusted report, each one the catalog knows, or None."""
        ids = _strings(value, limit)
        return ids if ids and all(self.by_id(i) is not None for i in ids) else None


def _callee_names(value, known, limit=12):
    """Names of the api (this assignment's, or of an earlier module the student provides)
    from the trusted report, in the declarations' order; anything else is dropped."""
    given = _strings(value, limit) or []
    return [n for n in known.callable_names() if n in given]


def _carried(value, status, known):
    """A passed test's carried-forward record, checked: the callees it was judged apart
    from (`in`), the names the solution answered, the catalog mistakes named in those
    callees' own parts; the parts are the declarations', never the report's."""
    if status != "passed" or not isinstance(value, dict) or \
            value.get("target") not in known.declared.api:
        return None
    callees = _callee_names(value.get("in"), known)
    if not callees:
        return None
    return {"target": value["target"], "in": callees,
            "answered": _callee_names(value.get("answered"), known),
            "mistakes": known.ids(value.get("mistakes")) or [],
            "parts": [known.part_of(c) for c in callees]}


def _carry_note(value, status, known):
    """A failed test's note of why it was not carried forward, checked: "differs" (it fails
    with its callees answered right: a mistake of its own) or "refused" (the solution
    refused what it handed a callee; `error` says how)."""
    if status != "failed" or not isinstance(value, dict) or \
            value.get("target") not in known.declared.api:
        return None
    why = value.get("why")
    if why not in ("differs", "refused"):
        return None
    callees = _callee_names(value.get("callees"), known)
    if not callees:
        return None
    error = value.get("error") if why == "refused" else None
    return {"why": why, "target": value["target"], "callees": callees,
            "parts": [known.part_of(c) for c in callees],
            "error": safe_text(error, 300) if isinstance(error, str) else ""}


def _target(value, known):
    return value if value in known.declared.api else None


def carry_setting(report):
    found = report.get("carry_forward")
    return found if found in ("on", "off") else None


def from_catalog(catalog, status, message):
    """Every hidden test with the same outcome (used when none of them could run)."""
    return [TestOutcome(t["name"], t["part"], t["points"],
                        "skipped" if t.get("skip") else status,
                        t.get("skip") or message) for t in catalog]


def from_suite(report, catalog, assignment=None, mistakes=None):
    """Outcomes from the trusted process's report, checked against the catalog (the suite's
    tests), the assignment (its functions; default: the default assignment) and its catalog
    of mistakes (`mistakes`, a grader.catalog.Catalog; default: Catalog.of(assignment))."""
    known = _Known(assignment or assignments.load(), mistakes)
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
                                 _carried(entry.get("carried"), status, known),
                                 _carry_note(entry.get("carry_note"), status, known),
                                 _target(entry.get("target"), known)))
        seen.add(entry["nodeid"])
    missing = [t for t in catalog if t["nodeid"] not in seen]
    for t in missing:  # a test that never reported is the grader's failure, not a zero
        tests.append(TestOutcome(t["name"], t["part"], t["points"], "grader-error",
                                 _("This test did not run to the end in the grader."),
                                 grader_traceback="missing from the trusted process's report"))
    return tests
