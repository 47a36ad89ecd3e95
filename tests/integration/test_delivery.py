"""What producers are told and where their records land, against a real ``tidelog serve``: acks 0, 1
and all; idempotent producers (confluent-kafka with five requests in flight, kafka-python by default);
keyed records over 32 partitions, every one consumed once and in order per key.
"""

from __future__ import annotations

from collections import Counter, defaultdict

import kafka
import pytest
from confluent_kafka import TopicPartition

from tests.integration.kafka_io import consume, create_topic, kp_consume, produce_all, producer, raw_batches
from tidelog.testing import BrokerProcess

# One worker runs the whole module, on one broker (see conftest.py).
pytestmark = pytest.mark.xdist_group("delivery")


@pytest.mark.parametrize("acks", ["0", "1", "all"])
def test_acks(broker: BrokerProcess, acks: str) -> None:
    topic = f"acks-{acks}"
    records = [{"value": b"%s-%d" % (acks.encode(), i)} for i in range(100)]
    reports = produce_all(producer(broker, acks=acks), topic, records)
    assert all(err is None for err, _ in reports)
    if acks != "0":
        assert sorted(msg.offset() for _, msg in reports) == list(range(100))
    consumed = consume(broker, [TopicPartition(topic, 0, 0)], 100)
    assert [m.value() for m in consumed] == [r["value"] for r in records]


def test_confluent_kafka_idempotent_producer(broker: BrokerProcess) -> None:
    topic = "idempotent-ck"
    create_topic(broker, topic, 8)
    p = producer(broker, **{"enable.idempotence": True, "max.in.flight.requests.per.connection": 5,
                                 "batch.num.messages": 50})
    records = [{"key": b"k%d" % (i % 40), "value": b"%d" % i} for i in range(4000)]
    reports = produce_all(p, topic, records)
    assert all(err is None for err, _ in reports)
    by_partition = defaultdict(list)
    for _, msg in reports:
        by_partition[msg.partition()].append(msg)
    consumed = consume(broker, [TopicPartition(topic, p, 0) for p in range(8)], len(records))
    assert Counter(m.value() for m in consumed) == Counter(r["value"] for r in records)
    for part, msgs in by_partition.items():
        # per key order is production order; offsets are dense
        assert sorted(m.offset() for m in msgs) == list(range(len(msgs)))
        batches = raw_batches(broker, topic, part)
        assert {b.producer_id for b in batches} != {-1}
        assert len({b.producer_id for b in batches}) == 1
        sequences = [b.base_sequence for b in batches]
        assert sequences == sorted(sequences) and sequences[0] == 0


def test_kafka_python_idempotent_by_default(broker: BrokerProcess) -> None:
    topic = "idempotent-kp"
    p = kafka.KafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=5)
    assert p.config["enable_idempotence"]
    futures = [p.send(topic, b"%d" % i, partition=0) for i in range(500)]
    p.flush(20)
    assert [f.get(10).offset for f in futures] == list(range(500))
    p.close()
    batches = raw_batches(broker, topic)
    assert all(b.producer_id >= 0 and b.producer_epoch >= 0 for b in batches)
    assert [c.value for c in kp_consume(broker, topic, [0], 500)] == [b"%d" % i for i in range(500)]


# ---------------------------------------------------------------------------- keyed, many partitions


def test_32_partitions_keyed_everything_consumed_once(broker: BrokerProcess) -> None:
    topic = "wide"
    create_topic(broker, topic, 32)
    records = [{"key": b"user-%d" % (i % 500), "value": b"%d" % i} for i in range(6400)]
    reports = produce_all(producer(broker), topic, records)
    partition_of_key: dict[bytes, int] = {}
    for _, msg in reports:
        assert partition_of_key.setdefault(msg.key(), msg.partition()) == msg.partition()
    assert len(set(partition_of_key.values())) == 32  # 500 keys spread over every partition
    consumed = consume(broker, [TopicPartition(topic, p, 0) for p in range(32)], len(records))
    assert sorted(int(m.value()) for m in consumed) == list(range(len(records)))
    for m in consumed:
        assert partition_of_key[m.key()] == m.partition()
    # per partition, order of production is kept
    last: dict[bytes, int] = {}
    for m in consumed:
        assert int(m.value()) > last.get(m.key(), -1)
        last[m.key()] = int(m.value())
    kp = kp_consume(broker, topic, list(range(32)), len(records), timeout=30)
    assert sorted(int(c.value) for c in kp) == list(range(len(records)))
