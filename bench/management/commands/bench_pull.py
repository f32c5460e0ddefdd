"""python manage.py bench_pull: a 250 MB GGUF pulled by name from a local docker-registry, against
curl from the same server, in turns (docs/performance.md has the last run). The benchmark is
bench/pull.py."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from bench.pull import PullBenchConfig, markdown, run, write


class Command(BaseCommand):
    help = "A model pull's MB/s against curl's from the same local registry (goal: at least 0.90 of curl)."

    def add_arguments(self, parser):
        parser.add_argument("--gguf", default=str(settings.BUNDLED_BASE_MODEL_PATH), help="the GGUF pushed and pulled")
        parser.add_argument("--rounds", type=int, default=5)
        parser.add_argument("--work-dir", default=str(settings.DATA_DIR), help="where both download to")
        parser.add_argument("--out", default="docs/bench", help="folder for pull.json")

    def handle(self, *args, **opts):
        gguf = Path(opts["gguf"])
        if not gguf.is_file():
            raise CommandError(f"There is no file {gguf}.")
        cfg = PullBenchConfig(gguf=gguf, rounds=opts["rounds"], work_dir=Path(opts["work_dir"]))
        result = run(cfg, log=lambda msg: self.stderr.write(msg))
        path = write(result, Path(opts["out"]))
        self.stdout.write(markdown(result))
        self.stdout.write(f"\nWrote {path}.")
