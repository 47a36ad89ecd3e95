"""Record timestamps against a real ``tidelog serve``: LogAppendTime from a topic config and from the
broker default (confluent-kafka and kafka-python see the broker's time), old CreateTime timestamps that
must not roll a segment per batch, and ListOffsets by timestamp (``offsets_for_times``).
"""

from __future__ import annotations

import time
from pathlib import Path

import kafka
import pytest
from confluent_kafka import TIMESTAMP_LOG_APPEND_TIME, TopicPartition

from tests.integration.kafka_io import ck_consumer, consume, create_topic, kp_consume, produce_all, producer
from tidelog.testing import BrokerProcess

# One worker runs the whole module, on one broker (see conftest.py).
pytestmark = pytest.mark.xdist_group("timestamps")

NOW_MS = int(time.time() * 1000)


def _check_log_append_time(b: BrokerProcess, topic: str) -> None:
    before = int(time.time() * 1000)
    reports = produce_all(producer(b), topic, [{"value": b"v%d" % i, "timestamp": 1_000_000 + i} for i in range(20)])
    after = int(time.time() * 1000)
    for err, msg in reports:
        assert err is None
        # librdkafka takes the LogAppendTime from the ProduceResponse
        kind, ts = msg.timestamp()
        assert kind == TIMESTAMP_LOG_APPEND_TIME and before <= ts <= after
    consumed = consume(b, [TopicPartition(topic, 0, 0)], 20)
    for m in consumed:
        kind, ts = m.timestamp()
        assert kind == TIMESTAMP_LOG_APPEND_TIME and before <= ts <= after
    kp = kafka.KafkaProducer(bootstrap_servers=b.bootstrap)
    meta = kp.send(topic, b"kp", partition=0, timestamp_ms=5).get(10)
    kp.close()
    assert before <= meta.timestamp <= int(time.time() * 1000)
    [last] = [c for c in kp_consume(b, topic, [0], 21) if c.value == b"kp"]
    assert last.timestamp_type == 1 and last.timestamp == meta.timestamp


def test_log_append_time_topic_config(broker: BrokerProcess) -> None:
    create_topic(broker, "lat-topic", config={"message.timestamp.type": "LogAppendTime"})
    _check_log_append_time(broker, "lat-topic")


def test_log_append_time_broker_default(tmp_path: Path) -> None:
    with BrokerProcess(tmp_path, overrides={"log.message.timestamp.type": "LogAppendTime"}) as b:
        _check_log_append_time(b, "lat")


def test_old_create_time_timestamps_do_not_roll_a_segment_per_batch(broker: BrokerProcess) -> None:
    topic = "old-timestamps"
    month_ago = NOW_MS - 30 * 24 * 3600 * 1000
    p = producer(broker, **{"linger.ms": 0})
    for i in range(10):
        [(err, _)] = produce_all(p, topic, [{"value": b"%d" % i, "timestamp": month_ago + i}])
        assert err is None
    segments = list((broker.data_dir / f"{topic}-0").glob("*.log"))
    assert len(segments) == 1, f"{len(segments)} segments for 10 small batches"


# ------------------------------------------------------------------------------- offsets for times


def test_offsets_for_times(broker: BrokerProcess) -> None:
    topic = "by-time"
    base = NOW_MS - 600_000
    produce_all(producer(broker), topic, [{"value": b"%d" % i, "timestamp": base + 1000 * i} for i in range(50)])
    c = ck_consumer(broker)
    try:
        asks = [TopicPartition(topic, 0, ts) for ts in (base - 5, base, base + 5500, base + 49_000, base + 49_001)]
        found = [c.offsets_for_times([tp], timeout=10)[0].offset for tp in asks]
    finally:
        c.close()
    assert found == [0, 0, 6, 49, -1]
    kc = kafka.KafkaConsumer(bootstrap_servers=broker.bootstrap)
    try:
        tp = kafka.TopicPartition(topic, 0)
        answer = kc.offsets_for_times({tp: base + 10_500})[tp]
        assert (answer.offset, answer.timestamp) == (11, base + 11_000)
        assert kc.offsets_for_times({tp: base + 10**9})[tp] is None
        assert kc.beginning_offsets([tp])[tp] == 0 and kc.end_offsets([tp])[tp] == 50
    finally:
        kc.close()
