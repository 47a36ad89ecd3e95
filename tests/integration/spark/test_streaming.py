"""Streaming reads: restart from a checkpoint, late starts, new partitions and topics, data loss, limits.

Each query writes to Parquet with a checkpoint; the test then reads the Parquet files and checks the
exact (partition, offset) set: no duplicates, no gaps.
"""

from __future__ import annotations

import json
import threading
import time

import pytest

pytest.importorskip("pyspark", reason="the spark extra is not installed")
pytest.importorskip("pyarrow", reason="the spark extra is not installed")

from confluent_kafka import Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, OffsetSpec

from .conftest import (
    SPARK_BROKER_OVERRIDES,
    Pipeline,
    add_partitions,
    assert_exact,
    create_topic,
    produce,
    source,
)

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]

BROKER_OVERRIDES = SPARK_BROKER_OVERRIDES  # the module's broker (tests/fixtures.py)

#: StreamingQuery.status messages once a trigger has run and found nothing to do.
WAITING = ("Waiting for data to arrive", "Waiting for next trigger")


def test_stop_produce_restart_continues_exactly(spark, broker, topic_name, tmp_path) -> None:
    topic = topic_name("restart")
    create_topic(broker.bootstrap, topic, 3)
    for p in range(3):
        produce(broker.bootstrap, topic, [b"a"] * 100, partition=p)
    pipe = Pipeline(spark, broker.bootstrap, tmp_path, subscribe=topic, startingOffsets="earliest",
                    maxOffsetsPerTrigger=120)
    assert pipe.run_all() == [120, 120, 60]
    assert pipe.offsets(0) == {topic: {"0": 40, "1": 40, "2": 40}}
    last = (pipe.checkpoint / "offsets" / "2").read_text().splitlines()[2]
    assert last == json.dumps({topic: {"0": 100, "1": 100, "2": 100}})  # canonical: sorted, string keys

    for p in range(3):
        produce(broker.bootstrap, topic, [b"b"] * 50, partition=p)
    add_partitions(broker.bootstrap, topic, 4)
    produce(broker.bootstrap, topic, [b"c"] * 20, partition=3)
    pipe.run_all(maxOffsetsPerTrigger=1000)
    assert_exact(pipe.rows(), {(topic, p): range(150) for p in range(3)} | {(topic, 3): range(20)})

    assert pipe.run_all() == []  # nothing new: no batch, nothing read twice
    assert len(pipe.rows()) == 470


def test_latest_start_reads_everything_produced_after_the_initial_offsets(spark, broker, topic_name,
                                                                          tmp_path) -> None:
    topic = topic_name("latest")
    create_topic(broker.bootstrap, topic, 2)
    for p in range(2):
        produce(broker.bootstrap, topic, [b"old"] * 50, partition=p)
    stop = threading.Event()

    def live_traffic() -> None:  # records keep arriving while the query starts
        producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
        i = 0
        while not stop.is_set():
            producer.produce(topic, b"live", partition=i % 2)
            producer.poll(0)
            i += 1
            time.sleep(0.01)
        assert producer.flush(30) == 0

    producer = threading.Thread(target=live_traffic)
    producer.start()
    pipe = Pipeline(spark, broker.bootstrap, tmp_path, subscribe=topic, startingOffsets="latest")
    q = pipe.start()
    try:
        deadline = time.monotonic() + 120
        while not Pipeline.batch_sizes(q) and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        stop.set()
        producer.join()
    q.processAllAvailable()
    q.stop()
    initial = pipe.offsets(0)[topic]  # batch 0 journals the initial offsets and reads nothing
    assert all(offset >= 50 for offset in initial.values())
    ends = {p: end_offset(broker.bootstrap, topic, p) for p in range(2)}
    assert_exact(pipe.rows(), {(topic, p): range(initial[str(p)], ends[p]) for p in range(2)})


def test_latest_start_survives_a_crash_before_batch_0_is_committed(spark, broker, topic_name,
                                                                   tmp_path) -> None:
    topic = topic_name("replay")
    create_topic(broker.bootstrap, topic)
    produce(broker.bootstrap, topic, [b"old"] * 10)
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"

    def start():
        # foreachBatch re-runs a replayed batch (a file sink would skip it as already written)
        df = source(spark, broker.bootstrap, stream=True, subscribe=topic, startingOffsets="latest")
        return (df.select("partition", "offset").writeStream.option("checkpointLocation", str(checkpoint))
                .foreachBatch(lambda batch, _id: batch.write.mode("append").parquet(str(out))).start())

    q = start()
    deadline = time.monotonic() + 120
    while not (checkpoint / "commits" / "0").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    q.stop()
    assert json.loads((checkpoint / "offsets" / "0").read_text().splitlines()[2]) == {topic: {"0": 10}}
    # As if the driver died after journaling batch 0 and before committing it.
    for name in ("0", ".0.crc"):
        (checkpoint / "commits" / name).unlink(missing_ok=True)
    produce(broker.bootstrap, topic, [b"between"] * 20)
    q = start()
    try:
        q.processAllAvailable()
    finally:
        q.stop()
    assert q.exception() is None
    rows = [r.offset for r in spark.read.parquet(str(out)).collect()]
    assert sorted(rows) == list(range(10, 30))


