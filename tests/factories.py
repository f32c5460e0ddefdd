"""Builders for the rows tests need: one place, so a new model field is added once."""

from __future__ import annotations

import time

from django.contrib.auth import get_user_model
from django.utils import timezone

from inference.models import Conversation, Generation, Message

BUNDLED_MODEL = "gemma-3-270m-q4_k_m.gguf"
PASSWORD = "correct horse battery"


def user(username: str = "alice", password: str = PASSWORD, **fields):
    return get_user_model().objects.create_user(username=username, password=password, **fields)


def generation_metrics(**fields) -> dict:
    """Metrics of a short finished answer, self-consistent: queue + load + prefill + first token
    + decode = end to end, 8 tokens 21.5 ms apart."""
    times = [412.25 + 21.5 * k for k in range(8)]
    metrics = {
        "status": Generation.Status.DONE,
        "model_name": BUNDLED_MODEL,
        "queue_ms": 3.125,
        "load_ms": 0.0,
        "prefill_ms": 404.0,
        "first_token_ms": 5.125,
        "decode_ms": times[-1] - times[0],
        "ttft_ms": times[0],
        "client_ttft_ms": 431.5,
        "e2e_ms": times[-1],
        "tpot_ms": (times[-1] - times[0]) / 7,
        "prompt_tokens": 120,
        "cached_tokens": 0,
        "output_tokens": 8,
        "prompt_tps": 120 / 0.404,
        "output_tps": 7 / ((times[-1] - times[0]) / 1000),
        "cold": False,
        "finish_reason": "length",
        "token_times_ms": times,
        "itl_ms": [b - a for a, b in zip(times, times[1:], strict=False)],
        "worker": "box:1",
    }
    metrics.update(fields)
    return metrics


def finished_generation(owner, *, prompt: str, answer: str, t_arrive: float | None = None, **fields) -> Generation:
    """A stored, finished answer in a conversation of its own (prompt, answer, metrics)."""
    conversation = Conversation.objects.create(user=owner, title=prompt[:40])
    question = Message.objects.create(conversation=conversation, role=Message.Role.USER, content=prompt)
    reply = Message.objects.create(
        conversation=conversation, parent=question, role=Message.Role.ASSISTANT, content=answer
    )
    Conversation.objects.filter(id=conversation.id).update(current_leaf=reply)
    words = answer.split(" ")
    metrics = generation_metrics(token_texts=words[:8] + [""] * max(0, 8 - len(words)), finished_at=timezone.now())
    metrics.update(fields)
    t_arrive = t_arrive if t_arrive is not None else time.time() - 5
    return Generation.objects.create(
        user=owner, conversation=conversation, message=reply, max_tokens=8, t_arrive_ns=int(t_arrive * 1e9), **metrics
    )


def finish(generation: Generation, answer: str = "An answer.") -> Generation:
    """A queued answer, written at once, as a worker would leave it (no worker involved)."""
    Message.objects.filter(id=generation.message_id).update(content=answer)
    Generation.objects.filter(id=generation.id).update(
        **generation_metrics(token_texts=[""] * 8, finished_at=timezone.now())
    )
    generation.refresh_from_db()
    return generation
