"""Canvas: its bulk download ("Download Submissions"), its gradebook import and its
submission comments.

The download has one file per uploaded file. Canvas (lib/content_zipper.rb) writes
`<name>[_LATE]_<user id>_<attachment id>_<file>`: the name is the student's sortable name,
lower-cased, word characters only, with every `_<digits>_` in it collapsed, so the first two
digits-only `_` segments are the ids (what Canvas's own re-upload of graded files reads);
`-1`, `-2` are added to the file name when the student uploaded a file of that name again::

    wangli_10000_90000_<module>.py          → user 10000, name wangli
    liuyang_LATE_10001_90001_<module>.ipynb → user 10001, late (late_flag True)
    zhaomin_10002_90002_<module>-1.py       → user 10002 (the second upload: it counts)
    mallory_10005_90005__10000_90000_<module>.py → user 10005, flagged: it claims 10000
    anon_aB3xZ_90006_<module>.py            → anonymous grading: no student id, flagged

Cross-checks within one download: a user id has one name (a user id seen under two names
is flagged and its rows keep no student id, so nothing is exported for it until the
instructor looks), an attachment id belongs to one user, and a name that splits two ways
(`x_10000_10005_90005_a.py`, see `_ambiguous`) never counts as the user's while they have a
file that reads one way, else keeps no id. One file per student is graded: the one most like
the assignment's file (`<module>.py`, `<module>.ipynb`, either with a resubmission suffix:
intake/naming.py), then the newest attachment (Canvas's id, rising with each upload), then
the resubmission number; the others are noted. A download's file times are when the zip was
made, so Canvas rows have no time; Canvas's own `LATE` is `late_flag` (True/False) instead.

Its exports: `canvas` (scores.py: the gradebook import CSV, or the instructor's own Canvas
export with this assignment's column filled) and `canvas-comments` (comments.py: each
student's feedback, posted as submission comments by the script it writes beside them).
"""
import re
import unicodedata

from ...intake.layouts import MAX_NAME, display_name, shown, student_id
from .. import base
from ..base import RESUBMISSION
from . import comments, scores

# the name part is word characters only (Canvas removes everything else: Ruby's
# [[:word:]], letters, marks, numbers and connector punctuation); an id is a digits-only
# segment between underscores
CANVAS_ID = re.compile(r"^[0-9]{1,20}$")
# with anonymous grading Canvas writes `[LATE_]anon_<anonymous id>` instead of name and user id
CANVAS_ANONYMOUS = re.compile(r"^(?P<late>LATE_)?anon_(?P<anon>[A-Za-z0-9]{1,20})_(?P<att>[0-9]{1,20})_(?P<file>.+)$",
                              re.DOTALL)


def parse_canvas(name):
    """{"name", "user", "attachment", "late", "file", "base", "resubmission", "claims",
    "ambiguous"} for a Canvas bulk-download file name, else None.

    Read as Canvas reads it back: the first digits-only `_` segment is the user id, the
    next the attachment id, and everything after them is the student's own file name,
    whatever it looks like. `claims`: the other user ids the student's file name would give
    if it were read as a download name (Canvas's, or any other platform's); `ambiguous`: the
    file name itself starts with a digits-only segment, so a name part ending in
    `_<digits>` would read differently.

        parse_canvas("wangli_10000_90000_hw.py")["user"] == "10000"
        parse_canvas("liuyang_LATE_10001_90001_hw.ipynb")["late"] is True
        parse_canvas("zhaomin_10002_90002_hw-2.py")["resubmission"] == 2
        parse_canvas("mallory_10005_90005__10000_90000_a.py")["claims"] == ["10000"]
        parse_canvas("alice.py") is None
    """
    segments = name[:MAX_NAME].split("_")
    # the ids are the first digits-only segment and the next; the name is never empty, so
    # they never start it, and a name that ends in digits may be followed by LATE
    # (`a_0_LATE_10005_...`): a name the student set to start or end with digits (`0_a`,
    # `a_0`, which Canvas leaves as they are) still reads
    first = next((i for i, s in enumerate(segments) if i and CANVAS_ID.match(s)), None)
    if first is not None and first + 3 < len(segments) and segments[first + 1] == "LATE" \
            and CANVAS_ID.match(segments[first + 2]) and CANVAS_ID.match(segments[first + 3]):
        first += 2
    if first is None or first + 2 >= len(segments) or not CANVAS_ID.match(segments[first + 1]):
        return None
    head = segments[:first]
    late = len(head) > 1 and head[-1] == "LATE"
    who = "_".join(head[:-1] if late else head)
    original = "_".join(segments[first + 2:])
    if not who or not all(unicodedata.category(c)[0] in "LMN" or unicodedata.category(c) == "Pc"
                          for c in who) or not original:
        return None
    user = segments[first]
    stem, ext = base.stem(original)
    again = RESUBMISSION.match(stem)
    rest = segments[first + 2:]
    claims = [rest[i] for i in range(len(rest) - 1)
              if CANVAS_ID.match(rest[i]) and CANVAS_ID.match(rest[i + 1]) and rest[i] != user]
    claims += base.claimed_by_others(original, user, PLATFORM)
    return {"name": display_name(who), "lms_name": who, "user": user,
            "attachment": segments[first + 1], "late": late, "file": original,
            "base": (again["base"] if again else stem) + ext,
            "resubmission": int(again["n"]) if again else 0,
            "claims": list(dict.fromkeys(claims)),
            "ambiguous": len(rest) > 1 and bool(CANVAS_ID.match(rest[0]))}


