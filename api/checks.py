"""What a request may ask, checked alike for OpenAI's and Ollama's APIs: the body, the model,
messages, tools and schemas, and the client's name. The two APIs differ in their shapes, not in
what a request may ask. Pure functions (no database, no I/O), so every rule is testable alone.
"""

from __future__ import annotations

import json
import re

from django.conf import settings

from api.errors import ApiError, bad_request
from inference.engine.schema_size import first_repeat_over
from inference.engine.tools import OutputSpec, history_turns

CLIENT_CHARS = 32
_CLIENT_SAFE = re.compile(r"[^A-Za-z0-9._ /:@+()-]")
_TOOL_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
SCHEMA_CHARS = 64_000  # a JSON schema this long already makes a grammar of thousands of rules


def parse_body(raw: bytes) -> dict:
    try:
        data = json.loads(raw or b"null")
    except ValueError:
        raise ApiError(400, "The request body is not valid JSON.", code="invalid_json") from None
    except RecursionError:
        raise ApiError(400, "The request body is nested too deeply.", code="invalid_json") from None
    if not isinstance(data, dict):
        raise ApiError(400, "The request body must be a JSON object.", code="invalid_json")
    return data


def check_model(data: dict, models: dict[str, str], listing: str = "GET /v1/models") -> str:
    """The model asked for, as the client spelled it (models: every accepted spelling -> its
    file, the default first), or the default when none is named (many clients send what they
    were told). Ollama's clients add the tag ":latest" to a name that has none."""
    model = data.get("model")
    if model is None or model == "":
        return next(iter(models))
    if not isinstance(model, str):
        raise bad_request(f"model must be a string: a name from {listing}.", "model", "invalid_type")
    for spelling in (model, model.removesuffix(":latest")):
        if spelling in models:
            return spelling
    runs = ", ".join(dict.fromkeys(models.values()))
    raise ApiError(
        404,
        f"The model {model!r} does not exist here; this server runs {runs} (see {listing}).",
        code="model_not_found",
        param="model",
    )


def _content_text(content, index: int) -> str:
    """A message's text: a string, or OpenAI's list of content parts (text parts only)."""
    if isinstance(content, str):
        return content
    if content is None:
        return ""
    if isinstance(content, list):
        texts = []
        for part in content:
            if not isinstance(part, dict) or part.get("type") != "text" or not isinstance(part.get("text"), str):
                raise bad_request(
                    f"messages[{index}].content: only text parts are supported (no images or audio).",
                    f"messages[{index}].content",
                    "unsupported_value",
                )
            texts.append(part["text"])
        return "\n".join(texts)
    raise bad_request(
        f"messages[{index}].content must be a string or a list of text parts.", f"messages[{index}].content"
    )


ROLES = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant", "tool": "tool"}


def tool_calls(message: dict, index: int) -> list[dict]:
    """A message's tool calls as [{"name", "arguments"}]: OpenAI's (arguments a JSON string) or
    Ollama's (arguments an object)."""
    calls = message.get("tool_calls")
    if calls is None or calls == []:
        return []
    where = f"messages[{index}].tool_calls"
    if not isinstance(calls, list):
        raise bad_request(f"{where} must be a list of calls.", where, "invalid_type")
    out = []
    for call in calls:
        function = call.get("function") if isinstance(call, dict) else None
        name = function.get("name") if isinstance(function, dict) else None
        arguments = function.get("arguments") if isinstance(function, dict) else None
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments) if arguments.strip() else {}
            except ValueError:
                arguments = None
        if not isinstance(name, str) or not isinstance(arguments, dict):
            raise bad_request(
                f"Each of {where} needs function.name and function.arguments (a JSON object).", where, "invalid_value"
            )
        out.append({"name": name, "arguments": arguments})
    return out


def parse_messages(data: dict, *, content=None) -> list[dict]:
    """The conversation as stored turns ({role, content}), tool calls and results written as
    text (engine/tools.py). content(value, index) reads one message's text."""
    read = content or _content_text
    messages = data.get("messages")
    if not isinstance(messages, list) or not messages:
        raise bad_request("messages must be a non-empty list of {role, content} objects.", "messages", "invalid_type")
    limit = settings.HOMEAI_MAX_MESSAGES
    if len(messages) > limit:
        raise bad_request(
            f"This request has {len(messages):,} messages; the limit is {limit:,}. Send the recent part "
            "of the conversation (the model only reads what fits its context anyway).",
            "messages",
            "too_many_messages",
        )
    turns = []
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            raise bad_request(
                f"messages[{i}] must be an object with a role and content.", f"messages[{i}]", "invalid_type"
            )
        role = message.get("role")
        if role not in ROLES:
            raise bad_request(
                f"messages[{i}].role must be system, developer, user, assistant or tool.", f"messages[{i}].role"
            )
        text = read(message.get("content"), i)
        calls = tool_calls(message, i) if role == "assistant" else []
        if not text.strip() and not calls and i != len(messages) - 1:
            continue  # an empty turn in the history adds nothing to the prompt
        turns.append({"role": ROLES[role], "content": text, "tool_calls": calls})
    return history_turns(turns)


