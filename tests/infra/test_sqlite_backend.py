"""SQLite's write lock, waited for in steps of about a millisecond (infra/sqlite/base.py): a
write that meets another still lands, whole and once, and the settings' timeout still holds."""

from __future__ import annotations

import sqlite3
import threading

import pytest
from django.contrib.auth.models import User
from django.db import connection, connections, transaction

from infra.sqlite import base
from tests.support import wait_until

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "sqlite", reason="the SQLite backend's own wait"),
]


@pytest.fixture
def lock_holder():
    """Another connection to the same file, holding the write lock until the test commits."""
    connection.ensure_connection()
    other = sqlite3.connect(connection.settings_dict["NAME"], isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")
    yield other
    if other.in_transaction:
        other.execute("ROLLBACK")
    other.close()


def _in_thread(write, *, timeout_s: float | None = None) -> dict:
    """Run write() on a thread of its own (its own connection); the dict gets its error, if any."""
    outcome: dict = {}

    def run():
        try:
            if timeout_s is not None:
                connections["default"].ensure_connection()
                connections["default"].timeout_s = timeout_s
            write()
        except Exception as exc:
            outcome["error"] = exc
        finally:
            connections.close_all()

    outcome["thread"] = threading.Thread(target=run)
    outcome["thread"].start()
    return outcome


@pytest.mark.parametrize("atomic", [False, True], ids=["autocommit", "transaction"])
def test_a_write_that_meets_the_lock_tries_again_until_it_is_free_and_lands_once(lock_holder, atomic):
    def write():
        if atomic:
            with transaction.atomic():
                User.objects.create(username="patient")
        else:
            User.objects.create(username="patient")

    before = base.retries
    outcome = _in_thread(write)
    assert wait_until(lambda: base.retries >= before + 3, timeout=60)  # refused while the lock is held
    lock_holder.execute("COMMIT")
    outcome["thread"].join(timeout=60)
    assert not outcome["thread"].is_alive() and "error" not in outcome
    assert User.objects.filter(username="patient").count() == 1


def test_the_settings_timeout_still_ends_the_wait(lock_holder):
    outcome = _in_thread(lambda: User.objects.create(username="impatient"), timeout_s=0.2)
    outcome["thread"].join(timeout=60)
    error = outcome.get("error")
    assert isinstance(error, Exception) and "database is locked" in str(error)
    lock_holder.execute("COMMIT")
    assert not User.objects.filter(username="impatient").exists()


def test_sqlite_itself_waits_only_a_few_milliseconds_and_a_batch_gets_the_whole_timeout():
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA busy_timeout")
        assert cursor.fetchone()[0] == int(base.SQLITE_WAIT_S * 1000)
        cursor.execute("CREATE TEMP TABLE batch (x)")
        cursor.executemany("INSERT INTO batch VALUES (%s)", [(1,), (2,)])
        cursor.execute("PRAGMA busy_timeout")
        assert cursor.fetchone()[0] == int(base.SQLITE_WAIT_S * 1000)  # restored after the batch
    assert connection.timeout_s == connection.settings_dict["OPTIONS"]["timeout"]
