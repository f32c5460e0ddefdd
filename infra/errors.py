"""The one error type a client's bad input raises, whichever door it came in by.

Services raise it; each door turns it into its own shape: the chat socket into a
`generation.error` event (inference.events), the OpenAI API into an error body whose `param` is
`field` (api/errors.py), a page into a message.
"""

from __future__ import annotations


class ClientError(Exception):
    """Bad input from a client: a machine code, a sentence for the person, and what it is about.

    code:       a stable identifier (bad_request, empty_message, too_long, busy, not_found, ...)
    message:    one sentence a person understands, saying what to do
    field:      the request field the sentence is about (max_tokens, temperature, ...), if any
    generation: the answer it concerns, if any (the chat shows the error under that answer)
    """

    def __init__(self, code: str, message: str, *, field: str | None = None, generation: int | None = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.field = field
        self.generation = generation
