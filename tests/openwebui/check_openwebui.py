"""Open WebUI chatting through HomeAI, checked in its own UI: what scripts/check-openwebui.sh runs
once it has started HomeAI and Open WebUI (it sets the OWUI_CHECK_* variables below), in one of
two cases (OWUI_CHECK_CASE).

defaults: Open WebUI as installed, only its connections set. For each of its two connections to
HomeAI, its OpenAI one (`/v1`) and its Ollama one:

1. "What is a NAS good for? Answer in one sentence." to the connection's model, in a new chat,
   with everything Open WebUI sends by default (its 36 built-in tools among it), is answered
   in words: no error, no tool-call markup.
2. A second message in that chat is answered too, and HomeAI's rows say its prompt reused the
   first one's (the tool block HomeAI offered, the question, the answer) from the cache:
   cached tokens at least 95% of the first prompt. Each answer's TTFT is printed, to record.

custom: the workspace a household sets up for tools. For each connection:

1. A message to the connection's model streams: the answer grows in the page, seen by a
   MutationObserver, in several steps before its last.
2. A message to a workspace model with a tool (the house weather tool, Python in Open WebUI's
   workspace, called in its "Native" function calling: Open WebUI sends `tools`, HomeAI answers
   `tool_calls`, Open WebUI runs the tool and sends its result back) shows the tool's result
   in the page, and the model then answers in text, without a second call. The workspace
   model's custom parameters force the call (`tool_choice: "required"`, which the 135M model
   needs) until the tool has answered (`reset_tool_choice: true`; docs/api.md, "Tools"), so
   the loop ends.
3. HomeAI's rows say the same: each request tagged with its connection (the X-Client-Name
   header set on the connection), the forced call, then an unforced answer that read the
   tool's result, all done, and the dashboard lists them.

export: Open WebUI with its defaults, a chat of two questions over the OpenAI connection whose
second answer is regenerated (two versions), written to OWUI_CHECK_EXPORT as its "Export chat
(.json)" writes it; tests/inference/test_transfer.py imports that file.

It is a script, not a pytest module: it needs Open WebUI (7.4 GB installed) and both
servers running, and `make test` must not collect it. Exit status 0 only when every step passed.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "homeai.settings")
# Playwright's sync API runs an event loop in this thread; the ORM reads here are plain reads.
os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
django.setup()

from django.contrib.auth import get_user_model  # noqa: E402
from playwright.sync_api import TimeoutError as PlaywrightTimeout  # noqa: E402
from playwright.sync_api import sync_playwright  # noqa: E402

from dashboard.latency.payload import dashboard_rows, parse_filters  # noqa: E402
from inference.engine.tools import CALL_OPEN, RESPONSE_OPEN  # noqa: E402
from inference.models import Generation  # noqa: E402
from tests.infra.pull.servers import push_ollama_model, tiny_gguf  # noqa: E402
from tests.support import CHROMIUM, CHROMIUM_ARGS  # noqa: E402

WEBUI = os.environ.get("OWUI_CHECK_WEBUI_URL", "http://127.0.0.1:8811")
MODEL = os.environ.get("OWUI_CHECK_MODEL", "SmolLM2-135M-Instruct.Q4_1.gguf")
HOMEAI_USER = os.environ.get("OWUI_CHECK_HOMEAI_USER", "house")
SHOTS = os.environ.get("OWUI_CHECK_SHOTS", "")  # a folder for screenshots, or none
EXPORT = os.environ.get("OWUI_CHECK_EXPORT", "")  # the export case's file
CASE = os.environ.get("OWUI_CHECK_CASE", "defaults")
REGISTRY = os.environ.get("OWUI_CHECK_REGISTRY_URL", "")  # the pull step's docker-registry (defaults)
PULLED = "owui-pull-check:latest"  # the model the pull step pulls, lists and deletes
NAS_QUESTION = "What is a NAS good for? Answer in one sentence."
FOLLOW_UP = "And for photos?"
EMAIL, PASSWORD = "house@example.org", "an open-webui check passphrase"
CONNECTIONS = ("openai", "ollama")  # the prefix each connection gives its models' names
ANSWER_TIMEOUT_MS = 300_000  # a busy 2-core box; the answers themselves take seconds
TOOL_RESULT = "House weather station: 18 degrees and sunny in"
TOOL_SOURCE = f'''"""
title: House weather
description: The weather in a city, from the house's own station.
"""


class Tools:
    def get_weather(self, city: str) -> str:
        """
        Get the current weather in a city.
        :param city: The city's name.
        """
        return f"{TOOL_RESULT} {{city}}."
'''

# Records the text of the newest answer in the page each time the page changes.
WATCH_ANSWER = """() => {
  window.__answer = [];
  new MutationObserver(() => {
    const answers = document.querySelectorAll('.chat-assistant #response-content-container');
    const last = answers[answers.length - 1];
    const text = last ? last.innerText.trim() : '';
    const seen = window.__answer;
    if (text && (!seen.length || seen[seen.length - 1].text !== text)) seen.push({t: performance.now(), text});
  }).observe(document.body, {subtree: true, childList: true, characterData: true});
}"""


def api(path: str, body: dict | None = None, token: str | None = None) -> dict:
    """Open WebUI's REST API, as its admin (the first account made is the admin)."""
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    data = json.dumps(body).encode() if body is not None else None
    with urllib.request.urlopen(urllib.request.Request(WEBUI + path, data=data, headers=headers), timeout=60) as r:
        return json.load(r)


