"""Message size limits against a real ``tidelog serve`` started with ``message.max.bytes=200000``: a
record just below the limit is accepted and one above it refused (confluent-kafka and kafka-python),
the limit bounds the batch exactly as Kafka's does, and fetch limits far below a record still return it.
"""

from __future__ import annotations

import time

import kafka
import kafka.errors
import pytest
from confluent_kafka import KafkaError, TopicPartition

from tests.integration.kafka_io import (
    ck_consumer,
    consume,
    ensure_topic,
    kp_consume,
    produce_all,
    produce_batch,
    producer,
)
from tidelog.errors import ErrorCode
from tidelog.records import build_batch
from tidelog.testing import BrokerProcess
from tidelog.testing.client import WireClient

# One worker runs the whole module, on one broker (see conftest.py).
pytestmark = pytest.mark.xdist_group("message_size")

MAX_MESSAGE_BYTES = 200_000
NOW_MS = int(time.time() * 1000)
BROKER_OVERRIDES = {"message.max.bytes": str(MAX_MESSAGE_BYTES)}


def end_offset(b: BrokerProcess, topic: str, partition: int = 0) -> int:
    c = ck_consumer(b)
    try:
        return c.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)[1]
    finally:
        c.close()


def test_message_near_the_limit_is_accepted_and_above_it_rejected(broker: BrokerProcess) -> None:
    topic = "sizes"
    p = producer(broker, **{"linger.ms": 0})
    [(err, msg)] = produce_all(p, topic, [{"value": b"n" * (MAX_MESSAGE_BYTES - 500)}])
    assert err is None and msg.offset() == 0
    [(err, _)] = produce_all(p, topic, [{"value": b"o" * (MAX_MESSAGE_BYTES + 1000)}])
    assert err is not None and err.code() == KafkaError.MSG_SIZE_TOO_LARGE
    [(err, msg)] = produce_all(p, topic, [{"value": b"after"}])
    assert err is None and msg.offset() == 1

    # kafka-python: the broker's MESSAGE_TOO_LARGE surfaces as MessageSizeTooLargeError. (Its
    # idempotent producer then treats the error as fatal, so that producer is not reused.)
    kp = kafka.KafkaProducer(bootstrap_servers=broker.bootstrap)
    with pytest.raises(kafka.errors.MessageSizeTooLargeError):
        kp.send(topic, b"k" * (MAX_MESSAGE_BYTES + 1000), partition=0).get(10)
    kp.close()
    kp = kafka.KafkaProducer(bootstrap_servers=broker.bootstrap)
    assert kp.send(topic, b"p" * (MAX_MESSAGE_BYTES - 500), partition=0).get(10).offset == 2
    kp.close()
    assert end_offset(broker, topic) == 3
    # Fetch limits far below the record size still return it (KIP-74: at least one batch).
    near = consume(broker, [TopicPartition(topic, 0, 0)], 3,
                   **{"fetch.max.bytes": 4096, "max.partition.fetch.bytes": 4096, "message.max.bytes": 4096})
    assert [len(m.value()) for m in near] == [MAX_MESSAGE_BYTES - 500, 5, MAX_MESSAGE_BYTES - 500]
    small = kp_consume(broker, topic, [0], 3, max_partition_fetch_bytes=1024, fetch_max_bytes=1024)
    assert [len(r.value) for r in small] == [MAX_MESSAGE_BYTES - 500, 5, MAX_MESSAGE_BYTES - 500]


def _batch_of_size(size: int) -> bytes:
    value_len = size
    while True:
        batch = build_batch([(NOW_MS, None, b"z" * value_len)])
        if len(batch) == size:
            return batch
        value_len -= len(batch) - size


def test_batch_size_limit_is_exact(broker: BrokerProcess) -> None:
    """message.max.bytes bounds the batch including its 12-byte log overhead, as in Kafka."""
    topic = "exact-size"
    ensure_topic(broker, topic)
    results = {}
    with WireClient.connect(broker.bootstrap) as client:
        for size in (MAX_MESSAGE_BYTES + 1, MAX_MESSAGE_BYTES):
            batch = _batch_of_size(size)
            results[size] = produce_batch(client, topic, batch, acks=1)
    assert results[MAX_MESSAGE_BYTES + 1].error_code == ErrorCode.MESSAGE_TOO_LARGE
    assert results[MAX_MESSAGE_BYTES].error_code == 0 and results[MAX_MESSAGE_BYTES].base_offset == 0
    assert end_offset(broker, topic) == 1
