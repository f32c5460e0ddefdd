"""Database connections kept by long-lived threads, so that a request does not open one first.

Django's default (CONN_MAX_AGE 0) opens a connection for each request and closes it after. Under
ASGI that suits pages: each request's synchronous work runs on a thread of its own that ends with
it. But opening one is not free: on SQLite a file open, the WAL and busy pragmas and Django's
forty-odd SQL functions, about 1 ms on a busy 2-core box, paid on the path to an answer's first
token twice (the web storing the request, the worker claiming it), and by the web's answer sweep
every second.

- `kept_db(fn)`: the machine APIs (/v1/, /api/) and the answer sweep run their database work on a
  fixed pool of threads that live as long as the process, each keeping its connection. Before
  each use the connection is checked as Django checks one at a request's start: one left outside
  autocommit is closed, one that had an error is tested and closed if it no longer works, and its
  first query tests it (Django's health check: a database restarted meanwhile costs a new
  connection, not a failed request).
- `keep_worker_connections()`: a worker's task threads live as long as the worker, so the worker
  keeps its connections (CONN_MAX_AGE None, with health checks), in that process alone, and
  `check_connections()` checks the thread's before each task (Celery's Django fix-up would close
  them after every task: CELERY_DB_REUSE_MAX in settings.py makes that rare).
"""

from __future__ import annotations

import functools
import threading
from concurrent.futures import ThreadPoolExecutor

from asgiref.sync import sync_to_async
from django.db import connections

KEPT_DB_THREADS = 8  # requests (and the sweep) doing database work at once, per web process
_executor = ThreadPoolExecutor(max_workers=KEPT_DB_THREADS, thread_name_prefix="homeai-db")
_used = threading.Event()  # some thread may hold a connection (close_kept_connections)


def _with_kept_connection(fn):
    @functools.wraps(fn)
    def run(*args, **kwargs):
        for conn in connections.all(initialized_only=True):
            conn.close_at = None  # kept: this thread lives as long as the process
            # Tested (PostgreSQL: SELECT 1) before its first query of each use, so a database
            # restart costs a reconnection, not a failed request (Django's CONN_HEALTH_CHECKS).
            conn.health_check_enabled = True
        check_connections()
        _used.set()
        return fn(*args, **kwargs)

    return run


def kept_db(fn):
    """fn as a coroutine function run on the kept-connection threads (database_sync_to_async's
    counterpart; fn must not rely on running on the same thread as other calls)."""
    return sync_to_async(_with_kept_connection(fn), thread_sensitive=False, executor=_executor)


def close_kept_connections() -> None:
    """Close every kept-connection thread's connection: a test's, since the next test may not
    be allowed to touch the database, or may drop it."""
    if not _used.is_set():
        return
    _used.clear()
    barrier = threading.Barrier(KEPT_DB_THREADS)

    def close():
        barrier.wait(timeout=60)  # each thread takes one call: none is left out
        connections.close_all()

    for future in [_executor.submit(close) for _ in range(KEPT_DB_THREADS)]:
        future.result()


def check_connections() -> None:
    """This thread's connections, checked as Django checks them at a request's start: closed if
    left outside autocommit, or if an error left one that no longer works, or if it is older than
    CONN_MAX_AGE (never, where kept); the next query opens a new one."""
    for conn in connections.all(initialized_only=True):
        conn.close_if_unusable_or_obsolete()


def keep_worker_connections() -> None:
    """This process keeps its database connections open between tasks (a worker: its threads
    are a fixed pool). Call before any connection is made; check_connections() before each task."""
    for alias in connections.settings:
        connections.settings[alias]["CONN_MAX_AGE"] = None
        connections.settings[alias]["CONN_HEALTH_CHECKS"] = True
