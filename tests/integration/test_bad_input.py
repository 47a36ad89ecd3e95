"""Hostile and unusual input: every bad frame closes only its own connection.

A live confluent-kafka producer and consumer (the "witness") keep their connections for the whole
module; after each bad input the witness must still produce and consume, without having been
disconnected, and the broker process must still be running.
"""

from __future__ import annotations

import json
import random
import socket
import struct
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from tests.integration.kafka_io import produce_batch
from tidelog.errors import ErrorCode
from tidelog.protocol import encode_request
from tidelog.protocol.api_keys import API_REGISTRY, ApiKey
from tidelog.protocol.messages import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    FetchRequest,
    InitProducerIdRequest,
    ListOffsetsRequest,
    MetadataRequest,
    ProduceRequest,
)
from tidelog.protocol.primitives import ZERO_UUID
from tidelog.records import LegacyMessageSetBuilder, build_batch
from tidelog.testing import BrokerProcess
from tidelog.testing.client import ConnectionClosed, WireClient

MAX_REQUEST_BYTES = 64 * 1024
BROKER_OVERRIDES = {"socket.request.max.bytes": str(MAX_REQUEST_BYTES)}


class Witness:
    """A producer and a consumer that must not notice anything."""

    topic = "witness"

    def __init__(self, broker: BrokerProcess) -> None:
        self.broker = broker
        self.stats: dict = {}
        self.producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0,
                                  "statistics.interval.ms": 100, "stats_cb": self._on_stats})
        self.consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "witness",
                                  "enable.auto.commit": False, "fetch.wait.max.ms": 100})
        self.sent = 0
        self.check()  # connects both, creates the topic
        self.consumer.assign([TopicPartition(self.topic, 0, 0)])
        assert self._next_message() == b"0"
        self.producer.poll(0.3)
        self.connects = self._connects()
        assert self.connects, "no statistics from the witness producer"

    def _on_stats(self, raw: str) -> None:
        self.stats = json.loads(raw)

    def _connects(self) -> dict[str, int]:
        # the connection to the broker itself (not the bootstrap one, which librdkafka drops)
        return {name: b["connects"] for name, b in self.stats.get("brokers", {}).items() if b["nodeid"] >= 0}

    def _next_message(self) -> bytes | None:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            m = self.consumer.poll(0.2)
            if m is not None and m.error() is None:
                return m.value()
        return None

    def check(self) -> None:
        assert self.broker.alive, "the broker process died"
        errors: list = []
        value = b"%d" % self.sent
        self.producer.produce(self.topic, value, partition=0, on_delivery=lambda err, _: errors.append(err))
        assert self.producer.flush(10) == 0
        assert errors == [None]
        self.sent += 1
        if self.sent > 1:
            assert self._next_message() == value
            self.producer.poll(0.25)  # fresh statistics
            assert self._connects() == self.connects, "the witness producer was disconnected"

    def close(self) -> None:
        self.consumer.close()
        self.producer.flush(5)


@pytest.fixture(scope="module")
def witness(broker: BrokerProcess) -> Iterator[Witness]:
    w = Witness(broker)
    yield w
    w.close()


def raw_request(api_key: int, version: int, correlation_id: int, body: bytes = b"", *,
                flexible: bool = False, client_id: bytes = b"bad-input") -> bytes:
    """A request frame with its size prefix, built by hand (header v1, or v2 when ``flexible``)."""
    header = struct.pack(">hhih", api_key, version, correlation_id, len(client_id)) + client_id
    if flexible:
        header += b"\x00"  # no tagged fields
    payload = header + body
    return struct.pack(">i", len(payload)) + payload


def connect(broker: BrokerProcess) -> WireClient:
    return WireClient.connect(broker.bootstrap, timeout=10)


# ------------------------------------------------------------------------------ malformed frames


@pytest.mark.parametrize("seed", range(5))
def test_random_garbage_after_a_valid_size_prefix(broker: BrokerProcess, witness: Witness, seed: int) -> None:
    rng = random.Random(seed)
    garbage = bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 300)))
    with connect(broker) as c:
        c.send_raw(struct.pack(">i", len(garbage)) + garbage)
        # garbage may happen to start like a real request; then nothing says the broker must close,
        # but it must not answer anything that is not a well-formed frame for that request
        try:
            closed = c.is_closed_by_peer(3)
        except ConnectionClosed:
            closed = True
        api_key = struct.unpack(">h", garbage[:2])[0] if len(garbage) >= 2 else -1
        if api_key not in {int(k) for k in ApiKey}:
            assert closed
    witness.check()


