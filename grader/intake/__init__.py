"""Intake: turn whatever a student uploaded into one folder holding a plain `<module>.py`.

`<module>` is the assignment's module name (its declaration's `module`, grader/assignment.py:
`stage(..., module=assignment.module)`); without one, the default assignment's.

A submission is a `.py` file, an `.ipynb` notebook, a `.zip` archive or a folder. Intake
finds the student's code in it, reads it as text whatever the editor did to it, converts a
notebook to a module, and copies the student's other .py files beside it (their own
helpers). What it cannot accept becomes an IntakeError whose message tells the student
what is wrong; what it changed becomes a note in the feedback.

Intake trusts nothing it is given (safeio.py): it reads regular files only, never follows
a symbolic link (not the submitted path, not a folder inside it, not a file), never opens
a named pipe, socket or device, reads at most each size limit plus one byte, and gives up
on a submission after INTAKE_SECONDS. `stage` never raises: whatever goes wrong with the submission
becomes its reason for being `not gradable`; an unexpected failure of intake itself sets
`Staged.grader_failed`, so the row is a grader error (regraded, never exported as 0).

Found, not guessed: a folder whose only work is a zip (a Moodle folder holding `作业.zip`)
is opened, one level, with archive.py's checks. When nothing gradable is found at all (no
code file, only a PDF, an empty folder) the error is NothingFound and `Staged.missing` is
set: the row is "missing work", not an earned zero; a file that was found but cannot be
read keeps "not gradable".
"""
import contextlib
import dataclasses
import os
import re
import shutil
import stat
import tempfile

from ..i18n import N_, _, ngettext
from ..textsafety import safe_text
from .archive import extract
from .errors import IntakeError, NothingFound
from .naming import file_names, like, module_name
from .notebook import MAX_NOTEBOOK_BYTES, cells_of, notebook_to_module
from .safeio import (DIR_FLAGS, INTAKE_SECONDS, Deadline, IntakeTimeout, kind_text,
                     open_entry, open_submitted, read_entry, read_fd, refusal, shown, walk)
from .text import MAX_SOURCE_BYTES, decode_source

__all__ = ["IntakeError", "NothingFound", "Staged", "stage", "submission_names"]

SKIP_DIRS = {"__MACOSX", "__pycache__", ".git", ".ipynb_checkpoints", "node_modules", ".venv", "venv"}
NOT_THE_SUBMISSION = re.compile(r"^(test_.*|.*_test|conftest|setup|sitecustomize|usercustomize)\.py$")
MAX_HELPER_BYTES = 2 * 1024 * 1024


@dataclasses.dataclass
class Staged:
    name: str                 # the submission's name in the gradebook and the output folder
    source: str               # what was uploaded
    file: str = None          # the staged <module>.py
    notes: list = dataclasses.field(default_factory=list)
    error: str = None         # why it cannot be graded (IntakeError), if so
    missing: bool = False     # nothing gradable was found (NothingFound): "missing work"
    grader_failed: bool = False  # intake itself failed (a bug of ours): a grader error, never a 0
    cells: list = None        # [(number, source)] when the work was a notebook (None: a .py)


def _is_real_folder(path):
    try:
        return stat.S_ISDIR(os.lstat(os.path.normpath(path)).st_mode)
    except (OSError, ValueError):
        return False


def submission_names(paths, module=None):
    """A unique name per submission: the file or folder name without its extension.

    nbgrader's layout `submitted/<student>/<module>/` names it after the student; names
    that still collide get the parent folder's name, then a counter.
    """
    folder_name = module_name(module).lower()
    def base(path):
        path = os.path.normpath(path)
        name = os.path.basename(path)
        stem, ext = os.path.splitext(name)
        if ext.lower() in (".py", ".ipynb", ".zip"):
            name = stem
        parent = os.path.basename(os.path.dirname(path))
        if _is_real_folder(path) and name.lower() == folder_name and parent:
            name = parent
        return name

    names = [base(p) for p in paths]
    counts = {name: names.count(name) for name in names}
    for i, name in enumerate(names):
        if counts[name] > 1:
            parent = os.path.basename(os.path.dirname(os.path.abspath(paths[i])))
            names[i] = f"{parent}-{name}" if parent else name
    taken = set()
    for i, name in enumerate(names):
        unique, counter = name, 1
        while unique in taken:
            counter += 1
            unique = f"{name}-{counter}"
        taken.add(unique)
        names[i] = unique
    return names


