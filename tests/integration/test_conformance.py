"""Kafka conformance that real clients found: KIP-467 record errors, the Fetch response budget,
ListOffsets MAX_TIMESTAMP, and a small fetch.max.bytes with librdkafka."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, Producer

from tests.integration.kafka_io import create_topic, produce_batch
from tidelog.protocol.api_keys import ApiKey
from tidelog.protocol.messages import FetchRequest, ListOffsetsRequest
from tidelog.records.builder import build_batch
from tidelog.testing import BrokerProcess
from tidelog.testing.client import WireClient

pytestmark = pytest.mark.integration


# ------------------------------------------------------------------------------------- KIP-467


def test_a_keyless_record_on_a_compacted_topic_is_named_by_its_batch_index(broker: BrokerProcess) -> None:
    create_topic(broker, "compacted-kip467", config={"cleanup.policy": "compact"})
    now = int(time.time() * 1000)
    batch = build_batch([(now, b"k0", b"v0"), (now, None, b"no key"), (now, b"k2", b"v2"), (now, None, b"again")])
    with WireClient.connect(broker.bootstrap) as client:
        p = produce_batch(client, "compacted-kip467", batch, version=9)
    assert p.error_code == 87  # INVALID_RECORD
    assert [(e.batch_index, e.batch_index_error_message) for e in p.record_errors] == [
        (1, "Compacted topic cannot accept message without key in topic partition compacted-kip467-0."),
        (3, "Compacted topic cannot accept message without key in topic partition compacted-kip467-0."),
    ]
    assert p.error_message.startswith("One or more records have been rejected due to 2 record errors")
    with WireClient.connect(broker.bootstrap) as client:  # nothing of the batch was written
        good = produce_batch(client, "compacted-kip467", build_batch([(now, b"k", b"v")]))
    assert (good.error_code, good.base_offset) == (0, 0)


def test_records_with_bad_timestamps_are_named_by_their_batch_index(broker: BrokerProcess) -> None:
    create_topic(broker, "timestamps-kip467", config={"message.timestamp.after.max.ms": "60000"})
    now = int(time.time() * 1000)
    future = now + 3_600_000
    batch = build_batch([(now, b"a", b"1"), (future, b"b", b"2"), (now + 1, b"c", b"3")])
    with WireClient.connect(broker.bootstrap) as client:
        p = produce_batch(client, "timestamps-kip467", batch, version=9)
    assert p.error_code == 32  # INVALID_TIMESTAMP
    assert p.error_message == "One or more records have been rejected due to invalid timestamp"
    ((index, message),) = [(e.batch_index, e.batch_index_error_message) for e in p.record_errors]
    assert index == 1
    assert message.startswith(f"Timestamp {future} of message with offset 1 is out of range. The timestamp should be "
                              "within [")


# ------------------------------------------------------------------------------ fetch budget


def test_fetch_max_bytes_bounds_the_whole_response(broker: BrokerProcess) -> None:
    """The first partition reads min(partition limit, response budget); a batch that does not fit
    after that waits for the next fetch; one batch larger than the budget still comes (KIP-74)."""
    create_topic(broker, "budget", partitions=3)
    value = b"x" * 100_000
    with WireClient.connect(broker.bootstrap) as client:
        for partition in range(3):
            for _ in range(3):
                assert produce_batch(client, "budget", build_batch([(0, None, value)]), partition=partition).error_code == 0
        topics = [FetchRequest.FetchTopic(topic="budget", partitions=[
            FetchRequest.FetchPartition(partition=p, fetch_offset=0, partition_max_bytes=1_048_576)
            for p in range(3)])]
        response = client.request(FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=150_000,
                                               isolation_level=0, topics=topics), 11)
        sizes = [len(p.records or b"") for t in response.responses for p in t.partitions]
        assert sizes[0] == len(build_batch([(0, None, value)])) and sizes[1:] == [0, 0]
        assert sum(sizes) <= 150_000
        small = client.request(FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1000,
                                            isolation_level=0, topics=topics), 11)
        sizes = [len(p.records or b"") for t in small.responses for p in t.partitions]
        assert sizes[0] > 1000 and sizes[1:] == [0, 0]  # at least one batch, and nothing after it


def test_librdkafka_with_a_small_fetch_max_bytes_reads_everything(broker: BrokerProcess) -> None:
    create_topic(broker, "small-fetch", partitions=4)
    # Batches of ~10 KB: each fits the consumer's 60 KB budget, a partition's worth does not.
    p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 50, "batch.size": 10_000})
    for i in range(400):
        p.produce("small-fetch", value=b"%06d" % i + b"y" * 5_000, partition=i % 4)
    assert p.flush(30) == 0
    errors: list[str] = []
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "small-fetch", "auto.offset.reset": "earliest",
                  "fetch.max.bytes": 60_000, "message.max.bytes": 60_000, "receive.message.max.bytes": 60_512,
                  "max.partition.fetch.bytes": 1_048_576, "error_cb": lambda e: errors.append(str(e))})
    c.subscribe(["small-fetch"])
    seen: set[bytes] = set()
    deadline = time.monotonic() + 60
    while len(seen) < 400 and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and not m.error():
            seen.add(m.value()[:6])
    c.close()
    assert len(seen) == 400
    assert not [e for e in errors if "Invalid response size" in e], errors


# ------------------------------------------------------------------------ ListOffsets -3


def test_max_timestamp_answers_the_record_that_carries_it(broker: BrokerProcess) -> None:
    create_topic(broker, "max-ts")
    t = int(time.time() * 1000) - 10_000
    with WireClient.connect(broker.bootstrap) as client:
        assert produce_batch(client, "max-ts", build_batch([(t, b"a", b"1"), (t + 900, b"b", b"2"),
                                                            (t + 500, b"c", b"3")])).error_code == 0
        assert produce_batch(client, "max-ts", build_batch([(t + 100, b"d", b"4")])).error_code == 0
        request = ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=[ListOffsetsRequest.ListOffsetsTopic(
            name="max-ts", partitions=[ListOffsetsRequest.ListOffsetsPartition(partition_index=0, timestamp=-3)])])
        (topic,) = client.request(request, 7).topics
        (partition,) = topic.partitions
    assert (partition.error_code, partition.timestamp, partition.offset) == (0, t + 900, 1)
    assert ApiKey.LIST_OFFSETS == 2
