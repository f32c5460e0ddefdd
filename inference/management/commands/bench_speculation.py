"""python manage.py bench_speculation: speculative decoding against plain decoding on three
tasks, greedy, interleaved rounds (docs/performance.md has the last run). The benchmark is
bench/speculation.py."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from bench.speculation import SpeculationConfig, markdown, run, write


class Command(BaseCommand):
    help = "Prompt-lookup speculative decoding vs plain decoding: decode tok/s, identical text, acceptance."

    def add_arguments(self, parser):
        parser.add_argument("--model-path", default=str(settings.BUNDLED_CHAT_MODEL_PATH))
        parser.add_argument("--rounds", type=int, default=3)
        parser.add_argument("--max-tokens", type=int, default=256)
        parser.add_argument("--threads", type=int, default=settings.HOMEAI_THREADS)
        parser.add_argument(
            "--gpu-layers",
            type=int,
            default=settings.HOMEAI_GPU_LAYERS,
            help="layers offloaded to a GPU (CUDA builds; 999: all)",
        )
        parser.add_argument("--out", default="docs/bench", help="folder for speculation.json")

    def handle(self, *args, **opts):
        cfg = SpeculationConfig(
            model_path=Path(opts["model_path"]),
            rounds=opts["rounds"],
            max_tokens=opts["max_tokens"],
            threads=opts["threads"],
            gpu_layers=opts["gpu_layers"],
        )
        result = run(cfg, log=lambda msg: self.stderr.write(msg))
        path = write(result, Path(opts["out"]))
        self.stdout.write(markdown(result))
        self.stdout.write(f"\nWrote {path}.")
        if not all(row["identical"] for row in result["tasks"].values()):
            raise CommandError("Speculative decoding changed a greedy answer's text.")
