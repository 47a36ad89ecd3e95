"""Golden frames: bytes real clients sent and responses independent encoders wrote must round-trip.

The files under ``tests/data/frames`` come from ``python -m tools.capture_frames`` (see the README there):

* ``confluent-kafka/`` and ``kafka-python/`` ``*_request_v<N>_<n>.bin``: request frames (header + body,
  no size prefix) captured from the real clients;
* ``kio/`` and ``kafka-python/`` ``*_response_v<N>_<n>.bin``: response frames (header + body, no size
  prefix) written by kio's and kafka-python's encoders, never by Tidelog's.

Each file must decode with our codec, strictly (no bytes left over), and encode back to the same bytes.
The one exception is a client bug, not ours: librdkafka's "all topics" Metadata request (v9+) keeps
the 4-byte placeholder of the topics count instead of a 1-byte varint (confluentinc/librdkafka#5049).
Kafka reads it as null topics, allow_auto_topic_creation=false, no tags, and ignores the 3 bytes left
over; the broker must therefore decode requests leniently. ``_trailing_client_bytes`` finds such frames.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import crc32c
import pytest

from tidelog.protocol import (
    API_REGISTRY,
    ApiKey,
    api_entry,
    decode_request,
    decode_request_header,
    decode_response,
    encode_request,
    encode_response,
)
from tidelog.protocol.api_keys import response_header_version
from tidelog.protocol.exceptions import MalformedMessageError
from tidelog.protocol.messages import ResponseHeader

FRAMES = Path(__file__).resolve().parents[2] / "data" / "frames"
NAME = re.compile(r"(?P<api>[a-z_]+)_(?P<kind>request|response)_v(?P<version>\d+)_(?P<n>\d+)\.bin")
API_KEYS = {re.sub(r"(?<!^)(?=[A-Z])", "_", e.name).lower(): key for key, e in API_REGISTRY.items()}

TOPIC = "golden"
RESPONSE_CORRELATION_ID = 7  # what tools/capture_frames gives every encoded response
CLIENT_IDS = {"confluent-kafka": "rdkafka", "kafka-python": "kafka-python"}  # prefixes of header client_id

#: Files per folder when they were committed; fewer means a file went missing.
MIN_FILES = {"confluent-kafka": 52, "kafka-python": 124, "kio": 81}

#: Codec bugs found by these files, keyed by the file's path under FRAMES: each one runs as a strict
#: xfail until the generator is fixed. Empty: every committed frame round-trips.
KNOWN_CODEC_BUGS: dict[str, str] = {}


@dataclass(frozen=True)
class Golden:
    path: Path
    client: str
    api_key: int
    kind: str
    version: int
    n: int

    @property
    def id(self) -> str:
        return f"{self.client}/{self.path.name}"

    def read(self) -> bytes:
        return self.path.read_bytes()


def _goldens() -> list[Golden]:
    found = []
    for path in sorted(FRAMES.glob("*/*.bin")):
        if path.parent.name.startswith("tubemq-"):
            continue  # TubeMQ's frames, read by tests/unit/protocol/tubemq/test_golden.py
        m = NAME.fullmatch(path.name)
        assert m, f"unexpected file name {path}"
        found.append(
            Golden(path, path.parent.name, API_KEYS[m["api"]], m["kind"], int(m["version"]), int(m["n"]))
        )
    return found


GOLDENS = _goldens()
REQUESTS = [g for g in GOLDENS if g.kind == "request"]
RESPONSES = [g for g in GOLDENS if g.kind == "response"]


def _params(goldens: list[Golden]) -> list:
    return [
        pytest.param(
            g,
            id=g.id,
            marks=[pytest.mark.xfail(strict=True, reason=KNOWN_CODEC_BUGS[g.id])] if g.id in KNOWN_CODEC_BUGS else [],
        )
        for g in goldens
    ]


def _trailing_client_bytes(golden: Golden, body: bytes) -> int:
    """Bytes a client bug leaves after a request body (0 for a well-formed request)."""
    librdkafka_5049 = (
        golden.client == "confluent-kafka"
        and golden.api_key == ApiKey.METADATA
        and golden.version >= 9
        and len(body) == 7
        and body.startswith(b"\0\0\0\0")
    )
    return 3 if librdkafka_5049 else 0


def _by(client: str, api_key: int, kind: str = "request") -> list[Golden]:
    return [g for g in GOLDENS if g.client == client and g.api_key == api_key and g.kind == kind]


# -- the folder ------------------------------------------------------------------------------------------


def test_no_golden_file_went_missing() -> None:
    counts = {client: sum(1 for g in GOLDENS if g.client == client) for client in MIN_FILES}
    short = {client: f"{counts[client]} < {n}" for client, n in MIN_FILES.items() if counts[client] < n}
    assert not short, f"golden files missing: {short}"
    assert set(KNOWN_CODEC_BUGS) <= {g.id for g in GOLDENS}


def test_folder_stays_small() -> None:
    assert sum(g.path.stat().st_size for g in GOLDENS) < 1024 * 1024


@pytest.mark.parametrize(
    ("client", "api_key"),
    [
        (client, key)
        for client in ("confluent-kafka", "kafka-python")
        for key in (
            ApiKey.API_VERSIONS, ApiKey.METADATA, ApiKey.PRODUCE, ApiKey.FETCH, ApiKey.LIST_OFFSETS,
            ApiKey.FIND_COORDINATOR, ApiKey.JOIN_GROUP, ApiKey.SYNC_GROUP, ApiKey.HEARTBEAT, ApiKey.LEAVE_GROUP,
            ApiKey.OFFSET_COMMIT, ApiKey.OFFSET_FETCH, ApiKey.INIT_PRODUCER_ID,
        )
    ],
)
def test_every_client_api_has_captured_requests(client: str, api_key: int) -> None:
    assert _by(client, api_key), f"no {api_entry(api_key).name} request captured from {client}"


@pytest.mark.parametrize("client", ["confluent-kafka", "kafka-python"])
def test_requests_cover_classic_and_flexible_encodings(client: str) -> None:
    """Both broker profiles of the capture left frames: Kafka 2.3-like (classic) and current (flexible)."""
    for key in (ApiKey.PRODUCE, ApiKey.FETCH, ApiKey.METADATA, ApiKey.OFFSET_COMMIT, ApiKey.INIT_PRODUCER_ID):
        flexible = {api_entry(key).is_flexible(g.version) for g in _by(client, key)}
        assert flexible == {False, True}, api_entry(key).name


def test_independent_encoders_agree() -> None:
    """kio and kafka-python wrote the same contents: where both have a file, the bytes must agree."""
    kio = {g.path.name: g for g in GOLDENS if g.client == "kio"}
    both = [g for g in GOLDENS if g.client == "kafka-python" and g.kind == "response" and g.path.name in kio]
    assert len(both) >= 70
    for g in both:
        assert g.read() == kio[g.path.name].read(), g.path.name


# -- round trips -------------------------------------------------------------------------------------


@pytest.mark.parametrize("golden", _params(REQUESTS))
def test_request_roundtrip(golden: Golden) -> None:
    data = golden.read()
    request = decode_request(data)
    assert (request.api_key, request.api_version) == (golden.api_key, golden.version)
    header, body_start = decode_request_header(data)
    trailing = _trailing_client_bytes(golden, data[body_start:])
    cls = api_entry(golden.api_key).request
    body = cls.decode(memoryview(data)[body_start : len(data) - trailing], golden.version, strict=True)
    assert body == request.body
    again = encode_request(request.body, golden.version, header.correlation_id, header.client_id)
    assert again == data[: len(data) - trailing]
    if trailing:
        with pytest.raises(MalformedMessageError, match=f"{trailing} unexpected bytes"):
            cls.decode(memoryview(data)[body_start:], golden.version, strict=True)


def test_librdkafka_all_topics_metadata_request_is_read_as_kafka_reads_it() -> None:
    """confluentinc/librdkafka#5049: keep one such frame, and read it leniently as Kafka does."""
    quirky = []
    for g in _by("confluent-kafka", ApiKey.METADATA):
        data = g.read()
        _, body_start = decode_request_header(data)
        if _trailing_client_bytes(g, data[body_start:]):
            assert data[body_start:] == b"\0\0\0\0\x01\0\0"  # placeholder, auto-create true, no auth ops, no tags
            quirky.append(decode_request(data).body)
    assert quirky, "AdminClient.list_topics should have sent an all-topics Metadata request"
    for body in quirky:
        assert body.topics is None  # all topics
        assert body.allow_auto_topic_creation is False  # read from the placeholder, as Kafka reads it


