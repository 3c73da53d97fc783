"""Diagnosis: which catalog mistake, if any, a failing submission's results come from.

In a failing case the trusted process runs the same probe on the catalog mistakes that can
change that target's results (its own and those of the functions it calls) and keeps those
whose every result (outputs, stored weights, gradients, errors, device verdict) equals the
submission's: `matching`. At the end of the session, `diagnose_parts` names, per part that
lost points, the smallest set of mistakes (up to three) that explains its failing cases,
each only with evidence: it matched in that part's failing cases, and graded by the same
checks it fails nothing the submission passed. Failing cases no named mistake explains get
an observation (what the first of them saw), never a cause; so does a part where no
mistake qualifies.

Every function takes the assignment's catalog (`catalog=`, a grader.catalog.Catalog:
`Catalog.of(assignment)`, built once per session); none falls back on another one.
"""
import collections
import itertools

from ..harness.compare import same
from ..harness.devices import device_failure
from ..i18n import ENGLISH, N_, case_words, normalize, translate
from .build import MistakeImplementation
from .mistakes import base_id, members

MAX_CANDIDATES = 6  # per part: the mistakes that matched most often are checked further
MAX_NAMED = 3       # per part: the most mistakes one diagnosis names

SENTENCE = N_("Your result is exactly what you get if {clause}.")
DIAGNOSIS = N_(
    "{where}: in {matched} of the {failing} failing cases of this part the results are "
    "exactly what you get if {clause}.")
TOGETHER = N_(
    "{where}: in {matched} of the {failing} failing cases of this part the results are "
    "exactly what you get if {clause}, together with the other mistake named for this "
    "part.")
AGAIN = N_(
    "{where}: the same mistake as in {first} above (in {matched} of the {failing} "
    "failing cases of this part the results are exactly what it gives).")
AGAIN_WHICH = N_(
    "{where}: the same mistake as in {first} above, {clause} (in {matched} of the "
    "{failing} failing cases of this part the results are exactly what it gives).")
ELSEWHERE = N_("in {target}, which {part} calls")
OBSERVED = N_("{where}: {case}: {what}")
UNEXPLAINED = N_(
    "{where}: no catalog mistake explains the other {count} failing case(s) of this "
    "part; the first, {case}: {what}")


def _lang(lang):
    """One of i18n.languages() (English for what is none of them)."""
    try:
        return normalize(str(lang or ENGLISH))
    except ValueError:
        return ENGLISH


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
        self.params = {}  # class mistake id -> the parameters read so far (latest last)
        self.matched = []  # single mistakes (instance ids) that matched so far, in order

    def remember(self, mistake_id, value):
        values = self.params.setdefault(mistake_id, [])
        if value in values:
            values.remove(value)
        values.append(value)
        del values[:-3]

    def narrow(self, part, plausible):
        state = self.parts.setdefault(part, {"full": 0, "seen": set()})
        limit = self.FULL + (0 if state["seen"] else self.MORE_IF_NONE)
        if state["full"] < limit:
            state["full"] += 1
            return plausible
        return [m for m in plausible if m.id in state["seen"]]

    def record(self, part, found):
        self.parts.setdefault(part, {"full": 0, "seen": set()})["seen"].update(found)

    COMBINED = 3  # searches for two mistakes at once per part, while none has matched

    def combined(self, part):
        """This part's state of the search for two mistakes at once: "found" (combinations
        that matched), "searches" (how many were made)."""
        return self.parts.setdefault(part, {"full": 0, "seen": set()}).setdefault(
            "combined", {"found": [], "searches": 0})

    def singles(self, found):
        """Remember single mistakes (instance ids) that matched, in order."""
        self.matched += [i for i in found if "&" not in i and i not in self.matched]


