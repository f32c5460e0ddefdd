"""python manage.py bench_pull: a model pulled through HomeAI's /api/pull against curl from the
same local registry, alternated, in one run (bench/pull.py)."""

from __future__ import annotations

import json
from pathlib import Path

from django.core.management.base import BaseCommand

from bench.pull import markdown, run


class Command(BaseCommand):
    help = "Pull speed: HomeAI's /api/pull against curl from one local docker-registry, MB/s and their ratio."

    def add_arguments(self, parser):
        parser.add_argument("--size-mb", type=int, default=250, help="the model file's size (MB)")
        parser.add_argument("--rounds", type=int, default=5)
        parser.add_argument("--out", default="docs/bench", help="folder for pull.json")

    def handle(self, *args, **opts):
        result = run(size_mb=opts["size_mb"], rounds=opts["rounds"], log=lambda msg: self.stderr.write(msg))
        out = Path(opts["out"])
        out.mkdir(parents=True, exist_ok=True)
        (out / "pull.json").write_text(json.dumps(result, indent=2) + "\n")
        self.stdout.write(markdown(result))
        self.stdout.write(f"\nWrote {out / 'pull.json'}.")
