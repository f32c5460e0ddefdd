"""A file's text, in sections (a PDF's pages, a document's headings), or a reason it has none.

pypdf reads PDFs, python-docx Word files (after the zip's sizes are checked: a docx is a zip),
the standard library's html.parser HTML; the rest (txt, md, csv, source code) is text read as
UTF-8 (or Latin-1 when it is plainly text in that), and a file that is not text is refused.
"""

from __future__ import annotations

import hashlib
import io
import os
import zipfile
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

import docx
import pypdf
from django.utils.translation import gettext

from documents.kinds import DOCX, DOCX_MAX_RATIO, HTML, MARKDOWN, PDF, SOURCE, TEXT


@dataclass(frozen=True)
class Section:
    text: str
    page: int | None = None  # 1-based
    heading: str = ""


@dataclass
class Extracted:
    sections: list[Section]
    size: int
    sha256: str
    mtime_ns: int
    notes: list[str] = field(default_factory=list)


class ExtractionError(Exception):
    """A file whose text cannot be read: a code (for programs) and a sentence (for people)."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


def _too_large(size: int, limit: int) -> ExtractionError:
    return ExtractionError(
        "too_large",
        gettext("The file is %(size)s MB; files up to %(limit)s MB are read (HOMEAI_DOCUMENT_MAX_MB).")
        % {"size": f"{size / 1e6:,.1f}", "limit": f"{limit / 1e6:,.0f}"},
    )


def read_bytes(path: Path, max_bytes: int) -> tuple[bytes, int]:
    """The file's bytes and mtime, refusing one past max_bytes before reading it (and one that
    grew past it while read); ExtractionError "vanished" when it is gone."""
    try:
        with path.open("rb") as handle:
            stat = os.fstat(handle.fileno())
            if stat.st_size > max_bytes:
                raise _too_large(stat.st_size, max_bytes)
            data = handle.read(max_bytes + 1)
    except FileNotFoundError:
        raise ExtractionError("vanished", gettext("The file was removed or renamed while it was read.")) from None
    except IsADirectoryError:
        raise ExtractionError("unreadable", gettext("This is a folder, not a file.")) from None
    except PermissionError:
        raise ExtractionError("unreadable", gettext("This server may not read the file (its permissions).")) from None
    if len(data) > max_bytes:
        raise _too_large(len(data), max_bytes)
    return data, stat.st_mtime_ns


def extract(path: Path, *, max_bytes: int) -> Extracted:
    """The file's text in sections, with the size, hash and mtime of the bytes read."""
    data, mtime_ns = read_bytes(path, max_bytes)
    suffix = path.suffix.lower()
    if suffix in PDF:
        sections = _pdf(data)
    elif suffix in DOCX:
        sections = _docx(data, max_bytes)
    elif suffix in HTML:
        sections = _html(_text(data))
    elif suffix in MARKDOWN:
        sections = _markdown(_text(data))
    elif suffix in TEXT | SOURCE:
        sections = [Section(_text(data))]
    else:
        raise ExtractionError("unsupported", gettext("Files of type %(type)s are not read.") % {"type": suffix or "?"})
    sections = [s for s in sections if s.text.strip()]
    if not sections:
        raise ExtractionError("empty", gettext("The file holds no text."))
    return Extracted(sections=sections, size=len(data), sha256=hashlib.sha256(data).hexdigest(), mtime_ns=mtime_ns)


def _text(data: bytes) -> str:
    """Bytes as text: UTF-8 (a BOM allowed), else Windows-1252, else Latin-1, whichever decodes
    first; refused as binary when it holds a NUL or more than 1% control characters."""
    if b"\x00" in data[:8192]:
        raise _binary()
    for encoding in ("utf-8-sig", "cp1252", "latin-1"):
        try:
            text = data.decode(encoding)
        except UnicodeDecodeError:
            continue
        head = text[:8192]
        controls = sum(1 for ch in head if (ord(ch) < 32 and ch not in "\t\n\r\f") or 0x7F <= ord(ch) < 0xA0)
        if controls > len(head) / 100:
            raise _binary()
        return text
    raise _binary()  # not reached: Latin-1 decodes any bytes


def _binary() -> ExtractionError:
    return ExtractionError("binary", gettext("The file is not text, whatever its name says: it holds binary data."))


def _corrupt(kind: str) -> ExtractionError:
    return ExtractionError(
        "corrupt", gettext("The file is damaged: it could not be read as %(kind)s.") % {"kind": kind}
    )


