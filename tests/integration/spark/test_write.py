"""Writes: batch and streaming, with the Kafka sink's columns, read back with a plain confluent-kafka consumer."""

from __future__ import annotations

import datetime as dt

import pytest

pytest.importorskip("pyspark", reason="the spark extra is not installed")
pytest.importorskip("pyarrow", reason="the spark extra is not installed")

from pyspark.sql import Row
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from .conftest import SPARK_BROKER_OVERRIDES, consume_all, create_topic, produce, source

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]

BROKER_OVERRIDES = SPARK_BROKER_OVERRIDES  # the module's broker (tests/fixtures.py)

HEADERS = ArrayType(StructType([StructField("key", StringType()), StructField("value", BinaryType())]))


def sink(df, bootstrap: str, **options: str):
    writer = df.write.format("tidelog").option("kafka.bootstrap.servers", bootstrap).mode("append")
    for key, value in options.items():
        writer = writer.option(key, value)
    return writer


def test_batch_write_every_column(spark, broker, topic_name) -> None:
    a, b = topic_name("wa"), topic_name("wb")
    create_topic(broker.bootstrap, a, 3)
    create_topic(broker.bootstrap, b, 1)
    when = dt.datetime(2024, 5, 1, 12, 0, 0, 123000, tzinfo=dt.UTC)
    schema = StructType([StructField("key", StringType()), StructField("value", BinaryType()),
                         StructField("topic", StringType()), StructField("partition", IntegerType()),
                         StructField("headers", HEADERS), StructField("timestamp", TimestampType()),
                         StructField("ignored", StringType())])
    rows = [Row(f"k{i}", f"v{i}".encode(), a if i % 2 else b, 2 if i % 2 else None,
                [Row("n", str(i).encode())] if i % 3 == 0 else None, when, "x") for i in range(30)]
    sink(spark.createDataFrame(rows, schema).repartition(3), broker.bootstrap).save()
    got_a = consume_all(broker.bootstrap, a, 3)
    got_b = consume_all(broker.bootstrap, b, 1)
    assert sorted(m.value() for m in got_a) == sorted(f"v{i}".encode() for i in range(1, 30, 2))
    assert {m.partition() for m in got_a} == {2}
    assert sorted(m.key() for m in got_b) == sorted(f"k{i}".encode() for i in range(0, 30, 2))
    for m in got_a + got_b:
        i = int(m.value()[1:])
        assert m.headers() == ([("n", str(i).encode())] if i % 3 == 0 else None)
        assert m.timestamp()[1] == int(when.timestamp() * 1000)


def test_topic_option_overrides_the_column_and_string_values_are_utf8(spark, broker, topic_name) -> None:
    topic = topic_name("wopt")
    create_topic(broker.bootstrap, topic)
    df = spark.createDataFrame([("elsewhere", "é1"), (None, "é2")], "topic string, value string")
    sink(df, broker.bootstrap, topic=topic).save()
    got = consume_all(broker.bootstrap, topic, 1)
    assert sorted(m.value().decode() for m in got) == ["é1", "é2"]
    assert all(m.key() is None for m in got)


def test_keyed_records_keep_their_partition(spark, broker, topic_name) -> None:
    topic = topic_name("wkey")
    create_topic(broker.bootstrap, topic, 4)
    df = spark.createDataFrame([(f"user-{i % 5}", str(i)) for i in range(100)], "key string, value string")
    sink(df.repartition(4), broker.bootstrap, topic=topic).save()
    by_key: dict[bytes, set[int]] = {}
    for m in consume_all(broker.bootstrap, topic, 4):
        by_key.setdefault(m.key(), set()).add(m.partition())
    assert len(by_key) == 5 and all(len(parts) == 1 for parts in by_key.values())


def test_write_errors(spark, broker, topic_name) -> None:
    topic = topic_name("werr")
    create_topic(broker.bootstrap, topic)
    with pytest.raises(Exception, match="null topic present in the data. Use the topic option"):
        sink(spark.createDataFrame([(None, "v")], "topic string, value string"), broker.bootstrap).save()
    with pytest.raises(Exception, match="Required attribute 'value' not found"):
        sink(spark.createDataFrame([("k",)], "key string"), broker.bootstrap, topic=topic).save()
    with pytest.raises(Exception, match="Save mode Overwrite not allowed for Kafka"):
        (spark.createDataFrame([("v",)], "value string").write.format("tidelog")
         .option("kafka.bootstrap.servers", broker.bootstrap).option("topic", topic).mode("overwrite").save())
    # A record the broker refuses (partition 7 of a one-partition topic) fails the task and the job.
    df = spark.createDataFrame([("v", 7)], "value string, partition int")
    with pytest.raises(Exception, match="were not written"):
        sink(df, broker.bootstrap, topic=topic).save()
    assert consume_all(broker.bootstrap, topic, 1) == []


def test_a_refused_record_fails_the_same_way_whether_or_not_the_producer_knows_the_topic(
        broker, topic_name) -> None:
    """librdkafka refuses a record for a partition the topic lacks either at once, in ``produce()`` (when its
    producer already has the topic's metadata), or later, in a delivery report; the task fails with the same
    message either way. The first batch makes the producer fetch the metadata; the second, sent once the
    metadata is in, is refused in ``produce()``."""
    import time

    import pyarrow as pa
    from pyspark.sql.types import IntegerType, StructField, StructType

    from tidelog.spark.options import parse_sink_options
    from tidelog.spark.writer import DeliveryError, write_batches

    topic = topic_name("wsync")
    create_topic(broker.bootstrap, topic)
    schema = StructType([StructField("value", BinaryType()), StructField("partition", IntegerType())])
    arrow = pa.schema([("value", pa.binary()), ("partition", pa.int32())])

    def batches():
        yield pa.record_batch([pa.array([b"ok"]), pa.array([0], pa.int32())], schema=arrow)
        time.sleep(1.0)  # the producer has the topic's metadata by now
        yield pa.record_batch([pa.array([b"bad"]), pa.array([7], pa.int32())], schema=arrow)

    options = parse_sink_options({"kafka.bootstrap.servers": broker.bootstrap, "topic": topic})
    with pytest.raises(DeliveryError, match=r"1 record\(s\) were not written: Local: Unknown partition "
                                            rf"\(topic '{topic}', partition 7\)"):
        write_batches(options, schema, batches())


def test_stream_write_reads_back_exactly(spark, broker, topic_name, tmp_path) -> None:
    src, dst = topic_name("ssrc"), topic_name("sdst")
    create_topic(broker.bootstrap, src, 2)
    create_topic(broker.bootstrap, dst, 2)
    for p in range(2):
        produce(broker.bootstrap, src, [f"{p}-{i}".encode() for i in range(150)], partition=p, key=b"k%d" % p)

    def run() -> None:
        df = source(spark, broker.bootstrap, stream=True, subscribe=src, startingOffsets="earliest",
                    maxOffsetsPerTrigger=100)
        q = (df.selectExpr("key", "upper(cast(value as string)) as value", "partition").writeStream
             .format("tidelog").option("kafka.bootstrap.servers", broker.bootstrap).option("topic", dst)
             .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start())
        assert q.awaitTermination(120)
        assert q.exception() is None

    run()
    produce(broker.bootstrap, src, [b"late"], partition=0, key=b"k0")
    run()  # restarted from its checkpoint: only the new record is written
    got = consume_all(broker.bootstrap, dst, 2)
    assert sorted(m.value().decode() for m in got) == sorted(
        [f"{p}-{i}" for p in range(2) for i in range(150)] + ["LATE"])
    assert all(m.partition() == int(m.key()[1:]) for m in got)
