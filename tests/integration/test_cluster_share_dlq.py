"""Share groups' dead-letter queues (KIP-1191) in a cluster (ZooKeeper and three ``tidelog serve`` processes at
share.version=2): a topic with a partition led by each broker, a one-partition DLQ topic led by one of
them; confluent-kafka's ShareConsumer rejects a record of each partition, and the two share partitions
whose leader does not lead the DLQ partition write their dead letters to its leader (a Produce over the
broker-to-broker client), the third appends locally. A plain consumer reads the three from the DLQ topic.

Needs java and mvn for ZooKeeper (skips locally without them, fails in CI). About 40-60 s.
"""

from __future__ import annotations

import time

import pytest
from confluent_kafka import AcknowledgeType, Consumer, Producer, ShareConsumer

from tidelog.protocol.messages import IncrementalAlterConfigsRequest
from tidelog.testing.client import WireClient
from tidelog.testing.cluster import LocalCluster, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("cluster")]

CLUSTER = {"chroot": "/tidelog-share-dlq", "session_ms": 4000,
           "overrides": {"share.version": "2", "share.coordinator.state.topic.num.partitions": "3",
                         "share.coordinator.state.topic.replication.factor": "1",
                         "share.coordinator.state.topic.min.isr": "1",
                         "offsets.topic.num.partitions": "3", "offsets.topic.replication.factor": "1"}}


def test_dead_letters_reach_a_dlq_partition_led_by_another_broker(cluster: LocalCluster) -> None:
    wait_for(lambda: len(cluster.live_ids()) == 3, what="three registered brokers")
    cluster.create_topic("work", 3, 1)
    cluster.create_topic("dlq.work", 1, 1, config={"errors.deadletterqueue.group.enable": "true"})
    leaders = {cluster.leader("work", p) for p in range(3)}
    assert len(leaders) == 3, "each broker leads a partition of the source topic"
    bootstrap = cluster.bootstrap(1)
    with WireClient.connect(bootstrap) as wire:
        r = IncrementalAlterConfigsRequest
        answer = wire.request(r(resources=[r.AlterConfigsResource(resource_type=32, resource_name="dlq-g", configs=[
            r.AlterableConfig(name=k, config_operation=0, value=v) for k, v in {
                "share.auto.offset.reset": "earliest", "errors.deadletterqueue.topic.name": "dlq.work",
                "errors.deadletterqueue.copy.record.enable": "true"}.items()])]), 1)
        assert answer.responses[0].error_code == 0
    p = Producer({"bootstrap.servers": bootstrap})
    for i in range(3):
        p.produce("work", value=b"v%d" % i, partition=i)
    assert p.flush(30) == 0

    rejected: set[int] = set()
    with ShareConsumer({"bootstrap.servers": bootstrap, "group.id": "dlq-g",
                        "share.acknowledgement.mode": "explicit"}) as c:
        c.subscribe(["work"])
        deadline = time.monotonic() + 120
        while len(rejected) < 3 and time.monotonic() < deadline:
            for m in c.poll(1.0):
                if m.error() is None:
                    c.acknowledge(m, AcknowledgeType.REJECT)
                    rejected.add(m.partition())
            c.commit_sync()
    assert rejected == {0, 1, 2}

    reader = Consumer({"bootstrap.servers": bootstrap, "group.id": "dlq-reader", "auto.offset.reset": "earliest"})
    try:
        reader.subscribe(["dlq.work"])
        got: dict[bytes, bytes] = {}
        deadline = time.monotonic() + 90
        while len(got) < 3 and time.monotonic() < deadline:
            m = reader.poll(1.0)
            if m is not None and m.error() is None:
                headers = dict(m.headers())
                assert headers["__dlq.errors.message"] == b"Offset rejected by client."
                got[headers["__dlq.errors.partition"]] = m.value()
    finally:
        reader.close()
    logged = [line for b in cluster.brokers.values() for line in b.stderr_lines if "DLQ" in line]
    assert got == {b"0": b"v0", b"1": b"v1", b"2": b"v2"}, logged
