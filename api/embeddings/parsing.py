"""Embedding requests in: /v1/embeddings (OpenAI's), /api/embed and the older /api/embeddings
(Ollama's) bodies checked into an EmbeddingRequest. Pure functions (no database, no I/O).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings

from api.errors import bad_request
from api.ollama.parsing import parse_keep_alive

ENCODINGS = ("float", "base64")


@dataclass(frozen=True)
class EmbeddingRequest:
    model: str | None  # as the client spelled it; None: the default embedding model
    texts: list[str]
    truncate: bool = True  # an input past the model's context is cut to it (else refused)
    base64: bool = False  # OpenAI's encoding_format "base64": little-endian float32, base64
    dimensions: int | None = None
    keep_alive_s: float | None = None


def _model(data: dict) -> str | None:
    model = data.get("model")
    if model is None or model == "":
        return None
    if not isinstance(model, str):
        raise bad_request("model must be a string: the name of an embedding model.", "model", "invalid_type")
    return model


def _texts(value, field: str) -> list[str]:
    """A string or a list of strings, each non-empty, within the request's bounds."""
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        raise bad_request(f"{field} must be a string or a list of strings.", field, "invalid_type")
    if not value:
        raise bad_request(f"{field} is empty: send at least one text to embed.", field, "empty_input")
    if all(isinstance(item, int) and not isinstance(item, bool) for item in value) or all(
        isinstance(item, list) for item in value
    ):
        raise bad_request(
            f"{field} holds token ids; this server embeds text only: send the text itself.", field, "invalid_type"
        )
    limit = settings.HOMEAI_EMBED_MAX_INPUTS
    if len(value) > limit:
        raise bad_request(
            f"{field} has {len(value):,} texts; one request may embed at most {limit:,}. Send them in several.",
            field,
            "too_many_inputs",
        )
    for index, item in enumerate(value):
        if not isinstance(item, str):
            raise bad_request(f"{field}[{index}] must be a string.", field, "invalid_type")
        if not item.strip():
            raise bad_request(f"{field}[{index}] is empty: every text must have some content.", field, "empty_input")
    chars = sum(map(len, value))
    if chars > settings.HOMEAI_EMBED_MAX_CHARS:
        raise bad_request(
            f"{field} holds {chars:,} characters; one request may hold at most "
            f"{settings.HOMEAI_EMBED_MAX_CHARS:,}. Send the texts in several requests.",
            field,
            "input_too_large",
        )
    return value


def _dimensions(data: dict) -> int | None:
    value = data.get("dimensions")
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise bad_request("dimensions must be a positive whole number.", "dimensions", "invalid_type")
    return value


def check_dimensions(req: EmbeddingRequest, model_name: str, width: int) -> None:
    """A model's vectors have its width: asking for another is refused (vectors cut short
    would not be what the model was trained to compare)."""
    if req.dimensions is not None and width and req.dimensions != width:
        raise bad_request(
            f"{model_name} gives vectors of {width} dimensions; dimensions may only be {width}.",
            "dimensions",
            "invalid_value",
        )


def parse_openai(data: dict) -> EmbeddingRequest:
    """Check a /v1/embeddings body (`user` is accepted and ignored, as a tag of the caller's)."""
    if "input" not in data:
        raise bad_request("input is required: a string or a list of strings to embed.", "input", "missing_input")
    encoding = data.get("encoding_format") or "float"
    if encoding not in ENCODINGS:
        raise bad_request('encoding_format must be "float" or "base64".', "encoding_format")
    return EmbeddingRequest(
        model=_model(data),
        texts=_texts(data["input"], "input"),
        base64=encoding == "base64",
        dimensions=_dimensions(data),
    )


def _truncate(data: dict) -> bool:
    value = data.get("truncate", True)
    if not isinstance(value, bool):
        raise bad_request("truncate must be true or false.", "truncate", "invalid_type")
    return value


def _options(data: dict) -> None:
    """Ollama's options set up the runner (num_ctx, num_thread...): this server's settings decide
    those, so they are accepted and ignored, as for chat; they must still be an object."""
    if data.get("options") is not None and not isinstance(data["options"], dict):
        raise bad_request("options must be an object.", "options", "invalid_type")


def parse_ollama_embed(data: dict) -> EmbeddingRequest:
    """Check an /api/embed body."""
    if "input" not in data:
        raise bad_request("input is required: a string or a list of strings to embed.", "input", "missing_input")
    _options(data)
    return EmbeddingRequest(
        model=_model(data),
        texts=_texts(data["input"], "input"),
        truncate=_truncate(data),
        dimensions=_dimensions(data),
        keep_alive_s=parse_keep_alive(data),
    )


def parse_ollama_embeddings(data: dict) -> EmbeddingRequest:
    """Check an /api/embeddings body (Ollama's first embeddings endpoint: one prompt)."""
    prompt = data.get("prompt")
    if not isinstance(prompt, str):
        raise bad_request("prompt must be a string: the text to embed.", "prompt", "invalid_type")
    _options(data)
    return EmbeddingRequest(model=_model(data), texts=_texts(prompt, "prompt"), keep_alive_s=parse_keep_alive(data))