def _pdf(data: bytes) -> list[Section]:
    """One section per page; an encrypted PDF that opens without a password is read."""
    try:
        reader = pypdf.PdfReader(io.BytesIO(data), strict=False)
        if reader.is_encrypted:
            try:
                opened = reader.decrypt("")
            except Exception:
                opened = 0
            if not opened:
                raise ExtractionError(
                    "encrypted", gettext("The PDF is protected by a password; save a copy without one to index it.")
                )
        pages = [Section(page.extract_text() or "", page=number) for number, page in enumerate(reader.pages, 1)]
    except ExtractionError:
        raise
    except Exception:
        raise _corrupt("PDF") from None
    if not any(p.text.strip() for p in pages):
        raise ExtractionError(
            "no_text",
            gettext(
                "The PDF has no text to read: it is probably a scan (pictures of pages). "
                "Run it through text recognition (OCR) first."
            ),
        )
    return pages


def _docx(data: bytes, max_bytes: int) -> list[Section]:
    """Paragraphs and tables under their headings, after the zip's declared sizes are checked
    (a docx is a zip: a small one can unpack to gigabytes)."""
    source = io.BytesIO(data)
    try:
        with zipfile.ZipFile(source) as archive:
            members = archive.infolist()
    except zipfile.BadZipFile:
        raise _corrupt("a Word document") from None
    unpacked = sum(m.file_size for m in members)
    if unpacked > max_bytes or any(m.file_size > DOCX_MAX_RATIO * max(m.compress_size, 1024) for m in members):
        raise ExtractionError(
            "zip_bomb",
            gettext(
                "The Word document would unpack to %(size)s MB, far more than its own size: "
                "it is not read (a zip bomb, or a damaged file)."
            )
            % {"size": f"{unpacked / 1e6:,.0f}"},
        )
    try:
        document = docx.Document(source)
        sections: list[Section] = []
        heading = ""
        lines: list[str] = []
        for paragraph in document.paragraphs:
            style = paragraph.style.name if paragraph.style is not None else ""
            if style.startswith(("Heading", "Title")) and paragraph.text.strip():
                sections.append(Section("\n".join(lines), heading=heading))
                heading, lines = paragraph.text.strip()[:300], [paragraph.text]
            else:
                lines.append(paragraph.text)
        sections.append(Section("\n".join(lines), heading=heading))
        for table in document.tables:
            rows = [" | ".join(cell.text for cell in row.cells) for row in table.rows]
            sections.append(Section("\n".join(rows), heading=heading))
    except Exception:
        raise _corrupt("a Word document") from None
    return sections


class _HtmlText(HTMLParser):
    """Visible text by heading: script, style and template contents left out."""

    HIDDEN = {"script", "style", "template", "noscript", "head"}
    HEADINGS = {"h1", "h2", "h3", "h4", "h5", "h6", "title"}
    BLOCKS = {"p", "div", "br", "li", "tr", "section", "article", "pre", "blockquote", "table"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.sections: list[Section] = []
        self.heading = ""
        self.parts: list[str] = []
        self.hidden = 0
        self.in_heading: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        if tag in self.HIDDEN and tag != "head":
            self.hidden += 1
        elif tag in self.HEADINGS:
            self.in_heading = []
        elif tag in self.BLOCKS:
            self.parts.append("\n")

    def handle_endtag(self, tag):
        if tag in self.HIDDEN and tag != "head":
            self.hidden = max(self.hidden - 1, 0)
        elif tag in self.HEADINGS and self.in_heading is not None:
            title = " ".join("".join(self.in_heading).split())[:300]
            self.in_heading = None
            if tag == "title":  # the page's name: the heading of what comes before its first one
                self.heading = title
                return
            self.sections.append(Section("".join(self.parts), heading=self.heading))
            self.heading, self.parts = title, [title, "\n"]
        elif tag in self.BLOCKS:
            self.parts.append("\n")

    def handle_data(self, data):
        if self.hidden:
            return
        (self.in_heading if self.in_heading is not None else self.parts).append(data)

    def close(self):
        super().close()
        self.sections.append(Section("".join(self.parts), heading=self.heading))


def _html(text: str) -> list[Section]:
    parser = _HtmlText()
    parser.feed(text)
    parser.close()
    return [Section(_tidy(s.text), heading=s.heading) for s in parser.sections]


def _tidy(text: str) -> str:
    lines = (" ".join(line.split()) for line in text.splitlines())
    return "\n".join(line for line in lines if line)


def _markdown(text: str) -> list[Section]:
    """Sections by ATX headings (# Title), outside fenced code."""
    sections: list[Section] = []
    heading, lines, fenced = "", [], False
    for line in text.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        if not fenced and line.startswith("#") and line.lstrip("#").startswith(" "):
            sections.append(Section("\n".join(lines), heading=heading))
            heading, lines = line.lstrip("#").strip()[:300], [line]
        else:
            lines.append(line)
    sections.append(Section("\n".join(lines), heading=heading))
    return sections
