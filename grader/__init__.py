"""The attention kit: release, grade and validate an assignment (README.md)."""

# the one place the version is written: pyproject.toml reads it ([tool.setuptools.dynamic]),
# `grader --version` and each shard's record say it. A constant, so that a command's start
# does not import importlib.metadata and search the installed distributions (about 20 ms of
# each `grader` process), and a checkout that was never installed knows it too.
__version__ = "0.1.0"
