"""The one error type the engine raises at a person's request (pure Python, no llama.cpp)."""

from __future__ import annotations


class EngineError(Exception):
    """An error a user can meet, with a code and a sentence a person understands."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code
        self.message = message
