"""TubeMQ's RPC envelope: requests and responses round-trip for every method; what does not decode
(truncated, wrong flag, missing required fields, strings that are not UTF-8) is a MalformedRequestError
naming the problem; exception names follow the caller's protocol version."""

from __future__ import annotations

import pytest
from google.protobuf.message import Message
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.unit.protocol.tubemq.strategies import MESSAGE_CLASSES, message_of
from tidelog.protocol.tubemq.frame import Frame, FrameDecoder
from tidelog.protocol.tubemq.generated import broker_service_pb2 as broker_pb
from tidelog.protocol.tubemq.generated import rpc_pb2
from tidelog.protocol.tubemq.rpc import (
    METHODS,
    STANDBY_EXCEPTION,
    MalformedRequestError,
    Method,
    Service,
    Status,
    decode_body,
    decode_request,
    decode_response,
    encode_exception,
    encode_request,
    encode_response,
    exception_name,
    fill_required,
    parse_message,
)
from tidelog.varint import uvarint_bytes

SPECS = sorted(METHODS.values(), key=lambda s: s.method)


def one_frame(data: bytes) -> Frame:
    (frame,) = FrameDecoder().feed(data)
    return frame


def delimited(message: Message) -> bytes:
    data = message.SerializePartialToString()
    return uvarint_bytes(len(data)) + data


def test_the_method_table_is_tubemqs() -> None:
    assert {m.value for m in Method} == {1, 2, 3, 4, 5, 6, 7, 8, 9, 13, 15, 16, 17, 18, 20, 21, 22}
    assert METHODS[Method.SEND_MESSAGE_P2B].services == {Service.BROKER_WRITE, Service.BROKER_READ}
    assert METHODS[Method.GET_MESSAGES_C2B].services == {Service.BROKER_READ}
    assert all(METHODS[m].services == {Service.MASTER} for m in (1, 2, 3, 4, 5, 6, 7, 8, 9, 20, 21, 22))
    assert METHODS[Method.CONSUMER_HEARTBEAT_C2M].java_name == "consumerHeartbeatC2M"


@settings(max_examples=40, deadline=None)
@given(data=st.data(), spec=st.sampled_from(SPECS), serial=st.integers(0, 2**32 - 1),
       version=st.sampled_from([1, 2, 3]))
def test_requests_round_trip_for_every_method(data: st.DataObject, spec, serial: int, version: int) -> None:
    request = data.draw(message_of(spec.request))
    wire = encode_request(serial, min(spec.services), spec.method, request, timeout_ms=9000, protocol_version=version)
    decoded = decode_request(one_frame(wire))
    assert (decoded.serial_no, decoded.service_type, decoded.method, decoded.timeout_ms, decoded.protocol_version) \
        == (serial, min(spec.services), spec.method, 9000, version)
    assert decode_body(spec, decoded.body) == request


@settings(max_examples=40, deadline=None)
@given(data=st.data(), spec=st.sampled_from(SPECS), serial=st.integers(0, 2**32 - 1))
def test_responses_round_trip_for_every_method(data: st.DataObject, spec, serial: int) -> None:
    response = data.draw(message_of(spec.response))
    decoded = decode_response(one_frame(encode_response(serial, spec.method, response)))
    assert (decoded.serial_no, decoded.status, decoded.method) == (serial, Status.SUCCESS, spec.method)
    assert parse_message(spec.response, decoded.data) == response


@pytest.mark.parametrize("cls", MESSAGE_CLASSES, ids=lambda c: c.DESCRIPTOR.name)
def test_fill_required_makes_every_message_serializable(cls: type[Message]) -> None:
    message = fill_required(cls())
    assert message.IsInitialized(), message.FindInitializationErrors()
    assert parse_message(cls, message.SerializeToString()) == message


def test_an_error_response_carries_a_java_exception_prefixed_for_the_callers_version() -> None:
    for version, prefix in ((3, "org.apache.inlong.tubemq."), (2, "com.apache.tubemq."), (1, "com.tencent.tubemq.")):
        decoded = decode_response(one_frame(encode_exception(7, STANDBY_EXCEPTION, "not the active master",
                                                             protocol_version=version)))
        assert decoded.status == Status.ERROR and decoded.serial_no == 7
        assert decoded.exception_name == prefix + "corerpc.exception.StandbyException"
        assert decoded.stack_trace == "not the active master"
    assert exception_name("java.lang.Exception", 1) == "java.lang.Exception"  # not TubeMQ's: unchanged


def payload(*messages: Message) -> bytes:
    return b"".join(delimited(m) for m in messages)


CONN, HEADER = rpc_pb2.RpcConnHeader(flag=0), rpc_pb2.RequestHeader(serviceType=2, protocolVer=3)


@pytest.mark.parametrize(("data", "problem"), [
    (b"", "RpcConnHeader has no valid length prefix"),
    (b"\x05\x08", "RpcConnHeader claims 5 bytes, 1 remain"),
    (b"\xff\xff\xff\xff\xff\xff", "no valid length prefix"),
    (payload(rpc_pb2.RpcConnHeader(flag=1)), "flag is 1, not 0"),
    (payload(rpc_pb2.RpcConnHeader()), "RpcConnHeader misses required fields: flag"),
    (payload(CONN), "RequestHeader has no valid length prefix"),
    (payload(CONN, HEADER, rpc_pb2.RequestBody(timeout=5)), "RequestBody misses required fields: method"),
    (payload(CONN, HEADER) + b"\x03\xff\xff\xff", "RequestBody does not parse"),
])
def test_envelopes_that_do_not_decode_say_why(data: bytes, problem: str) -> None:
    with pytest.raises(MalformedRequestError, match=problem):
        decode_request(Frame(1, data))


def test_inner_requests_need_their_required_fields_and_utf8_strings() -> None:
    spec = METHODS[Method.GET_MESSAGES_C2B]
    partial = broker_pb.GetMessageRequestC2B(clientId="c", partitionId=1).SerializePartialToString()
    with pytest.raises(MalformedRequestError, match="misses required fields: groupName, topicName"):
        decode_body(spec, partial)
    # clientId = b"\xff\xfe" (field 1, wire type 2) and the other required fields.
    bad_utf8 = b"\x0a\x02\xff\xfe" + broker_pb.GetMessageRequestC2B(
        partitionId=1, groupName="g", topicName="t").SerializePartialToString()
    with pytest.raises(MalformedRequestError, match="not UTF-8: clientId"):
        decode_body(spec, bad_utf8)
