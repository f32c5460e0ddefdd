"""Events published from a plain thread reach the channel layer's subscribers (real Redis)."""

from __future__ import annotations

import asyncio

import pytest
from channels.layers import get_channel_layer

from inference import broadcast

pytestmark = [pytest.mark.integration]


def test_a_published_frame_reaches_a_member_of_its_group_in_order():
    async def listen() -> list[dict]:
        layer = get_channel_layer()
        channel = await layer.new_channel()
        await layer.group_add(broadcast.generation_group(9001), channel)
        try:
            # Published from another thread, as a worker's relay does, once subscribed.
            sent = [[{"type": "token", "generation": 9001, "text": f"t{i}"}] for i in range(3)]
            done = asyncio.get_running_loop().run_in_executor(None, _publish_all, sent)
            got = [await asyncio.wait_for(layer.receive(channel), timeout=30) for _ in sent]
            await done
            return got
        finally:
            await layer.group_discard(broadcast.generation_group(9001), channel)

    got = asyncio.run(listen())
    assert [m["type"] for m in got] == [broadcast.RELAY_TYPE] * 3
    assert [m["events"][0]["text"] for m in got] == ["t0", "t1", "t2"]


def _publish_all(frames: list[list[dict]]) -> None:
    generation = type("Answer", (), {"id": 9001, "user_id": 1, "client": "api"})()
    for frame in frames:
        broadcast.publish_for(generation, frame)
