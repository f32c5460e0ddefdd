"""Test helpers: a synchronous chat-socket client and polling."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

import pytest
from django.test import Client
from websockets.sync.client import connect as ws_connect

DONE_TYPES = ("generation.done", "generation.error")

CHROMIUM = "/usr/bin/chromium"
# Headless, as root, on a machine whose network reaches only localhost.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def launch_chromium(playwright):
    """Debian's Chromium under Playwright (the tests never download a browser of their own)."""

    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: install Debian's chromium package (make test does).")
    return playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)


def wait_until(predicate: Callable[[], object], timeout: float, interval: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return bool(predicate())


def markdown_html(page, text: str) -> str:
    """The HTML the chat page's HomeAI.renderMarkdown draws for text: what an answer shows."""
    return page.evaluate(
        """text => {
            const box = document.createElement("div");
            HomeAI.renderMarkdown(box, text);
            return box.innerHTML;
        }""",
        text,
    )


def session_cookie(user) -> str:

    client = Client()
    client.force_login(user)
    return client.cookies["sessionid"].value


class ChatSocket:
    """A browser-like client of /ws/chat/: session cookie and Origin header included."""

    def __init__(self, base_url: str, session_id: str | None, origin: str | None = None):
        ws_url = base_url.replace("http://", "ws://") + "/ws/chat/"
        headers = {"Origin": origin or base_url}
        if session_id:
            headers["Cookie"] = f"sessionid={session_id}"
        self._stack = ExitStack()
        # No keepalive pings: on a busy 2-core box a pong can take longer than websockets' 20 s
        # default, and that closed sockets mid-test; every wait here has its own timeout instead.
        # max_queue=None: unread frames never pause the reading thread, which must keep answering
        # the server's pings while the test waits on something else (a browser page).
        self.ws = self._stack.enter_context(
            ws_connect(
                ws_url, additional_headers=headers, open_timeout=60, max_size=None, ping_interval=None, max_queue=None
            )
        )

    def send(self, message: dict) -> None:
        self.ws.send(json.dumps(message))

    def send_raw(self, text: str) -> None:
        self.ws.send(text)

    def recv(self, timeout: float = 30) -> dict:
        return json.loads(self.ws.recv(timeout=timeout))

    def collect(self, until: Callable[[dict], bool], timeout: float = 60) -> list[dict]:
        """Events up to and including the first one for which until(event) holds."""
        deadline = time.monotonic() + timeout
        events = []
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"no matching event within {timeout} s; got {events[-5:]}")
            event = self.recv(timeout=remaining)
            events.append(event)
            if until(event):
                return events

    def chat(self, text: str, conversation: int | None = None, timeout: float = 600, **extra) -> list[dict]:
        """Send a message and return every event until its answer ends."""
        self.send({"type": "chat.send", "conversation": conversation, "text": text, **extra})
        return self.collect(lambda e: e["type"] in DONE_TYPES, timeout=timeout)

    def close(self) -> None:
        self._stack.close()


def of_type(events: list[dict], kind: str) -> list[dict]:
    return [e for e in events if e["type"] == kind]
