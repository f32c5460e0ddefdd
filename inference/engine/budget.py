"""A running model of step cost, to size prompt chunks for a target step time (pure Python).

Sarathi-Serve fixes a token budget per step. A fixed number does not travel: 256 tokens is a
long stall on a NAS CPU and nothing on a GPU. So the engine learns what a step costs here:

    step_ms ≈ decode_ms(n_decode) + per_prompt_token_ms × n_prefill

with decode_ms kept per decode count (an EWMA for each) and per_prompt_token_ms an EWMA over
steps that carried enough prompt to measure. The chunk for a target step time is what is left
after the decodes, divided by the per-token cost.
"""

from __future__ import annotations

ALPHA = 0.2  # EWMA weight of the newest observation
MIN_PREFILL_TO_LEARN = 8  # smaller chunks are dominated by fixed overhead


class StepCostModel:
    def __init__(self, target_ms: float | None, *, min_chunk: int = 16):
        self.target_ms = target_ms
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

    def budget(self, n_decode: int) -> int | None:
        """Tokens (decodes included) that fit the target; None until there is a target and data."""
        if self.target_ms is None or not self.per_prompt_token_ms:
            return None
        room_ms = self.target_ms - self.decode_cost(n_decode)
        chunk = int(room_ms / self.per_prompt_token_ms) if room_ms > 0 else 0
        return n_decode + max(chunk, self.min_chunk)
