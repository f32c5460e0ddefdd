"""Writes for one answer: create it (from the chat, as a regenerated answer, after an edit, or from an
API request), send it, cancel it."""

from __future__ import annotations

import logging
import time

import redis
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Count, Q
from django.utils import formats, timezone
from django.utils.translation import gettext, gettext_lazy, ngettext

from accounts.models import Account
from inference import broadcast, events, redis_client, selectors
from inference.catalog import model_for_answer
from inference.dispatch import registry
from inference.metrics import record_generation
from inference.models import ChatSettings, Conversation, Generation, Message
from inference.services import chat_documents
from inference.services.conversations import conversation_idle, own_message, settings_changes
from inference.services.validation import validate_max_tokens, validate_sampling, validate_text, validate_ttft_ms
from inference.tools import catalog as tool_catalog
from infra.errors import ClientError

TITLE_CHARS = 60
MAX_ATTACHMENTS = 100  # file chips on one message
log = logging.getLogger(__name__)


def generation_create(
    *,
    user,
    conversation_id,
    text,
    max_tokens=None,
    options=None,
    client: str = "chat",
    settings=None,
    preset=None,
    collections=None,
    attachments=None,
    tool_choice=None,
) -> Generation:
    """Store the user's message and a queued answer (committed; generation_enqueue sends it).

    The message continues the branch on show. settings / preset change the conversation's
    settings first (a new conversation starts with them, else with the person's default
    preset); max_tokens and options are this
    answer's own, over the conversation's settings. collections (ids, each one the person reads)
    become the chat's choice of document collections; attachments names the files attached to
    the chat with this message (its chips). A chat answer is offered the chat's tools
    (tool_choice: "auto", the default; "none"; "required"; or a tool's name, which it must call)."""
    text = validate_text(text)
    chosen = None if collections is None else chat_documents.readable_choice(user, collections)
    files = _attachment_names(attachments)
    if conversation_id is None and settings is None and preset is None:
        preset = selectors.default_preset(user=user)  # a new chat starts with the person's default preset
    changes = settings_changes(user=user, settings=settings, preset=preset)
    max_tokens, sampling = _answer_options(max_tokens, options)
    t_arrive_ns = time.time_ns()
    with transaction.atomic():
        _check_room(user)
        if conversation_id is None:
            title = " ".join(text.split())[:TITLE_CHARS]
            conversation = Conversation.objects.create(user=user, title=title, **changes)
        else:
            conversation = conversation_idle(user=user, conversation_id=conversation_id)
            for name, value in changes.items():
                setattr(conversation, name, value)
        if chosen is not None:
            conversation.collections.set(chosen)
        parent_id = conversation.current_leaf_id or conversation.messages.values_list("id", flat=True).last()
        prompt = Message.objects.create(
            conversation=conversation, parent_id=parent_id, role=Message.Role.USER, content=text, attachments=files
        )
        output = _chat_output(user, conversation, tool_choice) if client == "chat" else None
        return _answer(
            user,
            conversation,
            prompt,
            max_tokens=max_tokens,
            sampling=sampling,
            t_arrive_ns=t_arrive_ns,
            client=client,
            output=output,
        )


def generation_regenerate(*, user, message_id, max_tokens=None, options=None) -> Generation:
    """A new answer to the same message, beside the earlier ones (which stay, switchable).

    message_id: an answer, or the user's message it answers."""
    message = own_message(user=user, message_id=message_id)
    prompt = message.parent if message.role == Message.Role.ASSISTANT else message
    if prompt is None or message.role == Message.Role.SYSTEM:
        raise ClientError(
            "bad_request", gettext("Pick an answer, or the message it answers, to regenerate."), field="message"
        )
    max_tokens, sampling = _answer_options(max_tokens, options)
    t_arrive_ns = time.time_ns()
    with transaction.atomic():
        _check_room(user)
        conversation = conversation_idle(user=user, conversation_id=message.conversation_id)
        output = _chat_output(user, conversation, None)
        return _answer(
            user, conversation, prompt, max_tokens=max_tokens, sampling=sampling, t_arrive_ns=t_arrive_ns, output=output
        )


