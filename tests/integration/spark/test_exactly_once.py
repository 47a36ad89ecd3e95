"""The exactly-once sink's transactional write path against a real broker, without Spark: what one write task
does (tidelog.spark.exactly_once.write_exactly_once), called as Spark would call it, attempt after attempt."""

from __future__ import annotations

import threading
import time
import uuid

import pytest

pytest.importorskip("pyspark", reason="the spark extra is not installed")
pytest.importorskip("pyarrow", reason="the spark extra is not installed")

import pyarrow as pa
from confluent_kafka import Consumer, KafkaError, TopicPartition
from pyspark.sql.types import BinaryType, IntegerType, StringType, StructField, StructType

from tidelog.spark.exactly_once import (
    FencedError,
    WriteTask,
    committed_markers,
    next_batch,
    write_exactly_once,
)
from tidelog.spark.options import parse_sink_options
from tidelog.spark.writer import DeliveryError

from .conftest import SPARK_BROKER_OVERRIDES, create_topic

pytestmark = [pytest.mark.spark]

BROKER_OVERRIDES = SPARK_BROKER_OVERRIDES  # the module's broker (tests/fixtures.py)

SCHEMA = StructType([StructField("value", BinaryType()), StructField("partition", IntegerType())])
ARROW = pa.schema([("value", pa.binary()), ("partition", pa.int32())])


def batch(values: list[str], partition: int = 0) -> pa.RecordBatch:
    return pa.record_batch([pa.array([v.encode() for v in values]), pa.array([partition] * len(values), pa.int32())],
                           schema=ARROW)


