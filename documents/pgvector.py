"""Chunk vectors searched inside PostgreSQL, where the server has the pgvector extension.

The chunks' `embedding` (little-endian float32 bytes) stays the one source on every database.
On PostgreSQL with pgvector, `migrate` (its post_migrate step, `enable`) also gives the chunks'
table a stored generated column, `vec`, computed from those bytes by a SQL function, so every
way a chunk row is written (the index job, the tests, a restore) fills it, and nothing in
Python writes it. Collections above vectors.NUMPY_UP_TO chunks are then searched in the
database (`nearest`), so no process keeps their matrices in memory (150 MB at 10^5 chunks of
384 dimensions, in each web and worker process that searches):

- through the HNSW graph of their width (a partial index per width, since an embedding model's
  width is not the schema's: `documents_chunk_vec_<dims>`), with pgvector's iterative scan so
  that the collections' filter still finds enough neighbours, where the searched collections
  hold at least GRAPH_SHARE of all chunks;
- else exactly, every row of theirs compared through the index on the collection (a graph
  walked for a small share of its rows visits that many times the rows to find theirs).

Where the server has no pgvector, or HomeAI's database user may not create the extension, the
vectors are searched by numpy as on SQLite (documents/vectors.py) and `migrate` says why. An
administrator who adds the extension later runs `migrate` again (the column is added then,
filled from the stored bytes: about 0.3 ms a chunk) and restarts the processes.

A later migration that alters `embedding` must drop `vec` first (a generated column's source
cannot change type under it) and call `enable` after.
"""

from __future__ import annotations

import logging
import re
import time

import numpy as np
from django.db import DatabaseError, connections, transaction

log = logging.getLogger(__name__)

COLUMN = "vec"
FUNCTION = "homeai_f4le_vector"
GRAPH_SHARE = 0.05  # the searched collections' share of all chunks from which the graph is walked
EF_SEARCH_MIN = 100  # the graph's candidate list while searching (pgvector's default is 40)
MAX_INDEXED_DIMS = 2000  # pgvector's HNSW limit for the vector type; wider ones are searched exactly
RECHECK_S = 60.0  # how long "no vec column" is believed before it is looked up again

# float32 little-endian bytes -> vector, in SQL (PostgreSQL has no cast from bytea to float4).
# Zero and subnormal exponents read as 0: the vectors are unit length, never that small; a vector
# with an infinity or NaN is NULL (found by its words alone), never a failed write.
FUNCTION_SQL = f"""
CREATE OR REPLACE FUNCTION {FUNCTION}(b bytea) RETURNS vector
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
SELECT CASE WHEN length(b) < 4 THEN NULL ELSE (
  SELECT CASE WHEN bool_or(e = 255) THEN NULL ELSE
         array_agg(CASE WHEN e = 0 THEN 0
                        ELSE (1 - 2 * s) * (1 + m / 8388608.0::float8) * (2.0::float8 ^ (e - 127)) END
                   ORDER BY i)::float4[]::vector END
  FROM (SELECT i, (w >> 31) & 1 AS s, (w >> 23) & 255 AS e, (w & 8388607)::float8 AS m
        FROM (SELECT i, get_byte(b, i)::bigint | (get_byte(b, i + 1)::bigint << 8)
                        | (get_byte(b, i + 2)::bigint << 16) | (get_byte(b, i + 3)::bigint << 24) AS w
              FROM generate_series(0, length(b) - 4, 4) AS i) AS words) AS parts) END
$$"""
COLUMN_SQL = (
    f"ALTER TABLE documents_chunk ADD COLUMN IF NOT EXISTS {COLUMN} vector"
    f" GENERATED ALWAYS AS ({FUNCTION}(embedding)) STORED"
)

_known: dict[tuple[str, str], tuple[bool, float]] = {}  # (alias, database) -> (has the column, when seen)
_indexed: set[tuple[str, str, int]] = set()  # (alias, database, dims) whose graph exists
_iterative_scan: dict[tuple[str, str], bool] = {}


