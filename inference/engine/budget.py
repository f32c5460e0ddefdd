"""A running model of step cost, to size prompt chunks for a target step time (pure Python).

Sarathi-Serve fixes a token budget per step. A fixed number does not travel: 256 tokens is a
long stall on a NAS CPU and nothing on a GPU. So the engine learns what a step costs here:

    step_ms ≈ decode_ms(n_decode) + per_prompt_token_ms × n_prefill

with decode_ms the median of the recent decode-only steps per decode count, and
per_prompt_token_ms the median of what the prompt tokens of the recent mixed steps (decodes and
a prompt chunk) cost. The chunk for a target step time is what is left after the decodes,
divided by the per-token cost.

Why medians of recent steps and not averages: on a shared box one slow step (another process
took the core) is common, and an average remembers it for many steps. An inflated decode cost
raises the target itself (the target is relative to it), and the chats then stall more than
asked: measured here, one 49 ms outlier among 28 ms steps made a 2x target behave like 2.8x.

Why only mixed steps teach the prompt cost: a prompt token is much cheaper inside a 500-token
batch than in the 16–30-token chunks that fit beside running decodes (llama.cpp's CPU kernels
reuse weights and use tiled attention only for large batches: 1.9 against 2.5 ms per token on
the development box). Chunks are only sized while something decodes, so only such steps say what
a chunk will cost. Until one has been seen, a chunk is min_chunk tokens: small, and it teaches.

The target is either a fixed step time (target_ms) or relative: stall_factor times what the
running decodes cost alone, i.e. "a pasted document may make the chats' steps at most this
many times slower". The relative form travels from a NAS CPU to a GPU unchanged. With no
decode running nobody can stall, so the prompt goes in as large chunks as the batch allows.

A per-step target alone staggers prompts that arrive together. Four questions sent at once: the
first is read alone (nothing decodes yet), and the other three then trickle in beside its one
decode, a few tokens a step, each answer starting a few steps after the one before. The steps
then run one to three decodes wide at the start and the end, where four would cost little more
than one (measured on a 2-core box: 16 answers of 64 tokens in 8.57 s against llama-server's
8.05 s, which reads the four prompts in one step). So a step may also take whole prompts
beyond the target, up to burst_ms of them, from an allowance that is whole after any step nobody decoded in and
refills by what each later step leaves of its target (a token bucket): prompts that come
together start together, the chats pause once by at most burst_ms, and a document pasted beside
writing chats is still read only in slices that keep to the target (it never fits whole).
"""

from __future__ import annotations

import statistics
from collections import deque

WINDOW = 9  # recent steps per estimate: enough to outvote a noisy step, few enough to follow drift
MIN_PREFILL_TO_LEARN = 8  # smaller chunks are dominated by fixed overhead
MIN_MEASURED = 3  # steps of a size seen before measured_decode_ms() answers for it


UNLIMITED = 1 << 30  # the scheduler clamps it to the batch size


