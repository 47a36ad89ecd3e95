"""Header versions, request/response frames, framing, and the API registry."""

from __future__ import annotations

import struct

import pytest

from tidelog.protocol import (
    API_REGISTRY,
    ApiKey,
    FrameDecoder,
    FrameTooLargeError,
    MalformedMessageError,
    UnknownApiKeyError,
    UnsupportedVersionError,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    frame,
)
from tidelog.protocol.api_keys import request_header_version, response_header_version
from tidelog.protocol.messages import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    FetchResponse,
    MetadataRequest,
    ProduceRequest,
)


def test_header_versions_follow_flexible_versions() -> None:
    assert request_header_version(ApiKey.PRODUCE, 8) == 1
    assert request_header_version(ApiKey.PRODUCE, 9) == 2
    assert response_header_version(ApiKey.PRODUCE, 8) == 0
    assert response_header_version(ApiKey.PRODUCE, 9) == 1
    assert request_header_version(ApiKey.CONTROLLED_SHUTDOWN, 0) == 0
    # ApiVersions responses always use header v0 (KIP-511), even though v3+ bodies are flexible.
    assert request_header_version(ApiKey.API_VERSIONS, 3) == 2
    assert response_header_version(ApiKey.API_VERSIONS, 3) == 0


def test_request_frame_layout_v2_header_keeps_classic_client_id() -> None:
    body = ApiVersionsRequest(client_software_name="tidelog", client_software_version="1")
    data = encode_request(body, 3, correlation_id=42, client_id="cid")
    # api_key, api_version, correlation_id, client_id as int16-length string, then an empty tag section
    assert data[:13] == struct.pack(">hhih", 18, 3, 42, 3) + b"cid"
    assert data[13] == 0
    req = decode_request(data)
    assert req.header.client_id == "cid"
    assert req.api_key == ApiKey.API_VERSIONS and req.api_version == 3
    assert req.body == body


def test_api_versions_response_has_no_header_tag_byte() -> None:
    resp = ApiVersionsResponse(api_keys=[ApiVersionsResponse.ApiVersion(api_key=0, min_version=0, max_version=9)])
    data = encode_response(resp, 3, correlation_id=7)
    (size, corr) = struct.unpack_from(">ii", data)
    assert size == len(data) - 4 and corr == 7
    # header v0: the body (error_code int16 = 0) follows the correlation id directly
    assert data[8:10] == b"\x00\x00"
    assert decode_response(data[4:], ApiKey.API_VERSIONS, 3) == (7, resp)


def test_kip511_v0_error_body_decodes_as_v0() -> None:
    resp = ApiVersionsResponse(
        error_code=35, api_keys=[ApiVersionsResponse.ApiVersion(api_key=18, min_version=0, max_version=4)]
    )
    body = resp.encode(0)
    assert body == struct.pack(">hi hhh", 35, 1, 18, 0, 4).replace(b" ", b"")
    assert ApiVersionsResponse.decode(body, 0, strict=True) == resp


def test_flexible_response_header_has_tags() -> None:
    data = encode_response(FetchResponse(), 12, correlation_id=1)
    assert data[8] == 0  # empty tagged-field section of response header v1


def test_unknown_api_key_and_bad_version() -> None:
    with pytest.raises(UnknownApiKeyError):
        decode_request(struct.pack(">hhih", 999, 0, 1, -1))
    with pytest.raises(UnsupportedVersionError):
        decode_request(struct.pack(">hhih", 3, 99, 1, -1) + b"\x00")
    with pytest.raises(UnsupportedVersionError):
        MetadataRequest().encode(99)
    with pytest.raises(MalformedMessageError):
        decode_request(b"\x00\x03")


def test_records_are_zero_copy_on_decode_and_encode() -> None:
    blob = bytes(range(256)) * 64  # 16 KiB
    req = ProduceRequest(
        acks=1,
        timeout_ms=5,
        topic_data=[
            ProduceRequest.TopicProduceData(
                name="t", partition_data=[ProduceRequest.PartitionProduceData(index=0, records=blob)]
            )
        ],
    )
    encoded = req.encode(9)
    decoded = ProduceRequest.decode(encoded, 9, strict=True)
    records = decoded.topic_data[0].partition_data[0].records
    assert isinstance(records, memoryview) and records.obj is not None and bytes(records) == blob
    bufs = req.encode_buffers(9)
    assert any(b is blob for b in bufs)
    assert b"".join(bufs) == encoded


def test_absent_non_ignorable_field_with_value_is_an_error() -> None:
    from tidelog.protocol import ProtocolEncodeError

    # ProduceRequest.TransactionalId exists from v3 and is not ignorable.
    with pytest.raises(ProtocolEncodeError):
        ProduceRequest(transactional_id="txn").encode(2)
    assert ProduceRequest(transactional_id="txn").encode(3)


def test_registry_covers_every_api_key() -> None:
    assert ApiKey.PRODUCE in API_REGISTRY and ApiKey.API_VERSIONS in API_REGISTRY
    for key, entry in API_REGISTRY.items():
        assert entry.api_key == key
        assert entry.request.API_KEY == key == entry.response.API_KEY
        assert entry.min_version <= entry.max_version
    assert len(API_REGISTRY) >= 90


def test_frame_decoder_splits_and_joins() -> None:
    payloads = [b"a" * 10, b"", b"bc" * 300]
    stream = b"".join(frame(p) for p in payloads)
    for step in (1, 3, 7, len(stream)):
        dec = FrameDecoder(max_frame_bytes=1000)
        out = []
        for i in range(0, len(stream), step):
            out.extend(dec.feed(stream[i : i + step]))
        assert out == payloads
        assert dec.buffered == 0


def test_frame_decoder_limits() -> None:
    with pytest.raises(FrameTooLargeError):
        FrameDecoder(max_frame_bytes=10).feed(frame(b"x" * 11))
    with pytest.raises(MalformedMessageError):
        FrameDecoder().feed(struct.pack(">i", -5))


def test_frames_are_writable_and_independent() -> None:
    dec = FrameDecoder(max_frame_bytes=1000)
    stream = frame(b"abc") + frame(b"") + frame(b"xyz" * 10)
    out = dec.feed(stream[:5]) + dec.feed(stream[5:9]) + dec.feed(stream[9:])
    assert out == [b"abc", b"", b"xyz" * 10]
    assert all(isinstance(f, bytearray) for f in out)
    out[0][0] = ord("z")  # the broker patches batches inside the frame
    assert out[0] == b"zbc" and dec.buffered == 0