def sign_up() -> str:
    """The first account (Open WebUI's admin); its token."""
    return api("/api/v1/auths/signup", {"name": "House", "email": EMAIL, "password": PASSWORD})["token"]


def set_up_workspace() -> None:
    """What a household does once in Open WebUI's admin pages and workspace, through its API:
    the tool, and a model with the tool per connection."""
    token = sign_up()
    api(
        "/api/v1/tools/create",
        {"id": "house_weather", "name": "House weather", "content": TOOL_SOURCE, "meta": {}},
        token,
    )
    for connection in CONNECTIONS:
        # Admin settings -> Models -> the connection's model -> Capabilities: "Builtin Tools" off.
        # Otherwise every chat offers Open WebUI's 36 built-in tools (memory, notes, search...),
        # a 7,000-token prompt that a 4,096-token context refuses.
        plain = f"{connection}.{MODEL}"
        api(
            "/api/v1/models/create",
            {"id": plain, "name": plain, "meta": {"capabilities": {"builtin_tools": False}}, "params": {}},
            token,
        )
        api(
            "/api/v1/models/create",
            {
                "id": f"weather-{connection}",
                "base_model_id": f"{connection}.{MODEL}",
                "name": f"Weather ({connection})",
                "meta": {
                    "description": "HomeAI with the house weather tool",
                    "toolIds": ["house_weather"],
                    "capabilities": {"builtin_tools": False},  # only the house's tool is offered
                },
                "params": {
                    "function_calling": "native",
                    "temperature": 0,
                    "custom_params": {"tool_choice": "required", "reset_tool_choice": True},
                },
            },
            token,
        )


def sign_in(page) -> None:
    page.goto(WEBUI + "/auth", timeout=120_000)
    page.fill("input[type=email]", EMAIL)
    page.fill("input[type=password]", PASSWORD)
    page.locator("button[type=submit]").click()
    page.locator("#chat-input").wait_for(timeout=120_000)
    release_notes = page.get_by_text("Okay, Let's Go!")  # shown once to a new account
    try:
        release_notes.click(timeout=5_000)
    except PlaywrightTimeout:  # not shown: nothing to close
        pass


def ask(page, model_label: str, text: str, shot: str) -> dict:
    """A new chat with the model picked from the selector: send text, wait for the answer to end."""
    page.goto(WEBUI + "/")  # a new chat
    page.locator("#chat-input").wait_for()
    page.locator("button[aria-label^='Selected model']").click()
    page.fill("#model-search-input", model_label)
    page.locator(f"button[role=option][aria-label='Select {model_label} model']").click()
    page.evaluate(WATCH_ANSWER)
    page.locator("#chat-input").click()
    page.keyboard.type(text)
    page.keyboard.press("Enter")
    # The answer's actions (Regenerate among them) appear once it has ended.
    page.locator(".chat-assistant").last.wait_for(timeout=ANSWER_TIMEOUT_MS)
    page.locator("button[aria-label='Regenerate']").last.wait_for(timeout=ANSWER_TIMEOUT_MS)
    tool = page.locator("[id$='-tool-call'] [role=button]")
    if tool.count():
        tool.first.click()  # open the call, so its result is in the page
        page.get_by_text(TOOL_RESULT).first.wait_for(timeout=10_000)
    if SHOTS:
        page.screenshot(path=str(Path(SHOTS) / f"{shot}.png"), full_page=True)
    content = page.locator(".chat-assistant #response-content-container").last.inner_text().strip()
    return {"seen": page.evaluate("window.__answer"), "content": content, "tool_calls": tool.count()}


