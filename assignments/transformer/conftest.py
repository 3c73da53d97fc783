"""pytest settings for the self-checks: `pytest --lang zh` shows every message in Chinese.

The language can also be chosen with the environment variable ATTN_LANG (en, or a language
this folder has messages for: locale/<locale>/LC_MESSAGES/selfcheck.mo, e.g. zh for
zh_CN); English is the default. The option sets ATTN_LANG before test_transformer.py is imported.
"""
import os

LOCALE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "locale")


def languages():
    """English, then each language of the catalogs in locale/ (the first part of a folder)."""
    folders = sorted(os.listdir(LOCALE_DIR)) if os.path.isdir(LOCALE_DIR) else []
    found = {f.lower().split("_")[0] for f in folders
             if os.path.isfile(os.path.join(LOCALE_DIR, f, "LC_MESSAGES", "selfcheck.mo"))}
    return ["en"] + sorted(found - {"en"})


def pytest_addoption(parser):
    parser.addoption("--lang", choices=languages(), default=None,
                     help="language of the self-check messages: en (default) or zh (中文). "
                          "Same as the environment variable ATTN_LANG.")


def pytest_configure(config):
    lang = config.getoption("--lang")
    if lang:
        os.environ["ATTN_LANG"] = lang
