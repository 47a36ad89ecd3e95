"""A group coordinator taking over a large ``__consumer_offsets`` partition after kill -9 of the
coordinator's broker (ZooKeeper and three ``tidelog serve`` processes, RF=3): the new leader loads
the partition in the background and answers COORDINATOR_LOAD_IN_PROGRESS meanwhile (FindCoordinator
keeps naming it), then the committed offsets.

Needs java and mvn for ZooKeeper (skips locally without them, fails in CI). About 40 s.
"""

from __future__ import annotations

import time

import pytest

from tidelog.coordinator.runtime import partition_for
from tidelog.errors import ErrorCode
from tidelog.protocol.messages import FindCoordinatorRequest, OffsetCommitRequest, OffsetFetchRequest
from tidelog.testing.client import ConnectionClosed, WireClient
from tidelog.testing.cluster import LocalCluster, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("cluster")]

OFFSETS = "__consumer_offsets"
PARTITIONS = 3  # of __consumer_offsets
TOPIC, TOPIC_PARTITIONS = "ld-source", 200
GROUP = "ld-group"
COMMITS = 300  # requests of TOPIC_PARTITIONS offsets each: 60,000 records in one offsets partition
WINDOW = 25  # requests in flight on the connection


CLUSTER = {"chroot": "/tidelog-loading", "session_ms": 4000,  # the module's cluster (conftest.py)
           "overrides": {"min.insync.replicas": "2", "offsets.topic.replication.factor": "3",
                         "offsets.topic.num.partitions": str(PARTITIONS), "replica.fetch.backoff.ms": "200"}}


def find_coordinator(bootstrap: str) -> tuple[int, int, str]:
    """(error code, node id, host:port) of FindCoordinator v1 for GROUP, asked of one broker."""
    with WireClient.connect(bootstrap) as client:
        r = client.request(FindCoordinatorRequest(key=GROUP, key_type=0), 1)
    return r.error_code, r.node_id, f"{r.host}:{r.port}"


def commit_all(bootstrap: str) -> None:
    with WireClient.connect(bootstrap, timeout=30) as client:
        sent = 0
        while sent < COMMITS:
            window = range(sent, min(COMMITS, sent + WINDOW))
            for i in window:
                client.send(OffsetCommitRequest(group_id=GROUP, generation_id_or_member_epoch=-1, member_id="", topics=[
                    OffsetCommitRequest.OffsetCommitRequestTopic(name=TOPIC, partitions=[
                        OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=p, committed_offset=i * 1000 + p)
                        for p in range(TOPIC_PARTITIONS)])]), 7)
            for _ in window:
                _, response = client.receive()
                codes = {p.error_code for t in response.topics for p in t.partitions}
                assert codes == {0}, codes
            sent += len(window)


def fetch(client: WireClient) -> tuple[int, dict[int, int]]:
    response = client.request(OffsetFetchRequest(group_id=GROUP, topics=None), 5)
    return response.error_code, {p.partition_index: p.committed_offset for t in response.topics for p in t.partitions}


def test_the_new_coordinator_answers_load_in_progress_then_the_offsets(cluster: LocalCluster) -> None:
    wait_for(lambda: len(cluster.live_ids()) == 3, what="three registered brokers")
    cluster.create_topic(TOPIC, TOPIC_PARTITIONS, 1)
    code, leader, address = wait_for(lambda: (r := find_coordinator(cluster.bootstrap().split(",")[0]))[0] == 0 and r, timeout=30,
                                     what="a coordinator for the group")
    started = time.monotonic()
    commit_all(address)
    print(f"{COMMITS * TOPIC_PARTITIONS} offsets committed in {time.monotonic() - started:.1f}s")
    partition = partition_for(GROUP, PARTITIONS)
    assert cluster.leader(OFFSETS, partition) == leader
    expected = {p: (COMMITS - 1) * 1000 + p for p in range(TOPIC_PARTITIONS)}
    with WireClient.connect(address) as client:
        assert fetch(client) == (0, expected)

    cluster.kill(leader)
    survivors = {b: cluster.brokers[b].bootstrap for b in cluster.brokers if b != leader}
    clients: dict[int, WireClient] = {}
    seen: list[tuple[float, int, int]] = []  # (time, broker, error code)
    found_during_load: tuple[int, int, str] | None = None
    answer: tuple[int, dict[int, int]] | None = None
    deadline = time.monotonic() + 60
    try:
        while answer is None and time.monotonic() < deadline:
            for broker, bootstrap in survivors.items():
                try:
                    client = clients.get(broker) or clients.setdefault(broker, WireClient.connect(bootstrap))
                    code, offsets = fetch(client)
                except (ConnectionClosed, OSError):
                    clients.pop(broker, None)
                    continue
                seen.append((time.monotonic(), broker, code))
                if code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS and found_during_load is None:
                    found_during_load = find_coordinator(bootstrap)
                if code == 0:
                    answer = code, offsets
                    new_leader = broker
            time.sleep(0.01)
    finally:
        for client in clients.values():
            client.close()
        cluster.restart(leader)
    assert answer == (0, expected), seen[-5:]
    codes = [(b, c) for _, b, c in seen if b == new_leader]
    loading = [t for t, b, c in seen if b == new_leader and c == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS]
    assert loading, f"the new coordinator never answered COORDINATOR_LOAD_IN_PROGRESS: {codes}"
    # NOT_COORDINATOR (not the leader yet) at most before the load, never after it
    assert {c for b, c in codes} <= {ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, 0}
    first_loading = codes.index((new_leader, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS))
    assert set(codes[first_loading:-1]) == {(new_leader, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)}
    assert found_during_load is not None and found_during_load[:2] == (0, new_leader)  # FindCoordinator: this broker
    print(f"COORDINATOR_LOAD_IN_PROGRESS answered {len(loading)} times over {seen[-1][0] - loading[0]:.2f}s")
    loaded = [line.strip() for line in cluster.brokers[new_leader].stderr_lines
              if f"loaded coordinator partition {partition}:" in line]
    print("\n".join(loaded))
    assert loaded and f"{COMMITS * TOPIC_PARTITIONS} records" in loaded[-1]
