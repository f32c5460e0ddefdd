"""Fixtures that run the real thing: daphne and a Celery worker as processes, on the test DB."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from django.conf import settings

from inference import redis_client
from inference.model_library import ensure_bundled_models
from inference.models import Generation
from tests import factories
from tests.support import ChatSocket, session_cookie, wait_until

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
LOG_DIR = Path(settings.DATA_DIR) / "logs"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _process_env() -> dict:
    env = os.environ.copy()
    env["DJANGO_SETTINGS_MODULE"] = "tests.settings"
    env["HOMEAI_USE_TEST_DB"] = "1"
    env["PYTHONUNBUFFERED"] = "1"
    return env


def _spawn(name: str, argv: list[str], env: dict | None = None) -> subprocess.Popen:
    LOG_DIR.mkdir(parents=True, exist_ok=True)
    log = open(LOG_DIR / f"{name}.log", "ab")  # noqa: SIM115 - closed with the process
    return subprocess.Popen(argv, cwd=ROOT, env=env or _process_env(), stdout=log, stderr=subprocess.STDOUT)


class WorkerProcess:
    """A real `celery worker` process on the test queue; can be killed and started again."""

    def __init__(self, concurrency: int = 4):
        self.concurrency = concurrency
        self.proc: subprocess.Popen | None = None

    @property
    def name(self) -> str:
        return f"{socket.gethostname()}:{self.proc.pid}"

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self, env_overrides: dict | None = None) -> None:
        env = _process_env()
        env.update(env_overrides or {})
        argv = [str(BIN / "celery"), "-A", "homeai", "worker", "-P", "threads", "-c", str(self.concurrency)]
        argv += ["-Q", settings.CELERY_TASK_DEFAULT_QUEUE, "--without-gossip", "--without-mingle"]
        argv += ["--without-heartbeat", "--loglevel", "INFO", "-n", f"test-{time.monotonic_ns()}@%h"]
        self.proc = _spawn("worker", argv, env)
        key = redis_client.worker_key(self.name)
        if not wait_until(lambda: redis_client.client().exists(key) or not self.alive(), timeout=60):
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


@pytest.fixture(scope="session", autouse=True)
def bundled_models():
    """The bundled models in the test models folder: hard links to the ones `make` wrote into
    data/models (no copies), else written from their packages."""
    for target in (Path(settings.BUNDLED_CHAT_MODEL_PATH), Path(settings.BUNDLED_BASE_MODEL_PATH)):
        source = ROOT / "data" / "models" / target.name
        if not target.exists() and source.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            os.link(source, target)
    ensure_bundled_models()


@pytest.fixture
def bundled_model(bundled_models):
    """The bundled base model (Gemma 3 270M): what the model-library tests describe and copy."""
    return Path(settings.BUNDLED_BASE_MODEL_PATH)


@pytest.fixture(scope="session")
def live_server_url(django_db_setup):
    port = _free_port()
    argv = [str(BIN / "daphne"), "-b", "127.0.0.1", "-p", str(port), "homeai.asgi:application"]
    proc = _spawn("daphne", argv)
    url = f"http://127.0.0.1:{port}"

    def healthy() -> bool:
        try:
            with urllib.request.urlopen(url + "/healthz", timeout=2) as resp:
                return resp.status == 200
        except Exception:
            return proc.poll() is not None

    if not wait_until(healthy, timeout=60) or proc.poll() is not None:
        raise RuntimeError("daphne did not start; see data/test/logs/daphne.log")
    yield url
    proc.terminate()
    proc.wait(timeout=30)


@pytest.fixture(scope="session")
def worker_process(django_db_setup):
    handle = WorkerProcess()
    handle.start()
    yield handle
    handle.stop()


@pytest.fixture
def worker(worker_process):
    """The session's worker, started again if an earlier test killed it."""
    if not worker_process.alive():
        worker_process.start()
    return worker_process


@pytest.fixture
def settled(transactional_db):
    """Wait for every answer to end before the tables are flushed under a running worker."""
    yield

    wait_until(lambda: not Generation.objects.filter(status__in=Generation.ACTIVE).exists(), timeout=60)


@pytest.fixture
def make_user(transactional_db):
    return factories.user


@pytest.fixture
def connect(live_server_url, settled):
    """Open chat sockets as given users; all closed at the end of the test."""
    sockets: list[ChatSocket] = []

    def open_socket(user, origin: str | None = None) -> ChatSocket:
        sock = ChatSocket(live_server_url, session_cookie(user), origin=origin)
        sockets.append(sock)
        return sock

    yield open_socket
    for sock in sockets:
        sock.close()


@pytest.fixture
def health(live_server_url):
    def read() -> dict:
        with urllib.request.urlopen(live_server_url + "/healthz", timeout=5) as resp:
            return json.loads(resp.read())

    return read