def check_schema(schema, field: str) -> dict:
    """A JSON schema the answer must match: an object, of a size a grammar can be built from: not
    too long, and no count of repetitions (minItems, maxLength, a pattern's {n}, ...) above
    HOMEAI_SCHEMA_MAX_REPEAT, which the grammar would write out in full (engine/schema_size.py).
    Its meaning is checked where the grammar is built (the worker), which names what it refuses."""
    if not isinstance(schema, dict):
        raise bad_request(f"{field} must be a JSON schema (an object).", field, "invalid_type")
    limit = settings.HOMEAI_SCHEMA_MAX_REPEAT
    try:
        if len(json.dumps(schema)) > SCHEMA_CHARS:
            raise bad_request(f"{field} is longer than {SCHEMA_CHARS:,} characters.", field, "invalid_value")
        repeat = first_repeat_over(schema, limit)
    except RecursionError:
        raise bad_request(f"{field} is nested too deeply.", field, "invalid_value") from None
    if repeat is not None:
        raise bad_request(repeat.sentence(field, limit), field, "invalid_value")
    return schema


def parse_tools(data: dict) -> tuple[dict, ...]:
    """The functions offered, each {"name", "description", "parameters"} (OpenAI's and Ollama's shape)."""
    tools = data.get("tools")
    if tools is None or tools == []:
        return ()
    if not isinstance(tools, list):
        raise bad_request("tools must be a list of functions.", "tools", "invalid_type")
    out = []
    for k, tool in enumerate(tools):
        function = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(function, dict) or tool.get("type", "function") != "function":
            raise bad_request(
                f'tools[{k}] must be {{"type": "function", "function": {{"name", "description", "parameters"}}}}.',
                f"tools[{k}]",
                "invalid_value",
            )
        name = function.get("name")
        if not isinstance(name, str) or not _TOOL_NAME.match(name):
            raise bad_request(
                f"tools[{k}].function.name must be 1 to 64 letters, digits, '_', '.' or '-'.",
                f"tools[{k}].function.name",
            )
        if any(t["name"] == name for t in out):
            raise bad_request(f"Two tools are named {name!r}.", f"tools[{k}].function.name")
        parameters = function.get("parameters") or {"type": "object", "properties": {}}
        description = function.get("description")
        out.append(
            {
                "name": name,
                "description": description if isinstance(description, str) else "",
                "parameters": check_schema(parameters, f"tools[{k}].function.parameters"),
            }
        )
    return tuple(out)


def tool_choice(choice, tools: tuple[dict, ...], *, reset=None, messages=None) -> str | None:
    """auto, required or a tool's name; None for "none" (the tools are then left out).

    reset (the request's reset_tool_choice): a forced choice is "auto" once tool results follow
    the last user message. An agent loop that sends the same body back with the results (Open
    WebUI's) would otherwise be made to call a tool again, forever; this is the OpenAI Agents
    SDK's reset_tool_choice, done by the server for clients that cannot change the body."""
    choice = _tool_choice(choice, tools)
    if reset is not None and not isinstance(reset, bool):
        raise bad_request("reset_tool_choice must be true or false.", "reset_tool_choice", "invalid_type")
    if reset and choice not in (None, "auto") and _tools_answered(messages):
        return "auto"
    return choice


def _tools_answered(messages) -> bool:
    """Whether a tool result comes after the last user message."""
    for message in reversed(messages if isinstance(messages, list) else ()):
        role = message.get("role") if isinstance(message, dict) else None
        if role == "tool":
            return True
        if role == "user":
            return False
    return False


def _tool_choice(choice, tools: tuple[dict, ...]) -> str | None:
    if choice is None or choice == "auto":
        return "auto"
    if choice == "none":
        return None
    if choice == "required":
        if not tools:
            raise bad_request('tool_choice "required" needs tools, and this request sends none.', "tool_choice")
        return "required"
    if isinstance(choice, dict) and choice.get("type") == "function" and isinstance(choice.get("function"), dict):
        name = choice["function"].get("name")
        if any(t["name"] == name for t in tools):
            return name
        raise bad_request(f"tool_choice names {name!r}, which is not one of the tools.", "tool_choice")
    raise bad_request(
        'tool_choice must be "none", "auto", "required" or {"type": "function", "function": {"name": …}}.',
        "tool_choice",
    )


def output_spec(schema: dict | None, tools: tuple[dict, ...], choice: str | None, parallel) -> OutputSpec | None:
    if parallel is not None and not isinstance(parallel, bool):
        raise bad_request("parallel_tool_calls must be true or false.", "parallel_tool_calls", "invalid_type")
    if choice is None:
        tools = ()
    if schema is None and not tools:
        return None
    return OutputSpec(schema=schema, tools=tools, tool_choice=choice or "auto", parallel=parallel is not False)


def check_collections(ids) -> list[int] | None:
    """Our extension `collections` (both APIs): ids of document collections the answer is drawn
    from, None when not asked. Each is checked readable by the key's person when the answer is
    stored (inference.services.chat_documents.readable_choice: a 404 otherwise)."""
    if ids is None:
        return None
    if not isinstance(ids, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in ids):
        raise bad_request("collections must be a list of collection ids (integers).", "collections", "invalid_type")
    return ids


def client_name(headers) -> str:
    """The dashboard's tag for a request: X-Client-Name, else the User-Agent's product, else "api".

    "chat" is reserved: the worker routes chat answers to the user's sockets, not this request.
    """
    name = (headers.get("X-Client-Name") or "").strip()
    if not name:
        agent = (headers.get("User-Agent") or "").strip()
        name = agent.split(" ", 1)[0].split("/", 1)[0] if agent else ""
    name = _CLIENT_SAFE.sub("", name).strip()[:CLIENT_CHARS]
    if not name or name.lower() == "chat":
        return "api" if not name else "api-chat"
    return name
