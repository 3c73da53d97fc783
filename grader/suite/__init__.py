"""The hidden suites' library: one harness for every assignment's case table.

    case.py      Case (a row of a table), seeded Inputs, lens, how a call reads in feedback,
                 the GPU part's cases
    table.py     an assignment's table and the questions asked of it; its points checked
                 against the declaration
    session.py   one run's state (the feedback's language, the parts that failed so far, ...)
    checks.py    the checks a case is graded by, each a teaching StudentFailure
    plugin.py    the pytest options, fixtures and hooks (a suite's conftest.py loads it)
    tests.py     the test functions a suite's test file imports

A suite's folder (tests_hidden/<name>/) holds only data: assignment.toml, cases.py (the
table), pytest.ini, a two-line conftest.py and a test file; `grader.assignment` reads the
declaration, and everything here takes the assignment from it.
"""
