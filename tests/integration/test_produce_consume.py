"""Produce and consume against a real ``tidelog serve`` with confluent-kafka and kafka-python.

Covers every compression codec, keys, headers, tombstones, CreateTime and LogAppendTime, message
size limits, acks 0/1/all, idempotent producers, many partitions, ListOffsets by timestamp, fetch
long polling, kafka-python's incremental fetch sessions and seeking.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path

import kafka
import kafka.codec
import kafka.errors
import pytest
from confluent_kafka import (
    TIMESTAMP_CREATE_TIME,
    TIMESTAMP_LOG_APPEND_TIME,
    Consumer,
    KafkaError,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, NewTopic

from tidelog.errors import ErrorCode
from tidelog.protocol.api_keys import ApiKey
from tidelog.protocol.messages import ApiVersionsRequest, FetchRequest, MetadataRequest, ProduceRequest
from tidelog.records import CompressionType, RecordBatchView, build_batch, iter_batches
from tidelog.testing import BrokerProcess
from tidelog.testing.client import WireClient

MAX_MESSAGE_BYTES = 200_000
NOW_MS = int(time.time() * 1000)


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    data = tmp_path_factory.mktemp("broker")
    with BrokerProcess(data, overrides={"message.max.bytes": str(MAX_MESSAGE_BYTES)}) as b:
        yield b


# ------------------------------------------------------------------------------------------ helpers


def producer(b: BrokerProcess, **conf: object) -> Producer:
    return Producer({"bootstrap.servers": b.bootstrap, "linger.ms": 5, **conf})


def ck_consumer(b: BrokerProcess, **conf: object) -> Consumer:
    """A confluent-kafka consumer for assign() use. Auto-commit is off: these tests do not use the
    group, and without a coordinator librdkafka waits ~45 s in close() trying to commit."""
    return Consumer({"bootstrap.servers": b.bootstrap, "group.id": "tests", "enable.auto.commit": False, **conf})


def is_client_event(m) -> bool:
    """An error event about the client as a whole (a dropped connection, the group coordinator
    lookup that group.id triggers) rather than about a partition: not what these tests check."""
    return m.error() is not None and m.topic() is None and not m.error().fatal()


def next_message(c: Consumer, timeout: float):
    """The next message (or partition error) within ``timeout`` seconds, skipping client events."""
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        m = c.poll(left)
        if m is not None and not is_client_event(m):
            return m


def produce_all(p: Producer, topic: str, records: list[dict], timeout: float = 20) -> list:
    """Produce ``records`` (kwargs of Producer.produce) and return the delivery reports (err, msg)."""
    reports: list = [None] * len(records)

    def on_delivery(i: int):
        return lambda err, msg: reports.__setitem__(i, (err, msg))

    for i, r in enumerate(records):
        p.produce(topic, on_delivery=on_delivery(i), **r)
        p.poll(0)
    assert p.flush(timeout) == 0, "messages still in flight"
    assert all(r is not None for r in reports)
    return reports


def consume(b: BrokerProcess, assignments: list[TopicPartition], count: int, timeout: float = 20, **conf) -> list:
    """Read ``count`` messages from the given partitions (offsets as given) with confluent-kafka."""
    c = ck_consumer(b, **{"auto.offset.reset": "earliest", **conf})
    try:
        c.assign(assignments)
        out = []
        deadline = time.monotonic() + timeout
        while len(out) < count and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None or is_client_event(m):
                continue
            assert m.error() is None, m.error()
            out.append(m)
        assert len(out) == count, f"consumed {len(out)} of {count}"
        # nothing more than expected arrives
        extra = next_message(c, 0.3)
        assert extra is None or extra.error() is not None, f"unexpected extra message at offset {extra.offset()}"
        return out
    finally:
        c.close()


def kp_consume(b: BrokerProcess, topic: str, partitions: list[int], count: int, timeout: float = 20, **conf) -> list:
    """Read ``count`` records from the start of the given partitions with kafka-python."""
    c = kafka.KafkaConsumer(bootstrap_servers=b.bootstrap, enable_auto_commit=False, **conf)
    try:
        tps = [kafka.TopicPartition(topic, p) for p in partitions]
        c.assign(tps)
        c.seek_to_beginning(*tps)
        out: list = []
        deadline = time.monotonic() + timeout
        while len(out) < count and time.monotonic() < deadline:
            for records in c.poll(timeout_ms=500).values():
                out.extend(records)
        assert len(out) == count, f"consumed {len(out)} of {count}"
        return out
    finally:
        c.close()


def create_topic(b: BrokerProcess, topic: str, partitions: int = 1, config: dict[str, str] | None = None) -> None:
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    [future] = admin.create_topics([NewTopic(topic, partitions, 1, config=config or {})]).values()
    future.result(10)


def ensure_topic(b: BrokerProcess, topic: str) -> None:
    """Create ``topic`` through Metadata auto-creation."""
    with WireClient.connect(b.bootstrap) as client:
        r = client.request(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=topic)],
                                           allow_auto_topic_creation=True), 4)
        assert r.topics[0].error_code == 0


def raw_batches(b: BrokerProcess, topic: str, partition: int = 0) -> list[RecordBatchView]:
    """Every batch of a partition as stored (Fetch v11, no conversion)."""
    out: list[RecordBatchView] = []
    offset = 0
    with WireClient.connect(b.bootstrap) as client:
        while True:
            req = FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=50 << 20, topics=[
                FetchRequest.FetchTopic(topic=topic, partitions=[
                    FetchRequest.FetchPartition(partition=partition, fetch_offset=offset,
                                                partition_max_bytes=10 << 20)])])
            pd = client.request(req, 11).responses[0].partitions[0]
            assert pd.error_code == 0
            batches = [v for v in iter_batches(bytes(pd.records or b""))]
            if not batches:
                assert offset == pd.high_watermark
                return out
            out.extend(batches)  # type: ignore[arg-type]
            offset = batches[-1].next_offset


def advertised(b: BrokerProcess) -> dict[int, tuple[int, int]]:
    with WireClient.connect(b.bootstrap) as client:
        r = client.request(ApiVersionsRequest(), 0)
    return {k.api_key: (k.min_version, k.max_version) for k in r.api_keys}


def end_offset(b: BrokerProcess, topic: str, partition: int = 0) -> int:
    c = ck_consumer(b)
    try:
        return c.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)[1]
    finally:
        c.close()


def sample_records(n: int) -> list[dict]:
    """Keys, headers, a tombstone every 7th record, CreateTime timestamps an hour ago."""
    return [
        {
            "key": f"key-{i % 13}".encode(),
            "value": None if i % 7 == 3 else (f"value-{i}-" + "x" * (i % 50)).encode(),
            "headers": [("h1", f"{i}".encode()), ("h2", None), ("h1", b"dup")] if i % 2 else None,
            "timestamp": NOW_MS - 3_600_000 + i,
        }
        for i in range(n)
    ]


def assert_matches(records: list[dict], consumed: list) -> None:
    assert [m.offset() for m in consumed] == list(range(len(records)))
    for r, m in zip(records, consumed):
        assert m.key() == r["key"]
        assert m.value() == r["value"]
        expected_headers = r["headers"]
        assert (m.headers() or None) == expected_headers
        assert m.timestamp() == (TIMESTAMP_CREATE_TIME, r["timestamp"])


# ----------------------------------------------------------------------------- codecs, records


CODECS = {"none": CompressionType.NONE, "gzip": CompressionType.GZIP, "snappy": CompressionType.SNAPPY,
          "lz4": CompressionType.LZ4, "zstd": CompressionType.ZSTD}


@pytest.mark.parametrize("codec", list(CODECS))
def test_confluent_kafka_round_trip_with_every_codec(broker: BrokerProcess, codec: str) -> None:
    topic = f"codec-{codec}"
    records = sample_records(300)
    reports = produce_all(producer(broker, **{"compression.type": codec, "linger.ms": 100}), topic, records)
    assert [err for err, _ in reports] == [None] * len(records)
    assert sorted(msg.offset() for _, msg in reports) == list(range(len(records)))
    assert_matches(records, consume(broker, [TopicPartition(topic, 0, 0)], len(records)))
    # The broker keeps the producer's batches as they are: compressed with the producer's codec.
    # (librdkafka enables LZ4 only when the broker advertises FindCoordinator v0 -- its "LZ4"
    # feature dates from Kafka 0.8.2 -- and otherwise sends such batches uncompressed.)
    expected = CODECS[codec]
    if codec == "lz4" and ApiKey.FIND_COORDINATOR not in advertised(broker):
        expected = CompressionType.NONE
    # librdkafka sends a batch uncompressed when compression does not make it smaller.
    batches = raw_batches(broker, topic)
    codecs = {batch.compression_type for batch in batches}
    assert expected in codecs and codecs <= {expected, CompressionType.NONE}
    assert sum(batch.record_count for batch in batches) == len(records)


@pytest.mark.parametrize("codec", [None, "gzip", "snappy", "lz4", "zstd"])
def test_kafka_python_round_trip(broker: BrokerProcess, codec: str | None) -> None:
    if codec is not None and not getattr(kafka.codec, f"has_{codec}")():
        pytest.skip(f"kafka-python has no {codec} library in this environment")
    topic = f"kp-codec-{codec or 'none'}"
    p = kafka.KafkaProducer(bootstrap_servers=broker.bootstrap, compression_type=codec, linger_ms=5)
    records = sample_records(200)
    for r in records:  # kafka-python cannot send null header values
        r["headers"] = [(k, v if v is not None else b"") for k, v in r["headers"]] if r["headers"] else None
    futures = [
        p.send(topic, key=r["key"], value=r["value"], partition=0,
               headers=[(k, v) for k, v in r["headers"]] if r["headers"] else None, timestamp_ms=r["timestamp"])
        for r in records
    ]
    p.flush(20)
    assert [f.get(10).offset for f in futures] == list(range(len(records)))
    p.close()
    consumed = kp_consume(broker, topic, [0], len(records))
    assert [c.offset for c in consumed] == list(range(len(records)))
    for r, c in zip(records, consumed):
        assert (c.key, c.value, c.timestamp, c.timestamp_type) == (r["key"], r["value"], r["timestamp"], 0)
        assert [(k, v) for k, v in c.headers] == (r["headers"] or [])
    # and confluent-kafka reads what kafka-python wrote
    assert_matches(records, consume(broker, [TopicPartition(topic, 0, 0)], len(records)))
    if codec is not None:
        assert CODECS[codec] in {b.compression_type for b in raw_batches(broker, topic)}


def test_lz4_batches_reach_confluent_kafka(broker: BrokerProcess) -> None:
    """librdkafka does not produce LZ4 here (see above), so the batch comes from our own builder."""
    topic = "lz4-built"
    ensure_topic(broker, topic)
    values = [b"lz4-%d-" % i + b"abc" * i for i in range(100)]
    batch = build_batch([(NOW_MS + i, b"k", v) for i, v in enumerate(values)], compression=CompressionType.LZ4)
    with WireClient.connect(broker.bootstrap) as client:
        req = ProduceRequest(acks=-1, timeout_ms=5000, topic_data=[ProduceRequest.TopicProduceData(
            name=topic, partition_data=[ProduceRequest.PartitionProduceData(index=0, records=batch)])])
        [pr] = client.request(req, 9).responses[0].partition_responses
    assert pr.error_code == 0 and pr.base_offset == 0
    consumed = consume(broker, [TopicPartition(topic, 0, 0)], len(values))
    assert [m.value() for m in consumed] == values
    assert [m.timestamp()[1] for m in consumed] == [NOW_MS + i for i in range(len(values))]


def test_kafka_python_reads_confluent_kafka_gzip(broker: BrokerProcess) -> None:
    topic = "cross-gzip"
    records = sample_records(100)
    produce_all(producer(broker, **{"compression.type": "gzip"}), topic, records)
    consumed = kp_consume(broker, topic, [0], len(records))
    assert [(c.offset, c.key, c.value, c.timestamp) for c in consumed] == [
        (i, r["key"], r["value"], r["timestamp"]) for i, r in enumerate(records)
    ]


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


# ------------------------------------------------------------------------------------ size limits


def test_message_near_the_limit_is_accepted_and_above_it_rejected(broker: BrokerProcess) -> None:
    topic = "sizes"
    p = producer(broker, **{"linger.ms": 0})
    [(err, msg)] = produce_all(p, topic, [{"value": b"n" * (MAX_MESSAGE_BYTES - 500)}])
    assert err is None and msg.offset() == 0
    [(err, _)] = produce_all(p, topic, [{"value": b"o" * (MAX_MESSAGE_BYTES + 1000)}])
    assert err is not None and err.code() == KafkaError.MSG_SIZE_TOO_LARGE
    [(err, msg)] = produce_all(p, topic, [{"value": b"after"}])
    assert err is None and msg.offset() == 1

    # kafka-python: the broker's MESSAGE_TOO_LARGE surfaces as MessageSizeTooLargeError. (Its
    # idempotent producer then treats the error as fatal, so that producer is not reused.)
    kp = kafka.KafkaProducer(bootstrap_servers=broker.bootstrap)
    with pytest.raises(kafka.errors.MessageSizeTooLargeError):
        kp.send(topic, b"k" * (MAX_MESSAGE_BYTES + 1000), partition=0).get(10)
    kp.close()
    kp = kafka.KafkaProducer(bootstrap_servers=broker.bootstrap)
    assert kp.send(topic, b"p" * (MAX_MESSAGE_BYTES - 500), partition=0).get(10).offset == 2
    kp.close()
    assert end_offset(broker, topic) == 3
    # Fetch limits far below the record size still return it (KIP-74: at least one batch).
    near = consume(broker, [TopicPartition(topic, 0, 0)], 3,
                   **{"fetch.max.bytes": 4096, "max.partition.fetch.bytes": 4096, "message.max.bytes": 4096})
    assert [len(m.value()) for m in near] == [MAX_MESSAGE_BYTES - 500, 5, MAX_MESSAGE_BYTES - 500]
    small = kp_consume(broker, topic, [0], 3, max_partition_fetch_bytes=1024, fetch_max_bytes=1024)
    assert [len(r.value) for r in small] == [MAX_MESSAGE_BYTES - 500, 5, MAX_MESSAGE_BYTES - 500]


def _batch_of_size(size: int) -> bytes:
    value_len = size
    while True:
        batch = build_batch([(NOW_MS, None, b"z" * value_len)])
        if len(batch) == size:
            return batch
        value_len -= len(batch) - size


def test_batch_size_limit_is_exact(broker: BrokerProcess) -> None:
    """message.max.bytes bounds the batch including its 12-byte log overhead, as in Kafka."""
    topic = "exact-size"
    ensure_topic(broker, topic)
    results = {}
    with WireClient.connect(broker.bootstrap) as client:
        for size in (MAX_MESSAGE_BYTES + 1, MAX_MESSAGE_BYTES):
            batch = _batch_of_size(size)
            req = ProduceRequest(acks=1, timeout_ms=5000, topic_data=[ProduceRequest.TopicProduceData(
                name=topic, partition_data=[ProduceRequest.PartitionProduceData(index=0, records=batch)])])
            results[size] = client.request(req, 9).responses[0].partition_responses[0]
    assert results[MAX_MESSAGE_BYTES + 1].error_code == ErrorCode.MESSAGE_TOO_LARGE
    assert results[MAX_MESSAGE_BYTES].error_code == 0 and results[MAX_MESSAGE_BYTES].base_offset == 0
    assert end_offset(broker, topic) == 1


# ------------------------------------------------------------------------------------ acks, idempotence


@pytest.mark.parametrize("acks", ["0", "1", "all"])
def test_acks(broker: BrokerProcess, acks: str) -> None:
    topic = f"acks-{acks}"
    records = [{"value": b"%s-%d" % (acks.encode(), i)} for i in range(100)]
    reports = produce_all(producer(broker, acks=acks), topic, records)
    assert all(err is None for err, _ in reports)
    if acks != "0":
        assert sorted(msg.offset() for _, msg in reports) == list(range(100))
    consumed = consume(broker, [TopicPartition(topic, 0, 0)], 100)
    assert [m.value() for m in consumed] == [r["value"] for r in records]


def test_confluent_kafka_idempotent_producer(broker: BrokerProcess) -> None:
    topic = "idempotent-ck"
    create_topic(broker, topic, 8)
    p = producer(broker, **{"enable.idempotence": True, "max.in.flight.requests.per.connection": 5,
                                 "batch.num.messages": 50})
    records = [{"key": b"k%d" % (i % 40), "value": b"%d" % i} for i in range(4000)]
    reports = produce_all(p, topic, records)
    assert all(err is None for err, _ in reports)
    by_partition = defaultdict(list)
    for _, msg in reports:
        by_partition[msg.partition()].append(msg)
    consumed = consume(broker, [TopicPartition(topic, p, 0) for p in range(8)], len(records))
    assert Counter(m.value() for m in consumed) == Counter(r["value"] for r in records)
    for part, msgs in by_partition.items():
        # per key order is production order; offsets are dense
        assert sorted(m.offset() for m in msgs) == list(range(len(msgs)))
        batches = raw_batches(broker, topic, part)
        assert {b.producer_id for b in batches} != {-1}
        assert len({b.producer_id for b in batches}) == 1
        sequences = [b.base_sequence for b in batches]
        assert sequences == sorted(sequences) and sequences[0] == 0


def test_kafka_python_idempotent_by_default(broker: BrokerProcess) -> None:
    topic = "idempotent-kp"
    p = kafka.KafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=5)
    assert p.config["enable_idempotence"]
    futures = [p.send(topic, b"%d" % i, partition=0) for i in range(500)]
    p.flush(20)
    assert [f.get(10).offset for f in futures] == list(range(500))
    p.close()
    batches = raw_batches(broker, topic)
    assert all(b.producer_id >= 0 and b.producer_epoch >= 0 for b in batches)
    assert [c.value for c in kp_consume(broker, topic, [0], 500)] == [b"%d" % i for i in range(500)]


# ------------------------------------------------------------------------------------ many partitions


def test_32_partitions_keyed_everything_consumed_once(broker: BrokerProcess) -> None:
    topic = "wide"
    create_topic(broker, topic, 32)
    records = [{"key": b"user-%d" % (i % 500), "value": b"%d" % i} for i in range(6400)]
    reports = produce_all(producer(broker), topic, records)
    partition_of_key: dict[bytes, int] = {}
    for _, msg in reports:
        assert partition_of_key.setdefault(msg.key(), msg.partition()) == msg.partition()
    assert len(set(partition_of_key.values())) == 32  # 500 keys spread over every partition
    consumed = consume(broker, [TopicPartition(topic, p, 0) for p in range(32)], len(records))
    assert sorted(int(m.value()) for m in consumed) == list(range(len(records)))
    for m in consumed:
        assert partition_of_key[m.key()] == m.partition()
    # per partition, order of production is kept
    last: dict[bytes, int] = {}
    for m in consumed:
        assert int(m.value()) > last.get(m.key(), -1)
        last[m.key()] = int(m.value())
    kp = kp_consume(broker, topic, list(range(32)), len(records), timeout=30)
    assert sorted(int(c.value) for c in kp) == list(range(len(records)))


# ----------------------------------------------------------------------------- offsets for times, seek


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


def test_seek(broker: BrokerProcess) -> None:
    topic = "seekable"
    produce_all(producer(broker), topic, [{"value": b"%d" % i} for i in range(100)])
    c = ck_consumer(broker)
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        first = next_message(c, 10)
        assert first is not None and first.offset() == 0
        c.seek(TopicPartition(topic, 0, 73))
        got = []
        deadline = time.monotonic() + 10
        while len(got) < 27 and time.monotonic() < deadline:
            m = next_message(c, 0.5)
            if m is not None:
                assert m.error() is None, m.error()
                got.append(m)
        assert [m.offset() for m in got] == list(range(73, 100))
        assert [m.value() for m in got] == [b"%d" % i for i in range(73, 100)]
    finally:
        c.close()
    kc = kafka.KafkaConsumer(bootstrap_servers=broker.bootstrap, enable_auto_commit=False)
    try:
        tp = kafka.TopicPartition(topic, 0)
        kc.assign([tp])
        kc.seek(tp, 42)
        out: list = []
        deadline = time.monotonic() + 10
        while len(out) < 58 and time.monotonic() < deadline:
            out.extend(kc.poll(timeout_ms=500).get(tp, []))
        assert [r.offset for r in out] == list(range(42, 100))
    finally:
        kc.close()


# --------------------------------------------------------------------------------- fetch long polls


def _fetch_request(topic: str, offset: int, max_wait_ms: int) -> FetchRequest:
    return FetchRequest(replica_id=-1, max_wait_ms=max_wait_ms, min_bytes=1, max_bytes=1 << 20, topics=[
        FetchRequest.FetchTopic(topic=topic, partitions=[
            FetchRequest.FetchPartition(partition=0, fetch_offset=offset, partition_max_bytes=1 << 20)])])


def test_long_poll_is_woken_by_a_produce(broker: BrokerProcess) -> None:
    topic = "long-poll"
    ensure_topic(broker, topic)
    p = producer(broker)
    threading.Timer(0.5, lambda: (p.produce(topic, b"late"), p.flush(5))).start()
    with WireClient.connect(broker.bootstrap, timeout=20) as client:
        start = time.monotonic()
        r = client.request(_fetch_request(topic, 0, 10_000), 11)
        elapsed = time.monotonic() - start
    pd = r.responses[0].partitions[0]
    assert pd.error_code == 0 and pd.high_watermark == 1
    [batch] = list(iter_batches(bytes(pd.records)))
    assert [rec.value for rec in batch.records()] == [b"late"]
    assert 0.4 <= elapsed < 5, elapsed

    # the same through librdkafka: a consumer parked in a 5 s fetch gets a record produced later
    # well before that fetch would have timed out
    c = ck_consumer(broker, **{"fetch.wait.max.ms": 5000})
    try:
        c.assign([TopicPartition(topic, 0, 1)])
        assert next_message(c, 1.5) is None  # the consumer is now waiting in a long poll
        sent = time.monotonic()
        p.produce(topic, b"wake")
        p.flush(5)
        m = next_message(c, 10)
        latency = time.monotonic() - sent
        assert m is not None and m.value() == b"wake"
        assert latency < 3, latency
    finally:
        c.close()


def _cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_idle_fetch_waits_for_max_wait_without_spinning(broker: BrokerProcess) -> None:
    topic = "idle"
    ensure_topic(broker, topic)
    with WireClient.connect(broker.bootstrap) as client:
        for wait_ms in (300, 1000):
            start = time.monotonic()
            r = client.request(_fetch_request(topic, 0, wait_ms), 11)
            elapsed = time.monotonic() - start
            pd = r.responses[0].partitions[0]
            assert pd.error_code == 0 and not pd.records
            assert wait_ms / 1000 * 0.9 <= elapsed < wait_ms / 1000 + 1.5, (wait_ms, elapsed)
    assert broker.proc is not None
    c = ck_consumer(broker, **{"fetch.wait.max.ms": 200})
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        next_message(c, 1.0)
        cpu_before, wall_before = _cpu_seconds(broker.proc.pid), time.monotonic()
        assert next_message(c, 3.0) is None
        cpu = _cpu_seconds(broker.proc.pid) - cpu_before
        wall = time.monotonic() - wall_before
    finally:
        c.close()
    assert cpu < 0.5 * wall, f"broker used {cpu:.2f}s of CPU in {wall:.2f}s serving idle fetches"


# ------------------------------------------------------------------------------------ fetch sessions


class _Capture(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def test_kafka_python_fetch_sessions_over_many_polls(broker: BrokerProcess) -> None:
    topics = ["sessions-a", "sessions-b"]
    capture = _Capture()
    fetcher_log = logging.getLogger("kafka.consumer.fetcher")
    fetcher_log.addHandler(capture)
    old_level = fetcher_log.level
    fetcher_log.setLevel(logging.INFO)
    p = kafka.KafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=2)
    for t in topics:
        p.send(t, b"seed", partition=0).get(10)
    c = kafka.KafkaConsumer(bootstrap_servers=broker.bootstrap, enable_auto_commit=False, fetch_max_wait_ms=100)
    try:
        tps = [kafka.TopicPartition(t, 0) for t in topics]
        c.assign(tps)
        c.seek_to_beginning(*tps)
        got: dict[str, list[bytes]] = {t: [] for t in topics}
        expected: dict[str, list[bytes]] = {t: [b"seed"] for t in topics}
        for round_ in range(15):
            # only one topic gets news in most rounds: incremental responses omit the other
            for t in topics[: 1 + round_ % 2]:
                for i in range(5):
                    value = b"%s-%d-%d" % (t.encode(), round_, i)
                    expected[t].append(value)
                    p.send(t, value, partition=0)
            p.flush(10)
            deadline = time.monotonic() + 10
            while any(len(got[t]) < len(expected[t]) for t in topics) and time.monotonic() < deadline:
                for tp, records in c.poll(timeout_ms=200).items():
                    got[tp.topic].extend(r.value for r in records)
            assert got == expected
        handler = c._fetcher._session_handlers[0]  # kafka-python internals: the session state
        assert handler.next_metadata.session_id != 0, "the broker never opened a fetch session"
        assert handler.next_metadata.epoch > 10, "fetches did not go incremental"
        session_id = handler.next_metadata.session_id
        # drop one partition from the session (forgotten topics), keep fetching the other
        c.assign([tps[0]])
        c.seek(tps[0], len(expected[topics[0]]))
        for round_ in range(5):
            for t in topics:
                p.send(t, b"late-%d" % round_, partition=0)
            p.flush(10)
            late: list[bytes] = []
            deadline = time.monotonic() + 10
            while not late and time.monotonic() < deadline:
                for tp, records in c.poll(timeout_ms=200).items():
                    assert tp.topic == topics[0], "a forgotten partition was still fetched"
                    late.extend(r.value for r in records)
            assert late == [b"late-%d" % round_]
        assert handler.next_metadata.session_id == session_id, "the session was not kept"
        problems = [m for m in capture.messages if "invalid" in m or "unable to process" in m]
        assert problems == []
    finally:
        c.close()
        p.close()
        fetcher_log.removeHandler(capture)
        fetcher_log.setLevel(old_level)
