"""The client side of the wire conversation (peer/wire.py), sans-IO: frames out, responses matched to
their requests by correlation id whatever their order, a response no request awaits or a frame size
that cannot be one refused, and the SASL exchange's requests and refusals."""

from __future__ import annotations

import struct

import pytest

from tidelog.errors import ErrorCode
from tidelog.peer.wire import MAX_RESPONSE_BYTES, Conversation, SaslRefused, UnexpectedResponse, sasl_exchange
from tidelog.protocol.headers import decode_request, encode_response
from tidelog.protocol.messages import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    MetadataRequest,
    MetadataResponse,
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)


def _answer(frame: bytes, body) -> bytes:
    """The broker's side: the response frame (without its size) to a request frame (with it)."""
    request = decode_request(frame[4:])
    return encode_response(body, request.header.request_api_version, request.header.correlation_id)[4:]


def test_responses_are_matched_to_their_requests_in_any_order() -> None:
    conversation = Conversation("peer-test")
    c1, versions = conversation.request(ApiVersionsRequest(), 0)
    c2, metadata = conversation.request(MetadataRequest(topics=None), 12)
    assert (c1, c2) == (1, 2) and conversation.in_flight == {c1: (18, 0), c2: (3, 12)}
    assert struct.unpack_from(">i", versions)[0] == len(versions) - 4
    got_metadata = conversation.response(_answer(metadata, MetadataResponse(cluster_id="c")))
    got_versions = conversation.response(_answer(versions, ApiVersionsResponse(error_code=0)))
    assert got_metadata[0] == c2 and isinstance(got_metadata[1], MetadataResponse)
    assert got_metadata[1].cluster_id == "c"
    assert got_versions[0] == c1 and isinstance(got_versions[1], ApiVersionsResponse)
    assert conversation.in_flight == {}


def test_a_response_no_request_awaits_and_impossible_sizes_are_refused() -> None:
    conversation = Conversation("peer-test")
    _, frame = conversation.request(ApiVersionsRequest(), 0)
    answer = _answer(frame, ApiVersionsResponse())
    conversation.response(answer)
    with pytest.raises(UnexpectedResponse, match="correlation id 1"):
        conversation.response(answer)  # answered twice
    assert conversation.frame_size(struct.pack(">i", 10)) == 10
    for size in (-1, 3, MAX_RESPONSE_BYTES + 1):
        with pytest.raises(ConnectionError):
            conversation.frame_size(struct.pack(">i", size))


def test_a_given_correlation_id_is_used() -> None:
    conversation = Conversation(None)
    corr, frame = conversation.request(ApiVersionsRequest(), 0, correlation_id=-7)
    assert corr == -7 and decode_request(frame[4:]).header.correlation_id == -7


def test_the_sasl_exchange_starts_with_the_handshake_and_reports_a_refusal() -> None:
    exchange = sasl_exchange("SCRAM-SHA-256", "broker", "secret")
    handshake = next(exchange)
    assert isinstance(handshake, SaslHandshakeRequest) and handshake.mechanism == "SCRAM-SHA-256"
    first = exchange.send(SaslHandshakeResponse(error_code=0, mechanisms=["SCRAM-SHA-256"]))
    assert isinstance(first, SaslAuthenticateRequest) and first.auth_bytes.startswith(b"n,,n=broker,r=")
    refused = sasl_exchange("PLAIN", "broker", "secret")
    next(refused)
    with pytest.raises(SaslRefused) as e:
        refused.send(SaslHandshakeResponse(error_code=int(ErrorCode.UNSUPPORTED_SASL_MECHANISM),
                                           mechanisms=["SCRAM-SHA-512"]))
    assert (e.value.stage, e.value.enabled) == ("handshake", ("SCRAM-SHA-512",))
    assert "secret" not in str(e.value)


def test_a_refusal_reads_the_same_from_every_client_and_never_holds_the_password() -> None:
    """One message builder for the CLI's connection and the broker-to-broker client (each adds where)."""
    refused = sasl_exchange("PLAIN", "broker", "secret")
    next(refused)
    with pytest.raises(SaslRefused) as handshake:
        refused.send(SaslHandshakeResponse(error_code=int(ErrorCode.UNSUPPORTED_SASL_MECHANISM),
                                           mechanisms=["SCRAM-SHA-512", "SCRAM-SHA-256"]))
    assert handshake.value.explain(" at 127.0.0.1:9092") == (
        "SaslHandshake for PLAIN at 127.0.0.1:9092 answered UNSUPPORTED_SASL_MECHANISM "
        "(enabled there: SCRAM-SHA-512, SCRAM-SHA-256)")
    refused = sasl_exchange("PLAIN", "broker", "secret")
    next(refused)
    refused.send(SaslHandshakeResponse(error_code=0, mechanisms=["PLAIN"]))
    with pytest.raises(SaslRefused) as authenticate:
        refused.send(SaslAuthenticateResponse(error_code=int(ErrorCode.SASL_AUTHENTICATION_FAILED),
                                              error_message="Authentication failed: Invalid username or password"))
    text = authenticate.value.explain(" on listener INTERNAL")
    assert text == ("SASL PLAIN authentication as broker on listener INTERNAL failed: SASL_AUTHENTICATION_FAILED: "
                    "Authentication failed: Invalid username or password")
    assert "secret" not in text
    assert SaslRefused("client", "SCRAM-SHA-256", "alice", message="the server's signature does not verify").explain(
    ) == "SASL SCRAM-SHA-256 authentication as alice failed: the server's signature does not verify"
