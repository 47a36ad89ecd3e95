"""The stopping broker's controlled shutdown (server/controlled_shutdown.py) retries on the injected
clock: with an unreachable controller each attempt fails, the next comes after
``controlled.shutdown.retry.backoff.ms`` of a ManualClock, and after the last the broker stops anyway."""

from __future__ import annotations

import asyncio
import socket

from tidelog.cluster.metadata import BrokerInfo, MetadataImage
from tidelog.peer.client import PeerClient, PeerSettings
from tidelog.server.controlled_shutdown import ControlledShutdown
from tidelog.testing import ManualClock

BACKOFF_MS = 60_000


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_attempts_are_a_backoff_of_the_clock_apart_and_the_last_gives_up() -> None:
    async def main() -> None:
        clock = ManualClock()
        port = closed_port()  # the controller (broker 2) is registered, nothing listens there
        image = MetadataImage("cluster", 2, {1: BrokerInfo(1, "127.0.0.1", 1), 2: BrokerInfo(2, "127.0.0.1", port)},
                              {})
        attempts: list[int] = []

        def current() -> MetadataImage:
            attempts.append(clock.monotonic_ms())
            return image

        peers = PeerClient(PeerSettings(lambda b: ("127.0.0.1", port) if b == 2 else None, clock=clock), "test")
        shutdown = ControlledShutdown(1, current, None, peers, clock,  # type: ignore[arg-type]  # never the controller
                                      max_retries=3, backoff_ms=BACKOFF_MS, timeout_ms=5_000)
        start = clock.monotonic_ms()
        run = asyncio.ensure_future(shutdown.run())

        async def until_attempts(n: int) -> None:
            for _ in range(500):
                if len(attempts) >= n:
                    return
                await asyncio.sleep(0.01)

        await until_attempts(1)
        await asyncio.sleep(0.3)  # the attempt fails (connection refused); real time starts no other
        assert attempts == [start] and not run.done()
        clock.advance(BACKOFF_MS - 1)
        await asyncio.sleep(0.1)
        assert len(attempts) == 1
        clock.advance(1)
        await until_attempts(2)
        assert attempts == [start, start + BACKOFF_MS]
        clock.advance(BACKOFF_MS)
        assert await asyncio.wait_for(run, 10) is False
        assert attempts == [start, start + BACKOFF_MS, start + 2 * BACKOFF_MS]

    asyncio.run(main())
