"""Replication driven by a ManualClock alone (replica/replication.py, isr.py, fetcher.py): two brokers'
replica layers in this process, the follower copying the leader over a real socket (replicas.py).

Real time only carries bytes between the two; every wait of replication is the clock's, so these
tests set waits far longer than they could sit out in real time (a follower that stopped fetching
leaves the ISR after ``replica.lag.time.max.ms`` = 10 minutes, the fetcher backs off 10 minutes after a
failed fetch) and pass them by advancing the clock.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.inprocess.harness import batch
from tests.inprocess.replicas import ReplicaPair
from tidelog.errors import ErrorCode

LAG_MS = 600_000
BACKOFF_MS = 600_000
TIMEOUT_MS = 300_000


def pair(tmp_path: Path) -> ReplicaPair:
    return ReplicaPair(tmp_path, replica_lag_time_max_ms=LAG_MS, fetch_backoff_ms=BACKOFF_MS, fetch_wait_max_ms=500)


async def produce_all(p: ReplicaPair, topic: str, value: bytes, timeout_ms: int = TIMEOUT_MS) -> asyncio.Future:
    """An acks=all produce on broker 1 (the leader): appended, then waiting for the ISR."""
    replicas = p.brokers[1].replicas
    result = replicas.append_records(topic, 0, bytearray(batch(value)), acks=-1)
    return asyncio.ensure_future(replicas.wait_for_acks(topic, 0, result.last_offset + 1, timeout_ms))


def run(tmp_path: Path, scenario) -> None:
    async def main() -> None:
        p = pair(tmp_path)
        await p.start()
        try:
            await asyncio.wait_for(scenario(p), 120)
        finally:
            await p.close()

    asyncio.run(main())


def test_acks_all_waits_for_the_follower_and_times_out_on_the_clock(tmp_path: Path) -> None:
    async def scenario(p: ReplicaPair) -> None:
        p.create("t")
        acked = await produce_all(p, "t", b"a")
        assert await asyncio.wait_for(acked, 30) == ErrorCode.NONE  # the follower fetched it: HW 1
        assert p.log_end(2, "t") == 1 and p.brokers[1].logs.get_log("t", 0).high_watermark == 1

        await p.brokers[1].stop_serving()  # the follower's fetches fail from now on
        waiting = await produce_all(p, "t", b"b")
        await p.settle(0.5)
        assert not waiting.done()  # the follower does not have it; real time does not time it out
        await p.advance(TIMEOUT_MS - 1)
        assert not waiting.done()
        await p.advance(1)
        assert await asyncio.wait_for(waiting, 10) == ErrorCode.REQUEST_TIMED_OUT
        assert p.brokers[1].logs.get_log("t", 0).high_watermark == 1

    run(tmp_path, scenario)


def test_a_follower_that_stops_fetching_leaves_the_isr_and_rejoins_when_caught_up(tmp_path: Path) -> None:
    async def scenario(p: ReplicaPair) -> None:
        p.create("t")
        assert await asyncio.wait_for(await produce_all(p, "t", b"a"), 30) == ErrorCode.NONE
        assert p.state("t").isr == (1, 2)

        await p.brokers[1].stop_serving()
        # the leader's log end moves past the follower's; this produce waits longer than the lag
        waiting = await produce_all(p, "t", b"b", timeout_ms=10 * LAG_MS)
        await p.settle(0.5)
        # Half the lag: the ISR check has run (every LAG_MS / 2), the follower is not out of sync yet.
        await p.advance(LAG_MS // 2)
        assert p.state("t").isr == (1, 2) and p.brokers[1].isr_writes == []
        await p.advance(LAG_MS // 2 + 1)  # the next check finds it lagging more than LAG_MS
        await p.wait_until(lambda: p.state("t").isr == (1,), "the ISR to shrink")
        assert p.brokers[1].isr_writes == [(1,)]
        # The ISR is the leader alone: the high watermark reaches the log end, the waiting produce
        # completes (min.insync.replicas=1).
        assert await asyncio.wait_for(waiting, 10) == ErrorCode.NONE
        assert p.brokers[1].logs.get_log("t", 0).high_watermark == 2

        await p.brokers[1].serve()  # reachable again: the follower fetches after its backoff
        await p.advance(BACKOFF_MS)
        await p.wait_until(lambda: p.log_end(2, "t") == 2 and p.state("t").isr == (1, 2),
                           "the follower to catch up and rejoin the ISR")
        assert p.brokers[1].isr_writes == [(1,), (1, 2)]

    run(tmp_path, scenario)


def test_the_fetcher_backs_off_on_the_clock_after_a_failed_fetch(tmp_path: Path) -> None:
    async def scenario(p: ReplicaPair) -> None:
        p.create("t")
        assert await asyncio.wait_for(await produce_all(p, "t", b"a"), 30) == ErrorCode.NONE
        await p.brokers[1].stop_serving()
        await p.settle(0.5)  # the follower's fetch failed: it backs off BACKOFF_MS
        await p.brokers[1].serve()
        await produce_all(p, "t", b"b")
        await p.settle(1.0)
        assert p.log_end(2, "t") == 1  # still backing off: real time does not end the backoff
        await p.advance(BACKOFF_MS - 1_000)
        await p.settle(0.5)
        assert p.log_end(2, "t") == 1
        await p.advance(1_000)
        await p.wait_until(lambda: p.log_end(2, "t") == 2, "the follower to fetch again after its backoff")

    run(tmp_path, scenario)
