"""Synthetic dashboard rows with known answers, shared by the stats, text and figures tests."""

from __future__ import annotations

import random

T0 = 1_800_000_000.0  # an epoch second; the figures draw it in UTC unless told a zone


def done_row(i: int, *, prompt: int, ttft: float, **extra) -> dict:
    """A finished request as payload.dashboard_rows gives it: 11 tokens 20 ms apart after `ttft`."""
    row = {
        "id": i,
        "username": "alice",
        "model": "m.gguf",
        "status": "done",
        "t_arrive": T0 + i,
        "t_end": T0 + i + 1,
        "queue_ms": 5.0,
        "load_ms": 0.0,
        "prefill_ms": ttft - 10,
        "first_token_ms": 5.0,
        "decode_ms": 200.0,
        "ttft_ms": ttft,
        "prompt_tokens": prompt,
        "cached_tokens": 0,
        "output_tokens": 11,
        "prompt_tps": 300.0,
        "output_tps": 50.0,
        "cold": False,
        "token_times_ms": [ttft + 20.0 * k for k in range(11)],
        "itl_ms": [20.0] * 10,
    }
    row.update(extra)
    return row


def known_prefill_rows(n: int = 60) -> list[dict]:
    """Requests whose TTFT is 250 tok/s of prefill (4 ms per prompt token) on top of 80 ms, with noise."""
    rng = random.Random(7)
    rows = []
    for i in range(n):
        prompt = rng.randint(10, 1500)
        rows.append(done_row(i, prompt=prompt, ttft=80 + 4.0 * prompt + rng.gauss(0, 15)))
    return rows
