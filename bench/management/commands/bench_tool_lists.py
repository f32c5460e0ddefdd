"""python manage.py bench_tool_lists: household questions on the bundled chat model with Open
WebUI's 36 default tools offered all, matching, or none (docs/api.md has the last run). The
benchmark is bench/tool_lists.py."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand

from bench.tool_lists import ToolListsConfig, markdown, run, write


class Command(BaseCommand):
    help = "Which answers are useful when a client sends more tools than a small model can use?"

    def add_arguments(self, parser):
        parser.add_argument("--model-path", default=str(settings.BUNDLED_CHAT_MODEL_PATH))
        parser.add_argument("--threads", type=int, default=settings.HOMEAI_THREADS)
        parser.add_argument("--share", type=float, default=settings.HOMEAI_TOOL_SHARE)
        parser.add_argument("--context", type=int, default=settings.HOMEAI_CONTEXT)
        parser.add_argument("--out", default="docs/bench", help="folder for tool_lists.json")

    def handle(self, *args, **opts):
        cfg = ToolListsConfig(
            model_path=Path(opts["model_path"]), threads=opts["threads"], share=opts["share"], context=opts["context"]
        )
        result = run(cfg, log=lambda msg: self.stderr.write(msg))
        path = write(result, Path(opts["out"]))
        self.stdout.write(markdown(result))
        self.stdout.write(f"\nWrote {path}.")
