"""The language of every sentence a student reads from the grader: English, or one of the
languages there is a catalog for (Chinese, zh_CN, today).

    from grader.i18n import _, N_, ngettext
    i18n.set_language("zh")            # once per process: `grader grade --lang zh`
    _("{target} would fail on a GPU: {why}").format(target=..., why=...)
    i18n.languages()                   # ("en", "zh"): what --lang accepts, everywhere

A language lives in its catalogs and nowhere else. Every text is written once, in English,
where it belongs (grader/'s source; an assignment's tests_hidden/<name>/: its case table,
its catalog of mistakes, its declaration's title), and that English is the msgid. The
grader's catalog of a language is grader/locale/<locale>/LC_MESSAGES/grader.po, compiled
into grader.mo next to it (both committed; the runtime needs only the standard library's
gettext); it holds only the messages of grader/. An assignment's own words live with it,
in tests_hidden/<name>/locale/<locale>/LC_MESSAGES/assignment.po and .mo, consulted after
grader.mo: every message of tests_hidden/<name>/ that grader/ does not use. `languages()`
is English and each <locale> with a grader.mo (its first part: zh for zh_CN); a language
an assignment has no catalog for says that assignment's words in English, as any message
a catalog lacks. (The student folder carries its own: assignments/<name>/locale.)
Every msgid is a constant string: pieces that vary (names, numbers, a submission's own
messages and tracebacks) are `{name}` fields filled in with .format() after translation,
so what came from a submission is never translated. `N_` marks a string for extraction
where it is defined (a module constant) and `_` translates it where it is used; a `Said`
is a marked message and its fields, said later in whichever language is asked.

Terms follow the Chinese edition of Dive into Deep Learning (动手学深度学习): 掩蔽softmax,
有效长度, 加性注意力, 缩放点积注意力, 多头注意力, 注意力权重, 查询/键/值, 暂退法, 梯度, 形状;
code names (the api's functions, valid_lens, repeat_interleave) stay code.

To change a message: edit the English in the source, then (with Babel, the `test` extra)
    pybabel extract -F grader/locale/babel.cfg -k N_ -o grader/locale/grader.pot --no-location --sort-output grader
    pybabel update -i grader/locale/grader.pot -d grader/locale -D grader -l zh_CN --no-fuzzy-matching
    (translate the new entries in grader.po)
    pybabel compile -d grader/locale -D grader -l zh_CN --statistics
and for an assignment's own words, with <name> its folder under tests_hidden/:
    pybabel extract -F grader/locale/babel.cfg -k N_ -o tests_hidden/<name>/locale/assignment.pot --no-location --sort-output tests_hidden/<name>
    pybabel update -i tests_hidden/<name>/locale/assignment.pot -d tests_hidden/<name>/locale -D assignment -l zh_CN --no-fuzzy-matching
    (translate the new entries in its assignment.po; delete any that grader.po holds)
    pybabel compile -d tests_hidden/<name>/locale -D assignment -l zh_CN --statistics
To add a language (fr, say): the same three steps with `pybabel init ... -l fr` in place of
update, for grader/ and for each assignment with texts; for the self-checks of a student
folder, assignments/<name>/locale/fr/LC_MESSAGES/selfcheck.po (msgfmt). Nothing else:
--lang offers it from then on (tests/test_i18n_third_language.py shows it with a toy French).
tests/test_i18n.py checks that every message has its Chinese, that each catalog holds exactly
the messages of its own source, and that each .mo is current.
"""
import dataclasses
import gettext
import os
import tomllib

from . import paths

LOCALE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "locale")
DOMAIN = "grader"
ASSIGNMENT_DOMAIN = "assignment"   # tests_hidden/<name>/locale/<locale>/LC_MESSAGES/assignment.po
ENGLISH = "en"                     # the msgids' language: always there, needs no catalog

_current = ENGLISH
_translation = gettext.NullTranslations()


def locales():
    """{language: its locale folder}, e.g. {"zh": "zh_CN"}: one per grader catalog there is,
    grader/locale/<locale>/LC_MESSAGES/grader.mo, the language being the locale's first
    part. English is not among them: it is the source's own."""
    try:
        folders = sorted(os.listdir(LOCALE_DIR))
    except OSError:
        return {}
    found = {}
    for folder in folders:
        if os.path.isfile(os.path.join(LOCALE_DIR, folder, "LC_MESSAGES", DOMAIN + ".mo")):
            found.setdefault(folder.split("_")[0].lower(), folder)
    found.pop(ENGLISH, None)
    return found


def languages():
    """The languages the grader speaks: English, then each one it has a catalog for (see
    locales), sorted. What --lang accepts; ask here, never spell them out."""
    return (ENGLISH, *sorted(locales()))


def normalize(lang):
    """One of languages() for what a user wrote (zh, zh_CN, zh-cn, en_US...); ValueError
    otherwise."""
    value = (lang or ENGLISH).strip().lower().replace("-", "_")
    for code in sorted(languages(), key=len, reverse=True):
        if value.startswith(code):
            return code
    raise ValueError(f"unknown language {lang!r}: choose one of {', '.join(languages())}")


