"""Bodies bigger than a route takes: refused while they are read, before any key, CSRF token or
parsing, and the server does not grow by what was sent."""

from __future__ import annotations

import json
import select
import socket

import pytest
from django.conf import settings

from homeai import bodylimit

GiB = 2**30
MiB = 2**20
CHUNK = b"x" * (64 * 1024)
FRAME = b"%x\r\n" % len(CHUNK) + CHUNK + b"\r\n"
WAIT_S = 120  # a busy 2-core box: what the socket does, not the clock, ends each wait


def frames(total: int):
    """A chunked body of `total` bytes, made as it is sent (never held in memory)."""
    for _ in range(total // len(CHUNK)):
        yield FRAME


def send_until_answered(port: int, head: bytes, body, give_up_after: int) -> tuple[bytes, int]:
    """Send head, then body's pieces, until the server answers; (its answer, body bytes sent).
    Fails when the server has taken give_up_after bytes without answering."""
    sent = 0
    with socket.create_connection(("127.0.0.1", port), timeout=WAIT_S) as sock:
        sock.sendall(head)
        for piece in body:
            readable, writable, _ = select.select([sock], [sock], [], WAIT_S)
            if readable:
                break
            assert writable, f"the server neither read nor answered for {WAIT_S} s"
            try:
                sock.sendall(piece)
            except (BrokenPipeError, ConnectionResetError):
                break
            sent += len(piece)
            if sent > give_up_after:
                pytest.fail(f"the server read {sent / MiB:.0f} MiB of the body without answering")
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    return answer, sent


def head(port: int, path: str, *extra: bytes) -> bytes:
    lines = [f"POST {path} HTTP/1.1".encode(), f"Host: 127.0.0.1:{port}".encode(), *extra]
    return b"\r\n".join(lines) + b"\r\n\r\n"


def test_a_2_gb_chunked_body_without_a_key_is_refused_at_the_limit_and_the_server_does_not_grow(start_web):
    web = start_web()
    before = web.rss_kb()
    limit = settings.HOMEAI_MAX_BODY_API
    request = head(web.port, "/api/generate", b"Content-Type: application/json", b"Transfer-Encoding: chunked")
    answer, sent = send_until_answered(web.port, request, frames(2 * GiB), give_up_after=limit + 64 * MiB)
    grown_mb = (web.rss_kb() - before) / 1024
    status, _, body = answer.partition(b"\r\n\r\n")
    assert status.startswith(b"HTTP/1.1 413"), answer[:300]
    assert f"{limit:,} bytes" in json.loads(body)["error"]
    assert sent < limit + 16 * MiB
    assert grown_mb < 50, f"daphne grew by {grown_mb:.0f} MB"


@pytest.mark.parametrize(
    ("path", "setting"),
    [("/v1/chat/completions", "HOMEAI_MAX_BODY_API"), ("/accounts/login/", "HOMEAI_MAX_BODY_FORM")],
)
def test_a_declared_length_over_the_routes_limit_is_refused_with_the_setting_named(start_web, path, setting):
    web = start_web()
    limit = getattr(settings, setting)
    request = head(web.port, path, b"Content-Type: application/json", f"Content-Length: {limit + 1}".encode())
    # The kernel's socket buffers take some MiB before daphne reads the head: the answer ends the send.
    answer, _ = send_until_answered(web.port, request, frames(limit + len(CHUNK)), give_up_after=limit + 64 * MiB)
    assert answer.startswith(b"HTTP/1.1 413") and setting.encode() in answer, answer[:300]


def test_the_chat_import_takes_its_own_limit_and_is_refused_past_it_in_the_pages_json(start_web):
    web = start_web(HOMEAI_MAX_IMPORT_BYTES=str(2 * MiB))
    # Past the form routes' limit, within the import's: the whole body is read and Django answers
    # (here the first-run redirect: nobody has an account yet), not daphne's 413.
    size = (settings.HOMEAI_MAX_BODY_FORM // len(CHUNK) + 1) * len(CHUNK)
    extra = (b"Content-Type: application/octet-stream", f"Content-Length: {size}".encode(), b"Connection: close")
    answer, sent = send_until_answered(
        web.port, head(web.port, "/chat/import/", *extra), [CHUNK] * (size // len(CHUNK)), give_up_after=size
    )
    assert sent == size and answer.startswith(b"HTTP/1.1 302") and b"Location: /setup/" in answer, answer[:300]

    declared = 2 * MiB + bodylimit.FORM_OVERHEAD + 1
    extra = (b"Content-Type: multipart/form-data; boundary=x", f"Content-Length: {declared}".encode())
    answer, _ = send_until_answered(
        web.port, head(web.port, "/chat/import/", *extra), frames(declared + len(CHUNK)), give_up_after=64 * MiB
    )
    status, _, body = answer.partition(b"\r\n\r\n")
    assert status.startswith(b"HTTP/1.1 413"), answer[:300]
    assert json.loads(body) == {
        "code": "too_large",
        "message": "The file is larger than the 2,097,152 bytes this server imports; "
        "import a smaller one (the limit is HOMEAI_MAX_IMPORT_BYTES).",
        "field": "file",
    }
