"""What a pull that cannot go on raises: a stable code and a sentence a person understands."""

from __future__ import annotations


class PullError(Exception):
    """code: bad_name, not_found, unreachable, registry_error, digest_mismatch, not_gguf,
    disk_full, cancelled, busy (another pull writes the same file); message: one sentence saying
    what happened and what to do."""

    def __init__(self, code: str, message: str, *, status: int = 500):
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status  # the HTTP status Ollama answers such an error with


class PullCancelled(PullError):
    def __init__(self, name: str):
        super().__init__("cancelled", f"The pull of {name} was cancelled.", status=499)
