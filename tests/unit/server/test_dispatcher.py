"""The handler registry, ApiVersions derived from it, and the rules for bad requests."""

from __future__ import annotations

import errno
import struct

import pytest

from tidelog.config import BrokerConfig
from tidelog.errors import ErrorCode
from tidelog.protocol import ApiKey, decode_response, encode_request
from tidelog.protocol.api_keys import API_REGISTRY
from tidelog.protocol.messages import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    InitProducerIdRequest,
    ProduceRequest,
)
from tidelog.server.broker import Broker
from tidelog.server.context import RequestContext
from tidelog.server.dispatcher import CloseConnection, HandlerRegistry, handles
from tidelog.server.handlers.api_versions import ApiVersionsHandler

# The registry a broker builds. Building a broker reads and writes nothing, so the data dir is never made.
REGISTRY = Broker(BrokerConfig.from_props({"log.dirs": "/nonexistent/tidelog-never-created"})).handlers
dispatch = REGISTRY.dispatch
supported_versions = REGISTRY.supported_versions


def _no_context(header):  # handlers that need the broker are not called in these tests
    raise AssertionError("the handler should not run")


def _api_versions(version: int) -> ApiVersionsResponse:
    frame = encode_request(ApiVersionsRequest(client_software_name="t", client_software_version="1"), version, 9)
    d = dispatch(frame, lambda header: RequestContext(header, "test", "127.0.0.1"))
    return d.result


def test_every_advertised_version_is_within_the_codec_and_round_trips() -> None:
    for key, lo, hi in supported_versions():
        entry = API_REGISTRY[key]
        assert entry.min_version <= lo <= hi <= entry.max_version
        for v in range(lo, hi + 1):
            assert entry.response.decode(entry.response().encode(v), v) == entry.response()


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4, 5])
def test_api_versions_lists_the_registry(version: int) -> None:
    resp = _api_versions(version)
    listed = {(k.api_key, k.min_version, k.max_version) for k in resp.api_keys}
    assert listed == set(supported_versions())
    for needed in (ApiKey.PRODUCE, ApiKey.FETCH, ApiKey.METADATA, ApiKey.INIT_PRODUCER_ID):
        assert needed in REGISTRY
    produce = next(k for k in resp.api_keys if k.api_key == ApiKey.PRODUCE)
    assert produce.min_version == 0 and produce.max_version >= 10  # old librdkafka needs Produce from 0


@pytest.mark.parametrize("version", [3, 4])
def test_api_versions_finalizes_transaction_version_2(version: int) -> None:
    # The Java client takes KIP-890's protocol (EndTxn v5, Produce v12) from this finalized feature.
    resp = _api_versions(version)
    assert resp.finalized_features_epoch >= 0
    # group.version 1: KIP-848's consumer groups (Kafka 4.4 finalizes it too; tests/oracle checks the levels).
    # metadata.version: 4.4-IV2 (33), the protocol Tidelog speaks (cluster/features.py).
    # share.version 2: share groups and their dead-letter queues (KIP-932, KIP-1191), on by default as in Kafka 4.4.
    # streams.version 1: streams groups (KIP-1071), served by default as in Kafka 4.4.
    assert [(f.name, f.min_version_level, f.max_version_level) for f in resp.finalized_features] == [
        ("metadata.version", 33, 33), ("group.version", 1, 1), ("transaction.version", 2, 2),
        ("share.version", 2, 2), ("streams.version", 1, 1)]
    # v3 leaves out supported features whose lowest level is 0, as Kafka's schema says.
    supported = [(f.name, f.min_version, f.max_version) for f in resp.supported_features]
    assert supported == ([("metadata.version", 33, 33), ("group.version", 0, 1), ("transaction.version", 0, 2),
                          ("share.version", 0, 2), ("streams.version", 0, 1)] if version >= 4
                         else [("metadata.version", 33, 33)])
    versions = {k.api_key: k.max_version for k in resp.api_keys}
    assert versions[ApiKey.END_TXN] == 5 and versions[ApiKey.PRODUCE] == 13


def test_api_versions_above_range_gets_kip511_v0_body() -> None:
    # A v6 request cannot be decoded by the codec, but its header can: answer with a v0 body.
    frame = struct.pack(">hhih", 18, 6, 77, 1) + b"c" + b"\x00" + b"\x00" * 4
    d = dispatch(frame, _no_context)
    assert d.api_version == 0 and d.correlation_id == 77
    assert d.result.error_code == ErrorCode.UNSUPPORTED_VERSION
    assert [(k.api_key, k.min_version, k.max_version) for k in d.result.api_keys] == [(18, 0, 5)]


