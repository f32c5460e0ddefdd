"""The chat pages: a conversation with its history, the list beside it, the JSON endpoints the
page calls (rename, delete, search, presets, share), export and import, and a shared chat's
read-only page."""

from __future__ import annotations

import json
from functools import wraps

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.http import content_disposition_header
from django.utils.translation import gettext
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from accounts.models import Account
from dashboard.offline.views import offline_page
from documents import selectors as documents
from inference import selectors
from inference.catalog import catalog
from inference.models import Conversation
from inference.services import chat_documents, conversations, presets, sharing, speech, transfer
from inference.services.validation import SYSTEM_PROMPT_CHARS, validate_limited_text
from infra.errors import ClientError

SEARCH_CHARS = 200


def home(request: HttpRequest) -> HttpResponse:
    return redirect("chat")


@login_required
@require_GET
@offline_page
def chat(request: HttpRequest, conversation_id: int | None = None) -> HttpResponse:
    conversation = None
    history: list[dict] = []
    if conversation_id is not None:
        conversation = selectors.conversation_for_user(user=request.user, conversation_id=conversation_id)
        if conversation is None:
            raise Http404("No such conversation.")
        history = selectors.conversation_history(conversation=conversation)
    known = catalog(redis_optional=True)
    chat_config = {
        "ws_path": "/ws/chat/",
        "conversation": conversation.id if conversation else None,
        "default_max_tokens": settings.HOMEAI_MAX_TOKENS,
        "max_tokens_limit": settings.HOMEAI_MAX_TOKENS_LIMIT,
        "max_chars": settings.HOMEAI_MAX_PROMPT_CHARS,
        # This conversation's settings (empty or null: the default below), for a new chat all empty.
        "settings": (conversation or Conversation()).settings(),
        "defaults": {**selectors.settings_defaults(), "model": known.default},
        # The models a chat can use: the default first; "held": a worker holds it now.
        "models": [{"name": n, "alias": known.alias(n), "held": known.held(n)} for n in known.chat_names],
        "system_prompt_chars": SYSTEM_PROMPT_CHARS,
        "presets": selectors.preset_list(user=request.user),
        "import_max_bytes": settings.HOMEAI_MAX_IMPORT_BYTES,
        # Documents: the collections the person reads ("#" in the composer), the chat's choice,
        # and the size limit of an attached file.
        "collections": [
            {"id": c["id"], "name": c["name"], "owner": c["owner"]} for c in documents.collections_listing(request.user)
        ],
        "chosen_collections": list(conversation.collections.values_list("id", flat=True)) if conversation else [],
        "files_collection": conversation.files_collection_id if conversation else None,
        "document_max_mb": settings.HOMEAI_DOCUMENT_MAX_MB,
        "attach_url": reverse("chat_attach"),
        # Reading aloud (docs/speech.md): the speaker buttons, and whether answers start reading.
        "speech": settings.HOMEAI_SPEECH,
        "auto_read": settings.HOMEAI_SPEECH and Account.of(request.user).auto_read,
    }
    context = {
        "conversations": selectors.conversation_list(user=request.user)[:200],
        "conversation": conversation,
        "history": history,
        "chat_config": chat_config,
    }
    return render(request, "chat/chat.html", context)


@login_required
@require_GET
def speech_audio(request: HttpRequest, generation_id: int, index: int) -> HttpResponse:
    """One sentence of the person's own answer read aloud (a WAV a worker made; docs/speech.md)."""
    audio = speech.speech_audio(user=request.user, generation_id=generation_id, index=index)
    if audio is None:
        raise Http404("No such audio.")
    response = HttpResponse(audio, content_type="audio/wav")
    response["Cache-Control"] = "private, no-store"
    return response


@login_required
@require_POST
def conversation_delete(request: HttpRequest, conversation_id: int) -> HttpResponse:
    conversation = selectors.conversation_for_user(user=request.user, conversation_id=conversation_id)
    if conversation is None:
        raise Http404("No such conversation.")
    conversation.delete()
    return redirect("chat")


def json_endpoint(view):
    """A JSON view: a ClientError becomes {code, message, field} with 404 (not_found) or 400."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args, **kwargs) -> JsonResponse:
        try:
            return view(request, *args, **kwargs)
        except ClientError as exc:
            body = {"code": exc.code, "message": exc.message, "field": exc.field}
            return JsonResponse(body, status=404 if exc.code == "not_found" else 400)

    return wrapper


def request_data(request: HttpRequest) -> dict:
    """A POST's fields: a JSON object body, or form fields."""
    if request.content_type != "application/json":
        return request.POST.dict()
    try:
        data = json.loads(request.body or b"{}")
    except ValueError:
        raise ClientError("bad_json", "The request body is not valid JSON.") from None
    if not isinstance(data, dict):
        raise ClientError("bad_request", "Send a JSON object.")
    return data


@login_required
@require_POST
@json_endpoint
def conversation_rename(request: HttpRequest, conversation_id: int) -> JsonResponse:
    conversation = conversations.conversation_rename(
        user=request.user, conversation_id=conversation_id, title=request_data(request).get("title")
    )
    return JsonResponse({"id": conversation.id, "title": conversation.title})


@login_required
@require_GET
@json_endpoint
def conversation_search(request: HttpRequest) -> JsonResponse:
    query = validate_limited_text(
        request.GET.get("q", ""), field="q", what=gettext("The search"), limit=SEARCH_CHARS, required=False
    )
    return JsonResponse({"query": query, "results": selectors.conversation_search(user=request.user, query=query)})


