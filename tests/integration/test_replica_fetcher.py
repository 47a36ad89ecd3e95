"""The replica fetcher (replica/fetcher.py) in this process, following a real leader: a ``tidelog serve``
broker of a ZooKeeper cluster leads a partition, the fetcher (as another broker id) copies it through
the peer client, keeps fetching while the leader restarts (the peer client reconnects), and copies
what was written after the restart too. About 30 s (ZooKeeper and a broker start, the broker restarts)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer

from tidelog.clock import SystemClock
from tidelog.peer.client import PeerClient, PeerSettings
from tidelog.protocol.messages import FetchRequest, FetchResponse
from tidelog.records.batch import RecordBatchView, iter_batches
from tidelog.replica.fetcher import ReplicaFetcher
from tidelog.testing.cluster import LocalCluster, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("replica_fetcher")]

TOPIC = "followed"
FOLLOWER = 7  # not a broker of the cluster: its fetches read, they change no ISR


CLUSTER = {"brokers": 1, "chroot": "/tidelog-fetcher", "session_ms": 6000}  # the module's (tests/fixtures.py)


@pytest.fixture
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    yield loop
    loop.call_soon_threadsafe(loop.stop)
    thread.join(10)
    loop.close()


class Copy:
    """What the follower's owner does with responses, reduced to keeping offsets (replication.py appends)."""

    def __init__(self) -> None:
        self.next_offset = 0
        self.offsets: list[int] = []
        self.errors: list[int] = []

    def build(self, leader_id: int) -> FetchRequest:
        return FetchRequest(replica_id=FOLLOWER, max_wait_ms=500, min_bytes=1, max_bytes=1 << 20, topics=[
            FetchRequest.FetchTopic(topic=TOPIC, partitions=[FetchRequest.FetchPartition(
                partition=0, fetch_offset=self.next_offset, partition_max_bytes=1 << 20)])])

    def handle(self, leader_id: int, request: FetchRequest, response: FetchResponse) -> bool:
        data = response.responses[0].partitions[0]
        if data.error_code:
            self.errors.append(data.error_code)
            return False
        for view in iter_batches(data.records or b""):
            if isinstance(view, RecordBatchView) and view.base_offset >= self.next_offset:
                self.offsets.extend(range(view.base_offset, view.next_offset))
                self.next_offset = view.next_offset
        return True


def _produce(cluster: LocalCluster, values: list[bytes]) -> None:
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all"})
    for value in values:
        producer.produce(TOPIC, value, partition=0)
    assert producer.flush(30) == 0


def test_the_fetcher_follows_its_leader_through_a_restart(cluster: LocalCluster, loop, tmp_path: Path) -> None:
    cluster.create_topic(TOPIC, 1, 1)
    leader = cluster.leader(TOPIC)
    _produce(cluster, [b"a", b"b", b"c"])
    copy = Copy()

    def address(broker_id: int) -> tuple[str, int] | None:
        broker = cluster.brokers.get(broker_id)
        return ("127.0.0.1", broker.port) if broker is not None and broker.alive else None

    peers = PeerClient(PeerSettings(address, request_timeout_ms=5000), f"tidelog-replica-fetcher-{FOLLOWER}")

    async def start() -> ReplicaFetcher:
        fetcher = ReplicaFetcher(FOLLOWER, leader, peers, copy.build, copy.handle, SystemClock(), backoff_ms=100,
                                 timeout_ms=5500)
        fetcher.start()
        return fetcher

    fetcher = asyncio.run_coroutine_threadsafe(start(), loop).result(10)
    try:
        wait_for(lambda: copy.offsets == [0, 1, 2], what="the first three records copied")
        first = asyncio.run_coroutine_threadsafe(_connection(peers, leader), loop).result(10)
        cluster.restart(leader)
        wait_for(lambda: cluster.state_or_none(TOPIC) and cluster.leader(TOPIC) == leader, what="leader again")
        _produce(cluster, [b"d", b"e"])
        wait_for(lambda: copy.offsets == [0, 1, 2, 3, 4], what="the records written after the restart copied")
        second = asyncio.run_coroutine_threadsafe(_connection(peers, leader), loop).result(10)
        assert second is not None and second is not first  # a new connection to the restarted leader
    finally:
        asyncio.run_coroutine_threadsafe(fetcher.stop(), loop).result(30)
        loop.call_soon_threadsafe(peers.close)


async def _connection(peers: PeerClient, broker_id: int):
    return peers.connection(broker_id)
