"""Where a pull lands in a models folder, and the checks before a file is put there.

A model is `<file>.gguf`; beside it `<file>.pull.json` says what it was pulled as (its name, its
source, the registry's manifest, and the template, params, license and system layers Ollama
keeps beside the weights). Blobs are written as `.pull-sha256-<hex>.partial`, hidden from the
library's `*.gguf` listing, and renamed to the model's name only once their digest matched: a
model is listed whole or not at all.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
from pathlib import Path

from infra.pull.errors import PullError

GGUF_MAGIC = b"GGUF"
SIDECAR_SUFFIX = ".pull.json"
FREE_MARGIN = 64 * 2**20  # what a pull leaves free on the disk beyond the model's own bytes


def partial_path(models_dir: Path, digest: str) -> Path:
    """A blob's partial file, named by its digest: a pull stopped half-way resumes from it."""
    return models_dir / f".pull-{digest.replace(':', '-')}.partial"


def sidecar_path(model_path: Path) -> Path:
    return model_path.with_name(model_path.name + SIDECAR_SUFFIX)


def read_sidecar(model_path: Path) -> dict:
    """What a pulled model was pulled as ({} for a model put in the folder by hand)."""
    try:
        return json.loads(sidecar_path(model_path).read_text())
    except (OSError, ValueError):
        return {}


def gib(n: int) -> str:
    return f"{n / 2**30:.1f} GB" if n >= 2**30 else f"{n / 2**20:.0f} MB"


def check_room(models_dir: Path, needed: int) -> None:
    """PullError disk_full unless the folder's disk has room for `needed` more bytes."""
    free = shutil.disk_usage(models_dir).free
    if needed + FREE_MARGIN > free:
        raise PullError(
            "disk_full",
            f"The model needs {gib(needed)} more, but the models folder's disk has {gib(free)} free: "
            "free some space (delete a model you no longer use) and pull again.",
            status=507,
        )


def disk_full(exc: OSError) -> PullError | None:
    """The sentence for a write the disk refused, or None for another error."""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return PullError(
            "disk_full",
            "The models folder's disk filled up during the download: free some space and pull again.",
            status=507,
        )
    return None


def check_gguf(path: Path, name: str) -> None:
    """PullError not_gguf unless the file starts with GGUF's magic."""
    with open(path, "rb") as f:
        head = f.read(4)
    if head != GGUF_MAGIC:
        raise PullError(
            "not_gguf",
            f"The file {name} holds is not a GGUF model (it does not start with GGUF's signature); "
            "HomeAI runs GGUF files only.",
            status=422,
        )


def install(models_dir: Path, blob: Path, file_name: str, sidecar: dict) -> Path:
    """Put a verified blob in the folder as `file_name`, its sidecar first: the model appears
    (the library lists *.gguf) only when both are whole."""
    target = models_dir / Path(file_name).name
    write_sidecar(target, sidecar)
    os.replace(blob, target)
    return target


def write_sidecar(model_path: Path, sidecar: dict) -> None:
    side = sidecar_path(model_path)
    tmp = side.with_name(side.name + ".tmp")
    tmp.write_text(json.dumps(sidecar, indent=1))
    tmp.replace(side)


def held_digest(model_path: Path) -> str:
    """The model layer's digest a pulled file was verified against ("" if none or not whole)."""
    layers = read_sidecar(model_path).get("manifest", {}).get("layers") or []
    for layer in layers:
        if layer.get("mediaType") == "application/vnd.ollama.image.model":
            if model_path.is_file() and model_path.stat().st_size == layer.get("size"):
                return str(layer.get("digest", ""))
    return ""


def remove(model_path: Path) -> bool:
    """Delete a model and its sidecar; whether the model was there."""
    sidecar_path(model_path).unlink(missing_ok=True)
    try:
        model_path.unlink()
    except FileNotFoundError:
        return False
    return True
