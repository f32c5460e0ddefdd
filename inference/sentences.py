"""Sentences cut from an answer's text as it streams, for reading aloud (docs/speech.md).

A sentence is certain only once what follows its end is seen (the space after a full stop), so
`SentenceCutter.feed` hands back the sentences the text so far has closed and keeps the rest;
`flush` hands back the rest at the answer's end. Pure: no Django, no Redis.
"""

from __future__ import annotations

import re

# A full stop, question or exclamation mark (and an ellipsis), with closing quotes or brackets,
# then white space; the ideographic and full-width marks need no space after them; a line break
# ends a sentence too (list items, headings, paragraphs).
_END = re.compile(r"""([.!?…]+["'”’)\]*_]*)(\s+)|([。！？]+["'”’)\]]*)\s*|(\n)|([,;:，、；：])([ \t]+)""")
# Words a full stop follows without ending the sentence, compared lower-cased: titles and Latin
# abbreviations in English, Portuguese's own.
ABBREVIATIONS = frozenset(
    """
    mr mrs ms dr prof sr jr st vs etc e.g i.e a.m p.m approx no fig
    sra srta dra profa exmo exma av pág págs p.ex ex obs cia ltda nº n.º
    """.split()
)
# A long sentence is read in parts, cut after a comma, semicolon or colon once the part so far is
# this long: a voice makes a shorter part sooner, so the first words play sooner.
CLAUSE_CHARS = 48
# A sentence shorter than this joins the next one: Piper reads "1." or "Ok." alone with a pause.
MIN_CHARS = 2
# Markdown that would be read out as symbols: emphasis, headings, quotes, tables, code ticks.
_MARKUP = re.compile(r"[*_`#|>~]+")


class SentenceCutter:
    """Feed it text pieces as they stream; it returns each sentence once it is complete."""

    def __init__(self) -> None:
        self._buffer = ""

    def feed(self, text: str) -> list[str]:
        self._buffer += text
        out: list[str] = []
        start = 0
        for match in _END.finditer(self._buffer):
            if match.group(1) is not None:
                if match.end() == len(self._buffer) and not match.group(2).endswith("\n"):
                    break  # the space may be the start of more spaces; wait for the next word
                if _not_an_end(self._buffer, start, match.start()):
                    continue
                cut = match.start(2)
            elif match.group(3) is not None:
                cut = match.end(3)
            elif match.group(4) is not None:
                cut = match.start(4)
            else:
                if match.end() == len(self._buffer) or match.start(6) - start < CLAUSE_CHARS:
                    continue
                if self._buffer[match.start(5) - 1 : match.start(5)].isdigit() and match.group(5) == ",":
                    continue  # "1, 2 and 3": a list of numbers reads as one
                cut = match.start(6)
            sentence = speakable(self._buffer[start:cut])
            if len(sentence) >= MIN_CHARS:
                out.append(sentence)
                start = match.end()
            elif not sentence:
                start = match.end()
        self._buffer = self._buffer[start:]
        return out

    def flush(self) -> list[str]:
        rest, self._buffer = speakable(self._buffer), ""
        return [rest] if rest else []


def cut(text: str) -> list[str]:
    """A whole text's sentences (an answer already written)."""
    cutter = SentenceCutter()
    return cutter.feed(text) + cutter.flush()


def speakable(text: str) -> str:
    """The text as it is read: markup and list markers dropped, white space collapsed."""
    text = re.sub(r"^\s*(?:[-+*]|\d{1,3}[.)])\s+", "", text, flags=re.MULTILINE)
    return " ".join(_MARKUP.sub(" ", text).split())


def _not_an_end(buffer: str, start: int, stop: int) -> bool:
    """A full stop after an abbreviation, an initial ("J. R. R."), or a list's number at a line's
    start ("1. Flour") ends no sentence; a question or exclamation mark always does."""
    if buffer[stop] != ".":
        return False
    word = re.search(r"(\S+)$", buffer[start:stop])
    if word is None:
        return False
    token = word.group(1).lstrip("(\"'“‘[").lower()
    if token in ABBREVIATIONS:
        return True
    if len(token) == 1 and token.isalpha() and word.group(1)[-1].isupper():
        return True
    if token.isdigit() and len(token) <= 3:
        line_start = buffer.rfind("\n", start, stop) + 1
        return not buffer[max(line_start, start) : stop - len(token)].strip()
    return False
