"""An answer's retrieve phase, on the worker: the chunks of the asker's readable collections that
answer the question, numbered as the answer's sources, and the prompt that carries them.

A file attached to a chat whose text is short goes into the prompt whole (all its chunks, in
order); the rest is found per question by the hybrid search (selectors.search_collections).
The query's vector is passed in (the worker's embedding model: this app imports nothing of
inference); without one the search is full-text alone.
"""

from __future__ import annotations

import time

import numpy as np
from django.db.models import Sum
from django.db.models.functions import Length
from django.urls import reverse

from documents import selectors
from documents.models import Chunk, Collection, Document, IndexJob

WHOLE_FILE_CHARS = 4000  # an attached file this short (its chunks' text together) goes in whole
MAX_WHOLE_CHUNKS = 8  # and never more chunks than this of whole files in one prompt
INDEXED_WAIT_S = 120.0  # how long an answer waits for the files just attached to its chat to be indexed
INDEXED_POLL_S = 0.25


def readable(user, collection_ids: list[int]) -> list[Collection]:
    """The named collections this person may read now, in the order named (others dropped:
    a collection unshared since the question was asked is read by no one but its readers)."""
    found = {c.id: c for c in selectors.readable_collections(user).filter(id__in=collection_ids)}
    return [found[i] for i in dict.fromkeys(collection_ids) if i in found]


def wait_indexed(collections: list[Collection], *, timeout_s: float = INDEXED_WAIT_S) -> None:
    """Until no indexing job of these collections is queued or running (a file attached just
    before the question is indexed first), or timeout_s: then the answer uses what is indexed."""
    deadline = time.monotonic() + timeout_s
    ids = [c.id for c in collections]
    while IndexJob.objects.filter(collection_id__in=ids, status__in=IndexJob.ACTIVE).exists():
        if time.monotonic() >= deadline:
            return
        time.sleep(INDEXED_POLL_S)


def _whole_files(collection: Collection) -> list[Chunk]:
    """Every chunk of the collection's short files, file by file, in order."""
    short = (
        Document.objects.filter(collection=collection, status=Document.Status.INDEXED)
        .annotate(chars=Sum(Length("chunks__text")))
        .filter(chars__lte=WHOLE_FILE_CHARS)
        .values_list("id", flat=True)
    )
    chunks = Chunk.objects.filter(document_id__in=list(short)).select_related("document")
    return list(chunks.order_by("document__path", "position")[:MAX_WHOLE_CHUNKS])


def file_url(chunk: Chunk) -> str:
    """The chunk's file on the Documents pages (404 for anyone who may not read it); a PDF
    opens at the chunk's page."""
    url = reverse("documents_file", args=[chunk.collection_id, chunk.document_id])
    return f"{url}#page={chunk.page}" if chunk.page else url


def source(n: int, chunk: Chunk) -> dict:
    return {
        "n": n,
        "collection": chunk.collection_id,
        "document": chunk.document_id,
        "chunk": chunk.id,
        "path": chunk.document.path,
        "page": chunk.page,
        "section": chunk.section,
        "text": chunk.text,
        "file": file_url(chunk),
    }


def retrieve(
    collections: list[Collection],
    query: str,
    query_vector: np.ndarray | None,
    *,
    limit: int,
    whole_from: Collection | None = None,
) -> list[dict]:
    """The answer's numbered sources: the short files of whole_from (a chat's attached files)
    whole, then the best chunks of the collections for the query, none twice."""
    chunks: list[Chunk] = _whole_files(whole_from) if whole_from is not None else []
    seen = {c.id for c in chunks}
    for hit in selectors.search_collections(collections, query, query_vector, limit=limit):
        if hit.chunk.id not in seen:
            seen.add(hit.chunk.id)
            chunks.append(hit.chunk)
    return [source(n, chunk) for n, chunk in enumerate(chunks, 1)]


def _label(item: dict) -> str:
    where = [item["path"]]
    if item["page"]:
        where.append(f"page {item['page']}")
    if item["section"]:
        where.append(item["section"])
    return ", ".join(where)


def prompt_with_sources(question: str, sources: list[dict]) -> str:
    """The question as the model reads it: the sources, each under its number, then the
    question, asking for answers from them with [n] markers."""
    if not sources:
        return question
    blocks = "\n\n".join(f"[{s['n']}] ({_label(s)})\n{s['text']}" for s in sources)
    return (
        "Answer the question from these sources. After each fact you use, write its source's "
        "number in brackets, like [1].\n\n"
        f"Sources:\n\n{blocks}\n\nQuestion: {question}"
    )
