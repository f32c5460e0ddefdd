"""Open WebUI 0.12.4's default chat tools, as its chat requests send them (openwebui_tools.json).

The 36 built-in tools a chat offers when nothing is configured (no web search, image, code
interpreter, channel or attached-file tools, which need settings or attachments), each converted
from its function in open_webui/tools/builtin.py as Open WebUI converts them (the docstring's
text before `:param` as the description, each parameter's type, default and `:param` text
through a pydantic model, nulls dropped: utils/tools.py). About 26 KB of JSON; 7,368 prompt
tokens as the bundled chat model reads the block, 7,170 as Gemma 3 does.
"""

from __future__ import annotations

import json
from pathlib import Path

OPENWEBUI_TOOLS: list[dict] = json.loads((Path(__file__).parent / "openwebui_tools.json").read_text())
FUNCTIONS: tuple[dict, ...] = tuple(tool["function"] for tool in OPENWEBUI_TOOLS)

# A function with a free string argument: a forced call to it runs as long as max_tokens lets it.
WRITE_NOTE = {
    "name": "write_note",
    "description": "Create a new note with the given title and content",
    "parameters": {
        "type": "object",
        "properties": {"title": {"type": "string"}, "content": {"type": "string"}},
        "required": ["title", "content"],
    },
}
