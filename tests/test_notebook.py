"""grader/intake/notebook.py at its edges (issue 19): the 20 MB cap on both sides, which
cells run and which are skipped (each kind of magic, blank and markdown cells, nbformat 3),
every note and refusal by its whole text, and what the generated module does when it runs:
each cell on its own, a failing cell recorded with the student's cell and line."""
import json

import pytest

from grader.intake import IntakeError
from grader.intake.notebook import MAX_NOTEBOOK_BYTES, NON_PYTHON_CELL_MAGICS, notebook_to_module


def _nb(*cells, **extra):
    return json.dumps({"cells": [{"cell_type": kind, "source": source} for kind, source in cells],
                       "nbformat": 4, **extra}).encode()


def _run(data, label="nb.ipynb"):
    source, notes = notebook_to_module(data, label)
    namespace = {"__name__": "student"}
    exec(compile(source, "attention.py", "exec"), namespace)
    return namespace, notes


def _refused(data):
    with pytest.raises(IntakeError) as error:
        notebook_to_module(data, "nb.ipynb")
    return str(error.value)


def test_20_mb_is_read_and_one_byte_more_is_refused():
    assert MAX_NOTEBOOK_BYTES == 20_971_520
    body = _nb(("code", "X = 1"))
    padded = body + b" " * (MAX_NOTEBOOK_BYTES - len(body))
    assert _run(padded)[0]["X"] == 1
    assert _refused(padded + b" ") == "nb.ipynb is larger than 20 MB."


def test_the_cell_magics_that_are_not_python():
    assert NON_PYTHON_CELL_MAGICS == {"bash", "sh", "script", "writefile", "html", "javascript",
                                      "js", "latex", "markdown", "svg", "perl", "ruby", "file",
                                      "system"}


def test_each_cell_runs_on_its_own_and_failures_are_recorded_where_they_happened():
    namespace, notes = _run(_nb(
        ("markdown", "# 注意力"),
        ("code", "A = 1"),
        ("code", "def f():\n    return 1 / 0\n\nf()"),
        ("code", "   \n"),
        ("code", "B = A + 1"),
        ("code", "def g(:\n    pass"),
        ("code", "raise SystemExit('stop')"),
        ("code", "C = B + 1")))
    assert (namespace["A"], namespace["B"], namespace["C"]) == (1, 2, 3)
    errors = namespace["__attnkit_cell_errors__"]
    assert errors[0] == (3, "ZeroDivisionError",
                         "division by zero (nb.ipynb, cell 3, line 2)")
    assert errors[1] == (6, "SyntaxError", "invalid syntax (nb.ipynb, cell 6, line 1)")
    assert errors[2] == (7, "SystemExit", "stop (nb.ipynb, cell 7, line 1)")
    assert notes == ["nb.ipynb was converted to a module: 6 code cells, run in order."]


def test_a_syntax_error_raised_inside_a_cell_says_only_its_own_place():
    try:
        compile("1 +", "<string>", "exec")
    except SyntaxError as error:
        expected = str(error)              # Python's own words: where it is already said
    namespace, _ = _run(_nb(("code", "X = 1\nexec('1 +')")))
    assert namespace["__attnkit_cell_errors__"] == [(1, "SyntaxError", expected)]


def test_a_long_error_message_is_cut_at_300_characters_before_the_place():
    namespace, _ = _run(_nb(("code", "raise ValueError('v' * 1000)")))
    [(number, kind, text)] = namespace["__attnkit_cell_errors__"]
    assert text == "v" * 300 + " (nb.ipynb, cell 1, line 1)"


def test_magics_and_shell_lines_become_pass_on_their_own_line():
    cell = ("%matplotlib inline\nimport math\nif True:\n    !pip install d2l\n    X = 1\n"
            "math?\nY = X + 1")
    source, notes = notebook_to_module(_nb(("code", cell)), "nb.ipynb")
    assert notes == ["nb.ipynb was converted to a module: 1 code cells, run in order.",
                     "cell 1: the IPython magic `%matplotlib inline` was not run.",
                     "cell 1: the shell command `!pip install d2l` was not run.",
                     "cell 1: the IPython magic `math?` was not run."]
    cleaned = ("pass  # %matplotlib inline\nimport math\nif True:\n    pass  # !pip install "
               "d2l\n    X = 1\npass  # math?\nY = X + 1")
    assert f"__attnkit_run_cell__(1, {cleaned!r})" in source
    assert _run(_nb(("code", cell)))[0]["Y"] == 2


def test_a_question_mark_only_asks_for_help_after_a_name():
    namespace, notes = _run(_nb(("code", "x?\nQ = '?'\nR = 1 if '?' else 0\nQ\nx = 1")))
    assert (namespace["Q"], namespace["R"], namespace["x"]) == ("?", 1, 1)
    assert notes[1:] == ["cell 1: the IPython magic `x?` was not run."]


def test_a_long_magic_line_is_shown_cut_at_60_characters():
    magic = "%timeit " + "x" * 100
    _, notes = _run(_nb(("code", magic + "\nZ = 1")))
    assert notes[1:] == [f"cell 1: the IPython magic `{magic[:60]}` was not run."]