def matching(case, probe, got_raw, solution_path, failed_parts=None, search=None, *, catalog,
             reaches=None):
    """Ids of the catalog mistakes whose result for `probe` equals the submission's.

    Only plausible mistakes are run: those of the case's own part, and those of a part in
    which the submission has already failed a case (`failed_parts`; every catalog mistake
    fails some case of its own part, `grader validate` checks it), so a submission whose
    callee passes is not searched for that callee's mistakes in its callers' cases; and of
    the functions it calls, only those the student's code of the case's function reaches
    (`reaches`: the names it reaches, callgraph.py; None: the solution's calls)."""
    found = []
    plausible = [m for m in catalog.suspects_for(case.target)
                 if (reaches is None or m.target == case.target or m.target in reaches)
                 and not (probe.get("guard") and not catalog.is_device(m.part))  # a guarded
                 # run of code right on the CPU changes only with a device mistake
                 and (failed_parts is None or m.part == case.part or catalog.is_device(m.part)
                      or m.part in failed_parts)]
    for mistake in (search.narrow(case.part, plausible) if search else plausible):
        for candidate in _instances(mistake, probe, got_raw, search, catalog):
            try:
                mine = MistakeImplementation(candidate, solution_path, catalog.module).raw(probe)
            except Exception:
                continue  # this mistake cannot run these inputs: it is no evidence either way
            if mine.get("ok") is not True and got_raw.get("ok") is True:
                continue
            if same_results(got_raw, mine, probe):
                found.append(candidate.id)
                break
    if not found and search is not None:
        found = _two_at_once(case, probe, got_raw, solution_path, plausible, search, catalog)
    if search:
        search.record(case.part, [m for i in found for m in members(i)])
        search.singles(found)
    return found


def _two_at_once(case, probe, got_raw, solution_path, plausible, search, catalog):
    """A case no single mistake matches may be two at once: a mistake already matched in
    this session (one a case of this target can show) combined with each plausible one.
    A few such searches per part; a combination found is tried first in later cases."""
    state = search.combined(case.part)

    def same_as(mistake):
        if mistake is None:
            return False
        try:
            mine = MistakeImplementation(mistake, solution_path, catalog.module).raw(probe)
        except Exception:
            return False
        return (mine.get("ok") is True or got_raw.get("ok") is not True) and \
            same_results(got_raw, mine, probe)

    for combo in state["found"]:
        if all(base_id(m) in {p.id for p in plausible} for m in combo.split("&")) \
                and same_as(catalog.by_id(combo)):
            return [combo]
    ids = {m.id for m in plausible}
    singles = [i for i in search.matched if base_id(i) in ids][-2:]
    if not singles or state["searches"] >= search.COMBINED:
        return []
    state["searches"] += 1
    for first in singles:
        if catalog.by_id(first) is None or catalog.is_device(catalog.by_id(first).part):
            continue
        for other in plausible:
            if other.id == base_id(first) or catalog.is_device(other.part):
                continue
            for candidate in _instances(other, probe, got_raw, search, catalog):
                combo = catalog.combined(sorted([first, candidate.id]))
                if same_as(combo):
                    state["found"].append(combo.id)
                    return [combo.id]
    return []


def _instances(mistake, probe, got_raw, search, catalog):
    """The mistakes to run for a catalog entry: itself, or for a class mistake (a fill value,
    a set of layers) the instance its `infer` reads from this case, else its default and the
    instances read in this session's earlier cases (a caller's case shows a callee's fill
    only through its own computation)."""
    if mistake.infer is None:
        return [mistake]
    try:
        values = mistake.infer(probe, got_raw)
    except Exception:
        values = None
    remembered = list(reversed(search.params.get(mistake.id, []))) if search else []
    if isinstance(values, str):
        values = [values]
    if isinstance(values, list) and values:
        if search and len(values) == 1:
            search.remember(mistake.id, values[0])
        # when several fit, the one read in an earlier case first
        values = sorted(values, key=lambda v: v not in remembered)
        found = [catalog.instance(mistake, v) for v in values[:4] if isinstance(v, str)]
        return [m for m in found if m is not None]
    seen = [catalog.instance(mistake, v) for v in remembered]
    return [mistake] + [m for m in seen if m is not None and m.id != mistake.id]


