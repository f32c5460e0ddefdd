"""Small document files made in the test (none kept in git): PDFs with real text on their
pages (pypdf, a content stream in Helvetica), encrypted, scanned-looking and damaged ones, Word
files (python-docx) and a zip bomb dressed as one."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import docx
from pypdf import PdfWriter
from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def pdf_bytes(pages: list[str], *, password: str | None = None, owner_only: bool = False) -> bytes:
    """A PDF whose pages show these texts (one line each, "" for a page without text); with a
    password, encrypted (RC4), or with owner_only, AES-256 that opens without one (as many
    bank statements are: printing and copying restricted)."""
    writer = PdfWriter()
    font = DictionaryObject(
        {
            NameObject("/Type"): NameObject("/Font"),
            NameObject("/Subtype"): NameObject("/Type1"),
            NameObject("/BaseFont"): NameObject("/Helvetica"),
        }
    )
    font_ref = writer._add_object(font)
    for text in pages:
        page = writer.add_blank_page(width=612, height=792)
        if not text:
            continue
        stream = DecodedStreamObject()
        stream.set_data(f"BT /F1 12 Tf 72 720 Td ({_escape(text)}) Tj ET".encode("latin-1"))
        page[NameObject("/Contents")] = writer._add_object(stream)
        page[NameObject("/Resources")] = DictionaryObject(
            {NameObject("/Font"): DictionaryObject({NameObject("/F1"): font_ref})}
        )
    if password is not None:
        writer.encrypt(user_password=password, owner_password=password, algorithm="RC4-128")
    elif owner_only:
        writer.encrypt(user_password="", owner_password="owner", algorithm="AES-256")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def write_pdf(path: Path, pages: list[str], *, password: str | None = None, owner_only: bool = False) -> Path:
    path.write_bytes(pdf_bytes(pages, password=password, owner_only=owner_only))
    return path


def write_docx(path: Path, heading: str, paragraphs: list[str]) -> Path:
    document = docx.Document()
    document.add_heading(heading, level=1)
    for text in paragraphs:
        document.add_paragraph(text)
    document.save(str(path))
    return path


def write_zip_bomb_docx(path: Path, unpacked_bytes: int) -> Path:
    """A .docx whose one member unpacks to unpacked_bytes of zeros (a few KB packed)."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        with archive.open("word/document.xml", "w", force_zip64=True) as member:
            block = b"\0" * 1_000_000
            for _ in range(unpacked_bytes // len(block)):
                member.write(block)
    return path
