"""Before a pull: what the model will cost here, from the registry's size and the start of its
GGUF (infra/pull/peek.py), so staff see whether it fits before downloading gigabytes."""

from __future__ import annotations

import tempfile
from dataclasses import asdict, dataclass

from django.conf import settings

from inference import model_library, probe, selectors
from inference.gguf_header import GGUFError, read_header
from inference.models import EngineConfig
from inference.speed import DecodeSpeed, Shape, speed_of
from infra.pull.errors import PullError
from infra.pull.peek import head


def shapes() -> dict[str, Shape]:
    """Every chat model in the models folder, by file name."""
    return {m.name: Shape(m.size_bytes, m.n_layers) for m in model_library.scan() if m.kind == model_library.CHAT}


def decode_speeds(models: list[model_library.ModelFile]) -> dict[str, DecodeSpeed]:
    """Each model's decode forecast here, by file name (inference/speed.py)."""
    known = shapes()
    known.update({m.name: Shape(m.size_bytes, m.n_layers) for m in models if m.kind == model_library.CHAT})
    measured = selectors.decode_rates()
    box = probe.box()
    return {m.name: speed_of(m.name, Shape(m.size_bytes, m.n_layers), known, measured, box) for m in models}


@dataclass(frozen=True)
class Forecast:
    name: str
    size_bytes: int  # the weights: the file's size
    n_params: int
    architecture: str
    kv_bytes_per_token: int
    context: int  # tokens of KV cache one slot holds (the engine's setting)
    memory_bytes: int  # weights and one slot's KV cache
    share_bytes: int  # what one loaded model may take of a worker's memory budget
    fits: bool
    bandwidth_gbs: float | None  # the box's measured figures (probe.py), when a worker has measured
    gflops: float | None
    decode_tps: float | None  # the decode forecast (DecodeSpeed)
    decode_basis: str

    def as_dict(self) -> dict:
        return asdict(self)


def share_bytes() -> int:
    """What one loaded model may take of a worker's memory budget."""
    return settings.HOMEAI_MODELS_MEMORY_MB * 2**20 // settings.HOMEAI_MAX_LOADED_MODELS


def forecast(name: str) -> Forecast:
    """The forecast for a model name; PullError (a code and a sentence) when it cannot be read."""
    size, start = head(name, registry=settings.HOMEAI_PULL_REGISTRY)
    with tempfile.NamedTemporaryFile(suffix=".gguf") as f:
        f.write(start)
        f.flush()
        try:
            header = read_header(f.name)
        except GGUFError as exc:
            raise PullError("not_gguf", f"{name} is not a GGUF model: {exc}", status=422) from None
    meta = header.metadata
    arch = str(meta.get("general.architecture") or "")
    kv = model_library.kv_bytes_per_token(meta, arch)
    context = EngineConfig.current().context or settings.HOMEAI_CONTEXT
    memory = size + kv * context
    share = share_bytes()
    measured = probe.box()
    layers = meta.get(f"{arch}.block_count")
    shape = Shape(size, layers if isinstance(layers, int) else 0)
    speed = speed_of(name, shape, shapes(), selectors.decode_rates(), measured)
    return Forecast(
        name=name,
        size_bytes=size,
        n_params=sum(t.n_elements for t in header.tensors),
        architecture=arch,
        kv_bytes_per_token=kv,
        context=context,
        memory_bytes=memory,
        share_bytes=share,
        fits=memory <= share,
        bandwidth_gbs=measured.get("bandwidth_gbs"),
        gflops=measured.get("gflops"),
        decode_tps=speed.tps,
        decode_basis=speed.basis,
    )
