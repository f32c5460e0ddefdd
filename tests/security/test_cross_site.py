"""The keyless Ollama API against web pages: a page on another site, open in a household member's
browser, cannot make it answer (a no-cors POST needs no preflight, so only the server can refuse)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest
import websockets.exceptions
import websockets.sync.client
from playwright.sync_api import sync_playwright

from inference.models import Generation
from tests import factories
from tests.api.test_openai_api import MODEL
from tests.support import launch_chromium

pytestmark = [pytest.mark.integration]

KEYLESS = {"HOMEAI_OLLAMA_KEYLESS_USER": "household"}
PROMPT = {"model": MODEL, "prompt": "Say yes.", "stream": False, "options": {"num_predict": 2}}


class ElsewherePage(BaseHTTPRequestHandler):
    """Any site on the internet: one blank page."""

    def do_GET(self):  # noqa: N802 (the standard library's name)
        body = b"<!doctype html><title>elsewhere</title>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def elsewhere():
    """The URL of a page on another origin (another port of this machine)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), ElsewherePage)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


def test_a_page_on_another_site_cannot_make_the_keyless_api_answer(start_web, worker, settled, elsewhere, monkeypatch):
    factories.user("household")
    web = start_web(**KEYLESS)
    target = web.url + "/api/generate"
    before = Generation.objects.count()
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")  # Playwright's sync API keeps a loop here
    with sync_playwright() as p:
        chromium = launch_chromium(p)
        page = chromium.new_page()
        page.goto(elsewhere)
        with page.expect_response(target, timeout=120_000) as seen:
            page.evaluate(
                """([url, body]) => fetch(url, {mode: "no-cors", method: "POST", body}).catch(() => null)""",
                [target, json.dumps(PROMPT)],
            )
        status = seen.value.status
        chromium.close()
    assert status == 403, f"the server answered {status}"
    assert Generation.objects.count() == before  # nothing was queued, nothing written


def test_the_keyless_api_still_answers_a_client_on_the_home_network(start_web):
    factories.user("household")
    web = start_web(**KEYLESS)
    answer = httpx.get(web.url + "/api/tags", timeout=60)
    assert answer.status_code == 200 and "models" in answer.json()
    refused = httpx.post(
        web.url + "/api/generate", content=json.dumps(PROMPT), timeout=60, headers={"Content-Type": "text/plain"}
    )
    assert refused.status_code == 403 and "application/json" in refused.json()["error"]


def test_a_rebound_dns_name_gets_no_page_and_no_socket(start_web):
    """A site that points its own name at the server's address, to read its pages as same-origin."""
    factories.user("household")
    web = start_web()
    rebound = "rebind.example:8000"
    assert httpx.get(web.url + "/accounts/login/", headers={"Host": rebound}, timeout=60).status_code == 400
    assert httpx.get(web.url + "/api/tags", headers={"Host": rebound}, timeout=60).status_code == 400
    socket_url = web.url.replace("http://", "ws://") + "/ws/chat/"
    with pytest.raises(websockets.exceptions.InvalidStatus):
        with websockets.sync.client.connect(
            socket_url, additional_headers={"Host": rebound, "Origin": f"http://{rebound}"}, open_timeout=60
        ):
            pass
    assert httpx.get(web.url + "/accounts/login/", timeout=60).status_code == 200


@pytest.mark.parametrize("host", ["192.168.77.5:8000", "[fd00::5]:8000", "nas:8000", "nas.local", "ai.home.arpa:8000"])
def test_the_names_a_household_types_work_with_no_setting(start_web, host):
    """The NAS's LAN address (in a container, not among the machine's own), its bare or .local
    name: no page on the internet can point those at the box, so they need no HOMEAI_PUBLIC_URL."""
    factories.user("household")
    web = start_web()
    assert httpx.get(web.url + "/accounts/login/", headers={"Host": host}, timeout=60).status_code == 200


def test_allowed_hosts_replaces_the_rule(start_web):
    factories.user("household")
    web = start_web(ALLOWED_HOSTS="ai.example.org,127.0.0.1")
    assert httpx.get(web.url + "/accounts/login/", headers={"Host": "ai.example.org"}, timeout=60).status_code == 200
    assert httpx.get(web.url + "/accounts/login/", headers={"Host": "nas.local"}, timeout=60).status_code == 400
