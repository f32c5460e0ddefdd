"""A running model of step cost, to size prompt chunks for a target step time (pure Python).

Sarathi-Serve fixes a token budget per step. A fixed number does not travel: 256 tokens is a
long stall on a NAS CPU and nothing on a GPU. So the engine learns what a step costs here:

    step_ms ≈ decode_ms(n_decode) + attend_ms × decode_cells            (the decodes)
            + per_prompt_token_ms × n_prefill + attend_ms × prefill_cells  (a prompt slice)

with decode_ms the median, per decode count, of what the recent decode-only steps cost once
their attention is taken out; per_prompt_token_ms the median of what a prompt token of the
recent mixed steps (decodes and a prompt chunk) cost past the decodes and its attention; and
attend_ms what one token attending one KV cell costs. The cells a token attends are its own
sequence's (a token at position p attends p + 1 cells), so a slice of c tokens from depth D
attends c·D + c(c+1)/2 of them. The chunk for a target step time is the largest slice whose
predicted cost fits in what the decodes leave: it shrinks as a document gets deeper.

Why the depth term: attention grows with the cells attended, and on a small model it is most of
a deep step. SmolLM2-135M (64-wide heads) on llama.cpp's CPU flash-attention path costs ~4x at
2,000 cells deep against a fresh step, so a per-token price learned early in a document made its
late slices 3-4x dearer than budgeted (the chats' p99 gap went to 28.6x their gap before the
document, for a goal of 3x). Why a sequence's own cells and not all the cells in use: the slots
share one cache (kv_unified), and llama.cpp's graph spans every used cell (n_kv, the highest
used cell padded to 256) with the other sequences' masked out; but ggml's CPU flash attention
skips a masked cell (the patched decode path numbers only the positions a row's mask lets
through; the tiled prompt path skips a tile all masked, after reading its mask), so what costs
is mostly the sequence's own cells. Measured on the development box, one thread: three decodes
100 cells deep took 69.6, 66.6 and 64.1 ms with 0, 500 and 1,000 cells of a document beside them
in the cache, while a 16-token slice of that document took 18 ms a token at 500 deep and 22 at
1,000. Reading the masks is not free for large slices (a 512-token slice beside idle histories
of 5,700 cells cost 1.9x), which is why idle histories leave the cache when a prompt starts
(Runner.admit).

Why attend_ms is a weighted median of pairwise slopes (Theil-Sen), not a least-squares fit, and
why medians elsewhere: on a shared box one slow step (another process took the core) is common,
and an average remembers it for many steps. An inflated decode cost raises the target itself
(the target is relative to it), and the chats then stall more than asked: measured here, one 49
ms outlier among 28 ms steps made a 2x target behave like 2.8x. A least-squares slope moves with
each such step; the median of the slopes between pairs of steps does not while fewer than ~29%
of the steps are outliers. The pairs: mixed steps, as a prompt token's cost against the depth
its slice attends on average, and decode-only steps of the same decode count, as their cost
against the cells their decodes attend (chats growing). Each slope is weighted by how far apart
its two steps are in cells, so that two steps nearly as deep, whose slope is mostly noise, count
little. Decode-only costs are taken at depth 0 (the cells' cost taken out) and priced at the
decodes' depth now, so the estimate follows chats as they grow instead of lagging a window.

Why only mixed steps teach the prompt cost: a prompt token is much cheaper inside a 500-token
batch than in the 16–30-token chunks that fit beside running decodes (llama.cpp's CPU kernels
reuse weights and use tiled attention only for large batches: 1.9 against 2.5 ms per token on
the development box). Chunks are only sized while something decodes, so only such steps say what
a chunk will cost. Until one has been seen, a chunk is min_chunk tokens: small, and it teaches.

The target is either a fixed step time (target_ms) or relative: stall_factor times what the
running decodes cost alone at their depth, i.e. "a pasted document may make the chats' steps at
most this many times slower". The relative form travels from a NAS CPU to a GPU unchanged. With
no decode running nobody can stall, so the prompt goes in as large chunks as the batch allows.

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

The engine tells the model where the next step stands (at(): the cells the running decodes
attend, the depth of the prompt being read) before it schedules, and what each step attended
when it reports it (observe()).
"""

from __future__ import annotations

import math
import statistics
from collections import deque
from dataclasses import dataclass

