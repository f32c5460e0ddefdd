"""Chats that travel: a person's conversations exported (HomeAI's JSON, every branch with its
settings and each answer's stats; Markdown, the branch on show, for reading) and imported (that
JSON, ChatGPT's conversations.json, Open WebUI's chat export).

An import reads the whole file into plain `Chat`s first, so a file that is not what it should be
is refused with a sentence before anything is written; then every chat is written in one
transaction, for the importer alone.
"""

from __future__ import annotations

import io
import json
import zipfile
import zlib
from dataclasses import dataclass, field
from datetime import UTC, datetime

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext

from inference import selectors
from inference.catalog import catalog
from inference.models import Conversation, Generation, Message
from inference.services.validation import SYSTEM_PROMPT_CHARS, TITLE_CHARS, validate_settings
from infra.errors import ClientError

FORMAT = "homeai.chats"
VERSION = 1
ROLES = {choice.value for choice in Message.Role}
# An answer's row as exported: what it was asked with, how it ended and its stats.
GENERATION_FIELDS = (
    "status",
    "client",
    "model_name",
    "max_tokens",
    "sampling",
    "system_prompt",
    "output",
    "finish_reason",
    "error_code",
    "error_message",
    "notice",
    "t_arrive_ns",
    *(name for name in Generation.METRIC_FIELDS if name != "finish_reason"),
    "token_times_ms",
    "token_texts",
    "itl_ms",
)
# ChatGPT's author roles that hold no turn of the conversation (a tool's output, a browsing
# result): their messages are left out and their replies hang from the turn before them.
CHATGPT_SKIPPED_ROLES = {"tool"}
CHATGPT_SKIPPED_CONTENT = {"thoughts", "reasoning_recap", "user_editable_context", "model_editable_context"}


# --- export -------------------------------------------------------------------------------------


