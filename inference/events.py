"""Every event that goes over the wire, built in one place.

Three streams (the README's WebSocket contract):
- `generation.*`: one answer's life, for its owner only (the chat socket, or the API request
  waiting on it): queued, phase, token, done, error.
- `conversation.*`: replies to the chat socket that asked: the branch now on show, the settings.
- `request.*`, `engine.steps`, `system.status`: the dashboard's feed, metrics and user names
  but never message text, so every signed-in viewer may have them.
- `index.progress`: a collection's indexing, for those who may read the collection (its page).

Readers compare `event["type"]` with the constants here, never with a string of their own.
"""

from __future__ import annotations

import time

from inference.models import Conversation, Generation
from infra.errors import ClientError

QUEUED = "generation.queued"
PHASE = "generation.phase"
TOKEN = "generation.token"
TOOL = "generation.tool"
DONE = "generation.done"
ERROR = "generation.error"
SYNC = "generation.sync"
ENDS = (DONE, ERROR)

SPEECH_AUDIO = "speech.audio"
SPEECH_END = "speech.end"

BRANCH = "conversation.branch"
SETTINGS = "conversation.settings"

REQUEST_UPDATE = "request.update"
REQUEST_DONE = "request.done"
ENGINE_STEPS = "engine.steps"
SYSTEM_STATUS = "system.status"

INDEX_PROGRESS = "index.progress"

GONE_MESSAGE = "The answer was deleted."
UNWRITTEN_MESSAGE = "The answer could not be written."


# --- one answer, for its owner ------------------------------------------------------------------


def queued(generation: Generation, *, position: int, title: str) -> dict:
    """message: the answer's message; user_message: the message it answers."""
    return {
        "type": QUEUED,
        "generation": generation.id,
        "conversation": generation.conversation_id,
        "conversation_title": title,
        "position": position,
        "message": generation.message_id,
        "user_message": generation.message.parent_id,
    }


def phase(generation_id: int, phase: str, **fields) -> dict:
    """Where an answer is: queued (with its position), load, prefill (done/total), decode, notice."""
    return {"type": PHASE, "generation": generation_id, "phase": phase, **fields}


def token(generation_id: int, text: str, t_ms: float) -> dict:
    return {"type": TOKEN, "generation": generation_id, "text": text, "t_ms": round(t_ms, 3)}


def tool(generation_id: int, card: dict, *, text: str) -> dict:
    """A chat answer's tool call, as its card now stands (status running, confirm, done, error,
    refused), and the answer's text so far without the call (the page shows the card instead)."""
    return {"type": TOOL, "generation": generation_id, "call": card, "text": text}


def done(generation: Generation, *, text: str) -> dict:
    """The end of an answer that was written (done) or stopped (cancelled), from its stored row."""
    event = {
        "type": DONE,
        "generation": generation.id,
        "status": generation.status,
        "text": text,
        "notice": generation.notice,
        "metrics": generation.metrics(),
        "sources": generation.sources,
    }
    if generation.tool_calls:
        event["tool_calls"] = generation.tool_calls
    return event


def error(generation_id: int | None, code: str, message: str, *, text: str | None = None) -> dict:
    """text: an ended answer's text as saved (an interrupted answer keeps what was written)."""
    event = {"type": ERROR, "generation": generation_id, "code": code, "message": message}
    if text is not None:
        event["text"] = text
    return event


def speech_audio(generation_id: int, index: int) -> dict:
    """One sentence of an answer read aloud is ready: the page fetches its WAV (chat's speech view)."""
    return {"type": SPEECH_AUDIO, "generation": generation_id, "index": index}


def speech_end(generation_id: int, count: int, *, code: str = "", message: str = "") -> dict:
    """The reading is over: count sentences were sent; code and message when it failed."""
    return {"type": SPEECH_END, "generation": generation_id, "count": count, "code": code, "message": message}


def client_error(exc: ClientError) -> dict:
    """A refused message, told to the socket that sent it."""
    return error(exc.generation, exc.code, exc.message)


def sync(generation: Generation) -> dict:
    """An answer still queued or running, as the database has it (its text is saved as it
    streams): what a socket that may have missed events is told when it asks (chat.sync)."""
    return {"type": SYNC, "generation": generation.id, "status": generation.status, "text": generation.message.content}


def final(generation: Generation | None, generation_id: int) -> dict | None:
    """The end of an answer as its row tells it (None while it is queued or running): what a
    client that missed the live event is told."""
    if generation is None:
        return error(generation_id, "gone", GONE_MESSAGE)
    if generation.is_active:
        return None
    if generation.status in (Generation.Status.DONE, Generation.Status.CANCELLED):
        return done(generation, text=generation.message.content)
    code = generation.error_code or generation.status
    return error(generation_id, code, generation.error_message or UNWRITTEN_MESSAGE, text=generation.message.content)


# --- one conversation, for the socket that asked -------------------------------------------------


def branch(conversation: Conversation, history: list[dict]) -> dict:
    """The branch on show, root first (selectors.conversation_history's turns)."""
    return {
        "type": BRANCH,
        "conversation": conversation.id,
        "conversation_title": conversation.title,
        "messages": history,
    }


def settings(conversation: Conversation) -> dict:
    return {"type": SETTINGS, "conversation": conversation.id, "settings": conversation.settings()}


# --- the dashboard's feed -----------------------------------------------------------------------


def _request(generation: Generation, type_: str, status: str) -> dict:
    return {
        "type": type_,
        "generation": generation.id,
        "user_id": generation.user_id,
        "username": generation.user.username,
        "client": generation.client,
        "model": generation.model_name,
        "status": status,
        "t_arrive": generation.t_arrive_ns / 1e9,
        "t": time.time(),
    }


def request_update(
    generation: Generation,
    *,
    phase: str,
    status: str = "running",
    prompt_tokens: int | None = None,
    prefill_done: int | None = None,
    output_tokens: int = 0,
) -> dict:
    """A request in flight (metrics only, never text)."""
    return {
        **_request(generation, REQUEST_UPDATE, status),
        "phase": phase,
        "prompt_tokens": prompt_tokens,
        "prefill_done": prefill_done,
        "output_tokens": output_tokens,
    }


def request_done(generation: Generation) -> dict:
    """A request that ended (reads the stored row)."""
    metrics = {**generation.metrics(), "token_times_ms": generation.token_times_ms, "itl_ms": generation.itl_ms}
    return {**_request(generation, REQUEST_DONE, generation.status), "metrics": metrics}


def engine_steps(worker: str, steps: list[dict]) -> dict:
    return {"type": ENGINE_STEPS, "worker": worker, "steps": steps}


def system_status(snapshot: dict) -> dict:
    return {"type": SYSTEM_STATUS, **snapshot}


# --- a collection's indexing, for its readers ----------------------------------------------------


def index_progress(state: dict) -> dict:
    """A collection's indexing as it stands (documents.selectors.index_state's shape)."""
    return {"type": INDEX_PROGRESS, **state}
