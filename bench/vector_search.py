"""Chunk vectors on PostgreSQL: numpy's brute force in the process (documents/vectors.py, what a
server without pgvector gets) against pgvector in the database (documents/pgvector.py), exact
and through the HNSW graph, on one scratch database of the server DATABASE_URL names:

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/homeai python manage.py bench_vectors

The vectors are real: the sentences of Python's documentation (Debian's python3-doc HTML, about
70,900 distinct ones), embedded by the bundled all-MiniLM-L6-v2 through llama.cpp (about 4 minutes
on 2 cores; kept in HOMEAI_DATA_DIR/bench-vectors for the next run); the queries are the
labelled questions of bench_retrieval and sentences held out of the rows. `--random` takes random
unit vectors instead, which no graph can index well (they have no neighbourhoods: recall@10
0.13 at 10^5, as faiss's HNSW on them, docs/performance.md). For each size (rows written as the
worker writes them, so the generated column is filled by the database as in use):
- how long the rows took to write and the graph to build;
- search p50/p99 of the nearest CANDIDATES (the hybrid search's vector half): numpy (and its
  first search, the matrix read from the database), pgvector exact, pgvector's graph, and the
  graph's recall@10 and recall@50 against the exact answer (random vectors have no clusters: a
  graph's recall on real embeddings is higher);
- a small collection (SMALL chunks) searched among all of them: exact, through the collection's
  index, the graph with its filter, and numpy;
- whether the planner took the graph (EXPLAIN).
"""

from __future__ import annotations

import gc
import hashlib
import html
import json
import os
import re
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import connection

from bench import report
from bench.retrieval import CORPUS, QUESTIONS, STORED_VECTORS_UP_TO, _synthetic
from documents import pgvector, selectors, vectors
from documents.models import Collection

SMALL = 1_000
DIMS = 384


TAG = re.compile(r"<[^>]+>")
BLOCK_END = re.compile(r"</p>|</li>|</dd>|</h\d>|<br\s*/?>")
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")
EMBED_BATCH = 64


@dataclass
class VectorsConfig:
    sizes: tuple[int, ...] = (10_000, 65_000)
    queries: int = 100
    seed: int = 7
    random: bool = False
    corpus: Path = CORPUS


def sentences(corpus: Path) -> list[str]:
    """The distinct sentences of 40-400 characters of the corpus' HTML pages, in file order."""
    seen: dict[str, None] = {}
    for page in sorted(corpus.resolve().rglob("*.html")):
        text = re.sub(r"(?s)<(script|style).*?</\1>", " ", page.read_text(errors="ignore"))
        for block in BLOCK_END.split(text):
            for sentence in SENTENCE_END.split(" ".join(html.unescape(TAG.sub(" ", block)).split())):
                if 40 <= len(sentence) <= 400:
                    seen.setdefault(sentence)
    return list(seen)


def embedded(texts: list[str], log) -> np.ndarray:
    """The texts' unit vectors from the bundled embedding model, cached on disk by their hash."""
    path = settings.BUNDLED_EMBEDDING_MODEL_PATH
    digest = hashlib.sha256("\n".join([path.name, *texts]).encode()).hexdigest()[:16]
    cached = settings.DATA_DIR / "bench-vectors" / f"{digest}.npy"
    if cached.is_file():
        return np.load(cached)
    import llama_cpp  # noqa: PLC0415 (llama.cpp: only this benchmark's embedding needs it in this process)

    model = llama_cpp.Llama(
        str(path), embedding=True, n_ctx=512, n_batch=512, n_ubatch=512, flash_attn=True, verbose=False,
        n_threads=settings.HOMEAI_THREADS, n_threads_batch=settings.HOMEAI_THREADS,
    )  # fmt: skip
    started = time.monotonic()
    rows = []
    for lo in range(0, len(texts), EMBED_BATCH):
        rows.extend(model.embed(texts[lo : lo + EMBED_BATCH], normalize=True, truncate=True))
        if lo and lo % (EMBED_BATCH * 200) == 0:
            log(f"  {lo:,} of {len(texts):,} sentences embedded ({time.monotonic() - started:.0f} s)")
    matrix = np.asarray(rows, dtype=np.float32)
    cached.parent.mkdir(parents=True, exist_ok=True)
    np.save(cached, matrix)
    return matrix


