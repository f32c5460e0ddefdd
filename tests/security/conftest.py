"""Attackers' requests against a real daphne of their own, started with the settings each test
names (a TLS proxy in front, the keyless Ollama mode), on the test database."""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass

import httpx
import pytest

from tests.support import start_daphne


@dataclass
class Web:
    proc: subprocess.Popen
    url: str

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1])

    def rss_kb(self) -> int:
        """The server process's resident memory (VmRSS), in kB."""
        with open(f"/proc/{self.proc.pid}/status") as status:
            return int(re.search(r"^VmRSS:\s+(\d+) kB", status.read(), re.M).group(1))


@pytest.fixture
def start_web(transactional_db):
    """start_web(**env) -> a daphne with these settings; each stopped at the end of the test."""
    started: list[subprocess.Popen] = []

    def start(**env: str) -> Web:
        proc, url = start_daphne("daphne-security", **env)
        started.append(proc)
        return Web(proc, url)

    yield start
    for proc in started:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.fixture(autouse=True)
def _counts_cleared(no_failed_sign_ins):
    """Every test starts, and leaves, with no failed sign-in counted."""


CSRF_FIELD = re.compile(rb'name="csrfmiddlewaretoken" value="([^"]+)"')


def sign_in(url: str, path: str, username: str, password: str, headers: dict | None = None) -> int:
    """A browser's sign-in on a page (GET the form, POST it with its CSRF token): the status."""
    with httpx.Client(base_url=url, headers=headers or {}, timeout=60) as client:
        form = client.get(path)
        token = CSRF_FIELD.search(form.content)
        assert form.status_code == 200 and token, f"no sign-in form at {path}: {form.status_code}"
        data = {"username": username, "password": password, "csrfmiddlewaretoken": token.group(1).decode()}
        return client.post(path, data=data).status_code
