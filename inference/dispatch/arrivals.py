"""Answers on their way to an engine, known across the web and the workers.

Questions sent together should have their prompts read together, in one batched step (as
llama-server does): read one by one, the first one's prompt fills the cores and the others wait
for its whole step. But the web takes some milliseconds to check and store each request, and
more when several come at once (each in its own thread, sharing one interpreter), so four sent
together reach the engine tens of milliseconds apart. So an API request is announced as it
starts: a token, with the time, in one Redis sorted set. The token travels with the answer's
task, rides on its Sequence, and the worker withdraws it once the engine has the answer. An
engine about to read prompts with nothing decoding waits a moment while tokens not its own are
on the way (Engine._gather_arrivals).

An answer that was not announced (a chat message, a task the watchdog sent again) is still
waited for from the moment its worker takes its task, under a token of that worker's own.

Nothing depends on a token being withdrawn: one whose answer never comes (a refused request
whose withdrawal failed, a web process that died, a task no worker took) stops counting after
ON_THE_WAY_S, and an engine never waits longer than GATHER_MAX_S for any. With Redis down,
nothing is announced and nothing is waited for.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import secrets
import threading
import time
from collections.abc import Callable, Iterator

import redis
from django.conf import settings

from inference import redis_client

log = logging.getLogger(__name__)

ON_THE_WAY_S = 2.0  # a token older than this no longer counts
POLL_TIMEOUT_S = 0.05  # the engine thread asks with this socket timeout: it must not hang on Redis


def arriving_key() -> str:
    """One set per deployment's queues (a test run's or a benchmark's own queue is its own)."""
    return f"homeai:arriving:{settings.CELERY_TASK_DEFAULT_QUEUE}"


def announce() -> str:
    """A request that may become an answer has arrived: its token ("" when Redis is down)."""
    token = secrets.token_hex(8)
    now = time.time()
    key = arriving_key()
    try:
        pipe = redis_client.client().pipeline(transaction=False)
        pipe.zremrangebyscore(key, "-inf", now - ON_THE_WAY_S)  # keeps the set as small as the traffic
        pipe.zadd(key, {token: now})
        pipe.execute()
    except redis.RedisError:
        log.debug("could not announce an arrival", exc_info=True)
        return ""
    return token


def withdraw(token: str) -> None:
    """The answer is with its engine, or will never be (best effort: a token left behind expires)."""
    if not token:
        return
    try:
        redis_client.client().zrem(arriving_key(), token)
    except redis.RedisError:
        log.debug("could not withdraw arrival %s", token, exc_info=True)


class Arrival:
    """One request's announcement, on the web's side: announce() once it is known whose it is;
    sent() hands the token to the answer's task; withdraw() when no task will carry it."""

    def __init__(self) -> None:
        self.token = ""

    def announce(self) -> None:
        if not self.token:  # a retried request is still the one arrival
            self.token = announce()

    def sent(self) -> str:
        token, self.token = self.token, ""
        return token

    def withdraw(self) -> None:
        withdraw(self.sent())


@functools.cache
def _poll_client() -> redis.Redis:
    timeout = POLL_TIMEOUT_S
    return redis.Redis.from_url(settings.REDIS_URL, socket_timeout=timeout, socket_connect_timeout=timeout)


def on_the_way() -> list[str]:
    """The tokens of the answers on their way: this worker's own, and those announced in the
    last ON_THE_WAY_S and not yet withdrawn (none of those when Redis does not answer at once)."""
    with _taken_lock:
        tokens = list(_taken)
    try:
        members = _poll_client().zrangebyscore(arriving_key(), time.time() - ON_THE_WAY_S, "+inf")
    except redis.RedisError:
        return tokens
    return tokens + [member.decode() for member in members]


_taken: set[str] = set()  # this worker's tokens for answers nobody announced
_taken_lock = threading.Lock()


@contextlib.contextmanager
def taken(token: str, generation_id: int) -> Iterator[tuple[str, Callable[[], None]]]:
    """A worker took an answer's task: yields its token (the announced one, else one of this
    worker's own, counted from now) and a callable that withdraws it, called once the engine
    has the answer; the block's end withdraws it too, whichever comes first."""
    own = not token
    if own:
        token = f"worker-{generation_id}-{secrets.token_hex(4)}"
        with _taken_lock:
            _taken.add(token)
    counted = True

    def handed() -> None:
        nonlocal counted
        if not counted:
            return
        counted = False
        if own:
            with _taken_lock:
                _taken.discard(token)
        else:
            withdraw(token)

    try:
        yield token, handed
    finally:
        handed()