MINE = object()  # this broker's cluster id / node id
CLUSTER_ID, NODE_ID = "cluster-4QUxMTY0", 3


@pytest.mark.parametrize(("cluster_id", "node_id", "code"), [
    (MINE, MINE, ErrorCode.NONE),
    (None, -1, ErrorCode.NONE),  # neither: no check
    ("another-cluster", MINE, ErrorCode.REBOOTSTRAP_REQUIRED),
    (MINE, 99, ErrorCode.REBOOTSTRAP_REQUIRED),
    (MINE, -5, ErrorCode.REBOOTSTRAP_REQUIRED),
    ("", MINE, ErrorCode.REBOOTSTRAP_REQUIRED),
    (MINE, -1, ErrorCode.INVALID_REQUEST),  # one without the other
    (None, MINE, ErrorCode.INVALID_REQUEST),
    (None, -5, ErrorCode.INVALID_REQUEST),
])
def test_api_versions_v5_checks_the_cluster_and_node_meant(cluster_id, node_id, code: ErrorCode) -> None:
    # KIP-1242, with the answers Kafka 4.4 gives to each combination (probed against the oracle).
    registry = HandlerRegistry()
    registry.add(ApiVersionsHandler(registry, None, lambda: CLUSTER_ID, NODE_ID))
    request = ApiVersionsRequest(client_software_name="t", client_software_version="1",
                                 cluster_id=CLUSTER_ID if cluster_id is MINE else cluster_id,
                                 node_id=NODE_ID if node_id is MINE else node_id)
    d = registry.dispatch(encode_request(request, 5, 9), lambda header: RequestContext(header, "test", "127.0.0.1"))
    assert d.result.error_code == code
    assert bool(d.result.api_keys) == (code == ErrorCode.NONE)


def test_unknown_key_and_garbage_close_the_connection() -> None:
    with pytest.raises(CloseConnection):
        dispatch(struct.pack(">hhih", 1000, 0, 1, -1), _no_context)
    with pytest.raises(CloseConnection):
        dispatch(b"\x00", _no_context)
    with pytest.raises(CloseConnection):
        dispatch(struct.pack(">hhih", 3, 1, 1, -1) + b"\x7f\xff\xff\xff", _no_context)  # Metadata v1, huge array


def test_version_known_to_codec_but_not_served_gets_unsupported_version() -> None:
    if REGISTRY[ApiKey.PRODUCE].max_version >= 13:
        pytest.skip("every Produce version is served")
    body = ProduceRequest(acks=1, timeout_ms=1, topic_data=[ProduceRequest.TopicProduceData(
        partition_data=[ProduceRequest.PartitionProduceData(index=0, records=b"")])])
    frame = encode_request(body, 13, 5)
    d = dispatch(frame, _no_context)
    codes = [p.error_code for t in d.result.responses for p in t.partition_responses]
    assert codes == [ErrorCode.UNSUPPORTED_VERSION]
    _, decoded = decode_response(b"".join([struct.pack(">i", 5), b"\x00", d.result.encode(13)]), ApiKey.PRODUCE, 13)
    assert decoded.responses[0].partition_responses[0].error_code == ErrorCode.UNSUPPORTED_VERSION


def test_a_full_disk_a_handler_meets_answers_kafka_storage_error_once_logged(caplog: pytest.LogCaptureFixture) -> None:
    class WritesToAFullDisk:  # a handler whose write the storage did not map to a Kafka error itself
        @handles(ApiKey.INIT_PRODUCER_ID, 0, 4)
        def init_producer_id(self, ctx, request):
            raise OSError(errno.ENOSPC, "No space left on device", "/nowhere/tidelog-metadata.json.tmp")

    registry = HandlerRegistry()
    registry.add(WritesToAFullDisk())
    request = InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=1000)
    for _ in range(3):
        d = registry.dispatch(encode_request(request, 4, 1), lambda header: RequestContext(header, "test", "127.0.0.1"))
        assert d.result.error_code == ErrorCode.KAFKA_STORAGE_ERROR
    assert not [r for r in caplog.records if r.exc_info]  # no traceback
    assert len([r for r in caplog.records if "KAFKA_STORAGE_ERROR" in r.getMessage()]) <= 1