def _skip_dir(name):
    return name in SKIP_DIRS or name.startswith(".")


def _listing(entries):
    def one(entry):
        return entry.shown + (f" ({kind_text(entry.kind)})" if entry.kind else "")
    return ", ".join(one(e) for e in entries[:10]) or _("nothing")


def locate(entries, label, module=None, earlier=()):
    """The entry (from safeio.walk) that holds the student's code (`<module>.py`, then
    `<module>.ipynb`, then either with an LMS's resubmission suffix, then the only code
    file); it may be a link or another non-regular file, which the caller then refuses
    with its reason. A file named as an earlier module of `earlier` (`<earlier>.py` or
    `.ipynb`, handed in beside the work as asked) is never the work."""
    module = module_name(module)
    source, notebook = file_names(module)
    theirs = {name for e in earlier for name in file_names(e)}
    entries = [e for e in entries if e.name not in theirs]
    suffixed = like(module)
    def pick(test):
        matches = [e for e in entries if test(e.name)]
        if not matches:
            return None
        best = min(e.depth for e in matches)
        shallowest = [e for e in matches if e.depth == best]
        if len(shallowest) > 1:
            raise IntakeError(_("{label} holds several candidate files ({files}); keep only "
                                "one.").format(label=label,
                                               files=", ".join(e.shown for e in shallowest[:10])))
        return shallowest[0]

    for test in (lambda n: n == source,
                 lambda n: n == notebook,
                 lambda n: n.lower().endswith(".py") and suffixed.match(n[:-3]),
                 lambda n: n.lower().endswith(".ipynb") and suffixed.match(n[:-6])):
        chosen = pick(test)
        if chosen:
            return chosen
    py = [e for e in entries if e.name.endswith(".py") and not NOT_THE_SUBMISSION.match(e.name)]
    notebooks = [e for e in entries if e.name.endswith(".ipynb")]
    for group, others in ((py, ()), (notebooks, py)):
        regular = [e for e in group if e.kind is None]
        if not others and len(regular) == 1:
            return regular[0]
        if not others and not regular and len(group) == 1:
            return group[0]  # refused by the caller, with what it is
    # code that could be the work (found, but which?) or something refused (a link, a pipe)
    # is not gradable; nothing at all that could be code is missing work
    error = IntakeError if py or notebooks or any(e.kind for e in entries) else NothingFound
    raise error(_("{label} has no {module} (looked for {module} or {notebook}, else one other "
                  ".py or .ipynb file, also inside one zip; it contains: {listing}). Name your "
                  "file {module}.").format(label=label, module=source, notebook=notebook,
                                           listing=_listing(entries)))


def _convert(data, label, is_notebook, module_file):
    if is_notebook:
        return notebook_to_module(data, label, module_file)
    return decode_source(data, label)


def _limit(name):
    if name.lower().endswith(".ipynb"):
        return MAX_NOTEBOOK_BYTES, N_("notebook")
    return MAX_SOURCE_BYTES, N_("source file")


def _skipped_note(label, skipped):
    listed = "; ".join(f"{e.shown}: {kind_text(e.kind)}" for e in skipped[:5])
    more = _("; and {count} more").format(count=len(skipped) - 5) if len(skipped) > 5 else ""
    count = ngettext("1 entry that is not a regular file",
                     "{count} entries that are not regular files", len(skipped)).format(
                         count=len(skipped))
    return _("{label}: skipped {count} ({listed}{more}); the grader reads only regular files, "
             "never links, pipes or devices.").format(label=label, count=count, listed=listed,
                                                      more=more)


