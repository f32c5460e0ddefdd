"""Where a collection's files are, and the files found there: never a path outside the
documents folder, whatever a folder name or a symbolic link inside the folder says."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.http import FileResponse
from django.utils.translation import gettext

from documents.kinds import supported
from documents.models import Collection, Document
from infra.errors import ClientError


@dataclass(frozen=True)
class Found:
    """A file a scan found: its source and relative path; its size and mtime, or why it is refused."""

    source: str
    path: str
    size: int = 0
    mtime_ns: int = 0
    error_code: str = ""
    error: str = ""


def inside(root: Path, candidate: Path) -> bool:
    return candidate == root or root in candidate.parents


def folder_path(folder: str) -> Path:
    """The absolute folder a collection names, under HOMEAI_DOCUMENTS_DIR; ClientError otherwise
    (an absolute path, "..", or a link leading out)."""
    root = settings.HOMEAI_DOCUMENTS_DIR
    relative = folder.strip().strip("/")
    target = (root / relative).resolve()
    if Path(folder.strip()).is_absolute() or ".." in Path(relative).parts or not inside(root, target):
        raise ClientError(
            "outside_documents",
            gettext("Choose a folder inside the documents folder (%(root)s), written relative to it.") % {"root": root},
            field="folder",
        )
    return target


def uploads_path(collection: Collection) -> Path:
    return settings.HOMEAI_UPLOADS_DIR / str(collection.id)


def source_root(collection: Collection, source: str) -> Path:
    return uploads_path(collection) if source == Document.Source.UPLOAD else folder_path(collection.folder)


def file_path(document: Document) -> Path:
    """The document's file on disk, checked again to lie inside its source's folder."""
    root = source_root(document.collection, document.source)
    path = (root / document.path).resolve()
    if not inside(root.resolve(), path) or not inside(_allowed_root(document.source), path):
        raise FileNotFoundError(document.path)
    return path


def _allowed_root(source: str) -> Path:
    return settings.HOMEAI_UPLOADS_DIR.resolve() if source == Document.Source.UPLOAD else settings.HOMEAI_DOCUMENTS_DIR


def _outside(source: str, relative: str) -> Found:
    return Found(
        source,
        relative,
        error_code="outside_documents",
        error=gettext("The link points outside the documents folder, so it is not followed."),
    )


def scan(collection: Collection) -> list[Found]:
    """Every readable file of the collection (its folder's, then its uploads), in path order.
    A symbolic link is followed only when it leads to a file inside the documents folder; a
    hidden file or folder (a dot name) is left out, and so is a file of a type that is not read."""
    found: list[Found] = []
    sources = [(Document.Source.UPLOAD, uploads_path(collection))]
    if collection.folder:
        sources.insert(0, (Document.Source.FOLDER, folder_path(collection.folder)))
    for source, root in sources:
        if root.is_dir():
            found.extend(_walk(source, root, _allowed_root(source)))
    return found


def _walk(source: str, root: Path, allowed: Path) -> list[Found]:
    out: list[Found] = []
    pending = [root]
    while pending:
        folder = pending.pop()
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            continue  # removed, or not ours to read, while the scan ran
        for entry in entries:
            if entry.name.startswith("."):
                continue
            relative = Path(entry.path).relative_to(root).as_posix()
            try:
                if entry.is_symlink():
                    target = Path(entry.path).resolve()
                    if not inside(allowed, target):
                        out.append(_outside(source, relative))
                        continue
                    if target.is_dir():
                        continue  # a linked folder inside is read where it really is
                if entry.is_dir():
                    pending.append(Path(entry.path))
                elif supported(entry.name) and entry.is_file():
                    stat = entry.stat()
                    out.append(Found(source, relative, stat.st_size, stat.st_mtime_ns))
            except OSError:
                continue  # vanished between the listing and its stat: nothing to index
    out.sort(key=lambda f: f.path)
    return out


def file_response(handle, path: Path) -> FileResponse:
    """A document's file for its reader: a PDF opens in the browser; every other file is a
    download, never a page of this site (an uploaded HTML file would run its scripts as the
    reader), and the sandbox keeps any that a browser shows anyway from running them."""
    response = FileResponse(handle, as_attachment=path.suffix.lower() != ".pdf", filename=path.name)
    response["Content-Security-Policy"] = "sandbox"
    response["X-Content-Type-Options"] = "nosniff"
    return response
