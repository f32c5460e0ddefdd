"""Reads: ownership-checked lookups, the branch of a conversation on show and the prompt an
answer is built from, search, presets, each person's usage, shared chats."""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db.models import Count, Exists, OuterRef, Q, Sum
from django.db.models.functions import Coalesce
from django.utils import timezone

from accounts.models import Account
from inference.engine.sequence import SamplingParams
from inference.models import ChatShare, Conversation, Generation, Message, Preset

SEARCH_LIMIT = 50
SNIPPET_CHARS = 120
SNIPPET_LEAD = 40  # characters of context before the match


def _is_id(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def conversation_for_user(*, user, conversation_id) -> Conversation | None:
    if not _is_id(conversation_id):
        return None
    return Conversation.objects.filter(id=conversation_id, user=user).first()


def generation_for_user(*, user, generation_id) -> Generation | None:
    if not _is_id(generation_id):
        return None
    return Generation.objects.filter(id=generation_id, user=user).first()


def generations_for_user(*, user, generation_ids: list[int]) -> dict[int, Generation]:
    """The user's answers among these ids, with their messages (others' are simply absent)."""
    rows = Generation.objects.filter(id__in=generation_ids, user=user).select_related("message")
    return {g.id: g for g in rows}


def message_for_user(*, user, message_id) -> Message | None:
    """One of the user's messages, with its conversation (None for anyone else's)."""
    if not _is_id(message_id):
        return None
    return Message.objects.select_related("conversation").filter(id=message_id, conversation__user=user).first()


def conversation_list(*, user):
    return Conversation.objects.filter(user=user, source=Conversation.Source.CHAT).order_by("-updated_at")


# --- the message tree ---------------------------------------------------------------------------


class MessageTree:
    """A conversation's messages, every branch, read in one query."""

    def __init__(self, conversation_id: int, *, with_generations: bool = False):
        rows = Message.objects.filter(conversation_id=conversation_id).order_by("id")
        if with_generations:
            rows = rows.select_related("generation")
        self.messages: dict[int, Message] = {m.id: m for m in rows}
        self.children: dict[int | None, list[int]] = defaultdict(list)
        for m in self.messages.values():
            self.children[m.parent_id].append(m.id)

    def path(self, leaf_id: int | None) -> list[Message]:
        """The messages from a root down to leaf_id (none when it is None or gone)."""
        path: list[Message] = []
        message = self.messages.get(leaf_id)
        while message is not None and len(path) < len(self.messages):
            path.append(message)
            message = self.messages.get(message.parent_id)
        path.reverse()
        return path

    def newest_below(self, message_id: int) -> int:
        """The newest message of message_id's subtree (itself if it has no replies): the end of
        the branch shown when a person picks it."""
        newest, stack = message_id, [message_id]
        while stack:
            current = stack.pop()
            newest = max(newest, current)
            stack.extend(self.children.get(current, ()))
        return newest

    def shown_leaf(self, conversation: Conversation) -> int | None:
        if conversation.current_leaf_id in self.messages:
            return conversation.current_leaf_id
        return max(self.messages, default=None)

    def siblings(self, message: Message) -> dict:
        """Where a message sits among its alternatives: index is 1-based ("2 / 3")."""
        ids = self.children[message.parent_id]
        return {"index": ids.index(message.id) + 1, "count": len(ids), "ids": ids}


def prompt_messages(*, generation: Generation) -> list[dict]:
    """The chat messages an answer is written from: its system prompt, then its branch from the
    root down to the message it answers (empty answers left out)."""
    tree = MessageTree(generation.conversation_id)
    answer = tree.messages.get(generation.message_id)
    path = tree.path(answer.parent_id) if answer is not None else []
    system = [{"role": "system", "content": generation.system_prompt}] if generation.system_prompt.strip() else []
    return system + [{"role": m.role, "content": m.content} for m in path if m.content.strip()]


def queue_position(*, generation: Generation) -> int:
    """How many answers are ahead of this one (0: it is next or running)."""
    return Generation.objects.filter(status__in=Generation.ACTIVE, id__lt=generation.id).count()


def generation_summary(generation: Generation | None) -> dict | None:
    if generation is None:
        return None
    finished = not generation.is_active
    summary = {
        "id": generation.id,
        "status": generation.status,
        "metrics": generation.metrics() if finished else None,
        "notice": generation.notice,
        "error": generation.error_message,
    }
    if finished and generation.sources:
        summary["sources"] = generation.sources  # the documents it drew on, under the answer
    if generation.tool_calls:
        summary["tool_calls"] = generation.tool_calls  # drawn as cards
    return summary


def conversation_history(*, conversation: Conversation) -> list[dict]:
    """The branch on show, root first, for the chat page: each turn with its id, its answer's
    state and metrics, and its alternatives (siblings) so the page can show and switch "2 / 3"."""
    tree = MessageTree(conversation.id, with_generations=True)
    history = []
    for m in tree.path(tree.shown_leaf(conversation)):
        generation = getattr(m, "generation", None) if m.role == Message.Role.ASSISTANT else None
        history.append(
            {
                "id": m.id,
                "role": m.role,
                "text": m.content,
                "attachments": m.attachments,
                "generation": generation_summary(generation),
                "siblings": tree.siblings(m),
            }
        )
    return history


# --- search -------------------------------------------------------------------------------------


def conversation_search(*, user, query: str) -> list[dict]:
    """The user's chat conversations whose title or any message contains query (any case),
    newest first, at most SEARCH_LIMIT, each with a snippet of the first matching message."""
    if not query:
        return []
    matching = Message.objects.filter(conversation=OuterRef("pk"), content__icontains=query)
    found = list(conversation_list(user=user).filter(Q(title__icontains=query) | Exists(matching))[:SEARCH_LIMIT])
    snippets: dict[int, str] = {}
    texts = (
        Message.objects.filter(conversation_id__in=[c.id for c in found], content__icontains=query)
        .order_by("id")
        .values_list("conversation_id", "content")
    )
    for conversation_id, text in texts.iterator():
        snippets.setdefault(conversation_id, snippet(text, query))
    return [
        {"id": c.id, "title": c.title, "snippet": snippets.get(c.id, ""), "updated_at": c.updated_at.isoformat()}
        for c in found
    ]


def snippet(text: str, query: str) -> str:
    """About SNIPPET_CHARS of text around the first match of query, on one line."""
    at = max(text.lower().find(query.lower()), 0)
    start = max(at - SNIPPET_LEAD, 0)
    end = start + SNIPPET_CHARS
    piece = " ".join(text[start:end].split())
    return ("…" if start else "") + piece + ("…" if end < len(text) else "")


# --- settings and presets -----------------------------------------------------------------------


def settings_defaults() -> dict:
    """What an answer uses where a conversation's setting is empty: the server's defaults."""
    return {
        "system_prompt": "",
        "temperature": settings.HOMEAI_TEMPERATURE,
        "top_p": SamplingParams.top_p,
        "max_tokens": settings.HOMEAI_MAX_TOKENS,
    }


def preset_list(*, user) -> list[dict]:
    """The built-in presets (id: their key) and then the user's own (id: a number). A preset's
    settings are the ones it changes: the built-ins hold only temperature and top_p."""
    builtin = [
        {"id": key, "name": values["name"], "builtin": True, "settings": _without_name(values)}
        for key, values in Preset.BUILTIN.items()
    ]
    return builtin + [preset_entry(p) for p in user.presets.all()]


def preset_entry(preset: Preset) -> dict:
    return {"id": preset.id, "name": preset.name, "builtin": False, "settings": preset.settings()}


def _without_name(values: dict) -> dict:
    return {k: v for k, v in values.items() if k != "name"}


def preset_settings(*, user, preset) -> dict | None:
    """The settings a preset holds (a built-in's key, or the id of one of the user's own);
    None when there is no such preset."""
    if isinstance(preset, str) and preset in Preset.BUILTIN:
        return _without_name(Preset.BUILTIN[preset])
    if not _is_id(preset):
        return None
    own = Preset.objects.filter(id=preset, user=user).first()
    if own is None:
        return None
    # A preset saved without a model leaves the chat's model as it is.
    return {name: value for name, value in own.settings().items() if name != "model" or value}


# An answer counts against a day's limit once asked for, unless it never reached a worker
# (cancelled or refused while waiting).
COUNTED_ANSWER = Q(attempts__gt=0) | Q(status__in=Generation.ACTIVE)


def day_start(now: datetime | None = None) -> datetime:
    """Local midnight (settings.TIME_ZONE) of today: when the daily limits start again."""
    return timezone.localtime(now).replace(hour=0, minute=0, second=0, microsecond=0)


def next_day_start(now: datetime | None = None) -> datetime:
    return timezone.localtime(day_start(now) + timedelta(hours=36)).replace(hour=0)


def usage_by_user(*, since: datetime, user_ids=None) -> dict[int, dict]:
    """Per person since a moment: answers, tokens (prompt + output, as OpenAI's total_tokens) and
    model time (prefill + first token + decode, ms: what the engine spent on them, on CPU or GPU)."""
    rows = Generation.objects.filter(COUNTED_ANSWER, created_at__gte=since)
    if user_ids is not None:
        rows = rows.filter(user_id__in=user_ids)
    totals = rows.values("user_id").annotate(
        answers=Count("id"),
        prompt_tokens=Coalesce(Sum("prompt_tokens"), 0),
        output_tokens=Coalesce(Sum("output_tokens"), 0),
        prefill_ms=Coalesce(Sum("prefill_ms"), 0.0),
        first_token_ms=Coalesce(Sum("first_token_ms"), 0.0),
        decode_ms=Coalesce(Sum("decode_ms"), 0.0),
    )
    return {
        row["user_id"]: {
            "answers": row["answers"],
            "tokens": row["prompt_tokens"] + row["output_tokens"],
            "model_ms": row["prefill_ms"] + row["first_token_ms"] + row["decode_ms"],
        }
        for row in totals
    }


EMPTY_USAGE = {"answers": 0, "tokens": 0, "model_ms": 0.0}


def usage_today(*, user) -> dict:
    return usage_by_user(since=day_start(), user_ids=[user.id]).get(user.id, EMPTY_USAGE)


def default_preset(*, user) -> str | int | None:
    """The preset a person's new chats start with (as chat.send's preset names it), if it still exists."""
    chosen = Account.objects.filter(user=user).values_list("default_preset", flat=True).first()
    if not chosen:
        return None
    preset = int(chosen) if chosen.isdigit() else chosen
    return preset if preset_settings(user=user, preset=preset) is not None else None


# --- shared chats -------------------------------------------------------------------------------


def shared_conversation(*, user, token) -> Conversation | None:
    """The conversation behind a share link, if this person may read it: its owner, everyone
    signed in when it is shared so, or one of the people it is shared with."""
    if not isinstance(token, str) or not token:
        return None
    share = ChatShare.objects.select_related("conversation__user").filter(token=token).first()
    if share is None:
        return None
    owner = share.conversation.user_id == user.id
    if owner or share.everyone or share.people.filter(id=user.id).exists():
        return share.conversation
    return None


def share_state(*, conversation: Conversation) -> dict:
    """Who a conversation is shared with, for its owner's share dialog (token null: not shared)."""
    share = ChatShare.objects.filter(conversation=conversation).first()
    if share is None:
        return {"token": None, "everyone": False, "people": []}
    return {
        "token": share.token,
        "everyone": share.everyone,
        "people": sorted(share.people.values_list("id", flat=True)),
    }


def housemates(*, user) -> list[dict]:
    """The other active people in the house, by name: whom a chat can be shared with."""
    people = get_user_model().objects.filter(is_active=True).exclude(id=user.id).select_related("account")
    entries = []
    for person in people.order_by("username"):
        account = getattr(person, "account", None)
        entries.append({"id": person.id, "name": (account and account.display_name) or person.username})
    return entries


def decode_rates(*, per_model: int = 50) -> dict[str, float]:
    """The median output tok/s of each model's latest finished answers (at most per_model each):
    the measured figure the model library shows beside its forecast."""
    rows = (
        Generation.objects.filter(status=Generation.Status.DONE, output_tps__isnull=False)
        .exclude(model_name="")
        .order_by("-id")
        .values_list("model_name", "output_tps")[: per_model * 20]
    )
    rates: dict[str, list[float]] = defaultdict(list)
    for name, tps in rows:
        if len(rates[name]) < per_model:
            rates[name].append(tps)
    return {name: sorted(values)[len(values) // 2] for name, values in rates.items()}
