"""The share coordinator in a cluster (ZooKeeper and three ``tidelog serve`` processes with share.version=1,
``__share_group_state`` RF=3, min.isr=2): the remote persister (Kafka's DefaultStatePersister, run here in
the test process over the broker-to-broker client) finds the share coordinator with FindCoordinator
(key type SHARE), writes through it, and after a kill -9 of the coordinator's broker finds the new leader of
the key's partition and reads the same state there (each write was answered only once the ISR had it).

Needs java and mvn for ZooKeeper (skips locally without them, fails in CI). About 40-60 s.
"""

from __future__ import annotations

import asyncio
import uuid

import pytest

from tidelog.clock import SystemClock
from tidelog.coordinator.runtime import partition_for
from tidelog.coordinator.share.persister import (
    DeliveryState,
    SharePartitionKey,
    ShareState,
    StateBatch,
    StateWrite,
)
from tidelog.coordinator.share.remote import RemoteSharePersister
from tidelog.errors import ErrorCode
from tidelog.peer.client import PeerClient, PeerSettings
from tidelog.protocol.messages import MetadataRequest
from tidelog.testing.client import WireClient
from tidelog.testing.cluster import LocalCluster, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("cluster")]

STATE_TOPIC = "__share_group_state"
PARTITIONS = 3
CLUSTER = {"chroot": "/tidelog-share-state", "session_ms": 4000,
           "overrides": {"share.version": "1", "share.coordinator.state.topic.num.partitions": str(PARTITIONS),
                         "share.coordinator.state.topic.replication.factor": "3",
                         "share.coordinator.state.topic.min.isr": "2",
                         "share.coordinator.snapshot.update.records.per.snapshot": "3",
                         "replica.lag.time.max.ms": "2000", "replica.fetch.backoff.ms": "200",
                         "default.replication.factor": "3", "min.insync.replicas": "2"}}


def remote(cluster: LocalCluster) -> RemoteSharePersister:
    """The remote persister over a peer client to the live brokers (their PLAINTEXT listeners)."""

    def address(broker_id: int) -> tuple[str, int] | None:
        b = cluster.brokers.get(broker_id)
        return ("127.0.0.1", b.port) if b is not None and b.alive else None

    client = PeerClient(PeerSettings(address, request_timeout_ms=10_000), "share-state-test")
    return RemoteSharePersister(client, lambda: [i for i, b in sorted(cluster.brokers.items()) if b.alive],
                                SystemClock(), backoff_ms=500, backoff_max_ms=4000, max_attempts=8)


def call(cluster: LocalCluster, fn):
    async def main():
        persister = remote(cluster)
        try:
            return await fn(persister)
        finally:
            persister.close()

    return asyncio.run(main())


EXPECTED = (StateBatch(30, 32, DeliveryState.ACKNOWLEDGED, 1), StateBatch(33, 33, DeliveryState.ARCHIVED, 5),
            StateBatch(34, 39, DeliveryState.AVAILABLE, 2))


def test_share_state_moves_with_the_coordinators_leadership(cluster: LocalCluster) -> None:
    wait_for(lambda: len(cluster.live_ids()) == 3, what="three registered brokers")
    cluster.create_topic("jobs", 1, 3)
    with WireClient.connect(cluster.bootstrap(1)) as wire:
        tid = wait_for(lambda: next((t.topic_id for t in wire.request(MetadataRequest(topics=None), 12).topics
                                     if t.name == "jobs" and t.topic_id != uuid.UUID(int=0)), None),
                       what="the topic's id")
    key = SharePartitionKey("jobs-queue", tid, 0)

    async def write_all(p: RemoteSharePersister) -> tuple[int, ShareState]:
        assert await p.initialize(key, 1, 0) == ErrorCode.NONE
        for n in range(4):  # a snapshot after every 3 updates: both record types are replayed by the new leader
            batches = (StateBatch(n * 10, n * 10 + 9, DeliveryState.AVAILABLE, 2),
                       StateBatch(n * 10, n * 10 + 2, DeliveryState.ACKNOWLEDGED, 1),
                       StateBatch(n * 10 + 3, n * 10 + 3, DeliveryState.ARCHIVED, 5))
            assert await p.write(key, StateWrite(1, 7, n * 10, batches)) == ErrorCode.NONE
        code, coordinator = await p.find_coordinator(key)
        assert code == ErrorCode.NONE
        return coordinator, await p.read(key, 7)

    coordinator, before = call(cluster, write_all)
    assert (before.error, before.state_epoch, before.start_offset, before.state_batches) == (
        ErrorCode.NONE, 1, 30, EXPECTED)
    partition = partition_for(key.coordinator_key(), PARTITIONS)
    assert cluster.leader(STATE_TOPIC, partition) == coordinator
    wait_for(lambda: len(cluster.state(STATE_TOPIC, partition)["isr"]) == 3, timeout=30, what="a full ISR")

    cluster.kill(coordinator)
    new_leader = cluster.wait_for_leader(STATE_TOPIC, partition, not_in=[coordinator])
    assert new_leader != coordinator

    async def read_again(p: RemoteSharePersister) -> tuple[int, ShareState, ErrorCode]:
        state = await p.read(key, 7)
        code, found = await p.find_coordinator(key)
        stale = await p.write(key, StateWrite(1, 6, -1))
        return found, state, (code, stale)

    found, after, (code, stale) = wait_for(
        lambda: (r := call(cluster, read_again))[1].error == ErrorCode.NONE and r, timeout=90,
        what="the state read from the new share coordinator")
    assert (code, found) == (ErrorCode.NONE, new_leader)
    assert (after.state_epoch, after.start_offset, after.state_batches) == (1, 30, EXPECTED)
    assert stale == ErrorCode.FENCED_LEADER_EPOCH  # the leader epoch written before the failover still fences