def test_known_api_with_a_garbage_body(broker: BrokerProcess, witness: Witness) -> None:
    for api_key, version in ((ApiKey.PRODUCE, 9), (ApiKey.FETCH, 11), (ApiKey.METADATA, 12)):
        with connect(broker) as c:
            c.send_raw(raw_request(api_key, version, 7, b"\xff" * 9, flexible=version >= 9))
            assert c.is_closed_by_peer(), f"{api_key.name} v{version} with a garbage body"
    witness.check()


def test_truncated_request(broker: BrokerProcess, witness: Witness) -> None:
    # a frame whose size is honest but whose body ends early: Metadata v1 claims 5 topics, has none
    with connect(broker) as c:
        c.send_raw(raw_request(ApiKey.METADATA, 1, 1, struct.pack(">i", 5)))
        assert c.is_closed_by_peer()
    # a frame shorter than a request header
    with connect(broker) as c:
        c.send_raw(struct.pack(">i", 3) + b"\x00\x03\x00")
        assert c.is_closed_by_peer()
    # half a frame, then the client goes away: the broker forgets the connection
    with connect(broker) as c:
        frame = raw_request(ApiKey.API_VERSIONS, 0, 1)
        c.send_raw(frame[: len(frame) // 2])
        assert not c.is_closed_by_peer(0.5), "a partial frame is not an error by itself"
        c.sock.shutdown(socket.SHUT_WR)
        assert c.is_closed_by_peer()
    witness.check()


def test_unknown_api_key(broker: BrokerProcess, witness: Witness) -> None:
    for api_key in (999, 32767, -1):
        with connect(broker) as c:
            c.send_raw(raw_request(api_key, 0, 1))
            assert c.is_closed_by_peer(), f"API key {api_key}"
    witness.check()


def test_negative_size(broker: BrokerProcess, witness: Witness) -> None:
    with connect(broker) as c:
        c.send_raw(struct.pack(">i", -5) + b"\x00" * 16)
        assert c.is_closed_by_peer()
    witness.check()


def test_frame_above_socket_request_max_bytes(broker: BrokerProcess, witness: Witness) -> None:
    # refused on the size prefix alone, before any body arrives
    with connect(broker) as c:
        c.send_raw(struct.pack(">i", MAX_REQUEST_BYTES + 1))
        assert c.is_closed_by_peer()
    with connect(broker) as c:
        c.send_raw(struct.pack(">i", 2**31 - 1))
        assert c.is_closed_by_peer()
    # a real Produce one byte over the limit, sent whole
    with connect(broker) as c:
        value = b"x" * MAX_REQUEST_BYTES
        req = ProduceRequest(acks=1, timeout_ms=5000, topic_data=[ProduceRequest.TopicProduceData(
            name=Witness.topic, partition_data=[ProduceRequest.PartitionProduceData(
                index=0, records=build_batch([(int(time.time() * 1000), None, value)]))])])
        try:
            c.send(req, 9)
        except ConnectionClosed:
            pass  # closed while we were still sending: fine
        assert c.is_closed_by_peer()
    # a frame of exactly socket.request.max.bytes is accepted (and answered)
    with connect(broker) as c:
        name_len = MAX_REQUEST_BYTES - 200
        while True:
            body = ApiVersionsRequest(client_software_name="x" * name_len, client_software_version="1")
            size = len(encode_request(body, 3, 1, c.client_id))
            if size == MAX_REQUEST_BYTES:
                break
            name_len += MAX_REQUEST_BYTES - size
        r = c.request(body, 3)
        assert r.error_code == 0
    witness.check()


# ------------------------------------------------------------------------------ versions


def test_api_versions_refuses_an_invalid_client_software_name(broker: BrokerProcess, witness: Witness) -> None:
    """KIP-511 (v3+): name and version are letters, digits, '.' and '-', starting and ending with a letter
    or digit; otherwise INVALID_REQUEST and no versions, as Kafka answers."""
    with connect(broker) as c:
        for name, version in (("bad name!", "1"), ("t", ""), ("t.", "1"), ("", "")):
            r = c.request(ApiVersionsRequest(client_software_name=name, client_software_version=version), 3)
            assert (r.error_code, r.api_keys) == (ErrorCode.INVALID_REQUEST, [])
        r = c.request(ApiVersionsRequest(client_software_name="a.b-c", client_software_version="1-2.3"), 3)
        assert r.error_code == 0 and r.api_keys
        assert c.request(ApiVersionsRequest(), 0).error_code == 0  # v0 has no names
    witness.check()


def test_api_versions_in_a_version_from_the_future(broker: BrokerProcess, witness: Witness) -> None:
    """KIP-511: header v0 and a v0 body with UNSUPPORTED_VERSION and the ApiVersions range only."""
    with connect(broker) as c:
        c.send_raw(raw_request(ApiKey.API_VERSIONS, 99, 4242, b"\x02a\x021\x00", flexible=True))
        frame = c.receive_frame()
        corr, body = struct.unpack_from(">i", frame)[0], frame[4:]
        assert corr == 4242
        assert body == struct.pack(">hi", ErrorCode.UNSUPPORTED_VERSION, 1) + struct.pack(">hhh", 18, 0, 5)
        decoded = ApiVersionsResponse.decode(body, 0, strict=True)
        assert decoded.error_code == ErrorCode.UNSUPPORTED_VERSION
        # the client retries at the version it was told; the connection stays usable
        r = c.request(ApiVersionsRequest(client_software_name="t", client_software_version="1"), 4)
        assert r.error_code == 0 and len(r.api_keys) > 1
    witness.check()


def test_unsupported_version_of_a_served_api(broker: BrokerProcess, witness: Witness) -> None:
    """Versions the codec knows but the handler does not serve get UNSUPPORTED_VERSION."""
    with connect(broker) as c:
        ranges = {k.api_key: (k.min_version, k.max_version) for k in c.request(ApiVersionsRequest(), 0).api_keys}
        metadata_max = ranges[ApiKey.METADATA][1]
        produce_max = ranges[ApiKey.PRODUCE][1]
        if metadata_max < MetadataRequest.MAX_VERSION:
            r = c.request(MetadataRequest(topics=None), metadata_max + 1)
            assert r.error_code == ErrorCode.UNSUPPORTED_VERSION
        if produce_max < ProduceRequest.MAX_VERSION:
            req = ProduceRequest(acks=1, timeout_ms=1000, topic_data=[ProduceRequest.TopicProduceData(
                name=Witness.topic, topic_id=ZERO_UUID, partition_data=[ProduceRequest.PartitionProduceData(
                    index=0, records=build_batch([(0, None, b"nope")]))])])
            r = c.request(req, produce_max + 1)
            [pr] = r.responses[0].partition_responses
            assert pr.error_code == ErrorCode.UNSUPPORTED_VERSION
        # InitProducerId v6 (KIP-939 two-phase commit) is in the codec, unstable in Kafka 4.4, not served
        init_max = ranges[ApiKey.INIT_PRODUCER_ID][1]
        assert init_max < InitProducerIdRequest.MAX_VERSION, "no codec-known, handler-unsupported version left to test"
        r = c.request(InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=1000), init_max + 1)
        assert r.error_code == ErrorCode.UNSUPPORTED_VERSION
        # the connection is still good
        assert c.request(MetadataRequest(topics=None), 1).brokers
    witness.check()


def test_api_the_broker_does_not_serve(broker: BrokerProcess, witness: Witness) -> None:
    """An API the codec knows but the broker does not advertise: the API's error response with
    UNSUPPORTED_VERSION when it has a top-level error code, otherwise the connection is closed."""
    with connect(broker) as c:
        served = {k.api_key for k in c.request(ApiVersionsRequest(), 0).api_keys}
    candidates = [ApiKey.VOTE, ApiKey.BEGIN_QUORUM_EPOCH, ApiKey.DESCRIBE_QUORUM, ApiKey.ENVELOPE,
                  ApiKey.BROKER_HEARTBEAT, ApiKey.ALLOCATE_PRODUCER_IDS]
    unserved = [k for k in candidates if k in API_REGISTRY and k not in served]
    assert unserved, "every candidate API is served now; pick others"
    for key in unserved[:3]:
        entry = API_REGISTRY[key]
        with connect(broker) as c:
            c.send(entry.request(), entry.min_version)
            try:
                _, response = c.receive()
            except ConnectionClosed:
                continue
            assert getattr(response, "error_code", None) == ErrorCode.UNSUPPORTED_VERSION, (key.name, response)
    witness.check()


# ------------------------------------------------------------------------------ record validation


def _end_offset(c: WireClient, topic: str) -> int:
    req = ListOffsetsRequest(replica_id=-1, topics=[ListOffsetsRequest.ListOffsetsTopic(name=topic, partitions=[
        ListOffsetsRequest.ListOffsetsPartition(partition_index=0, timestamp=-1)])])
    [p] = c.request(req, 1).topics[0].partitions
    assert p.error_code == 0
    return p.offset


def test_corrupt_crc_is_refused_and_the_log_unchanged(broker: BrokerProcess, witness: Witness) -> None:
    topic = "crc"
    now = int(time.time() * 1000)
    with connect(broker) as c:
        c.request(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=topic)]), 4)
        assert produce_batch(c, topic, build_batch([(now, b"k", b"good")])).error_code == 0
        before = _end_offset(c, topic)
        corrupt = bytearray(build_batch([(now, b"k", b"bad one"), (now, b"k", b"bad two")]))
        corrupt[-2] ^= 0x40  # a bit of the last record's value
        r = produce_batch(c, topic, bytes(corrupt))
        assert (r.error_code, r.base_offset) == (ErrorCode.CORRUPT_MESSAGE, -1)
        legacy = bytearray(_legacy(now))
        legacy[-1] ^= 0x01
        r = produce_batch(c, topic, bytes(legacy), version=2)
        assert r.error_code == ErrorCode.CORRUPT_MESSAGE
        assert _end_offset(c, topic) == before
        # the connection and the partition still work
        assert produce_batch(c, topic, build_batch([(now, b"k", b"good again")])).base_offset == before
    witness.check()


