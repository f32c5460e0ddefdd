"""Staff's controls over the workers: which model they run with what settings, and the
scheduling policy. Both are written where workers look on every heartbeat (Redis, and the
EngineConfig row), so a change reaches every worker within a second or two."""

from __future__ import annotations

from inference import model_library, redis_client
from inference.engine.policies import POLICIES
from inference.models import EngineConfig
from infra.errors import ClientError


def engine_config_set(*, model_name: str, context: int | None, threads: int | None, gpu_layers: int | None):
    """Choose the workers' model and settings (model library); they switch within a heartbeat."""
    model = model_library.find(model_name)
    if model is None:
        raise ClientError(
            "not_found", f"There is no model file named {model_name!r} in the models folder.", field="model"
        )
    if not model.usable:
        raise ClientError("model_unusable", f"{model.name} cannot be used: {model.problem}", field="model")
    if model.kind == model_library.EMBEDDING:
        raise ClientError(
            "embedding_model", f"{model.name} is an embedding model: it cannot write the chats' answers.", field="model"
        )
    if context is not None and model.context_length and context > model.context_length:
        raise ClientError(
            "bad_request",
            f"{model.name} was trained for {model.context_length:,} tokens of context; {context:,} is more.",
            field="context",
        )
    config = EngineConfig.current()
    config.model_name = model.name
    config.context, config.threads, config.gpu_layers = context, threads, gpu_layers
    config.save()
    redis_client.client().set(redis_client.ENGINE_CONFIG_KEY, config.version)
    return config


def engine_policy_set(*, policy: str) -> None:
    """Switch every worker's scheduling policy (they pick it up within a heartbeat)."""
    if policy not in POLICIES:
        raise ClientError(
            "bad_request", f"Unknown policy {policy!r}; choose one of {', '.join(POLICIES)}.", field="policy"
        )
    redis_client.client().set(redis_client.POLICY_KEY, policy)
