"""Consume-transform-produce in a cluster where the consumer group's coordinator and the transaction
coordinator are different brokers (issue 23, finding 2).

TxnOffsetCommit goes to the group's coordinator, which must check (KIP-890) that the group's
``__consumer_offsets`` partition is in the producer's transaction: it asks the transactional id's
coordinator, on another broker here (AddPartitionsToTxn v5, verify only). Old code asked only its own
transaction coordinator, which does not coordinate that id: NOT_COORDINATOR, and
``send_offsets_to_transaction`` failed whenever the two coordinators were on different brokers.

Both transaction versions: confluent-kafka (AddOffsetsToTxn, then TxnOffsetCommit v3: the group's
coordinator verifies) and Kafka's Java client 4.x (transaction version 2, TxnOffsetCommit v5: the
group's coordinator adds its partition to the transaction).

ZooKeeper and three ``tidelog serve`` processes (the cluster of test_cluster_coordinators.py); needs
java and mvn (ZooKeeper, the Java client of tests/java). About 60-90 s.
"""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from tests.integration.test_cluster_coordinators import (  # CLUSTER: the module's cluster (conftest.py)
    CLUSTER,  # noqa: F401
    OFFSETS,
    PARTITIONS,
    TXN_STATE,
    Cluster,
)
from tests.oracle import jvm
from tidelog.coordinator.runtime import partition_for

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("cluster")]


class _Cluster(Cluster):
    """min.insync.replicas 1: tests/java's scenario creates its topic with one replica."""

    def broker_overrides(self, broker_id: int) -> dict[str, str]:
        return {**super().broker_overrides(broker_id), "min.insync.replicas": "1"}


CLUSTER_CLASS = _Cluster  # with test_cluster_coordinators' CLUSTER: the module's cluster (conftest.py)


def _internal_topics(cluster: Cluster) -> None:
    """Create ``__transaction_state`` and ``__consumer_offsets`` (first use) and wait for their leaders."""
    p = Producer({"bootstrap.servers": cluster.bootstrap(), "transactional.id": "txn-offsets-warm-up"})
    p.init_transactions(60)
    c = Consumer({"bootstrap.servers": cluster.bootstrap(), "group.id": "txn-offsets-warm-up"})
    deadline = time.monotonic() + 60
    while cluster.state_or_none(OFFSETS, PARTITIONS - 1) is None and time.monotonic() < deadline:
        try:
            c.committed([TopicPartition("txn-offsets-in", 0)], timeout=5)
        except KafkaException:  # the coordinator is not there yet: ask again
            time.sleep(0.2)
    c.close()
    for topic in (OFFSETS, TXN_STATE):
        for partition in range(PARTITIONS):
            cluster.full_isr(topic, partition)


def _apart(cluster: Cluster, group_name: str = "txn-offsets-group-{}",
           txn_name: str = "txn-offsets-producer-{}") -> tuple[str, str, int, int]:
    """A group id and a transactional id whose coordinators are different brokers."""
    group_leaders = {p: cluster.leader(OFFSETS, p) for p in range(PARTITIONS)}
    txn_leaders = {p: cluster.leader(TXN_STATE, p) for p in range(PARTITIONS)}
    for i in range(1000):
        group, txn = group_name.format(i), txn_name.format(i)
        g, t = group_leaders[partition_for(group, PARTITIONS)], txn_leaders[partition_for(txn, PARTITIONS)]
        if g != t:
            return group, txn, g, t
    raise AssertionError(f"every id maps to one broker: {group_leaders} {txn_leaders}")


