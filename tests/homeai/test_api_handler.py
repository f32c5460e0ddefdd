"""The machine APIs' own Django handler: the headers and language the site's middleware gives,
without the browser middleware."""

from __future__ import annotations

import asyncio
import json
import threading

import pytest
from asgiref.testing import ApplicationCommunicator
from django.core import signals

from homeai.api_handler import ApiHandler, is_api


def _get(app, path: str, headers: list[tuple[bytes, bytes]] = ()) -> tuple[int, dict[bytes, bytes], bytes]:
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": b"",
        "headers": [(b"host", b"127.0.0.1:8000"), *headers],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8000),
    }

    async def run():
        talk = ApplicationCommunicator(app, scope)
        await talk.send_input({"type": "http.request", "body": b"", "more_body": False})
        start = await talk.receive_output(timeout=30)
        body = b""
        while True:
            part = await talk.receive_output(timeout=30)
            body += part.get("body", b"")
            if not part.get("more_body"):
                await talk.wait(timeout=30)  # the handler's end: its response closed
                return start["status"], dict(start["headers"]), body

    return asyncio.run(run())


def test_an_api_response_carries_the_sites_security_headers_and_language():
    status, headers, body = _get(ApiHandler(), "/v1/models", [(b"accept-language", b"ko")])
    assert status == 401
    assert json.loads(body)["error"]["code"] == "missing_api_key"
    assert headers[b"X-Content-Type-Options"] == b"nosniff"
    assert headers[b"X-Frame-Options"] == b"DENY"
    assert headers[b"Content-Language"] == b"ko"
    assert int(headers[b"Content-Length"]) == len(body)
    assert b"Set-Cookie" not in headers  # no session, no CSRF cookie


@pytest.mark.parametrize(
    ("path", "root_path", "api"),
    [
        ("/v1/chat/completions", "", True),
        ("/api/chat", "", True),
        ("/homeai/v1/models", "/homeai", True),
        ("/chat/", "", False),
        ("/apis", "", False),
        ("/v1", "", False),  # Django's 404 page, from the site
    ],
)
def test_api_paths_are_told_apart_under_a_root_path_too(path, root_path, api):
    assert is_api({"path": path, "root_path": root_path}) is api


def test_an_api_request_starts_no_thread_and_still_closes_its_response():
    """No request_started (its receivers ran in a thread started for each request) and no
    ThreadSensitiveContext; the response is still closed, which sends request_finished."""
    started, finished = [], []

    def on_started(**kwargs):
        started.append(kwargs["sender"])

    def on_finished(**kwargs):
        finished.append(threading.current_thread())

    signals.request_started.connect(on_started)
    signals.request_finished.connect(on_finished)
    try:
        status, _, _ = _get(ApiHandler(), "/v1/models")
    finally:
        signals.request_started.disconnect(on_started)
        signals.request_finished.disconnect(on_finished)
    assert status == 401
    assert started == []
    assert finished == [threading.main_thread()]  # asyncio.run's loop: the request's own thread
