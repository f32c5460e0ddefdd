"""Django's SQLite backend, waiting for the write lock in steps of about a millisecond.

The web, the worker and their threads all write one SQLite file, one writer at a time. SQLite's
own wait for the lock (sqlite3's `timeout`, its default busy handler) sleeps 1, 2, 5, 10, 15, 20,
25, 25, 25, 50, 50 and then 100 ms between its tries, however soon the lock is free: a write
that meets a few others can sleep a third of a second for a lock held a few milliseconds
(measured: two of four requests sent together reached the engine after 229 and 327 ms instead
of 42; 228 is the sum of the first eleven sleeps). Here SQLite waits at most SQLITE_WAIT_S
itself, then this backend tries again at once, until the `timeout` of the settings is spent.

Only a statement that starts outside a transaction is tried again (BEGIN IMMEDIATE, which
every transaction starts with here, and a lone write or read in autocommit): SQLite refused it
whole, so trying again is safe. Inside a transaction the write lock is already held (IMMEDIATE),
and in WAL mode nothing else makes a statement wait. A batch of statements in autocommit
(executemany) could fail half-way, so it waits on SQLite's own handler with the whole timeout.
"""

from __future__ import annotations

import sqlite3
import time

from django.db.backends.sqlite3 import base

SQLITE_WAIT_S = 0.005  # SQLite's own handler: sleeps of 1, 2 and 2 ms, then SQLITE_BUSY
DEFAULT_TIMEOUT_S = 5.0  # sqlite3's default when the settings give no timeout

retries = 0  # statements tried again since the process started (tests read it)


def _busy(exc: sqlite3.OperationalError) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)  # Python 3.11 and later
    return code == sqlite3.SQLITE_BUSY if code is not None else str(exc) == "database is locked"


class SQLiteCursorWrapper(base.SQLiteCursorWrapper):
    timeout_s = DEFAULT_TIMEOUT_S

    def execute(self, query, params=None):
        global retries
        if self.connection.in_transaction:
            return super().execute(query, params)
        deadline = time.monotonic() + self.timeout_s
        while True:
            try:
                return super().execute(query, params)
            except sqlite3.OperationalError as exc:
                if not _busy(exc) or time.monotonic() >= deadline:
                    raise
                retries += 1

    def executemany(self, query, param_list):
        if self.connection.in_transaction:
            return super().executemany(query, param_list)
        self.connection.execute(f"PRAGMA busy_timeout = {int(self.timeout_s * 1000)}")
        try:
            return super().executemany(query, param_list)
        finally:
            self.connection.execute(f"PRAGMA busy_timeout = {int(SQLITE_WAIT_S * 1000)}")


class DatabaseWrapper(base.DatabaseWrapper):
    def get_connection_params(self):
        kwargs = super().get_connection_params()
        self.timeout_s = float(kwargs.get("timeout", DEFAULT_TIMEOUT_S))
        kwargs["timeout"] = SQLITE_WAIT_S
        return kwargs

    def create_cursor(self, name=None):
        cursor = self.connection.cursor(factory=SQLiteCursorWrapper)
        cursor.timeout_s = self.timeout_s
        return cursor
