"""The peer client (tidelog.peer) against real brokers on real sockets: in-process brokers (threads) for
the connection's behaviour (correlation under pipelining, timeouts, reconnect with backoff on a
ManualClock after the broker restarts, SASL over TLS), and a ZooKeeper cluster of ``tidelog serve``
processes for the replica fetcher following a leader through its restart. About 40 s (the cluster)."""

from __future__ import annotations

import asyncio
import socket
import ssl
from collections.abc import Iterator
from pathlib import Path

import pytest

import tidelog
from tidelog.errors import ErrorCode
from tidelog.peer.client import PeerBackingOff, PeerClient, PeerSettings, PeerUnavailable
from tidelog.peer.connection import PeerRefusedError
from tidelog.peer.wire import Security
from tidelog.protocol.messages import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    CreateTopicsRequest,
    FetchRequest,
    FetchResponse,
    MetadataRequest,
    MetadataResponse,
)
from tidelog.testing import ManualClock

pytestmark = [pytest.mark.integration]


_VERSIONS = ApiVersionsRequest(client_software_name="tidelog-peer-test", client_software_version="1")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[tidelog.Broker]:
    with tidelog.Broker(data_dir=tmp_path / "broker", port=_free_port()) as b:
        yield b


def _settings(broker: tidelog.Broker, clock: ManualClock | None = None, **kw) -> PeerSettings:
    port = broker.ports["kafka"]
    return PeerSettings(lambda broker_id: ("127.0.0.1", port) if broker_id == 1 else None, clock=clock, **kw)


def _create(name: str) -> CreateTopicsRequest:
    return CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
        name=name, num_partitions=1, replication_factor=1)], timeout_ms=10_000)


def _long_poll(topic: str, max_wait_ms: int) -> FetchRequest:
    """A consumer's Fetch on an empty partition: the broker holds it up to ``max_wait_ms``."""
    return FetchRequest(replica_id=-1, max_wait_ms=max_wait_ms, min_bytes=1, topics=[FetchRequest.FetchTopic(
        topic=topic, partitions=[FetchRequest.FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1024)])])


def _metadata(name: str) -> MetadataRequest:
    return MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=name)], allow_auto_topic_creation=False)


def test_pipelined_requests_each_get_their_own_response(broker: tidelog.Broker) -> None:
    async def run():
        client = PeerClient(_settings(broker), "test-peer")
        try:
            created = await client.send(1, _create("held"), 5)
            held = asyncio.ensure_future(client.send(1, _long_poll("held", 1500), 12))
            asks = [asyncio.ensure_future(client.send(1, _metadata(f"absent-{i}"), 12)) for i in range(8)]
            versions = [asyncio.ensure_future(client.send(1, _VERSIONS, v)) for v in (0, 3)]
            await asyncio.sleep(0.2)
            connection = client.connection(1)
            in_flight = connection.in_flight if connection is not None else 0
            results = await asyncio.gather(held, *asks, *versions)
            return created, in_flight, results, connection is client.connection(1)
        finally:
            client.close()

    created, in_flight, (fetched, *answers), same_connection = asyncio.run(run())
    assert created.topics[0].error_code == ErrorCode.NONE
    assert in_flight == 11  # the held Fetch and the ten behind it, all on one connection at once
    assert same_connection
    assert isinstance(fetched, FetchResponse) and fetched.responses[0].partitions[0].error_code == ErrorCode.NONE
    metadata, versions = answers[:8], answers[8:]
    assert all(isinstance(m, MetadataResponse) for m in metadata)
    assert [m.topics[0].name for m in metadata] == [f"absent-{i}" for i in range(8)]
    assert all(m.topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION for m in metadata)
    assert [(type(v), v.error_code) for v in versions] == [(ApiVersionsResponse, ErrorCode.NONE)] * 2