@login_required
@require_http_methods(["GET", "POST"])
@json_endpoint
def preset_index(request: HttpRequest) -> JsonResponse:
    if request.method == "POST":
        data = request_data(request)
        preset = presets.preset_create(user=request.user, name=data.get("name"), settings=data.get("settings"))
        return JsonResponse({"preset": selectors.preset_entry(preset)}, status=201)
    return JsonResponse({"presets": selectors.preset_list(user=request.user)})


@login_required
@require_POST
@json_endpoint
def preset_delete(request: HttpRequest, preset_id: int) -> JsonResponse:
    presets.preset_delete(user=request.user, preset_id=preset_id)
    return JsonResponse({"deleted": preset_id})


# --- chats that travel: export, import, share ---------------------------------------------------

EXPORT_FORMATS = {"json": "application/json", "md": "text/markdown; charset=utf-8"}


@login_required
@require_GET
def conversation_export(request: HttpRequest, conversation_id: int | None = None) -> HttpResponse:
    """A download: one of the person's chats (or all, without an id) as JSON or Markdown (?format=md)."""
    kind = request.GET.get("format", "json")
    if kind not in EXPORT_FORMATS:
        raise Http404("No such export format.")
    try:
        if kind == "md":
            body = transfer.chats_markdown(user=request.user, conversation_id=conversation_id)
        else:
            document = transfer.chats_export(user=request.user, conversation_id=conversation_id)
            body = json.dumps(document, ensure_ascii=False, indent=1)
    except ClientError:
        raise Http404("No such conversation.") from None
    stem = f"homeai-chat-{conversation_id}" if conversation_id else f"homeai-chats-{timezone.localdate():%Y-%m-%d}"
    response = HttpResponse(body, content_type=EXPORT_FORMATS[kind])
    response["Content-Disposition"] = content_disposition_header(True, f"{stem}.{kind}")
    return response


@login_required
@require_POST
@json_endpoint
def conversation_import(request: HttpRequest) -> JsonResponse:
    """An export file (multipart field "file"): its chats become the person's own."""
    upload = request.FILES.get("file")
    if upload is None:
        raise ClientError("bad_request", gettext("Choose a file to import."), field="file")
    transfer.check_size(upload.size)
    imported = transfer.chats_import(user=request.user, data=upload.read(settings.HOMEAI_MAX_IMPORT_BYTES + 1))
    return JsonResponse({"imported": [{"id": c.id, "title": c.title} for c in imported]}, status=201)


@login_required
@require_POST
@json_endpoint
def chat_attach(request: HttpRequest) -> JsonResponse:
    """A file attached to a chat (multipart field "file"; "conversation": its id, none for a new
    chat): kept in the chat's own collection and indexed (chat_documents.chat_file_attach)."""
    upload = request.FILES.get("file")
    if upload is None:
        raise ClientError("bad_request", gettext("Choose a file to attach."), field="file")
    raw = request.POST.get("conversation") or ""
    if raw and not raw.isdigit():
        raise ClientError("bad_request", gettext("That conversation does not exist."), field="conversation")
    attached = chat_documents.chat_file_attach(
        user=request.user, conversation_id=int(raw) if raw else None, name=upload.name, chunks=upload.chunks()
    )
    return JsonResponse(attached, status=201)


def share_payload(request: HttpRequest, conversation: Conversation) -> dict:
    state = selectors.share_state(conversation=conversation)
    token = state.pop("token")
    url = request.build_absolute_uri(reverse("chat_shared", args=[token])) if token else None
    return {"url": url, **state, "housemates": selectors.housemates(user=request.user)}


@login_required
@require_http_methods(["GET", "POST"])
@json_endpoint
def conversation_share(request: HttpRequest, conversation_id: int) -> JsonResponse:
    """Who the chat is shared with (GET), or share it with {everyone, people: [ids]} (POST)."""
    if request.method == "POST":
        data = request_data(request)
        sharing.conversation_share(
            user=request.user,
            conversation_id=conversation_id,
            everyone=data.get("everyone", False),
            people=data.get("people"),
        )
    conversation = conversations.own_conversation(user=request.user, conversation_id=conversation_id)
    return JsonResponse(share_payload(request, conversation))


@login_required
@require_POST
@json_endpoint
def conversation_unshare(request: HttpRequest, conversation_id: int) -> JsonResponse:
    sharing.conversation_unshare(user=request.user, conversation_id=conversation_id)
    conversation = conversations.own_conversation(user=request.user, conversation_id=conversation_id)
    return JsonResponse(share_payload(request, conversation))


@login_required
@require_GET
def shared_chat(request: HttpRequest, token: str) -> HttpResponse:
    """A chat shared with this person, read-only: the branch its owner shows (404 for anyone else)."""
    conversation = selectors.shared_conversation(user=request.user, token=token)
    if conversation is None:
        raise Http404("No such shared chat.")
    owner = conversation.user
    account = getattr(owner, "account", None)
    context = {
        "conversation": conversation,
        "history": selectors.conversation_history(conversation=conversation),
        "owner_name": (account and account.display_name) or owner.username,
        "is_owner": owner.id == request.user.id,
    }
    return render(request, "chat/shared.html", context)
