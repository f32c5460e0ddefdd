"""Text out of each kind of file, and a clear per-file reason for each file that has none."""

from __future__ import annotations

import os

import pytest

from documents.chunking import chunks, spans
from documents.extraction import Section, extract
from tests.documents import files

MB = 1_000_000


def sections(path, max_bytes=MB):
    return extract(path, max_bytes=max_bytes).sections


def refusal(path, max_bytes=MB):
    with pytest.raises(Exception) as caught:
        extract(path, max_bytes=max_bytes)
    return caught.value.code, caught.value.message


def test_it_reads_plain_text_markdown_csv_and_source_code(tmp_path):
    (tmp_path / "note.txt").write_text("The boiler was serviced in March.", encoding="utf-8")
    (tmp_path / "recipes.md").write_text("# Bread\nFlour and water.\n\n# Soup\nLeeks.\n", encoding="utf-8")
    (tmp_path / "bills.csv").write_text("month,amount\nJanuary,42\n", encoding="utf-8")
    (tmp_path / "tool.py").write_text("def water_plants():\n    return 'daily'\n", encoding="utf-8")
    (tmp_path / "latin.txt").write_bytes("Crème brûlée für Jürgen".encode("latin-1"))

    assert sections(tmp_path / "note.txt")[0].text == "The boiler was serviced in March."
    assert [(s.heading, s.text.splitlines()[-1]) for s in sections(tmp_path / "recipes.md")] == [
        ("Bread", "Flour and water."),
        ("Soup", "Leeks."),
    ]
    assert "January,42" in sections(tmp_path / "bills.csv")[0].text
    assert "water_plants" in sections(tmp_path / "tool.py")[0].text
    assert sections(tmp_path / "latin.txt")[0].text == "Crème brûlée für Jürgen"


def test_it_reads_html_without_its_scripts_and_by_heading(tmp_path):
    page = tmp_path / "manual.html"
    page.write_text(
        "<html><head><title>Oven</title><style>p{color:red}</style></head><body>"
        "<h1>Cleaning</h1><p>Wipe the door &amp; the racks.</p><script>alert('x')</script>"
        "<h2>Pyrolysis</h2><p>Run it for two hours.</p></body></html>",
        encoding="utf-8",
    )
    found = sections(page)
    assert [(s.heading, s.text) for s in found] == [
        ("Cleaning", "Cleaning\nWipe the door & the racks."),
        ("Pyrolysis", "Pyrolysis\nRun it for two hours."),
    ]
    assert not any("alert" in s.text or "color" in s.text for s in found)


def test_it_reads_a_pdf_page_by_page(tmp_path):
    path = files.write_pdf(tmp_path / "contract.pdf", ["Cover page", "Terms", "The deposit is 1200 euros."])
    found = sections(path)
    assert [(s.page, s.text.strip()) for s in found] == [
        (1, "Cover page"),
        (2, "Terms"),
        (3, "The deposit is 1200 euros."),
    ]


def test_it_reads_a_word_document_under_its_headings(tmp_path):
    path = files.write_docx(tmp_path / "school.docx", "Trip to the zoo", ["Bring a packed lunch.", "Leave at 9."])
    found = sections(path)
    assert found[-1].heading == "Trip to the zoo"
    assert "Bring a packed lunch." in found[-1].text and "Leave at 9." in found[-1].text


def test_an_encrypted_pdf_is_refused_with_a_reason(tmp_path):
    path = files.write_pdf(tmp_path / "tax.pdf", ["Income 2025"], password="s3cret")
    code, message = refusal(path)
    assert code == "encrypted"
    assert "password" in message


def test_an_encrypted_pdf_that_opens_without_a_password_is_read(tmp_path):
    path = files.write_pdf(tmp_path / "statement.pdf", ["Balance 310.20"], owner_only=True)
    assert [s.text.strip() for s in sections(path)] == ["Balance 310.20"]


def test_a_damaged_pdf_is_refused_with_a_reason(tmp_path):
    path = tmp_path / "broken.pdf"
    path.write_bytes(b"%PDF-1.7\n1 0 obj << /Type /Catalog >> garbage garbage")
    assert refusal(path) == ("corrupt", "The file is damaged: it could not be read as PDF.")


def test_a_scanned_pdf_without_text_is_refused_with_a_reason(tmp_path):
    path = files.write_pdf(tmp_path / "scan.pdf", ["", ""])
    code, message = refusal(path)
    assert code == "no_text"
    assert "scan" in message


def test_a_file_past_the_size_limit_is_not_read(tmp_path):
    path = tmp_path / "huge.txt"
    path.write_text("a" * (MB + 1))
    code, message = refusal(path)
    assert code == "too_large"
    assert "HOMEAI_DOCUMENT_MAX_MB" in message


def test_a_zip_bomb_inside_a_docx_is_refused_before_it_is_unpacked(tmp_path):
    path = files.write_zip_bomb_docx(tmp_path / "bomb.docx", unpacked_bytes=20 * MB)
    assert path.stat().st_size < MB  # small on disk: the limit is not what stops it
    code, message = refusal(path)
    assert code == "zip_bomb"
    assert "unpack to 20 MB" in message


def test_a_damaged_docx_is_refused_with_a_reason(tmp_path):
    path = tmp_path / "broken.docx"
    path.write_bytes(b"PK\x03\x04 not really a zip")
    assert refusal(path)[0] == "corrupt"


def test_windows_text_with_curly_quotes_is_read_as_text(tmp_path):
    path = tmp_path / "letter.txt"
    path.write_bytes("\u201cDear Sir\u201d \u2013 it\u2019s about the \u20ac50 fee.\n".encode("cp1252") * 20)
    assert sections(path)[0].text.startswith("\u201cDear Sir\u201d \u2013 it\u2019s about the \u20ac50 fee.")


def test_binary_junk_named_txt_is_refused(tmp_path):
    junk = tmp_path / "photo.txt"
    junk.write_bytes(os.urandom(4096))
    nul = tmp_path / "nul.txt"
    nul.write_bytes(b"text\x00\x01\x02 and more")
    assert refusal(junk)[0] == "binary"
    assert refusal(nul)[0] == "binary"


def test_a_file_that_vanished_is_refused_with_a_reason(tmp_path):
    assert refusal(tmp_path / "gone.txt") == ("vanished", "The file was removed or renamed while it was read.")


def test_chunks_overlap_and_keep_their_page_and_heading():
    text = " ".join(f"word{n}." for n in range(600))  # about 4,700 characters
    pieces = chunks([Section(text, page=3, heading="Terms")], size=1000, overlap=200)
    assert len(pieces) >= 5
    assert all(len(p.text) <= 1000 for p in pieces)
    assert [p.position for p in pieces] == list(range(len(pieces)))
    assert {(p.page, p.heading) for p in pieces} == {(3, "Terms")}
    for before, after in zip(pieces, pieces[1:], strict=False):
        assert after.text.split()[0] in before.text  # each starts inside the one before
    joined = spans(text, 1000, 200)
    assert joined[0][0] == 0 and joined[-1][1] == len(text)
    assert all(b[0] < a[1] for a, b in zip(joined, joined[1:], strict=False))
