"""Vector similarity. By brute force in numpy on SQLite (and on a PostgreSQL without pgvector):
a collection's chunk vectors as one float32 matrix (cached per process for the collection's
version), the query's dot product with every row (the vectors are unit length, so that is the
cosine). On PostgreSQL with pgvector, in the database (documents/pgvector.py). Measured against
an index library in docs/performance.md."""

from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np
from django.db.models import Sum

from documents import pgvector
from documents.models import Chunk, Collection, Document

DTYPE = np.dtype("<f4")
CACHED_COLLECTIONS = 8
# With pgvector, collections of up to this many chunks are still searched here: numpy compares
# 10^4 rows in 0.9 ms (15 MB of matrix), where the database's exact scan took 37 ms and its graph
# 2.1 (docs/performance.md); above it, the database's graph, and no matrix.
NUMPY_UP_TO = 20_000

_cache: OrderedDict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = OrderedDict()
_lock = threading.Lock()


def to_bytes(vector) -> bytes:
    return np.asarray(vector, dtype=DTYPE).tobytes()


def from_bytes(data: bytes) -> np.ndarray:
    return np.frombuffer(data, dtype=DTYPE)


def _matrix(collection: Collection) -> tuple[np.ndarray, np.ndarray]:
    """(chunk ids, their vectors as rows) of the collection at its current version."""
    key = (collection.id, collection.version)
    with _lock:
        if key in _cache:
            _cache.move_to_end(key)
            return _cache[key]
    rows = list(Chunk.objects.filter(collection_id=collection.id).values_list("id", "embedding"))
    ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    matrix = np.vstack([from_bytes(bytes(r[1])) for r in rows]) if rows else np.zeros((0, 0), dtype=DTYPE)
    with _lock:
        for stale in [k for k in _cache if k[0] == collection.id]:
            del _cache[stale]
        _cache[key] = (ids, matrix)
        while len(_cache) > CACHED_COLLECTIONS:
            _cache.popitem(last=False)
    return ids, matrix


def _best(scores: np.ndarray, limit: int) -> np.ndarray:
    """Indices of the `limit` highest scores, best first (a partition, then a sort of those:
    at 10^5 rows 7 ms where a whole sort took 11, on a busy 2-core box)."""
    if len(scores) > limit:
        top = np.argpartition(-scores, limit)[:limit]
        return top[np.argsort(-scores[top], kind="stable")]
    return np.argsort(-scores, kind="stable")


def matrices(collections: list[Collection]) -> list[tuple[np.ndarray, np.ndarray]]:
    """Each collection's (chunk ids, vectors), read from the database only when it changed."""
    return [_matrix(collection) for collection in collections]


def nearest(
    query_vector: np.ndarray, found: list[tuple[np.ndarray, np.ndarray]], limit: int
) -> list[tuple[int, float]]:
    """(chunk id, cosine similarity) of the nearest rows of these matrices, best first: numpy
    alone, no database, so it may run in another thread while the caller's query runs.

    The dot products go through einsum, numpy's own loop on one core, not `matrix @ vector`: at
    10^5 rows einsum took 6.2-7.0 ms, OpenBLAS's gemv 6.2 ms on two threads and 12.8 on one, so
    einsum leaves the other core to the full-text query beside it (hybrid p50 23.2 against
    31.3 ms at 10^5 chunks, docs/performance.md)."""
    found_ids, found_scores = [], []
    for ids, matrix in found:
        if len(ids) == 0 or matrix.shape[1] != query_vector.shape[0]:
            continue
        scores = np.einsum("ij,j->i", matrix, query_vector.astype(DTYPE))
        top = _best(scores, limit)
        found_ids.append(ids[top])
        found_scores.append(scores[top])
    if not found_ids:
        return []
    ids, scores = np.concatenate(found_ids), np.concatenate(found_scores)
    order = _best(scores, limit)
    return [(int(ids[i]), float(scores[i])) for i in order]


def in_database(collections: list[Collection]) -> int:
    """How many chunks these collections hold where the database searches them itself
    (PostgreSQL with pgvector, above NUMPY_UP_TO chunks), else 0: numpy, in this process."""
    if not pgvector.in_database():
        return 0
    held = Document.objects.filter(collection__in=collections).aggregate(n=Sum("chunks_count"))["n"] or 0
    return held if held > NUMPY_UP_TO else 0


def written(dims: int) -> None:
    """Chunks of this width were stored: where the database searches them, their graph exists
    from the first on (each later row joins it as it is written)."""
    if pgvector.in_database():
        pgvector.ensure_graph(dims)


def search(
    query_vector: np.ndarray, collections: list[Collection], limit: int, held: int | None = None
) -> list[tuple[int, float]]:
    """(chunk id, cosine similarity) of the nearest chunks of these collections, best first.
    `held`: in_database(collections), when the caller has asked it already."""
    held = in_database(collections) if held is None else held
    if held:
        return pgvector.nearest(query_vector, [c.id for c in collections], held, limit)
    return nearest(query_vector, matrices(collections), limit)