def set_language(lang):
    """Choose the language of this process's messages (one of languages()); returns it."""
    global _current, _translation
    lang = normalize(lang)
    _translation = _catalogs(lang)
    _current = lang
    return lang


def tag(lang=None):
    """The language as an HTML lang attribute: "en", "zh-CN" (its locale, hyphenated)."""
    lang = normalize(lang or _current)
    return locales().get(lang, lang).replace("_", "-")


def _catalogs(lang):
    """The grader's catalog of `lang`, then each assignment's own (assignment_catalogs);
    nothing for English (every msgid is its own English)."""
    if lang == ENGLISH:
        return gettext.NullTranslations()
    with open(os.path.join(LOCALE_DIR, locales()[lang], "LC_MESSAGES", DOMAIN + ".mo"),
              "rb") as handle:
        translation = gettext.GNUTranslations(handle)
    for path in assignment_catalogs(lang):
        with open(path, "rb") as handle:
            translation.add_fallback(gettext.GNUTranslations(handle))
    return translation


def assignment_catalogs(lang, kit_root=None):
    """The compiled catalogs of each assignment's own words in `lang` (its case names, what
    each case tries, its title, its mistakes): tests_hidden/<name>/locale/<locale>/
    LC_MESSAGES/assignment.mo, consulted after the grader's own catalog, so an
    assignment's words live with the assignment. An assignment without one is said in
    English."""
    root = os.path.join(kit_root or paths.KIT_ROOT, "tests_hidden")
    folder = locales().get(lang)
    try:
        names = sorted(os.listdir(root))
    except OSError:
        return []
    if folder is None:
        return []
    found = [os.path.join(root, n, "locale", folder, "LC_MESSAGES", ASSIGNMENT_DOMAIN + ".mo")
             for n in names]
    return [path for path in found if os.path.isfile(path)]


def language():
    """The language chosen for this process: 'en' (the default) or another of languages()."""
    return _current


def _(message):
    """`message` in this process's language (the English itself when there is none)."""
    return _translation.gettext(message)


def ngettext(singular, plural, n):
    return _translation.ngettext(singular, plural, n)


def case_title(name, lang=None):
    """A hidden case's name, "part: what it tries", in this process's language (or `lang`):
    the part (a code name) stays, what it tries is translated (tests_hidden/cases.py marks
    each); a GPU case's "<target> <what>" keeps the target. Unknown text stays as it is."""
    if not isinstance(name, str) or not name:
        return name
    part, sep, rest = name.partition(": ")
    return f"{part}: {case_words(rest, lang)}" if sep else case_words(name, lang)


def case_words(text, lang=None):
    """What a case tries (a case's name without its part) in this process's language, or in
    `lang` (one of languages()) when given."""
    if not isinstance(text, str) or not text.strip():
        return text
    say = _translation.gettext if lang is None else _translator(lang)
    said = say(text)
    if said != text:
        return said
    target, sep, label = text.partition(" ")
    said = say(label) if sep and label.strip() else label
    return f"{target} {said}" if said != label else text


_TRANSLATORS = {}


def _translator(lang):
    """gettext of `lang`, whatever this process's language (for text made in both); a
    language without a catalog says the English."""
    try:
        lang = normalize(lang)
    except ValueError:
        lang = ENGLISH
    if lang not in _TRANSLATORS:
        _TRANSLATORS[lang] = _catalogs(lang).gettext
    return _TRANSLATORS[lang]


def translate(message, lang=None):
    """`message` in `lang` (default: this process's language), whatever the process's."""
    return _(message) if lang is None else _translator(lang)(message)


def extract_declaration(fileobj, keywords, comment_tags, options):
    """Babel's extractor for an assignment's declaration (assignment.toml): its `title`, a
    message of the assignment's own catalog (grader/locale/babel.cfg names it)."""
    text = fileobj.read().decode("utf-8")
    title = tomllib.loads(text).get("title")
    if isinstance(title, str) and title:
        line = next((n for n, row in enumerate(text.splitlines(), 1)
                     if row.lstrip().startswith("title")), 1)
        yield line, "N_", title, []


def N_(message):
    """Marks `message` for the catalog without translating it (translate it with _ at use)."""
    return message


@dataclasses.dataclass(frozen=True)
class Said:
    """A message made now and said later, in whichever language is asked: its msgid (marked
    with N_ where it is written) and the values of its {name} fields, each said as it is (a
    str: a number, code) or in the same language (a Said).

        Said(N_("masked scores are set to {value}"), (("value", "-10"),)).say("zh")
    """
    msgid: str
    fields: tuple = ()      # ((name, value), ...)

    @classmethod
    def of(cls, msgid, **fields):
        return cls(msgid, tuple(sorted(fields.items())))

    def say(self, lang=None):
        text = translate(self.msgid, lang)
        if not self.fields:
            return text
        return text.format(**{name: say(value, lang) for name, value in self.fields})


def say(message, lang=None):
    """A message (a msgid or a Said) in `lang` (default: this process's language)."""
    return message.say(lang) if isinstance(message, Said) else translate(message, lang)
