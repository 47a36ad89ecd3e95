"""Option validation: the same mistakes Spark's Kafka connector refuses, with the same kind of message.

Most checks run on the parser directly (fast); the last tests show that Spark surfaces them at
``load()``, when the query is planned, and when a write starts.
"""

from __future__ import annotations

import re

import pytest

pytest.importorskip("pyspark", reason="the spark extra is not installed")
pytest.importorskip("pyarrow", reason="the spark extra is not installed")

from pyspark.sql.types import BinaryType, IntegerType, StringType, StructField, StructType

from tidelog.spark.offsets import TopicPartition
from tidelog.spark.options import (
    duration_ms,
    parse_sink_options,
    parse_source_options,
)
from tidelog.spark.schema import check_sink_schema, check_user_schema, source_schema

from .conftest import SPARK_BROKER_OVERRIDES, create_topic, produce, source

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]

BROKER_OVERRIDES = SPARK_BROKER_OVERRIDES  # the module's broker (tests/fixtures.py)

BASE = {"kafka.bootstrap.servers": "127.0.0.1:9"}


def opts(**kw: str) -> dict[str, str]:
    return {**BASE, **{k.replace("__", "."): v for k, v in kw.items()}}


def refused(message: str, options: dict[str, str], *, streaming: bool = False) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        parse_source_options(options, streaming=streaming)


def test_exactly_one_of_assign_subscribe_subscribe_pattern() -> None:
    refused("One of the following options must be specified for Kafka source: assign, subscribe, "
            "subscribePattern", opts())
    refused("Only one of the following options can be specified", opts(subscribe="a", subscribePattern="a.*"))
    refused("No topics to subscribe to as specified value for option 'subscribe' is ' , '", opts(subscribe=" , "))
    refused("Pattern to subscribe is empty", opts(subscribePattern="  "))
    refused("No topicpartitions to assign as specified value for option 'assign' is 'a'", opts(assign="a"))
    refused('Expected e.g. {"topicA":[0,1],"topicB":[0,1]}', opts(assign='{"a": 1}'))


def test_option_names_are_case_insensitive() -> None:
    parsed = parse_source_options({"KAFKA.BOOTSTRAP.SERVERS": "h:1", "SubScribe": "a, b",
                                   "MAXOFFSETSPERTRIGGER": "5"}, streaming=True)
    assert parsed.strategy.topics == ("a", "b")
    assert parsed.max_offsets_per_trigger == 5
    assert parsed.kafka_config["bootstrap.servers"] == "h:1"


def test_bootstrap_servers_required() -> None:
    with pytest.raises(ValueError, match="Option 'kafka.bootstrap.servers' must be specified"):
        parse_source_options({"subscribe": "a"}, streaming=False)


@pytest.mark.parametrize("key", ["auto.offset.reset", "key.deserializer", "value.deserializer",
                                 "enable.auto.commit", "interceptor.classes"])
def test_kafka_options_the_source_sets_itself_are_refused(key: str) -> None:
    refused(f"Kafka option '{key}' is not supported", {**opts(subscribe="a"), f"kafka.{key}": "x"})


def test_group_id_options() -> None:
    forced = parse_source_options({**opts(subscribe="a"), "kafka.group.id": "mine"}, streaming=True)
    assert forced.group_id == "mine"
    prefixed = parse_source_options(opts(subscribe="a", groupIdPrefix="etl"), streaming=True)
    assert re.fullmatch(r"etl-[0-9a-f-]{36}", prefixed.group_id)
    assert parse_source_options(opts(subscribe="a"), streaming=False).group_id.startswith("spark-kafka-relation-")


def test_streaming_refuses_ending_offsets_and_batch_refuses_latest_starts() -> None:
    refused("ending offset not valid in streaming queries", opts(subscribe="a", endingOffsets="latest"),
            streaming=True)
    refused("ending timestamp not valid in streaming queries", opts(subscribe="a", endingOffsetsByTimestamp="{}"),
            streaming=True)
    refused("starting offset can't be latest for batch queries", opts(subscribe="a", startingOffsets="latest"))
    refused("startingOffsets for a-0 can't be latest for batch queries",
            opts(subscribe="a", startingOffsets='{"a":{"0":-1}}'))
    refused("ending offset can't be earliest for batch queries", opts(subscribe="a", endingOffsets="earliest"))
    refused("ending offset for a-0 can't be earliest", opts(subscribe="a", endingOffsets='{"a":{"0":-2}}'))


def test_start_and_end_offsets_must_match() -> None:
    refused("must name the same topic-partitions",
            opts(subscribe="a", startingOffsets='{"a":{"0":1}}', endingOffsets='{"a":{"0":5,"1":5}}'))
    refused("The specified starting offset (9) is greater than the ending offset (5) for topic partition a-0",
            opts(subscribe="a", startingOffsets='{"a":{"0":9}}', endingOffsets='{"a":{"0":5}}'))
    refused('Expected e.g. {"topicA":{"0":23,"1":-1},"topicB":{"0":-2}}, got nonsense',
            opts(subscribe="a", startingOffsets="nonsense"))
    refused("Expected a single long value, got soon", opts(subscribe="a", startingTimestamp="soon"))


