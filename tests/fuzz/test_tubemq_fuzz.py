"""Hostile input to the TubeMQ codec and dispatcher: any bytes either decode or raise a ProtocolError,
and a dispatched frame always gets a response frame.

Properties, for random bytes and for mutations of valid frames (truncation, flipped bytes, huge
length fields, inserted bytes): the frame decoder raises only FrameError and buffers no more than it
was fed; envelopes and inner messages raise only MalformedRequestError; the dispatcher answers
every frame with a decodable response (never raises); nothing allocates because of a length or list
size that the bytes received cannot back.
"""

from __future__ import annotations

import struct
import tracemalloc

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.fuzz.mutation import FUZZ_SETTINGS, mutate
from tests.unit.protocol.tubemq.strategies import MESSAGE_CLASSES, message_of
from tidelog.protocol.exceptions import ProtocolError
from tidelog.protocol.tubemq.frame import BEGIN_TOKEN, MAX_BLOCK_BYTES, MAX_LIST_SIZE, Frame, FrameDecoder
from tidelog.protocol.tubemq.generated import master_service_pb2 as master_pb
from tidelog.protocol.tubemq.rpc import (
    METHODS,
    MalformedRequestError,
    Method,
    Service,
    decode_body,
    decode_request,
    decode_response,
    encode_request,
    parse_message,
)
from tidelog.server.tubemq.dispatcher import TubeContext, TubeHandlerRegistry, tube_method

SPECS = sorted(METHODS.values(), key=lambda s: s.method)


@FUZZ_SETTINGS
@given(chunks=st.lists(st.binary(max_size=64), max_size=20), with_token=st.booleans())
def test_random_bytes_into_the_frame_decoder(chunks: list[bytes], with_token: bool) -> None:
    decoder = FrameDecoder()
    fed = 0
    try:
        for chunk in ([struct.pack(">I", BEGIN_TOKEN)] if with_token else []) + chunks:
            fed += len(chunk)
            decoder.feed(chunk)
            assert decoder.buffered <= fed
    except ProtocolError:
        pass


class Echo:
    """A handler object that answers every master method it serves with a success."""

    @tube_method(Method.PRODUCER_REGISTER_P2M)
    def register(self, ctx: TubeContext, request: master_pb.RegisterRequestP2M) -> master_pb.RegisterResponseM2P:
        return master_pb.RegisterResponseM2P(success=True, errCode=200, errMsg=request.clientId, brokerCheckSum=1)


REGISTRY = TubeHandlerRegistry("master", frozenset({Service.MASTER}))
REGISTRY.add(Echo())


@FUZZ_SETTINGS
@given(data=st.data(), spec=st.sampled_from(SPECS), service=st.integers(-1, 6))
def test_mutated_requests_decode_or_raise_and_are_always_answered(data: st.DataObject, spec, service: int) -> None:
    request = data.draw(message_of(spec.request))
    wire = encode_request(3, service, spec.method, request)
    mutated = mutate(data.draw, wire)
    try:
        frames = FrameDecoder().feed(mutated)
    except ProtocolError:
        return
    for frame in frames:
        try:
            decoded = decode_request(frame)
            decode_body(spec, decoded.body)
        except MalformedRequestError:
            pass
        answer = FrameDecoder().feed(REGISTRY.dispatch(frame, "127.0.0.1", "test"))
        assert len(answer) == 1 and answer[0].serial_no == frame.serial_no
        decode_response(answer[0])


@FUZZ_SETTINGS
@given(payload=st.binary(max_size=300), serial=st.integers(0, 2**32 - 1))
def test_garbage_payloads_are_answered(payload: bytes, serial: int) -> None:
    answer = FrameDecoder().feed(REGISTRY.dispatch(Frame(serial, payload), "127.0.0.1", "test"))
    assert decode_response(answer[0]).serial_no == serial


@FUZZ_SETTINGS
@given(data=st.binary(max_size=200), cls=st.sampled_from(MESSAGE_CLASSES))
def test_garbage_protobufs_raise_malformed_request(data: bytes, cls) -> None:
    try:
        parse_message(cls, data)
    except MalformedRequestError:
        pass


@FUZZ_SETTINGS
@given(data=st.data(), cls=st.sampled_from(MESSAGE_CLASSES))
def test_mutated_protobufs_raise_malformed_request(data: st.DataObject, cls) -> None:
    encoded = data.draw(message_of(cls)).SerializeToString()
    try:
        parse_message(cls, mutate(data.draw, encoded))
    except MalformedRequestError:
        pass


@pytest.mark.parametrize("claim", [
    struct.pack(">IIi", BEGIN_TOKEN, 1, MAX_LIST_SIZE) + struct.pack(">i", MAX_BLOCK_BYTES) + b"x" * 16,
    struct.pack(">IIi", BEGIN_TOKEN, 1, 2**31 - 1),
    struct.pack(">IIi", BEGIN_TOKEN, 1, 1) + struct.pack(">i", 2**31 - 1),
])
def test_huge_claims_do_not_allocate(claim: bytes) -> None:
    tracemalloc.start()
    try:
        decoder = FrameDecoder()
        try:
            decoder.feed(claim)
        except ProtocolError:
            pass
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 100_000
