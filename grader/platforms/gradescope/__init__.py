"""Gradescope: its "Export Submissions" folder, and the autograder zip it runs
(autograder.py, `grader gradescope`), which writes each submission's results.json
(report/gradescope.py).

The export is a folder holding `submission_metadata.yml` and a folder `submission_<id>/` per
submission. The metadata is read (metadata.py: YAML's safe loader, or a small parser where
PyYAML is missing; at most METADATA_BYTES) for each submitter's `:name:`, `:sid:` and
`:email:` and the submission's `:created_at:` (gradescope-metadata, its time); it is never
graded. The id is the `:sid:` (else the email); a group submission lists its members joined
by `;`. Checked against the folders: a folder the metadata does not list has no student
id; metadata entries without a folder and an SID in two submissions are flagged (an SID
alone and in a group, two rows that would each carry it, keeps no id; so does a group whose
SIDs together pass the 400 characters a row holds, never one cut short), and an SID that is
an id only once cleaned (`=12345`) keeps none. A name from the metadata is only looked up
among the folders listed, never joined into a path. Gradescope takes the scores from the
autograder's results.json, so it has no `grader export`; its SIDs go to an LMS's SIS id
column.
"""
import os
import re

from ...intake.layouts import MAX_DISPLAY, MAX_ID, display_name, lstat, shown, student_id
from .. import base
from .metadata import METADATA, read_metadata

GRADESCOPE_FOLDER = re.compile(r"^submission_(?P<id>[0-9]{1,20})$")


class Gradescope(base.Platform):
    name = "gradescope"
    title = "Gradescope"
    arrives_as = "a Gradescope export"
    listed = 50
    tried = 10
    download_names = True
    id_kind = "sis"

    def own_file(self, ctx, path, name):
        """The metadata: read for names, never graded."""
        if name != METADATA:
            return False
        if ctx.allows(self.name):
            self.metadata_for(ctx, os.path.dirname(os.path.abspath(path)))
        ctx.skip(name, "Gradescope's metadata (read for names, never graded)")
        return True

    def one_students(self, path, name):
        return bool(GRADESCOPE_FOLDER.match(name))

    def marked_download(self, ctx, path, name, names):
        return "a Gradescope export" if METADATA in names else None

    def metadata_for(self, ctx, folder):
        """The metadata of the export in `folder` (read once a batch), or None without one."""
        metadata = ctx.state(self).setdefault("metadata", {})
        if folder not in metadata:
            if lstat(os.path.join(folder, METADATA)) is None:
                metadata[folder] = None
            else:
                data, note = read_metadata(os.path.join(folder, METADATA))
                if note:
                    ctx.notes.append(note)
                metadata[folder] = data
        return metadata[folder]

    def find(self, ctx, path, name, is_dir):
        match = GRADESCOPE_FOLDER.match(name)
        if not match:
            return None
        folder = os.path.dirname(os.path.abspath(path))
        meta = self.metadata_for(ctx, folder)
        if meta is None and ctx.layout != self.name:
            return None
        ctx.state(self).setdefault("seen", {}).setdefault(folder, set()).add(name)
        entry = (meta or {}).get(name) or {}
        people = entry.get("people") or []
        raw = [str(p.get("sid") or p.get("email") or "") for p in people]
        ids = [student_id(r) for r in raw]
        names = [display_name(p.get("name") or "") for p in people]
        flags = [f"{shown(name)}: SID {ascii(r)[:60]} in {METADATA} is not an id as it is "
                 f"(it would read as {i or 'nothing'!r}); no student id is given"
                 for r, i in zip(raw, ids) if r and i != r]
        prefix = ""
        if flags:   # "=10000", "10000\n", "１００００": never read as someone's "10000"
            ids, prefix = [], "unverified"
        ids = [i for i in ids if i]
        if len(";".join(ids)) > MAX_ID * 4:   # never cut an SID short (export splits at ";")
            flags.append(f"{shown(name)}: {len(ids)} SIDs in {METADATA} are more than one row "
                         f"holds ({MAX_ID * 4} characters); no student id is given")
            ids, prefix = [], "unverified"
        if not people:
            note = f"{shown(name)}: not in {METADATA}; named after its folder, no student id"
            ctx.notes.append(note)
            flags.append(note)
        key = "gradescope:" + (";".join(ids) if ids else name)
        when = entry.get("created_at") or ""
        return base.Found(path, "gradescope", key, ";".join(ids)[:MAX_ID * 4],
                          "; ".join(n for n in names if n)[:MAX_DISPLAY * 2],
                          (True, True, 0, int(match["id"]), name), name, flags=flags,
                          submitted_at=when, time_source="gradescope-metadata" if when else "",
                          row_prefix=prefix)

    def cross_check(self, ctx, found):
        """An SID in two submissions (no id when their submitters differ); metadata entries
        without a folder."""
        sids, keys = {}, {}
        for item in found:
            for sid in item.student_id.split(";") if item.student_id else ():
                sids.setdefault(sid, set()).add(item.label)
                keys.setdefault(sid, set()).add(item.key)
        for item in found:
            twice = [s for s in item.student_id.split(";") if len(sids.get(s, ())) > 1]
            if twice:
                item.flags.append(f"SID {', '.join(twice[:3])} is in more than one submission "
                                  f"of {METADATA}")
            if any(len(keys.get(s, ())) > 1 for s in twice):
                # alone and in a group (or in two groups): two rows would carry the SID,
                # each with its own score; which is theirs is the instructor's to say
                item.flags.append("those submissions have different submitters, so no "
                                  "student id is given until you check which is theirs")
                item.student_id = ""
                item.row_prefix = "unverified"
        seen = ctx.state(self).get("seen", {})
        for folder, meta in ctx.state(self).get("metadata", {}).items():
            missing = sorted(set(meta or {}) - seen.get(folder, set()))
            if missing:
                ctx.notes.append(f"{METADATA}: {len(missing)} submissions have no folder here "
                                 f"({', '.join(shown(m) for m in missing[:5])})")

    def row_name(self, found, key):
        ident, who = found.student_id or "", found.student_name or ""
        return f"{who}_{ident}" if who and ident else (ident or who or found.label)


PLATFORM = base.register(Gradescope())
