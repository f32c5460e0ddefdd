"""Stop requests for the answers a worker runs, watched by one thread for all of them.

A client stops a running answer by setting its cancel key in Redis
(services.generations.generation_cancel). Each answer's task thread used to ask Redis for its own
key every CANCEL_POLL_S and woke that often to do so: with four answers streaming, forty round
trips and wake-ups a second, a third of the task threads' CPU, on the two cores llama.cpp's
threads need (docs/bench/journal.md). Now one thread asks about every running answer in one round
trip (a pipeline of EXISTS) and stops the asked ones in their engine itself; the engine's
cancelled end then wakes the answer's task thread as any end does. While Redis is down nobody
can ask, and the answers go on (they are saved to the database as they stream).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import redis

from inference import redis_client
from inference.outage import OutageLog

CANCEL_POLL_S = 0.1  # a client's stop reaches the engine within this (and one step)
log = logging.getLogger(__name__)


@dataclass(eq=False)
class Watched:
    """One running answer: how to stop it, and when it was stopped (by its client or its deadline)."""

    cancel: Callable[[], None]  # asks the engine to stop the answer (it ends it as cancelled)
    asked_at: float | None = None  # monotonic time of the stop; None while it runs on

    def stop(self) -> None:
        if self.asked_at is None:
            self.asked_at = time.monotonic()
            self.cancel()


class CancelWatch:
    def __init__(self, poll_s: float = CANCEL_POLL_S):
        self.poll_s = poll_s
        self._answers: dict[int, Watched] = {}
        self._lock = threading.Lock()
        self._some = threading.Event()  # set while any answer is watched: an idle worker asks nothing
        self._thread: threading.Thread | None = None
        self._outage = OutageLog(log, "watching for stopped answers in Redis")

    def watch(self, generation_id: int, cancel: Callable[[], None]) -> Watched:
        """Watch a running answer until unwatch(); cancel() stops it in its engine."""
        watched = Watched(cancel)
        with self._lock:
            self._answers[generation_id] = watched
            self._some.set()
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="homeai-cancels", daemon=True)
                self._thread.start()
        return watched

    def unwatch(self, generation_id: int, watched: Watched) -> None:
        with self._lock:
            if self._answers.get(generation_id) is watched:
                del self._answers[generation_id]
            if not self._answers:
                self._some.clear()

    def check(self) -> list[int]:
        """One look: ask Redis about every watched answer not stopped yet, in one round trip, and
        stop those whose client asked; their ids."""
        with self._lock:
            running = [(gid, w) for gid, w in self._answers.items() if w.asked_at is None]
        if not running:
            return []
        try:
            pipe = redis_client.client().pipeline(transaction=False)
            for gid, _ in running:
                pipe.exists(redis_client.cancel_key(gid))
            asked = pipe.execute()
        except redis.RedisError:
            self._outage.failed(f"asking again every {self.poll_s} s; the answers go on")
            return []
        self._outage.ok()
        stopped = []
        for (gid, watched), hit in zip(running, asked, strict=True):
            if hit:
                watched.stop()
                stopped.append(gid)
        return stopped

    def _run(self) -> None:
        while True:
            self._some.wait()
            time.sleep(self.poll_s)
            try:
                self.check()
            except Exception:
                log.exception("looking for stopped answers failed; looking again")


def forget(generation_id: int) -> None:
    """Drop a stopped answer's cancel key once its end is stored (it would expire in an hour)."""
    try:
        redis_client.client().delete(redis_client.cancel_key(generation_id))
    except redis.RedisError:
        pass


CANCELS = CancelWatch()
