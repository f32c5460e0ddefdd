"""The chat pages: a conversation with its history, the list beside it, and deleting one."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from inference import selectors


def home(request: HttpRequest) -> HttpResponse:
    return redirect("chat")


@login_required
@require_GET
def chat(request: HttpRequest, conversation_id: int | None = None) -> HttpResponse:
    conversation = None
    history: list[dict] = []
    if conversation_id is not None:
        conversation = selectors.conversation_for_user(user=request.user, conversation_id=conversation_id)
        if conversation is None:
            raise Http404("No such conversation.")
        history = selectors.conversation_history(conversation=conversation)
    chat_config = {
        "ws_path": "/ws/chat/",
        "conversation": conversation.id if conversation else None,
        "default_max_tokens": settings.HOMEAI_MAX_TOKENS,
        "max_tokens_limit": settings.HOMEAI_MAX_TOKENS_LIMIT,
        "max_chars": settings.HOMEAI_MAX_PROMPT_CHARS,
    }
    context = {
        "conversations": selectors.conversation_list(user=request.user)[:200],
        "conversation": conversation,
        "history": history,
        "chat_config": chat_config,
    }
    return render(request, "chat/chat.html", context)


@login_required
@require_POST
def conversation_delete(request: HttpRequest, conversation_id: int) -> HttpResponse:
    conversation = selectors.conversation_for_user(user=request.user, conversation_id=conversation_id)
    if conversation is None:
        raise Http404("No such conversation.")
    conversation.delete()
    return redirect("chat")
