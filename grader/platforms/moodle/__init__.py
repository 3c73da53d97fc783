"""Moodle: an assignment's "Download all submissions", its grading worksheet and its
feedback files.

The download has a folder (or, without "download submissions in folders", a file prefix)
per student and plugin. Moodle writes `<full name>_<participant id>_assignsubmission_<plugin>_`
and replaces every `_` in the full name with a space, so the first `_` ends the name::

    Fang Wu_10006_assignsubmission_file_/          → id 10006, name Fang Wu (graded)
    Fang Wu_10006_assignsubmission_onlinetext_/    → skipped (the online text)
    Fang Wu_10006_assignsubmission_file_<module>.py

The id is Moodle's participant id, what the assignment's grading worksheet calls
`Participant 10006`. A participant id seen under two names is flagged, and those rows keep
no student id; of one participant's folders (two downloads given together) the one with the
newest file time Moodle kept is graded. Submission times: the newest file time in the
student's folder (moodle-file-time: Moodle's zip keeps its files' times, without a zone, so
unzipping reads them in the local time; recorded as this machine's wall clock, which
course.toml's `timezone` reads in the Moodle server's zone). A Moodle download zip unpacked
here keeps its entries' times (as unzip does).

Its exports: `moodle` and `moodle --with-comments` (worksheet.py: the grading worksheet,
with each student's feedback as its comments), `moodle-feedback-zip` (feedback_zip.py).
"""
import re

from ...intake import times
from ...intake.layouts import MAX_NAME, display_name, shown, student_id
from .. import base
from . import feedback_zip, worksheet

# <full name, no "_">_<participant id>_assign<submission|feedback>_<plugin>_[<file>]
MOODLE = re.compile(r"^(?P<name>[^_]{1,255})_(?P<id>[0-9]{1,20})_assign(?P<kind>submission|feedback)"
                    r"_(?P<plugin>[a-z0-9]{1,40})_(?P<file>.*)$", re.DOTALL)
# anything in a student-chosen name that reads as another student's Moodle prefix
MOODLE_CLAIM = re.compile(r"(?:^|_)(?P<id>[0-9]{1,20})_assign(?:submission|feedback)_")


def parse_moodle(name):
    """{"name", "id", "plugin", "file", "feedback", "claims"} for a Moodle download name (a
    folder `Fang Wu_10006_assignsubmission_file_` or a file
    `..._assignsubmission_file_hw.py`), else None. Moodle writes no `_` in the full
    name, so the name ends at the first `_`; `claims`: other ids the file name part would
    give if it were read as a download name.

        parse_moodle("Fang Wu_10006_assignsubmission_file_")["id"] == "10006"
        parse_moodle("Fang Wu_10006_assignsubmission_onlinetext_")["plugin"] == "onlinetext"
    """
    match = MOODLE.match(name[:MAX_NAME])
    if not match:
        return None
    return {"name": display_name(match["name"]), "lms_name": match["name"], "id": match["id"],
            "plugin": match["plugin"], "file": match["file"], "feedback": match["kind"] == "feedback",
            "claims": base.claimed_ids(match["file"], match["id"])}


class Moodle(base.Platform):
    name = "moodle"
    title = "Moodle"
    arrives_as = "a Moodle download"
    listed = 40
    tried = 40
    download_names = True
    download_title = "a Moodle download"
    id_kind = "own"
    id_name = "Moodle participant"
    exports = (worksheet.EXPORT, feedback_zip.EXPORT)

    def names_entry(self, name):
        return bool(parse_moodle(name))

    def download_of(self, names):
        """Every entry under (or itself) a Moodle download name."""
        return all(parse_moodle(n.split("/", 1)[0]) for n in names)

    def one_students(self, path, name):
        return bool(parse_moodle(name))

    def claims(self, name):
        return [m["id"] for m in MOODLE_CLAIM.finditer(name[:MAX_NAME])]

    def find(self, ctx, path, name, is_dir):
        parts = parse_moodle(name)
        if parts is None:
            return None
        if parts["feedback"] or parts["plugin"] != "file":
            ctx.notes.append(f"skipped {shown(name)}: Moodle's {parts['plugin']} "
                             f"{'feedback' if parts['feedback'] else 'submission'}, not a file "
                             f"submission")
            return False
        if not is_dir and not parts["file"]:
            return None
        rank = (True, True) if is_dir else base.module_rank(parts["file"], ctx.module)
        flags = (base.folder_claims(path, parts["id"], self.id_name) if is_dir
                 else base.claim_flags(name, parts["claims"], self.id_name, parts["id"]))
        # the newest file time Moodle kept (two downloads given together: the later one counts)
        return base.Found(path, "moodle", "moodle:" + parts["id"], student_id(parts["id"]),
                          parts["name"], rank + (times.file_time(path), 0, name), name,
                          parts["lms_name"], flags=flags, file="" if is_dir else parts["file"])

    def cross_check(self, ctx, found):
        base.one_name_per_id(found, self.id_name)

    def when(self, found):
        # Moodle's times carry no zone: kept as this machine's wall clock (course.py reads
        # them in course.toml's timezone), also for a download zip unpacked here
        moment = times.file_time(found.path, local=True)
        return moment, "moodle-file-time" if moment else "", None

    def add_export_arguments(self, parser):
        parser.add_argument("--with-comments", action="store_true",
                            help="Moodle: add each student's feedback.txt as the worksheet's "
                                 "Feedback comments column (enable the assignment's feedback "
                                 "comments and offline grading worksheet)")


PLATFORM = base.register(Moodle())
