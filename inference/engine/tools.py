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
# A small model shown tool results often writes its answer as one more result of its own (the
# bundled chat model began most of its answers after a call so): the tool's markup is never
# shown as the answer's text (the longer forms first, so the line they take goes with them).
RESPONSE_MARKUP = (f"{RESPONSE_OPEN}\n", f"\n{RESPONSE_CLOSE}", RESPONSE_OPEN, RESPONSE_CLOSE)
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
    """The tools as OpenAI's wire writes them (what chat templates expect in `tools`), by name:
    the same set renders the same bytes whatever order a client sends it in (one that builds
    its list from a set or a dict of plugins may not keep one), so the block is a prefix the
    cache can reuse. Each function's own keys stay as sent."""
    return [{"type": "function", "function": tool} for tool in sorted(tools, key=lambda tool: tool["name"])]


def tools_system_text(tools: tuple[dict, ...] | list[dict]) -> str:
    lines = "\n".join(json.dumps(t, ensure_ascii=False) for t in tool_definitions(tools))
    return TOOLS_SYSTEM.format(tools=lines)


def with_tools_in_system(messages: list[dict], tools: tuple[dict, ...] | list[dict]) -> list[dict]:
    """The conversation with the tools block at the start of its system message (one is added).

    First, so that the prompt begins with the same tokens on every request that sends the same
    tools: the per-person prefix cache then reuses the block's KV (thousands of tokens for a
    client such as Open WebUI), though the client's system text changes with each request
    (a date, a time, memories it adds)."""
    block = tools_system_text(tools)
    if messages and messages[0]["role"] == "system":
        first = messages[0]["content"].strip()
        return [{"role": "system", "content": f"{block}\n\n{first}" if first else block}, *messages[1:]]
    return [{"role": "system", "content": block}, *messages]


# Tool text per token, measured on Open WebUI's 36 default tools (tests/api/openwebui_tools.json):
# 3.64 characters a token with the bundled chat model's tokenizer, 3.74 with Gemma 3's. The web
# has no tokenizer, so it reckons a block's tokens as its characters / 3: a little high.
CHARS_PER_TOKEN = 3.0
_WORD = re.compile(r"[a-z0-9]+")
# Words that say nothing about which function fits a question.
_COMMON = frozenset(
    "a about all an and answer any are as at be by can could do does for from get give have how i in is it "
    "its me my now of on one or please sentence short should tell than that the their them there this to "
    "us use was we what when where which who why will with would you your".split()
)


def tool_tokens(tools: tuple[dict, ...] | list[dict]) -> int:
    """About how many prompt tokens the tools' block takes (CHARS_PER_TOKEN)."""
    return int(len(tools_system_text(tools)) / CHARS_PER_TOKEN) + 1 if tools else 0


def _stems(text: str) -> set[str]:
    words = _WORD.findall(text.lower().replace("_", " "))
    return {w[:-1] if len(w) > 3 and w.endswith("s") else w for w in words if w not in _COMMON}


def matching_tools(tools: tuple[dict, ...], text: str, budget: int) -> tuple[dict, ...]:
    """The tools whose name or description share words with text (the conversation), best
    first while their block stays within budget tokens; in the order they were sent.

    A lexical score: a word of the name counts 2, of the description 1 (a plural is its
    singular; common words count nothing). A tool that shares no word is never offered."""
    asked = _stems(text)
    scored = []
    for i, tool in enumerate(tools):
        name, words = _stems(tool["name"]), _stems(tool.get("description") or "")
        score = 2 * len(asked & name) + len(asked & (words - name))
        if score:
            scored.append((-score, i))
    chosen: list[int] = []
    size = len(TOOLS_SYSTEM.format(tools="")) - 1  # the block's characters: its frame, then a line a tool
    for _, i in sorted(scored):
        line = len(json.dumps(tool_definitions([tools[i]])[0], ensure_ascii=False)) + 1
        if (size + line) / CHARS_PER_TOKEN + 1 <= budget:
            chosen.append(i)
            size += line
    return tuple(tools[i] for i in sorted(chosen))


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


def answer_calls(text: str, spec: OutputSpec | None, finish_reason: str | None) -> tuple[str, list[dict]]:
    """The answer's text and its calls, as parse_calls reads them; with tools offered, a call
    cut at max_tokens (finish_reason "length") is still a call, never text a client would take
    for the answer: its name and what was written of its arguments (cut_call). The grammar does
    not bound a string argument (a note's text may be long, and no bound fits every tool), so
    an argument that runs to max_tokens is what OpenAI's API returns then: a call, with
    finish_reason "length"."""
    if spec is None or not spec.tools:
        return text, []
    content, calls = parse_calls(text)
    start = text.find(CALL_OPEN)
    if calls or finish_reason != "length" or start == -1:
        return content, calls
    before, calls = parse_calls(text[:start])[0], []
    at = start
    while at != -1:  # the complete calls before the cut one
        end = text.find(CALL_OPEN, at + len(CALL_OPEN))
        parsed = parse_calls(text[at:end])[1] if end != -1 else []
        if not parsed:
            break
        calls += parsed
        at = end
    return before.strip(), [*calls, cut_call(text[at:], spec.offered_tools)]


_NAME = re.compile(r'\s*\{\s*"name"\s*:\s*"((?:[^"\\]|\\.)*)("?)\s*,?\s*(?:"arguments"\s*:\s*)?')


def cut_call(text: str, tools: tuple[dict, ...]) -> dict:
    """A call cut short, from its <tool_call> on: {"name", "arguments", "written"}. written is
    its arguments' JSON as far as it was written; arguments that JSON closed where it stopped
    (a string cut mid-way ends there; a key without its value is left out). The grammar writes
    the name first, and only an offered tool's: a name cut short is the offered one it begins."""
    body = text[len(CALL_OPEN) :]
    match = _NAME.match(body)
    written = body[match.end() :] if match and match.group(2) else ""
    name = match.group(1) if match else ""
    names = [tool["name"] for tool in tools if tool["name"].startswith(name)]
    if len(names) == 1:
        name = names[0]
    return {"name": name, "arguments": _closed(written), "written": written}


def _closed(written: str) -> dict:
    """The JSON object a cut text began, closed where it stopped; {} when nothing of it is whole."""
    stack: list[str] = []
    cuts: list[tuple[int, list[str]]] = []
    in_string = escaped = False
    for i, char in enumerate(written):
        if in_string:
            escaped, in_string = (False, True) if escaped else (char == "\\", char != '"')
        elif char == '"':
            in_string = True
        elif char in "{[":
            stack.append("}" if char == "{" else "]")
            cuts.append((i + 1, list(stack)))
        elif char in "}]" and stack:
            stack.pop()
        elif char == ",":
            cuts.append((i, list(stack)))
    whole = (written[:-1] if escaped else written) + ('"' if in_string else "")
    for candidate, open_ in [(whole, stack), *((written[:i], kept) for i, kept in reversed(cuts))]:
        try:
            value = json.loads(candidate + "".join(reversed(open_)))
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return {}
