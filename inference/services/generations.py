"""Writes for one answer: create it (from the chat or an API request), send it, cancel it."""

from __future__ import annotations

import time

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from inference import broadcast, events, redis_client, selectors
from inference.errors import ClientError
from inference.metrics import record_generation
from inference.models import Conversation, Generation, Message
from inference.services.validation import validate_max_tokens, validate_sampling, validate_text, validate_ttft_ms
from inference.worker import registry

TITLE_CHARS = 60


def generation_create(
    *, user, conversation_id, text, max_tokens=None, options=None, client: str = "chat"
) -> Generation:
    """Store the user's message and a queued answer (committed; generation_enqueue sends it)."""
    text = validate_text(text)
    max_tokens = validate_max_tokens(max_tokens)
    sampling = validate_sampling(options)
    _check_waiting_limit()
    t_arrive_ns = time.time_ns()
    with transaction.atomic():
        if conversation_id is None:
            title = " ".join(text.split())[:TITLE_CHARS]
            conversation = Conversation.objects.create(user=user, title=title)
        else:
            conversation = selectors.conversation_for_user(user=user, conversation_id=conversation_id)
            if conversation is None:
                raise ClientError("not_found", "That conversation does not exist.", field="conversation")
            if conversation.generations.filter(status__in=Generation.ACTIVE).exists():
                raise ClientError(
                    "busy", "An answer is still being written in this conversation: wait for it or press Stop."
                )
            conversation.save(update_fields=["updated_at"])
        Message.objects.create(conversation=conversation, role=Message.Role.USER, content=text)
        reply = Message.objects.create(conversation=conversation, role=Message.Role.ASSISTANT, content="")
        generation = Generation.objects.create(
            user=user,
            conversation=conversation,
            message=reply,
            client=client,
            model_name=settings.HOMEAI_MODEL_PATH.name,
            max_tokens=max_tokens,
            sampling=sampling,
            t_arrive_ns=t_arrive_ns,
        )
    return generation


def generation_create_api(
    *, user, client: str, messages: list[dict] | None = None, prompt: str | None = None, max_tokens=None, options=None
) -> Generation:
    """An OpenAI-style request: its messages (or raw prompt) become an API conversation."""
    if (messages is None) == (prompt is None):
        raise ClientError("bad_request", "Give either messages or a prompt.", field="messages")
    if prompt is not None:
        turns = [{"role": "user", "content": validate_text(prompt)}]
    else:
        if not isinstance(messages, list) or not messages:
            raise ClientError("bad_request", "messages must be a non-empty list.", field="messages")
        turns = []
        for m in messages:
            role = m.get("role") if isinstance(m, dict) else None
            if role not in Message.Role.values:
                raise ClientError(
                    "bad_request", "Each message needs a role of system, user or assistant.", field="messages"
                )
            turns.append({"role": role, "content": validate_text(m.get("content"))})
        if turns[-1]["role"] == "assistant":
            raise ClientError("bad_request", "The last message must come from the user (or system).", field="messages")
    max_tokens = validate_max_tokens(max_tokens)
    sampling = validate_sampling(options)
    _check_waiting_limit()
    t_arrive_ns = time.time_ns()
    title = f"API · {client}: " + " ".join(turns[-1]["content"].split())[:TITLE_CHARS]
    with transaction.atomic():
        conversation = Conversation.objects.create(user=user, title=title[:120], source=Conversation.Source.API)
        Message.objects.bulk_create(Message(conversation=conversation, **t) for t in turns)
        reply = Message.objects.create(conversation=conversation, role=Message.Role.ASSISTANT, content="")
        return Generation.objects.create(
            user=user,
            conversation=conversation,
            message=reply,
            client=client[:32] or "api",
            raw_prompt=prompt is not None,
            model_name=settings.HOMEAI_MODEL_PATH.name,
            max_tokens=max_tokens,
            sampling=sampling,
            t_arrive_ns=t_arrive_ns,
        )


def _check_waiting_limit() -> None:
    waiting = Generation.objects.filter(status=Generation.Status.QUEUED).count()
    if waiting >= settings.HOMEAI_MAX_WAITING:
        raise ClientError(
            "busy", f"The server is busy: {waiting} answers are already waiting. Please try again in a minute."
        )


def generation_enqueue(*, generation: Generation) -> None:
    """Send the answer to a worker (after the client was told it is queued, so no event beats that)."""
    broadcast.publish_dashboard([events.request_update(generation, phase="queued", status="queued")])
    registry.send_generation(generation.id)


def generation_cancel(*, user, generation_id) -> None:
    """Stop an answer: a queued one never starts, a running one stops within one engine step."""
    generation = selectors.generation_for_user(user=user, generation_id=generation_id)
    if generation is None:
        raise ClientError("not_found", "That answer does not exist.")
    stopped = Generation.objects.filter(id=generation.id, status=Generation.Status.QUEUED).update(
        status=Generation.Status.CANCELLED, finish_reason="cancelled", finished_at=timezone.now()
    )
    if stopped:
        generation.refresh_from_db()
        broadcast.publish_for(generation, [events.done(generation, text="")])
        broadcast.publish_dashboard([events.request_done(generation)])
        record_generation(generation)
    elif generation.status == Generation.Status.RUNNING:
        redis_client.client().set(redis_client.cancel_key(generation.id), 1, ex=3600)


def generation_set_client_ttft(*, user, generation_id, ttft_ms) -> None:
    """Store the time to first token the browser measured (the dashboard shows both clocks)."""
    generation = selectors.generation_for_user(user=user, generation_id=generation_id)
    if generation is None:
        raise ClientError("not_found", "That answer does not exist.")
    try:
        ttft_ms = validate_ttft_ms(ttft_ms)
    except ClientError as exc:
        exc.generation = generation.id
        raise
    Generation.objects.filter(id=generation.id).update(client_ttft_ms=ttft_ms)
