"""The one error of `grader merge`: why the shard folders cannot be merged."""


class MergeError(Exception):
    """Why the shard folders cannot be merged (nothing was written)."""