def sentence(mistake_ids, lang="en", *, catalog):
    """The line a failing case's message gains when its result equals a mistake's."""
    lang = _lang(lang)
    mistakes = [catalog.by_id(i) for i in mistake_ids if catalog.by_id(i)]
    if not mistakes:
        return ""
    return translate(SENTENCE, lang).format(clause=mistakes[0].text(lang))


# -- one part ---------------------------------------------------------------------------
def _footprint(mistake, cases, catalog):
    """The cases a mistake can change: its target's and its callers', and the device cases
    only for device mistakes."""
    reach = set().union(*(catalog.callers(catalog.by_id(m).target) for m in mistake.id.split("&")))
    return [c for c in cases if c.target in reach and
            (c.check not in ("device", "cuda")) == (not catalog.is_device(mistake.part))]


def _where(part, mistake, lang, catalog):
    own = catalog.targets_of(part)
    if mistake is None or mistake.target in own or catalog.is_device(part):
        return part if mistake is None else mistake.target
    return translate(ELSEWHERE, lang).format(target=mistake.target, part=part)


def _first_line(message):
    for line in str(message or "").splitlines():
        if line.strip():
            return line.strip()[:400]
    return ""


def _observation(part, names, ran, cases, lang, template):
    """A part's observation: what its first failing non-degenerate case among `names` saw (a
    degenerate one, grader/suite/case.py, may only have been withheld, and any shortcut gets
    it right anyway)."""
    first = ran[next((n for n in names if not getattr(cases.get(n), "degenerate", "")), names[0])]
    name = first["name"][len(part) + 2:] if first["name"].startswith(f"{part}: ") else first["name"]
    return translate(template, lang).format(where=part, case=case_words(name, lang),
                                 what=_first_line(first.get("message")),
                                 count=len(names))


def _smallest_cover(candidates, covers, failing):
    """The set of candidates (in their order of preference) naming the fewest mistakes, at
    most MAX_NAMED (a combination names each of its own), that explains the most failing
    cases; each candidate in it explains a case the others do not."""
    best, best_key = [], (0, 0)
    for size in range(1, min(MAX_NAMED, len(candidates)) + 1):
        for combo in itertools.combinations(range(len(candidates)), size):
            chosen = [candidates[i] for i in combo]
            named = {m for c in chosen for m in members(c.id)}  # catalog ids
            if len(named) > MAX_NAMED:
                continue
            union = set().union(*(covers[m.id] for m in chosen)) & failing
            if any(not (covers[m.id] - set().union(*(covers[o.id] for o in chosen if o is not m)))
                   & failing for m in chosen):
                continue  # a candidate that explains nothing the others do not
            key = (len(union), -len(named))
            if key > best_key:  # the first combination of the preferred candidates wins ties
                best, best_key = chosen, key
    return best


def diagnose_parts(tests, cases, grade_case, solution_path, lang="en", *, catalog):
    """The diagnoses of each part that lost points: the smallest set of catalog mistakes
    (at most MAX_NAMED, from the part and the functions it calls) that explains its failing
    cases, each with its own sentence and experiment, and an observation for the failing
    cases none of them explains (the only entry when none qualifies).

    A mistake qualifies only with evidence: its results equal the submission's in at least
    one failing case of the part, and graded by the same checks it fails nothing the
    submission passed. It explains the part's failing cases whose results it matched, and
    those it fails too that no qualified mistake matched. A failing case's "exactly what you get if" line is kept only for a
    mistake that qualified in its part (rewritten to name it) and dropped otherwise; the
    recorder's entries are edited in place.

    tests:      the recorder's entries (name, part, outcome, blame, mistakes, message)
    cases:      {name: Case} of the hidden suite
    grade_case: (case, implementation) -> True when the implementation passes the case
    catalog:    the assignment's Catalog
    Returns [{"part", "mistake" (id or None), "text", "experiment"}], a part's entries together.
    """
    lang = _lang(lang)
    ran, passed, student_failed = _outcomes(tests)
    fails_of = _Footprints(ran, cases, grade_case, solution_path, catalog)
    diagnoses, qualified = [], {}
    parts = list(dict.fromkeys(t["part"] for t in tests))
    for part in parts:
        failing = [n for n, t in ran.items() if t["part"] == part and n in student_failed]
        if not failing:
            continue
        matched_in = _matched_in(failing, ran, catalog)
        chosen, covers = _explain(part, failing, matched_in, passed, student_failed, fails_of,
                                  catalog)
        qualified[part] = [m.id for m in chosen]
        _say_named(diagnoses, part, chosen, qualified[part], matched_in, len(failing), lang,
                   catalog)
        explained = set().union(*(covers[m.id] for m in chosen)) if chosen else set()
        rest = [n for n in failing if n not in explained]
        if not rest:
            continue
        experiment = catalog.part_experiment(part, lang)
        shown = {d["experiment"] for d in diagnoses if d["part"] == part}
        diagnoses.append({"part": part, "mistake": None,
                          "text": _observation(part, rest, ran, cases, lang,
                                               UNEXPLAINED if chosen else OBSERVED),
                          "experiment": "" if experiment in shown else experiment})
    _keep_qualified_lines(ran, student_failed, qualified, lang, catalog)
    return diagnoses


