"""Diagnosis: which catalog mistake, if any, a failing submission's results come from.

In a failing case the trusted process runs the same probe on the catalog mistakes that can
change that target's results (its own and those of the functions it calls) and keeps those
whose every result (outputs, stored weights, gradients, errors, device verdict) equals the
submission's: `matching`. At the end of the session, `diagnose_parts` names at most one
mistake per part that lost points, and only with evidence: it matched in that part's
failing cases, and graded by the same checks it fails nothing the submission passed. When
no mistake qualifies, the part gets an observation (what its first failing case saw), never
a cause.
"""
import collections

from ..harness.compare import same
from ..harness.devices import device_failure
from .build import MistakeImplementation
from .mistakes import EXPERIMENTS, PART_TARGETS, by_id, callers, suspects_for

MAX_CANDIDATES = 4  # per part: the mistakes that matched most often are checked further

SENTENCE = {
    "en": "Your result is exactly what you get if {clause}.",
    "zh": "你的结果恰好等于这样做时得到的结果：{clause}。",
}
DIAGNOSIS = {
    "en": "{where}: in {matched} of the {failing} failing cases of this part the results are "
          "exactly what you get if {clause}.",
    "zh": "{where}：本部分 {failing} 个未通过的用例中，有 {matched} 个的结果恰好等于这样做时"
          "得到的结果：{clause}。",
}
AGAIN = {
    "en": "{where}: the same mistake as in {first} above (in {matched} of the {failing} "
          "failing cases of this part the results are exactly what it gives).",
    "zh": "{where}：与上面 {first} 中的错误相同（本部分 {failing} 个未通过的用例中，有 {matched} "
          "个的结果恰好等于它给出的结果）。",
}
ELSEWHERE = {
    "en": "in {target}, which {part} calls",
    "zh": "在 {part} 调用的 {target} 中",
}
OBSERVED = {
    "en": "{where}: {case}: {what}",
    "zh": "{where}：{case}：{what}",
}


def _lang(lang):
    return "zh" if str(lang or "").startswith("zh") else "en"


# -- one case ---------------------------------------------------------------------------
def _descs(raw, call):
    calls = raw.get("calls") if isinstance(raw.get("calls"), list) else []
    record = calls[call] if call < len(calls) and isinstance(calls[call], dict) else {}
    captured = record.get("captured") if isinstance(record.get("captured"), dict) else {}
    return record.get("output"), captured


def _same_desc(a, b, scale=1.0):
    if not isinstance(a, dict) or not isinstance(b, dict):
        return a is None and b is None
    if a.get("kind") != b.get("kind"):
        return False
    if a.get("kind") == "tensor":
        ta, tb = a.get("tensor"), b.get("tensor")
        return type(ta) is type(tb) and same(ta, tb, scale, equal_nan=True)
    return a.get("kind") != "other" or a.get("type") == b.get("type")


def _keys(raw):
    keys = raw.get("state_keys")
    if not isinstance(keys, list):
        return None
    return sorted((str(k[0]), str(k[1])) for k in keys if isinstance(k, (list, tuple)) and len(k) == 2)


def same_results(got, mine, probe):
    """True when two raw probe results agree in everything a check reads."""
    if not isinstance(got, dict) or not isinstance(mine, dict):
        return False
    if got.get("ok") is not True or mine.get("ok") is not True:
        error_a, error_b = got.get("error"), mine.get("error")
        # the same exception with the same message: a RuntimeError about shapes from one
        # mistake is no evidence of another mistake's RuntimeError
        kind = (lambda e: (e.get("type"), str(e.get("message", ""))[:300])
                if isinstance(e, dict) else None)
        if got.get("ok") is True or mine.get("ok") is True or got.get("stage") != mine.get("stage"):
            return False
        if got.get("stage") in ("load_state_dict", "state_dict", "init"):
            # the module's parameters are what differ: the same names and shapes, or not
            return kind(error_a) == kind(error_b) and _keys(got) == _keys(mine)
        return kind(error_a) == kind(error_b)
    calls = got.get("calls") if isinstance(got.get("calls"), list) else []
    if len(calls) != len(mine.get("calls") or []):
        return False
    for call in range(len(calls)):
        out_a, cap_a = _descs(got, call)
        out_b, cap_b = _descs(mine, call)
        if not _same_desc(out_a, out_b) or set(cap_a) != set(cap_b):
            return False
        if not all(_same_desc(cap_a[name], cap_b[name]) for name in cap_a):
            return False
    grads_a, grads_b = got.get("grads") or {}, mine.get("grads") or {}
    for group in ("args", "params"):
        a, b = grads_a.get(group) or {}, grads_b.get(group) or {}
        if not isinstance(a, dict) or set(a) != set(b):
            return False
        if not all(_same_desc(a[k], b[k], scale=10) for k in a):
            return False
    if probe.get("guard"):
        target = probe.get("target")
        wrap = (lambda raw: type("R", (), {"raw": raw})())
        if (device_failure(target, wrap(got)) is None) != (device_failure(target, wrap(mine)) is None):
            return False
    return True


class Search:
    """How far the search goes in one session: the first failing cases of a part are
    searched against every plausible mistake, later ones against the mistakes already seen
    in that part (or, while none has been, a few more full searches), so a submission that
    fails 60 cases costs a few full searches per part, not 60."""

    FULL = 2          # full searches per part
    MORE_IF_NONE = 2  # further full searches while nothing has matched in the part

    def __init__(self):
        self.parts = {}

    def narrow(self, part, plausible):
        state = self.parts.setdefault(part, {"full": 0, "seen": set()})
        limit = self.FULL + (0 if state["seen"] else self.MORE_IF_NONE)
        if state["full"] < limit:
            state["full"] += 1
            return plausible
        return [m for m in plausible if m.id in state["seen"]]

    def record(self, part, found):
        self.parts.setdefault(part, {"full": 0, "seen": set()})["seen"].update(found)