@pytest.mark.parametrize("golden", _params(RESPONSES))
def test_response_roundtrip(golden: Golden) -> None:
    data = golden.read()
    correlation_id, body = decode_response(data, golden.api_key, golden.version)
    assert correlation_id == RESPONSE_CORRELATION_ID
    _, body_start = ResponseHeader.decode_from(data, 0, response_header_version(golden.api_key, golden.version))
    strict = api_entry(golden.api_key).response.decode(memoryview(data)[body_start:], golden.version, strict=True)
    assert strict == body
    assert encode_response(body, golden.version, correlation_id) == len(data).to_bytes(4, "big") + data


# -- what the clients sent -------------------------------------------------------------------------------


@pytest.mark.parametrize("golden", _params(REQUESTS))
def test_request_header_names_the_client(golden: Golden) -> None:
    header, _ = decode_request_header(golden.read())
    assert header.client_id is not None
    assert header.client_id.startswith(CLIENT_IDS[golden.client])


@pytest.mark.parametrize(
    ("client", "first", "retry", "software"),
    [("confluent-kafka", 3, 0, "confluent-kafka-python"), ("kafka-python", 4, 2, "kafka-python")],
)
def test_api_versions_requests(client: str, first: int, retry: int, software: str) -> None:
    """client-compat.md 1.1: librdkafka opens with v3, kafka-python with v4.

    Against a broker that only knows ApiVersions 0-2 (KIP-511 error answer, v0 body), librdkafka
    retries with v0 (it reads the v0 body's array count as a compact one and finds no list) and
    kafka-python with v2.
    """
    versions = sorted({g.version for g in _by(client, ApiKey.API_VERSIONS)})
    assert versions == sorted({first, retry})
    for g in _by(client, ApiKey.API_VERSIONS):
        body = decode_request(g.read()).body
        if g.version >= 3:
            assert body.client_software_name == software
            assert body.client_software_version


