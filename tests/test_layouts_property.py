"""Generated LMS downloads (Hypothesis): identity comes only from what the LMS controls.

Each example builds a real folder named exactly as the LMS names it, from a class whose
students choose arbitrary original file names (imitations of classmates' download names,
LATE, digits, underscores, unicode) and, for Moodle, arbitrary full names:

- Canvas (lib/content_zipper.rb): `<name>[_LATE]_<user id>_<attachment id>_<file>`, the
  name being the sortable name lower-cased with `_<digits>_` collapsed and every non-word
  character removed, the file name with `\\/:*?"<>|` and NUL made `_`; re-uploads of
  attention.py are attention-1.py, attention-2.py, ... with rising attachment ids.
- Moodle (mod/assign): `<full name with "_" made " ">_<participant id>_assignsubmission_file_`,
  a folder per student, or (without folders) that prefix before each file name;
  clean_filename removes control characters and &<>"`|':\\/.

Whatever the names, every file lands under its own uploader's id, every student has one
row, and that row grades the student's latest attention file. The expectation comes from
the generator (which file it made for whom, in which order), never from the code under test.

Not generated, by design: Canvas names that still hold a digits-only `_` segment after
Canvas's own cleaning (a name ending in `_5`), which Canvas itself reads back wrongly (the
grader reads them as Canvas does and flags them); an empty Canvas name part.
Hermetic: derandomized, no example database; runs in seconds.
"""
import os
import re
import shutil
import tempfile
import unicodedata

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grader.intake import layouts

SCRATCH = "/dev/shm" if os.access("/dev/shm", os.W_OK | os.X_OK) else None
SETTINGS = settings(max_examples=80, deadline=None, derandomize=True, database=None,
                    suppress_health_check=list(HealthCheck))
TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
               min_size=1, max_size=24)


# --- what Canvas writes ----------------------------------------------------------------------

def _ruby_word(char):
    category = unicodedata.category(char)
    return category[0] in "LM" or category in ("Nd", "Pc")


def canvas_prefix(sortable, late, user):
    """ContentZipper#get_filename: sanitize_user_name, join with LATE and the id, then
    sanitize_file_name (gsub(/[^[[:word:]]]/, ""))."""
    name = re.sub(r"_([0-9]+)_", r"\1", sortable.lower())
    joined = "_".join(part for part in (name, "LATE" if late else None, str(user))
                      if part is not None)
    return "".join(c for c in joined if _ruby_word(c))


def canvas_file(name):
    """sanitize_attachment_filename: gsub(%r{[\\x00/\\\\:*?"<>|]+}, "_")."""
    return re.sub(r'[\x00/\\:*?"<>|]+', "_", name)


def canvas_name_ok(prefix, late, user):
    """Names the property covers (see the module docstring)."""
    tail = ("_LATE_" if late else "_") + str(user)
    who = prefix[:-len(tail)]
    return bool(who) and not any(re.fullmatch(r"[0-9]+", seg) for seg in who.split("_"))


@st.composite
def canvas_class(draw):
    count = draw(st.integers(1, 5))
    users = draw(st.lists(st.integers(1, 10**8), min_size=count, max_size=count, unique=True))
    students = []
    for user in users:
        sortable = draw(st.one_of(TEXT, st.sampled_from(["wang_li", "Li, Wang", "x_9_y", "王力",
                                                         "o'brien", "a__b", "late"])))
        late = draw(st.booleans())
        students.append({"user": user, "sortable": sortable, "late": late,
                         "uploads": draw(st.integers(1, 3))})
    # what students choose: anything, including classmates' download names
    def chosen(other):
        prefix = canvas_prefix(other["sortable"], other["late"], other["user"])
        return st.one_of(
            TEXT.map(lambda t: t + ".py"), TEXT,
            st.sampled_from(["", "_", "LATE_"]).flatmap(lambda lead: st.integers(1, 10**9).map(
                lambda att: f"{lead}{other['user']}_{att}_attention.py")),
            st.integers(1, 10**9).map(lambda att: f"{prefix}_{att}_attention-9.py"),
            st.integers(1, 10**9).map(lambda n: f"{n}_{n}_{n}.ipynb"),
            st.just(f"{other['sortable']}_{other['user']}_assignsubmission_file_a.py"))
    for student in students:
        others = [s for s in students if s is not student] or [student]
        student["extras"] = draw(st.lists(st.sampled_from(others).flatmap(chosen), max_size=3))
    return students


def _write(folder, name, data):
    path = os.path.join(folder, name)
    with open(path, "wb") as handle:
        handle.write(data)
    return path


