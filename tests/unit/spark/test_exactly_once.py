"""The exactly-once sink's identities and skip rule, without Spark or a broker: which transactional id and
marker a write task gets from Spark's task properties, which batches count as already written, and the
sink options that switch it on."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("pyspark", reason="the spark extra is not installed")
pytest.importorskip("pyarrow", reason="the spark extra is not installed")

from confluent_kafka import TopicPartition
from pyspark.sql.types import StringType, StructField, StructType

from tidelog.spark.exactly_once import (
    BATCH_ID_PROPERTY,
    QUERY_ID_PROPERTY,
    WriteTask,
    next_batch,
    transactional_id,
    write_task,
)
from tidelog.spark.options import parse_sink_options
from tidelog.spark.source import TidelogDataSource

QUERY = "d3db56eb-f70e-4c3e-979c-829d9a3369dc"


def test_the_id_derives_from_the_query_id_and_the_partition() -> None:
    task = write_task(None, {BATCH_ID_PROPERTY: "7", QUERY_ID_PROPERTY: QUERY}, 2)
    assert task == WriteTask(f"spark-tidelog-{QUERY}-2", 7, 2)
    assert task.group_id == task.transactional_id
    # every attempt and every batch of one partition of one query shares the id; other partitions do not
    assert write_task(None, {BATCH_ID_PROPERTY: "8", QUERY_ID_PROPERTY: QUERY}, 2).transactional_id == \
        task.transactional_id
    assert write_task(None, {BATCH_ID_PROPERTY: "7", QUERY_ID_PROPERTY: QUERY}, 3).transactional_id != \
        task.transactional_id
    assert write_task(None, {BATCH_ID_PROPERTY: "7", QUERY_ID_PROPERTY: "other"}, 2).transactional_id != \
        task.transactional_id


def test_a_prefix_option_replaces_the_query_id() -> None:
    task = write_task("orders-eos", {BATCH_ID_PROPERTY: "0", QUERY_ID_PROPERTY: QUERY}, 0)
    assert task == WriteTask("orders-eos-0", 0, 0)
    assert write_task("orders-eos", {BATCH_ID_PROPERTY: "0", QUERY_ID_PROPERTY: None}, 11).transactional_id == \
        "orders-eos-11"
    assert transactional_id("p", 4) == "p-4"


@pytest.mark.parametrize("batch", [None, "", "x", "1.5"])
def test_no_micro_batch_id_is_refused(batch: str | None) -> None:
    with pytest.raises(ValueError, match="no micro-batch id .* need a streaming query"):
        write_task(None, {BATCH_ID_PROPERTY: batch, QUERY_ID_PROPERTY: QUERY}, 0)


def test_no_query_id_and_no_prefix_is_refused() -> None:
    with pytest.raises(ValueError, match="no query id .* set the option 'transactionalIdPrefix'"):
        write_task(None, {BATCH_ID_PROPERTY: "3"}, 0)


def test_the_marker_is_the_next_batch_to_write() -> None:
    marker = WriteTask("q-1", 41, 1).marker("out")
    assert (marker.topic, marker.partition, marker.offset) == ("out", 0, 42)
    assert json.loads(marker.metadata) == {"batch": 41, "partition": 1}


def test_next_batch_is_the_highest_committed_marker() -> None:
    assert next_batch([]) == 0
    assert next_batch([TopicPartition("a", 0, 3), TopicPartition("b", 0, 9), TopicPartition("a", 1, 5)]) == 9
    # no committed offset (-1001) does not count
    assert next_batch([TopicPartition("a", 0, -1001), TopicPartition("c", 0, 2)]) == 2
    assert next_batch([TopicPartition("a", 0, -1001)]) == 0


@pytest.mark.parametrize(("batch", "next_to_write", "skipped"), [
    (0, 0, False),  # nothing written yet
    (0, 1, True),  # batch 0 committed, replayed
    (4, 5, True),
    (5, 5, False),  # the next batch
    (7, 5, False),  # this partition had no rows in batches 5 and 6
    (2, 5, True),  # an old batch replayed
])
def test_a_batch_below_the_marker_is_already_written(batch: int, next_to_write: int, skipped: bool) -> None:
    assert WriteTask("q-0", batch, 0).already_written(next_to_write) is skipped


def test_sink_options() -> None:
    base = {"kafka.bootstrap.servers": "b:9092", "topic": "out"}
    assert not parse_sink_options(base).exactly_once
    on = parse_sink_options({**base, "EXACTLYONCE": "True", "transactionalIdPrefix": " orders "})
    assert (on.exactly_once, on.transactional_id_prefix) == (True, "orders")
    assert parse_sink_options({**base, "exactlyOnce": "true"}).transactional_id_prefix is None
    with pytest.raises(ValueError, match="Option 'exactlyOnce' must be 'true' or 'false', got 'yes'"):
        parse_sink_options({**base, "exactlyOnce": "yes"})
    with pytest.raises(ValueError, match="'transactionalIdPrefix' only applies with 'exactlyOnce' set to 'true'"):
        parse_sink_options({**base, "transactionalIdPrefix": "orders"})
    with pytest.raises(ValueError, match="'transactionalIdPrefix' must not be empty"):
        parse_sink_options({**base, "exactlyOnce": "true", "transactionalIdPrefix": " "})
    with pytest.raises(ValueError, match="'transactional.id' is not supported: .* 'exactlyOnce' to 'true'"):
        parse_sink_options({**base, "kafka.transactional.id": "mine"})


def test_exactly_once_is_for_streaming_writes() -> None:
    schema = StructType([StructField("value", StringType())])
    source = TidelogDataSource({"kafka.bootstrap.servers": "b:9092", "topic": "out", "exactlyOnce": "true"})
    with pytest.raises(ValueError, match="'exactlyOnce' applies to streaming writes"):
        source.writer(schema, False)
    assert type(source.streamWriter(schema, False)).__name__ == "TidelogExactlyOnceStreamWriter"
    plain = TidelogDataSource({"kafka.bootstrap.servers": "b:9092", "topic": "out"})
    assert type(plain.streamWriter(schema, False)).__name__ == "TidelogStreamWriter"
