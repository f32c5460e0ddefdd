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
        parser.add_argument(
            "--model-path",
            help="the model (default: the bundled chat model, or with --completion the bundled base model)",
        )
        parser.add_argument(
            "--completion",
            action="store_true",
            help="the tasks as completion prompts, for a base model (as /v1/completions sends them)",
        )
        parser.add_argument("--rounds", type=int, default=3)
        parser.add_argument("--max-tokens", type=int, default=256)
        parser.add_argument("--threads", type=int, default=settings.HOMEAI_THREADS)
        parser.add_argument(
            "--gpu-layers",
            type=int,
            default=settings.HOMEAI_GPU_LAYERS,
            help="layers offloaded to a GPU (CUDA builds; 999: all)",
        )
        parser.add_argument(
            "--out", default="docs/bench", help="folder for speculation.json (speculation-completion.json)"
        )

    def handle(self, *args, **opts):
        default_model = settings.BUNDLED_BASE_MODEL_PATH if opts["completion"] else settings.BUNDLED_CHAT_MODEL_PATH
        cfg = SpeculationConfig(
            model_path=Path(opts["model_path"] or default_model),
            rounds=opts["rounds"],
            max_tokens=opts["max_tokens"],
            threads=opts["threads"],
            gpu_layers=opts["gpu_layers"],
            completion=opts["completion"],
        )
        result = run(cfg, log=lambda msg: self.stderr.write(msg))
        path = write(result, Path(opts["out"]))
        self.stdout.write(markdown(result))
        self.stdout.write(f"\nWrote {path}.")
        if not all(row["identical"] for row in result["tasks"].values()):
            raise CommandError("Speculative decoding changed a greedy answer's text.")