class StepCostModel:
    def __init__(
        self,
        target_ms: float | None,
        *,
        stall_factor: float | None = None,
        min_chunk: int = 16,
        burst_ms: float = 0.0,
    ):
        self.target_ms = target_ms or None
        self.stall_factor = stall_factor or None
        self.min_chunk = min_chunk
        self.burst_ms = max(burst_ms, 0.0)
        self.allowance_ms = self.burst_ms  # what the next step's whole prompts may add past the target
        self._decode: dict[int, deque[float]] = {}
        self._per_token: deque[float] = deque(maxlen=WINDOW)
        self._per_token_alone: deque[float] = deque(maxlen=WINDOW)  # prompt-only steps, per token
        self.last_n_decode = 0  # decodes in the latest step that had any: what "now" looks like

    @property
    def per_prompt_token_ms(self) -> float | None:
        """What one prompt token adds to a step that also decodes; None until seen."""
        return statistics.median(self._per_token) if self._per_token else None

    def measured_decode_ms(self, n_decode: int) -> float | None:
        """What a decode-only step of n_decode tokens has cost here (the median of recent
        ones), or None before MIN_MEASURED were seen (speculation.py sizes drafts by it: the
        first step of a new size is often slow, llama.cpp sizing its buffers for it, and one
        such step alone would keep that size from being tried again)."""
        times = self._decode.get(n_decode)
        return statistics.median(times) if times and len(times) >= MIN_MEASURED else None

    def decode_cost(self, n_decode: int) -> float | None:
        if n_decode <= 0:
            return 0.0
        if n_decode in self._decode:
            return statistics.median(self._decode[n_decode])
        if not self._decode:
            return None
        # tuple(): a copy, as status() reads this from the heartbeat thread
        nearest = min(tuple(self._decode), key=lambda n: abs(n - n_decode))
        return statistics.median(self._decode[nearest]) * n_decode / nearest  # crude, soon replaced by data

    def observe(self, *, n_prefill: int, n_decode: int, ms: float) -> None:
        if n_decode <= 0:
            # A prompt-only step: nobody waited on it, so the allowance is whole again; and its
            # per-token cost misleads for chunks (it only stands in for the burst's, below).
            self.allowance_ms = self.burst_ms
            if n_prefill >= MIN_PREFILL_TO_LEARN:
                self._per_token_alone.append(ms / n_prefill)
            return
        self.last_n_decode = n_decode
        if n_prefill == 0:
            self._decode.setdefault(n_decode, deque(maxlen=WINDOW)).append(ms)
        elif n_prefill >= MIN_PREFILL_TO_LEARN:
            decode = self.decode_cost(n_decode)
            if decode is not None:
                self._per_token.append(max(ms - decode, 0.0) / n_prefill)
        target = self.target(n_decode)
        if target is not None:  # a step over its target spends the allowance, one under refills it
            self.allowance_ms = min(self.burst_ms, max(0.0, self.allowance_ms + target - ms))

    @property
    def adaptive(self) -> bool:
        return self.target_ms is not None or self.stall_factor is not None

    def target(self, n_decode: int) -> float | None:
        """The step time to aim for with n_decode running decodes, or None while unknown."""
        if self.target_ms is not None:
            return self.target_ms
        if self.stall_factor is not None and n_decode in self._decode:
            return self.stall_factor * statistics.median(self._decode[n_decode])
        return None

    def budget(self, n_decode: int) -> int | None:
        """Tokens (decodes included) that fit the target; None defers to the fixed budget."""
        if not self.adaptive:
            return None
        if n_decode == 0:
            return UNLIMITED
        target = self.target(n_decode)
        if target is None:
            return None
        per_token = self.per_prompt_token_ms
        if not per_token:
            return n_decode + self.min_chunk  # the first chunk beside decodes: small, and it teaches
        room_ms = target - (self.decode_cost(n_decode) or 0.0)
        chunk = int(room_ms / per_token) if room_ms > 0 else 0
        return n_decode + max(chunk, self.min_chunk)

    def burst_tokens(self, n_decode: int) -> int:
        """Prompt tokens the allowance adds past budget(n_decode), for prompts that then fit
        whole (the policy's to enforce); 0 while the target or a prompt token's cost is unknown.
        Before a chunk has taught that cost, what prompt-only steps cost per token stands in: it
        is lower, so the first burst may run past burst_ms by that much, and what the step then
        really took is spent from the allowance all the same."""
        per_token = self.per_prompt_token_ms
        if per_token is None and self._per_token_alone:
            per_token = statistics.median(self._per_token_alone)
        if n_decode <= 0 or not per_token or self.target(n_decode) is None:
            return 0
        return int(self.allowance_ms / per_token)

    def describe(self, n_decode: int) -> dict:
        """What sizes a chunk beside n_decode running decodes, in numbers a person can check."""
        return {
            "mode": "target" if self.target_ms is not None else ("stall" if self.stall_factor else "fixed"),
            "stall_factor": self.stall_factor,
            "n_decode": n_decode,
            "decode_ms": self.decode_cost(n_decode),
            "target_ms": self.target(n_decode),
            "prompt_token_ms": self.per_prompt_token_ms,
            "burst_ms": self.burst_ms,
            "allowance_ms": self.allowance_ms,
        }
