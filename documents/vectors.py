"""Vector similarity by brute force: a collection's chunk vectors as one float32 matrix (cached
per process for the collection's version), the query's dot product with every row (the vectors
are unit length, so that is the cosine). Fast enough to start; an index library is chosen once
measured (docs/documents.md)."""

from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np

from documents.models import Chunk, Collection

DTYPE = np.dtype("<f4")
CACHED_COLLECTIONS = 8

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


def search(query_vector: np.ndarray, collections: list[Collection], limit: int) -> list[tuple[int, float]]:
    """(chunk id, cosine similarity) of the nearest chunks of these collections, best first."""
    return nearest(query_vector, matrices(collections), limit)