WINDOW = 9  # recent steps per estimate: enough to outvote a noisy step, few enough to follow drift
SLOPE_WINDOW = 24  # mixed steps the attention slope is fitted over: a document's slices span its depth
# Smaller chunks are dominated by fixed overhead. Deep in a document a chunk that keeps to the
# target may be this small (attention is then most of its cost, and it teaches).
MIN_PREFILL_TO_LEARN = 4
MIN_MEASURED = 3  # steps of a size seen before measured_decode_ms() answers for it
# Two steps closer in depth than this say little about the cost of a cell (their difference is
# mostly noise): their slope is left out. Per prompt token for mixed steps, in all for decodes.
MIN_DEPTH_APART = 32


UNLIMITED = 1 << 30  # the scheduler clamps it to the batch size


def cells_attended(start: int, n_tokens: int) -> int:
    """KV cells n_tokens tokens of one sequence attend, from position `start` on: the token at
    position p attends p + 1 cells (its own sequence's, itself included)."""
    return n_tokens * start + n_tokens * (n_tokens + 1) // 2 if n_tokens > 0 else 0


@dataclass(frozen=True)
class _Mixed:
    """A step with decodes and a prompt slice, as it was measured."""

    ms: float
    n_decode: int
    n_prefill: int
    decode_cells: int
    prefill_cells: int


def _weighted_median(pairs: list[tuple[float, float]]) -> float | None:
    """The value at half the total weight of (value, weight) pairs; None without any."""
    if not pairs:
        return None
    pairs.sort()
    half = sum(w for _, w in pairs) / 2
    acc = 0.0
    for value, weight in pairs:
        acc += weight
        if acc >= half:
            return value
    return pairs[-1][0]


