"""python manage.py bench_retrieval: documents' indexing throughput beside sentence-transformers,
search p50/p99 at 10^4-10^6 chunks, recall@5 and MRR of full-text, vectors and hybrid, and four
chats' gaps between tokens while a collection is indexed (docs/performance.md has the last run).
The benchmark is bench/retrieval.py; the peer runs in a venv of its own (bench/st_peer.py says
how to make it)."""

from __future__ import annotations

import logging
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from bench import retrieval

PARTS = ("indexing", "quality", "itl", "search", "retrieve")


class Command(BaseCommand):
    help = "Documents: indexing throughput against sentence-transformers, search latency, retrieval quality, ITL."

    def add_arguments(self, parser):
        parser.add_argument(
            "--quick",
            action="store_true",
            help="the questions' pages only, 10^4 and 10^5 chunks, 50 queries, 20 s windows (a few minutes)",
        )
        parser.add_argument("--corpus", default=str(retrieval.CORPUS), help="python3-doc's html folder")
        parser.add_argument("--questions", type=int, default=None, help="the first N labelled questions (all)")
        parser.add_argument("--distractors", type=int, default=None, help="other library pages indexed (60; quick 0)")
        parser.add_argument("--threads", type=int, default=2)
        parser.add_argument(
            "--peer-python", default=str(retrieval.PEER_PYTHON), help="the sentence-transformers venv's python"
        )
        parser.add_argument("--no-peer", action="store_true", help="skip the sentence-transformers peer")
        parser.add_argument("--sizes", default=None, help="chunks per search collection (10000,100000,1000000)")
        parser.add_argument("--queries", type=int, default=None, help="searches per size (200; quick 50)")
        parser.add_argument("--chats", type=int, default=4)
        parser.add_argument("--chat-tokens", type=int, default=48)
        parser.add_argument("--window", type=float, default=None, help="seconds of chats before and during (60)")
        parser.add_argument(
            "--api-frame-ms",
            type=float,
            default=0.0,
            help="the stack's HOMEAI_API_FRAME_MS (0: every token as it comes, the engine's own gaps)",
        )
        parser.add_argument("--parts", default=",".join(PARTS), help="which of " + ",".join(PARTS))
        parser.add_argument("--out", default="docs/bench", help="folder for retrieval.json")
        parser.add_argument("--name", default="retrieval", help="the JSON's name, without .json")

    def handle(self, *args, **opts):
        logging.getLogger("httpx").setLevel(logging.WARNING)  # one INFO line per request drowns the progress
        quick = opts["quick"]
        parts = tuple(p for p in opts["parts"].split(",") if p)
        if unknown := sorted(set(parts) - set(PARTS)):
            raise CommandError(f"Unknown part(s): {', '.join(unknown)}; choose from {', '.join(PARTS)}.")
        try:
            sizes = tuple(
                int(s) for s in (opts["sizes"] or ("10000,100000" if quick else "10000,100000,1000000")).split(",")
            )
        except ValueError:
            raise CommandError("--sizes: whole numbers separated by commas, e.g. 10000,100000.") from None
        if min(sizes) < 1:
            raise CommandError("--sizes: each size must be 1 or more.")
        cfg = retrieval.RetrievalConfig(
            corpus=Path(opts["corpus"]),
            questions=opts["questions"],
            distractors=opts["distractors"] if opts["distractors"] is not None else (0 if quick else 60),
            threads=opts["threads"],
            peer_python=None if opts["no_peer"] else Path(opts["peer_python"]),
            sizes=sizes,
            queries=opts["queries"] or (50 if quick else 200),
            chats=opts["chats"],
            chat_tokens=opts["chat_tokens"],
            window_s=opts["window"] or (20.0 if quick else 60.0),
            api_frame_ms=opts["api_frame_ms"],
            parts=parts,
        )
        try:
            result = retrieval.run(cfg, log=lambda msg: self.stderr.write(msg))
        except RuntimeError as exc:
            raise CommandError(str(exc)) from None
        path = retrieval.write(result, Path(opts["out"]), opts["name"])
        self.stdout.write(retrieval.markdown(result))
        self.stdout.write(f"\nWrote {path} in {result['seconds']:.0f} s.")