def streamed(seen: list[dict]) -> tuple[bool, str]:
    """Whether the answer arrived in steps: at least three versions of its text in the page, the
    last longer than the first (Markdown may redraw a line, so each need not extend the last)."""
    if not seen:
        return False, "no answer seen"
    span = (seen[-1]["t"] - seen[0]["t"]) / 1000
    lengths = " -> ".join(str(len(v["text"])) for v in seen[:3]) + f" ... {len(seen[-1]['text'])} characters"
    ok = len(seen) >= 3 and len(seen[-1]["text"]) > len(seen[0]["text"])
    return ok, f"{len(seen)} versions over {span:.1f} s ({lengths})"


def rows_since(first_id: int, client: str) -> list[Generation]:
    return list(Generation.objects.filter(id__gt=first_id, client=client).order_by("id"))


def check_rows(rows: list[Generation]) -> tuple[bool, str, str]:
    """One forced call, then, last, an answer that read the tool's result, all done; and that answer."""
    call = [g for g in rows if g.output.get("tool_choice") == "required" and CALL_OPEN in g.message.content]
    answer = [
        g
        for g in rows
        if g.output.get("tool_choice") == "auto"
        and CALL_OPEN not in g.message.content
        and any(RESPONSE_OPEN in m.content and TOOL_RESULT in m.content for m in g.conversation.messages.all())
    ]
    done = all(g.status == Generation.Status.DONE for g in rows)
    what = ", ".join(f"#{g.id} {g.output.get('tool_choice') or 'text'} {g.status}" for g in rows)
    ok = len(call) == 1 and bool(answer) and answer[-1] == rows[-1] and answer[-1].id > call[0].id and done
    return ok, what, answer[-1].message.content if answer else ""


def last_id() -> int:
    return Generation.objects.order_by("-id").values_list("id", flat=True).first() or 0


def chat_row(after: int, client: str, text: str) -> Generation | None:
    """The answer to the chat message `text` (not one of Open WebUI's side tasks, whose prompts
    quote the chat): the row whose conversation's last message is that text, once it ended."""
    for generation in Generation.objects.filter(id__gt=after, client=client).order_by("id"):
        message = generation.message.parent
        if message is not None and message.content == text and generation.status not in Generation.ACTIVE:
            return generation
    return None


def follow_up(page, text: str, after: int, client: str) -> Generation | None:
    """A second message in the open chat; its row once HomeAI has answered it."""
    page.locator("#chat-input").click()
    page.keyboard.type(text)
    page.keyboard.press("Enter")
    deadline = time.monotonic() + ANSWER_TIMEOUT_MS / 1000
    while time.monotonic() < deadline:
        row = chat_row(after, client, text)
        if row is not None:
            page.locator(".chat-assistant").nth(1).wait_for(timeout=ANSWER_TIMEOUT_MS)
            return row
        time.sleep(1)
    return None


def ttft(row: Generation | None) -> str:
    if row is None:
        return "no row"
    served = row.client_ttft_ms if row.client_ttft_ms is not None else row.ttft_ms
    return f"TTFT {served:,.0f} ms, prompt {row.prompt_tokens:,} tokens ({row.cached_tokens or 0:,} cached)"


@contextlib.contextmanager
def signed_in():
    """A Chromium page signed in to Open WebUI as its admin."""
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.set_default_timeout(60_000)
        sign_in(page)
        yield page
        browser.close()