def _anonymous(path, name, module):
    """A file of an anonymously graded Canvas download: its id is Canvas's anonymous id, not
    a user id, so the row keeps no student id (and is flagged)."""
    match = CANVAS_ANONYMOUS.match(name[:MAX_NAME])
    if not match:
        return None
    anon = match["anon"]
    rank = base.module_rank(match["file"], module) + (0, int(match["att"]), name)
    return base.Found(path, "canvas", "canvas-anonymous:" + anon, "", "anon_" + anon, rank,
                      name, "anon", match["att"],
                      [f"Canvas anonymous grading: anon_{anon} is not a user id; no student id "
                       f"is given (match it in Canvas)"], late_flag=bool(match["late"]),
                      file=match["file"])


def _ambiguous(found):
    """A Canvas name with three digits-only segments in a row (`x_10000_10005_90005_a.py`)
    splits two ways: a name part ending in `_10000` (Canvas collapses only `_<digits>_`,
    and a student may set their own name), or a file name starting with digits. Read as
    Canvas reads it, it is user 10000's, but it may be user 10005's. Such a file is never
    graded as the user's while that user has a file that reads one way (it is noted), and
    one that only has such files keeps no student id (flagged), so a student whose name
    ends in another's id can neither replace that student's work nor make a row for
    them."""
    clear = {f.key for f in found if not f.ambiguous}
    for item in found:
        if not item.ambiguous:
            continue
        user, other = item.key.split(":", 1)[1], item.attachment
        if item.key in clear:
            item.outranked = True
            item.flags.append(f"{shown(item.label)} splits two ways (user {user}, or user "
                              f"{other} whose name ends in _{user}): not graded as user "
                              f"{user}'s, who has a file that reads one way")
        else:
            item.flags.append(f"{shown(item.label)} splits two ways (user {user}, or user "
                              f"{other} whose name ends in _{user}): no student id is given "
                              f"until you check whose it is")
            item.key = f"{item.key}:split:{item.lms_name}"
            item.student_id = ""
            item.row_prefix = "unverified"


class Canvas(base.Platform):
    name = "canvas"
    title = "Canvas"
    arrives_as = "a Canvas download"
    listed = 30
    tried = 30
    download_names = True
    download_title = "a Canvas download"
    id_kind = "own"
    id_name = "Canvas user"
    exports = (scores.EXPORT, comments.EXPORT)
    export_inputs = (("--template", "template"),)

    def names_entry(self, name):
        return bool(parse_canvas(name))

    def download_entry(self, name):
        return bool(parse_canvas(name) or CANVAS_ANONYMOUS.match(name))

    def download_of(self, names):
        """Every entry a file at the top with a Canvas download name."""
        return all("/" not in n and self.download_entry(n) for n in names)

    def claims(self, name):
        canvas = parse_canvas(name)
        if canvas:
            return [canvas["user"]] + canvas["claims"]
        segments = name[:MAX_NAME].split("_")   # not Canvas's, still a pair of digit segments
        return [segments[i] for i in range(len(segments) - 2)
                if CANVAS_ID.match(segments[i]) and CANVAS_ID.match(segments[i + 1])]

    def find(self, ctx, path, name, is_dir):
        if is_dir:
            return None   # one file per uploaded file
        anonymous = _anonymous(path, name, ctx.module)
        if anonymous is not None:
            return anonymous
        parts = parse_canvas(name)
        if parts is None:
            return None
        rank = base.module_rank(parts["base"], ctx.module) + (
            int(parts["attachment"]), parts["resubmission"], name)
        found = base.Found(path, "canvas", "canvas:" + parts["user"], student_id(parts["user"]),
                           parts["name"], rank, name, parts["lms_name"], parts["attachment"],
                           base.claim_flags(name, parts["claims"], self.id_name, parts["user"]),
                           late_flag=parts["late"], file=parts["file"])
        found.ambiguous = parts["ambiguous"]
        return found

    def cross_check(self, ctx, found):
        """A name that splits two ways, a user id under two names, an attachment id under
        two users."""
        _ambiguous(found)
        owners = {}
        for item in found:
            owners.setdefault(item.attachment, set()).add(item.key)
        base.one_name_per_id(found, self.id_name)
        for item in found:
            if len(owners.get(item.attachment, ())) > 1:
                item.flags.append(f"Canvas attachment {item.attachment} belongs to more than "
                                  f"one user in this download ({shown(item.label)})")

    def when(self, found):
        return "", "", None   # its file time is when the zip was made; LATE says instead

    def row_name(self, found, key):
        if key.startswith("canvas-anonymous:"):
            return found.student_name or ""
        return super().row_name(found, key)

    def add_export_arguments(self, parser):
        scores.add_arguments(parser)


PLATFORM = base.register(Canvas())
