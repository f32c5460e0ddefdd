"""Fixtures that run the real thing: daphne and a Celery worker as processes, on the test DB."""

from __future__ import annotations

import io
import json
import os
import shutil
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command
from django.db import connection
from django.utils import translation

from inference import redis_client
from inference.model_library import ensure_bundled_models
from inference.models import Generation
from infra import dbthreads, throttle
from tests import factories
from tests.support import ChatSocket, WorkerProcess, session_cookie, start_daphne, wait_until

ROOT = Path(__file__).resolve().parent.parent


def pytest_collection_modifyitems(config, items):
    """The fault tests first, before the suite's own daphne and worker start. Their stack shares
    the test database but not Redis with those, and each side's watchdog would, rightly from where
    it stands, end the other worker's running answers: a worker it never hears from."""
    items.sort(key=lambda item: item.get_closest_marker("faults") is None)


@pytest.fixture(scope="session", autouse=True)
def bundled_models():
    """The bundled models in the test models folder: hard links to the ones `make` wrote into
    data/models (no copies), else written from their packages."""
    for target in (
        Path(settings.BUNDLED_CHAT_MODEL_PATH),
        Path(settings.BUNDLED_BASE_MODEL_PATH),
        Path(settings.BUNDLED_EMBEDDING_MODEL_PATH),
    ):
        source = ROOT / "data" / "models" / target.name
        if not target.exists() and source.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            os.link(source, target)
    ensure_bundled_models()


@pytest.fixture(autouse=True)
def _kept_connections_closed():
    """The threads that keep database connections (infra/dbthreads.py) close them after each
    test that used them in this process: the next test may not be allowed the database."""
    yield
    dbthreads.close_kept_connections()


@pytest.fixture(autouse=True)
def _language_reset():
    """Each test starts in the default language: a request through Django's test client
    activates the asker's language in this thread (LocaleMiddleware) and nothing ends it, so a
    Korean page in one test left the next tests' strings in Korean."""
    yield
    translation.deactivate()


@pytest.fixture
def no_failed_sign_ins():
    """No failed sign-in or API key counted (infra/throttle.py), before the test and after it."""

    def wipe():
        r = redis_client.client()
        if keys := list(r.scan_iter(match=throttle.PREFIX + ":*")):
            r.delete(*keys)

    wipe()
    yield
    wipe()


@pytest.fixture
def folder():
    """A fresh folder inside the documents folder, removed afterwards."""
    name = f"test-{uuid.uuid4().hex[:8]}"
    path = settings.HOMEAI_DOCUMENTS_DIR / name
    path.mkdir(parents=True)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def bundled_model(bundled_models):
    """The bundled base model (Gemma 3 270M): what the model-library tests describe and copy."""
    return Path(settings.BUNDLED_BASE_MODEL_PATH)


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker):
    """pytest-django's test database, and, before it is dropped, PostgreSQL's sessions on it
    ended. Every process the tests started has stopped by then (their fixtures need this one),
    but a connection this process opened in another context stays open (the ORM called inside
    Playwright's sync API, which runs the test's code in a context of its own), and PostgreSQL
    does not drop a database that is in use. SQLite deletes its file regardless."""
    yield
    if connection.vendor == "postgresql":
        with django_db_blocker.unblock(), connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
        connection.close()


@pytest.fixture(scope="session")
def live_server_url(django_db_setup):
    proc, url = start_daphne()
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
def health(live_server_url, transactional_db):
    """read() -> /healthz as staff see it (with each worker's model and policy), whatever its status."""
    cookie = session_cookie(factories.user("health-staff", is_staff=True))

    def read() -> dict:
        request = urllib.request.Request(live_server_url + "/healthz", headers={"Cookie": f"sessionid={cookie}"})
        try:
            with urllib.request.urlopen(request, timeout=5) as resp:
                return json.loads(resp.read())
        except urllib.error.HTTPError as exc:  # 503: no worker (yet)
            return json.loads(exc.read())

    return read


@pytest.fixture
def api_key(make_user) -> str:
    """A real API key of the user "ada", made by the management command."""
    make_user("ada")
    return created_key("ada")


@pytest.fixture
def staff_api_key(make_user) -> str:
    """A real API key of the staff member "sam": loads and unloads models (api/answers.py)."""
    make_user("sam", is_staff=True)
    return created_key("sam")


def created_key(username: str) -> str:
    out = io.StringIO()
    call_command("create_api_key", username, "--name", "tests", stdout=out)
    return out.getvalue().strip()
