"""The time to first token a streamed API answer reports is the one its client lives: from the
request's arrival at daphne to the first token's bytes handed to the socket (real daphne, real
worker, bundled model)."""

from __future__ import annotations

import json
import time

import httpx
import pytest

from inference.models import Generation
from tests.support import wait_until

pytestmark = [pytest.mark.integration]


def _stream(url: str, key: str, body: dict) -> tuple[float, list[dict], int]:
    """POST a streamed completion; the client's own TTFT (ms), the chunks, and the answer's id."""
    chunks: list[dict] = []
    first = None
    start = time.perf_counter()
    with httpx.stream("POST", url, json=body, headers={"Authorization": f"Bearer {key}"}, timeout=180) as response:
        assert response.status_code == 200
        for line in response.iter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[6:])
            if first is None and chunk.get("choices") and chunk["choices"][0].get("text"):
                first = time.perf_counter()
            chunks.append(chunk)
        generation_id = int(response.headers["X-HomeAI-Generation"])
    assert first is not None
    return (first - start) * 1000, chunks, generation_id


def test_a_streamed_answer_reports_ttft_from_arrival_to_the_first_bytes_sent(live_server_url, worker, settled, api_key):
    body = {
        "prompt": "Count from one to twenty: one, two,",
        "max_tokens": 12,
        "temperature": 0,
        "ignore_eos": True,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    client_ttft_ms, chunks, generation_id = _stream(live_server_url + "/v1/completions", api_key, body)

    texts = [c["choices"][0]["text"] for c in chunks if c.get("choices") and c["choices"][0]["text"]]
    usage, timings = chunks[-1]["usage"], chunks[-1]["timings"]
    assert len(texts) == usage["completion_tokens"] == timings["predicted_n"] == 12
    # The server's interval lies inside the client's: it starts after the request left the
    # client and ends before the bytes reached it.
    assert timings["ttft_ms"] <= client_ttft_ms
    # ...and it holds every part measured in the worker, plus the trip back to the web.
    assert timings["ttft_ms"] >= timings["queue_ms"] + timings["load_ms"] + timings["prompt_ms"]
    assert timings["delivery_ms"] is not None and timings["delivery_ms"] <= timings["ttft_ms"]
    # What the dashboard stores is the same figure (the web writes it once the answer ended).
    # The row keeps both clocks: the engine's (what /metrics counts) and the served one.
    row = lambda: Generation.objects.get(id=generation_id)  # noqa: E731
    assert wait_until(lambda: row().client_ttft_ms == timings["ttft_ms"], timeout=10)
    assert row().ttft_ms <= row().client_ttft_ms