def _slopes(points: list[tuple[float, float, float]], min_apart: float) -> list[tuple[float, float]]:
    """(slope, weight) of every pair of (x, y, weight) points at least min_apart apart in x."""
    out = []
    for i, (x0, y0, w0) in enumerate(points):
        for x1, y1, w1 in points[i + 1 :]:
            dx = x1 - x0
            if abs(dx) >= min_apart:
                out.append(((y1 - y0) / dx, abs(dx) * min(w0, w1)))
    return out


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
        self._decode: dict[int, deque[tuple[float, int]]] = {}  # n_decode -> (ms, cells its decodes attended)
        self._mixed: deque[_Mixed] = deque(maxlen=SLOPE_WINDOW)
        self._per_token_alone: deque[float] = deque(maxlen=WINDOW)  # prompt-only steps, per token
        self.attend_ms = 0.0  # what a token attending one more KV cell costs; 0 until two depths were seen
        self.last_n_decode = 0  # decodes in the latest step that had any: what "now" looks like
        self.decode_cells = 0  # cells the running decodes attend in the next step (at())
        self.prompt_depth = 0  # where the prompt being read stands: its next slice's first position (at())

    # --- where the next step stands --------------------------------------------------------
    def at(self, *, decode_cells: int, prompt_depth: int) -> None:
        """Before a step is scheduled: the cells its decodes will attend (each decoding
        sequence's context, summed), and the depth of the deepest prompt being read (its next
        slice starts there; a prompt not begun yet is shallower, so sized by this it only costs
        less than predicted)."""
        self.decode_cells = max(decode_cells, 0)
        self.prompt_depth = max(prompt_depth, 0)

    # --- estimates -------------------------------------------------------------------------
    def _base(self, n_decode: int) -> float | None:
        """A decode-only step of n_decode at depth 0: the median of the recent ones, each with
        its attention taken out."""
        times = self._decode.get(n_decode)
        if not times:
            return None
        # tuple(): a copy, as status() reads this from the heartbeat thread
        return statistics.median([ms - self.attend_ms * cells for ms, cells in tuple(times)])

    def _prompt_token_costs(self) -> list[float]:
        """What a prompt token cost in each recent mixed step, past the decodes and attention."""
        out = []
        bases: dict[int, float | None] = {}
        for step in list(self._mixed)[-WINDOW:]:
            decode = self._decode_cost(step.n_decode, step.decode_cells, bases)
            if decode is not None:
                rest = step.ms - decode - self.attend_ms * step.prefill_cells
                out.append(max(rest, 0.0) / step.n_prefill)
        return out

    @property
    def per_prompt_token_ms(self) -> float | None:
        """What one prompt token adds to a step that also decodes, attention apart; None until seen.

        When the attention slope has taken a slice's whole cost (the median left is 0), the split
        is wrong, not the token free: noise that grows as a document is read (the box getting
        busier while its slices get deeper) tilts the slope that far, and a 0 here used to read
        as "unknown" and held the document to min_chunk tokens a step. What a prompt token cost
        in the recent prompt-only steps stands in then: the nearest measured price (a large
        batch's, its attention in it; a small slice's token may cost somewhat more), and the
        next mixed steps, priced again, correct it."""
        costs = self._prompt_token_costs()
        if not costs:
            return None
        per_token = statistics.median(costs)
        if per_token <= 0 and self._per_token_alone:
            return statistics.median(self._per_token_alone)
        return per_token

    def measured_decode_ms(self, n_decode: int) -> float | None:
        """What a decode-only step of n_decode tokens costs here at the decodes' depth now (from
        the median of recent ones), or None before MIN_MEASURED were seen (speculation.py sizes
        drafts by it: the first step of a new size is often slow, llama.cpp sizing its buffers
        for it, and one such step alone would keep that size from being tried again)."""
        times = self._decode.get(n_decode)
        if not times or len(times) < MIN_MEASURED:
            return None
        return self.decode_cost(n_decode)

    def decode_cost(self, n_decode: int, cells: int | None = None) -> float | None:
        """A decode-only step of n_decode tokens attending `cells` (default: the decodes' now)."""
        return self._decode_cost(n_decode, self.decode_cells if cells is None else cells, {})

    def _decode_cost(self, n_decode: int, cells: int, bases: dict[int, float | None]) -> float | None:
        """decode_cost, with each decode count's base (a median) taken once per `bases`: a pass
        over the recent mixed steps asks for the same few counts many times."""
        if n_decode <= 0:
            return 0.0
        if n_decode not in bases:
            base = self._base(n_decode)
            if base is None and self._decode:
                # tuple(): a copy, as status() reads this from the heartbeat thread
                nearest = min(tuple(self._decode), key=lambda n: abs(n - n_decode))
                base = self._base(nearest) * n_decode / nearest  # crude, soon replaced by data
            bases[n_decode] = base
        base = bases[n_decode]
        return None if base is None else base + self.attend_ms * cells

    def slice_cost(self, n_tokens: int, depth: int, per_token: float | None = None) -> float | None:
        """What a prompt slice of n_tokens from position `depth` adds to a step with decodes."""
        per_token = self.per_prompt_token_ms if per_token is None else per_token
        if per_token is None:
            return None
        return per_token * n_tokens + self.attend_ms * cells_attended(depth, n_tokens)

    def predict(self, *, n_decode: int, n_prefill: int, decode_cells: int = 0, prefill_cells: int = 0) -> float | None:
        """The step's cost by the model as it stands, before the step teaches it; None while
        some part is unknown (the dashboard's step chart plots it beside what the step took)."""
        if n_decode <= 0:
            if not n_prefill or not self._per_token_alone:
                return None
            return statistics.median(self._per_token_alone) * n_prefill
        decode = self.decode_cost(n_decode, decode_cells)
        if decode is None or not n_prefill:
            return decode
        per_token = self.per_prompt_token_ms
        if per_token is None:
            return None
        return decode + per_token * n_prefill + self.attend_ms * prefill_cells

    def _fit_attention(self) -> None:
        """attend_ms: the weighted median of pairwise slopes (module docstring), never below 0.
        Mixed steps: a prompt token's cost past the decodes, against the mean depth its slice
        attended; decode-only steps of one size: their cost against the cells attended."""
        slopes: list[tuple[float, float]] = []
        points = []
        bases: dict[int, float | None] = {}
        for step in self._mixed:
            decode = self._decode_cost(step.n_decode, step.decode_cells, bases)
            if decode is not None:
                per_token = (step.ms - decode) / step.n_prefill
                points.append((step.prefill_cells / step.n_prefill, per_token, step.n_prefill))
        slopes += _slopes(points, MIN_DEPTH_APART)
        for n_decode, times in tuple(self._decode.items()):
            slopes += _slopes([(cells, ms, 1.0) for ms, cells in times], MIN_DEPTH_APART * n_decode)
        slope = _weighted_median(slopes)
        if slope is not None:
            self.attend_ms = max(slope, 0.0)

    # --- learning ----------------------------------------------------------------------------
    def observe(
        self, *, n_prefill: int, n_decode: int, ms: float, decode_cells: int = 0, prefill_cells: int = 0
    ) -> None:
        """A step ran: its prompt and decode tokens, what it took, and the KV cells its decode
        and prompt tokens attended (cells_attended, summed over its sequences)."""
        if n_decode <= 0:
            # A prompt-only step: nobody waited on it, so the allowance is whole again; and its
            # per-token cost misleads for chunks (it only stands in for the burst's, below).
            self.allowance_ms = self.burst_ms
            if n_prefill >= MIN_PREFILL_TO_LEARN:
                self._per_token_alone.append(ms / n_prefill)
            return
        self.last_n_decode = n_decode
        if n_prefill == 0:
            self._decode.setdefault(n_decode, deque(maxlen=WINDOW)).append((ms, decode_cells))
            self._fit_attention()
        elif n_prefill >= MIN_PREFILL_TO_LEARN and self._decode:
            self._mixed.append(_Mixed(ms, n_decode, n_prefill, decode_cells, prefill_cells))
            self._fit_attention()
        target = self.target(n_decode, decode_cells)
        if target is not None:  # a step over its target spends the allowance, one under refills it
            self.allowance_ms = min(self.burst_ms, max(0.0, self.allowance_ms + target - ms))

    # --- sizing ------------------------------------------------------------------------------
    @property
    def adaptive(self) -> bool:
        return self.target_ms is not None or self.stall_factor is not None

    def target(self, n_decode: int, cells: int | None = None) -> float | None:
        """The step time to aim for with n_decode running decodes (attending `cells`, default:
        the decodes' now), or None while unknown."""
        if self.target_ms is not None:
            return self.target_ms
        if self.stall_factor is not None and n_decode in self._decode:
            return self.stall_factor * self.decode_cost(n_decode, cells)
        return None

    def _fit(self, room_ms: float, depth: int, per_token: float) -> int:
        """The most prompt tokens from `depth` whose cost (per_token each, plus attention) fits
        room_ms: c·per_token + a·(c·depth + c(c+1)/2) <= room, a quadratic in c."""
        if room_ms <= 0:
            return 0
        a = self.attend_ms
        b = per_token + a * (depth + 0.5)
        if a <= 0:
            return int(room_ms / b) if b > 0 else UNLIMITED
        chunk = int((-b + math.sqrt(b * b + 2 * a * room_ms)) / a)
        while chunk > 0 and self.slice_cost(chunk, depth, per_token) > room_ms:  # float rounding
            chunk -= 1
        return chunk

    def budget(self, n_decode: int) -> int | None:
        """Tokens (decodes included) that fit the target beside the decodes, for a slice of the
        prompt being read at its depth (at()); None defers to the fixed budget."""
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
        if room_ms <= 0:
            return n_decode + self.min_chunk  # decodes alone exceed a fixed target: the prompt still moves
        # No floor past this: 16 tokens 2,000 cells deep cost ~4x what they do at the start, more
        # than a 3x target leaves beside three chats, and a floor would break the bound there.
        return n_decode + max(self._fit(room_ms, self.prompt_depth, per_token), 1)

    def burst_tokens(self, n_decode: int) -> int:
        """Prompt tokens the allowance adds past budget(n_decode), for prompts that then fit
        whole (the policy's to enforce; they are new, so priced from depth 0); 0 while the
        target or a prompt token's cost is unknown. Before a chunk has taught that cost, what
        prompt-only steps cost per token stands in: it is lower, so the first burst may run past
        burst_ms by that much, and what the step then really took is spent from the allowance
        all the same."""
        per_token = self.per_prompt_token_ms
        if per_token is None and self._per_token_alone:
            per_token = statistics.median(self._per_token_alone)
        if n_decode <= 0 or not per_token or self.target(n_decode) is None:
            return 0
        return self._fit(self.allowance_ms, 0, per_token)

    def describe(self, n_decode: int) -> dict:
        """What sizes a chunk beside n_decode running decodes, in numbers a person can check."""
        return {
            "mode": "target" if self.target_ms is not None else ("stall" if self.stall_factor else "fixed"),
            "stall_factor": self.stall_factor,
            "n_decode": n_decode,
            "decode_ms": self.decode_cost(n_decode),
            "target_ms": self.target(n_decode),
            "prompt_token_ms": self.per_prompt_token_ms,
            "attend_us_per_cell": self.attend_ms * 1000,
            "decode_cells": self.decode_cells,
            "prompt_depth": self.prompt_depth,
            "burst_ms": self.burst_ms,
            "allowance_ms": self.allowance_ms,
        }