def pull_step() -> list[tuple[str, bool, str]]:
    """Open WebUI's "pull a model" through HomeAI's Ollama connection (connection 0): a small
    GGUF pushed into the local registry in Ollama's layout is pulled by name (Open WebUI's admin
    endpoint, the one its admin page's pull box calls, streaming HomeAI's status lines), listed
    in Open WebUI's Ollama models, then deleted the same way (nothing stays in the models folder)."""
    with tempfile.TemporaryDirectory() as tmp:
        push_ollama_model(REGISTRY, "library/" + PULLED.split(":")[0], "latest", tiny_gguf(Path(tmp) / "t.gguf"))
    token = api("/api/v1/auths/signin", {"email": EMAIL, "password": PASSWORD})["token"]
    request = urllib.request.Request(
        WEBUI + "/ollama/api/pull/0",
        data=json.dumps({"model": PULLED}).encode(),
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"},
    )
    with urllib.request.urlopen(request, timeout=600) as r:
        lines = [json.loads(line) for line in r if line.strip()]
    statuses = [line.get("status") or line.get("error", "") for line in lines]
    ok = bool(lines) and lines[-1].get("status") == "success" and any("completed" in line for line in lines)
    results = [("ollama: Open WebUI pulls a model by name", ok, f"{len(lines)} lines, last {statuses[-1:]!r}")]
    listed = [m.get("model") or m.get("name") for m in api("/ollama/api/tags/0", token=token).get("models", [])]
    shown = any(PULLED.split(":")[0] in str(m) for m in listed)  # by its name or its file's
    results.append(("ollama: the pulled model is listed", shown, ", ".join(map(str, listed))))
    delete = urllib.request.Request(
        WEBUI + "/ollama/api/delete/0",
        data=json.dumps({"model": PULLED}).encode(),
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"},
        method="DELETE",
    )
    with urllib.request.urlopen(delete, timeout=60) as r:
        results.append(("ollama: Open WebUI deletes it", r.status == 200, f"HTTP {r.status}"))
    return results


def defaults() -> list[tuple[str, bool, str]]:
    """Open WebUI with its defaults: an answer in words, then a second message from the cache."""
    sign_up()
    results = []
    with signed_in() as page:
        for connection in CONNECTIONS:
            client = f"open-webui-{connection}"
            start = last_id()
            first = ask(page, f"{connection}.{MODEL}", NAS_QUESTION, f"{connection}-defaults")
            row = chat_row(start, client, NAS_QUESTION)
            # Sampled (Open WebUI's defaults): how many words the 135M model picks is luck; an
            # answer is some text without the tool-call markup.
            ok = bool(first["content"].strip()) and CALL_OPEN not in first["content"] and row is not None
            ok = ok and row.status == Generation.Status.DONE
            tools = len((row.output or {}).get("tools") or ()) if row else 0
            detail = f"{first['content'][:80]!r}; {tools} of Open WebUI's tools offered; {ttft(row)}"
            results.append((f"{connection}: defaults, a NAS question answered in words", ok, detail))
            second = follow_up(page, FOLLOW_UP, start, client)
            reused = bool(row and second and (second.cached_tokens or 0) >= 0.95 * row.prompt_tokens)
            ok = reused and second.status == Generation.Status.DONE
            results.append((f"{connection}: defaults, the second message reuses the first's prompt", ok, ttft(second)))
    if REGISTRY:
        results += pull_step()
    return results


def custom() -> list[tuple[str, bool, str]]:
    """The customised workspace: streaming, then a forced tool call and an answer."""
    set_up_workspace()
    results = []
    with signed_in() as page:
        for connection in CONNECTIONS:
            client = f"open-webui-{connection}"
            plain = ask(page, f"{connection}.{MODEL}", "Write three sentences about cats.", f"{connection}-stream")
            ok, how = streamed(plain["seen"])
            results.append((f"{connection}: a message streams", ok, f"{how}; {plain['content'][:80]!r}"))
            start = last_id()
            tool = ask(page, f"Weather ({connection})", "What is the weather in Paris?", f"{connection}-tool")
            ok = tool["tool_calls"] >= 1 and TOOL_RESULT in tool["content"]
            results.append((f"{connection}: the tool is called, its result shown", ok, f"{tool['tool_calls']} call(s)"))
            ok, what, answer = check_rows(rows_since(start, client))
            results.append((f"{connection}: HomeAI's rows ({client})", ok, what))
            words = " ".join(answer.split())[:40]
            shown = bool(words) and words in " ".join(tool["content"].split())
            results.append(
                (
                    f"{connection}: then the model answers in text, no second call",
                    shown,
                    repr(" ".join(answer.split())[:80]),
                )
            )
    return results


