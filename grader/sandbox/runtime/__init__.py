"""Code that runs inside the untrusted worker process.

Everything in this folder depends only on the standard library and torch: the sandbox
mounts it read-only into the worker's view, where the rest of the kit (the reference
solution, the hidden tests, the `grader` package) is not visible. The trusted side
imports the same modules as `grader.sandbox.runtime.*`.
"""
