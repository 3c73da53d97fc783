"""Where the kit's folders are: beside the `grader` package in a checkout, else the current folder."""
import os

_PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KIT_ROOT = (_PACKAGE_PARENT if os.path.isdir(os.path.join(_PACKAGE_PARENT, "tests_hidden"))
            else os.getcwd())
SOLUTION = os.path.join(KIT_ROOT, "solutions", "attention.py")
HIDDEN_TESTS = os.path.join(KIT_ROOT, "tests_hidden", "attention")
ASSIGNMENT = os.path.join(KIT_ROOT, "assignments", "attention")
SKELETON = os.path.join(ASSIGNMENT, "attention.py")
