"""Connections kept by long-lived threads (infra/dbthreads.py): the API's database threads open
one connection and keep it across requests, and drop one left in a bad state; a worker keeps
its connections between tasks."""

from __future__ import annotations

import asyncio
import threading

import pytest
from django.contrib.auth.models import User
from django.db import connection, connections

from homeai.celery import app as celery_app
from infra import dbthreads

pytestmark = pytest.mark.django_db(transaction=True)


def _state() -> tuple[object, bool]:
    """This thread's connection (its DB-API object: the tests hold on to them, so that a new one
    cannot take a closed one's id) and whether it is in autocommit."""
    connection.ensure_connection()
    return connection.connection, connection.get_autocommit()


def _run(fn, *args):
    return asyncio.run(dbthreads.kept_db(fn)(*args))


def _on_every_thread(fn) -> list:
    """fn run on each of the API's database threads at once (each call holds its thread until
    all have started), so the next call of a test finds the connection it left."""
    barrier = threading.Barrier(dbthreads.KEPT_DB_THREADS)

    def held():
        barrier.wait(timeout=60)
        return fn()

    async def all_at_once():
        return await asyncio.gather(*(dbthreads.kept_db(held)() for _ in range(dbthreads.KEPT_DB_THREADS)))

    return asyncio.run(all_at_once())


def test_the_api_threads_keep_their_connections_across_requests():
    User.objects.create_user("kept")
    first = [c for c, _ in _on_every_thread(_state)]
    assert len({id(c) for c in first}) == dbthreads.KEPT_DB_THREADS  # one connection per thread
    assert all(_on_every_thread(lambda: connection.health_check_enabled))  # tested before each use
    second = [c for c, _ in _on_every_thread(_state)]
    assert {id(c) for c in second} == {id(c) for c in first}  # the same ones again: none was closed and opened anew
    # And they read what others committed (autocommit: no snapshot is held between requests).
    User.objects.create_user("later")
    assert _run(lambda: sorted(User.objects.values_list("username", flat=True))) == ["kept", "later"]


def test_a_connection_left_outside_autocommit_is_replaced():
    def leave_a_transaction_open():
        connection.set_autocommit(False)
        return _state()

    left = [c for c, _ in _on_every_thread(leave_a_transaction_open)]
    after = _on_every_thread(_state)
    assert all(autocommit for _, autocommit in after)
    assert not {id(c) for c in left} & {id(c) for c, _ in after}  # each was closed and opened again


def test_a_connection_that_failed_is_checked_before_it_is_used_again():
    def fail_once():
        connection.ensure_connection()
        connection.errors_occurred = True  # as Django marks a connection after a database error
        return connection.connection

    _on_every_thread(fail_once)
    after = _on_every_thread(lambda: (connection.errors_occurred, _state()[1]))
    # Checked (is_usable) and cleared, or replaced: either way the next request's connection works.
    assert after == [(False, True)] * dbthreads.KEPT_DB_THREADS


def test_a_worker_keeps_its_connections_between_tasks_and_checks_them():
    saved = {alias: dict(connections.settings[alias]) for alias in connections.settings}
    try:
        dbthreads.keep_worker_connections()
        assert all(connections.settings[alias]["CONN_MAX_AGE"] is None for alias in connections.settings)
        connection.close()
        connection.ensure_connection()
        kept = connection.connection
        dbthreads.check_connections()  # what the worker does before each task
        assert connection.connection is kept
        connection.set_autocommit(False)  # a task that left a transaction open
        dbthreads.check_connections()
        assert connection.connection is None  # closed; the next query opens a new one
        assert User.objects.count() == 0 and connection.connection is not kept
    finally:
        for alias, values in saved.items():
            connections.settings[alias].update(values)
        connection.close()


def test_celerys_django_fix_up_closes_a_workers_connections_only_rarely():
    assert celery_app.conf.get("CELERY_DB_REUSE_MAX") >= 100  # what the fix-up reads
