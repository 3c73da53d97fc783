"""Where the kit is: beside the `grader` package in a checkout, else the current folder.

Where an assignment's files are is its declaration's (grader/assignment.py)."""
import os

_PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KIT_ROOT = (_PACKAGE_PARENT if os.path.isdir(os.path.join(_PACKAGE_PARENT, "tests_hidden"))
            else os.getcwd())