@dataclasses.dataclass
class _Intake:
    """One staging's settings and what it holds open: the file descriptors it opened (closed
    last first) and the one folder a zip was unpacked into (removed), both by release()."""
    staged: Staged
    dest: str
    module: str
    module_file: str
    earlier: tuple
    deadline: Deadline = None
    opened: list = dataclasses.field(default_factory=list)
    unpacked: str = None

    def unzip_into(self):
        """A new temporary folder to unpack a zip into (release() removes it)."""
        self.unpacked = tempfile.mkdtemp(prefix="attnkit-unzip-")
        return self.unpacked

    def open_folder(self, folder):
        """A descriptor of `folder`, held until release()."""
        root = os.open(folder, DIR_FLAGS)
        self.opened.append(root)
        return root

    def release(self):
        for fd in reversed(self.opened):
            os.close(fd)
        if self.unpacked:
            shutil.rmtree(self.unpacked, ignore_errors=True)


def stage(path, dest, name, seconds=INTAKE_SECONDS, module=None, earlier=(), companions=()):
    """Stage the submission at `path` into the new folder `dest` as `<module>.py` (module:
    the assignment's module name; None: the default assignment's); never raises.
    `earlier`: the module names of the earlier assignments the student provides themselves
    (`builds_on` with provide = "student"): such a module handed in as a notebook beside the
    work (`<earlier>.ipynb`, no `<earlier>.py`) is converted as the work itself is.
    `companions`: ((earlier module, path), ...), such a module uploaded as a file of its own
    (layouts.resolve): read, bounded and converted the same way, unless the work's folder
    or zip already held it.

    What cannot be staged sets `error` (the student's reason) and leaves `file` None.
    """
    staged = Staged(name=name, source=path)
    module = module_name(module)
    job = _Intake(staged, dest, module, file_names(module)[0], earlier)
    try:
        os.makedirs(dest, exist_ok=True)
        if not os.fsdecode(path):
            raise IntakeError(_("no submission path was given."))
        norm = os.path.normpath(os.fsdecode(path))  # no trailing slash: lstat sees a link
        label = shown(os.path.basename(norm) or norm)
        job.deadline = Deadline(seconds, label, job.module_file)
        with _unreadable(label):
            text = _take_in(job, norm, label)
            file = os.path.join(dest, job.module_file)
            with open(file, "w", encoding="utf-8") as handle:
                handle.write(text)
            staged.file = file
            for earlier_module, companion in companions:
                _stage_companion(companion, earlier_module, dest, staged.notes, job.deadline,
                                 job.module_file)
    except IntakeError as error:
        staged.error = safe_text(str(error), 4000)
        staged.missing = isinstance(error, NothingFound)
    except Exception as error:  # a bug of ours must still not cost the gradebook its row
        staged.error = safe_text(_("the grader could not take in this submission ({error}); tell "
                                   "your instructor.").format(
                                       error=f"{type(error).__name__}: {error}"), 4000)
        staged.grader_failed = True   # the grader's failure: never a 0 the student earned
    finally:
        job.release()
    if staged.error:
        staged.file, staged.cells = None, None
    staged.notes = [safe_text(note, 2000) for note in staged.notes]
    return staged


@contextlib.contextmanager
def _unreadable(label):
    """Around reading the submission `label`: an OSError or a failure to decode or parse it
    becomes the IntakeError that says it could not be read (an IntakeError passes as is)."""
    try:
        yield
    except IntakeError:
        raise
    except OSError as error:
        reason = os.strerror(error.errno) if error.errno else type(error).__name__
        raise IntakeError(_("{label} could not be read ({reason}).").format(
            label=label, reason=reason)) from None
    except (ValueError, UnicodeError, RecursionError, MemoryError, LookupError) as error:
        raise IntakeError(_("{label} could not be read ({reason}).").format(
            label=label, reason=f"{type(error).__name__}: {shown(str(error), 300)}")) from None


def _take_in(job, norm, label):
    """The text of the work at `norm` (a .py file, a notebook, a zip or a folder; `label`:
    its name as shown) as `<module>.py`; a folder's or zip's other files are staged too."""
    fd, is_folder = open_submitted(norm, label)
    job.opened.append(fd)
    if is_folder:
        return _from_folder(job, fd, label, is_folder)
    if norm.lower().endswith(".zip"):
        unpacked = job.unzip_into()
        job.staged.notes += extract(norm, unpacked, label, deadline=job.deadline, fd=fd)
        return _from_folder(job, job.open_folder(unpacked), label, is_folder)
    return _from_file(job, fd, norm, label)


