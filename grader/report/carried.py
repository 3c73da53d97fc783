"""Error carried forward (grader/catalog/carry.py), said in its part: what a part says of its
carried cases (a passed case never without this), and of its failing cases that call a
function that failed too. feedback.txt, results.json and feedback.html all say it.

    carried_lines(tests)   # one part's TestOutcomes -> its lines (TestOutcome.carried, .carry_note)
"""
from ..i18n import N_, _

CARRIED = N_("{count} of {total} cases of this part give the right result once {callee} "
             "answers correctly, so {target}'s own code is right there and their points are "
             "kept (error carried forward): {why}.")
FAILED_THERE = N_("{callee} failed cases of its own in the {part} part, which is where that "
                  "costs points")
FAILED_THERE_MANY = N_("{callee} failed cases of their own in the {part} parts, which is where "
                       "that costs points")
EARLIER = N_("{callee} comes from your {part}, which is graded in its own assignment")
DIFFERS = N_("{count} of {total} cases of this part fail even with {callee} answering "
             "correctly, so {target} has a mistake of its own there.")
REFUSED = N_("{count} of {total} cases of this part could not be judged apart from {callee}: "
             "the way {target} calls it there, {callee} as specified refuses the call "
             "({error}). They count as they ran, with your {callee}.")


def _listed(names):
    return _(" and ").join(names) if len(names) == 2 else ", ".join(names)


def _why_carried(callees, parts):
    """Why a carried case's callees were no reason to lose its points, one clause per kind
    (a part of this assignment, or an earlier module's file)."""
    here = [(c, p) for c, p in zip(callees, parts) if not p.endswith(".py")]
    earlier = [(c, p) for c, p in zip(callees, parts) if p.endswith(".py")]
    clauses = []
    if here:
        template = FAILED_THERE if len(here) == 1 else FAILED_THERE_MANY
        clauses.append(_(template).format(
            callee=_listed([c for c, _p in here]),
            part=_listed(list(dict.fromkeys(p for _c, p in here)))))
    for file in dict.fromkeys(p for _c, p in earlier):
        clauses.append(_(EARLIER).format(callee=_listed([c for c, p in earlier if p == file]),
                                         part=file))
    return "; ".join(clauses)


def carried_lines(tests):
    """What one part's cases say of error carried forward: each group of carried cases (a
    passed case never without this), then why failing cases that call a failed function
    were not carried (TestOutcome.carried, .carry_note)."""
    ran = [t for t in tests if t.status != "skipped"]
    groups = {}
    for test in ran:
        carried = getattr(test, "carried", None)
        note = getattr(test, "carry_note", None) if test.status == "failed" else None
        if carried:
            key = ("carried", carried["target"], tuple(carried["in"]), tuple(carried["parts"]),
                   "")
        elif note and note["callees"]:
            key = (note["why"], note["target"], tuple(note["callees"]), tuple(note["parts"]),
                   note.get("error") or "")
        else:
            continue
        groups[key] = groups.get(key, 0) + 1
    lines = []
    for (kind, target, callees, parts, error), count in groups.items():
        fields = dict(count=count, total=len(ran), target=target, callee=_listed(callees),
                      error=error)
        if kind == "carried":
            fields["why"] = _why_carried(list(callees), list(parts))
        template = {"carried": CARRIED, "differs": DIFFERS, "refused": REFUSED}[kind]
        lines.append(_(template).format(**fields))
    return lines
