"""A catalog of mistakes, for any assignment: the `Mistake` entry and the `Catalog` of one
assignment, with its lookups.

An assignment's entries live with it (`tests_hidden/<name>/mistakes.py`: `MISTAKES`, and
`EXPERIMENTS` {target: English}, optionally `DOCS`); what calls what and which targets make
up a part come from its declaration (`assignment.calls`, the parts' targets). Every text is
written once, in English, marked with N_: it is the msgid of the assignment's own catalogs
(tests_hidden/<name>/locale/<locale>/LC_MESSAGES/assignment.po), which say it in each
other language (grader/i18n.py). The grader
never imports an assignment's catalog: it is given one, `Catalog.of(assignment)`, built once
per session, whose lookup tables (ids, instances of class mistakes, combinations) are its
own.
"""
import dataclasses

from ..i18n import ENGLISH, N_, Said, say


AND_ALSO = N_("{clause}, and also {more}")   # two mistakes made at once


class CatalogError(ValueError):
    """An assignment's catalog is wrong: the message names the entry."""


@dataclasses.dataclass(frozen=True)
class Mistake:
    id: str
    part: str
    target: str
    said: object             # completes "your result is exactly what you get if ...": the
                             # English, a msgid (N_), or an i18n.Said with fields
    edits: tuple             # ((old, new), ...): each old text occurs once in the solution
    # a mistake that stands for a class (a fill value, a set of layers): `infer` reads the
    # parameter from a probe's inputs and the submission's results (None: it cannot tell; a
    # list: each of these fits),
    # `param` makes the instance of a parameter: (said, edits), ValueError when none
    infer: object = None
    param: object = None

    def apply(self, source):
        for old, new in self.edits:
            count = source.count(old)
            if count != 1:
                raise ValueError(f"mistake {self.id}: the text to replace occurs {count} times "
                                 f"in the solution (it must occur once): {old!r}")
            source = source.replace(old, new)
        return source

    def text(self, lang=ENGLISH):
        """What it says, in `lang` (the assignment's catalog of that language, else English)."""
        return say(self.said, lang)

    @property
    def en(self):
        return self.text(ENGLISH)


def output_tensor(raw):
    """A raw probe result's first output tensor, or None (for a class mistake's `infer`)."""
    calls = raw.get("calls") if isinstance(raw, dict) else None
    output = calls[0].get("output") if isinstance(calls, list) and calls and \
        isinstance(calls[0], dict) else None
    return output.get("tensor") if isinstance(output, dict) and output.get("kind") == "tensor" \
        else None


def base_id(mistake_id):
    """The catalog id of a mistake or of a class mistake's instance."""
    return str(mistake_id).partition("@")[0]


def members(mistake_id):
    """The catalog ids of a mistake, or of each mistake of a combination."""
    return [base_id(i) for i in str(mistake_id).split("&")]


