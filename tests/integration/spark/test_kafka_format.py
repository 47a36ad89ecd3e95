"""Spark's own JVM Kafka connector, ``format("kafka")``, against a Tidelog broker.

Many users keep ``format("kafka")``: these tests run Spark's connector (the package for the installed
PySpark's Spark and Scala versions, ``tidelog.spark.kafka_connector``) against a real broker, in batch and
streaming, reading and writing, and check every record against a plain confluent-kafka consumer. The
batch read is also compared row for row with ``format("tidelog")``: the two connectors must agree.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("pyspark", reason="the spark extra is not installed")
pytest.importorskip("pyarrow", reason="the spark extra is not installed")

from confluent_kafka import Producer
from pyspark.sql import Row
from pyspark.sql.types import ArrayType, BinaryType, IntegerType, StringType, StructField, StructType

from tidelog.spark.kafka_connector import (
    ivy_jar_name,
    kafka_connector_coordinate,
    scala_binary_version,
    spark_version,
)

from .conftest import (
    SPARK_BROKER_OVERRIDES,
    Pipeline,
    add_partitions,
    assert_exact,
    consume_all,
    create_topic,
    produce,
    source,
)

pytestmark = [pytest.mark.spark, pytest.mark.kafka_connector, pytest.mark.xdist_group("spark")]

BROKER_OVERRIDES = SPARK_BROKER_OVERRIDES  # the module's broker (tests/fixtures.py)

T0 = 1_700_000_000_000
HEADERS = ArrayType(StructType([StructField("key", StringType()), StructField("value", BinaryType())]))


def produce_varied(bootstrap: str, topic: str, partitions: int, per_partition: int) -> None:
    """Records with and without keys and headers (one header with a null value), fixed timestamps."""
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for part in range(partitions):
        for i in range(per_partition):
            headers = [("n", str(i).encode()), ("none", None)] if i % 3 == 0 else None
            p.produce(topic, f"{part}-{i}".encode(), None if i % 4 == 0 else f"k{i}".encode(), part,
                      timestamp=T0 + i, headers=headers)
    assert p.flush(30) == 0


def spark_records(df) -> list[tuple]:
    rows = df.selectExpr("partition", "offset", "key", "value", "unix_millis(timestamp) AS ts", "timestampType",
                         "headers").collect()
    return sorted((r.partition, r.offset, r.key, r.value, r.ts, r.timestampType,
                   None if r.headers is None else [(h.key, h.value) for h in r.headers]) for r in rows)


def client_records(messages) -> list[tuple]:
    return sorted((m.partition(), m.offset(), m.key(), m.value(), m.timestamp()[1], m.timestamp()[0] - 1,
                   m.headers()) for m in messages)


def test_the_connector_matches_the_installed_pyspark(kafka_spark) -> None:
    assert kafka_spark.version == spark_version()
    scala = kafka_spark.sparkContext._jvm.scala.util.Properties.versionNumberString()
    assert scala.startswith(scala_binary_version() + ".")
    jars = kafka_spark.sparkContext._jsc.sc().listJars().mkString(" ")
    assert ivy_jar_name(kafka_connector_coordinate()) in jars


def test_batch_read_subscribe_matches_the_records_and_the_tidelog_source(kafka_spark, broker,
                                                                         topic_name) -> None:
    topic = topic_name("kbatch")
    create_topic(broker.bootstrap, topic, 2)
    produce_varied(broker.bootstrap, topic, 2, 30)
    expected = client_records(consume_all(broker.bootstrap, topic, 2))
    assert len(expected) == 60
    kafka = source(kafka_spark, broker.bootstrap, fmt="kafka", subscribe=topic, includeHeaders=True)
    assert spark_records(kafka) == expected
    tidelog = source(kafka_spark, broker.bootstrap, subscribe=topic, includeHeaders=True)
    assert kafka.schema == tidelog.schema
    assert spark_records(tidelog) == expected


def test_batch_read_assign_and_subscribe_between_offsets(kafka_spark, broker, topic_name) -> None:
    topic = topic_name("krange")
    create_topic(broker.bootstrap, topic, 3)
    for p in range(3):
        produce(broker.bootstrap, topic, [f"{p}-{i}".encode() for i in range(20)], partition=p)

    def values(**options: object) -> list[str]:
        df = source(kafka_spark, broker.bootstrap, fmt="kafka", **options)
        return sorted(r.value.decode() for r in df.select("value").collect())

    assert values(assign=json.dumps({topic: [2, 0]}),
                  startingOffsets=json.dumps({topic: {"0": 5, "2": -2}}),
                  endingOffsets=json.dumps({topic: {"0": 7, "2": 2}})) == ["0-5", "0-6", "2-0", "2-1"]
    assert values(subscribe=topic, startingOffsets=json.dumps({topic: {"0": 18, "1": -2, "2": 19}}),
                  endingOffsets=json.dumps({topic: {"0": -1, "1": 1, "2": -1}})) == ["0-18", "0-19", "1-0", "2-19"]
    assert len(values(subscribe=topic, startingOffsets="earliest", endingOffsets="latest")) == 60


def test_batch_read_between_timestamps(kafka_spark, broker, topic_name) -> None:
    topic = topic_name("ktime")
    create_topic(broker.bootstrap, topic, 2)
    for p in range(2):
        for i in range(20):
            produce(broker.bootstrap, topic, [f"{p}-{i}".encode()], partition=p, timestamp_ms=T0 + 1000 * i)
    df = source(kafka_spark, broker.bootstrap, fmt="kafka", subscribe=topic, startingTimestamp=T0 + 17_500,
                endingTimestamp=T0 + 19_000)
    assert sorted(r.value.decode() for r in df.select("value").collect()) == ["0-18", "1-18"]


def test_streaming_read_stops_and_restarts_without_loss_or_duplicates(kafka_spark, broker, topic_name,
                                                                      tmp_path) -> None:
    topic = topic_name("kstream")
    create_topic(broker.bootstrap, topic, 3)
    for p in range(3):
        produce(broker.bootstrap, topic, [b"a"] * 100, partition=p)
    pipe = Pipeline(kafka_spark, broker.bootstrap, tmp_path, fmt="kafka", subscribe=topic,
                    startingOffsets="earliest", maxOffsetsPerTrigger=120)
    sizes = pipe.run_all()
    assert sum(sizes) == 300 and len(sizes) >= 3 and max(sizes) <= 120
    assert_exact(pipe.rows(), {(topic, p): range(100) for p in range(3)})

    for p in range(3):
        produce(broker.bootstrap, topic, [b"b"] * 50, partition=p)
    add_partitions(broker.bootstrap, topic, 4)
    produce(broker.bootstrap, topic, [b"c"] * 20, partition=3)
    pipe.run_all(maxOffsetsPerTrigger=1000)
    assert_exact(pipe.rows(), {(topic, p): range(150) for p in range(3)} | {(topic, 3): range(20)})

    assert pipe.run_all() == []  # nothing new: no batch, nothing read twice
    assert len(pipe.rows()) == 470


def test_batch_write_key_value_headers_read_back_with_confluent_kafka(kafka_spark, broker, topic_name) -> None:
    topic = topic_name("kwrite")
    create_topic(broker.bootstrap, topic, 3)
    schema = StructType([StructField("key", StringType()), StructField("value", BinaryType()),
                         StructField("headers", HEADERS), StructField("partition", IntegerType())])
    rows = [Row(None if i % 5 == 0 else f"k{i}", f"v{i}".encode(),
                [Row("n", str(i).encode()), Row("none", None)] if i % 2 else None, i % 3) for i in range(40)]
    (kafka_spark.createDataFrame(rows, schema).repartition(2).write.format("kafka")
     .option("kafka.bootstrap.servers", broker.bootstrap).option("topic", topic).save())
    got = sorted((m.value(), m.key(), m.headers(), m.partition())
                 for m in consume_all(broker.bootstrap, topic, 3))
    assert got == sorted((f"v{i}".encode(), None if i % 5 == 0 else f"k{i}".encode(),
                          [("n", str(i).encode()), ("none", None)] if i % 2 else None, i % 3) for i in range(40))


def test_streaming_copy_between_topics_restarts_exactly(kafka_spark, broker, topic_name, tmp_path: Path) -> None:
    src, dst = topic_name("kfrom"), topic_name("kto")
    create_topic(broker.bootstrap, src, 2)
    create_topic(broker.bootstrap, dst, 2)
    produce_varied(broker.bootstrap, src, 2, 25)

    def copy() -> None:
        df = source(kafka_spark, broker.bootstrap, stream=True, fmt="kafka", subscribe=src,
                    startingOffsets="earliest", includeHeaders=True, maxOffsetsPerTrigger=20)
        q = (df.selectExpr("key", "value", "headers", "partition").writeStream.format("kafka")
             .option("kafka.bootstrap.servers", broker.bootstrap).option("topic", dst)
             .option("checkpointLocation", str(tmp_path / "checkpoint")).trigger(availableNow=True).start())
        assert q.awaitTermination(180)
        assert q.exception() is None

    copy()
    produce_varied(broker.bootstrap, src, 2, 10)
    copy()

    def contents(topic: str) -> list[tuple]:
        return sorted(((m.partition(), m.key(), m.value(), m.headers())
                       for m in consume_all(broker.bootstrap, topic, 2)), key=repr)

    assert len(contents(src)) == 70
    assert contents(dst) == contents(src)
