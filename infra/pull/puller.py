"""A pull by name, to whichever source the name belongs."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from infra.pull import hf, oci
from infra.pull.blobs import Progress
from infra.pull.names import HfName, parse


def pull(
    name: str,
    models_dir: Path,
    *,
    registry: str,
    status: Callable[[str], None],
    progress: Progress,
    cancelled: Callable[[], bool] = lambda: False,
    hf_endpoint: str | None = None,
) -> Path:
    """Pull a model by name into models_dir (created if missing); the installed GGUF's path.
    status gets Ollama's status lines, progress (digest, total, completed) per layer; PullError
    (a code and a sentence) when it cannot."""
    parsed = parse(name)
    models_dir.mkdir(parents=True, exist_ok=True)
    if isinstance(parsed, HfName):
        return hf.pull(parsed, models_dir, status=status, progress=progress, cancelled=cancelled, endpoint=hf_endpoint)
    return oci.pull(parsed, models_dir, registry=registry, status=status, progress=progress, cancelled=cancelled)
