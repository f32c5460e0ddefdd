"""Reads: ownership-checked lookups and the history a prompt is built from."""

from __future__ import annotations

from inference.models import Conversation, Generation, Message


def conversation_for_user(*, user, conversation_id) -> Conversation | None:
    if not isinstance(conversation_id, int) or isinstance(conversation_id, bool):
        return None
    return Conversation.objects.filter(id=conversation_id, user=user).first()


def generation_for_user(*, user, generation_id) -> Generation | None:
    if not isinstance(generation_id, int) or isinstance(generation_id, bool):
        return None
    return Generation.objects.filter(id=generation_id, user=user).first()


def conversation_list(*, user):
    return Conversation.objects.filter(user=user, source=Conversation.Source.CHAT).order_by("-updated_at")


def prompt_messages(*, generation: Generation) -> list[dict]:
    """The conversation up to this answer, as chat messages (empty answers left out)."""
    rows = Message.objects.filter(conversation_id=generation.conversation_id, id__lt=generation.message_id)
    return [{"role": m.role, "content": m.content} for m in rows.order_by("id") if m.content.strip()]


def queue_position(*, generation: Generation) -> int:
    """How many answers are ahead of this one (0: it is next or running)."""
    return Generation.objects.filter(status__in=Generation.ACTIVE, id__lt=generation.id).count()


def generation_summary(generation: Generation | None) -> dict | None:
    if generation is None:
        return None
    finished = not generation.is_active
    return {
        "id": generation.id,
        "status": generation.status,
        "metrics": generation.metrics() if finished else None,
        "notice": generation.notice,
        "error": generation.error_message,
    }


def conversation_history(*, conversation: Conversation) -> list[dict]:
    """Turns for the chat page, each answer with its state and metrics."""
    messages = conversation.messages.select_related("generation").order_by("id")
    history = []
    for m in messages:
        generation = getattr(m, "generation", None) if m.role == Message.Role.ASSISTANT else None
        history.append({"role": m.role, "text": m.content, "generation": generation_summary(generation)})
    return history