def _from_file(job, fd, norm, label):
    """The text of the single file open at `fd` (a .py file or a notebook, named `norm`)."""
    if not norm.lower().endswith((".py", ".ipynb")):
        raise NothingFound(_("{label} is not a .py file, a notebook, a zip or a "
                             "folder.").format(label=label))
    limit, what = _limit(norm)
    data = read_fd(fd, limit, label, job.deadline, what)
    text, notes = _convert(data, label, norm.lower().endswith(".ipynb"), job.module_file)
    job.staged.notes += notes
    job.staged.cells = cells_of(text) if norm.lower().endswith(".ipynb") else None
    return text


def _from_folder(job, root, label, is_folder):
    """The text of the work found in the folder open at `root` (a submitted folder, or a
    zip unpacked); its helpers and earlier modules are copied into job.dest."""
    root, entries, chosen = _choose(job, root, label, is_folder)
    if not chosen.name.lower().endswith((".py", ".ipynb")):
        raise IntakeError(_("{label} is not a .py file, a notebook, a zip or a "
                            "folder.").format(label=label))
    if chosen.kind:
        raise IntakeError(refusal(chosen.shown, chosen.kind))
    staged, deadline, module_file = job.staged, job.deadline, job.module_file
    skipped = [e for e in entries if e.kind]
    staged.notes += [_skipped_note(label, skipped)] if skipped else []
    limit, what = _limit(chosen.name)
    data = read_entry(root, chosen, limit, chosen.shown, deadline, what)
    text, notes = _convert(data, chosen.shown, chosen.name.lower().endswith(".ipynb"),
                           module_file)
    staged.notes += notes
    staged.cells = cells_of(text) if chosen.name.lower().endswith(".ipynb") else None
    _copy_helpers(root, entries, chosen, job.dest, staged.notes, deadline, module_file)
    _convert_earlier(root, entries, chosen, job.dest, staged.notes, deadline,
                     job.earlier, module_file)
    return text


def _choose(job, root, label, is_folder):
    """(root, entries, the entry of the work) of the folder open at `root`; a submitted
    folder whose only work is a zip has that zip opened, its folder then the root."""
    entries, notes = walk(root, label, job.deadline, _skip_dir)
    job.staged.notes += notes
    try:
        return root, entries, locate(entries, label, job.module, job.earlier)
    except NothingFound:
        inner = _only_zip(entries) if is_folder else None
        if inner is None:
            raise
        root = _open_inner_zip(job, root, inner, label)
        entries, notes = walk(root, inner.shown, job.deadline, _skip_dir)
        job.staged.notes += notes
        return root, entries, locate(entries, inner.shown, job.module, job.earlier)


def _open_inner_zip(job, root, inner, label):
    """The folder `inner` (a zip in the folder open at `root`) unpacks into, opened."""
    unpacked = job.unzip_into()
    zip_fd = open_entry(root, inner, inner.shown)
    try:
        job.staged.notes += extract(None, unpacked, inner.shown, deadline=job.deadline,
                                    fd=zip_fd)
    finally:
        os.close(zip_fd)
    job.staged.notes.append(_("{label}: the work was in {zip}, which was "
                              "opened.").format(label=label, zip=inner.shown))
    return job.open_folder(unpacked)


def _only_zip(entries):
    """The one regular .zip in a folder with no code in it (a Moodle folder holding
    `作业.zip`), or None when there is none or more than one."""
    zips = [e for e in entries if e.kind is None and e.name.lower().endswith(".zip")]
    return zips[0] if len(zips) == 1 else None


def _convert_earlier(root, entries, chosen, dest, notes, deadline, earlier, module_file):
    """Each earlier module of `earlier` handed in beside the work as a notebook only
    (`<earlier>.ipynb`, no `<earlier>.py` there) becomes `<earlier>.py` in `dest`, converted
    and bounded as the work itself is; one that cannot be converted is said in a note (the
    import of it then fails with its own explanation) and never stops the work's grading."""
    beside = {e.name: e for e in entries if e.parts[:-1] == chosen.parts[:-1] and e is not chosen}
    for name in earlier:
        source, notebook = file_names(name)
        entry = beside.get(notebook)
        if entry is None or source == module_file or os.path.exists(os.path.join(dest, source)):
            continue   # none, or the student's own <earlier>.py came with the helpers
        limit, what = _limit(entry.name)
        _write_earlier(lambda: read_entry(root, entry, limit, entry.shown, deadline, what),
                       entry.shown, True, source, dest, notes, module_file)