def generation_edit(*, user, message_id, text, max_tokens=None, options=None) -> Generation:
    """An edited copy of one of the user's messages, with a new answer: a new branch beside the
    original, which stays (switchable)."""
    message = own_message(user=user, message_id=message_id)
    if message.role != Message.Role.USER:
        raise ClientError("bad_request", gettext("Only your own messages can be edited."), field="message")
    text = validate_text(text)
    max_tokens, sampling = _answer_options(max_tokens, options)
    t_arrive_ns = time.time_ns()
    with transaction.atomic():
        _check_room(user)
        conversation = conversation_idle(user=user, conversation_id=message.conversation_id)
        prompt = Message.objects.create(
            conversation=conversation, parent_id=message.parent_id, role=Message.Role.USER, content=text
        )
        output = _chat_output(user, conversation, None)
        return _answer(
            user, conversation, prompt, max_tokens=max_tokens, sampling=sampling, t_arrive_ns=t_arrive_ns, output=output
        )


def _chat_output(user, conversation: Conversation, tool_choice) -> dict:
    """The tools a chat answer is offered (inference/tools/catalog.py), tool_choice checked."""
    choice = "auto" if tool_choice is None else tool_choice
    if not isinstance(choice, str):
        raise ClientError("bad_request", gettext("tool_choice must be text."), field="tool_choice")
    output = tool_catalog.chat_output(user, conversation, choice)
    names = [tool["name"] for tool in output.get("chat_tools", ())]
    if choice not in ("auto", "none", "required") and choice not in names:
        message = gettext("There is no tool %(name)s on in this chat.") % {"name": choice[:60]}
        raise ClientError("bad_request", message, field="tool_choice")
    return output


def _attachment_names(attachments) -> list[dict]:
    """A message's attached files as its chips: [{"name"}], from the names the page sends."""
    if attachments is None:
        return []
    if not isinstance(attachments, list) or not all(isinstance(a, str) and a.strip() for a in attachments):
        raise ClientError("bad_request", gettext("attachments is a list of file names."), field="attachments")
    return [{"name": a.strip()[:200]} for a in attachments[:MAX_ATTACHMENTS]]


def _answer_options(max_tokens, options) -> tuple[int | None, dict]:
    """One answer's own max_tokens (None: the conversation's) and sampling options, checked."""
    return (None if max_tokens is None else validate_max_tokens(max_tokens)), validate_sampling(options)


def _answer(
    user,
    conversation: Conversation,
    prompt: Message,
    *,
    max_tokens: int | None,
    sampling: dict,
    t_arrive_ns: int,
    client: str = "chat",
    raw_prompt: bool = False,
    output: dict | None = None,
    model_name: str = "",
    keep_alive_s: float | None = None,
    keyless: bool = False,
    collections: list[int] | None = None,
) -> Generation:
    """A queued answer to prompt under the conversation's settings, now the branch on show,
    of its model: the request's (API), else the conversation's, else the default one. user owns
    the conversation (given, so that the answer's events need not read it again). collections:
    the document collections its retrieve phase searches (None: the chat's own)."""
    model_name = model_name or model_for_answer(conversation.model)
    reply = Message.objects.create(conversation=conversation, parent=prompt, role=Message.Role.ASSISTANT, content="")
    if max_tokens is None:
        stored = conversation.max_tokens
        max_tokens = min(stored, settings.HOMEAI_MAX_TOKENS_LIMIT) if stored else settings.HOMEAI_MAX_TOKENS
    generation = Generation.objects.create(
        user=user,
        conversation=conversation,
        message=reply,
        client=client[:32] or "api",
        raw_prompt=raw_prompt,
        keyless=keyless,
        output=output or {},
        model_name=model_name,
        keep_alive_s=keep_alive_s,
        max_tokens=max_tokens,
        sampling={**conversation.sampling(), **sampling},
        system_prompt=conversation.system_prompt,
        t_arrive_ns=t_arrive_ns,
        collections=chat_documents.answer_collections(conversation) if collections is None else collections,
    )
    conversation.current_leaf = reply
    conversation.save(update_fields=["current_leaf", "updated_at", *ChatSettings.FIELDS])
    return generation


