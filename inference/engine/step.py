"""A Step: the tokens of one model call, chosen by a policy and run by the Runner (pure Python)."""

from __future__ import annotations

from dataclasses import dataclass, field

from inference.engine.sequence import Sequence


@dataclass(frozen=True)
class Chunk:
    """One sequence's part of a step: n prompt tokens (prefill) or its next token (decode)."""

    seq: Sequence
    n_tokens: int
    prefill: bool


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