def test_a_request_not_answered_in_time_times_out_and_the_next_one_reconnects(broker: tidelog.Broker) -> None:
    clock = ManualClock()

    async def run():
        client = PeerClient(_settings(broker, clock), "test-peer")
        try:
            await client.send(1, _create("slow"), 5)
            first = client.connection(1)
            held = asyncio.ensure_future(client.send(1, _long_poll("slow", 10_000), 12, timeout_ms=300))
            await asyncio.sleep(0.5)  # out, and held by the broker's long poll
            clock.advance(300)  # the request's timeout counts on the client's clock
            with pytest.raises(TimeoutError):
                await asyncio.wait_for(held, 5)
            assert client.connection(1) is None  # the stream is out of step: closed
            with pytest.raises(PeerBackingOff, match="reconnecting in 50 ms"):
                await client.send(1, _VERSIONS, 3)
            clock.advance(50)
            answer = await client.send(1, _VERSIONS, 3)
            return first, client.connection(1), answer
        finally:
            client.close()

    first, second, answer = asyncio.run(run())
    assert answer.error_code == ErrorCode.NONE
    assert second is not None and second is not first


def test_the_client_reconnects_after_the_broker_restarts_backing_off_on_the_clock(tmp_path: Path) -> None:
    clock = ManualClock()
    port = _free_port()
    broker = tidelog.Broker(data_dir=tmp_path / "broker", port=port).start()
    loop = asyncio.new_event_loop()
    client = PeerClient(PeerSettings(lambda broker_id: ("127.0.0.1", port), clock=clock), "test-peer")
    try:
        assert loop.run_until_complete(client.send(1, _VERSIONS, 3)).error_code == ErrorCode.NONE
        broker.stop()
        with pytest.raises(ConnectionError):  # lost with the broker (or refused, if the loss was seen first)
            loop.run_until_complete(client.send(1, _VERSIONS, 3))
        backoffs = []
        for _ in range(6):
            backoffs.append(client.backoff_ms(1))
            with pytest.raises(PeerBackingOff, match="reconnecting in"):  # no attempt while backing off
                loop.run_until_complete(client.send(1, _VERSIONS, 3))
            clock.advance(client.backoff_ms(1))
            with pytest.raises(PeerUnavailable, match="ConnectionRefusedError"):  # tried, refused: the broker is down
                loop.run_until_complete(client.send(1, _VERSIONS, 3))
        assert backoffs[1:] == [100, 200, 400, 800, 1000]  # doubling up to reconnect.backoff.max.ms
        broker = tidelog.Broker(data_dir=tmp_path / "broker", port=port).start()
        assert not client.ready(1)
        clock.advance(client.backoff_ms(1))
        assert client.ready(1)
        assert loop.run_until_complete(client.send(1, _VERSIONS, 3)).error_code == ErrorCode.NONE
        assert client.backoff_ms(1) == 0
    finally:
        client.close()
        loop.close()
        broker.stop()


def test_sasl_over_tls_and_a_wrong_password_refused_with_the_reason(tmp_path: Path) -> None:
    pytest.importorskip("trustme")
    with tidelog.Broker(data_dir=tmp_path / "broker", security_protocol="SASL_SSL",
                        users={"broker": "right"}, sasl_mechanism="SCRAM-SHA-512") as b:
        assert b.ssl_ca is not None
        context = ssl.create_default_context(cafile=str(b.ssl_ca))

        def ask(password: str):
            security = Security("SASL_SSL", context, "SCRAM-SHA-512", "broker", password, "SASL_SSL")
            client = PeerClient(PeerSettings(lambda broker_id: ("127.0.0.1", b.ports["kafka"]), lambda: security),
                                "test-peer")

            async def go():
                try:
                    return await client.send(1, _metadata("none"), 12)
                finally:
                    client.close()
            return asyncio.run(go())

        assert ask("right").topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        with pytest.raises(PeerRefusedError, match="SASL SCRAM-SHA-512 authentication as broker on listener "
                                                   "SASL_SSL failed: SASL_AUTHENTICATION_FAILED") as e:
            ask("wrong")
        assert "wrong" not in str(e.value).replace("as broker", "")