# what converting a student's file may raise besides IntakeError (deep or huge JSON, a
# number past int's digit limit, an odd encoding): the earlier module's failure, said
_UNCONVERTIBLE = (OSError, ValueError, UnicodeError, RecursionError, MemoryError, LookupError)


def _write_earlier(read, label, notebook, source, dest, notes, module_file):
    """The one way an earlier module is staged (beside the work, or uploaded apart):
    `read()` gives its bytes, bounded; a notebook is converted, a .py decoded, and the text
    written as `source` in `dest`. What fails is said in a note and never stops the work's
    grading (the import of it then fails with its own explanation). True when written."""
    try:
        data = read()
        text, converted = (notebook_to_module(data, label, source) if notebook
                           else decode_source(data, label))
    except IntakeTimeout:
        raise
    except IntakeError as error:
        _earlier_failed(notes, label, module_file, source, str(error))
        return False
    except _UNCONVERTIBLE as error:
        _earlier_failed(notes, label, module_file, source,
                        f"{type(error).__name__}: {shown(str(error), 300)}")
        return False
    notes += converted
    with open(os.path.join(dest, source), "w", encoding="utf-8") as handle:
        handle.write(text)
    return True


def _earlier_failed(notes, shown_name, module_file, source, reason):
    notes.append(_("{notebook}, your work of the earlier assignment that {module} "
                   "imports, could not be converted to {earlier}: {reason}").format(
                       notebook=shown_name, module=module_file, earlier=source,
                       reason=reason))


def _stage_companion(path, earlier, dest, notes, deadline, module_file):
    """The earlier module `earlier` uploaded as a file of its own (`path`: a .py or a
    notebook, never a link or a folder) becomes `<earlier>.py` in `dest`, read and converted
    as the work is (_write_earlier); a file there already (from the work's own folder or
    zip) wins, and both cases are said."""
    source = file_names(earlier)[0]
    norm = os.path.normpath(os.fsdecode(path))
    label = shown(os.path.basename(norm))
    if source == module_file:
        return
    if os.path.exists(os.path.join(dest, source)):
        notes.append(_("{file} was not used as your {earlier}: the work was handed in with "
                       "its own {earlier}, which was used.").format(file=label, earlier=source))
        return

    def read():
        fd, is_folder = open_submitted(norm, label)
        try:
            if is_folder or not norm.lower().endswith((".py", ".ipynb")):
                raise IntakeError(_("{label} is not a .py file or a notebook.").format(
                    label=label))
            limit, what = _limit(norm)
            return read_fd(fd, limit, label, deadline, what)
        finally:
            os.close(fd)

    if _write_earlier(read, label, norm.lower().endswith(".ipynb"), source, dest, notes,
                      module_file):
        notes.append(_("{file} was used as your {earlier}, the module of the earlier "
                       "assignment that {module} imports.").format(
                           file=label, earlier=source, module=module_file))


def _copy_helpers(root, entries, chosen, dest, notes, deadline, module_file):
    """The student's other modules beside `module_file` (their own helpers), as text, read
    the same way as the work itself."""
    odd = []
    for entry in entries:
        if (entry.parts[:-1] != chosen.parts[:-1] or entry is chosen or entry.kind
                or not entry.name.endswith(".py") or entry.name == module_file
                or entry.size > MAX_HELPER_BYTES):
            continue
        if safe_text(entry.name) != entry.name or os.sep in entry.name:
            odd.append(entry)
            continue
        try:
            data = read_entry(root, entry, MAX_HELPER_BYTES, entry.shown, deadline, N_("helper file"))
            text, _notes = decode_source(data, entry.shown)
        except IntakeTimeout:
            raise
        except IntakeError:
            continue
        with open(os.path.join(dest, entry.name), "w", encoding="utf-8") as handle:
            handle.write(text)
    if odd:
        notes.append(_("{count} helper files have names the grader cannot use ({files}) and "
                       "were not copied; rename them.").format(
                           count=len(odd), files=", ".join(e.shown for e in odd[:5])))