def _batches(records: memoryview | bytes | None) -> list[bytes]:
    data = bytes(records or b"")
    batches, pos = [], 0
    while pos < len(data):
        size = 12 + int.from_bytes(data[pos + 8 : pos + 12], "big")
        batches.append(data[pos : pos + size])
        pos += size
    assert pos == len(data), "records end inside a batch"
    return batches


def _produced_batches(client: str) -> list[bytes]:
    batches = []
    for g in _by(client, ApiKey.PRODUCE):
        for topic in decode_request(g.read()).body.topic_data:
            assert topic.name == TOPIC
            for partition in topic.partition_data:
                batches += _batches(partition.records)
    return batches


@pytest.mark.parametrize(
    ("client", "codecs"),
    [("confluent-kafka", {0, 1, 2, 3, 4}), ("kafka-python", {0, 1})],  # none gzip snappy lz4 zstd
)
def test_produce_requests_carry_v2_record_batches(client: str, codecs: set[int]) -> None:
    batches = _produced_batches(client)
    assert batches
    for batch in batches:
        assert batch[16] == 2, "magic"
        assert int.from_bytes(batch[17:21], "big") == crc32c.crc32c(batch[21:]), "CRC-32C"
    assert {int.from_bytes(b[21:23], "big") & 0x7 for b in batches} == codecs


def test_idempotent_producers_send_producer_ids() -> None:
    def producer_ids(client: str) -> set[int]:
        return {int.from_bytes(b[43:51], "big", signed=True) for b in _produced_batches(client)}

    assert producer_ids("confluent-kafka") > {-1}  # enable.idempotence only on one of its producers
    assert -1 not in producer_ids("kafka-python")  # idempotent by default against a "3.7" broker


def test_fetch_requests_name_topics_as_their_version_requires() -> None:
    for g in _by("confluent-kafka", ApiKey.FETCH) + _by("kafka-python", ApiKey.FETCH):
        for topic in decode_request(g.read()).body.topics:
            if g.version >= 13:
                assert topic.topic_id.int != 0
            else:
                assert topic.topic == TOPIC


def test_join_group_requests_offer_consumer_protocols() -> None:
    for client in ("confluent-kafka", "kafka-python"):
        for g in _by(client, ApiKey.JOIN_GROUP):
            body = decode_request(g.read()).body
            assert body.protocol_type == "consumer"
            assert "range" in {p.name for p in body.protocols}


# -- what the independent encoders wrote ---------------------------------------------------------------


def test_api_versions_responses() -> None:
    for g in [g for g in RESPONSES if g.api_key == ApiKey.API_VERSIONS]:
        _, body = decode_response(g.read(), g.api_key, g.version)
        if body.error_code:  # KIP-511 answer: v0 body with only the ApiVersions range
            assert (g.version, body.error_code) == (0, 35)
            assert [(k.api_key, k.min_version, k.max_version) for k in body.api_keys] == [(18, 0, 4)]
            continue
        assert {k.api_key for k in body.api_keys} >= {0, 1, 3, 18}
        if g.version >= 3:  # tagged fields
            assert body.finalized_features_epoch == 7
            assert [f.name for f in body.supported_features] == ["metadata.version"]


def test_fetch_responses_carry_the_record_batch() -> None:
    for g in [g for g in RESPONSES if g.api_key == ApiKey.FETCH]:
        _, body = decode_response(g.read(), g.api_key, g.version)
        (topic,) = body.responses
        first, second = topic.partitions
        (batch,) = _batches(first.records)
        assert batch[16] == 2
        assert int.from_bytes(batch[17:21], "big") == crc32c.crc32c(batch[21:])
        if g.version >= 12:  # tagged field
            assert (second.current_leader.leader_id, second.current_leader.leader_epoch) == (2, 6)


def test_metadata_responses() -> None:
    for g in [g for g in RESPONSES if g.api_key == ApiKey.METADATA]:
        _, body = decode_response(g.read(), g.api_key, g.version)
        assert [b.node_id for b in body.brokers] == [1, 2]
        assert body.brokers[0].rack == ("rack-a" if g.version >= 1 else None)
        golden, missing = body.topics
        assert (golden.name, missing.name, missing.error_code) == (TOPIC, "missing", 3)
        assert [p.isr_nodes for p in golden.partitions] == [[1, 2], [2]]
        assert (golden.topic_id.int != 0) == (g.version >= 10)
