"""Hostile input to the protocol codec: any bytes either decode or raise ProtocolError.

Properties, for random bytes and for mutations of valid encodings (truncation, flipped bytes, huge
length fields): no other exception type, no hang, and no allocation driven by a length field that the
remaining bytes cannot back.
"""

from __future__ import annotations

import struct
import tracemalloc

import pytest
from hypothesis import given
from hypothesis import strategies as st

import tidelog.protocol.messages as messages
from tests.fuzz.mutation import FUZZ_SETTINGS, mutate
from tests.unit.protocol.strategies import message_value
from tidelog.protocol import FrameDecoder, ProtocolError, decode_request
from tidelog.protocol.message import Message

ALL = [
    c
    for c in (getattr(messages, n) for n in messages.__all__)
    if isinstance(c, type) and issubclass(c, Message)
]
REQUESTS = [c for c, _ in messages.API_MESSAGES.values()]


def _decode_all_versions(cls: type[Message], data: bytes) -> None:
    for version in range(cls.MIN_VERSION, cls.MAX_VERSION + 1):
        try:
            cls.decode(data, version)
        except ProtocolError:
            pass


@FUZZ_SETTINGS
@given(data=st.binary(max_size=200), cls=st.sampled_from(ALL))
def test_random_bytes_decode_or_raise_protocol_error(data: bytes, cls: type[Message]) -> None:
    _decode_all_versions(cls, data)


@FUZZ_SETTINGS
@given(body=st.binary(max_size=120), api_key=st.sampled_from(sorted(messages.API_MESSAGES)), version=st.integers(-2, 20))
def test_random_request_frames(body: bytes, api_key: int, version: int) -> None:
    frame = struct.pack(">hhi", api_key, version, 1) + body
    try:
        decode_request(frame)
    except ProtocolError:
        pass


@FUZZ_SETTINGS
@given(data=st.data(), cls=st.sampled_from(ALL))
def test_mutated_valid_messages(data: st.DataObject, cls: type[Message]) -> None:
    version = data.draw(st.integers(cls.MIN_VERSION, cls.MAX_VERSION))
    encoded = data.draw(message_value(cls, version)).encode(version)
    mutated = mutate(data.draw, encoded)
    try:
        cls.decode(mutated, version)
    except ProtocolError:
        pass


@pytest.mark.parametrize("cls", REQUESTS, ids=lambda c: c.__name__)
def test_huge_counts_do_not_allocate(cls: type[Message]) -> None:
    """Length/count fields claiming 2 GiB items must fail before allocating anything large."""
    tracemalloc.start()
    try:
        for version in range(cls.MIN_VERSION, cls.MAX_VERSION + 1):
            for prefix_len in range(0, 24, 2):
                data = b"\x00" * prefix_len + b"\x7f\xff\xff\xff" * 4 + b"\xff\xff\xff\xff\x07" * 4
                try:
                    cls.decode(data, version)
                except ProtocolError:
                    pass
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1_000_000


@FUZZ_SETTINGS
@given(chunks=st.lists(st.binary(max_size=64), max_size=20), limit=st.integers(0, 256))
def test_frame_decoder_never_raises_other_errors(chunks: list[bytes], limit: int) -> None:
    decoder = FrameDecoder(max_frame_bytes=limit)
    try:
        for chunk in chunks:
            for frame in decoder.feed(chunk):
                assert len(frame) <= limit
    except ProtocolError:
        pass


def test_frame_decoder_rejects_oversize_prefix_before_buffering() -> None:
    decoder = FrameDecoder(max_frame_bytes=1024)
    with pytest.raises(ProtocolError):
        decoder.feed(struct.pack(">i", 2**31 - 1))
    assert decoder.buffered <= 4  # at most the prefix itself was kept