def _legacy(now: int) -> bytes:
    builder = LegacyMessageSetBuilder(1)
    builder.append(now, b"k", b"legacy")
    return builder.build()


def test_produce_request_format_rules(broker: BrokerProcess, witness: Witness) -> None:
    """Kafka's ProduceRequest.validateRecords: v3+ carries exactly one magic-2 batch; ZSTD needs v7."""
    from tidelog.records import CompressionType

    topic = "format"
    now = int(time.time() * 1000)
    with connect(broker) as c:
        c.request(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=topic)]), 4)
        zstd = build_batch([(now, None, b"z" * 100)], compression=CompressionType.ZSTD)
        assert produce_batch(c, topic, zstd, version=6).error_code == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
        assert produce_batch(c, topic, _legacy(now), version=3).error_code == ErrorCode.INVALID_RECORD
        two = build_batch([(now, None, b"a")]) + build_batch([(now, None, b"b")])
        assert produce_batch(c, topic, two, version=9).error_code == ErrorCode.INVALID_RECORD
        assert _end_offset(c, topic) == 0
        assert produce_batch(c, topic, zstd, version=7).error_code == 0
        assert produce_batch(c, topic, _legacy(now), version=2).error_code == 0
        assert _end_offset(c, topic) == 2
    witness.check()


