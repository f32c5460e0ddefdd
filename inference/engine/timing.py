"""The phase clock: one sequence's timestamps, and the metrics of docs/architecture.md derived from them.

All instants are time.perf_counter_ns() of the worker process. The arrival time comes from
the web process's wall clock, so it is translated once through an anchor pair taken at
import; everything else is measured on one monotonic clock.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

_ANCHOR_WALL_NS = time.time_ns()
_ANCHOR_PERF_NS = time.perf_counter_ns()

NS_PER_MS = 1_000_000


def now_ns() -> int:
    return time.perf_counter_ns()


def wall_to_perf_ns(wall_ns: int) -> int:
    return _ANCHOR_PERF_NS + (wall_ns - _ANCHOR_WALL_NS)


def perf_to_wall_ns(perf_ns: int) -> int:
    return _ANCHOR_WALL_NS + (perf_ns - _ANCHOR_PERF_NS)


def _ms(ns: int) -> float:
    return ns / NS_PER_MS


@dataclass
class PhaseClock:
    """Timestamps of one request; the phases are contiguous by construction."""

    t_arrive: int
    load_ns: int = 0
    # Before the engine: the worker's retrieve phase (the query's embedding and the document
    # search, for a chat with collections), which the queue time does not count.
    retrieve_ns: int = 0
    t_prefill_start: int | None = None
    t_prefill_end: int | None = None
    token_times: list[int] = field(default_factory=list)
    t_end: int | None = None

    def mark_prefill_chunk(self, start: int, end: int) -> None:
        if self.t_prefill_start is None:
            self.t_prefill_start = start
        self.t_prefill_end = end

    def mark_token(self, t: int) -> None:
        self.token_times.append(t)

    def since_arrival_ms(self, t: int) -> float:
        return _ms(t - self._arrival())

    def _arrival(self) -> int:
        # The web and worker wall clocks may disagree by a few ms (or more across machines):
        # never report a negative queue; arrival is at the latest when the engine could start.
        if self.t_prefill_start is None:
            return self.t_arrive
        return min(self.t_arrive, self.t_prefill_start - self.load_ns - self.retrieve_ns)

    def metrics(self, *, prompt_tokens: int, cached_tokens: int, restored_tokens: int = 0) -> dict:
        """Phase durations and rates; None where a phase never happened."""
        arrive = self._arrival()
        out: dict = {
            "queue_ms": None,
            "retrieve_ms": _ms(self.retrieve_ns) if self.retrieve_ns else None,
            "load_ms": _ms(self.load_ns),
            "prefill_ms": None,
            "first_token_ms": None,
            "decode_ms": None,
            "ttft_ms": None,
            "e2e_ms": None,
            "tpot_ms": None,
            "prompt_tokens": prompt_tokens,
            "cached_tokens": cached_tokens,
            "restored_tokens": restored_tokens,
            "output_tokens": len(self.token_times),
            "prompt_tps": None,
            "output_tps": None,
            "cold": self.load_ns > 0,
            "token_times_ms": [_ms(t - arrive) for t in self.token_times],
            "itl_ms": [_ms(b - a) for a, b in zip(self.token_times, self.token_times[1:], strict=False)],
        }
        if self.t_prefill_start is None or self.t_prefill_end is None:
            return out
        out["queue_ms"] = _ms(self.t_prefill_start - self.load_ns - self.retrieve_ns - arrive)
        prefill_ns = self.t_prefill_end - self.t_prefill_start
        out["prefill_ms"] = _ms(prefill_ns)
        evaluated = prompt_tokens - cached_tokens
        if prefill_ns > 0 and evaluated > 0:
            out["prompt_tps"] = evaluated / (prefill_ns / 1e9)
        # With no token the "answer" ends when the end-of-turn was sampled.
        first = self.token_times[0] if self.token_times else self.t_end
        last = self.token_times[-1] if self.token_times else self.t_end
        if first is None or last is None:
            return out
        out["first_token_ms"] = _ms(first - self.t_prefill_end)
        out["decode_ms"] = _ms(last - first)
        out["ttft_ms"] = _ms(first - arrive)
        out["e2e_ms"] = _ms(last - arrive)
        n_out = len(self.token_times)
        if n_out >= 2:
            out["tpot_ms"] = _ms(last - first) / (n_out - 1)
            out["output_tps"] = (n_out - 1) / ((last - first) / 1e9) if last > first else None
        return out


# A request's phases in the order they happen: the chat's phase bar and the dashboard's timeline.
PHASES = ("queue", "retrieve", "load", "prefill", "decode", "tool")


def phase_ms(metrics: dict) -> dict[str, float]:
    """Milliseconds an answer spent in each phase, in PHASES order; the first token's step counts
    as decode (it is decode work as far as the reader is concerned), and none is negative. The
    tool phase (a chat answer's tool calls, tool_ms) is there only for an answer that had one."""
    durations = {
        "queue": metrics.get("queue_ms") or 0.0,
        "retrieve": metrics.get("retrieve_ms") or 0.0,
        "load": metrics.get("load_ms") or 0.0,
        "prefill": metrics.get("prefill_ms") or 0.0,
        "decode": (metrics.get("first_token_ms") or 0.0) + (metrics.get("decode_ms") or 0.0),
    }
    if metrics.get("tool_ms"):
        durations["tool"] = metrics["tool_ms"]
    return {phase: max(durations[phase], 0.0) for phase in PHASES if phase in durations}