def _when(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def conversation_export(conversation: Conversation) -> dict:
    """One conversation as HomeAI's JSON: its settings, every message of every branch (parents
    before their replies) and each answer's row."""
    tree = selectors.MessageTree(conversation.id, with_generations=True)
    messages = []
    for m in tree.messages.values():
        entry = {"id": m.id, "parent": m.parent_id, "role": m.role, "content": m.content}
        entry["created_at"] = _when(m.created_at)
        generation = getattr(m, "generation", None)
        if generation is not None:
            row = {name: getattr(generation, name) for name in GENERATION_FIELDS}
            row["created_at"] = _when(generation.created_at)
            row["finished_at"] = _when(generation.finished_at)
            entry["generation"] = row
        messages.append(entry)
    return {
        "title": conversation.title,
        "created_at": _when(conversation.created_at),
        "updated_at": _when(conversation.updated_at),
        "settings": conversation.settings(),
        "current_leaf": tree.shown_leaf(conversation),
        "messages": messages,
    }


def _chosen(*, user, conversation_id) -> list[Conversation]:
    """One of the person's chats (None: all of them); another person's or a missing one is not found."""
    if conversation_id is None:
        return list(selectors.conversation_list(user=user))
    conversation = selectors.conversation_for_user(user=user, conversation_id=conversation_id)
    if conversation is None:
        raise ClientError("not_found", gettext("That conversation does not exist."), field="conversation")
    return [conversation]


def chats_export(*, user, conversation_id=None) -> dict:
    """HomeAI's JSON for one of the person's chats, or for all of them (None)."""
    rows = _chosen(user=user, conversation_id=conversation_id)
    return {
        "format": FORMAT,
        "version": VERSION,
        "exported_at": _when(timezone.now()),
        "conversations": [conversation_export(c) for c in rows],
    }


def conversation_markdown(conversation: Conversation) -> str:
    """The branch on show as Markdown, for reading: the title, the system prompt, each turn."""
    lines = [f"# {conversation.title}", ""]
    if conversation.system_prompt.strip():
        lines += [f"**{gettext('System prompt')}:** {conversation.system_prompt}", ""]
    names = {
        Message.Role.USER: gettext("You"),
        Message.Role.ASSISTANT: gettext("Assistant"),
        Message.Role.SYSTEM: gettext("System"),
    }
    for turn in selectors.conversation_history(conversation=conversation):
        heading = f"## {names.get(turn['role'], turn['role'])}"
        if turn["siblings"]["count"] > 1:
            heading += " " + gettext("(version %(index)s of %(count)s)") % turn["siblings"]
        lines += [heading, "", turn["text"], ""]
    return "\n".join(lines).rstrip() + "\n"


def chats_markdown(*, user, conversation_id=None) -> str:
    """Markdown for one of the person's chats, or all of them, one after another."""
    rows = _chosen(user=user, conversation_id=conversation_id)
    return "\n---\n\n".join(conversation_markdown(c) for c in rows)


# --- import: files into plain chats -------------------------------------------------------------


@dataclass
class Turn:
    key: str
    parent: str | None
    role: str
    content: str
    created_at: datetime | None = None
    generation: dict | None = None


@dataclass
class Chat:
    """A conversation read from a file, not yet stored: its turns, parents before their replies."""

    title: str
    turns: list[Turn] = field(default_factory=list)
    settings: dict = field(default_factory=dict)
    current: str | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None


def not_an_export() -> str:
    return gettext(
        "This file is JSON but not a chat export HomeAI knows: choose an export from HomeAI, "
        "ChatGPT (conversations.json) or Open WebUI."
    )


def bad_shape(detail: str) -> ClientError:
    return ClientError("bad_file", detail, field="file")


def check_size(size: int) -> None:
    """Refuse a file past HOMEAI_MAX_IMPORT_BYTES, saying both sizes."""
    limit = settings.HOMEAI_MAX_IMPORT_BYTES
    if size > limit:
        raise ClientError(
            "too_large",
            gettext("The file is %(size)s bytes; this server imports files of up to %(limit)s bytes.")
            % {"size": f"{size:,}", "limit": f"{limit:,}"},
            field="file",
        )


def read_upload(data: bytes):
    """The file's JSON: the file itself, or conversations.json inside a ChatGPT export's zip."""
    limit = settings.HOMEAI_MAX_IMPORT_BYTES
    check_size(len(data))
    if data.startswith(b"PK\x03\x04"):
        data = _from_zip(data, limit)
    try:
        return json.loads(data)
    except (ValueError, UnicodeDecodeError):
        raise bad_shape(
            gettext("This file is not JSON: choose an export from HomeAI, ChatGPT (conversations.json) or Open WebUI.")
        ) from None
    except RecursionError:  # JSON nested deeper than any export is
        raise bad_shape(not_an_export()) from None


def _from_zip(data: bytes, limit: int) -> bytes:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            names = [n for n in archive.namelist() if n.rsplit("/", 1)[-1] == "conversations.json"]
            if not names:
                raise bad_shape(gettext("This zip file holds no conversations.json (ChatGPT's export has one)."))
            with archive.open(names[0]) as member:
                content = member.read(limit + 1)  # a declared size can lie: read no more than the limit
    except (zipfile.BadZipFile, EOFError, zlib.error, RuntimeError, NotImplementedError):
        # Damaged, cut short, encrypted, or packed in a way Python's zipfile cannot unpack.
        raise bad_shape(gettext("This zip file cannot be read.")) from None
    if len(content) > limit:
        raise ClientError(
            "too_large",
            gettext("The conversations in this zip file are larger than the %(limit)s bytes this server imports.")
            % {"limit": f"{limit:,}"},
            field="file",
        )
    return content


def parse_chats(document) -> list[Chat]:
    """The chats in an export, whichever app wrote it."""
    if isinstance(document, dict) and document.get("format") == FORMAT:
        return _homeai_chats(document)
    items = document if isinstance(document, list) else [document]
    if items and all(isinstance(item, dict) and isinstance(item.get("mapping"), dict) for item in items):
        return [_chatgpt_chat(item) for item in items]
    if items and all(isinstance(item, dict) and isinstance(_webui_body(item), dict) for item in items):
        return [_webui_chat(item) for item in items]
    raise bad_shape(not_an_export())


def _title(value, fallback_turns: list[Turn]) -> str:
    title = " ".join(value.split()) if isinstance(value, str) else ""
    if not title:
        first = next((t.content for t in fallback_turns if t.role == Message.Role.USER and t.content.strip()), "")
        title = " ".join(first.split()) or gettext("Imported chat")
    return title.replace("\x00", "")[:TITLE_CHARS]


def _time(value) -> datetime | None:
    """A timestamp as the apps write them: ISO 8601 (HomeAI) or seconds since the epoch."""
    if isinstance(value, bool) or value is None:
        return None
    try:
        if isinstance(value, (int, float)):
            # Seconds; Open WebUI writes a chat's own timestamp in milliseconds.
            return datetime.fromtimestamp(value / 1000 if value > 1e11 else value, tz=UTC)
        if isinstance(value, str):
            parsed = datetime.fromisoformat(value)
            return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    except (ValueError, OverflowError, OSError):
        return None
    return None


def _role(role, chat_title: str) -> str:
    if not isinstance(role, str) or role not in ROLES:
        raise bad_shape(
            gettext('The chat "%(title)s" has a message from "%(role)s"; HomeAI knows only user, assistant and system.')
            % {"title": chat_title, "role": str(role)[:40]}
        )
    return role


def _ordered(chat: Chat, title: str) -> Chat:
    """Turns put parents first (each list keeps the order siblings came in), or the file refused
    when a reply names a parent that is not there or the parents loop."""
    by_key = {t.key: t for t in chat.turns}
    if len(by_key) != len(chat.turns):
        raise bad_shape(gettext('The chat "%(title)s" has two messages with one id.') % {"title": title})
    children: dict[str | None, list[Turn]] = {}
    for turn in chat.turns:
        if turn.parent is not None and turn.parent not in by_key:
            raise bad_shape(
                gettext('A message in the chat "%(title)s" answers a message that is not in the file.')
                % {"title": title}
            )
        children.setdefault(turn.parent, []).append(turn)
    ordered: list[Turn] = []
    stack = list(reversed(children.get(None, [])))
    while stack:
        turn = stack.pop()
        ordered.append(turn)
        stack.extend(reversed(children.get(turn.key, [])))
    if len(ordered) != len(chat.turns):
        raise bad_shape(gettext('The messages of the chat "%(title)s" answer each other in a loop.') % {"title": title})
    chat.turns = ordered
    if chat.current not in by_key:
        chat.current = None
    return chat


def _listed(value) -> list:
    return value if isinstance(value, list) else []


def _text(value, what: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise bad_shape(what)
    return value


# HomeAI's own JSON


def _homeai_chats(document: dict) -> list[Chat]:
    if document.get("version") != VERSION or not isinstance(document.get("conversations"), list):
        raise bad_shape(gettext("This HomeAI export is of a version this server cannot read."))
    return [_homeai_chat(item) for item in document["conversations"]]


def _homeai_chat(item) -> Chat:
    if not isinstance(item, dict) or not isinstance(item.get("messages"), list):
        raise bad_shape(gettext("A conversation in this HomeAI export has no list of messages."))
    title = _title(item.get("title"), [])
    turns = []
    for m in item["messages"]:
        if not isinstance(m, dict) or m.get("id") is None:
            raise bad_shape(gettext('A message in the chat "%(title)s" has no id.') % {"title": title})
        generation = m.get("generation")
        if generation is not None and not isinstance(generation, dict):
            raise bad_shape(gettext('An answer in the chat "%(title)s" has unreadable stats.') % {"title": title})
        turns.append(
            Turn(
                key=str(m["id"]),
                parent=None if m.get("parent") is None else str(m["parent"]),
                role=_role(m.get("role"), title),
                content=_text(
                    m.get("content"), gettext('A message in the chat "%(title)s" is not text.') % {"title": title}
                ),
                created_at=_time(m.get("created_at")),
                generation=generation,
            )
        )
    chat = Chat(
        title=title,
        turns=turns,
        settings=_settings(item.get("settings"), title),
        current=None if item.get("current_leaf") is None else str(item["current_leaf"]),
        created_at=_time(item.get("created_at")),
        updated_at=_time(item.get("updated_at")),
    )
    return _ordered(chat, title)


def _settings(values, title: str) -> dict:
    """A chat's settings, checked as the settings dialog's are; a model this server does not
    have becomes the server's default."""
    if values is None:
        return {}
    if not isinstance(values, dict):
        raise bad_shape(gettext('The settings of the chat "%(title)s" are unreadable.') % {"title": title})
    values = dict(values)
    model = values.pop("model", "")
    clean = validate_settings(values)
    if isinstance(model, str) and model:
        clean["model"] = catalog(redis_optional=True).resolve(model) or ""
    return clean


# ChatGPT's conversations.json


def _chatgpt_text(message: dict) -> str:
    content = message.get("content")
    if not isinstance(content, dict) or content.get("content_type") in CHATGPT_SKIPPED_CONTENT:
        return ""
    parts = content.get("parts")
    if isinstance(parts, list):
        return "\n\n".join(p for p in parts if isinstance(p, str) and p.strip())
    text = content.get("text")
    return text if isinstance(text, str) else ""


def _chatgpt_chat(item: dict) -> Chat:
    """ChatGPT's mapping: a tree of nodes {id, message, parent, children}; the root, hidden and
    empty messages, tools' output and calls to tools are left out, their replies hanging from
    the nearest turn kept."""
    mapping = item["mapping"]
    title = item.get("title") if isinstance(item.get("title"), str) else ""
    label = title or gettext("Imported chat")
    kept: dict[str, str | None] = {}  # every node -> the nearest kept node at or above it
    turns: list[Turn] = []
    system_prompt = ""

    def nearest(key) -> str | None:
        """The kept node at or above key (iterative: a long chat is a deep tree)."""
        chain = []
        while key is not None and not (isinstance(key, str) and key in kept):
            node = mapping.get(key) if isinstance(key, str) else None
            if not isinstance(node, dict) or len(chain) > len(mapping):
                raise bad_shape(
                    gettext('A message in the chat "%(title)s" answers a message that is not in the file.')
                    % {"title": label}
                )
            chain.append(key)
            key = node.get("parent")
        found = kept[key] if key is not None else None
        for k in chain:
            kept[k] = found
        return found

    for key, node in mapping.items():
        if not isinstance(node, dict):
            raise bad_shape(gettext('The chat "%(title)s" has an unreadable message.') % {"title": label})
        message = node.get("message")
        if not isinstance(message, dict):
            continue
        author = message.get("author")
        role = author.get("role") if isinstance(author, dict) else None
        metadata = message.get("metadata") if isinstance(message.get("metadata"), dict) else {}
        text = _chatgpt_text(message)
        to_tool = message.get("recipient") not in (None, "all")  # a call to a tool, not a turn of the chat
        hidden = metadata.get("is_visually_hidden_from_conversation")
        if role in CHATGPT_SKIPPED_ROLES or to_tool or hidden or not text.strip():
            continue
        role = _role(role, label)
        if role == Message.Role.SYSTEM:
            system_prompt = system_prompt or text
            continue
        kept[str(key)] = str(key)
    for key in list(kept):
        node = mapping[key]
        parent = nearest(node.get("parent")) if node.get("parent") is not None else None
        message = node["message"]
        turns.append(
            Turn(
                key=key,
                parent=parent,
                role=message["author"]["role"],
                content=_chatgpt_text(message),
                created_at=_time(message.get("create_time")),
            )
        )
    # Siblings in the order ChatGPT lists them (its version "1 / 2" first), not the file's key order.
    rank = {str(child): i for node in mapping.values() for i, child in enumerate(_listed(node.get("children")))}
    turns.sort(key=lambda t: rank.get(t.key, 0))
    current = item.get("current_node")
    current = current if isinstance(current, str) and current in mapping else None
    chat = Chat(
        title=_title(title, turns),
        turns=turns,
        settings=_settings({"system_prompt": system_prompt[:SYSTEM_PROMPT_CHARS]}, label) if system_prompt else {},
        current=nearest(current) if current is not None else None,
        created_at=_time(item.get("create_time")),
        updated_at=_time(item.get("update_time")),
    )
    return _ordered(chat, label)


# Open WebUI's export


def _webui_body(item: dict):
    """The chat itself: Open WebUI exports {id, title, chat: {...}, created_at, ...} rows."""
    body = item.get("chat")
    if isinstance(body, dict) and isinstance(body.get("history"), dict):
        return body
    return None


def _webui_chat(item: dict) -> Chat:
    body = _webui_body(item)
    title = item.get("title") or body.get("title")
    label = title if isinstance(title, str) and title else gettext("Imported chat")
    messages = body["history"].get("messages")
    if not isinstance(messages, dict):
        raise bad_shape(gettext('The chat "%(title)s" has no messages Open WebUI would write.') % {"title": label})
    turns = []
    for key, m in messages.items():
        if not isinstance(m, dict):
            raise bad_shape(gettext('The chat "%(title)s" has an unreadable message.') % {"title": label})
        content = m.get("content")
        what = gettext('A message in the chat "%(title)s" is not text.') % {"title": label}
        parent = m.get("parentId")
        turns.append(
            Turn(
                key=str(m.get("id", key)),
                parent=None if parent is None else str(parent),
                role=_role(m.get("role"), label),
                content=_text(content, what),
                created_at=_time(m.get("timestamp")),
            )
        )
    # Siblings in the order Open WebUI lists them (childrenIds), as its "1 / 2" does.
    rank = {str(child): i for m in messages.values() for i, child in enumerate(_listed(m.get("childrenIds")))}
    turns.sort(key=lambda t: rank.get(t.key, 0))
    params = body.get("params") if isinstance(body.get("params"), dict) else {}
    system = params.get("system") or body.get("system") or ""
    current = body["history"].get("currentId")
    chat = Chat(
        title=_title(title, turns),
        turns=turns,
        settings=_settings({"system_prompt": system}, label) if isinstance(system, str) and system else {},
        current=None if current is None else str(current),
        created_at=_time(item.get("created_at") or body.get("timestamp")),
        updated_at=_time(item.get("updated_at")),
    )
    return _ordered(chat, label)


# --- import: writing ----------------------------------------------------------------------------


def _generation_row(values: dict, title: str) -> dict:
    """An exported answer's row, each field checked as its column would take it; an answer
    still waiting or running when exported is interrupted here (no worker will write it)."""
    row = {}
    for name in GENERATION_FIELDS:
        if name not in values:
            continue
        column = Generation._meta.get_field(name)
        if values[name] is None and column.null:
            row[name] = None
            continue
        try:
            row[name] = column.clean(values[name], None)
        except ValidationError:
            raise bad_shape(
                gettext('An answer in the chat "%(title)s" has an unreadable %(field)s.')
                % {"title": title, "field": name}
            ) from None
    if row.get("status") not in {s.value for s in Generation.Status} or row["status"] in Generation.ACTIVE:
        row["status"] = Generation.Status.INTERRUPTED
    row.setdefault("max_tokens", settings.HOMEAI_MAX_TOKENS)
    row.setdefault("t_arrive_ns", 0)
    return row


def _store(chat: Chat, user) -> Conversation:
    conversation = Conversation.objects.create(
        user=user, title=chat.title, source=Conversation.Source.CHAT, **chat.settings
    )
    ids: dict[str, int] = {}
    dated: list[Message] = []
    answers: list[tuple[Generation, datetime | None, datetime | None]] = []
    for turn in chat.turns:
        message = Message.objects.create(
            conversation=conversation,
            parent_id=ids[turn.parent] if turn.parent is not None else None,
            role=turn.role,
            content=turn.content.replace("\x00", ""),  # PostgreSQL's text holds no NUL
        )
        ids[turn.key] = message.id
        if turn.created_at is not None:
            message.created_at = turn.created_at
            dated.append(message)
        if turn.generation is not None and turn.role == Message.Role.ASSISTANT:
            row = _generation_row(turn.generation, chat.title)
            generation = Generation.objects.create(user=user, conversation=conversation, message=message, **row)
            created = _time(turn.generation.get("created_at"))
            answers.append((generation, created, _time(turn.generation.get("finished_at"))))
    Message.objects.bulk_update(dated, ["created_at"], batch_size=500)
    for generation, created, finished in answers:
        generation.created_at = created or generation.created_at
        generation.finished_at = finished
    Generation.objects.bulk_update([g for g, _, _ in answers], ["created_at", "finished_at"], batch_size=500)
    leaf = ids.get(chat.current) if chat.current is not None else None
    # The chat keeps its own dates (update() leaves auto_now alone), so it sorts where it was.
    Conversation.objects.filter(id=conversation.id).update(
        current_leaf_id=leaf,
        created_at=chat.created_at or conversation.created_at,
        updated_at=chat.updated_at or chat.created_at or conversation.updated_at,
    )
    conversation.refresh_from_db()
    return conversation


def chats_import(*, user, data: bytes) -> list[Conversation]:
    """Every chat in an export file, stored as the importer's own, all or none."""
    chats = parse_chats(read_upload(data))
    if not chats:
        raise bad_shape(gettext("This export holds no chats."))
    with transaction.atomic():
        return [_store(chat, user) for chat in chats]