@pytest.mark.parametrize("magic", sorted(NON_PYTHON_CELL_MAGICS))
def test_a_cell_in_another_language_is_skipped(magic):
    namespace, notes = _run(_nb(("code", f"%%{magic} arg\necho hi"), ("code", "X = 1")))
    assert namespace["X"] == 1
    assert notes == ["nb.ipynb was converted to a module: 1 code cells, run in order.",
                     f"cell 1 is a %%{magic} cell (not Python); it was skipped."]


@pytest.mark.parametrize("first, shown", [("%%time", "%%time"), ("%%", "%%"),
                                          ("  %%capture out", "%%capture out")])
def test_a_python_cell_magic_is_removed_and_the_cell_runs(first, shown):
    namespace, notes = _run(_nb(("code", f"{first}\nX = 1\nY = X + 1")))
    assert namespace["Y"] == 2 and namespace["__attnkit_cell_errors__"] == []
    assert notes[1:] == [f"cell 1: the cell magic `{shown}` was removed; the cell ran as plain "
                         "Python."]


def test_a_long_cell_magic_is_shown_cut_at_60_characters():
    first = "%%prun " + "y" * 100
    _, notes = _run(_nb(("code", first + "\nX = 1")))
    assert notes[1:] == [f"cell 1: the cell magic `{first[:60]}` was removed; the cell ran as "
                         "plain Python."]


def test_crlf_and_a_bom_are_read():
    data = b"\xef\xbb\xbf" + _nb(("code", ["X = 1\r\n", "if X:\r\n", "    Y = 2\r\n"]))
    namespace, _ = _run(data)
    assert namespace["Y"] == 2


def test_nbformat_3_cells_are_read_from_their_worksheets():
    old = json.dumps({"worksheets": [{"cells": [{"cell_type": "code", "input": ["A = ", "1"]}]},
                                     {"cells": [{"cell_type": "code", "input": "B = A + 1"}]}],
                      "nbformat": 3}).encode()
    namespace, notes = _run(old)
    assert namespace["B"] == 2 and notes == [
        "nb.ipynb was converted to a module: 2 code cells, run in order."]


@pytest.mark.parametrize("data, says", [
    (b"\xff\xfe{}", "nb.ipynb is not a notebook: a .ipynb file is UTF-8 JSON, and this one is "
                    "not text."),
    (b'{"cells": [\n  {"cell_type": ]}',
     "nb.ipynb is not a valid notebook: its JSON is broken at line 2, column 17 (Expecting "
     "value). Open it in Jupyter, save it again, and re-upload; or upload the code as "
     "attention.py."),
    (b"[1, 2]", "nb.ipynb is JSON but not a Jupyter notebook (it has no cells)."),
    (b'{"cells": {"a": 1}}', "nb.ipynb is JSON but not a Jupyter notebook (it has no cells)."),
    (b'{"worksheets": {"cells": []}}', "nb.ipynb is JSON but not a Jupyter notebook (it has no "
                                       "cells)."),
    (b'{"cells": [{"cell_type": "markdown", "source": "x"}, {"cell_type": "code", '
     b'"source": " \\n"}, 7]}', "nb.ipynb has no code cells."),
    (b'{"cells": [{"cell_type": "code", "source": "%%bash\\nls"}]}', "nb.ipynb has no code cells."),
    (b'{"cells": [{"cell_type": "code", "source": "x"}, {"cell_type": "code", "source": '
     b'["a", 1]}]}', "nb.ipynb is not a valid notebook: the source of cell 2 is not text. Open "
                     "it in Jupyter, save it again, and re-upload; or upload the code as "
                     "attention.py."),
])
def test_each_refusal_by_its_whole_text(data, says):
    assert _refused(data) == says


def test_cells_win_over_worksheets():
    both = json.dumps({"cells": [{"cell_type": "code", "source": "X = 1"}],
                       "worksheets": [{"cells": []}]}).encode()
    assert _run(both)[0]["X"] == 1


def test_cells_keep_their_numbers_when_others_are_skipped():
    source, _ = notebook_to_module(_nb(("markdown", "m"), ("code", ""), ("code", "X = 1")),
                                   "nb.ipynb")
    assert "__attnkit_run_cell__(3, 'X = 1')" in source


def test_help_on_a_dotted_name_is_not_run_and_the_cell_still_defines_its_functions():
    # a student's `torch.bmm?` used to be a SyntaxError that cost the whole cell
    namespace, notes = _run(_nb(("code", "def f():\n    return 1\nmath.sqrt?\nlen??\n"
                                         "G = f() + 1")))
    assert namespace["G"] == 2 and namespace["__attnkit_cell_errors__"] == []
    assert notes[1:] == ["cell 1: the IPython magic `math.sqrt?` was not run.",
                         "cell 1: the IPython magic `len??` was not run."]
    for line in ("a = b?", "x???", "?", "a..b?", ".a?", "1x?"):     # not help: Python's error
        namespace, notes = _run(_nb(("code", line)))
        assert notes[1:] == [] and namespace["__attnkit_cell_errors__"][0][1] == "SyntaxError"