def generation_create_api(
    *,
    user,
    client: str,
    messages: list[dict] | None = None,
    prompt: str | None = None,
    max_tokens=None,
    options=None,
    output: dict | None = None,
    model_name: str = "",
    keep_alive_s: float | None = None,
    t_arrive_ns: int | None = None,
    keyless: bool = False,
    collections=None,
) -> Generation:
    """An API request (OpenAI's or Ollama's): its messages (or raw prompt) become an API
    conversation; output says what the answer must be (engine.tools.OutputSpec.as_dict);
    model_name the model file asked for (the default one when empty); t_arrive_ns is when the
    request reached the web server (default: now); keyless: asked without a key (the keyless
    LAN user's), its cached prefixes kept apart from the account's. collections: ids of the
    document collections its answer is drawn from (each one the person reads; not_found else)."""
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
    chosen = [] if collections is None else [c.id for c in chat_documents.readable_choice(user, collections)]
    t_arrive_ns = t_arrive_ns or time.time_ns()
    title = f"API · {client}: " + " ".join(turns[-1]["content"].split())[:TITLE_CHARS]
    with transaction.atomic():
        _check_room(user)
        conversation = Conversation.objects.create(user=user, title=title[:120], source=Conversation.Source.API)
        last = None
        for turn in turns:
            last = Message.objects.create(conversation=conversation, parent=last, **turn)
        return _answer(
            user,
            conversation,
            last,
            max_tokens=max_tokens,
            sampling=sampling,
            t_arrive_ns=t_arrive_ns,
            client=client,
            raw_prompt=prompt is not None,
            output=output,
            model_name=model_name,
            keep_alive_s=keep_alive_s,
            keyless=keyless,
            collections=chosen,
        )


def _check_room(user) -> None:
    """The one check every new answer passes, from the chat and the API alike: the person's
    daily limits, then room in the line. Refused, no row is written and nothing starts.

    Called inside the transaction that writes the answer, with the person's row locked
    (lock_person): a burst of requests sent together is counted one after the other, so no
    more than the limit get in."""
    lock_person(user)
    check_daily_limits(user)
    _check_waiting_limit(user)


def lock_person(user) -> None:
    """Hold the person's user row until the transaction ends: their next request waits here
    for this one's rows. PostgreSQL locks the row (FOR UPDATE); SQLite takes the database's
    write lock when the transaction begins (IMMEDIATE, infra.env.database_config)."""
    list(get_user_model().objects.select_for_update().filter(pk=user.pk).values_list("pk", flat=True))


def check_daily_limits(user) -> None:
    account = Account.objects.filter(user=user).first()
    if account is None or (account.answers_per_day is None and account.tokens_per_day is None):
        return
    used = selectors.usage_today(user=user)
    resets = formats.time_format(timezone.localtime(selectors.next_day_start()), "TIME_FORMAT")
    if account.answers_per_day is not None and used["answers"] >= account.answers_per_day:
        raise ClientError(
            "limit_reached",
            ngettext(
                "You have used today's %(limit)d answer. Your limit starts again at %(time)s.",
                "You have used all %(limit)d of today's answers. Your limit starts again at %(time)s.",
                account.answers_per_day,
            )
            % {"limit": account.answers_per_day, "time": resets},
        )
    if account.tokens_per_day is not None and used["tokens"] >= account.tokens_per_day:
        raise ClientError(
            "limit_reached",
            gettext("You have used today's %(limit)s tokens. Your limit starts again at %(time)s.")
            % {"limit": formats.number_format(account.tokens_per_day, force_grouping=True), "time": resets},
        )


