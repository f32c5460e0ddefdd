"""A running model of step cost, to size prompt chunks for a target step time (pure Python).

Sarathi-Serve fixes a token budget per step. A fixed number does not travel: 256 tokens is a
long stall on a NAS CPU and nothing on a GPU. So the engine learns what a step costs here:

    step_ms ≈ decode_ms(n_decode) + per_prompt_token_ms × n_prefill

with decode_ms kept per decode count (an EWMA for each) and per_prompt_token_ms an EWMA over
steps that carried enough prompt to measure. The chunk for a target step time is what is left
after the decodes, divided by the per-token cost.

The target is either a fixed step time (target_ms) or relative: stall_factor times what the
running decodes cost alone, i.e. "a pasted document may make the chats' steps at most this
many times slower". The relative form travels from a NAS CPU to a GPU unchanged. With no
decode running nobody can stall, so the prompt goes in as large chunks as the batch allows.
"""

from __future__ import annotations

ALPHA = 0.2  # EWMA weight of the newest observation
MIN_PREFILL_TO_LEARN = 8  # smaller chunks are dominated by fixed overhead


UNLIMITED = 1 << 30  # the scheduler clamps it to the batch size


class StepCostModel:
    def __init__(self, target_ms: float | None, *, stall_factor: float | None = None, min_chunk: int = 16):
        self.target_ms = target_ms or None
        self.stall_factor = stall_factor or None
        self.min_chunk = min_chunk
        self.decode_ms: dict[int, float] = {}
        self.per_prompt_token_ms: float | None = None

    @staticmethod
    def _ewma(old: float | None, new: float) -> float:
        return new if old is None else old + ALPHA * (new - old)

    def decode_cost(self, n_decode: int) -> float:
        if n_decode <= 0:
            return 0.0
        if n_decode in self.decode_ms:
            return self.decode_ms[n_decode]
        known = sorted(self.decode_ms)
        if not known:
            return 0.0
        nearest = min(known, key=lambda n: abs(n - n_decode))
        return self.decode_ms[nearest] * n_decode / nearest  # crude, and soon replaced by data

    def observe(self, *, n_prefill: int, n_decode: int, ms: float) -> None:
        if n_prefill == 0 and n_decode > 0:
            self.decode_ms[n_decode] = self._ewma(self.decode_ms.get(n_decode), ms)
        elif n_prefill >= MIN_PREFILL_TO_LEARN:
            per_token = max(ms - self.decode_cost(n_decode), 0.0) / n_prefill
            self.per_prompt_token_ms = self._ewma(self.per_prompt_token_ms, per_token)

    @property
    def adaptive(self) -> bool:
        return self.target_ms is not None or self.stall_factor is not None

    def target(self, n_decode: int) -> float | None:
        """The step time to aim for with n_decode running decodes, or None while unknown."""
        if self.target_ms is not None:
            return self.target_ms
        if self.stall_factor is not None and n_decode in self.decode_ms:
            return self.stall_factor * self.decode_ms[n_decode]
        return None

    def budget(self, n_decode: int) -> int | None:
        """Tokens (decodes included) that fit the target; None defers to the fixed budget."""
        if not self.adaptive:
            return None
        if n_decode == 0:
            return UNLIMITED
        target = self.target(n_decode)
        if target is None or not self.per_prompt_token_ms:
            return None
        room_ms = target - self.decode_cost(n_decode)
        chunk = int(room_ms / self.per_prompt_token_ms) if room_ms > 0 else 0
        return n_decode + max(chunk, self.min_chunk)
