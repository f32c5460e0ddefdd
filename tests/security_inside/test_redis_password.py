"""Redis asks for a password by default: the one `make run` keeps in the data folder when it starts
Redis itself (scripts/ensure-redis.sh, which scripts/run.sh sources), and the settings add it to
REDIS_URL, so every client of the web and worker connects with it. A Redis without a password
already on the port (a developer's machine, the suite's own) is used as it is, and said so; a
REDIS_URL from the environment is used unchanged."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import redis

from tests.stack import RedisServer
from tests.support import BIN, ROOT, free_port

ENSURE_REDIS = ROOT / "scripts" / "ensure-redis.sh"
# After ensure_redis, a process run.sh starts (web, worker): whether its settings' REDIS_URL holds a
# password, the URL's port, and whether every Redis client of the app connects: redis_client's,
# the arrivals' poll client, the Outbox, the channel layer and Celery's broker connection.
APP_CLIENTS = """
import asyncio, django
django.setup()
from urllib.parse import urlsplit
from channels.layers import get_channel_layer
from django.conf import settings
from homeai.celery import app
from inference import broadcast, redis_client
from inference.dispatch import arrivals

url = urlsplit(settings.REDIS_URL)
asyncio.run(get_channel_layer().group_send("password-probe", {"type": "probe"}))
with app.connection_for_write() as connection:
    connection.ensure_connection(max_retries=1)
pings = redis_client.client().ping() and arrivals._poll_client().ping() and broadcast.Outbox()._connect()
print(bool(url.password), url.port, pings)
"""


def make_run_redis(data: Path, **env: str) -> subprocess.CompletedProcess:
    """scripts/run.sh's Redis step in a shell of its own (data folder `data`), then the app's
    settings in a process started from that shell, as run.sh starts the web and worker."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("REDIS_", "HOMEAI_", "DJANGO_"))}
    clean.update(HOMEAI_DATA_DIR=str(data), DJANGO_SETTINGS_MODULE="homeai.settings", **env)
    script = (
        f"set -euo pipefail; source scripts/ensure-redis.sh; ensure_redis; exec {sys.executable} -c '{APP_CLIENTS}'"
    )
    return subprocess.run(["bash", "-c", script], cwd=ROOT, env=clean, capture_output=True, text=True, timeout=120)


def test_make_run_starts_its_redis_with_a_password_kept_in_the_data_folder(tmp_path):
    port = free_port()
    data = tmp_path / "data"
    first = make_run_redis(data, HOMEAI_REDIS_PORT=str(port))
    password_file = data / "redis_password"
    try:
        assert first.returncode == 0, first.stderr
        password = password_file.read_text()
        assert len(password) >= 32 and (password_file.stat().st_mode & 0o777) == 0o600
        # The web and worker connect with it, through the settings.
        assert first.stdout.split() == ["True", str(port), "True"], first.stderr
        # Without it, Redis refuses.
        with pytest.raises(redis.AuthenticationError):
            redis.Redis(port=port, socket_timeout=5).keys("*")
        # No command line shows it.
        pid = int((data / "redis" / "redis.pid").read_text())
        assert password.encode() not in Path(f"/proc/{pid}/cmdline").read_bytes()

        # The next `make run` finds that Redis and uses the same password.
        again = make_run_redis(data, HOMEAI_REDIS_PORT=str(port))
        assert again.returncode == 0 and "Starting Redis" not in again.stderr, again.stderr
        assert password_file.read_text() == password and int((data / "redis" / "redis.pid").read_text()) == pid
    finally:
        if password_file.exists():
            redis.Redis(port=port, password=password_file.read_text(), socket_timeout=5).shutdown(nosave=True)


def test_make_run_uses_a_redis_without_a_password_that_is_already_there_and_says_so(tmp_path):
    server = RedisServer(tmp_path, log_name="make-run-redis")
    server.start()
    try:
        data = tmp_path / "data"
        result = make_run_redis(data, HOMEAI_REDIS_PORT=str(server.port))
        assert result.returncode == 0, result.stderr
        said = [line for line in result.stderr.splitlines() if "without a password" in line]
        assert len(said) == 1 and f"127.0.0.1:{server.port}" in said[0], result.stderr
        assert result.stdout.split() == ["False", str(server.port), "True"]
        assert not (data / "redis_password").exists()

        # A REDIS_URL of one's own is used as it is: no password added, nothing said.
        url = f"redis://127.0.0.1:{server.port}/3"
        result = make_run_redis(data, REDIS_URL=url)
        assert result.returncode == 0 and result.stderr == "", result.stderr
        assert result.stdout.split() == ["False", str(server.port), "True"]
        assert not (data / "redis_password").exists()
    finally:
        server.stop()


def test_the_redis_scripts_pass_shellcheck():
    scripts = [ROOT / "scripts" / name for name in ("ensure-redis.sh", "run.sh", "test.sh")]
    result = subprocess.run(
        [str(BIN / "shellcheck"), "--severity=style", "--external-sources", *map(str, scripts)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr
