"""A Step: the tokens of one model call, chosen by a policy and run by the Runner (pure Python)."""

from __future__ import annotations

from dataclasses import dataclass, field

from inference.engine.sequence import Sequence


@dataclass(frozen=True)
class Chunk:
    """One sequence's part of a step: n prompt tokens (prefill), or its last token and the
    draft tokens to verify after it (decode: n_tokens = 1 + len(draft))."""

    seq: Sequence
    n_tokens: int
    prefill: bool
    draft: tuple[int, ...] = ()


@dataclass
class Step:
    chunks: list[Chunk] = field(default_factory=list)

    @property
    def num_tokens(self) -> int:
        return sum(c.n_tokens for c in self.chunks)

    @property
    def prefill_tokens(self) -> int:
        return sum(c.n_tokens for c in self.chunks if c.prefill)

    @property
    def decode_tokens(self) -> int:
        return sum(c.n_tokens for c in self.chunks if not c.prefill)

    @property
    def draft_tokens(self) -> int:
        return sum(len(c.draft) for c in self.chunks)


def decode_chunk(seq: Sequence, room: int, base: int = 1) -> Chunk:
    """A decoding sequence's chunk: its last token, and a draft of at most `room` tokens (in a
    step that holds `base` decode tokens with this one's last token)."""
    draft = seq.draft(room, base)
    return Chunk(seq, 1 + len(draft), False, draft)
