"""A model pull on this worker: infra.pull's puller into this worker's models folder, its
progress kept in Redis and published to the pull's watchers (dispatch/pulls.py)."""

from __future__ import annotations

import logging
import threading
import time

from django.conf import settings

from inference.dispatch import pulls, registry
from inference.worker import heartbeat
from infra.pull.errors import PullError
from infra.pull.puller import pull

log = logging.getLogger(__name__)

PUBLISH_EVERY_S = 0.1  # a layer's progress reaches watchers this often (and at its end)
CANCEL_EVERY_S = 0.25  # how often the download asks Redis whether it was stopped


class PullRun:
    """One pull's callbacks: status lines and progress published (progress at most every
    PUBLISH_EVERY_S; a thread sends the last one when the download stalls), and the stop
    request asked at most every CANCEL_EVERY_S."""

    def __init__(self, pid: str, name: str):
        self.state = pulls.read(pid) or pulls.new_state(name)
        self.state.update(worker=registry.worker_name(), active=True, end=None)
        self._published = 0.0
        self._asked = 0.0
        self._stopped = False
        self._held: dict | None = None  # the latest progress line not yet published
        self._lock = threading.Lock()
        self._ended = threading.Event()
        threading.Thread(target=self._flush_held, name="homeai-pull-progress", daemon=True).start()

    def _flush_held(self) -> None:
        while not self._ended.wait(PUBLISH_EVERY_S):
            with self._lock:
                held, self._held = self._held, None
                if held is not None:
                    self._published = time.monotonic()
                    self._save([held])

    def _save(self, lines: list[dict]) -> None:
        try:
            pulls.save(self.state, lines)
        except Exception:
            log.warning("could not publish pull %s's progress", self.state["name"], exc_info=True)

    def status(self, text: str) -> None:
        with self._lock:
            self.state["status"] = text
            if not text.startswith("pulling ") or text == "pulling manifest":
                self._save([{"status": text}])

    def progress(self, digest: str, total: int, completed: int) -> None:
        line = pulls.layer_line(digest, total, completed)
        with self._lock:
            self.state["layers"][digest] = [total, completed]
            now = time.monotonic()
            if completed in (0, total) or now - self._published >= PUBLISH_EVERY_S:
                self._published, self._held = now, None
                self._save([line])
            else:
                self._held = line

    def cancelled(self) -> bool:
        now = time.monotonic()
        if not self._stopped and now - self._asked >= CANCEL_EVERY_S:
            self._asked = now
            try:
                self._stopped = pulls.cancelled(self.state["id"])
            except Exception:
                log.warning("could not ask Redis whether pull %s was stopped", self.state["name"], exc_info=True)
        return self._stopped

    def end(self, line: dict) -> None:
        self._ended.set()
        with self._lock:
            self._held = None
            self.state.update(active=False, end=line, status=line.get("status", "error"))
            pulls.save(self.state, [line])


def pull_run(*, pid: str, name: str) -> None:
    """Run a pull to its end: success once the model is in the folder and announced (so a
    request for it right after is routed here), else an error line with its sentence."""
    run = PullRun(pid, name)
    pulls.save(run.state, [])
    try:
        path = pull(
            name,
            settings.MODELS_DIR,
            registry=settings.HOMEAI_PULL_REGISTRY,
            status=run.status,
            progress=run.progress,
            cancelled=run.cancelled,
        )
    except PullError as exc:
        log.info("pull of %s ended: %s", name, exc.message)
        run.end({"error": exc.message, "code": exc.code, "http_status": exc.status})
        return
    except Exception as exc:
        log.exception("pull of %s failed", name)
        run.end({"error": f"The pull of {name} failed: {exc}", "code": "internal", "http_status": 500})
        return
    log.info("pulled %s into %s", name, path)
    heartbeat.follow_library_now()
    run.end({"status": "success"})
