"""The network's timers run on the broker's clock: a quota's mute (``server/network.py``) ends, and a peer
client's request (``peer/connection.py``) times out, when the ManualClock is advanced, never in real time.

The broker is the in-process one (``harness.py``) with its real listener; the peer client speaks to it over a
real socket, as a broker speaks to another, with the broker's ManualClock as its clock.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.inprocess.harness import InProcessBroker, batch, run
from tests.inprocess.wire import produce
from tidelog.peer.client import PeerClient, PeerSettings
from tidelog.protocol.messages import AlterClientQuotasRequest, MetadataRequest

A = AlterClientQuotasRequest
TOPIC = "muted"
#: A real-time pause long enough for a request to have been answered if nothing held it
REAL_PAUSE_S = 0.5
#: How long, in real time, the outcome may take once the clock has passed the deadline: far shorter than
#: the mute and the timeout themselves (over 10 s each), so only the clock can have ended them
OUTCOME_S = 5.0


async def over_quota(b: InProcessBroker, timeout_ms: int = 120_000) -> tuple[PeerClient, int]:
    """A peer client on the broker's clock whose connection the broker has muted for a quota: every
    client's produce rate is 1,000 bytes/s and it has just produced 60,000 bytes. The client and the mute's
    length."""
    quota = A(entries=[A.EntryData(entity=[A.EntityData(entity_type="client-id", entity_name=None)],
                                   ops=[A.OpData(key="producer_byte_rate", value=1000.0)])])
    assert [e.error_code for e in (await b.request(quota, 1)).entries] == [0]
    await b.create_topic(TOPIC)
    address = ("127.0.0.1", b.broker.port)
    client = PeerClient(PeerSettings(lambda _: address, request_timeout_ms=timeout_ms, clock=b.clock), "over-quota")
    response = await client.send(1, produce(TOPIC, batch(b"x" * 60_000), acks=1), 9)
    assert response.responses[0].partition_responses[0].error_code == 0
    assert response.throttle_time_ms >= 4 * OUTCOME_S * 1000, response.throttle_time_ms
    return client, response.throttle_time_ms


def test_a_quotas_mute_ends_when_the_clock_passes_it(tmp_path: Path) -> None:
    async def scenario(b: InProcessBroker) -> None:
        client, mute_ms = await over_quota(b)
        try:
            held = asyncio.ensure_future(client.send(1, MetadataRequest(topics=[]), 12))
            await asyncio.sleep(REAL_PAUSE_S)
            await b.advance(mute_ms - 1)
            assert not held.done(), "answered while the connection is muted"
            await b.advance(1)
            response = await asyncio.wait_for(held, OUTCOME_S)
            assert [broker.port for broker in response.brokers] == [b.broker.port]
        finally:
            client.close()

    run(tmp_path, scenario)


def test_a_peer_request_times_out_when_the_clock_passes_its_timeout(tmp_path: Path) -> None:
    """The request waits on a muted connection: nothing answers it, real time does not end it, the clock's
    ``timeout_ms`` does (TimeoutError, the connection closed, the reconnect backoff on the clock)."""

    async def scenario(b: InProcessBroker) -> None:
        client, mute_ms = await over_quota(b)
        timeout_ms = mute_ms // 2
        try:
            connection = client.connection(1)
            assert connection is not None
            waiting = asyncio.ensure_future(client.send(1, MetadataRequest(topics=[]), 12, timeout_ms=timeout_ms))
            await asyncio.sleep(REAL_PAUSE_S)
            await b.advance(timeout_ms - 1)
            assert not waiting.done(), "ended before its timeout on the clock"
            await b.advance(1)
            with pytest.raises(TimeoutError, match=f"did not answer within {timeout_ms / 1000:g} s"):
                await asyncio.wait_for(waiting, OUTCOME_S)
            assert connection.closed is not None
            assert client.connection(1) is None
            assert client.backoff_ms(1) == 50  # reconnect.backoff.ms, counted on the same clock
        finally:
            client.close()

    run(tmp_path, scenario)