def _timed(fn: Callable[[int], object], n: int) -> dict:
    ms = []
    for i in range(n):
        started = time.perf_counter()
        fn(i)
        ms.append((time.perf_counter() - started) * 1000)
    return {"p50_ms": report.percentile(ms, 50), "p99_ms": report.percentile(ms, 99), "n": n}


def _graph_plan(query: np.ndarray, collection_id: int) -> str:
    """The plan of pgvector.graph's query, without the vector's 384 numbers."""
    literal = pgvector._literal(query)
    with connection.cursor() as cursor:
        cursor.execute("SELECT set_config('hnsw.iterative_scan', 'relaxed_order', false)")
        cursor.execute("EXPLAIN " + pgvector.graph_sql(DIMS), [literal, [collection_id], literal, selectors.CANDIDATES])
        # PostgreSQL prints the vector in its own number format: any literal vector is the query's.
        return "\n".join(re.sub(r"'\[[^\]]*\]'", "$query", r[0]) for r in cursor.fetchall())


def _size(owner, size: int, rows: np.ndarray | None, queries: np.ndarray, rng: np.random.Generator, log) -> dict:
    if size > STORED_VECTORS_UP_TO:
        raise ValueError(f"bench_vectors writes at most {STORED_VECTORS_UP_TO:,} chunks a size")
    with connection.cursor() as cursor:  # the rows first, then the graph over them (its build time)
        cursor.execute(f"DROP INDEX IF EXISTS {pgvector.graph_name(DIMS)}")
    pgvector._indexed.clear()
    started = time.monotonic()
    collection, matrix = _synthetic(owner, size, ["synthetic chunk"], rng, log, None if rows is None else rows[:size])
    written_s = time.monotonic() - started
    started = time.monotonic()
    pgvector.ensure_graph(DIMS)
    graph_s = time.monotonic() - started
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE documents_chunk")
    n = len(queries)
    k = selectors.CANDIDATES

    with vectors._lock:
        vectors._cache.clear()
    started = time.perf_counter()
    found = vectors.matrices([collection])
    first_ms = (time.perf_counter() - started) * 1000
    row: dict = {"chunks": size, "write_s": written_s, "graph_build_s": graph_s, "numpy_first_ms": first_ms}
    row["numpy"] = _timed(lambda i: vectors.nearest(queries[i], vectors.matrices([collection]), k), n)
    row["numpy_matrix_mb"] = found[0][1].nbytes / 1e6
    row["pgvector_exact"] = _timed(lambda i: pgvector.exact(queries[i], [collection.id], k), n)
    row["pgvector_graph"] = _timed(lambda i: pgvector.graph(queries[i], [collection.id], k), n)
    recall10 = recall50 = 0
    for query in queries:
        exact = [i for i, _ in vectors.nearest(query, found, k)]
        graph = [i for i, _ in pgvector.graph(query, [collection.id], k)]
        recall10 += len(set(exact[:10]) & set(graph[:10]))
        recall50 += len(set(exact) & set(graph))
    row["graph_recall_at_10"] = recall10 / (10 * n)
    row["graph_recall_at_50"] = recall50 / (k * n)
    row["graph_plan"] = _graph_plan(queries[0], collection.id)
    row["graph_used"] = pgvector.graph_name(DIMS) in row["graph_plan"]
    small, _ = _synthetic(owner, SMALL, ["synthetic chunk"], rng, log, None if rows is None else rows[-SMALL:])
    row["small_collection_exact"] = _timed(lambda i: pgvector.exact(queries[i], [small.id], k), n)
    row["small_collection_graph"] = _timed(lambda i: pgvector.graph(queries[i], [small.id], k), n)
    row["small_collection_numpy"] = _timed(lambda i: vectors.nearest(queries[i], vectors.matrices([small]), k), n)
    log(
        f"  {size:,}: numpy p50 {row['numpy']['p50_ms']:.1f} ms; pgvector exact {row['pgvector_exact']['p50_ms']:.1f},"
        f" graph {row['pgvector_graph']['p50_ms']:.1f} (recall@10 {row['graph_recall_at_10']:.3f},"
        f" built in {graph_s:.0f} s, used: {row['graph_used']}); {SMALL:,} among them"
        f" exact {row['small_collection_exact']['p50_ms']:.1f} ms, graph {row['small_collection_graph']['p50_ms']:.1f},"
        f" numpy {row['small_collection_numpy']['p50_ms']:.2f}"
    )
    del found, matrix
    with vectors._lock:
        vectors._cache.clear()
    gc.collect()
    return row


