"""Each submission's code as intake staged it, kept in the gradebook for `grader similarity`.

`grader grade` keeps what it graded in DIR/<folder>/submitted-code.py (`keep`): the plain
<module>.py intake made of the upload (a notebook's cells wrapped in intake's runner, an odd
encoding decoded, CRLF gone), written atomically, made safe and capped like every other file
of the gradebook. Beside it, DIR/<folder>/submitted-code.json says what intake recorded about
the upload: whether it was a notebook, and its code cells (number and source, as intake ran
them), with the sha256 of the .py it describes. The code reaches here as a field of the
result (outcomes.SubmissionResult.staged_code, read by `staged_code` when intake staged it);
grader/similarity/code.py reads both files back.
"""
import hashlib
import json
import os

from .. import files
from ..outcomes import Kept
from ..textsafety import safe_text

CODE_FILE = "submitted-code.py"
RECORD_FILE = "submitted-code.json"
STORE_BYTES = 2 * 1024 * 1024     # intake's own cap on a .py file (intake/text.py)
MAX_CELLS = 5000


def staged_code(staged):
    """What intake staged (an intake.Staged; None when it refused the upload), as Kept;
    never raises."""
    if staged.error or not staged.file:
        return None
    try:
        with open(staged.file, "rb") as handle:
            data = handle.read(STORE_BYTES + 1)
        cells = staged.cells
        return Kept(data.decode("utf-8", errors="replace"),
                    None if cells is None else [(int(n), str(s)) for n, s in cells])
    except (OSError, TypeError, ValueError):
        return None


def keep(out_dir, folder, kept):
    """Write `kept` (Kept, or a str: the code alone) to DIR/<folder>/submitted-code.py and
    what intake recorded of it to submitted-code.json, or remove both when `kept` is None
    (intake refused the upload). Never raises: a copy for review is not worth a row."""
    try:
        folder = os.path.join(out_dir, folder)
        if isinstance(kept, str):
            kept = Kept(kept)
        if kept is None:
            for name in (RECORD_FILE, CODE_FILE):
                if os.path.lexists(os.path.join(folder, name)):
                    os.remove(os.path.join(folder, name))
            return
        os.makedirs(folder, exist_ok=True)
        data = files.cap_bytes(safe_text(kept.text), STORE_BYTES).encode("utf-8")
        record = {"form": "file" if kept.cells is None else "notebook",
                  "code_sha256": hashlib.sha256(data).hexdigest()}
        if kept.cells is not None:   # held to the code's own cap, as the .py is
            record["cells"], size = [], 0
            for number, source in kept.cells[:MAX_CELLS]:
                size += len(source.encode("utf-8", "replace"))
                if size > STORE_BYTES:
                    break
                record["cells"].append([number, safe_text(source)])
        files.write_bytes(os.path.join(folder, CODE_FILE), data)
        files.write_text(os.path.join(folder, RECORD_FILE), json.dumps(record, ensure_ascii=False))
    except Exception:
        pass