def _key(using: str) -> tuple[str, str]:
    return using, str(connections[using].settings_dict.get("NAME"))


def _has_column(cursor) -> bool:
    cursor.execute(
        "SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass('documents_chunk') AND attname = %s"
        " AND NOT attisdropped",
        [COLUMN],
    )
    return cursor.fetchone() is not None


def enable(using: str = "default") -> str:
    """Gives the chunks' table its vector column where the server can (idempotent; post_migrate
    calls it). Returns "on", or why the vectors stay in numpy."""
    connection = connections[using]
    if connection.vendor != "postgresql":
        return "not PostgreSQL"
    with connection.cursor() as cursor:
        cursor.execute("SELECT to_regclass('documents_chunk') IS NOT NULL")
        if not cursor.fetchone()[0]:
            return "no chunks table"
        cursor.execute("SELECT installed_version FROM pg_available_extensions WHERE name = 'vector'")
        row = cursor.fetchone()
        if row is None:
            return "this PostgreSQL server has no pgvector extension"
        if row[0] is None:
            try:
                with transaction.atomic(using=using):
                    cursor.execute("CREATE EXTENSION IF NOT EXISTS vector")
            except DatabaseError as exc:
                return f"the database user may not create the vector extension ({exc}); a superuser can"
        if not _has_column(cursor):
            started = time.monotonic()
            try:
                with transaction.atomic(using=using):
                    cursor.execute(FUNCTION_SQL)
                    cursor.execute(COLUMN_SQL)
            except DatabaseError as exc:  # no CREATE on the schema, or the table is another user's
                return (
                    f"the database user may not add the vector column ({exc}); the user that owns HomeAI's tables can"
                )
            log.info("pgvector: chunk vectors now in the database (%.1f s)", time.monotonic() - started)
        cursor.execute("SELECT DISTINCT octet_length(embedding) / 4 FROM documents_chunk")
        widths = [dims for (dims,) in cursor.fetchall()]
    for dims in widths:
        ensure_graph(dims, using)
    _known[_key(using)] = (True, time.monotonic())
    return "on"


def in_database(using: str = "default") -> bool:
    """Whether this database searches the chunks' vectors itself (PostgreSQL with the column)."""
    connection = connections[using]
    if connection.vendor != "postgresql":
        return False
    key = _key(using)
    known = _known.get(key)
    if known is not None and (known[0] or time.monotonic() - known[1] < RECHECK_S):
        return known[0]
    with connection.cursor() as cursor:
        has = _has_column(cursor)
    _known[key] = (has, time.monotonic())
    return has


def graph_name(dims: int) -> str:
    return f"documents_chunk_vec_{int(dims)}"


def ensure_graph(dims: int, using: str = "default") -> None:
    """The HNSW graph of the chunks of this width (inner product: the vectors are unit length),
    made when the first of them is stored; later rows join it as they are written."""
    dims = int(dims)
    key = (*_key(using), dims)
    if key in _indexed or not 0 < dims <= MAX_INDEXED_DIMS:
        return
    with connections[using].cursor() as cursor:
        cursor.execute("SELECT to_regclass(%s) IS NOT NULL", [graph_name(dims)])
        if not cursor.fetchone()[0]:
            started = time.monotonic()
            cursor.execute(
                f"CREATE INDEX IF NOT EXISTS {graph_name(dims)} ON documents_chunk"
                f" USING hnsw (({COLUMN}::vector({dims})) vector_ip_ops) WHERE {_width(dims)}"
            )
            log.info("pgvector: graph of %d-dimension chunks made (%.1f s)", dims, time.monotonic() - started)
    _indexed.add(key)


def _iterative(cursor) -> bool:
    """Whether the server's pgvector walks a graph on past filtered rows (0.8 and later; an
    earlier one refuses the setting, and returns fewer neighbours when the filter drops many)."""
    key = _key(cursor.db.alias)
    if key not in _iterative_scan:
        cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        row = cursor.fetchone()
        version = tuple(int(p) for p in re.findall(r"\d+", row[0])[:2]) if row else (0, 0)
        _iterative_scan[key] = version >= (0, 8)
    return _iterative_scan[key]


