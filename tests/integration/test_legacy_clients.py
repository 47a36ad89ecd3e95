"""The oldest protocol versions end to end: what Kafka 0.8-0.10 clients sent, against a real broker.

The hand-rolled :class:`~tidelog.testing.client.WireClient` sends exact versions: ApiVersions v0,
Metadata v0, Produce v0-v2 with legacy message sets (magic 0 and 1, plain and gzip-wrapped), Fetch
v0-v3 reading them back (and reading v2 batches from confluent-kafka, down-converted), ListOffsets
v0. kafka-python pinned to old broker versions produces and consumes as an old client would.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import kafka
import pytest
from confluent_kafka import Producer

from tests.integration import kafka_io
from tests.integration.kafka_io import produce_batch
from tidelog.errors import ErrorCode
from tidelog.protocol.api_keys import ApiKey
from tidelog.protocol.messages import (
    ApiVersionsRequest,
    FetchRequest,
    FindCoordinatorRequest,
    ListOffsetsRequest,
    MetadataRequest,
    ProduceRequest,
)
from tidelog.records import (
    CompressionType,
    LegacyMessageSetBuilder,
    Record,
    iter_batches,
    iter_legacy_messages,
)
from tidelog.testing import BrokerProcess
from tidelog.testing.client import WireClient

NOW_MS = int(time.time() * 1000) - 60_000
LATEST, EARLIEST = -1, -2


@pytest.fixture(scope="module")
def client(broker: BrokerProcess) -> Iterator[WireClient]:
    with WireClient.connect(broker.bootstrap) as c:
        yield c


def metadata_once_led(client: WireClient, request: MetadataRequest):
    """Metadata v0 (which auto-creates), asked again while the topic is being created: until the controller
    has decided its leader the topic answers LEADER_NOT_AVAILABLE without partitions (as in Kafka); an old
    client asks again."""
    r = client.request(request, 0)
    deadline = time.monotonic() + 30
    while r.topics and (r.topics[0].error_code == ErrorCode.LEADER_NOT_AVAILABLE or any(
            p.error_code == ErrorCode.LEADER_NOT_AVAILABLE for p in r.topics[0].partitions)):
        assert time.monotonic() < deadline, "no leader in 30 s"
        time.sleep(0.1)
        r = client.request(request, 0)
    return r


def create_topic(client: WireClient, topic: str) -> None:
    r = metadata_once_led(client, MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=topic)]))
    assert [t.error_code for t in r.topics] == [0]


def fetch_all(client: WireClient, version: int, topic: str, offset: int = 0) -> tuple[list[Record], list[int]]:
    """Every record from ``offset`` to the high watermark with Fetch ``version``, and the magic of
    each entry received. (One fetch returns data from one log segment, so this loops.)"""
    records: list[Record] = []
    magics: list[int] = []
    for _ in range(100):
        req = FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, topics=[
            FetchRequest.FetchTopic(topic=topic, partitions=[
                FetchRequest.FetchPartition(partition=0, fetch_offset=offset, partition_max_bytes=1 << 20)])])
        [t] = client.request(req, version).responses
        [pd] = t.partitions
        assert pd.error_code == 0, ErrorCode(pd.error_code).name
        entries = list(iter_batches(bytes(pd.records or b"")))
        for entry in entries:
            magics.append(entry.magic)
            records.extend(r for r in entry.records() if r.offset >= offset)
        if records:
            offset = records[-1].offset + 1
        if offset >= pd.high_watermark:
            return records, magics
        assert entries, f"no data at offset {offset} below the high watermark {pd.high_watermark}"
    raise AssertionError("fetch made no progress")


def legacy_set(magic: int, compression: CompressionType, items: list[tuple[bytes | None, bytes | None]],
               base_ts: int = NOW_MS) -> bytes:
    builder = LegacyMessageSetBuilder(magic, compression=compression)
    for i, (key, value) in enumerate(items):
        builder.append(base_ts + i, key, value)
    return builder.build()


ITEMS = [(b"k0", b"v0"), (None, b"no key"), (b"k2", None), (b"k3", b"v3" * 100), (b"", b"")]


# ---------------------------------------------------------------------------------------- handshake


def test_api_versions_v0(client: WireClient) -> None:
    r = client.request(ApiVersionsRequest(), 0)
    assert r.error_code == 0
    ranges = {k.api_key: (k.min_version, k.max_version) for k in r.api_keys}
    assert ranges[ApiKey.API_VERSIONS] == (0, 5)
    for key in (ApiKey.PRODUCE, ApiKey.FETCH, ApiKey.LIST_OFFSETS, ApiKey.METADATA):
        assert ranges[key][0] == 0, f"{key.name} must be served from v0 for seed-era clients"


def test_metadata_v0(broker: BrokerProcess, client: WireClient) -> None:
    request = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="seed-meta")])
    r = metadata_once_led(client, request)
    [b] = r.brokers
    assert (b.host, b.port) == ("127.0.0.1", broker.port)
    [t] = r.topics
    assert (t.error_code, t.name) == (0, "seed-meta")
    [p] = t.partitions
    assert (p.error_code, p.partition_index, p.leader_id, p.replica_nodes, p.isr_nodes) == (0, 0, b.node_id, [0], [0])
    # v0: an empty topic list means every topic
    everything = client.request(MetadataRequest(topics=[]), 0)
    assert "seed-meta" in {t.name for t in everything.topics}


def test_group_coordinator_v0(client: WireClient, broker: BrokerProcess) -> None:
    """GroupCoordinator v0 (FindCoordinator v0, a group id, no key type) names this broker."""
    r = client.request(FindCoordinatorRequest(key="seed-era-group"), 0)
    assert (r.error_code, r.node_id, r.host, r.port) == (0, 0, "127.0.0.1", broker.port)


# ---------------------------------------------------------------------------- produce v0-v2, fetch v0-v3


CASES = [
    (0, 0, CompressionType.NONE),
    (0, 0, CompressionType.GZIP),
    (1, 0, CompressionType.NONE),
    (1, 0, CompressionType.GZIP),
    (2, 1, CompressionType.NONE),
    (2, 1, CompressionType.GZIP),
    (2, 1, CompressionType.SNAPPY),
]


@pytest.mark.parametrize(("produce_version", "magic", "codec"), CASES,
                         ids=[f"produce-v{v}-magic{m}-{c.name.lower()}" for v, m, c in CASES])
def test_legacy_produce_then_fetch_every_old_version(client: WireClient, produce_version: int, magic: int,
                                                     codec: CompressionType) -> None:
    topic = f"seed-p{produce_version}-m{magic}-{codec.name.lower()}"
    create_topic(client, topic)
    first = produce_batch(client, topic, legacy_set(magic, codec, ITEMS), version=produce_version, acks=1)
    assert (first.error_code, first.base_offset) == (0, 0)
    second = produce_batch(client, topic, legacy_set(magic, codec, ITEMS, NOW_MS + 100), version=produce_version,
                           acks=1)
    assert (second.error_code, second.base_offset) == (0, len(ITEMS))
    if produce_version == 2:
        assert second.log_append_time_ms == -1  # CreateTime topic
    expected = [(key, value) for key, value in ITEMS] * 2
    expected_ts = [NOW_MS + i for i in range(len(ITEMS))] + [NOW_MS + 100 + i for i in range(len(ITEMS))]

    for fetch_version in (0, 1, 2, 3):
        records, magics = fetch_all(client, fetch_version, topic)
        assert [r.offset for r in records] == list(range(len(expected)))
        assert [(r.key, r.value) for r in records] == expected
        wanted_magic = 0 if fetch_version <= 1 else 1
        assert set(magics) == {wanted_magic}, f"Fetch v{fetch_version} must get magic {wanted_magic}"
        if fetch_version <= 1:
            assert {r.timestamp for r in records} == {-1}
        elif magic == 1:
            assert [r.timestamp for r in records] == expected_ts
        else:  # magic-0 messages have no timestamp, and up-/down-conversion keeps it that way
            assert {r.timestamp for r in records} == {-1}
    # a modern fetch reads the same data as v2 batches
    records, magics = fetch_all(client, 11, topic)
    assert set(magics) == {2}
    assert [(r.offset, r.key, r.value) for r in records] == [(i, k, v) for i, (k, v) in enumerate(expected)]


def test_fetch_v0_v3_from_an_offset_inside_a_compressed_set(client: WireClient) -> None:
    topic = "seed-mid"
    create_topic(client, topic)
    assert produce_batch(client, topic, legacy_set(1, CompressionType.GZIP, ITEMS), version=2, acks=1).error_code == 0
    for version in (0, 1, 2, 3):
        records, _ = fetch_all(client, version, topic, offset=3)
        assert [(r.offset, r.key) for r in records] == [(3, b"k3"), (4, b"")]


def test_produce_v0_acks_0_gets_no_response(client: WireClient) -> None:
    topic = "seed-acks0"
    create_topic(client, topic)
    client.send(ProduceRequest(acks=0, timeout_ms=5000, topic_data=[ProduceRequest.TopicProduceData(
        name=topic, partition_data=[ProduceRequest.PartitionProduceData(
            index=0, records=legacy_set(0, CompressionType.NONE, ITEMS))])]), 0)
    # the next answer on this connection is the Fetch's: nothing was sent for the Produce
    records, _ = fetch_all(client, 0, topic)
    assert [(r.key, r.value) for r in records] == ITEMS


# ------------------------------------------------------------------------------ v2 batches, converted


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy"])
def test_confluent_kafka_batches_down_converted(broker: BrokerProcess, client: WireClient, codec: str) -> None:
    topic = f"seed-ck-{codec}"
    p = Producer({"bootstrap.servers": broker.bootstrap, "compression.type": codec, "linger.ms": 20})
    values = [b"value-%d-" % i + b"." * (i % 17) for i in range(60)]
    for i, v in enumerate(values):
        p.produce(topic, key=b"k%d" % (i % 3), value=v, timestamp=NOW_MS + i, headers=[("dropped", b"below v2")])
    assert p.flush(10) == 0
    for version in (0, 1, 2, 3):
        records, magics = fetch_all(client, version, topic)
        assert set(magics) == {0 if version <= 1 else 1}
        assert [(r.offset, r.key, r.value) for r in records] == [
            (i, b"k%d" % (i % 3), v) for i, v in enumerate(values)
        ]
        assert all(r.headers == [] for r in records)
        timestamps = [r.timestamp for r in records]
        assert timestamps == ([-1] * len(values) if version <= 1 else [NOW_MS + i for i in range(len(values))])


def test_zstd_batches_cannot_be_down_converted(broker: BrokerProcess, client: WireClient) -> None:
    """ZSTD has no magic 0/1 form: the partition answers UNSUPPORTED_COMPRESSION_TYPE (Kafka's error for
    pre-v10 fetches of ZSTD data), and the rest of the response is unaffected."""
    p = Producer({"bootstrap.servers": broker.bootstrap, "compression.type": "zstd", "linger.ms": 20})
    for i in range(10):
        p.produce("seed-zstd", value=b"zstd %d" % i * 10)
    assert p.flush(10) == 0
    create_topic(client, "seed-plain")
    assert produce_batch(client, "seed-plain", legacy_set(0, CompressionType.NONE, ITEMS), version=0,
                         acks=1).error_code == 0
    for version in (0, 1, 2, 3):
        req = FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, topics=[
            FetchRequest.FetchTopic(topic=t, partitions=[
                FetchRequest.FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1 << 20)])
            for t in ("seed-zstd", "seed-plain")])
        r = client.request(req, version)
        by_topic = {t.topic: t.partitions[0] for t in r.responses}
        assert by_topic["seed-zstd"].error_code == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
        assert by_topic["seed-zstd"].high_watermark == 10
        assert by_topic["seed-plain"].error_code == 0
        assert len(list(iter_legacy_messages(bytes(by_topic["seed-plain"].records)))) == len(ITEMS)


# ----------------------------------------------------------------------------------------- list offsets


def test_list_offsets_v0_old_style_offsets(client: WireClient) -> None:
    topic = "seed-offsets"
    create_topic(client, topic)

    def offsets(timestamp: int, max_num_offsets: int = 1) -> list[int]:
        req = ListOffsetsRequest(replica_id=-1, topics=[ListOffsetsRequest.ListOffsetsTopic(name=topic, partitions=[
            ListOffsetsRequest.ListOffsetsPartition(partition_index=0, timestamp=timestamp,
                                                    max_num_offsets=max_num_offsets)])])
        [t] = client.request(req, 0).topics
        [p] = t.partitions
        assert p.error_code == 0
        return p.old_style_offsets

    assert offsets(LATEST) == [0] and offsets(EARLIEST) == [0]
    for _ in range(3):
        assert produce_batch(client, topic, legacy_set(0, CompressionType.NONE, ITEMS), version=0, acks=1).error_code == 0
    assert offsets(LATEST) == [15]
    assert offsets(EARLIEST) == [0]
    assert offsets(LATEST, max_num_offsets=10) == [15, 0]  # the end, then the one segment's base
    # v1 answers with the single offset field instead
    req = ListOffsetsRequest(replica_id=-1, topics=[ListOffsetsRequest.ListOffsetsTopic(name=topic, partitions=[
        ListOffsetsRequest.ListOffsetsPartition(partition_index=0, timestamp=LATEST)])])
    [p] = client.request(req, 1).topics[0].partitions
    assert (p.error_code, p.offset) == (0, 15)


def test_list_offsets_v0_lists_segment_base_offsets(broker: BrokerProcess, client: WireClient) -> None:
    """Kafka's v0 answer for LATEST with max_num_offsets > 1: the end offset, then each segment's base
    offset, newest first (clients used it to step back through a log)."""
    topic = "seed-segments"
    kafka_io.create_topic(broker, topic, config={"segment.bytes": "1024"})
    for _ in range(6):  # each produce is ~400 bytes: a new segment every few
        assert produce_batch(client, topic, legacy_set(0, CompressionType.NONE, [(b"k", b"v" * 60)] * 5), version=0,
                             acks=1).error_code == 0

    def offsets(timestamp: int, max_num_offsets: int) -> list[int]:
        req = ListOffsetsRequest(replica_id=-1, topics=[ListOffsetsRequest.ListOffsetsTopic(name=topic, partitions=[
            ListOffsetsRequest.ListOffsetsPartition(partition_index=0, timestamp=timestamp,
                                                    max_num_offsets=max_num_offsets)])])
        [p] = client.request(req, 0).topics[0].partitions
        assert p.error_code == 0
        return p.old_style_offsets

    everything = offsets(LATEST, 100)
    assert everything[0] == 30 and everything[-1] == 0
    assert everything == sorted(set(everything), reverse=True) and len(everything) >= 3
    assert offsets(LATEST, 2) == everything[:2]
    assert offsets(EARLIEST, 100) == [0]


def test_unknown_topic_in_old_versions(client: WireClient) -> None:
    """Produce v0 to a topic that does not exist (produce never auto-creates): the partition error."""
    r = produce_batch(client, "seed-never-created", legacy_set(0, CompressionType.NONE, ITEMS), version=0, acks=1)
    assert r.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


# ------------------------------------------------------------------------------- kafka-python, pinned


@pytest.mark.parametrize("api_version", [(0, 10, 1), (0, 9)], ids=["0.10.1", "0.9"])
def test_kafka_python_pinned_to_an_old_broker_version(broker: BrokerProcess, api_version: tuple[int, ...]) -> None:
    """(0, 10, 1) makes kafka-python use message format v1 (Produce v2, Fetch v3, ListOffsets v1);
    (0, 9) message format v0 (Produce v1, Fetch v1): no timestamps."""
    topic = "seed-kp-" + "".join(map(str, api_version))
    p = kafka.KafkaProducer(bootstrap_servers=broker.bootstrap, api_version=api_version, linger_ms=5)
    futures = [p.send(topic, key=b"k%d" % i, value=b"v%d" % i, partition=0, timestamp_ms=NOW_MS + i)
               for i in range(30)]
    p.flush(10)
    assert [f.get(10).offset for f in futures] == list(range(30))
    p.close()
    c = kafka.KafkaConsumer(bootstrap_servers=broker.bootstrap, api_version=api_version, enable_auto_commit=False)
    try:
        tp = kafka.TopicPartition(topic, 0)
        c.assign([tp])
        c.seek_to_beginning(tp)
        got: list = []
        deadline = time.monotonic() + 15
        while len(got) < 30 and time.monotonic() < deadline:
            got.extend(c.poll(timeout_ms=300).get(tp, []))
        assert [(r.offset, r.key, r.value) for r in got] == [(i, b"k%d" % i, b"v%d" % i) for i in range(30)]
        if api_version >= (0, 10):
            assert [r.timestamp for r in got] == [NOW_MS + i for i in range(30)]
            assert c.end_offsets([tp])[tp] == 30
        else:
            assert {r.timestamp for r in got} == {None}
    finally:
        c.close()
