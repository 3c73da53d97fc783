#!/usr/bin/env python3
"""Record how long each test file takes, for the order the suite runs its files in.

    python -m pytest -n 2 --dist loadfile --junitxml=/tmp/suite.xml
    python tools/test_durations.py /tmp/suite.xml        # rewrites tests/durations.json
    python tools/test_durations.py /tmp/suite.xml /tmp/one-file.xml   # a file re-measured
                                                         # alone: the later report wins

tests/conftest.py runs the files longest first (from tests/durations.json), so that with
`-n 2 --dist loadfile` the last files to start are short ones and both workers finish
together; a file missing from the table runs after those in it. A file's seconds are the
sum of its tests' (setup, call and teardown, a module fixture's batch included), as the
junit XML of a run gives them, rounded to the second. Re-record after adding a file that
takes more than a few seconds; the order changes only how soon the suite ends, never what
it checks.
"""
import json
import os
import sys
import xml.etree.ElementTree as ElementTree

KIT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TABLE = os.path.join(KIT, "tests", "durations.json")


def file_seconds(junit_xml):
    """{tests/test_x.py: seconds} summed over the test cases of a junit XML report."""
    seconds = {}
    for case in ElementTree.parse(junit_xml).getroot().iter("testcase"):
        module = case.get("classname", "").split(".")
        # classname is tests.test_x (a function) or tests.test_x.TestClass (a method)
        names = [n for n in module if n.startswith("test_")]
        if not module or module[0] != "tests" or not names:
            continue
        path = f"tests/{names[0]}.py"
        seconds[path] = seconds.get(path, 0.0) + float(case.get("time") or 0.0)
    return seconds


def main(argv):
    if not argv:
        sys.exit(__doc__)
    seconds = {}
    for report in argv:
        seconds.update(file_seconds(report))
    table = {path: round(value) for path, value in
             sorted(seconds.items(), key=lambda item: (-item[1], item[0]))}
    with open(TABLE, "w", encoding="utf-8") as handle:
        handle.write(json.dumps(table, indent=1) + "\n")
    print(f"{len(table)} files, {sum(seconds.values()):.0f} s in all; wrote {TABLE}")


if __name__ == "__main__":
    main(sys.argv[1:])
