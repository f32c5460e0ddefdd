"""python manage.py bench_vectors: chunk vectors on PostgreSQL, numpy in the process against
pgvector in the database (exact and its HNSW graph), on a scratch database of the server
DATABASE_URL names (docs/performance.md has the last run). The benchmark is bench/vector_search.py."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand

from bench.vector_search import VectorsConfig, markdown, run, write


class Command(BaseCommand):
    help = "Chunk vectors on PostgreSQL: numpy against pgvector (exact and HNSW), p50/p99 and recall."

    def add_arguments(self, parser):
        parser.add_argument("--sizes", default="10000,65000", help="comma-separated chunk counts (at most 100000)")
        parser.add_argument("--random", action="store_true", help="random unit vectors, not the corpus' sentences")
        parser.add_argument("--queries", type=int, default=VectorsConfig.queries)
        parser.add_argument("--seed", type=int, default=VectorsConfig.seed)
        parser.add_argument("--name", default="vectors-pgvector")
        parser.add_argument("--out", default="docs/bench")

    def handle(self, *args, **opts):
        sizes = tuple(int(s) for s in opts["sizes"].split(",") if s.strip())
        cfg = VectorsConfig(sizes=sizes, queries=opts["queries"], seed=opts["seed"], random=opts["random"])
        result = run(cfg, log=lambda msg: self.stderr.write(msg))
        path = write(result, Path(opts["out"]), opts["name"])
        self.stdout.write(markdown(result))
        self.stdout.write(f"\nWrote {path}.")