def test_timestamp_options_win_over_offsets() -> None:
    parsed = parse_source_options(opts(subscribe="a", startingOffsets="earliest", startingTimestamp="1000",
                                       startingOffsetsByTimestamp='{"a":{"0":5}}',
                                       startingOffsetsByTimestampStrategy="LATEST"), streaming=True)
    assert parsed.starting.kind == "timestamp" and parsed.starting.timestamp_ms == 1000
    assert parsed.starting.no_match_latest
    parsed = parse_source_options(opts(subscribe="a", startingOffsetsByTimestamp='{"a":{"1":5,"0":7}}'),
                                  streaming=True)
    assert parsed.starting.offset_map == {TopicPartition("a", 0): 7, TopicPartition("a", 1): 5}
    refused("startingOffsetsByTimestampStrategy must be 'error' or 'latest'",
            opts(subscribe="a", startingOffsetsByTimestampStrategy="maybe"))


def test_trigger_and_partition_limits() -> None:
    refused("The value of minOffsetPerTrigger(10) is higher than the maxOffsetsPerTrigger(5).",
            opts(subscribe="a", minOffsetsPerTrigger="10", maxOffsetsPerTrigger="5"), streaming=True)
    refused("minPartitions must be positive", opts(subscribe="a", minPartitions="0"))
    refused("maxRecordsPerPartition must be positive", opts(subscribe="a", maxRecordsPerPartition="-1"))
    refused("Option 'maxOffsetsPerTrigger' must be an integer", opts(subscribe="a", maxOffsetsPerTrigger="many"))
    refused("Option 'failondataloss' must be 'true' or 'false'", opts(subscribe="a", failOnDataLoss="yes"))
    refused("Invalid time string '5 parsecs'", opts(subscribe="a", maxTriggerDelay="5 parsecs"))
    assert [duration_ms(t) for t in ("15m", "30s", "250ms", "2h", "1d", "40")] == [
        900_000, 30_000, 250, 7_200_000, 86_400_000, 40]


def test_sink_options_and_input_columns() -> None:
    with pytest.raises(ValueError, match="Kafka option 'key.serializer' is not supported"):
        parse_sink_options({**BASE, "kafka.key.serializer": "x"})
    assert parse_sink_options({**BASE, "topic": " out "}).topic == "out"
    value_only = StructType([StructField("value", BinaryType())])
    with pytest.raises(ValueError, match="topic option required when no 'topic' attribute is present"):
        check_sink_schema(value_only, None)
    check_sink_schema(value_only, "out")
    with pytest.raises(ValueError, match="Required attribute 'value' not found"):
        check_sink_schema(StructType([StructField("key", StringType())]), "out")
    with pytest.raises(ValueError, match="value attribute unsupported type int. value must be a"):
        check_sink_schema(StructType([StructField("value", IntegerType())]), "out")
    with pytest.raises(ValueError, match="partition attribute unsupported type string"):
        check_sink_schema(StructType([StructField("value", StringType()), StructField("partition", StringType())]),
                          "out")
    with pytest.raises(ValueError, match="fixed schema and cannot be set with a custom one"):
        check_user_schema(StructType([StructField("value", StringType())]), False)
    check_user_schema(source_schema(True), True)


# ------------------------------------------------------------------------ through Spark


def test_spark_reports_bad_options_at_load(spark: object, broker) -> None:
    with pytest.raises(Exception, match="Only one of the following options can be specified"):
        source(spark, broker.bootstrap, subscribe="a", assign='{"a":[0]}')
    with pytest.raises(Exception, match="Kafka option 'auto.offset.reset' is not supported"):
        source(spark, broker.bootstrap, subscribe="a", **{"kafka.auto.offset.reset": "earliest"})


def test_spark_reports_batch_rules_and_a_user_schema_when_the_query_runs(spark: object, broker,
                                                                        topic_name) -> None:
    topic = topic_name()
    create_topic(broker.bootstrap, topic)
    produce(broker.bootstrap, topic, [b"x"])
    with pytest.raises(Exception, match="starting offset can't be latest for batch queries"):
        source(spark, broker.bootstrap, subscribe=topic, startingOffsets="latest").collect()
    reader = (spark.read.format("tidelog").schema("value binary")  # type: ignore[attr-defined]
              .option("kafka.bootstrap.servers", broker.bootstrap).option("subscribe", topic))
    with pytest.raises(Exception, match="fixed schema and cannot be set with a custom one"):
        reader.load().collect()
    with pytest.raises(Exception, match="No offset matched from request of topic-partition"):
        source(spark, broker.bootstrap, subscribe=topic, startingTimestamp=4_000_000_000_000).collect()
    query = source(spark, broker.bootstrap, stream=True, subscribe=topic, endingOffsets="latest") \
        .writeStream.format("noop").start()
    try:
        with pytest.raises(Exception, match="ending offset not valid in streaming queries"):
            query.awaitTermination(120)
    finally:
        query.stop()
