"""Every string a person reads goes through the catalogs: no text in a template outside the
translation tags, catalogs without fuzzy or empty entries, compiled files that match them."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest
from django.conf import settings
from django.template.base import Lexer, TokenType

ROOT = Path(__file__).resolve().parent.parent
TEMPLATES = ROOT / "templates"
LOCALE = ROOT / "locale"
LOCALES = ("ko", "pt_BR")
DOMAINS = ("django", "djangojs")

HOLE = " "  # where a template tag or variable stood
# Blocks that hold class names, not words.
CLASS_BLOCKS = {"body_class"}
# Words that read the same in every language here: the name, units and acronyms.
SAME_EVERYWHERE = {"HomeAI", "ms", "tok/s", "TTFT", "CPU", "GPU", "CSV", "JSON", "API", "GGUF", "p50", "p90", "p99"}
KEYS = {"Ctrl", "Shift", "Enter", "Esc"}  # named as the keyboard prints them
# Attributes a person reads (or hears, with a screen reader).
READ_ATTRIBUTES = {"title", "placeholder", "aria-label", "alt", "data-confirm", "label"}
# Elements whose text is code, keys or data, not words.
VERBATIM = {"code", "kbd", "script", "style", "pre"}
WORD = re.compile(r"[A-Za-z][A-Za-z'/]+")


def skeleton(source: str) -> str:
    """The template with every translated part, tag and variable replaced by a hole: what is left
    is the text a person would read untranslated."""
    out, depth, comment, classes = [], 0, False, False
    for token in Lexer(source).tokenize():
        if token.token_type == TokenType.BLOCK:
            name, *args = token.contents.split()
            if name == "block":
                classes = args[0] in CLASS_BLOCKS
            elif name == "endblock":
                classes = False
            if name in ("blocktranslate", "blocktrans"):
                depth += 1
            elif name in ("endblocktranslate", "endblocktrans"):
                depth -= 1
            elif name == "comment":
                comment = True
            elif name == "endcomment":
                comment = False
            out.append(HOLE)
        elif token.token_type == TokenType.TEXT and not depth and not comment and not classes:
            out.append(token.contents)
        elif token.token_type != TokenType.COMMENT:
            out.append(HOLE)
    return "".join(out)


class _Reader(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.verbatim = 0
        self.found: list[str] = []

    def handle_starttag(self, tag, attrs) -> None:
        if tag in VERBATIM:
            self.verbatim += 1
        for name, value in attrs:
            if name in READ_ATTRIBUTES and value:
                self.found.extend(_words(value))

    def handle_endtag(self, tag) -> None:
        if tag in VERBATIM:
            self.verbatim = max(0, self.verbatim - 1)

    def handle_data(self, data) -> None:
        if not self.verbatim:
            self.found.extend(_words(data))


def _words(text: str) -> list[str]:
    return [w for w in WORD.findall(text) if w not in SAME_EVERYWHERE]


def untranslated(source: str) -> list[str]:
    reader = _Reader()
    reader.feed(skeleton(source))
    return reader.found


@pytest.mark.parametrize("path", sorted(TEMPLATES.rglob("*.html")), ids=lambda p: str(p.relative_to(TEMPLATES)))
def test_no_template_text_escapes_the_translation_tags(path):
    assert untranslated(path.read_text()) == []


def test_the_check_finds_text_attributes_and_leaves_code_and_translated_text():
    source = (
        '{% load i18n %}<p title="Close it">Hello {{ name }}</p><code>make run</code>'
        '<p>{% translate "Fine" %}</p><p>{% blocktranslate %}Also {{ fine }}{% endblocktranslate %}</p>'
        "{# a comment #}{% comment %}Notes{% endcomment %}<span>HomeAI · 12 ms</span>"
    )
    assert untranslated(source) == ["Close", "it", "Hello"]


def _entries(path: Path) -> list[tuple[str, str, bool]]:
    """(msgid, msgstr, fuzzy) of each entry of a .po file; plural forms' strings joined."""
    entries, fuzzy, msgid, msgstr, field = [], False, [], [], None
    for line in [*path.read_text().splitlines(), ""]:
        if not line.strip():
            if msgid or msgstr:
                entries.append(("".join(msgid), "".join(msgstr), fuzzy))
            fuzzy, msgid, msgstr, field = False, [], [], None
        elif line.startswith("#,"):
            fuzzy = "fuzzy" in line
        elif line.startswith("#"):
            continue
        elif line.startswith(("msgid ", "msgid_plural ")):
            field = msgid
            field.append(line.split(" ", 1)[1].strip('"'))
        elif line.startswith("msgstr"):
            field = msgstr
            msgstr.append("\x01" + line.split(" ", 1)[1].strip('"'))
        elif line.startswith("msgctxt"):
            field = None
        elif line.startswith('"') and field is not None:
            field.append(line.strip('"'))
    return entries


@pytest.mark.parametrize("locale", LOCALES)
@pytest.mark.parametrize("domain", DOMAINS)
def test_the_catalogs_have_no_fuzzy_or_empty_entries(locale, domain):
    path = LOCALE / locale / "LC_MESSAGES" / f"{domain}.po"
    entries = _entries(path)[1:]  # the first is the header
    assert entries
    fuzzy = [msgid for msgid, _, is_fuzzy in entries if is_fuzzy]
    empty = [msgid for msgid, msgstr, _ in entries if any(not part for part in msgstr.split("\x01")[1:])]
    assert fuzzy == [] and empty == []


# make test installs gettext (scripts/system-deps.sh --test); a bare pytest elsewhere may lack it,
# but CI must not skip: stale catalogs would ship.
@pytest.mark.skipif(
    shutil.which("msgfmt") is None and os.environ.get("CI") != "true", reason="GNU gettext's msgfmt is not installed"
)
@pytest.mark.parametrize("locale", LOCALES)
@pytest.mark.parametrize("domain", DOMAINS)
def test_the_committed_mo_files_are_compiled_from_the_po_files(locale, domain, tmp_path):
    folder = LOCALE / locale / "LC_MESSAGES"
    compiled = tmp_path / "out.mo"
    subprocess.run(["msgfmt", "--check", "-o", str(compiled), str(folder / f"{domain}.po")], check=True)
    assert compiled.read_bytes() == (folder / f"{domain}.mo").read_bytes(), "run: make messages"


def test_every_language_offered_has_catalogs():
    codes = {code for code, _ in settings.LANGUAGES} - {"en"}
    assert {c.replace("-", "_").replace("_br", "_BR") for c in codes} == set(LOCALES)