def _outcomes(tests):
    """(ran, passed, student_failed) of the recorder's entries `tests`: {name: entry} of the
    cases that passed or failed, the names of those that passed on their own code, and of
    those that failed by the student's fault."""
    ran = {t["name"]: t for t in tests if t.get("outcome") in ("passed", "failed")}
    failed = {n for n, t in ran.items() if t.get("outcome") == "failed"}
    # a case carried forward (carry.py) passed on its own code with its callees answered
    # right: a callee's mistake failing it is no evidence against that mistake
    passed = {n for n in set(ran) - failed if not ran[n].get("carried")}
    student_failed = {n for n in failed if ran[n].get("blame") == "student"}
    return ran, passed, student_failed


class _Footprints:
    """Called with a mistake: the ids of the cases that ran which the mistake fails (graded
    by grade_case on the mistake built from the solution at solution_path), once a mistake."""

    def __init__(self, ran, cases, grade_case, solution_path, catalog):
        self.ran, self.cases, self.grade_case = ran, cases, grade_case
        self.solution_path, self.catalog, self.footprints = solution_path, catalog, {}

    def __call__(self, mistake):
        if mistake.id not in self.footprints:
            out = set()
            ran = [self.cases[n] for n in self.ran if n in self.cases]
            for case in _footprint(mistake, ran, self.catalog):
                try:
                    ok = self.grade_case(case, MistakeImplementation(
                        mistake, self.solution_path, self.catalog.module))
                except Exception:
                    ok = False
                if not ok:
                    out.add(case.id)
            self.footprints[mistake.id] = out
        return self.footprints[mistake.id]


def _matched_in(failing, ran, catalog):
    """{mistake id: the names of the `failing` cases whose results it matched}."""
    matched_in = collections.defaultdict(set)
    for n in failing:
        for i in ran[n].get("mistakes") or []:
            if catalog.by_id(i):
                matched_in[i].add(n)
    return matched_in


def _explain(part, failing, matched_in, passed, student_failed, fails_of, catalog):
    """(chosen, covers): the smallest set of qualified mistakes that explains the `failing`
    cases of `part`, and {mistake id: the failing cases it explains} of each qualified one."""
    ranked = sorted(matched_in, key=lambda i: -len(matched_in[i]))[:MAX_CANDIDATES]
    candidates, keys, covers = [], {}, {}
    for rank, mistake_id in enumerate(ranked):
        mistake = catalog.by_id(mistake_id)
        fails = fails_of(mistake)
        if fails & passed:
            continue  # it would fail a case the submission passes: not this mistake
        candidates.append(mistake)
        keys[mistake.id] = (len(matched_in[mistake_id]), -len(student_failed - fails),
                            -mistake_id.count("&"), mistake.part == part, -rank)
        covers[mistake.id] = fails
    # a case whose results some qualified mistake equals is explained only by those; one
    # no mistake matched, by the mistakes that fail it too
    evidenced = set().union(*(matched_in[m.id] for m in candidates))
    for mistake in candidates:
        covers[mistake.id] = (matched_in[mistake.id] |
                              (covers[mistake.id] - evidenced)) & set(failing)
    candidates.sort(key=lambda m: keys[m.id], reverse=True)
    return _smallest_cover(candidates, covers, set(failing)), covers