@SETTINGS
@given(canvas_class(), st.randoms(use_true_random=False))
def test_canvas_files_land_under_their_uploaders(students, rnd):
    root = tempfile.mkdtemp(prefix="attnkit-canvas-prop-", dir=SCRATCH)
    try:
        download = os.path.join(root, "download")
        os.mkdir(download)
        owner, latest, covered = {}, {}, []
        events = [(s, "main", None) for s in students for _ in range(s["uploads"])]
        events += [(s, "extra", name) for s in students for name in s["extras"]]
        rnd.shuffle(events)                   # the class uploads in some order
        attachment, mains = rnd.randrange(10**6, 10**7), {}
        for student, kind, what in events:   # each upload a newer attachment than the last
            attachment += rnd.randrange(1, 1000)
            if kind == "main":               # the n-th upload of attention.py: attention-n.py
                what = mains[student["user"]] = mains.get(student["user"], -1) + 1
            prefix = canvas_prefix(student["sortable"], student["late"], student["user"])
            if not canvas_name_ok(prefix, student["late"], student["user"]):
                continue
            if kind == "main":
                original = "attention.py" if what == 0 else f"attention-{what}.py"
            else:
                original = canvas_file(what)
                if not original or os.path.splitext(original)[0].casefold().startswith("attention"):
                    continue   # another attention file of theirs: which counts is not generated
            name = f"{prefix}_{attachment}_{original}"
            if len(name.encode("utf-8")) > 255:
                continue
            path = _write(download, name, name.encode("utf-8", "surrogatepass"))
            owner[path] = str(student["user"])
            if kind == "main":
                latest[str(student["user"])] = path   # mains come in upload order
        covered = {str(s["user"]): s for s in students if str(s["user"]) in latest}
        if not owner:
            return   # nobody's name is one the property covers (an empty download)
        batch = layouts.resolve([download])
        for sub in batch.submissions:
            assert sub.layout == "canvas", (sub, batch.notes)
            assert owner[sub.path] == sub.student_id, (sub, batch.notes)
        got = {sub.student_id: sub for sub in batch.submissions}
        assert len(got) == len(batch.submissions)
        assert set(got) == set(latest) | {owner[p] for p in owner if owner[p] not in latest}
        for user, path in latest.items():
            assert got[user].path == path, (user, got[user], batch.notes)
            assert got[user].late_flag is covered[user]["late"]
            if not covered[user]["extras"]:
                assert got[user].flags == []
    finally:
        shutil.rmtree(root, ignore_errors=True)


# --- what Moodle writes ----------------------------------------------------------------------

def clean_filename(text):
    """Moodle's clean_param(PARAM_FILE), the part that matters here."""
    return re.sub(r"[\x00-\x1f\x7f&<>\"`|':\\/]", "", text)


def moodle_prefix(full_name, ident):
    return clean_filename(full_name.replace("_", " ") + "_" + str(ident))


@st.composite
def moodle_class(draw):
    count = draw(st.integers(1, 5))
    ids = draw(st.lists(st.integers(1, 10**7), min_size=count, max_size=count, unique=True))
    students = [{"id": i} for i in ids]
    for student in students:
        others = [s for s in students if s is not student] or [student]
        other = draw(st.sampled_from(others))
        student["name"] = draw(st.one_of(
            TEXT, st.sampled_from(["Fang Wu", "张 伟", "Zhou_Tao", "9", "_"]),
            st.just(f"Zhou Tao_{other['id']}_assignsubmission_file_"),
            st.just(f"x_{other['id']}_assignsubmission_file_attention.py")))
        student["extras"] = draw(st.lists(st.one_of(
            TEXT.map(lambda t: t + ".py"),
            st.just(f"Zhou Tao_{other['id']}_assignsubmission_file_attention.py"),
            st.just(f"wangli_{other['id']}_{other['id']}_attention.py")), max_size=3))
        student["text"] = draw(st.booleans())   # an online text beside the file
    return students


@SETTINGS
@given(moodle_class(), st.booleans())
def test_moodle_files_land_under_their_uploaders(students, folders):
    root = tempfile.mkdtemp(prefix="attnkit-moodle-prop-", dir=SCRATCH)
    try:
        download = os.path.join(root, "download")
        os.mkdir(download)
        owner, expected = {}, {}
        for student in students:
            prefix = moodle_prefix(student["name"], student["id"])
            ident = str(student["id"])
            if not prefix.split("_")[0] or len(prefix.encode()) > 150:
                continue   # an empty or too long full name (Moodle requires a name)
            extras = [clean_filename(e) for e in student["extras"]]
            extras = [e for e in extras if e and e not in (".", "..") and len(e.encode()) < 90
                      and not os.path.splitext(e)[0].casefold().startswith("attention")]
            if folders:
                folder = os.path.join(download, f"{prefix}_assignsubmission_file_")
                os.mkdir(folder)
                for name in ["attention.py"] + extras:
                    _write(folder, name, b"x = 1\n")
                owner[folder] = ident
                expected[ident] = folder
            else:
                for name in ["attention.py"] + extras:
                    path = _write(download, f"{prefix}_assignsubmission_file_{name}", b"x = 1\n")
                    owner[path] = ident
                expected[ident] = os.path.join(download, f"{prefix}_assignsubmission_file_attention.py")
            if student["text"]:
                text = os.path.join(download, f"{prefix}_assignsubmission_onlinetext_")
                os.mkdir(text)
                _write(text, "onlinetext.html", b"<p>hi</p>")
        if not owner:
            return
        batch = layouts.resolve([download])
        for sub in batch.submissions:
            assert sub.layout == "moodle", (sub, batch.notes)
            assert owner[sub.path] == sub.student_id, (sub, batch.notes)
        got = {sub.student_id: sub.path for sub in batch.submissions}
        assert got == expected, batch.notes
    finally:
        shutil.rmtree(root, ignore_errors=True)