class Catalog:
    """One assignment's mistakes, and what the diagnosis asks of them.

    mistakes:     the entries, in the catalog's order (the order ties are broken in)
    experiments:  {target: English (a msgid)}: what to run to see a target's problem for oneself
    calls:        {target: callees}: a mistake in a callee shows in its callers' cases
    parts:        {CPU part: its targets}
    device_parts: the parts that re-run cases on a device (their mistakes change no CPU result)
    module:       the module's name (what the solution with a mistake is named after)
    """

    def __init__(self, mistakes, experiments=None, calls=None, parts=None, device_parts=(),
                 module="solution", name="", docs=None):
        self.mistakes = tuple(mistakes)
        self.experiments = dict(experiments or {})
        self.calls = {t: tuple(c) for t, c in (calls or {}).items()}
        self.parts = {p: tuple(ts) for p, ts in (parts or {}).items()}
        self.device_parts = frozenset(device_parts)
        self.module, self.name, self.docs = module, name, dict(docs or {})
        self._by_id = {}
        for mistake in self.mistakes:
            if not isinstance(mistake, Mistake):
                raise CatalogError(f"catalog {name!r}: {mistake!r} is not a Mistake")
            if mistake.id in self._by_id or not mistake.id or set("@&") & set(mistake.id):
                raise CatalogError(f"catalog {name!r}: mistake id {mistake.id!r} is used twice "
                                   "or holds @ or &")
            self._by_id[mistake.id] = mistake
        self._order = {m.id: n for n, m in enumerate(self.mistakes)}
        self._instances = {}  # this catalog's class mistakes' instances and combinations

    @classmethod
    def of(cls, assignment):
        """The catalog of a declared assignment (grader/assignment.py): its entries from
        `assignment.catalog()`, its calls and parts from the declaration, each entry's part
        and target checked against them (CatalogError names the entry)."""
        table = assignment.catalog()
        catalog = cls(getattr(table, "MISTAKES", ()), getattr(table, "EXPERIMENTS", {}),
                      assignment.calls, {p.name: p.targets for p in assignment.parts if not p.gpu},
                      assignment.gpu_parts, module=assignment.module, name=assignment.name,
                      docs=getattr(table, "DOCS", {}))
        known = set(assignment.api) | set(assignment.given)
        for mistake in catalog.mistakes:
            if mistake.part not in assignment.part_names:
                raise CatalogError(f"catalog {assignment.name!r}: mistake {mistake.id!r} costs "
                                   f"part {mistake.part!r}, which the declaration does not have")
            if mistake.target not in known:
                raise CatalogError(f"catalog {assignment.name!r}: mistake {mistake.id!r} is in "
                                   f"{mistake.target!r}, which api and given do not name")
        return catalog

    def __iter__(self):
        return iter(self.mistakes)

    def __len__(self):
        return len(self.mistakes)

    # -- ids ---------------------------------------------------------------------------
    base_id = staticmethod(base_id)
    members = staticmethod(members)

    def by_id(self, mistake_id):
        """The mistake of an id; "base@parameter" is a class mistake's instance (`instance`),
        "a&b" two made at once (`combined`); None for an id this catalog does not know."""
        if not isinstance(mistake_id, str):
            return None
        if "&" in mistake_id:
            return self.combined(mistake_id.split("&"))
        if "@" not in mistake_id:
            return self._by_id.get(mistake_id)
        base, _, value = mistake_id.partition("@")
        return self.instance(self._by_id.get(base), value)

    def combined(self, ids):
        """Several mistakes made at once (their edits applied in turn), as one mistake whose id
        is their ids joined by "&"; None when an edit of one undoes the text another needs."""
        found = [self.by_id(i) for i in ids]
        if len(found) < 2 or not all(found) or len({m.id for m in found}) != len(found):
            return None
        key = "&".join(m.id for m in found)
        if key not in self._instances:
            source_edits = tuple(e for m in found for e in m.edits)
            olds = [old for old, _ in source_edits]
            # every edit must find its own text: no two members edit the same line
            if len(set(olds)) != len(olds) or any(a != b and a in b for a in olds for b in olds):
                self._instances[key] = None
            else:
                said = found[0].said
                for more in found[1:]:
                    said = Said.of(AND_ALSO, clause=said, more=more.said)
                self._instances[key] = dataclasses.replace(
                    found[0], id=key, said=said, edits=source_edits, infer=None, param=None)
        return self._instances[key]

    def instance(self, mistake, value):
        """A class mistake for one parameter (its default's id is the base id), or None."""
        if mistake is None or mistake.param is None or not isinstance(value, str) or \
                len(value) > 40:
            return None
        key = (mistake.id, value)
        if key not in self._instances:
            try:
                said, edits = mistake.param(value)
            except ValueError:
                return None
            own = mistake.id if edits == mistake.edits else f"{mistake.id}@{value}"
            self._instances[key] = dataclasses.replace(mistake, id=own, said=said, edits=edits)
        return self._instances[key]

    def order(self, mistake_id):
        """A mistake's place in the catalog (0 for an id it does not know)."""
        return self._order.get(base_id(mistake_id), 0)

    # -- targets and parts -------------------------------------------------------------
    def callers(self, target):
        """The targets whose results a mistake in `target` can change (itself included)."""
        return {t for t, calls in self.calls.items() if t == target or target in calls}

    def suspects_for(self, target):
        """The catalog mistakes that can change `target`'s results: in it or in what it calls."""
        order = [target, *self.calls.get(target, ())]
        return sorted((m for m in self.mistakes if m.target in order),
                      key=lambda m: order.index(m.target))

    def part_of(self, target):
        """The CPU part that grades `target` (its own name when no part lists it)."""
        return next((p for p, ts in self.parts.items() if target in ts), target)

    def targets_of(self, part):
        """The targets of a CPU part (the part's name alone when it is none)."""
        return self.parts.get(part, (part,))

    def is_device(self, part):
        """True for a part that re-runs cases on a device (grader: the GPU share)."""
        return part in self.device_parts

    # -- what a diagnosis shows --------------------------------------------------------
    def experiment(self, target, lang=ENGLISH):
        """What to run to see `target`'s problem for oneself ("" when the catalog has none)."""
        said = self.experiments.get(target, "")
        return say(said, lang) if said else ""

    def part_experiment(self, part, lang=ENGLISH):
        """The experiment shown with a part's observation: its first target's; none for a
        device part (its cases are its targets' own, on another device)."""
        return "" if self.is_device(part) else self.experiment(self.targets_of(part)[0], lang)
