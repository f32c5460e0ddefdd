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

With `step_cost` (the engine passes what its steps have measured to cost, budget.StepCostModel)
a draft is sized by what it is worth instead: k tokens drafted give 1 + p + p^2 + ... + p^k
tokens in expectation, p the sequence's recent per-token acceptance, for a step that costs
step_cost(n + k) instead of step_cost(n). The draft is the k that gives the most tokens per ms,
and none when no k beats a plain step by MIN_GAIN. On a CPU a 2-token step can cost nearly two
1-token steps, on a GPU barely more than one; the engine's measurements say which. p stays up
to date while nothing is drafted, at no cost: the draft that would have been sent is compared
with the tokens the model then picks (its shadow).
"""

from __future__ import annotations

from collections.abc import Callable

N_MAX = 3
N_MIN = 2
K_MAX = 8
K_START = 4
PATIENCE = 2
REST = 8
MIN_GAIN = 1.05  # a draft must promise this many times a plain step's tokens per ms
DECAY = 0.9  # per update of the acceptance estimate: about the last ten drafts count
# An unmeasured step size is assumed to cost this much more per drafted token (relative to
# the step without it): hopeful enough to be tried, after which the measurement decides.
PRIOR_SLOPE = 0.5
# The longest draft the engine sizes by cost: a 16-token step cost Gemma 3 4.8 one-token steps
# on a 2-core AVX2 CPU (bench/batch_cost.py), so a copied span can pay for long drafts.
DRAFT_MAX = 15
COSTS_EVERY = 16  # drafts between two workings-out of the step costs


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
        step_cost: Callable[[int], float | None] | None = None,
    ):
        self.n_max, self.n_min, self.k_max = n_max, n_min, k_max
        self.k = min(k_start, k_max)
        self.patience, self.rest = patience, rest
        self.step_cost = step_cost  # ms of a decode step of n tokens; None where not measured
        self._hits, self._trials = 1.0, 2.0  # draft tokens accepted / judged, decayed (p = 0.5 at first)
        self._shadow: list[int] = []  # the draft not sent, being compared with the answer
        self._sent_from = 0  # where in tokens the latest draft was copied from
        # While drafts are accepted, the next one goes on copying from the same place: this
        # many tokens behind the text's end, past the token the model put in place of the
        # draft's first rejected one. An edit renames in place (x -> values on every line of a
        # function), and there the n-gram's latest occurrence is the answer's previous line,
        # with the previous line's numbers. None: look the n-gram up.
        self._copy_lag: int | None = None
        self._costs: tuple[int, int, list[float]] | None = None  # (base, steps left, costs)
        self.tokens: list[int] = []
        # n-gram -> where the token after its latest earlier occurrence is (an index into tokens)
        self._next: dict[tuple[int, ...], int] = {}
        self._misses = 0  # drafts in a row with nothing accepted
        self._resting = 0  # steps left without a draft

    def extend(self, tokens: list[int]) -> None:
        """Add tokens of the text (the prompt, then each answer token as it is emitted)."""
        for token in tokens:
            if self._shadow:
                self._judge_shadow(token)
            end = len(self.tokens)
            for n in range(self.n_min, self.n_max + 1):
                if end >= n:
                    self._next[tuple(self.tokens[end - n : end])] = end
            self.tokens.append(token)

    def draft(self, limit: int, base: int = 1) -> list[int]:
        """Up to min(k, limit) tokens that followed the longest recent n-gram suffix before; []
        when none matched, when resting, or when limit < 1. With step_cost, as many of them as
        pay best in a step that already holds `base` tokens (maybe none)."""
        if self._resting:
            self._resting -= 1
            return []
        limit = min(self.k if self.step_cost is None else self.k_max, limit)
        if limit < 1:
            return []
        tokens = self.tokens
        start = len(tokens) - self._copy_lag if self._copy_lag is not None else self._lookup()
        if start is None:
            return []
        found = tokens[start : start + limit]
        k = len(found) if self.step_cost is None else self._worth(len(found), base)
        if k == 0 and not self._shadow:
            self._shadow = found
        self._sent_from = start
        return found[:k]

    def _lookup(self) -> int | None:
        """Where the text went on after the latest earlier occurrence of its longest suffix."""
        tokens = self.tokens
        for n in range(self.n_max, self.n_min - 1, -1):
            if len(tokens) > n and (start := self._next.get(tuple(tokens[-n:]))) is not None:
                return start
        return None

    @property
    def acceptance(self) -> float:
        """The recent chance that a draft token is accepted when the one before it was."""
        return self._hits / self._trials

    def _learn(self, accepted: int, judged: int) -> None:
        self._hits = self._hits * DECAY + accepted
        self._trials = self._trials * DECAY + judged

    def _judge_shadow(self, token: int) -> None:
        """The answer's next token against the shadow draft: a hit, or the shadow's end."""
        if token == self._shadow[0]:
            del self._shadow[0]
            self._learn(1, 1)
        else:
            self._shadow = []
            self._learn(0, 1)
            self._copy_lag = None  # the answer left the place it was copying: look the n-gram up

    def _worth(self, k_max: int, base: int) -> int:
        """The draft length, 0 to k_max, that gives the most tokens per ms of the step."""
        costs = self._costs_from(base, k_max)
        p = self.acceptance
        best_k, best = 0, MIN_GAIN
        expected = 0.0  # draft tokens accepted, in expectation
        for k in range(1, k_max + 1):
            expected += p**k
            gain = (base + expected) / base / (costs[k] / costs[0])
            if gain > best:
                best_k, best = k, gain
        return best_k

    def _costs_from(self, base: int, k_max: int) -> list[float]:
        """_step_costs(base, base + k_max), worked out again every COSTS_EVERY drafts (the
        costs move slowly, and working them out takes a sixtieth of a small model's step)."""
        cached = self._costs
        if cached is None or cached[0] != base or cached[1] <= 0 or len(cached[2]) <= k_max:
            cached = (base, COSTS_EVERY, self._step_costs(base, base + max(DRAFT_MAX, k_max)))
        self._costs = (base, cached[1] - 1, cached[2])
        return cached[2]

    def _step_costs(self, first: int, last: int) -> list[float]:
        """What steps of first..last tokens cost: measured where measured, in between on a line
        from the measured neighbours, past the largest measured one PRIOR_SLOPE of a step per
        token more (hopeful, so that a longer draft is tried and measured)."""
        measured = {n: ms for n in range(first, last + 1) if (ms := self.step_cost(n))}
        if first not in measured:
            measured = {first: 1.0}  # no step of this size yet: relative costs from the prior alone
        known = sorted(measured)
        costs = []
        for n in range(first, last + 1):
            below = max(m for m in known if m <= n)
            above = [m for m in known if m > n]
            if n in measured:
                costs.append(measured[n])
            elif above:
                hi = above[0]
                costs.append(measured[below] + (measured[hi] - measured[below]) * (n - below) / (hi - below))
            else:
                costs.append(measured[below] + PRIOR_SLOPE * measured[first] * (n - below) / first)
        return costs

    def feedback(self, drafted: int, accepted: int) -> None:
        """What the sampler kept of the latest draft: sizes the next one, and where it copies
        from (the same place, past what the step emitted, while drafts are accepted)."""
        self._shadow = []
        self._learn(accepted, accepted + (accepted < drafted))
        # The step emits the accepted tokens and one more; the copy goes on past both.
        self._copy_lag = len(self.tokens) - self._sent_from if accepted else None
        if self.step_cost is not None:
            return  # the next draft's length comes from the costs and the acceptance
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
