"""Test helpers: processes on the test database, a synchronous chat-socket client, polling."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

import pytest
from django.conf import settings
from django.test import Client
from websockets.sync.client import connect as ws_connect

from inference import redis_client

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
LOG_DIR = Path(settings.DATA_DIR) / "logs"

DONE_TYPES = ("generation.done", "generation.error")
# What Prometheus sends: /metrics is closed to anyone else but signed-in staff.
METRICS_AUTH = {"Authorization": f"Bearer {settings.HOMEAI_METRICS_TOKEN}"}

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


def launch_chromium(playwright, *extra_args: str):
    """Debian's Chromium under Playwright (the tests never download a browser of their own)."""

    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: install Debian's chromium package (make test does).")
    return playwright.chromium.launch(executable_path=CHROMIUM, args=[*CHROMIUM_ARGS, *extra_args], headless=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def process_env(**overrides: str) -> dict:
    """The environment of a process the tests start: the test settings and the test database."""
    env = os.environ.copy()
    env["DJANGO_SETTINGS_MODULE"] = "tests.settings"
    env["HOMEAI_USE_TEST_DB"] = "1"
    env["PYTHONUNBUFFERED"] = "1"
    env.update(overrides)
    return env


def spawn(name: str, argv: list[str], env: dict | None = None) -> subprocess.Popen:
    """Start a process with its output in data/test/logs/NAME.log."""
    LOG_DIR.mkdir(parents=True, exist_ok=True)
    log = open(LOG_DIR / f"{name}.log", "ab")  # noqa: SIM115 - closed with the process
    return subprocess.Popen(argv, cwd=ROOT, env=env or process_env(), stdout=log, stderr=subprocess.STDOUT)


class WorkerProcess:
    """A real `celery worker` process on the test queue; can be killed and started again."""

    def __init__(self, concurrency: int | None = 4, env: dict | None = None, redis=None, log_name: str = "worker"):
        """env: over the test environment (another Redis, say); redis: a client of the Redis
        the worker beats to (the suite's own by default); concurrency None: the settings' own
        task threads, as `make run` starts it."""
        self.concurrency = concurrency
        self.env = env or {}
        self.redis = redis
        self.log_name = log_name
        self.proc: subprocess.Popen | None = None

    @property
    def name(self) -> str:
        return f"{socket.gethostname()}:{self.proc.pid}"

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self, env_overrides: dict | None = None) -> None:
        env = process_env(**self.env)
        env.update(env_overrides or {})
        argv = [str(BIN / "celery"), "-A", "homeai", "worker", "-P", "threads"]
        argv += ["-c", str(self.concurrency)] if self.concurrency else []
        argv += ["-Q", settings.CELERY_TASK_DEFAULT_QUEUE, "--without-gossip", "--without-mingle"]
        argv += ["--without-heartbeat", "--loglevel", "INFO", "-n", f"test-{time.monotonic_ns()}@%h"]
        self.proc = spawn(self.log_name, argv, env)
        key = redis_client.worker_key(self.name)
        redis = self.redis or redis_client.client()
        if not wait_until(lambda: redis.exists(key) or not self.alive(), timeout=60):
            raise RuntimeError("the Celery worker did not report ready within 60 s; see data/test/logs/worker.log")
        if not self.alive():
            raise RuntimeError("the Celery worker exited; see data/test/logs/worker.log")

    def kill(self) -> None:
        """SIGKILL: the worker gets no chance to clean up, as in a crash or an OOM kill."""
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=30)

    def stop(self) -> None:
        if self.alive():
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()


def start_daphne(name: str = "daphne", **env: str) -> tuple[subprocess.Popen, str]:
    """daphne serving HomeAI on a free port, as make run starts it, on the test database (env: over
    the test environment); returns once /healthz/web answers."""
    port = free_port()
    argv = [str(BIN / "daphne"), "-b", "127.0.0.1", "-p", str(port), "homeai.asgi:application"]
    proc = spawn(name, argv, process_env(**env))
    url = f"http://127.0.0.1:{port}"

    def healthy() -> bool:
        try:
            with urllib.request.urlopen(url + "/healthz/web", timeout=2) as resp:
                return resp.status == 200
        except Exception:
            return proc.poll() is not None

    if not wait_until(healthy, timeout=60) or proc.poll() is not None:
        proc.kill()
        raise RuntimeError(f"daphne did not start; see data/test/logs/{name}.log")
    return proc, url


def digits(n: int, start: int = 0) -> str:
    """Text of n tokens for the bundled models, whose tokenizers read each digit as one."""
    return "".join(str((start + i) % 10) for i in range(n))


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
    """A browser-like client of /ws/chat/ (or another socket's path): session cookie and Origin
    header included."""

    def __init__(self, base_url: str, session_id: str | None, origin: str | None = None, path: str = "/ws/chat/"):
        ws_url = base_url.replace("http://", "ws://") + path
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


class RecordingOutbox:
    """A stand-in for broadcast.Outbox that records the writes a step relay makes (works=False:
    every write fails, as with Redis down)."""

    def __init__(self, *, works: bool = True):
        self.works, self.writes = works, []

    def connect(self) -> bool:
        return True

    def send_now(self, messages) -> bool:
        if self.works:
            self.writes.append(messages)
        return self.works

    def send(self, messages) -> bool:
        return self.send_now(messages)


def of_type(events: list[dict], kind: str) -> list[dict]:
    return [e for e in events if e["type"] == kind]


def forget_speech() -> None:
    """Drop every answer's kept sentences and audio: the test database reuses answer ids."""
    client = redis_client.client()
    keys = [*client.scan_iter("homeai:speech-*", count=1000)]
    if keys:
        client.delete(*keys)
