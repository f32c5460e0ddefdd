"""Before a pull: what the model will cost here, from the registry's size and the start of its
GGUF (infra/pull/peek.py), so staff see whether it fits before downloading gigabytes."""

from __future__ import annotations

import tempfile
from dataclasses import asdict, dataclass

from django.conf import settings

from inference import model_library, probe, selectors
from inference.gguf_header import GGUFError, read_header
from inference.models import EngineConfig
from infra.pull.errors import PullError
from infra.pull.peek import head


@dataclass(frozen=True)
class DecodeSpeed:
    """A model's decode forecast on this box: `answers` when other models' measured answers
    say what bandwidth llama.cpp reaches here (tok/s x file size, their median), else
    `roofline`, the probe's raw read bandwidth: a ceiling, about twice the truth on small
    models (dequantising and the output layer cost time no memory benchmark counts)."""

    tps: float | None
    basis: str  # "answers" or "roofline" ("" when there is no figure)
    bandwidth_gbs: float | None


def decode_bandwidth(sizes: dict[str, int], measured: dict[str, float], *, exclude: str = "") -> float | None:
    """GB/s llama.cpp's decode reads weights at on this box, from the measured tok/s of the
    models other than `exclude` (a model's own answers never forecast it): median of tok/s x size."""
    rates = sorted(measured[n] * sizes[n] / 1e9 for n in measured if n != exclude and sizes.get(n))
    return rates[len(rates) // 2] if rates else None


def decode_speeds(models: list[model_library.ModelFile]) -> dict[str, DecodeSpeed]:
    """Each chat model's decode forecast here, by file name (see DecodeSpeed)."""
    sizes = {m.name: m.size_bytes for m in model_library.scan() if m.kind == model_library.CHAT}
    sizes.update({m.name: m.size_bytes for m in models if m.kind == model_library.CHAT})
    measured = selectors.decode_rates()
    raw = probe.box().get("bandwidth_gbs")
    return {m.name: speed_of(m.name, m.size_bytes, sizes, measured, raw) for m in models}


def speed_of(
    name: str, size: int, sizes: dict[str, int], measured: dict[str, float], raw_gbs: float | None
) -> DecodeSpeed:
    if not size:
        return DecodeSpeed(None, "", None)
    if gbs := decode_bandwidth(sizes, measured, exclude=name):
        return DecodeSpeed(gbs * 1e9 / size, "answers", gbs)
    if raw_gbs:
        return DecodeSpeed(raw_gbs * 1e9 / size, "roofline", raw_gbs)
    return DecodeSpeed(None, "", None)


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
    sizes = {m.name: m.size_bytes for m in model_library.scan() if m.kind == model_library.CHAT}
    speed = speed_of(name, size, sizes, selectors.decode_rates(), measured.get("bandwidth_gbs"))
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
