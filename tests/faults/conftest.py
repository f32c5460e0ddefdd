"""The fault tests' own HomeAI (tests/stack.py): its own Redis, daphne and worker on the test database."""

from __future__ import annotations

import pytest

from tests.stack import Stack
from tests.support import LOG_DIR


@pytest.fixture(scope="module")
def stack(django_db_setup, tmp_path_factory):
    handle = Stack(tmp_path_factory.mktemp("fault-redis"))
    handle.start()
    yield handle
    handle.stop()
    print(f"fault stack logs: {LOG_DIR}")


@pytest.fixture
def fault_worker(stack):
    """The stack's worker, started again if an earlier test killed it."""
    if not stack.worker.alive():
        stack.worker.start()
    return stack.worker
