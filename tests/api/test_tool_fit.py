"""What a request with more tools than the model can use is offered (api/answers.fit_tools), by
HOMEAI_TOOL_OVERFLOW, and what its X-HomeAI-Tools header will say."""

from __future__ import annotations

import pytest

from api.answers import fit_tools
from api.openai.parsing import parse_request
from tests.api.openwebui_tools import OPENWEBUI_TOOLS

pytestmark = [pytest.mark.django_db]

REMINDER = "Remind me to take the bins out tomorrow at 7am."


def request(choice="auto", schema=None):
    body = {"model": "m", "messages": [{"role": "user", "content": REMINDER}], "tools": OPENWEBUI_TOOLS}
    body["tool_choice"] = choice
    if schema:
        body["response_format"] = {"type": "json_schema", "json_schema": {"name": "s", "schema": schema}}
    return parse_request(body, chat=True, models={"m": "m"})


@pytest.mark.parametrize("overflow", ["matching", "none", "all"])
def test_the_overflow_setting_decides_what_is_offered_and_the_note_says_so(settings, overflow):
    settings.HOMEAI_TOOL_OVERFLOW = overflow
    req = request()
    fit_tools(req)
    if overflow == "all":
        assert len(req.output.tools) == 36 and req.tools_note == ""
    elif overflow == "none":
        assert req.output is None and req.tools_note == "0 of 36 offered"
    else:
        names = [t["name"] for t in req.output.tools]
        assert "create_calendar_event" in names and req.tools_note == f"{len(names)} of 36 offered"


def test_tools_that_fit_a_forced_choice_and_a_schema_alone_are_left_as_sent(settings):
    settings.HOMEAI_TOOL_SHARE = 10.0  # room for every tool
    req = request()
    fit_tools(req)
    assert len(req.output.tools) == 36 and req.tools_note == ""
    settings.HOMEAI_TOOL_SHARE = 0.25
    req = request(choice="required")
    fit_tools(req)
    assert len(req.output.tools) == 36 and req.tools_note == ""
    settings.HOMEAI_TOOL_OVERFLOW = "none"
    req = request(schema={"type": "object"})
    fit_tools(req)
    assert req.output.tools == () and req.output.schema == {"type": "object"}
