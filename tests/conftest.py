"""Shared helpers for the kit's own tests."""
import os
import sys

import pytest

KIT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if KIT not in sys.path:
    sys.path.insert(0, KIT)

SOLUTION = os.path.join(KIT, "solutions", "attention.py")
SKELETON = os.path.join(KIT, "assignments", "attention", "attention.py")
SUBMISSIONS = os.path.join(KIT, "tests", "submissions")


@pytest.fixture(scope="session")
def solution_source():
    with open(SOLUTION, encoding="utf-8") as handle:
        return handle.read()