def matching(case, probe, got_raw, solution_path, failed_parts=None, search=None):
    """Ids of the catalog mistakes whose result for `probe` equals the submission's.

    Only plausible mistakes are run: those of the case's own part, and those of a part in
    which the submission has already failed a case (`failed_parts`; every catalog mistake
    fails some case of its own part, `grader validate` checks it), so a submission whose
    masked_softmax passes is not searched for masked_softmax mistakes in its attentions."""
    found = []
    plausible = [m for m in suspects_for(case.target)
                 if not (probe.get("guard") and m.part != "GPU")  # a guarded run of code
                 # right on the CPU changes only with a device mistake
                 and (failed_parts is None or m.part in (case.part, "GPU")
                      or m.part in failed_parts)]
    for mistake in (search.narrow(case.part, plausible) if search else plausible):
        try:
            mine = MistakeImplementation(mistake, solution_path).raw(probe)
        except Exception:
            continue  # this mistake cannot run these inputs: it is no evidence either way
        if mine.get("ok") is not True and got_raw.get("ok") is True:
            continue
        if same_results(got_raw, mine, probe):
            found.append(mistake.id)
    if search:
        search.record(case.part, found)
    return found


def sentence(mistake_ids, lang="en"):
    """The line a failing case's message gains when its result equals a mistake's."""
    lang = _lang(lang)
    mistakes = [by_id(i) for i in mistake_ids if by_id(i)]
    if not mistakes:
        return ""
    return SENTENCE[lang].format(clause=mistakes[0].text(lang))


# -- one part ---------------------------------------------------------------------------
def _footprint(mistake, cases):
    """The cases a mistake can change: its target's and its callers', and the device cases
    only for device mistakes."""
    reach = callers(mistake.target)
    return [c for c in cases if c.target in reach and
            (c.check not in ("device", "cuda")) == (mistake.part != "GPU")]


def _where(part, mistake, lang):
    own = PART_TARGETS.get(part, (part,))
    if mistake is None or mistake.target in own or part == "GPU":
        return part if mistake is None else mistake.target
    return ELSEWHERE[lang].format(target=mistake.target, part=part)


def _first_line(message):
    for line in str(message or "").splitlines():
        if line.strip():
            return line.strip()[:400]
    return ""


def diagnose_parts(tests, cases, grade_case, solution_path, lang="en"):
    """One diagnosis per part that lost points.

    tests:      the recorder's entries (name, part, outcome, blame, mistakes, message)
    cases:      {name: Case} of the hidden suite
    grade_case: (case, implementation) -> True when the implementation passes the case
    Returns [{"part", "mistake" (id or None), "text", "experiment"}].
    """
    lang = _lang(lang)
    ran = {t["name"]: t for t in tests if t.get("outcome") in ("passed", "failed")}
    failed = {n for n, t in ran.items() if t.get("outcome") == "failed"}
    passed = set(ran) - failed
    student_failed = {n for n in failed if ran[n].get("blame") == "student"}
    footprints = {}

    def fails_of(mistake):
        if mistake.id not in footprints:
            out = set()
            for case in _footprint(mistake, [cases[n] for n in ran if n in cases]):
                try:
                    ok = grade_case(case, MistakeImplementation(mistake, solution_path))
                except Exception:
                    ok = False
                if not ok:
                    out.add(case.id)
            footprints[mistake.id] = out
        return footprints[mistake.id]

    diagnoses = []
    parts = list(dict.fromkeys(t["part"] for t in tests))
    for part in parts:
        failing = [n for n, t in ran.items() if t["part"] == part and n in student_failed]
        if not failing:
            continue
        counts = collections.Counter(i for n in failing for i in ran[n].get("mistakes") or []
                                     if by_id(i))
        best = None
        for rank, (mistake_id, matched) in enumerate(counts.most_common(MAX_CANDIDATES)):
            mistake = by_id(mistake_id)
            fails = fails_of(mistake)
            if fails & passed:
                continue  # it would fail a case the submission passes: not this mistake
            own = mistake.part == part
            key = (matched, -len(student_failed - fails), own, -rank)
            if best is None or key > best[0]:
                best = (key, mistake, matched)
        if best is not None:
            _, mistake, matched = best
            first = next((d["part"] for d in diagnoses if d["mistake"] == mistake.id), None)
            if first is None:
                text = DIAGNOSIS[lang].format(where=_where(part, mistake, lang), matched=matched,
                                              failing=len(failing), clause=mistake.text(lang))
            else:  # said once, with its experiment, where it was first diagnosed
                text = AGAIN[lang].format(where=_where(part, mistake, lang), first=first,
                                          matched=matched, failing=len(failing))
            diagnoses.append({"part": part, "mistake": mistake.id, "text": text,
                              "experiment": "" if first else mistake.experiment(lang)})
        else:
            # the first failing non-degenerate case: a degenerate one (tests_hidden/cases.py)
            # may only have been withheld, and any shortcut gets it right anyway
            first = ran[next((n for n in failing if not getattr(cases.get(n), "degenerate", "")),
                             failing[0])]
            name = first["name"][len(part) + 2:] if first["name"].startswith(f"{part}: ") \
                else first["name"]
            text = OBSERVED[lang].format(where=part, case=name,
                                         what=_first_line(first.get("message")))
            en, zh = EXPERIMENTS.get(PART_TARGETS.get(part, (part,))[0], ("", ""))
            diagnoses.append({"part": part, "mistake": None, "text": text,
                              "experiment": zh if lang == "zh" else en})
    return diagnoses
