"""A whole HomeAI of its own for fault tests and the soak benchmark: its own redis-server on a
spare port (which they stop and start), a daphne and a Celery worker on it."""

from __future__ import annotations

import json
import shutil
import subprocess
import urllib.error
import urllib.request
from pathlib import Path

import redis

from inference import redis_client
from inference.dispatch import registry
from tests.support import BIN, ChatSocket, WorkerProcess, free_port, process_env, session_cookie, spawn, wait_until

REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"


class RedisServer:
    """A redis-server on a spare port that keeps nothing on disk, as the default install runs it:
    a restart empties it (heartbeats, the task queue, the engine-config key)."""

    def __init__(self, directory: Path, log_name: str = "fault-redis"):
        self.port = free_port()
        self.log_name = log_name
        self.directory = directory
        self.proc: subprocess.Popen | None = None
        self.client = redis.Redis(port=self.port, socket_timeout=5, socket_connect_timeout=2)

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def answers(self) -> bool:
        try:
            return bool(self.client.ping())
        except redis.RedisError:
            return False

    def start(self) -> None:
        argv = [REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        argv += ["--dir", str(self.directory)]
        self.proc = spawn(self.log_name, argv)
        if not wait_until(self.answers, timeout=30):
            raise RuntimeError(f"redis-server on port {self.port} did not start; see {self.log_name}.log")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=30)
        self.client.connection_pool.disconnect()


class Stack:
    """daphne and a worker on a Redis of their own; sockets, pages and /healthz against them."""

    def __init__(self, directory: Path, env: dict | None = None, name: str = "fault", concurrency: int | None = 4):
        """env: over the test processes' environment (the soak runs on the app's own settings);
        concurrency: the worker's task threads (None: the settings' own)."""
        self.name = name
        self.redis = RedisServer(directory, log_name=f"{name}-redis")
        self.env = {"REDIS_URL": self.redis.url, "HOMEAI_CHANNEL_PREFIX": f"homeai-{name}", **(env or {})}
        self.worker = WorkerProcess(
            concurrency=concurrency, env=self.env, redis=self.redis.client, log_name=f"{name}-worker"
        )
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.web: subprocess.Popen | None = None

    def start(self) -> None:
        self.redis.start()
        argv = [str(BIN / "daphne"), "-b", "127.0.0.1", "-p", str(self.port), "homeai.asgi:application"]
        self.web = spawn(f"{self.name}-daphne", argv, process_env(**self.env))
        if not wait_until(lambda: self.health("/healthz/web")[0] == 200 or self.web.poll() is not None, timeout=60):
            raise RuntimeError(f"daphne did not start; see {self.name}-daphne.log in the logs folder")
        self.worker.start()

    def stop(self) -> None:
        self.worker.stop()
        if self.web is not None:
            self.web.terminate()
            self.web.wait(timeout=30)
        self.redis.stop()

    def health(self, path: str = "/healthz") -> tuple[int, dict]:
        try:
            with urllib.request.urlopen(self.url + path, timeout=10) as resp:
                return resp.status, json.loads(resp.read())
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read() or b"{}")
        except OSError:
            return 0, {}

    def restart_redis(self) -> None:
        """Stop Redis and start it again (empty)."""
        self.redis.stop()
        self.redis.start()

    def worker_slots(self) -> int | None:
        """The slots the worker's engine holds, as its heartbeat says (None before a model loads)."""
        raw = self.redis.client.get(redis_client.worker_key(self.worker.name)) if self.worker.alive() else None
        engines = registry.engines_of(json.loads(raw)) if raw else []
        return engines[0].get("slots") if engines else None

    def socket(self, user) -> ChatSocket:
        return ChatSocket(self.url, session_cookie(user))
