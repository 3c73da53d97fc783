"""The worker's private folder, staged before it starts: the submission and what it may import.

    stage_runtime(stage_dir)                  the worker's runtime/ (copied once per stage folder)
    copy_submission_folder(file, work_dir, max_bytes)
                                              the submission's file and the regular files beside it
"""
import os
import shutil
import stat

RUNTIME_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "runtime")


def stage_runtime(stage_dir):
    """The worker's runtime/, copied under `stage_dir`/shared/ (once): its parent goes on the
    worker's sys.path at level `none`, so it must be listable by a throwaway uid, which the
    stage folder (0711) is not. Returns the copy's path."""
    shared = os.path.join(stage_dir, "shared")
    os.makedirs(shared, mode=0o755, exist_ok=True)
    os.chmod(shared, 0o755)
    runtime = os.path.join(shared, "runtime")
    if not os.path.isdir(runtime):
        shutil.copytree(RUNTIME_DIR, runtime, ignore=shutil.ignore_patterns("__pycache__"))
        for folder, dirs, files in os.walk(runtime):
            os.chmod(folder, 0o755)
            for name in files:
                os.chmod(os.path.join(folder, name), 0o644)
    return runtime


def copy_submission_folder(submission_file, work_dir, max_bytes, max_entries=2000, max_depth=8):
    """Copy the submission's file and the regular files beside it (helpers it may import)
    into the worker's private folder, never through a link, a FIFO or a device, and within a
    budget of bytes and entries. `grader grade` passes intake's staged folder, which holds
    only regular files; a hand run (`pytest tests_hidden --submission FILE`) may point into
    any folder, and what is past the budget is left out."""
    source_dir = os.path.dirname(os.path.abspath(submission_file))
    first = os.path.basename(submission_file)
    inside = os.path.abspath(work_dir) + os.sep  # never copy the worker's own folder into itself
    budget = {"bytes": max_bytes, "entries": max_entries}

    def copy_file(src, dst):
        try:
            fd = os.open(src, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            return
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode) or info.st_size > budget["bytes"]:
                return
            budget["bytes"] -= info.st_size
            with open(fd, "rb", closefd=False) as source, open(dst, "wb") as out:
                shutil.copyfileobj(source, out, length=1 << 16)
        finally:
            os.close(fd)

    def walk(src, dst, depth):
        try:
            entries = sorted(os.scandir(src), key=lambda e: (e.name != first, e.name))
        except OSError:
            return
        for entry in entries:
            if budget["entries"] <= 0:
                return
            budget["entries"] -= 1
            if entry.is_symlink() or inside.startswith(os.path.abspath(entry.path) + os.sep):
                continue
            target = os.path.join(dst, entry.name)
            if entry.is_file(follow_symlinks=False):
                copy_file(entry.path, target)
            elif entry.is_dir(follow_symlinks=False) and depth < max_depth \
                    and entry.name != "__pycache__":
                os.makedirs(target, exist_ok=True)
                walk(entry.path, target, depth + 1)

    os.makedirs(work_dir, exist_ok=True)
    walk(source_dir, work_dir, 0)
