"""The operator procedures of docs/cluster.md, on ZooKeeper and three real ``tidelog serve`` processes
(RF=3, min.insync.replicas=2): replacing a dead broker by one with the same broker.id and an empty
data directory, and a rolling restart (SIGTERM one broker, wait until it is back in every ISR, then
the next) under an acks=all idempotent producer. About 45 s (longer on a loaded machine).
"""

from __future__ import annotations

import shutil
import threading
import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from tidelog.testing.cluster import LocalCluster, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("cluster")]

SESSION_MS = 4000


CLUSTER = {"chroot": "/tidelog-ops", "session_ms": SESSION_MS,  # the module's cluster (conftest.py)
           "overrides": {"min.insync.replicas": "2", "default.replication.factor": "3",
                         "offsets.topic.num.partitions": "3", "replica.fetch.backoff.ms": "200"}}


def in_every_isr(cluster: LocalCluster, topic: str, partitions: int, broker_id: int) -> bool:
    return all(broker_id in cluster.state(topic, p)["isr"] for p in range(partitions))


def read_all(cluster: LocalCluster, topic: str, partitions: int) -> list[bytes]:
    """Every record of every partition up to its high watermark."""
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap(), "group.id": "ops-tests",
                         "enable.auto.commit": False})
    ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in range(partitions)}
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    values: list[bytes] = []
    deadline = time.monotonic() + 30
    try:
        while len(values) < sum(ends.values()) and time.monotonic() < deadline:
            for m in consumer.consume(1000, 0.5):
                if m.error() is None:
                    values.append(m.value())
    finally:
        consumer.close()
    return values


def test_a_dead_broker_replaced_with_an_empty_disk_refetches_everything_and_rejoins_the_isr(cluster):
    cluster.create_topic("ops-replace", 2, 3)
    producer = Producer({"bootstrap.servers": cluster.bootstrap(), "acks": "all", "linger.ms": 5})
    for i in range(2000):
        producer.produce("ops-replace", b"r%d" % i, partition=i % 2)
    assert producer.flush(30) == 0
    victim = 3
    cluster.kill(victim)
    wait_for(lambda: all(victim not in cluster.state("ops-replace", p)["isr"] for p in (0, 1)),
             SESSION_MS / 1000 + 15, what="the dead broker out of every ISR")
    shutil.rmtree(cluster.brokers[victim].data_dir)  # the machine and its disk are gone
    cluster.restart(victim)  # same broker.id, empty log.dirs
    wait_for(lambda: in_every_isr(cluster, "ops-replace", 2, victim), 60, what="the new broker in every ISR")
    for p in (0, 1):
        batches = cluster.wait_replicas_identical("ops-replace", p, (1, 2, 3))
        assert batches[0][0] == 0  # it fetched the log from its start, not just what came after
    assert sorted(read_all(cluster, "ops-replace", 2)) == sorted(b"r%d" % i for i in range(2000))


def test_a_rolling_restart_loses_and_duplicates_nothing_under_acks_all(cluster):
    topic, partitions = "ops-rolling", 3
    cluster.create_topic(topic, partitions, 3)
    producer = Producer({"bootstrap.servers": cluster.bootstrap(), "acks": "all", "enable.idempotence": True,
                         "linger.ms": 5, "message.timeout.ms": 60_000})
    acked: list[bytes] = []
    failed: list[str] = []
    stop = threading.Event()

    def on_delivery(err, msg) -> None:
        (failed.append(str(err)) if err is not None else acked.append(msg.value()))

    def produce() -> None:
        n = 0
        while not stop.is_set():
            producer.produce(topic, b"k%d" % n, partition=n % partitions, on_delivery=on_delivery)
            n += 1
            producer.poll(0.002)
        producer.flush(60)

    writer = threading.Thread(target=produce)
    writer.start()
    try:
        for broker_id in (1, 2, 3):
            wait_for(lambda: all(sorted(cluster.state(topic, p)["isr"]) == [1, 2, 3] for p in range(partitions)),
                     60, what="a healthy cluster before the next broker")
            before = len(acked)
            # SIGTERM: a controlled shutdown moves its leaderships first, then it exits (code 0, not killed)
            assert cluster.brokers[broker_id].stop(timeout=30) == 0
            wait_for(lambda b=broker_id: all(cluster.leader(topic, p) not in (-1, b) for p in range(partitions)),
                     SESSION_MS / 1000 + 10, what=f"leaders away from broker {broker_id}")
            wait_for(lambda n=before: len(acked) > n + 50, 30, what=f"acks=all writes with broker {broker_id} down")
            cluster.restart(broker_id)
            wait_for(lambda b=broker_id: in_every_isr(cluster, topic, partitions, b), 60,
                     what=f"broker {broker_id} back in every ISR")
    finally:
        stop.set()
        writer.join(90)
    assert not failed, failed[:5]
    values = read_all(cluster, topic, partitions)
    assert len(values) == len(set(values)), "a record was written twice"
    assert set(acked) <= set(values), f"{len(set(acked) - set(values))} acknowledged records lost"
    for p in range(partitions):
        cluster.wait_replicas_identical(topic, p, (1, 2, 3))