def test_failed_acks_0_produce_closes_the_connection(broker: BrokerProcess, witness: Witness) -> None:
    """No response is expected for acks=0, so an error closes the connection (Kafka's way of telling
    the producer to refresh its metadata); a successful acks=0 produce leaves it open."""
    now = int(time.time() * 1000)

    def acks0(topic: str, partition: int = 0) -> ProduceRequest:
        return ProduceRequest(acks=0, timeout_ms=1000, topic_data=[ProduceRequest.TopicProduceData(
            name=topic, partition_data=[ProduceRequest.PartitionProduceData(
                index=partition, records=build_batch([(now, None, b"acks0")]))])])

    with connect(broker) as c:
        c.request(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="acks0")]), 4)
        c.send(acks0("acks0"), 9)
        assert c.request(ApiVersionsRequest(), 0).error_code == 0  # still open
        assert _end_offset(c, "acks0") == 1
        c.send(acks0("acks0", partition=7), 9)  # no such partition
        assert c.is_closed_by_peer()
    with connect(broker) as c:
        c.send(acks0("acks0-never-created"), 3)
        assert c.is_closed_by_peer()
    witness.check()


# ------------------------------------------------------------------------------ many connections


def test_200_concurrent_connections(broker: BrokerProcess, witness: Witness) -> None:
    clients = [connect(broker) for _ in range(200)]
    try:
        for i, c in enumerate(clients):
            c.send(ApiVersionsRequest(client_software_name=f"c{i}", client_software_version="1"), 3,
                   correlation_id=1000 + i)
        for i, c in enumerate(clients):
            corr, r = c.receive()
            assert corr == 1000 + i and r.error_code == 0 and len(r.api_keys) > 1
    finally:
        for c in clients:
            c.close()
    witness.check()


