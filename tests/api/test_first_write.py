"""The served TTFT's clock stops after the server's transport wrote the first token: daphne's
(Twisted's) transport writes once the loop reports the socket writable, a turn after ASGI send
returned, and answers._written waits for that turn."""

from __future__ import annotations

import asyncio
import socket

from api import answers


def test_a_write_the_transport_left_to_the_loop_is_done_when_written_returns():
    async def main() -> list[str]:
        loop = asyncio.get_running_loop()
        ours, theirs = socket.socketpair()
        ours.setblocking(False)
        theirs.settimeout(5)
        order: list[str] = []

        def do_write() -> None:  # as Twisted's doWrite: send, then stop asking to write
            ours.send(b"data: first token\n\n")
            loop.remove_writer(ours.fileno())
            order.append("written")

        try:
            loop.add_writer(ours.fileno(), do_write)  # what transport.write() does in ASGI send
            await answers._written()
            order.append("clock stopped")
            assert theirs.recv(64) == b"data: first token\n\n"
        finally:
            ours.close()
            theirs.close()
        return order

    assert asyncio.run(main()) == ["written", "clock stopped"]
