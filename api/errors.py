"""Errors as the APIs answer them: ApiError (an HTTP status and OpenAI's error object; Ollama's
wire gives it its own shape), and what HomeAI's ClientError and the engine's error codes become.
"""

from __future__ import annotations

from typing import Protocol

from django.http import JsonResponse

from infra.errors import ClientError


class ApiError(Exception):
    """An error answered as OpenAI does: an HTTP status and {"error": {message, type, param, code}}."""

    def __init__(self, status: int, message: str, *, code: str | None = None, param: str | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code
        self.param = param

    @property
    def type(self) -> str:
        # OpenAI's own choice: every client error (a bad key included) is an invalid request.
        return "server_error" if self.status >= 500 else "invalid_request_error"

    def body(self) -> dict:
        return {"error": {"message": self.message, "type": self.type, "param": self.param, "code": self.code}}

    def response(self) -> JsonResponse:
        response = JsonResponse(self.body(), status=self.status)
        if self.status == 401:
            response["WWW-Authenticate"] = 'Bearer realm="HomeAI"'
        if self.status == 503:
            response["Retry-After"] = "5"
        return response


def bad_request(message: str, param: str | None, code: str = "invalid_value") -> ApiError:
    return ApiError(400, message, code=code, param=param)


class ChatOrPrompt(Protocol):
    """A parsed request (OpenAI's or Ollama's): a chat (messages) or a prompt."""

    chat: bool


def from_client_error(exc: ClientError, request: ChatOrPrompt | None = None) -> ApiError:
    """A service's ClientError as an OpenAI error; its field is the param (the message text is
    the request's messages or prompt)."""
    if exc.code == "busy":
        return ApiError(503, exc.message, code="server_busy")
    if exc.code == "limit_reached":  # the person's daily limit: OpenAI's "out of quota"
        return ApiError(429, exc.message, code="insufficient_quota")
    if exc.code in ("not_found", "model_not_found"):
        return ApiError(404, exc.message, code=exc.code, param=exc.field)
    param = exc.field
    if param in (None, "text") and request is not None:
        param = "messages" if request.chat else "prompt"
    if exc.code == "empty_message":
        what = "The last message" if request is None or request.chat else "The prompt"
        return ApiError(400, f"{what} is empty: send some text.", code="empty_message", param=param)
    return ApiError(400, exc.message, code=exc.code if exc.code != "bad_request" else "invalid_value", param=param)


def from_engine_error(code: str, message: str) -> ApiError:
    """An error event from the worker (the request was valid, the answer could not be written)."""
    if code == "context_overflow":
        return ApiError(400, message, code="context_length_exceeded", param="messages")
    if code == "invalid_schema":
        return ApiError(400, message, code="invalid_schema", param="response_format")
    if code in ("interrupted", "model_missing", "model_unusable"):
        return ApiError(503, message, code=code)
    return ApiError(500, message, code=code)
