"""Batch reads: the fixed schema, offsets and timestamps as bounds, partition selection, splitting, Arrow."""

from __future__ import annotations

import json
import pickle
from datetime import UTC, datetime

import pytest

pytest.importorskip("pyspark", reason="the spark extra is not installed")
pytest.importorskip("pyarrow", reason="the spark extra is not installed")

import pyarrow as pa
from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient
from pyspark.sql.pandas.types import to_arrow_schema

import tidelog.spark
from tidelog.spark.offsets import OffsetRange, TopicPartition
from tidelog.spark.options import parse_source_options
from tidelog.spark.reader import BATCH_ROWS, TidelogBatchReader, _RangeFetch, range_partitions, read_range
from tidelog.spark.schema import source_schema

from .conftest import SPARK_BROKER_OVERRIDES, create_topic, produce, source

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]

BROKER_OVERRIDES = SPARK_BROKER_OVERRIDES  # the module's broker (tests/fixtures.py)

T0 = 1_700_000_000_000  # a record timestamp, epoch ms


@pytest.fixture(scope="module")
def three(broker) -> str:
    """A 3-partition topic: partition p holds values p-0 .. p-19 with timestamps T0 + 1000*i."""
    topic = "three"
    create_topic(broker.bootstrap, topic, 3)
    for p in range(3):
        for i in range(20):
            headers = [("n", str(i).encode()), ("empty", None)] if i % 2 else None
            produce(broker.bootstrap, topic, [f"{p}-{i}".encode()], partition=p, key=None if i % 5 else b"k",
                    timestamp_ms=T0 + 1000 * i, headers=headers)
    return topic


def values(df) -> list[str]:
    return sorted(r.value.decode() for r in df.select("value").collect())


def test_batch_read_has_the_kafka_schema_and_every_field(spark, broker, three) -> None:
    # No register() call: format("tidelog") comes from the pyspark_tidelog module.
    df = source(spark, broker.bootstrap, subscribe=three, includeHeaders=True)
    assert df.schema == source_schema(True)
    assert source(spark, broker.bootstrap, subscribe=three).schema == source_schema(False)
    rows = {(r.partition, r.offset): r for r in df.collect()}
    assert len(rows) == 60
    first, second = rows[(1, 0)], rows[(1, 1)]
    assert (first.key, first.value, first.topic, first.timestampType) == (b"k", b"1-0", three, 0)
    assert first.timestamp.replace(tzinfo=UTC) == datetime.fromtimestamp(T0 / 1000, UTC)
    assert first.headers is None  # no headers: null, not an empty array
    assert second.key is None
    assert [(h.key, h.value) for h in second.headers] == [("n", b"1"), ("empty", None)]


def test_batch_read_between_offsets(spark, broker, three) -> None:
    df = source(spark, broker.bootstrap, subscribe=three,
                startingOffsets=json.dumps({three: {"0": 5, "1": -2, "2": 18}}),
                endingOffsets=json.dumps({three: {"0": 7, "1": 2, "2": -1}}))
    assert values(df) == ["0-5", "0-6", "1-0", "1-1", "2-18", "2-19"]


def test_batch_read_between_timestamps(spark, broker, three) -> None:
    df = source(spark, broker.bootstrap, subscribe=three, startingTimestamp=T0 + 17_500,
                endingTimestamp=T0 + 19_000)
    assert values(df) == ["0-18", "1-18", "2-18"]
    df = source(spark, broker.bootstrap, subscribe=three,
                startingOffsetsByTimestamp=json.dumps({three: {"0": T0, "1": T0 + 19_000, "2": T0 + 99_000}}),
                endingOffsetsByTimestamp=json.dumps({three: {"0": T0 + 1, "1": T0 + 99_000, "2": T0 + 99_000}}),
                startingOffsetsByTimestampStrategy="latest")
    # partition 2 has no record at or after its start: with the "latest" strategy it reads nothing
    assert values(df) == ["0-0", "1-19"]


def test_assign_and_subscribe_pattern_choose_partitions(spark, broker, three) -> None:
    assign = source(spark, broker.bootstrap, assign=json.dumps({three: [2, 0]}))
    assert sorted({r.partition for r in assign.select("partition").collect()}) == [0, 2]
    create_topic(broker.bootstrap, "threefold", 1)
    produce(broker.bootstrap, "threefold", [b"other"])
    pattern = source(spark, broker.bootstrap, subscribePattern="thr.e")
    assert pattern.count() == 60  # "threefold" does not match: the whole name must match
    assert source(spark, broker.bootstrap, subscribePattern="three.*").count() == 61


