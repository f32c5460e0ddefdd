"""python manage.py bench_engine: engine throughput per policy and the interference scenario.

The benchmark itself is bench/engine.py; this turns the options into its configuration.
"""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand

from bench.engine import BenchConfig, markdown, run_all, write_outputs


class Command(BaseCommand):
    help = "Benchmark the engine on the configured model (throughput at 1/2/4 streams, prefill interference)."

    def add_arguments(self, parser):
        parser.add_argument(
            "--model-path",
            default=str(settings.BUNDLED_BASE_MODEL_PATH),
            help="the GGUF to measure (default: the bundled base model, Gemma 3 270M, as docs/bench/journal.md)",
        )
        parser.add_argument("--threads", type=int, default=settings.HOMEAI_THREADS)
        parser.add_argument(
            "--gpu-layers",
            type=int,
            default=settings.HOMEAI_GPU_LAYERS,
            help="layers offloaded to a GPU (CUDA builds; 999: all)",
        )
        parser.add_argument("--output-tokens", type=int, default=64)
        parser.add_argument("--doc-tokens", type=int, default=1500)
        parser.add_argument("--budgets", default="32,64,128", help="chunk budgets to try, comma-separated")
        parser.add_argument("--target-ms", type=float, default=150.0, help="also try this fixed step time (0: skip)")
        parser.add_argument("--stall-factors", default="2.5", help="relative targets to try, comma-separated")
        parser.add_argument(
            "--slices", default="16,32,64,128,512", help="prompt slice sizes to cost, comma-separated (empty: skip)"
        )
        parser.add_argument("--repeats", type=int, default=3, help="interference runs pooled per setting")
        parser.add_argument("--no-throughput", action="store_true", help="only the interference scenario")
        parser.add_argument("--out", default="docs/bench", help="folder for engine.json and engine.html")

    def handle(self, *args, **opts):
        cfg = BenchConfig(
            model_path=Path(opts["model_path"]),
            threads=opts["threads"],
            gpu_layers=opts["gpu_layers"],
            output_tokens=opts["output_tokens"],
            doc_tokens=opts["doc_tokens"],
            budgets=tuple(int(b) for b in opts["budgets"].split(",") if b),
            target_ms=opts["target_ms"],
            stall_factors=tuple(float(f) for f in opts["stall_factors"].split(",") if f),
            throughput=not opts["no_throughput"],
            repeats=opts["repeats"],
            slice_sizes=tuple(int(n) for n in opts["slices"].split(",") if n),
            default_stall_factor=settings.HOMEAI_STALL_FACTOR or 2.0,
        )
        result = run_all(cfg, log=lambda msg: self.stderr.write(msg))
        json_path, html_path = write_outputs(result, Path(opts["out"]))
        self.stdout.write(markdown(result))
        self.stdout.write(f"\nWrote {json_path} and {html_path} in {result['seconds']:.0f} s.")