def exported_chat(token: str, deadline: float) -> dict | None:
    """The chat as Open WebUI's "Export chat (.json)" takes it (GET /api/v1/chats/{id}), once
    its second question has two finished answers (Open WebUI saves a chat when an answer ends)."""
    while time.monotonic() < deadline:
        chats = api("/api/v1/chats/", token=token)
        chat = api(f"/api/v1/chats/{chats[0]['id']}", token=token) if chats else None
        messages = (chat or {}).get("chat", {}).get("history", {}).get("messages", {})
        asked = [m for m in messages.values() if m.get("role") == "user" and m.get("content") == FOLLOW_UP]
        answers = [messages[c] for c in (asked[0].get("childrenIds") or []) if c in messages] if asked else []
        if len(answers) == 2 and all(a.get("done") and a.get("content") for a in answers):
            return chat
        time.sleep(1)
    return None


def export() -> list[tuple[str, bool, str]]:
    """A chat of two questions whose second answer is regenerated (two versions), written to
    OWUI_CHECK_EXPORT as Open WebUI's "Export chat (.json)" writes it: JSON.stringify([chat])."""
    token = sign_up()
    client = "open-webui-openai"
    with signed_in() as page:
        start = last_id()
        ask(page, f"openai.{MODEL}", NAS_QUESTION, "export-first")
        follow_up(page, FOLLOW_UP, start, client)
        # The last answer's actions (Regenerate among them) appear once it has ended.
        page.locator("button[aria-label='Regenerate']").last.wait_for(timeout=ANSWER_TIMEOUT_MS)
        if SHOTS:
            page.screenshot(path=str(Path(SHOTS) / "export-before.png"), full_page=True)
        again = last_id()
        deadline = time.monotonic() + ANSWER_TIMEOUT_MS / 1000
        while chat_row(again, client, FOLLOW_UP) is None and time.monotonic() < deadline:
            if not Generation.objects.filter(id__gt=again, client=client).exists():
                # Regenerate opens a menu (a suggestion box, Try Again, Add Details, More Concise).
                page.locator("button[aria-label='Regenerate']").last.click()
                page.get_by_text("Try Again", exact=True).click()
            time.sleep(5)
        chat = exported_chat(token, deadline)
        if SHOTS:
            page.screenshot(path=str(Path(SHOTS) / "export-after.png"), full_page=True)
    if chat is None:
        return [("export: the second answer regenerated and saved", False, "no chat with two answers to it")]
    Path(EXPORT).write_text(json.dumps([chat], ensure_ascii=False, separators=(",", ":")) + "\n")
    count = len(chat["chat"]["history"]["messages"])
    return [("export: a chat with a regenerated answer exported", True, f"{count} messages into {EXPORT}")]


def main() -> int:
    first_id = last_id()
    results = {"defaults": defaults, "custom": custom, "export": export}[CASE]()
    if CASE == "export":  # one connection only
        return report(results, first_id)
    viewer = get_user_model().objects.get(username=HOMEAI_USER)
    listed = {row["client"] for row in dashboard_rows(filters=parse_filters({}), viewer=viewer)}
    ok = {f"open-webui-{c}" for c in CONNECTIONS} <= listed
    results.append(("the dashboard lists both connections", ok, ", ".join(sorted(listed))))
    return report(results, first_id)


def report(results: list[tuple[str, bool, str]], first_id: int) -> int:
    for name, ok, detail in results:
        print(f"{'PASS' if ok else 'FAIL'}  {name}: {detail}")
    print(f"Generations since the start: {Generation.objects.filter(id__gt=first_id).count()}")
    return 0 if all(ok for _, ok, _ in results) else 1


if __name__ == "__main__":
    t0 = time.monotonic()
    status = main()
    print(f"{'passed' if status == 0 else 'FAILED'} in {time.monotonic() - t0:.0f} s")
    sys.exit(status)
