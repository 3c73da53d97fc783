"""The student folders' own languages: each folder's public self-checks (test_<module>.py)
say every message through the catalogs in the folder's locale/, and its conftest.py offers
English and each catalog there is, so the folder stays self-contained and a language is one
more catalog in it. The transformer's catalog is checked here as the attention one is in
test_student_folder.py; a toy French catalog in a copy of a folder shows the third
language."""
import ast
import gettext
import os
import re
import shutil
import string
import subprocess
import sys

import pytest

from conftest import KIT, student_env

babel = pytest.importorskip("babel", reason="Babel (the test extra) reads and compiles catalogs")
from babel.messages.catalog import Catalog  # noqa: E402
from babel.messages.mofile import write_mo  # noqa: E402
from babel.messages.pofile import read_po  # noqa: E402

FOLDERS = ("attention", "transformer")
CJK = re.compile(r"[\u4e00-\u9fff\u3001\uff1a\uff0c]")


def _folder(name):
    return os.path.join(KIT, "assignments", name)


def _marked(name):
    """The msgids test_<module>.py passes to _(), read from its syntax tree."""
    with open(os.path.join(_folder(name), f"test_{name}.py"), encoding="utf-8") as handle:
        tree = ast.parse(handle.read())
    found, wrong = set(), []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "_":
            if len(node.args) == 1 and isinstance(node.args[0], ast.Constant):
                found.add(node.args[0].value)
            else:
                wrong.append(node.lineno)
    assert not wrong, f"_() of something extraction cannot read at lines {wrong}"
    return found


def _po(name):
    path = os.path.join(_folder(name), "locale", "zh_CN", "LC_MESSAGES", "selfcheck.po")
    with open(path, "rb") as handle:
        return {m.id: m.string for m in read_po(handle) if m.id}


def _fields(text):
    return sorted({f for _, f, _, _ in string.Formatter().parse(text) if f is not None})


@pytest.mark.parametrize("name", FOLDERS)
def test_every_self_check_message_has_its_chinese_with_the_same_fields(name):
    marked, held = _marked(name), _po(name)
    assert len(marked) >= 20
    assert sorted(marked - set(held)) == [] and sorted(set(held) - marked) == []
    for msgid, msgstr in held.items():
        assert _fields(msgstr) == _fields(msgid), msgid
        assert CJK.search(msgstr), msgid


@pytest.mark.parametrize("name", FOLDERS)
def test_the_self_check_mo_is_compiled_from_its_po(name):
    path = os.path.join(_folder(name), "locale", "zh_CN", "LC_MESSAGES", "selfcheck.mo")
    with open(path, "rb") as handle:
        mo = gettext.GNUTranslations(handle)
    assert {k: v for k, v in mo._catalog.items() if k} == _po(name)


@pytest.mark.parametrize("name", FOLDERS)
def test_the_folder_offers_english_and_its_catalogs_languages(name):
    done = subprocess.run([sys.executable, "-c", "import conftest; print(conftest.languages())"],
                          cwd=_folder(name), capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "['en', 'zh']", done.stderr


def _copy(name, root):
    folder = root / name
    shutil.copytree(_folder(name), folder, ignore=shutil.ignore_patterns("__pycache__"))
    return folder


@pytest.mark.parametrize("name", FOLDERS)
def test_a_third_language_is_one_more_catalog_in_the_folder(name, tmp_path):
    """A toy French with one message (the one a folder without its module shows): pytest
    --lang fr is accepted and says it; a message French lacks stays English."""
    folder = _copy(name, tmp_path)
    os.remove(folder / f"{name}.py")    # the skeleton: its absence is the first message
    missing = next(m for m in _marked(name) if m.startswith(f"{name}.py was not found"))
    french = "Le fichier est introuvable : mettez-le dans ce dossier."
    catalog = Catalog(locale="fr", domain="selfcheck")
    catalog.add(missing, french)
    os.makedirs(folder / "locale" / "fr" / "LC_MESSAGES")
    with open(folder / "locale" / "fr" / "LC_MESSAGES" / "selfcheck.mo", "wb") as handle:
        write_mo(handle, catalog)
    run = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider"]
    said = subprocess.run(run + ["--lang", "fr"], cwd=folder, capture_output=True, text=True,
                          timeout=300, env=student_env())
    assert french in said.stdout + said.stderr
    english = subprocess.run(run + ["--lang", "en"], cwd=folder, capture_output=True,
                             text=True, timeout=300, env=student_env())
    assert missing in english.stdout + english.stderr
    refused = subprocess.run(run + ["--lang", "de"], cwd=folder, capture_output=True,
                             text=True, timeout=300, env=student_env())
    assert refused.returncode == 4
    assert "invalid choice: 'de' (choose from 'en', 'fr', 'zh')" in refused.stderr
