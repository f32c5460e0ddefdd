"""python manage.py bench_resume: a follow-up's time to first token after a long history, with
its slot kept, restored from the saved state, and read again (docs/performance.md has the last
run). The benchmark is bench/resume.py."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand

from bench.resume import ResumeConfig, markdown, run, write


class Command(BaseCommand):
    help = "Conversations that resume hot: a follow-up's TTFT with its slot kept, restored, and read again."

    def add_arguments(self, parser):
        parser.add_argument("--model-path", default=str(settings.BUNDLED_CHAT_MODEL_PATH))
        parser.add_argument("--rounds", type=int, default=5)
        parser.add_argument("--history-lines", type=int, default=85)
        parser.add_argument("--threads", type=int, default=settings.HOMEAI_THREADS)
        parser.add_argument("--out", default="docs/bench", help="folder for resume.json")

    def handle(self, *args, **opts):
        cfg = ResumeConfig(
            model_path=Path(opts["model_path"]),
            rounds=opts["rounds"],
            history_lines=opts["history_lines"],
            threads=opts["threads"],
            kv_dir=settings.DATA_DIR / "bench-kv",
        )
        result = run(cfg, log=lambda msg: self.stderr.write(msg))
        path = write(result, Path(opts["out"]))
        self.stdout.write(markdown(result))
        self.stdout.write(f"\nWrote {path}.")
