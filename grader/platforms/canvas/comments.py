"""`grader export canvas-comments --out DIR`: each student's feedback, for Canvas's
submission comments.

Canvas's re-upload of a submissions zip attaches each file under the *student's* file name
(assignment.rb, infer_comment_context_from_filename: display_name = the student's
attachment's), so feedback.html would reach them named attention.py; the submission-comment
API is used instead: DIR/comments.json (each student's Canvas user id, or
sis_user_id:/sis_login_id: as the score export's columns, and their feedback.txt,
platforms/feedback.py) and DIR/post_comments.py (this package's
post_comments.py, standard library only), which a course runs with its own token.
"""
import json
import os
import shutil

from ... import files
from ...report.gradebook import text_cell
from ..exports import Export, column, exportable, foreign, members
from ..feedback import with_feedback

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "post_comments.py")


def canvas_user(row, ident):
    """The :user_id Canvas's API takes for one of a row's ids (as the score export's columns:
    a Canvas download's user id, an institution's id (a Gradescope SID) as sis_user_id, a
    name as sis_login_id)."""
    where = column(row)
    if where == "canvas":
        return ident
    return f"sis_user_id:{ident}" if where == "sis" else f"sis_login_id:{ident}"


def canvas_comments(out_dir, rows, target_dir, missing_as_zero=False):
    """Write target_dir/comments.json and target_dir/post_comments.py; returns (comments,
    notes)."""
    keep, notes = exportable(rows, missing_as_zero)
    canvas = []
    for row in keep:
        if column(row) not in ("canvas", "sis", "login"):
            notes.append(foreign(row, "Canvas"))
        else:
            canvas.append(row)
    comments = []
    for row, text, _page in with_feedback(out_dir, canvas, notes):
        for ident, name in members(row):
            comments.append({"user": canvas_user(row, ident), "name": text_cell(name),
                             "score": row.get("total"), "text": text})
    os.makedirs(target_dir, exist_ok=True)
    files.write_bytes(os.path.join(target_dir, "comments.json"), json.dumps(
        {"format": "attention-kit canvas comments 1", "comments": comments},
        ensure_ascii=False, indent=1).encode("utf-8"))
    script = os.path.join(target_dir, "post_comments.py")
    shutil.copyfile(SCRIPT, script)
    os.chmod(script, 0o755)
    return comments, notes


class CommentsExport(Export):
    kind = "canvas-comments"
    help = ("canvas-comments: a folder with each student's feedback and the script that "
            "posts it as submission comments")
    feedback = True
    writes = "folder"
    holds = "comments.json and post_comments.py"
    first_file = "comments.json"

    def write(self, args, source, rows, state, say):
        comments, notes = canvas_comments(source, rows, args.out,
                                          getattr(args, "export_missing_as_zero", False))
        for note in notes:
            say(note)
        return (f"Wrote {os.path.join(args.out, 'comments.json')}: {len(comments)} student(s)' "
                f"feedback, and {os.path.join(args.out, 'post_comments.py')}, which posts it "
                f"(CANVAS_TOKEN=... python3 post_comments.py --canvas https://... --course ID "
                f"--assignment ID [--post])")


EXPORT = CommentsExport()
