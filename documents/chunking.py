"""Sections cut into overlapping chunks, by characters: about CHUNK_CHARS each (about 250 tokens
of English for all-MiniLM-L6-v2, well inside the 512 it reads), each starting OVERLAP_CHARS
before the last one ended, cut at a paragraph, sentence or word end where one is near."""

from __future__ import annotations

from dataclasses import dataclass

from documents.extraction import Section

CHUNK_CHARS = 1000
OVERLAP_CHARS = 200
BREAKS = ("\n\n", "\n", ". ", "? ", "! ", "; ", ", ", " ")


@dataclass(frozen=True)
class Piece:
    text: str
    position: int
    page: int | None
    heading: str


def _cut(text: str, start: int, size: int) -> int:
    """Where a chunk starting at start ends: the last break in its second half, else at size."""
    end = start + size
    if end >= len(text):
        return len(text)
    for mark in BREAKS:
        found = text.rfind(mark, start + size // 2, end)
        if found != -1:
            return found + len(mark)
    return end


def spans(text: str, size: int = CHUNK_CHARS, overlap: int = OVERLAP_CHARS) -> list[tuple[int, int]]:
    """(start, end) of each chunk of text; consecutive chunks share about `overlap` characters."""
    out: list[tuple[int, int]] = []
    start = 0
    while start < len(text):
        end = _cut(text, start, size)
        out.append((start, end))
        if end >= len(text):
            break
        following = max(end - overlap, start + 1)
        # Start the overlap at a word's beginning, not inside one.
        space = text.find(" ", following, end)
        start = space + 1 if space != -1 else following
    return out


def chunks(sections: list[Section], size: int = CHUNK_CHARS, overlap: int = OVERLAP_CHARS) -> list[Piece]:
    """Every section's chunks, numbered through the document; none crosses a page or heading."""
    pieces: list[Piece] = []
    for section in sections:
        text = section.text.strip()
        for start, end in spans(text, size, overlap):
            piece = text[start:end].strip()
            if piece:
                pieces.append(Piece(piece, len(pieces), section.page, section.heading))
    return pieces
