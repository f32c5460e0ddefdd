"""An index library against the brute force of documents/vectors.py, for bench/retrieval.py:
faiss's HNSW graph over the same kind of vectors (random unit vectors of 384 dimensions), in the
peer's virtual environment (nothing here imports the project):

    /var/tmp/homeai-st-venv/bin/pip install faiss-cpu==1.15.1
    /var/tmp/homeai-st-venv/bin/python bench/ann_peer.py 100000 --queries 200 --threads 2

Prints one JSON line: the graph's build seconds and memory, search p50/p99 (50 nearest, as the
search's candidates), and recall@10 against the exact answer (faiss's flat inner product, also
timed). Random vectors have no clusters: a graph's recall on real embeddings is higher.
"""

from __future__ import annotations

import argparse
import json
import time

import faiss
import numpy as np

DIMENSIONS = 384
CANDIDATES = 50


def _percentiles(ms: list[float]) -> dict:
    return {"p50_ms": float(np.percentile(ms, 50)), "p99_ms": float(np.percentile(ms, 99)), "n": len(ms)}


def _timed(index, queries: np.ndarray) -> tuple[dict, np.ndarray]:
    ms, found = [], []
    for q in queries:
        started = time.perf_counter()
        _, ids = index.search(q[None, :], CANDIDATES)
        ms.append((time.perf_counter() - started) * 1000)
        found.append(ids[0])
    return _percentiles(ms), np.array(found)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("size", type=int)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--m", type=int, default=32, help="HNSW's links per node")
    parser.add_argument("--ef-construction", type=int, default=64)
    parser.add_argument("--ef-search", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    faiss.omp_set_num_threads(args.threads)
    rng = np.random.default_rng(args.seed)
    matrix = rng.standard_normal((args.size, DIMENSIONS), dtype=np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    queries = rng.standard_normal((args.queries, DIMENSIONS), dtype=np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)

    flat = faiss.IndexFlatIP(DIMENSIONS)
    flat.add(matrix)
    exact_latency, exact = _timed(flat, queries)

    graph = faiss.IndexHNSWFlat(DIMENSIONS, args.m, faiss.METRIC_INNER_PRODUCT)
    graph.hnsw.efConstruction = args.ef_construction
    started = time.perf_counter()
    graph.add(matrix)
    build_s = time.perf_counter() - started
    graph.hnsw.efSearch = args.ef_search
    graph_latency, found = _timed(graph, queries)
    recall = float(np.mean([len(set(f[:10]) & set(e[:10])) / 10 for f, e in zip(found, exact, strict=True)]))
    print(
        json.dumps(
            {
                "chunks": args.size,
                "faiss": faiss.__version__,
                "threads": args.threads,
                "flat": exact_latency,
                "hnsw": {
                    **graph_latency,
                    "m": args.m,
                    "ef_construction": args.ef_construction,
                    "ef_search": args.ef_search,
                    "build_s": build_s,
                    "recall_at_10": recall,
                    "links_mb": args.size * args.m * 2 * 4 / 1e6,
                },
            }
        )
    )


if __name__ == "__main__":
    main()
