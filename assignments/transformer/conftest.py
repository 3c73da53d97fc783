"""pytest settings for the self-checks: `pytest --lang zh` shows every message in Chinese.

The language can also be chosen with the environment variable ATTN_LANG (en or zh);
English is the default. The option sets ATTN_LANG before test_transformer.py is imported.
"""
import os


def pytest_addoption(parser):
    parser.addoption("--lang", choices=("en", "zh"), default=None,
                     help="language of the self-check messages: en (default) or zh (中文). "
                          "Same as the environment variable ATTN_LANG.")


def pytest_configure(config):
    lang = config.getoption("--lang")
    if lang:
        os.environ["ATTN_LANG"] = lang
