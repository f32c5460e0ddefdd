"""Prompt-lookup (n-gram) drafting for speculative decoding (pure Python, no llama.cpp).

An answer often repeats its own context: a quoted sentence, an edited function, a list that
continues a pattern. The text's latest n tokens (n from `n_max` down to `n_min`) are looked up
earlier in the same text (prompt + answer so far), and the tokens that followed them there are
the draft (llama.cpp's lookup decoding, `--spec-type ngram`). The engine puts the sequence's
last token and the draft in one batch with logits at every position and keeps the draft's
tokens for as long as the sequence's own sampler picks them (engine.py): the text is the one
decoding token by token would give, only in fewer model steps.

The draft length adapts: it doubles after a draft taken whole, falls to what was accepted plus
one after a partial one, and after `patience` drafts in a row with nothing accepted the sequence
stops drafting for `rest` steps (free writing seldom repeats itself: a wrong draft costs a
bigger batch and buys nothing).
"""

from __future__ import annotations

N_MAX = 3
N_MIN = 2
K_MAX = 8
K_START = 4
PATIENCE = 2
REST = 8


class PromptLookup:
    """The n-gram index of one sequence's text, and its adaptive draft length."""

    def __init__(
        self,
        *,
        n_max: int = N_MAX,
        n_min: int = N_MIN,
        k_max: int = K_MAX,
        k_start: int = K_START,
        patience: int = PATIENCE,
        rest: int = REST,
    ):
        self.n_max, self.n_min, self.k_max = n_max, n_min, k_max
        self.k = min(k_start, k_max)
        self.patience, self.rest = patience, rest
        self.tokens: list[int] = []
        # n-gram -> where the token after its latest earlier occurrence is (an index into tokens)
        self._next: dict[tuple[int, ...], int] = {}
        self._misses = 0  # drafts in a row with nothing accepted
        self._resting = 0  # steps left without a draft

    def extend(self, tokens: list[int]) -> None:
        """Add tokens of the text (the prompt, then each answer token as it is emitted)."""
        for token in tokens:
            end = len(self.tokens)
            for n in range(self.n_min, self.n_max + 1):
                if end >= n:
                    self._next[tuple(self.tokens[end - n : end])] = end
            self.tokens.append(token)

    def draft(self, limit: int) -> list[int]:
        """Up to min(k, limit) tokens that followed the longest recent n-gram suffix before; []
        when none matched, when resting, or when limit < 1."""
        if self._resting:
            self._resting -= 1
            return []
        limit = min(self.k, limit)
        if limit < 1:
            return []
        tokens = self.tokens
        for n in range(self.n_max, self.n_min - 1, -1):
            if len(tokens) <= n:
                continue
            start = self._next.get(tuple(tokens[-n:]))
            if start is not None:
                return tokens[start : start + limit]
        return []

    def feedback(self, drafted: int, accepted: int) -> None:
        """What the sampler kept of the latest draft: sizes the next one."""
        if accepted >= drafted:
            self.k = min(self.k * 2, self.k_max)
        else:
            self.k = max(accepted + 1, 1)
        if accepted:
            self._misses = 0
            return
        self._misses += 1
        if self._misses >= self.patience:
            self._misses = 0
            self._resting = self.rest


def speculation_rates(drafted: int | None, accepted: int | None, output_tokens: int | None, steps: int | None) -> dict:
    """An answer's acceptance rate (accepted / drafted tokens) and output tokens per decode
    step; None where nothing was drafted or no step ran."""
    return {
        "acceptance": accepted / drafted if drafted and accepted is not None else None,
        "tokens_per_step": output_tokens / steps if steps and output_tokens is not None else None,
    }