def _literal(vector: np.ndarray) -> str:
    return "[" + ",".join(repr(float(x)) for x in np.asarray(vector, dtype=np.float32)) + "]"


def _width(dims: int) -> str:
    """The rows of this width, told from the stored bytes' length (read from the row's header,
    where vector_dims() would fetch each out-of-line vector)."""
    return f"octet_length(embedding) = {4 * int(dims)}"


def exact(
    query_vector: np.ndarray, collection_ids: list[int], limit: int, using: str = "default"
) -> list[tuple[int, float]]:
    """(chunk id, cosine similarity) of the nearest chunks of these collections, best first,
    every row of theirs compared (through the index on the collection). The distance is not the
    graph's expression (no cast to a width), so the planner cannot take the graph for it."""
    dims = int(np.asarray(query_vector).shape[0])
    vector = _literal(query_vector)
    sql = (
        f"SELECT id, -({COLUMN} <#> %s::vector) FROM documents_chunk"
        f" WHERE collection_id = ANY(%s) AND {_width(dims)} AND {COLUMN} IS NOT NULL"
        f" ORDER BY {COLUMN} <#> %s::vector, id LIMIT %s"
    )
    with connections[using].cursor() as cursor:
        cursor.execute(sql, [vector, list(collection_ids), vector, limit])
        return [(int(i), float(s)) for i, s in cursor.fetchall()]


def graph_sql(dims: int) -> str:
    """graph's query (parameters: the query vector's literal, the collection ids, the literal
    again, the limit): the graph's own expression, so that the planner can walk it."""
    typed = f"{COLUMN}::vector({int(dims)})"
    return (
        f"SELECT id, -({typed} <#> %s::vector({int(dims)})) FROM documents_chunk"
        f" WHERE {_width(dims)} AND collection_id = ANY(%s)"
        f" ORDER BY {typed} <#> %s::vector({int(dims)}) LIMIT %s"
    )


def graph(
    query_vector: np.ndarray, collection_ids: list[int], limit: int, using: str = "default"
) -> list[tuple[int, float]]:
    """The same through the HNSW graph of the query's width: approximate (on real embeddings
    recall@10 0.990 at 65,000 chunks, in 3.2 ms; docs/performance.md)."""
    dims = int(np.asarray(query_vector).shape[0])
    vector = _literal(query_vector)
    sql = graph_sql(dims)
    with transaction.atomic(using=using), connections[using].cursor() as cursor:
        # relaxed_order: the graph is walked on past the first candidates that the collections'
        # filter drops (pgvector 0.8); its results may come slightly out of order, so sorted here.
        cursor.execute("SELECT set_config('hnsw.ef_search', %s, true)", [str(max(EF_SEARCH_MIN, limit))])
        if _iterative(cursor):
            cursor.execute("SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true)")
        cursor.execute(sql, [vector, list(collection_ids), vector, limit])
        found = [(int(i), float(s)) for i, s in cursor.fetchall()]
    return sorted(found, key=lambda hit: (-hit[1], hit[0]))


def nearest(
    query_vector: np.ndarray, collection_ids: list[int], held: int, limit: int, using: str = "default"
) -> list[tuple[int, float]]:
    """exact or graph: the graph where the searched collections hold a fair share of all chunks
    (GRAPH_SHARE; a graph walked for a small share visits that many times the rows to find the
    collections' nearest), exact where they are a small part of a large table."""
    dims = int(np.asarray(query_vector).shape[0])
    if dims > MAX_INDEXED_DIMS:
        return exact(query_vector, collection_ids, limit, using)
    with connections[using].cursor() as cursor:
        cursor.execute("SELECT reltuples FROM pg_class WHERE oid = to_regclass('documents_chunk')")
        row = cursor.fetchone()
    rows = max(float(row[0]) if row else 0.0, float(held))
    if held >= GRAPH_SHARE * rows:
        return graph(query_vector, collection_ids, limit, using)
    return exact(query_vector, collection_ids, limit, using)