def test_subscribe_pattern_picks_up_new_topics_and_partitions(spark, broker, topic_name, tmp_path) -> None:
    prefix = topic_name("pat")
    create_topic(broker.bootstrap, f"{prefix}-a")
    produce(broker.bootstrap, f"{prefix}-a", [b"a"] * 10)
    create_topic(broker.bootstrap, f"{prefix}x-other")
    produce(broker.bootstrap, f"{prefix}x-other", [b"no"] * 3)
    pipe = Pipeline(spark, broker.bootstrap, tmp_path, subscribePattern=f"{prefix}-.*",
                    startingOffsets="earliest")
    q = pipe.start()
    try:
        q.processAllAvailable()
        create_topic(broker.bootstrap, f"{prefix}-b", 2)
        produce(broker.bootstrap, f"{prefix}-b", [b"b"] * 5, partition=1)
        add_partitions(broker.bootstrap, f"{prefix}-a", 2)
        produce(broker.bootstrap, f"{prefix}-a", [b"a1"] * 4, partition=1)
        q.processAllAvailable()
    finally:
        q.stop()
    assert_exact(pipe.rows(), {(f"{prefix}-a", 0): range(10), (f"{prefix}-a", 1): range(4),
                               (f"{prefix}-b", 1): range(5)})


def end_offset(bootstrap: str, topic: str, partition: int) -> int:
    tp = KafkaTopicPartition(topic, partition)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    return admin.list_offsets({tp: OffsetSpec.latest()})[tp].result().offset


def _expire_old_records(bootstrap: str, topic: str, before_offset: int) -> int:
    """Let retention delete every closed segment (the records are timestamped an hour ago)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=[
        ConfigEntry("retention.ms", "60000", incremental_operation=AlterConfigOpType.SET)])
    for f in admin.incremental_alter_configs([resource]).values():
        f.result(30)
    tp = KafkaTopicPartition(topic, 0)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        log_start = admin.list_offsets({tp: OffsetSpec.earliest()})[tp].result().offset
        if log_start > before_offset:
            return log_start
        time.sleep(0.2)
    raise AssertionError("retention did not delete the old segments")


@pytest.mark.parametrize("fail_on_data_loss", [True, False])
def test_offsets_deleted_by_retention(spark, broker, topic_name, tmp_path, fail_on_data_loss) -> None:
    topic = topic_name("retention")
    create_topic(broker.bootstrap, topic, 1, config={"segment.bytes": "2000"})
    hour_ago = int(time.time() * 1000) - 3_600_000
    produce(broker.bootstrap, topic, [b"x" * 100] * 20, timestamp_ms=hour_ago, batch_records=5)
    pipe = Pipeline(spark, broker.bootstrap, tmp_path, subscribe=topic, startingOffsets="earliest",
                    failOnDataLoss=fail_on_data_loss)
    pipe.run_all(trigger={"availableNow": True})
    produce(broker.bootstrap, topic, [b"y" * 100] * 200, timestamp_ms=hour_ago, batch_records=5)
    log_start = _expire_old_records(broker.bootstrap, topic, before_offset=20)
    assert 20 < log_start < 220
    q = pipe.start(trigger={"availableNow": True})
    if fail_on_data_loss:
        with pytest.raises(Exception, match="Cannot fetch offset 20 .*failOnDataLoss"):
            q.awaitTermination(120)
        assert_exact(pipe.rows(), {(topic, 0): range(20)})
    else:
        assert q.awaitTermination(120)
        assert q.exception() is None
        assert_exact(pipe.rows(), {(topic, 0): list(range(20)) + list(range(log_start, 220))})  # type: ignore[dict-item]


def test_available_now_honours_max_offsets_per_trigger(spark, broker, topic_name, tmp_path) -> None:
    topic = topic_name("avail")
    create_topic(broker.bootstrap, topic, 3)
    for p in range(3):
        produce(broker.bootstrap, topic, [b"a"] * 100, partition=p)
    pipe = Pipeline(spark, broker.bootstrap, tmp_path, subscribe=topic, startingOffsets="earliest",
                    maxOffsetsPerTrigger=70)
    q = pipe.start(trigger={"availableNow": True})
    assert q.awaitTermination(120), "an availableNow query stops by itself"
    # 70 split over three equal backlogs is 23 each (rounded down, as the Kafka source does)
    assert Pipeline.batch_sizes(q) == [69, 69, 69, 69, 24]
    assert_exact(pipe.rows(), {(topic, p): range(100) for p in range(3)})


def test_min_offsets_per_trigger_waits_for_records_or_the_delay(spark, broker, topic_name, tmp_path) -> None:
    topic = topic_name("min")
    create_topic(broker.bootstrap, topic)
    pipe = Pipeline(spark, broker.bootstrap, tmp_path, subscribe=topic, startingOffsets="earliest",
                    minOffsetsPerTrigger=50, maxTriggerDelay="10s")
    q = pipe.start(trigger={"processingTime": "200 milliseconds"})
    try:
        deadline = time.monotonic() + 120
        while q.status["message"] not in WAITING and time.monotonic() < deadline:
            time.sleep(0.05)  # until a first trigger has found nothing and started the delay clock
        produce(broker.bootstrap, topic, [b"a"] * 10)
        time.sleep(1.5)
        assert Pipeline.batch_sizes(q) == [], "10 < minOffsetsPerTrigger: the trigger waits"
        produce(broker.bootstrap, topic, [b"b"] * 45)
        deadline = time.monotonic() + 60
        while sum(Pipeline.batch_sizes(q)) < 55 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert Pipeline.batch_sizes(q) == [55]
        produce(broker.bootstrap, topic, [b"c"] * 3)
        sent = time.monotonic()
        while sum(Pipeline.batch_sizes(q)) < 58 and time.monotonic() < deadline:
            time.sleep(0.1)
        waited = time.monotonic() - sent
        assert Pipeline.batch_sizes(q) == [55, 3]
        assert 1.0 < waited < 30, "3 records are read once maxTriggerDelay has passed"
    finally:
        q.stop()