def _vectors(cfg: VectorsConfig, rng: np.random.Generator, log) -> tuple[np.ndarray | None, np.ndarray, str]:
    """(the rows' vectors, or None for random ones; the queries' vectors; what they are)."""
    if cfg.random:
        queries = rng.standard_normal((cfg.queries, DIMS), dtype=np.float32)
        return None, queries / np.linalg.norm(queries, axis=1, keepdims=True), "random unit vectors"
    found = sentences(cfg.corpus)
    questions = [q["q"] for q in json.loads(QUESTIONS.read_text())["questions"]][: cfg.queries]
    order = rng.permutation(len(found))
    held_out = [found[i] for i in order[: cfg.queries - len(questions)]]
    kept = [found[i] for i in order[cfg.queries - len(questions) :]]
    log(f"{len(found):,} sentences of {cfg.corpus}; embedding them (cached after the first run)")
    matrix = embedded(kept + questions + held_out, log)
    source = f"{len(kept):,} sentences of {cfg.corpus}, all-MiniLM-L6-v2 Q8_0; queries: {len(questions)} questions"
    return matrix[: len(kept)], matrix[len(kept) :], f"{source} and {len(held_out)} held-out sentences"


def run(cfg: VectorsConfig, log: Callable[[str], None] = print) -> dict:
    if connection.vendor != "postgresql":
        raise RuntimeError("bench_vectors runs on PostgreSQL: set DATABASE_URL=postgres://...")
    database = connection.creation.create_test_db(verbosity=0, autoclobber=True, keepdb=False)
    try:
        state = pgvector.enable()
        if state != "on":
            raise RuntimeError(f"pgvector is not on in {database}: {state} (scripts/ensure-pgvector.sh)")
        with connection.cursor() as cursor:
            cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
            version = cursor.fetchone()[0]
            cursor.execute("SHOW server_version")
            server = cursor.fetchone()[0]
        owner = get_user_model().objects.create_user("bench", password="bench-vectors-1")
        rng = np.random.default_rng(cfg.seed)
        rows, queries, source = _vectors(cfg, rng, log)
        result: dict = {
            "config": {**asdict(cfg), "corpus": str(cfg.corpus)},
            "machine": report.machine(load_average_at_start=os.getloadavg()),
            "postgresql": server,
            "pgvector": version,
            "numpy_up_to": vectors.NUMPY_UP_TO,
            "graph_share": pgvector.GRAPH_SHARE,
            "vectors": source,
            "rows": [],
        }
        for size in sorted(cfg.sizes):
            log(f"vectors: {size:,} chunks")
            Collection.objects.all().delete()  # each size alone in the table
            if rows is not None and size + SMALL > len(rows):
                log(f"  {size:,} is more than the {len(rows) - SMALL:,} sentences there are: skipped")
                continue
            result["rows"].append(_size(owner, size, rows, queries, rng, log))
        return result
    finally:
        connection.creation.destroy_test_db(database, verbosity=0)


def markdown(result: dict) -> str:
    lines = [
        f"PostgreSQL {result['postgresql']}, pgvector {result['pgvector']}; the nearest "
        f"{selectors.CANDIDATES} of {DIMS}-dimension unit vectors, p50 / p99 in ms",
        "",
        "| chunks | numpy | numpy's first (matrix read) | pgvector exact | pgvector graph | graph recall@10 / @50 "
        f"| graph built | {SMALL:,} among them: exact / graph / numpy (p50) |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in result["rows"]:
        cell = lambda d: f"{d['p50_ms']:.1f} / {d['p99_ms']:.1f}"  # noqa: E731
        lines.append(
            f"| {r['chunks']:,} | {cell(r['numpy'])} | {r['numpy_first_ms']:.0f} | {cell(r['pgvector_exact'])} "
            f"| {cell(r['pgvector_graph'])} | {r['graph_recall_at_10']:.3f} / {r['graph_recall_at_50']:.3f} "
            f"| {r['graph_build_s']:.0f} s | {r['small_collection_exact']['p50_ms']:.1f} / "
            f"{r['small_collection_graph']['p50_ms']:.1f} / {r['small_collection_numpy']['p50_ms']:.2f} |"
        )
    return "\n".join(lines) + "\n"


def write(result: dict, out_dir: Path, name: str) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{name}.json"
    path.write_text(json.dumps(result, indent=2) + "\n")
    return path
