"""Which files are documents, by their name: what the scan picks up and an upload may be. Apart
from extraction, so that the web process (which never reads a document's text) does not load
pypdf, python-docx and lxml."""

from __future__ import annotations

from pathlib import Path

PDF = {".pdf"}
DOCX = {".docx"}
HTML = {".html", ".htm", ".xhtml"}
MARKDOWN = {".md", ".markdown"}
TEXT = {".txt", ".text", ".csv", ".tsv", ".log", ".rst", ".org", ".json", ".yaml", ".yml", ".toml", ".ini", ".cfg"}
SOURCE = {
    ".py", ".js", ".ts", ".tsx", ".jsx", ".java", ".c", ".h", ".cc", ".cpp", ".hpp", ".cs", ".go", ".rs",
    ".rb", ".php", ".swift", ".kt", ".scala", ".sh", ".bash", ".sql", ".r", ".lua", ".pl", ".css", ".xml",
}  # fmt: skip
SUPPORTED = PDF | DOCX | HTML | MARKDOWN | TEXT | SOURCE
DOCX_MAX_RATIO = 100  # a member unpacking to more than this many times its packed size is a zip bomb


def supported(name: str) -> bool:
    return Path(name).suffix.lower() in SUPPORTED
