"""The metrics collector (tidelog.web.metrics) over a real broker's components, started in this
process: counters from the hot path, gauges computed at scrape time, a registry per broker, and
nothing measured with metrics off."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from tidelog.cluster.metadata import BrokerInfo, MetadataImage, PartitionMetadata, TopicMetadata
from tidelog.config import BrokerConfig
from tidelog.records import RecordBatchBuilder
from tidelog.server.broker import Broker
from tidelog.web.metrics import BrokerCollector, IsrChanges


def batch(n: int, value: bytes = b"v" * 10) -> bytearray:
    b = RecordBatchBuilder()
    for i in range(n):
        b.append(timestamp=1_700_000_000_000 + i, key=None, value=value)
    return bytearray(b.build())


def config(data: Path, **extra: str) -> BrokerConfig:
    return BrokerConfig.from_props({"log.dirs": str(data), "listeners": "PLAINTEXT://127.0.0.1:0",
                                    "metrics.listener": "http://127.0.0.1:0", **extra})


def samples(broker: Broker) -> dict[tuple[str, tuple], float]:
    """(sample name, sorted label pairs) -> value, from the broker's own registry."""
    text = generate_latest(broker.metrics).decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def run(tmp_path: Path, body, **extra: str):
    async def main():
        broker = Broker(config(tmp_path, **extra))
        await broker.start()
        try:
            return await body(broker)
        finally:
            await broker.stop()

    return asyncio.run(main())


def test_appends_move_the_traffic_counters_and_the_log_gauges(tmp_path):
    async def body(broker: Broker):
        broker.controller.create_topic("t", 2)
        await broker.partition_controller.await_leaders(["t"], 10_000)  # the controller's queue decides them
        data = batch(3)
        broker.replicas.append_records("t", 0, bytearray(data), acks=1)
        broker.replicas.append_records("t", 0, batch(2), acks=1)
        broker.replicas.append_records("t", 1, batch(5), acks=1)
        return samples(broker), len(data)

    got, first_size = run(tmp_path, body)
    p0, p1 = (("partition", "0"), ("topic", "t")), (("partition", "1"), ("topic", "t"))
    assert got[("tidelog_partition_records_in_total", p0)] == 5
    assert got[("tidelog_partition_records_in_total", p1)] == 5
    assert got[("tidelog_topic_records_in_total", (("topic", "t"),))] == 10
    assert got[("tidelog_records_in_total", ())] == 10
    assert got[("tidelog_partition_bytes_in_total", p0)] == first_size + len(batch(2))
    assert got[("tidelog_log_end_offset", p0)] == 5
    assert got[("tidelog_log_start_offset", p0)] == 0
    assert got[("tidelog_log_segments", p0)] == 1
    assert got[("tidelog_log_size_bytes", p0)] == first_size + len(batch(2))
    assert got[("tidelog_log_high_watermark", p1)] == 5
    assert got[("tidelog_partitions", ())] == 2
    assert got[("tidelog_leader_partitions", ())] == 2
    assert got[("tidelog_under_replicated_partitions", ())] == 0
    assert got[("tidelog_offline_partitions", ())] == 0
    assert got[("tidelog_bytes_out_total", ())] == 0
    assert got[("tidelog_log_recovery_seconds", (("log_dir", str(tmp_path)),))] >= 0


def test_deleting_a_topic_drops_its_series_but_not_the_totals(tmp_path):
    async def body(broker: Broker):
        broker.controller.create_topic("gone", 1)
        await broker.partition_controller.await_leaders(["gone"], 10_000)
        broker.replicas.append_records("gone", 0, batch(4), acks=1)
        broker.controller.delete_topics(["gone"])
        return samples(broker)

    got = run(tmp_path, body)
    assert not any(labels and dict(labels).get("topic") == "gone" for _, labels in got)
    assert got[("tidelog_records_in_total", ())] == 4


def test_flushing_a_log_is_timed(tmp_path):
    async def body(broker: Broker):
        broker.controller.create_topic("t", 1)
        await broker.partition_controller.await_leaders(["t"], 10_000)
        broker.replicas.append_records("t", 0, batch(1), acks=1)
        before = samples(broker)[("tidelog_log_flush_time_seconds_count", ())]
        broker.logs.get_log("t", 0).flush()
        return before, samples(broker)

    before, after = run(tmp_path, body)
    assert after[("tidelog_log_flush_time_seconds_count", ())] == before + 1
    assert after[("tidelog_log_flush_time_seconds_sum", ())] > 0
    assert after[("tidelog_log_flush_time_seconds_bucket", (("le", "+Inf"),))] == before + 1


def test_metrics_off_measures_nothing(tmp_path):
    broker = Broker(config(tmp_path, **{"metrics.listener": ""}))
    assert broker.http is None and broker.metrics is None
    assert broker.replicas.traffic is None
    assert broker.network.request_times is None
    assert broker.logs.flush_latency is None


def test_two_brokers_in_one_process_have_separate_registries(tmp_path):
    async def main():
        a, b = Broker(config(tmp_path / "a")), Broker(config(tmp_path / "b"))
        await a.start()
        await b.start()
        try:
            a.controller.create_topic("t", 1)
            await a.partition_controller.await_leaders(["t"], 10_000)
            a.replicas.append_records("t", 0, batch(7), acks=1)
            return samples(a), samples(b)
        finally:
            await a.stop()
            await b.stop()

    got_a, got_b = asyncio.run(main())
    assert got_a[("tidelog_records_in_total", ())] == 7
    assert got_b[("tidelog_records_in_total", ())] == 0


def _image(*partitions: PartitionMetadata, brokers=(1, 2)) -> MetadataImage:
    topic = TopicMetadata("t", uuid.UUID(int=1), tuple(partitions))
    return MetadataImage("cluster", 1, {b: BrokerInfo(b, "h", 9092 + b) for b in brokers}, {"t": topic})


def test_isr_changes_count_shrinks_and_expansions_of_partitions_led_here():
    changes = IsrChanges(1)
    full = _image(PartitionMetadata(0, 1, 0, (1, 2), (1, 2)), PartitionMetadata(1, 2, 0, (1, 2), (1, 2)))
    shrunk = _image(PartitionMetadata(0, 1, 0, (1, 2), (1,)), PartitionMetadata(1, 2, 0, (1, 2), (2,)))
    changes(full, shrunk)
    assert (changes.shrinks, changes.expands) == (1, 0)  # partition 1 is led by broker 2
    changes(shrunk, full)
    assert (changes.shrinks, changes.expands) == (1, 1)
    changes(full, full)
    assert (changes.shrinks, changes.expands) == (1, 1)


def test_partition_health_comes_from_the_metadata_image(tmp_path):
    async def body(broker: Broker):
        me = broker.broker_id
        image = _image(PartitionMetadata(0, me, 0, (me, 99), (me,)),  # led here, follower out of the ISR
                       PartitionMetadata(1, me, 0, (me, 99), (me, 99)),  # led here, fully in sync
                       PartitionMetadata(2, -1, 0, (me, 99), ()),  # no leader
                       PartitionMetadata(3, 99, 0, (99, me), (99,)),  # led by a broker not in the image
                       brokers=(me,))
        collector = BrokerCollector(broker.metrics_sources)
        return {m.name: m.samples[0].value for m in collector.partition_metrics(image)}

    got = run(tmp_path, body)
    assert got["tidelog_partitions"] == 4
    assert got["tidelog_leader_partitions"] == 2
    assert got["tidelog_under_replicated_partitions"] == 1
    assert got["tidelog_offline_partitions"] == 2
