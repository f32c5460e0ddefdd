"""Does an open chat page slow the answer it draws? The same answer, streamed to a plain
WebSocket client and to the chat page in Chromium (markdown drawn as the tokens arrive),
against a running HomeAI, in interleaved rounds; TPOT is the server's (the worker's clock).

Each round gives both clients a fresh conversation at temperature 0 with the same question, so
both get the same answer token for token: only what the browser costs the box differs.
"""

from __future__ import annotations

import json
import os
import statistics
import time
from dataclasses import dataclass
from pathlib import Path

from django.contrib.auth import get_user_model
from django.test import Client
from playwright.sync_api import sync_playwright
from websockets.sync.client import connect as ws_connect

from bench.report import machine, num, table
from inference.models import Conversation, Generation
from tests.support import CHROMIUM, CHROMIUM_ARGS

QUESTION = "List twenty birds of the northern coast, one line each, with one fact about each."
USERNAME = "bench-render"
MODES = ("socket", "browser")
SETTLE_MS = 1000


@dataclass(frozen=True)
class RenderConfig:
    url: str
    rounds: int = 5
    max_tokens: int = 160


def _conversation(user) -> Conversation:
    return Conversation.objects.create(user=user, title="render benchmark", temperature=0.0)


def _answer(conversation: Conversation, since_id: int, timeout: float = 900) -> Generation:
    """The conversation's answer once it has ended (the worker wrote its metrics)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = Generation.objects.filter(conversation=conversation, id__gt=since_id).first()
        if found is not None and not found.is_active:
            return found
        time.sleep(0.2)
    raise TimeoutError("the answer did not end: is a worker running?")


def _by_socket(cfg: RenderConfig, cookie: str, conversation: Conversation) -> None:
    ws_url = cfg.url.replace("http://", "ws://") + "/ws/chat/"
    headers = {"Origin": cfg.url, "Cookie": f"sessionid={cookie}"}
    with ws_connect(ws_url, additional_headers=headers, ping_interval=None, max_size=None) as ws:
        message = {"conversation": conversation.id, "text": QUESTION, "max_tokens": cfg.max_tokens}
        ws.send(json.dumps({"type": "chat.send", **message}))
        while json.loads(ws.recv(timeout=900))["type"] not in ("generation.done", "generation.error"):
            pass


def _by_page(cfg: RenderConfig, page, conversation: Conversation) -> None:
    page.goto(f"{cfg.url}/chat/{conversation.id}/")
    page.wait_for_load_state("networkidle")
    page.wait_for_timeout(SETTLE_MS)  # a person reads the page before typing; the page settles meanwhile
    page.fill("#message-input", QUESTION)
    page.fill("#max-tokens", str(cfg.max_tokens))
    page.click("#send-button")
    page.locator(".message.assistant .stats-line").last.wait_for(timeout=900_000)


def run(cfg: RenderConfig, log=print) -> dict:
    # Playwright's sync API keeps an event loop on this thread; the ORM calls here are plain
    # blocking ones between its calls, which Django otherwise refuses in a thread with a loop.
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    user, _ = get_user_model().objects.get_or_create(username=USERNAME)
    client = Client()
    client.force_login(user)
    cookie = client.cookies["sessionid"].value
    tpot: dict[str, list[float]] = {mode: [] for mode in MODES}
    tokens: dict[str, list[int]] = {mode: [] for mode in MODES}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        context = browser.new_context(base_url=cfg.url)
        context.add_cookies([{"name": "sessionid", "value": cookie, "url": cfg.url}])
        page = context.new_page()
        for round_no in range(cfg.rounds):
            order = MODES if round_no % 2 == 0 else MODES[::-1]  # neither always goes first
            for mode in order:
                conversation = _conversation(user)
                last = Generation.objects.order_by("-id").values_list("id", flat=True).first() or 0
                if mode == "socket":
                    _by_socket(cfg, cookie, conversation)
                else:
                    _by_page(cfg, page, conversation)
                answer = _answer(conversation, last)
                tpot[mode].append(answer.tpot_ms)
                tokens[mode].append(answer.output_tokens)
                log(f"round {round_no + 1} {mode}: {answer.output_tokens} tokens, TPOT {answer.tpot_ms:.1f} ms")
                if mode == "browser":
                    page.goto("about:blank")  # the next socket round runs with no page drawing
        browser.close()
    Conversation.objects.filter(user=user, title="render benchmark").delete()
    medians = {mode: statistics.median(values) for mode, values in tpot.items()}
    return {
        "config": {"url": cfg.url, "rounds": cfg.rounds, "max_tokens": cfg.max_tokens, "question": QUESTION},
        "machine": machine(),
        "tpot_ms": tpot,
        "output_tokens": tokens,
        "median_tpot_ms": medians,
        "browser_over_socket": medians["browser"] / medians["socket"],
    }


def markdown(result: dict) -> str:
    rows = [
        (mode, num(result["median_tpot_ms"][mode], 1), ", ".join(num(v, 1) for v in result["tpot_ms"][mode]))
        for mode in MODES
    ]
    lines = table(("client", "median TPOT (ms)", "every round (ms)"), rows)
    lines.append(f"\nBrowser over socket: {result['browser_over_socket']:.3f}x")
    return "\n".join(lines)


def write(result: dict, out_dir: Path) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "chat_render.json"
    path.write_text(json.dumps(result, indent=2))
    return path
