"""Every compression codec through confluent-kafka and kafka-python against a real ``tidelog serve``:
keys, headers, tombstones and CreateTime timestamps round trip, batches are stored with the producer's
codec, LZ4 batches from our own builder reach librdkafka, and each client reads what the other wrote.
"""

from __future__ import annotations

import time

import kafka
import kafka.codec
import pytest
from confluent_kafka import TIMESTAMP_CREATE_TIME, TopicPartition

from tests.integration.kafka_io import (
    consume,
    ensure_topic,
    kp_consume,
    produce_all,
    produce_batch,
    producer,
    raw_batches,
)
from tidelog.protocol.api_keys import ApiKey
from tidelog.protocol.messages import ApiVersionsRequest
from tidelog.records import CompressionType, build_batch
from tidelog.testing import BrokerProcess
from tidelog.testing.client import WireClient

# One worker runs the whole module, on one broker (see conftest.py).
pytestmark = pytest.mark.xdist_group("codecs")

NOW_MS = int(time.time() * 1000)


def advertised(b: BrokerProcess) -> dict[int, tuple[int, int]]:
    with WireClient.connect(b.bootstrap) as client:
        r = client.request(ApiVersionsRequest(), 0)
    return {k.api_key: (k.min_version, k.max_version) for k in r.api_keys}


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
        pr = produce_batch(client, topic, batch)
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