def test_send_offsets_to_transaction_with_the_coordinators_on_different_brokers(cluster: Cluster) -> None:
    source, sink = "txn-offsets-in", "txn-offsets-out"
    cluster.create(source)
    cluster.create(sink)
    _internal_topics(cluster)
    group, txn_id, group_broker, txn_broker = _apart(cluster)
    assert group_broker != txn_broker

    feeder = Producer({"bootstrap.servers": cluster.bootstrap(), "acks": "all"})
    for i in range(30):
        feeder.produce(source, b"v%d" % i, partition=0)
    assert feeder.flush(30) == 0

    consumer = Consumer({"bootstrap.servers": cluster.bootstrap(), "group.id": group, "enable.auto.commit": False,
                         "auto.offset.reset": "earliest", "isolation.level": "read_committed"})
    producer = Producer({"bootstrap.servers": cluster.bootstrap(), "transactional.id": txn_id,
                         "transaction.timeout.ms": 30000})
    try:
        producer.init_transactions(60)
        consumer.assign([TopicPartition(source, 0, 0)])
        done = 0
        deadline = time.monotonic() + 60
        while done < 30 and time.monotonic() < deadline:
            batch = [m for m in consumer.consume(10, 1.0) if m.error() is None]
            if not batch:
                continue
            producer.begin_transaction()
            for m in batch:
                producer.produce(sink, m.value().upper(), partition=0)
            # old code: KafkaException NOT_COORDINATOR (retried by librdkafka until the timeout)
            producer.send_offsets_to_transaction(consumer.position(consumer.assignment()),
                                                 consumer.consumer_group_metadata(), 30)
            producer.commit_transaction(30)
            done += len(batch)
        assert done == 30
    finally:
        consumer.close()
        producer.flush(10)

    checker = Consumer({"bootstrap.servers": cluster.bootstrap(), "group.id": group, "enable.auto.commit": False})
    try:
        (committed,) = checker.committed([TopicPartition(source, 0)], timeout=30)
    finally:
        checker.close()
    assert committed.offset == 30, "the offsets committed in the transactions"
    reader = Consumer({"bootstrap.servers": cluster.bootstrap(), "group.id": f"{group}-reader",
                       "enable.auto.commit": False, "isolation.level": "read_committed"})
    out: list[bytes] = []
    try:
        reader.assign([TopicPartition(sink, 0, 0)])
        deadline = time.monotonic() + 30
        while len(out) < 30 and time.monotonic() < deadline:
            out += [m.value() for m in reader.consume(30, 1.0) if m.error() is None]
    finally:
        reader.close()
    assert out == [b"V%d" % i for i in range(30)]


def test_the_java_clients_transactions_with_the_coordinators_on_different_brokers(cluster: Cluster,
                                                                                   java_classpath: str) -> None:
    """tests/java's Transactions scenario (commit, abort, sendOffsetsToTransaction, fencing), with a
    run prefix whose group and transactional id have their coordinators on different brokers; the Java
    client speaks transaction version 2 (TxnOffsetCommit v5: the group's coordinator adds its partition
    to the transaction through the other broker). Old code: sendOffsetsToTransaction failed."""
    _internal_topics(cluster)
    # the scenario's ids: RUN-transactions-group and RUN-transactions-txn (tests/java Clients.java)
    group, _, group_broker, txn_broker = _apart(cluster, "jt{}-transactions-group", "jt{}-transactions-txn")
    prefix = group.removesuffix("-transactions-group")
    assert group_broker != txn_broker
    done = jvm.run_java(java_classpath, "tidelog.oracle.Clients", cluster.bootstrap(), prefix, "transactions",
                        timeout=300)
    lines = jvm.json_lines(done.stdout)
    assert lines and "result" in lines[0], f"exit {done.returncode}: {lines}\n{done.stderr[-3000:]}"
    result = lines[0]["result"]
    assert result["group_offsets"] == {"0": [7, "seven"], "1": [3, ""]}, "the offsets sent in the transaction"
    values = sorted(v for _, _, v in result["read_committed"])
    assert values == sorted([f"c-{i}" for i in range(60)] + [f"o-{i}" for i in range(15)] + ["b-0"])
    # (the fenced producer's commit, ProducerFencedException on one broker, is left to the fencing tests:
    # in this cluster the Java client reports a plain KafkaException: a matter for the fencing findings)
