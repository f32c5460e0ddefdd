"""python manage.py bench_speech: reading aloud's time to first audio after the first sentence
ends, alone and beside the chat model decoding (docs/performance.md has the last run). The
benchmark is bench/speech.py."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand

from bench.speech import SpeechConfig, markdown, run, write


class Command(BaseCommand):
    help = "Reading aloud: time to first audio after the first sentence ends, alone and while the model decodes."

    def add_arguments(self, parser):
        parser.add_argument("--model-path", default=str(settings.BUNDLED_CHAT_MODEL_PATH))
        parser.add_argument("--rounds", type=int, default=5)
        parser.add_argument("--threads", type=int, default=settings.HOMEAI_THREADS)
        parser.add_argument("--out", default="docs/bench", help="folder for speech.json")

    def handle(self, *args, **opts):
        cfg = SpeechConfig(model_path=Path(opts["model_path"]), rounds=opts["rounds"], threads=opts["threads"])
        result = run(cfg, log=lambda msg: self.stderr.write(msg))
        path = write(result, Path(opts["out"]))
        self.stdout.write(markdown(result))
        self.stdout.write(f"\nWrote {path}.")
