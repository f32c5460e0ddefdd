"""Request bodies capped while they are read, per route, before anything else sees them.

Daphne (through Twisted) reads a whole request body into a file before it calls the ASGI app,
then puts all of it on the app's queue at once: a check in the app, or an ASGI middleware,
comes after the memory is spent (a 300 MB chunked body with no API key grew the web process by
291 MB before its 401). So the cap sits in daphne's request itself: every chunk, of a
Content-Length body or a chunked one, is counted as it arrives, and past the route's limit the
request is answered 413 at once, never passed to the app, and the rest of its bytes are dropped
unread until the client stops (the connection then closes). A declared Content-Length over the
limit is answered before a byte of the body is read (and before any 100 Continue).

Routes: the machine APIs (/v1/, /api/) take HOMEAI_MAX_BODY_API bytes; every other route (forms,
the pages' JSON) HOMEAI_MAX_BODY_FORM; the chat's import (/chat/import/, one uploaded file)
HOMEAI_MAX_IMPORT_BYTES and room for the form around the file; the documents page's uploads
and a chat's attached files (/chat/attach/) HOMEAI_DOCUMENT_MAX_MB (and the form's few fields).
WebSocket messages are capped by daphne itself (1 MiB a message and a frame).
"""

from __future__ import annotations

import json
import re

from daphne import http_protocol
from django.conf import settings
from twisted.internet import reactor

from homeai.api_handler import API_PREFIXES

UPLOAD_ROUTE = re.compile(rb"/documents/[0-9]+/upload/|/chat/attach/")
LINGER_S = 5.0  # how long a refused client may go on sending (dropped) before the connection is cut


IMPORT_PATH = b"/chat/import/"
FORM_OVERHEAD = 64 * 1024  # the multipart form around an imported file: boundaries, headers, the CSRF field


def limit_for(path: bytes) -> int:
    """The most body bytes a request for this path (its target, query included) may send."""
    if path == IMPORT_PATH or path.startswith(IMPORT_PATH + b"?"):
        return settings.HOMEAI_MAX_IMPORT_BYTES + FORM_OVERHEAD
    if path.startswith(tuple(p.encode() for p in API_PREFIXES)):
        return settings.HOMEAI_MAX_BODY_API
    if UPLOAD_ROUTE.fullmatch(path.split(b"?", 1)[0]):
        return settings.HOMEAI_DOCUMENT_MAX_MB * 1_000_000 + settings.HOMEAI_MAX_BODY_FORM
    return settings.HOMEAI_MAX_BODY_FORM


def refusal(path: bytes, limit: int) -> tuple[bytes, bytes]:
    """The 413's content type and body, in the route's own terms (OpenAI's error object, Ollama's,
    or a sentence)."""
    message = (
        f"The request body is larger than the {limit:,} bytes this server accepts here; "
        "send a smaller one (the limit is HOMEAI_MAX_BODY_API for /v1/ and /api/, HOMEAI_DOCUMENT_MAX_MB for "
        "a document's upload, HOMEAI_MAX_BODY_FORM elsewhere)."
    )
    if path.startswith(IMPORT_PATH):  # the chat page reads its JSON endpoints' {code, message, field}
        message = (
            f"The file is larger than the {limit - FORM_OVERHEAD:,} bytes this server imports; "
            "import a smaller one (the limit is HOMEAI_MAX_IMPORT_BYTES)."
        )
        body = {"code": "too_large", "message": message, "field": "file"}
        return b"application/json", json.dumps(body).encode()
    if path.startswith(b"/v1/"):
        error = {"message": message, "type": "invalid_request_error", "param": None, "code": "body_too_large"}
        return b"application/json", json.dumps({"error": error}).encode()
    if path.startswith(b"/api/"):
        return b"application/json", json.dumps({"error": message}).encode()
    return b"text/plain; charset=utf-8", message.encode() + b"\n"


class BodyLimitedRequest(http_protocol.WebRequest):
    """Daphne's request, counting body bytes as Twisted hands them over."""

    refused = False
    body_read = 0
    body_limit = 0

    def gotLength(self, length):  # noqa: N802 (Twisted's name)
        # The request line is parsed; Request.path is set only once the whole body is in, so
        # the target comes from the channel that parsed it.
        self.target = getattr(self.channel, "_path", b"") or b""
        self.body_limit = limit_for(self.target)
        if length is not None and length > self.body_limit:
            self.refuse()
            length = 0
        super().gotLength(length)

    def handleContentChunk(self, data):  # noqa: N802 (Twisted's name)
        if self.refused:
            return
        self.body_read += len(data)
        if self.body_read > self.body_limit:
            self.refuse()
            return
        super().handleContentChunk(data)

    def requestReceived(self, command, path, version):  # noqa: N802 (Twisted's name)
        if not self.refused:  # a refused request never reaches the app
            super().requestReceived(command, path, version)

    def refuse(self) -> None:
        """Answer 413 and close this side; what the client still sends is read and dropped until it
        stops, so it reads the answer rather than a reset, or for LINGER_S at most."""
        self.refused = True
        content_type, body = refusal(self.target, self.body_limit)
        head = (
            b"HTTP/1.1 413 Content Too Large\r\n"
            b"Content-Type: " + content_type + b"\r\n"
            b"Content-Length: " + str(len(body)).encode() + b"\r\n"
            b"Connection: close\r\n\r\n"
        )
        transport = self.channel.transport
        transport.write(head + body)
        transport.loseWriteConnection()
        reactor.callLater(LINGER_S, transport.abortConnection)


def limit_request_bodies() -> None:
    """Daphne's HTTP factory builds BodyLimitedRequest from now on (it looks the class up by name
    on every connection). Called by homeai/asgi.py, which daphne imports before it listens."""
    http_protocol.WebRequest = BodyLimitedRequest