def read(bootstrap: str, topic: str, isolation: str, partitions: int = 1, timeout_s: float = 30.0) -> list[str]:
    """Every value of ``topic`` up to the partitions' ends, read with ``isolation.level=isolation``."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{uuid.uuid4()}", "enable.auto.commit": False,
                  "enable.partition.eof": True, "auto.offset.reset": "earliest", "isolation.level": isolation})
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    out, done = [], set()
    deadline = time.monotonic() + timeout_s
    while len(done) < partitions and time.monotonic() < deadline:
        for m in c.consume(1000, 0.5):
            if m.error() is None:
                out.append(m.value().decode())
            elif m.error().code() == KafkaError._PARTITION_EOF:
                done.add(m.partition())
    c.close()
    assert len(done) == partitions, "timed out reading back"
    return out


def high_watermark(bootstrap: str, topic: str) -> int:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"hw-{uuid.uuid4()}"})
    try:
        return c.get_watermark_offsets(TopicPartition(topic, 0), 10)[1]
    finally:
        c.close()


@pytest.fixture
def sink(broker, topic_name):
    topic = topic_name("eo")
    create_topic(broker.bootstrap, topic)
    return topic, parse_sink_options({"kafka.bootstrap.servers": broker.bootstrap, "topic": topic,
                                      "exactlyOnce": "true"})


def test_a_replayed_batch_is_skipped_and_each_record_is_committed_once(broker, sink) -> None:
    topic, options = sink
    txn = f"eo-test-{uuid.uuid4().hex[:8]}-0"
    first = write_exactly_once(options, SCHEMA, iter([batch(["a", "b"]), batch(["c"])]), WriteTask(txn, 0, 0))
    assert (first.records, first.skipped) == (3, False)
    again = write_exactly_once(options, SCHEMA, iter([batch(["a", "b"]), batch(["c"])]), WriteTask(txn, 0, 0))
    assert (again.records, again.skipped) == (0, True)
    second = write_exactly_once(options, SCHEMA, iter([batch(["d"])]), WriteTask(txn, 1, 0))
    assert (second.records, second.skipped) == (1, False)
    old = write_exactly_once(options, SCHEMA, iter([batch(["a", "b", "c"])]), WriteTask(txn, 0, 0))
    assert old.skipped
    assert sorted(read(broker.bootstrap, topic, "read_committed")) == ["a", "b", "c", "d"]
    markers = committed_markers(options, txn)
    assert next_batch(markers) == 2
    assert [(m.topic, m.partition, m.offset, m.metadata) for m in markers] == [
        (topic, 0, 2, '{"batch":1,"partition":0}')]


def test_a_failed_task_leaves_nothing_visible_and_its_retry_writes(broker, sink) -> None:
    topic, options = sink
    txn = f"eo-test-{uuid.uuid4().hex[:8]}-3"
    with pytest.raises(DeliveryError, match="were not written"):  # partition 7 of a one-partition topic
        write_exactly_once(options, SCHEMA, iter([batch(["x", "y"]), batch(["bad"], partition=7)]),
                           WriteTask(txn, 5, 3))
    assert next_batch(committed_markers(options, txn)) == 0
    retry = write_exactly_once(options, SCHEMA, iter([batch(["x", "y"])]), WriteTask(txn, 5, 3))
    assert (retry.records, retry.skipped) == (2, False)
    assert sorted(read(broker.bootstrap, topic, "read_committed")) == ["x", "y"]
    assert next_batch(committed_markers(options, txn)) == 6


def test_an_empty_task_opens_no_transaction(broker, sink) -> None:
    topic, options = sink
    txn = f"eo-test-{uuid.uuid4().hex[:8]}-0"
    empty = write_exactly_once(options, SCHEMA, iter([batch([])]), WriteTask(txn, 0, 0))
    assert (empty.records, empty.skipped) == (0, False)
    assert committed_markers(options, txn) == []
    assert high_watermark(broker.bootstrap, topic) == 0


def test_a_zombie_attempt_is_fenced_by_the_next_one(broker, sink) -> None:
    """Attempt 1 has records in an open transaction when attempt 2 of the same task starts: attempt 2 fences it
    (its transaction is aborted) and commits; attempt 1 then fails, and read_committed sees attempt 2 only."""
    topic, options = sink
    txn = f"eo-test-{uuid.uuid4().hex[:8]}-1"
    release = threading.Event()
    outcome: list[BaseException | object] = []

    def zombie_input():
        yield batch([f"zombie-{i}" for i in range(5)])
        deadline = time.monotonic() + 20
        while high_watermark(broker.bootstrap, topic) < 5 and time.monotonic() < deadline:
            time.sleep(0.05)  # its records are in the log, in its open transaction
        started.set()
        release.wait(60)
        yield batch(["zombie-late"])

    def run_zombie() -> None:
        try:
            outcome.append(write_exactly_once(options, SCHEMA, zombie_input(), WriteTask(txn, 4, 1)))
        except BaseException as e:
            outcome.append(e)

    started = threading.Event()
    thread = threading.Thread(target=run_zombie)
    thread.start()
    assert started.wait(30)
    winner = write_exactly_once(options, SCHEMA, iter([batch([f"new-{i}" for i in range(3)])]), WriteTask(txn, 4, 1))
    assert (winner.records, winner.skipped) == (3, False)
    release.set()
    thread.join(90)
    assert len(outcome) == 1 and isinstance(outcome[0], (FencedError, DeliveryError)), outcome
    assert "fenced" in str(outcome[0]).lower()
    assert sorted(read(broker.bootstrap, topic, "read_committed")) == ["new-0", "new-1", "new-2"]
    uncommitted = read(broker.bootstrap, topic, "read_uncommitted")
    assert sorted(v for v in uncommitted if v.startswith("zombie-")) == [f"zombie-{i}" for i in range(5)]
    assert next_batch(committed_markers(options, txn)) == 5


def test_without_the_topic_option_the_marker_goes_to_a_topic_of_the_records(broker, topic_name) -> None:
    a, b = topic_name("eoa"), topic_name("eob")
    create_topic(broker.bootstrap, a)
    create_topic(broker.bootstrap, b)
    options = parse_sink_options({"kafka.bootstrap.servers": broker.bootstrap, "exactlyOnce": "true"})
    schema = StructType([StructField("topic", StringType()), StructField("value", BinaryType())])
    arrow = pa.schema([("topic", pa.string()), ("value", pa.binary())])
    rows = pa.record_batch([pa.array([None, a, b, a]), pa.array([b"0", b"1", b"2", b"3"])], schema=arrow)
    txn = f"eo-test-{uuid.uuid4().hex[:8]}-0"
    with pytest.raises(ValueError, match="null topic present in the data"):
        write_exactly_once(options, schema, iter([rows]), WriteTask(txn, 0, 0))
    written = write_exactly_once(options, schema, iter([rows.slice(1)]), WriteTask(txn, 0, 0))
    assert written.records == 3
    assert [(m.topic, m.offset) for m in committed_markers(options, txn)] == [(a, 1)]
    assert sorted(read(broker.bootstrap, a, "read_committed")) == ["1", "3"]
    assert read(broker.bootstrap, b, "read_committed") == ["2"]
