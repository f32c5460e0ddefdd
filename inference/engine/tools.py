"""What an answer must look like, and tool calls written as text: pure data, no llama.cpp.

Tool calls use the Hermes format that Qwen 2.5, Hermes and many other chat templates are
trained on: the functions listed in the system message inside <tools></tools>, each call written
as `<tool_call>\\n{"name": ..., "arguments": {...}}\\n</tool_call>`, each result sent back inside
<tool_response></tool_response> in a user turn. A model whose template renders tools itself
in this format gets them through its template (prompt.py); any other model gets the system
block below. The grammar (grammar.py) makes a call parse; parse_calls reads it back.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

CALL_OPEN = "<tool_call>"
CALL_CLOSE = "</tool_call>"
RESPONSE_OPEN = "<tool_response>"
RESPONSE_CLOSE = "</tool_response>"
MAX_PARALLEL_CALLS = 4  # a small model asked for "one or more" calls may otherwise never stop

TOOLS_SYSTEM = """# Tools

You may call one or more functions to assist with the user query.

You are provided with function signatures within <tools></tools> XML tags:
<tools>
{tools}
</tools>

For each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:
<tool_call>
{{"name": <function-name>, "arguments": <args-json-object>}}
</tool_call>"""

_SPACE = re.compile(r"\s*")
_DECODER = json.JSONDecoder()


@dataclass(frozen=True)
class OutputSpec:
    """What an answer must be, beyond free text.

    schema:      the answer is JSON matching this schema ({"type": "object"}: any JSON object)
    tools:       functions the model may call, each {"name", "description", "parameters"}
    tool_choice: "auto" (text or calls), "required" (one or more calls), or a function's name
    parallel:    more than one call per answer allowed
    """

    schema: dict | None = None
    tools: tuple[dict, ...] = ()
    tool_choice: str = "auto"
    parallel: bool = True

    @classmethod
    def from_dict(cls, data: dict | None) -> OutputSpec | None:
        """From a Generation's stored `output` ({} or None: free text)."""
        if not data:
            return None
        return cls(
            schema=data.get("schema"),
            tools=tuple(data.get("tools") or ()),
            tool_choice=data.get("tool_choice") or "auto",
            parallel=data.get("parallel", True),
        )

    def as_dict(self) -> dict:
        out: dict = {}
        if self.schema is not None:
            out["schema"] = self.schema
        if self.tools:
            out.update(tools=list(self.tools), tool_choice=self.tool_choice, parallel=self.parallel)
        return out

    @property
    def forced_tool(self) -> str | None:
        return self.tool_choice if self.tool_choice not in ("auto", "required") else None

    @property
    def offered_tools(self) -> tuple[dict, ...]:
        """The tools the grammar lets the model call (one, when tool_choice names it)."""
        if self.forced_tool is None:
            return self.tools
        return tuple(t for t in self.tools if t["name"] == self.forced_tool)


def tool_definitions(tools: tuple[dict, ...] | list[dict]) -> list[dict]:
    """The tools as OpenAI's wire writes them: what chat templates expect in `tools`."""
    return [{"type": "function", "function": tool} for tool in tools]


def tools_system_text(tools: tuple[dict, ...] | list[dict]) -> str:
    lines = "\n".join(json.dumps(t, ensure_ascii=False) for t in tool_definitions(tools))
    return TOOLS_SYSTEM.format(tools=lines)


def with_tools_in_system(messages: list[dict], tools: tuple[dict, ...] | list[dict]) -> list[dict]:
    """The conversation with the tools block at the end of its system message (one is added)."""
    block = tools_system_text(tools)
    if messages and messages[0]["role"] == "system":
        first = messages[0]["content"].rstrip()
        return [{"role": "system", "content": f"{first}\n\n{block}" if first else block}, *messages[1:]]
    return [{"role": "system", "content": block}, *messages]


def call_text(name: str, arguments: dict) -> str:
    body = json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False)
    return f"{CALL_OPEN}\n{body}\n{CALL_CLOSE}"


def response_text(content: str) -> str:
    return f"{RESPONSE_OPEN}\n{content}\n{RESPONSE_CLOSE}"


def history_turns(messages: list[dict]) -> list[dict]:
    """A client's messages as plain {role, content} turns, tool traffic written as text.

    messages: {"role", "content", "tool_calls": [{"name", "arguments"}]}, role also "tool".
    An assistant's calls follow its text; a run of tool results becomes one user turn (as
    Qwen's template renders them), so any chat template can render the conversation.
    """
    turns: list[dict] = []
    previous_tool = False
    for message in messages:
        role, content = message["role"], message.get("content") or ""
        if role == "tool":
            text = response_text(content)
            if previous_tool:
                turns[-1]["content"] += "\n" + text
            else:
                turns.append({"role": "user", "content": text})
            previous_tool = True
            continue
        previous_tool = False
        calls = message.get("tool_calls") or ()
        if role == "assistant" and calls:
            parts = [content.strip()] if content.strip() else []
            parts += [call_text(c["name"], c["arguments"]) for c in calls]
            content = "\n".join(parts)
        turns.append({"role": role, "content": content})
    return turns


def parse_calls(text: str) -> tuple[str, list[dict]]:
    """The answer's text before its first tool call, and its calls [{"name", "arguments"}].

    Each block is read as one JSON value, then its close tag: a string argument may itself hold
    "</tool_call>" (the grammar allows any string, and a small model writes one), so the block
    does not end at the first close tag. A block that is not a JSON object with a name and
    object arguments (an answer cut at max_tokens) is not a call: then the whole text is the
    content, and no call is returned.
    """
    start = text.find(CALL_OPEN)
    if start == -1:
        return text, []
    calls = []
    at = start
    while at != -1:
        try:
            call, end = _DECODER.raw_decode(text, _SPACE.match(text, at + len(CALL_OPEN)).end())
        except ValueError:
            return text, []
        end = _SPACE.match(text, end).end()
        if text.startswith(CALL_CLOSE, end):
            end += len(CALL_CLOSE)
        elif end != len(text):
            return text, []
        arguments = call.get("arguments") if isinstance(call, dict) else None
        if isinstance(arguments, str):  # some models write the arguments as a JSON string
            try:
                arguments = json.loads(arguments)
            except ValueError:
                return text, []
        if not isinstance(call, dict) or not isinstance(call.get("name"), str) or not isinstance(arguments, dict):
            return text, []
        calls.append({"name": call["name"], "arguments": arguments})
        at = text.find(CALL_OPEN, end)
    return text[:start].strip(), calls
