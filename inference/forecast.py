"""Before a pull: what the model will cost here, from the registry's size and the start of its
GGUF (infra/pull/peek.py), so staff see whether it fits before downloading gigabytes."""

from __future__ import annotations

import tempfile
from dataclasses import asdict, dataclass

from django.conf import settings

from inference import model_library, probe
from inference.gguf_header import GGUFError, read_header
from inference.models import EngineConfig
from infra.pull.errors import PullError
from infra.pull.peek import head


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

    def as_dict(self) -> dict:
        return asdict(self)


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
    share = settings.HOMEAI_MODELS_MEMORY_MB * 2**20 // settings.HOMEAI_MAX_LOADED_MODELS
    measured = probe.box()
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
    )