def test_min_partitions_and_max_records_per_partition_split_the_read(spark, broker, three) -> None:
    assert source(spark, broker.bootstrap, subscribe=three).rdd.getNumPartitions() == 3
    split = source(spark, broker.bootstrap, subscribe=three, minPartitions=6)
    assert split.rdd.getNumPartitions() == 6
    assert values(split) == values(source(spark, broker.bootstrap, subscribe=three))
    capped = source(spark, broker.bootstrap, subscribe=three, maxRecordsPerPartition=7)
    assert capped.rdd.getNumPartitions() == 9  # 20 records -> 3 parts of at most 7, per partition
    assert capped.count() == 60


def test_register_explicitly(spark, broker, three) -> None:
    import pyspark_tidelog

    assert pyspark_tidelog.DefaultSource is tidelog.spark.TidelogDataSource
    assert sorted(tidelog.spark.__all__) == ["TidelogDataSource", "WorkerPythonError", "register"]
    assert all(hasattr(tidelog.spark, name) for name in tidelog.spark.__all__)
    tidelog.spark.register(spark)
    assert source(spark, broker.bootstrap, subscribe=three).count() == 60


def test_data_loss_in_a_batch_read(spark, broker, topic_name) -> None:
    topic = topic_name("gone")
    create_topic(broker.bootstrap, topic)
    produce(broker.bootstrap, topic, [str(i).encode() for i in range(10)])
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for f in admin.delete_records([KafkaTopicPartition(topic, 0, 6)]).values():
        f.result(30)
    start = json.dumps({topic: {"0": 2}})
    with pytest.raises(Exception, match="Cannot fetch offset 2 of .*failOnDataLoss"):
        source(spark, broker.bootstrap, subscribe=topic, startingOffsets=start).collect()
    df = source(spark, broker.bootstrap, subscribe=topic, startingOffsets=start, failOnDataLoss=False)
    assert [r.offset for r in df.select("offset").collect()] == [6, 7, 8, 9]


def test_read_yields_arrow_batches_matching_sparks_arrow_schema(broker, topic_name) -> None:
    topic = topic_name("arrow")
    create_topic(broker.bootstrap, topic)
    produce(broker.bootstrap, topic, [b"x" * 100] * (BATCH_ROWS + 500), headers=[("h", b"v")])
    options = parse_source_options({"kafka.bootstrap.servers": broker.bootstrap, "subscribe": topic,
                                    "includeHeaders": "true", "endingOffsets": json.dumps({topic: {"0": 10_400}})},
                                   streaming=False)
    partitions = TidelogBatchReader(options, source_schema(True)).partitions()
    assert isinstance(partitions, list) and len(partitions) == 1
    part = pickle.loads(pickle.dumps(partitions[0]))
    assert (part.topic, part.partition, part.start, part.end) == (topic, 0, 0, 10_400)
    batches = list(read_range(part))
    assert all(isinstance(b, pa.RecordBatch) and b.num_rows <= BATCH_ROWS for b in batches)
    expected = to_arrow_schema(source_schema(True), timezone="UTC")
    assert all(b.schema.equals(expected) for b in batches)
    table = pa.Table.from_batches(batches)
    assert table.column("offset").to_pylist() == list(range(10_400))
    assert table.column("headers")[0].as_py() == [{"key": "h", "value": b"v"}]


def test_arrow_conversion_keeps_only_the_range_and_handles_offset_gaps(broker, topic_name) -> None:
    """Real consumed records: a batch running past the range's end, one before its position, and one with a
    gap in its offsets (as compaction leaves) take the careful path; the columns stay exact."""
    topic = topic_name("conv")
    create_topic(broker.bootstrap, topic)
    produce(broker.bootstrap, topic, [f"v{i}".encode() for i in range(10)])
    options = parse_source_options({"kafka.bootstrap.servers": broker.bootstrap, "subscribe": topic},
                                   streaming=False)
    part = range_partitions([OffsetRange(TopicPartition(topic, 0), 3, 7)], options, role="test")[0]
    consumer = Consumer({**part.consumer_config, "enable.partition.eof": False})
    consumer.assign([KafkaTopicPartition(topic, 0, 0)])
    messages: list = []
    while len(messages) < 10:
        messages += [m for m in consumer.consume(10, 5) if m.error() is None]
    try:
        fetch = _RangeFetch(part, consumer)

        def converted(records, position):
            fetch.position = position
            batch = fetch._to_arrow(records)
            return batch.column("offset").to_pylist(), [v.decode() for v in batch.column("value").to_pylist()]

        assert converted(messages, 3) == ([3, 4, 5, 6], ["v3", "v4", "v5", "v6"])  # past the end, before position
        assert fetch.position == 7
        assert converted(messages[3:5], 3) == ([3, 4], ["v3", "v4"])  # contiguous: the fast path
        assert fetch.position == 5
        gappy = [messages[i] for i in (3, 5, 6)]
        assert converted(gappy, 3) == ([3, 5, 6], ["v3", "v5", "v6"])
        assert fetch.position == 7
        assert fetch._to_arrow(messages[7:]) is None  # nothing left in the range
    finally:
        consumer.close()
