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


def isolation_levels():
    """Every isolation level this machine offers, as the grader would choose it."""
    from grader.sandbox import isolation
    found = []
    for name in isolation.LEVELS:
        try:
            found.append(isolation.choose(name))
        except isolation.IsolationUnavailable:
            pass
    return found
