"""`python -m grader` and the `grader` command: a command that grades starts its fork server
first (grader/forkserver.py), so that torch is imported there while the command line's own
modules load and its pre-flight runs."""
import sys

from . import forkserver


def main(argv=None):
    forkserver.start(sys.argv[1:] if argv is None else argv)
    from .cli import main as run  # deferred: after the fork server has started
    return run(argv)


if __name__ == "__main__":
    sys.exit(main())
