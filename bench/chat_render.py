"""Does an open chat page slow the answer it draws? The same answer, streamed to a plain
WebSocket client and to the chat page in Chromium (markdown drawn as the tokens arrive),
against a running HomeAI, in interleaved rounds; TPOT is the server's (the worker's clock).

Each round gives every client a fresh conversation at temperature 0 with the same question, so
all get the same answer token for token: only what the browser costs the box differs.

The page is measured twice: as a person's browser runs it ("page": a plain Chromium process
showing the conversation, no driver attached; the question is sent by a socket of the same
user and the page draws it as it draws an answer from another tab), and as the browser tests
run it ("playwright": Chromium driven over the DevTools protocol, which reports every frame
and event to a driver process on the same cores).
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import psutil
from django.contrib.auth import get_user_model
from django.test import Client
from playwright.sync_api import sync_playwright
from websockets.sync.client import connect as ws_connect

from bench.report import machine, num, table, write_json
from inference.models import Conversation, Generation
from tests.support import CHROMIUM, CHROMIUM_ARGS, free_port

QUESTION = "List twenty birds of the northern coast, one line each, with one fact about each."
USERNAME = "bench-render"
MODES = ("socket", "page", "playwright")
SETTLE_MS = 1000
QUIET_CPU_S = 0.03  # Chromium's CPU seconds per second once the page has loaded, connected and settled


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


def _by_playwright(cfg: RenderConfig, page, conversation: Conversation) -> None:
    page.goto(f"{cfg.url}/chat/{conversation.id}/")
    page.wait_for_load_state("networkidle")
    page.wait_for_timeout(SETTLE_MS)  # a person reads the page before typing; the page settles meanwhile
    page.fill("#message-input", QUESTION)
    page.fill("#max-tokens", str(cfg.max_tokens))
    page.click("#send-button")
    page.locator(".message.assistant .stats-line").last.wait_for(timeout=900_000)


def _signed_in_profile(playwright, cfg: RenderConfig, cookie: str) -> str:
    """A Chromium profile folder holding the session cookie, for a Chromium no driver attaches to."""
    profile = tempfile.mkdtemp(prefix="homeai-render-")
    context = playwright.chromium.launch_persistent_context(
        profile, executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True
    )
    expires = int(time.time()) + 24 * 3600  # a session cookie would not be written to the profile
    context.add_cookies([{"name": "sessionid", "value": cookie, "url": cfg.url, "expires": expires}])
    context.close()
    return profile


def _cpu_s(root: psutil.Process) -> float:
    """CPU seconds of a process and all its children so far (Chromium is a family of processes)."""
    total = 0.0
    for proc in [root, *root.children(recursive=True)]:
        try:
            times = proc.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += times.user + times.system
    return total


def _settle(chromium: subprocess.Popen, family: psutil.Process, timeout: float = 120) -> None:
    """Wait until Chromium has started, loaded the page and gone quiet (there is no driver to
    report a load event): three seconds at least, then until a second passes almost idle."""
    time.sleep(3)
    deadline = time.monotonic() + timeout
    used = _cpu_s(family)
    while time.monotonic() < deadline:
        time.sleep(1)
        if chromium.poll() is not None:
            raise RuntimeError(f"Chromium exited ({chromium.returncode}) before the answer")
        used, last = _cpu_s(family), used
        if used - last < QUIET_CPU_S:
            return
    raise TimeoutError("Chromium did not settle")


def _drawn_text(playwright, port: int) -> str:
    """The answer the page shows, read over the DevTools port once the measuring is over (no
    client was attached while the answer streamed)."""
    browser = playwright.chromium.connect_over_cdp(f"http://127.0.0.1:{port}")
    try:
        page = browser.contexts[0].pages[0]
        return page.locator(".message.assistant .message-text").last.inner_text(timeout=60_000)
    finally:
        browser.close()


def _by_page(playwright, cfg: RenderConfig, profile: str, cookie: str, conversation: Conversation) -> float:
    """The conversation open in a plain headless Chromium while a socket of the same user asks.
    Returns the CPU seconds Chromium spent while the answer streamed."""
    port = free_port()
    command = [
        CHROMIUM,
        "--headless=new",
        f"--user-data-dir={profile}",
        "--password-store=basic",
        f"--remote-debugging-port={port}",  # used only after the answer, to check what was drawn
        *CHROMIUM_ARGS,
    ]
    chromium = subprocess.Popen(
        [*command, f"{cfg.url}/chat/{conversation.id}/"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        family = psutil.Process(chromium.pid)
        _settle(chromium, family)
        before = _cpu_s(family)
        _by_socket(cfg, cookie, conversation)
        used = _cpu_s(family) - before
        drawn = _drawn_text(playwright, port)
        if not drawn.strip():
            raise RuntimeError("the page did not draw the answer: is the profile's cookie signed in?")
        return used
    finally:
        chromium.terminate()
        chromium.wait(timeout=60)


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
    page_cpu_s: list[float] = []
    with sync_playwright() as playwright:
        profile = _signed_in_profile(playwright, cfg, cookie)
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        context = browser.new_context(base_url=cfg.url)
        context.add_cookies([{"name": "sessionid", "value": cookie, "url": cfg.url}])
        page = context.new_page()
        for round_no in range(cfg.rounds):
            shift = round_no % len(MODES)  # no mode always goes first
            for mode in MODES[shift:] + MODES[:shift]:
                conversation = _conversation(user)
                last = Generation.objects.order_by("-id").values_list("id", flat=True).first() or 0
                if mode == "socket":
                    _by_socket(cfg, cookie, conversation)
                elif mode == "page":
                    page_cpu_s.append(_by_page(playwright, cfg, profile, cookie, conversation))
                else:
                    _by_playwright(cfg, page, conversation)
                answer = _answer(conversation, last)
                tpot[mode].append(answer.tpot_ms)
                tokens[mode].append(answer.output_tokens)
                log(f"round {round_no + 1} {mode}: {answer.output_tokens} tokens, TPOT {answer.tpot_ms:.1f} ms")
                if mode == "playwright":
                    page.goto("about:blank")  # the next rounds run with no page drawing
        browser.close()
        shutil.rmtree(profile, ignore_errors=True)
    Conversation.objects.filter(user=user, title="render benchmark").delete()
    medians = {mode: statistics.median(values) for mode, values in tpot.items()}
    return {
        "config": {"url": cfg.url, "rounds": cfg.rounds, "max_tokens": cfg.max_tokens, "question": QUESTION},
        "machine": machine(),
        "tpot_ms": tpot,
        "output_tokens": tokens,
        "median_tpot_ms": medians,
        "page_chromium_cpu_s": page_cpu_s,
        "page_over_socket": medians["page"] / medians["socket"],
        "playwright_over_socket": medians["playwright"] / medians["socket"],
    }


def markdown(result: dict) -> str:
    rows = [
        (mode, num(result["median_tpot_ms"][mode], 1), ", ".join(num(v, 1) for v in result["tpot_ms"][mode]))
        for mode in MODES
    ]
    lines = table(("client", "median TPOT (ms)", "every round (ms)"), rows)
    lines.append(f"\nPage over socket: {result['page_over_socket']:.3f}x")
    lines.append(f"Playwright-driven page over socket: {result['playwright_over_socket']:.3f}x")
    return "\n".join(lines)


def write(result: dict, out_dir: Path) -> Path:
    return write_json(result, out_dir, "chat_render")