def test_200_connections_from_threads(broker: BrokerProcess, witness: Witness) -> None:
    failures: list[BaseException] = []

    def one(i: int) -> None:
        try:
            with connect(broker) as c:
                for version in (0, 3):
                    assert c.request(ApiVersionsRequest(client_software_name="t", client_software_version="1"),
                                     version).error_code == 0
        except BaseException as e:
            failures.append(e)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(200)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert failures == []
    witness.check()


def test_pipelined_requests_are_answered_in_order(broker: BrokerProcess, witness: Witness) -> None:
    topic = "pipeline"
    with connect(broker) as c:
        c.request(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=topic)]), 4)
        long_poll = FetchRequest(replica_id=-1, max_wait_ms=600, min_bytes=1, max_bytes=1 << 20, topics=[
            FetchRequest.FetchTopic(topic=topic, partitions=[
                FetchRequest.FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1 << 20)])])
        acks0 = ProduceRequest(acks=0, timeout_ms=1000, topic_data=[ProduceRequest.TopicProduceData(
            name=topic, partition_data=[ProduceRequest.PartitionProduceData(
                index=0, records=build_batch([(int(time.time() * 1000), None, b"fire and forget")]))])])
        # a long poll that really waits, then a request answered at once: the answers keep the order
        start = time.monotonic()
        first = c.send(long_poll, 11)
        second = c.send(ApiVersionsRequest(), 0)
        assert c.receive()[0] == first
        assert time.monotonic() - start >= 0.5, "the fetch should have waited for max_wait_ms"
        assert c.receive()[0] == second

        sent = []
        start = time.monotonic()
        for i in range(60):
            kind = i % 4
            if kind == 0:
                sent.append((c.send(long_poll, 11), "fetch"))
            elif kind == 1:
                sent.append((c.send(MetadataRequest(topics=None), 1), "metadata"))
            elif kind == 2:
                sent.append((c.send(ApiVersionsRequest(), 0), "api_versions"))
            else:
                c.send(acks0, 9)  # no response: the next ones must not wait for it
        received = [c.receive() for _ in sent]
        elapsed = time.monotonic() - start
    assert [corr for corr, _ in received] == [corr for corr, _ in sent]
    for (_, kind), (_, body) in zip(sent, received):
        assert type(body).__name__ == {"fetch": "FetchResponse", "metadata": "MetadataResponse",
                                       "api_versions": "ApiVersionsResponse"}[kind]
    # The acks=0 produces landed, so the long polls after the first found data at once.
    assert elapsed < 10


def test_idle_connection_is_closed(tmp_path: Path) -> None:
    with BrokerProcess(tmp_path, overrides={"connections.max.idle.ms": "1000"}) as b:
        idle = WireClient.connect(b.bootstrap)
        busy = WireClient.connect(b.bootstrap)
        stop = threading.Event()
        busy_errors: list[BaseException] = []

        def keep_busy() -> None:  # a request every 250 ms: never idle for long
            try:
                while not stop.is_set():
                    assert busy.request(ApiVersionsRequest(), 0).error_code == 0
                    time.sleep(0.25)
            except BaseException as e:
                busy_errors.append(e)

        thread = threading.Thread(target=keep_busy)
        thread.start()
        try:
            assert idle.request(ApiVersionsRequest(), 0).error_code == 0
            assert not idle.is_closed_by_peer(0.7), "closed before connections.max.idle.ms"
            assert idle.is_closed_by_peer(4), "still open long after connections.max.idle.ms"
            time.sleep(1.5)
        finally:
            stop.set()
            thread.join(5)
        assert busy_errors == [], "the busy connection was closed"
        assert busy.request(ApiVersionsRequest(), 0).error_code == 0
        idle.close()
        busy.close()
