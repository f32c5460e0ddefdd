"""python manage.py bench_chat_render: TPOT of one answer with and without the chat page drawing it.

Needs a running HomeAI on this checkout's database (`make run`); the benchmark is bench/chat_render.py.
"""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand

from bench.chat_render import RenderConfig, markdown, run, write


class Command(BaseCommand):
    help = "Server TPOT of the same answer streamed to a plain socket and to the chat page in Chromium, interleaved."

    def add_arguments(self, parser):
        parser.add_argument("--url", default="http://127.0.0.1:8000", help="the running HomeAI")
        parser.add_argument("--rounds", type=int, default=5)
        parser.add_argument("--max-tokens", type=int, default=160)
        parser.add_argument("--out", default="docs/bench", help="folder for chat_render.json")

    def handle(self, *args, **opts):
        cfg = RenderConfig(url=opts["url"].rstrip("/"), rounds=opts["rounds"], max_tokens=opts["max_tokens"])
        result = run(cfg, log=lambda msg: self.stderr.write(msg))
        path = write(result, Path(opts["out"]))
        self.stdout.write(markdown(result))
        self.stdout.write(f"\nWrote {path}.")
