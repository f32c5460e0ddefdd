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


def test_the_outbox_publishes_without_replies_in_order_and_never_connects_from_send_now():
    outbox = broadcast.Outbox()
    group = broadcast.generation_group(9002)
    try:
        assert not outbox.send_now([(group, {"type": broadcast.RELAY_TYPE, "events": []})])  # not connected
        assert outbox.connect()

        async def listen() -> list[dict]:
            layer = get_channel_layer()
            channel = await layer.new_channel()
            await layer.group_add(group, channel)
            try:
                frames = [{"type": broadcast.RELAY_TYPE, "events": [{"text": f"t{i}"}]} for i in range(50)]
                assert all([outbox.send_now([(group, frame)]) for frame in frames[:49]])
                assert outbox.send([(group, frames[49])])  # a task thread's end, after the tokens
                return [await asyncio.wait_for(layer.receive(channel), timeout=30) for _ in frames]
            finally:
                await layer.group_discard(group, channel)

        got = asyncio.run(listen())
        assert [m["events"][0]["text"] for m in got] == [f"t{i}" for i in range(50)]
        assert not outbox._conn.can_read(timeout=0.05)  # Redis sent no replies to pile up
    finally:
        outbox.close()


def test_an_outbox_whose_redis_is_down_says_so_at_once():
    outbox = broadcast.Outbox("redis://127.0.0.1:1/0")  # nothing listens on port 1
    assert not outbox.connect()
    assert not outbox.send([("g", {"type": broadcast.RELAY_TYPE})])
    assert not outbox.send_now([("g", {"type": broadcast.RELAY_TYPE})])
