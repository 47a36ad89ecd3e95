"""Controlled shutdown with a real ZooKeeper and three ``tidelog serve`` processes (RF=3,
min.insync.replicas=2): on SIGTERM a broker asks the controller to move its leaderships away and to
take it out of the ISRs before it leaves, so acks=all produce resumes on the new leader at once (the
measured time is printed); a broker whose partitions cannot move retries
``controlled.shutdown.max.retries`` times and stops anyway; a clean stop leaves the high watermarks
in ``replication-offset-checkpoint`` and a restarted broker starts from them; the returning preferred
replica leads again by itself (``auto.leader.rebalance.enable``). About 30 s.
"""

from __future__ import annotations

import signal
import threading
import time

import pytest

from tests.integration.kafka_io import produce_batch
from tidelog.errors import ErrorCode
from tidelog.records.builder import build_batch
from tidelog.replica.hw_checkpoint import REPLICATION_OFFSET_CHECKPOINT
from tidelog.storage.checkpoints import read_checkpoint
from tidelog.testing.client import WireClient
from tidelog.testing.cluster import LocalCluster, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("cluster")]

SESSION_MS = 10_000  # a failover that waited for the session would take this long


CLUSTER = {"chroot": "/tidelog-cs", "session_ms": SESSION_MS,  # the module's cluster (conftest.py)
           "overrides": {"min.insync.replicas": "2", "default.replication.factor": "3",
                         "offsets.topic.replication.factor": "3", "offsets.topic.num.partitions": "1",
                         "replica.lag.time.max.ms": "2000", "replica.fetch.backoff.ms": "200",
                         "controlled.shutdown.retry.backoff.ms": "500",
                         "replica.high.watermark.checkpoint.interval.ms": "500",
                         "leader.imbalance.check.interval.seconds": "1"}}


def _produce_until_acknowledged(cluster: LocalCluster, topic: str, partition: int, candidates: list[int],
                                timeout: float = 20.0) -> tuple[int, float]:
    """acks=all produce to each candidate in turn until one acknowledges; (broker, monotonic time)."""
    clients = {i: WireClient.connect(cluster.brokers[i].bootstrap) for i in candidates}
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            for broker_id, client in clients.items():
                response = produce_batch(client, topic, build_batch([(0, None, b"after-sigterm")]),
                                         partition=partition)
                if response.error_code == ErrorCode.NONE:
                    return broker_id, time.monotonic()
            time.sleep(0.005)
    finally:
        for client in clients.values():
            client.close()
    raise AssertionError(f"no acks=all produce acknowledged on {candidates} within {timeout} s")


def test_sigterm_moves_leadership_before_the_broker_leaves(cluster: LocalCluster) -> None:
    cluster.create_topic("cs", 3, 3)
    victim = cluster.leader("cs", 0)
    before = {p: cluster.state("cs", p) for p in range(3)}
    with WireClient.connect(cluster.brokers[victim].bootstrap) as client:
        for i in range(5):
            assert produce_batch(client, "cs", build_batch([(0, None, b"before-%d" % i)])).error_code == 0
    # ZooKeeper delivers a client's watch events in the order of the changes: the leadership moves
    # (partition state) before the broker's registration goes (its session closes at the very end).
    events: list[str] = []
    seen = threading.Event()
    cluster.zk.exists(f"/brokers/ids/{victim}", watch=lambda e: events.append("deregistered"))
    cluster.zk.get("/brokers/topics/cs/partitions/0/state",
                   watch=lambda e: (events.append("state"), seen.set()))
    others = [i for i in cluster.brokers if i != victim]
    broker = cluster.brokers[victim]
    started = time.monotonic()
    broker.proc.send_signal(signal.SIGTERM)
    new_leader, acknowledged = _produce_until_acknowledged(cluster, "cs", 0, others)
    failover_ms = (acknowledged - started) * 1000
    assert broker.proc.wait(30) == 0
    print(f"\ncontrolled shutdown: SIGTERM -> first acks=all produce acknowledged on broker {new_leader}: "
          f"{failover_ms:.0f} ms (zookeeper.session.timeout.ms={SESSION_MS})")
    assert failover_ms < SESSION_MS / 2
    assert seen.wait(5)
    wait_for(lambda: "deregistered" in events, what="the broker's registration to go")
    assert events.index("state") < events.index("deregistered"), events
    assert "controlled shutdown succeeded" in broker.stderr_text()
    for p in range(3):
        after = cluster.state("cs", p)
        assert victim not in after["isr"]
        if before[p]["leader"] == victim:  # moved to the first other ISR member in assignment order
            replicas = cluster.assignment("cs")[p]
            assert after["leader"] == next(r for r in replicas if r != victim)
            assert after["leader_epoch"] == before[p]["leader_epoch"] + 1
    # its clean stop wrote the high watermarks; back, it starts from them and catches up
    checkpoint = read_checkpoint(broker.data_dir / REPLICATION_OFFSET_CHECKPOINT)
    assert checkpoint[("cs", 0)] >= 5
    cluster.restart(victim)
    wait_for(lambda: victim in cluster.state("cs", 0)["isr"], what="the restarted broker back in the ISR")
    cluster.wait_replicas_identical("cs", 0)
    # auto.leader.rebalance.enable: the controller gives the preferred replica its partitions back
    wait_for(lambda: all(cluster.leader("cs", p) == cluster.assignment("cs")[p][0] for p in range(3)),
             what="the preferred replicas leading again")


def test_a_partition_that_cannot_move_is_retried_then_the_broker_stops_anyway(cluster: LocalCluster) -> None:
    wait_for(lambda: len(cluster.live_ids()) == 3, what="three brokers")
    controller = cluster.controller()
    for attempt in range(10):  # the paused follower must not be the controller (the request would time out)
        topic = f"cs-stuck-{attempt}"
        cluster.create_topic(topic, 1, 2)
        leader = cluster.leader(topic)
        (follower,) = [r for r in cluster.assignment(topic)[0] if r != leader]
        if follower != controller:
            break
    cluster.pause(follower)  # lags behind, leaves the ISR after replica.lag.time.max.ms: nobody else may lead
    try:
        with WireClient.connect(cluster.brokers[leader].bootstrap) as client:
            assert produce_batch(client, topic, build_batch([(0, None, b"lagging")]), acks=1).error_code == 0
        wait_for(lambda: cluster.state(topic)["isr"] == [leader], what="the paused follower out of the ISR")
        broker = cluster.brokers[leader]
        started = time.monotonic()
        assert broker.stop() == 0
        took = time.monotonic() - started
    finally:
        cluster.resume(follower)
    text = broker.stderr_text()
    assert "controlled shutdown attempt 1 of 3" in text and "did not complete; stopping anyway" in text
    assert took >= 2 * 0.5  # two backoffs of controlled.shutdown.retry.backoff.ms between three attempts
    cluster.restart(leader)
    wait_for(lambda: len(cluster.live_ids()) == 3, what="three brokers again")
