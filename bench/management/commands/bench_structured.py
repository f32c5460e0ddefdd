"""python manage.py bench_structured: N answers under a grammar on the bundled chat model, each
parsed and validated (docs/api.md has the last run). The benchmark is bench/structured.py."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from bench.structured import StructuredConfig, markdown, run, write


class Command(BaseCommand):
    help = "Schema-constrained answers (JSON schemas and tool calls) on the model: do all of them parse and validate?"

    def add_arguments(self, parser):
        parser.add_argument("--model-path", default=str(settings.BUNDLED_CHAT_MODEL_PATH))
        parser.add_argument("--n", type=int, default=200, help="how many answers")
        parser.add_argument("--threads", type=int, default=settings.HOMEAI_THREADS)
        parser.add_argument("--out", default="docs/bench", help="folder for structured.json")

    def handle(self, *args, **opts):
        cfg = StructuredConfig(model_path=Path(opts["model_path"]), n=opts["n"], threads=opts["threads"])
        result = run(cfg, log=lambda msg: self.stderr.write(msg))
        path = write(result, Path(opts["out"]))
        self.stdout.write(markdown(result))
        self.stdout.write(f"\nWrote {path}.")
        if result["valid"] != result["n"]:
            raise CommandError(f"{result['n'] - result['valid']} answers did not parse or validate.")
