"""A third language is one new catalog (grader/i18n.py): a toy French, a few entries in a
catalog for the grader and one for the attention assignment, compiled here into a copy of
the kit, is a --lang the CLI accepts, and grading in it writes the French of those entries
and the English of everything else. The French is written here, not read from the code."""
import json
import os
import subprocess
import sys

import pytest

from conftest import KIT, copy_kit

babel = pytest.importorskip("babel", reason="Babel (the test extra) compiles the toy catalogs")
from babel.messages.catalog import Catalog  # noqa: E402
from babel.messages.mofile import write_mo  # noqa: E402

# the grader's own words (grader/catalog/diagnose.py's SENTENCE), and the attention
# assignment's (its softmax-repeat mistake, in tests_hidden/attention/mistakes.py)
SENTENCE = "Your result is exactly what you get if {clause}."
SENTENCE_FR = "Votre résultat est exactement celui que donne le code où {clause}."
CLAUSE = ("1-D valid_lens is repeated as a whole vector, one copy after another, instead of "
          "each example's length once per query in a row (query q of example b then gets "
          "another example's length)")
CLAUSE_FR = ("valid_lens 1-D est répété en entier, une copie après l'autre, au lieu de la "
             "longueur de chaque exemple une fois par requête")
TITLE = "Attention: masking, scoring functions and multi-head attention (d2l 10.1-10.5)"
TITLE_FR = "Attention : masquage, fonctions de score et attention multi-têtes (d2l 10.1-10.5)"


def _compile(path, entries):
    catalog = Catalog(locale="fr", domain=os.path.basename(path)[:-3])
    for msgid, msgstr in entries.items():
        catalog.add(msgid, msgstr)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as handle:
        write_mo(handle, catalog)


def _run(kit, *args):
    return subprocess.run([sys.executable, "-m", "grader", *args], cwd=kit, capture_output=True,
                          text=True, timeout=600, env={**os.environ, "PYTHONPATH": str(kit)})


@pytest.fixture(scope="module")
def french_kit(tmp_path_factory):
    """A copy of the kit with a French catalog for the grader and one for attention: the
    only files a third language adds."""
    kit = tmp_path_factory.mktemp("fr") / "kit"
    copy_kit(kit, ("grader", "tests_hidden", "solutions", "assignments"))
    _compile(str(kit / "grader" / "locale" / "fr" / "LC_MESSAGES" / "grader.mo"),
             {SENTENCE: SENTENCE_FR})
    _compile(str(kit / "tests_hidden" / "attention" / "locale" / "fr" / "LC_MESSAGES"
                 / "assignment.mo"), {CLAUSE: CLAUSE_FR, TITLE: TITLE_FR})
    return kit


def test_the_languages_are_the_catalogs_there_are(french_kit):
    said = _run(french_kit, "--help")
    assert said.returncode == 0
    probe = subprocess.run(
        [sys.executable, "-c", "from grader import i18n; print(i18n.languages(), "
         "i18n.normalize('fr_FR'), i18n.tag('fr'), i18n.tag('zh'))"],
        cwd=french_kit, capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHONPATH": str(french_kit)})
    assert probe.stdout.split("\n")[0] == "('en', 'fr', 'zh') fr fr zh-CN", probe.stderr
    # the kit itself has English and Chinese only
    from grader import i18n
    assert i18n.languages() == ("en", "zh")


def test_a_language_without_a_catalog_is_refused_naming_the_ones_there_are(french_kit, tmp_path):
    done = _run(french_kit, "grade", os.path.join(KIT, "examples", "alice.py"), "--lang", "de",
                "--out", str(tmp_path / "out"))
    assert done.returncode == 2
    assert "invalid choice: 'de' (choose from 'en', 'fr', 'zh')" in done.stderr
    assert not (tmp_path / "out").exists()


def test_a_skeleton_is_not_released_in_a_language_its_solution_lacks(french_kit, tmp_path):
    """The skeleton's words are the solution's own (its ### BEGIN ZH blocks), not a
    catalog's: --lang fr is offered (the catalog) and refused with the reason."""
    done = _run(french_kit, "release", "--lang", "fr", "--out", str(tmp_path / "folder"))
    assert done.returncode == 2
    assert done.stderr.startswith("grader release: --lang fr: the grader speaks it (its "
                                  "catalog), but a skeleton is written in en or zh only")
    assert not (tmp_path / "folder").exists()


@pytest.mark.slow
def test_grading_in_the_new_language_says_its_words_and_english_for_the_rest(french_kit,
                                                                             tmp_path):
    from grader import assignment
    from grader.catalog import Catalog as Mistakes
    mistakes = {m.id: m for m in Mistakes.of(assignment.load("attention")).mistakes}
    with open(os.path.join(KIT, "solutions", "attention.py"), encoding="utf-8") as handle:
        source = mistakes["softmax-repeat"].apply(handle.read())
    work = tmp_path / "repeat.py"
    work.write_text(source, encoding="utf-8")
    out = tmp_path / "out"
    done = _run(french_kit, "grade", "--lang", "fr", str(work), "--out", str(out), "--jobs", "1")
    assert done.returncode == 0, done.stdout + done.stderr
    feedback = (out / "repeat" / "feedback.txt").read_text(encoding="utf-8")
    # the two catalogs' French, put together as the grader puts the English together
    assert SENTENCE_FR.format(clause=CLAUSE_FR) in feedback
    assert CLAUSE not in feedback
    # what neither catalog holds stays English: the part lines, a case's name
    assert "masked_softmax: 13/20 (passed: 8 of 12 cases)" in feedback
    assert "[FAIL] masked_softmax: 1-D lengths that differ per example (0/3)" in feedback
    results = json.loads((out / "repeat" / "results.json").read_text(encoding="utf-8"))
    assert results["extra_data"]["lang"] == "fr"
    page = (out / "report.html").read_text(encoding="utf-8")
    assert '<html lang="fr">' in page
    assert "Attention : masquage, fonctions de score et attention multi-têtes" in page