def _say_named(diagnoses, part, chosen, qualified, matched_in, failing, lang, catalog):
    """Append to `diagnoses` an entry for each mistake named in the `chosen` of `part`
    (`qualified`: their ids; `failing`: how many of its cases failed)."""
    named = list(dict.fromkeys(i for m in chosen for i in m.id.split("&")))
    # one class mistake read with two parameters (cases that cannot tell them apart) is
    # one mistake: named once, with the parameter its first instance has
    named = [i for n, i in enumerate(named) if base_id(i) not in map(base_id, named[:n])]
    for own_id in named:
        mistake = catalog.by_id(own_id)
        # the cases whose results equal it alone, or (named only in a combination) made
        # at once with another
        alone = own_id in qualified
        matched = len({n for i, cases_of in matched_in.items() if i in qualified
                       and (i == own_id if alone else own_id in i.split("&"))
                       for n in cases_of})
        first = next((d["part"] for d in diagnoses if d["mistake"] == base_id(own_id)), None)
        if first is None:
            template = DIAGNOSIS if alone else TOGETHER
            text = translate(template, lang).format(
                where=_where(part, mistake, lang, catalog), matched=matched,
                failing=failing, clause=mistake.text(lang))
        else:  # said once, with its experiment, where it was first diagnosed
            # with another mistake named in this part, say which one it is
            template = AGAIN if len(named) == 1 else AGAIN_WHICH
            text = translate(template, lang).format(
                where=_where(part, mistake, lang, catalog), first=first, matched=matched,
                failing=failing, clause=mistake.text(lang))
        shown = {d["experiment"] for d in diagnoses if d["part"] == part}
        experiment = "" if first else catalog.experiment(mistake.target, lang)
        diagnoses.append({"part": part, "mistake": base_id(own_id), "text": text,
                          "experiment": "" if experiment in shown else experiment})


def own_matches(ids, target, *, catalog):
    """Of a case's matches, the mistakes in `target` itself (a combination only when each of
    its members is)."""
    return [i for i in ids or [] if catalog.by_id(i) is not None
            and all(catalog.by_id(m).target == target for m in members(i))]


def keep_own(entry, target, lang="en", *, catalog):
    """A failing case's matches cut to the mistakes in `target` itself, its "exactly what
    you get if" line rewritten to match; edits `entry`."""
    found = [i for i in entry.get("mistakes") or [] if catalog.by_id(i)]
    kept = own_matches(found, target, catalog=catalog)
    if kept == found:
        return
    message = str(entry.get("message") or "")
    line = "\n  " + sentence(found, lang, catalog=catalog)
    if found and line in message:
        message = message.replace(line, "\n  " + sentence(kept, lang, catalog=catalog)
                                  if kept else "")
    entry["message"], entry["mistakes"] = message, kept


def _keep_qualified_lines(ran, student_failed, qualified, lang, catalog):
    """A failing case's "exactly what you get if" line (grader/suite/checks.py adds it for
    the first mistake whose results equal the case's) stays only for a mistake its part's
    diagnosis qualified: it then names the first such one; otherwise it is dropped, and the
    case's `mistakes` keep only the qualified ones."""
    for name in student_failed:
        entry = ran[name]
        found = [i for i in entry.get("mistakes") or [] if catalog.by_id(i)]
        if not found:
            continue
        kept = [i for i in found if i in qualified.get(entry.get("part"), ())]
        message = str(entry.get("message") or "")
        line = "\n  " + sentence(found, lang, catalog=catalog)
        if line in message:
            message = message.replace(line, "\n  " + sentence(kept, lang, catalog=catalog) if kept
                                      else "")
        entry["message"] = message
        entry["mistakes"] = list(dict.fromkeys(m for i in kept for m in members(i)))
