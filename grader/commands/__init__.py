"""The `grader` command's verbs, one module each: its arguments (`add_parser`), its usage
checks (`problem`: one line, before anything is read or written) and its run (`run`: the
exit status). grader/cli.py is the registry that lists them.
"""
