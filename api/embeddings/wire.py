"""Embeddings out: OpenAI's and Ollama's response bodies for a batch's vectors. Pure functions."""

from __future__ import annotations

import base64

import numpy as np

from api.embeddings.parsing import EmbeddingRequest


def floats(vector_b64: str) -> list[float]:
    """A worker's vector (little-endian float32, base64) as JSON numbers."""
    return np.frombuffer(base64.b64decode(vector_b64), dtype="<f4").tolist()


def openai_body(req: EmbeddingRequest, model: str, vectors: list[str], prompt_tokens: int) -> dict:
    return {
        "object": "list",
        "data": [
            {"object": "embedding", "index": i, "embedding": v if req.base64 else floats(v)}
            for i, v in enumerate(vectors)
        ],
        "model": model,
        "usage": {"prompt_tokens": prompt_tokens, "total_tokens": prompt_tokens},
    }


def ollama_embed_body(model: str, vectors: list[str], prompt_tokens: int, *, total_ms: float, load_ms: float) -> dict:
    return {
        "model": model,
        "embeddings": [floats(v) for v in vectors],
        "total_duration": round(total_ms * 1_000_000),
        "load_duration": round(load_ms * 1_000_000),
        "prompt_eval_count": prompt_tokens,
    }