def _check_waiting_limit(user) -> None:
    """Room in the line: HOMEAI_MAX_WAITING answers in all, and a share of them per person, so
    one script cannot take every place while the household waits."""
    counts = Generation.objects.filter(status=Generation.Status.QUEUED).aggregate(
        waiting=Count("id"), own=Count("id", filter=Q(user=user))
    )
    waiting, own = counts["waiting"], counts["own"]
    if waiting >= settings.HOMEAI_MAX_WAITING:
        raise ClientError(
            "busy",
            gettext("The server is busy: %(n)s answers are already waiting. Please try again in a minute.")
            % {"n": waiting},
        )
    if own >= settings.HOMEAI_MAX_WAITING_PER_USER:
        raise ClientError(
            "busy",
            gettext(
                "You already have %(n)s answers waiting, as many as one person may; "
                "send this once one of them has started."
            )
            % {"n": own},
        )


QUEUE_DOWN_MESSAGE = gettext_lazy(
    "The message queue is unreachable for the moment; this message is saved and will be answered as soon as it is back."
)


def generation_enqueue(*, generation: Generation, arrival: str = "") -> bool:
    """Send the answer to a worker (after the client was told it is queued, so no event beats
    that), then show it queued on the dashboard: the task first, so that the worker need not
    wait for the dashboard's Redis round trip (the page ignores a "queued" that comes late).
    arrival: the token its request was announced with (dispatch/arrivals.py), which the task carries.

    False when the broker (Redis) is unreachable: the answer stays queued in the database, and
    the watchdog sends its task again once Redis answers (sweeps.generations_resend_stale).
    """
    try:
        registry.send_generation(generation.id, generation.model_name, arrival)
    except Exception:
        log.warning("could not send answer %s to a worker; the watchdog will", generation.id, exc_info=True)
        sent = False
    else:
        sent = True
    broadcast.publish_dashboard([events.request_update(generation, phase="queued", status="queued")])
    return sent


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
        try:
            redis_client.client().set(redis_client.cancel_key(generation.id), 1, ex=3600)
        except redis.RedisError:
            raise ClientError(
                "unavailable", "The answer cannot be stopped right now (the message queue is unreachable); try again."
            ) from None


def generation_set_served_ttft(*, generation_id: int, ttft_ms: float) -> None:
    """Store a streamed API answer's time to first token as its client got it (arrival at the web
    server to the first bytes on the socket) as the answer's client-side TTFT, beside the
    engine's (`ttft_ms`, which /metrics counts), as a browser's own measure is: the web measures
    it and stores it once the answer has ended, after the worker's final write."""
    Generation.objects.filter(id=generation_id).update(client_ttft_ms=validate_ttft_ms(ttft_ms))


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


def generation_tool_confirm(*, user, generation_id, call, allow) -> None:
    """Answer a running answer's acting tool call: allow (True) or deny (False). The worker's
    task reads it (inference/worker/toolcalls.py); an answer already past it ignores it."""
    if not isinstance(call, int) or isinstance(call, bool) or not 0 <= call < 64:
        raise ClientError("bad_request", gettext("call must be the tool call's number."), field="call")
    if not isinstance(allow, bool):
        raise ClientError("bad_request", gettext("allow must be true or false."), field="allow")
    if not isinstance(generation_id, int) or isinstance(generation_id, bool):
        raise ClientError("bad_request", gettext("generation must be an answer's id."), field="generation")
    generation = selectors.generations_for_user(user=user, generation_ids=[generation_id]).get(generation_id)
    if generation is None or generation.status != Generation.Status.RUNNING:
        raise ClientError("not_found", gettext("That answer is not waiting for you."), field="generation")
    key = redis_client.tool_confirm_key(generation.id, call)
    try:
        redis_client.client().set(key, "allow" if allow else "deny", ex=int(settings.HOMEAI_TOOL_CONFIRM_S) + 60)
    except redis.RedisError:
        raise ClientError("unavailable", str(QUEUE_DOWN_MESSAGE)) from None
