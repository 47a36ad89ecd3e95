"""TubeMQ framing: blocks of at most 8192 bytes, frames that arrive in any pieces, and the checks
(token, list size, block length) that run before anything is buffered."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tidelog.protocol.tubemq.frame import (
    BEGIN_TOKEN,
    MAX_BLOCK_BYTES,
    MAX_LIST_SIZE,
    Frame,
    FrameDecoder,
    FrameError,
    encode_frame,
)

HEADER = struct.Struct(">IIi")


def blocks_of(data: bytes) -> list[int]:
    """The block lengths of one encoded frame."""
    token, _, count = HEADER.unpack_from(data)
    assert token == BEGIN_TOKEN
    pos, lengths = HEADER.size, []
    for _ in range(count):
        (length,) = struct.unpack_from(">i", data, pos)
        lengths.append(length)
        pos += 4 + length
    assert pos == len(data)
    return lengths


def test_a_payload_is_cut_into_blocks_of_8192_bytes() -> None:
    # 20,000 bytes arrive as three blocks, as TubeMQ's senders cut them (listSize = 3).
    assert blocks_of(encode_frame(1, bytes(20_000))) == [8192, 8192, 3616]
    assert blocks_of(encode_frame(1, bytes(8192))) == [8192]
    assert blocks_of(encode_frame(1, b"x")) == [1]


def test_the_serial_number_is_echoed_as_four_bytes() -> None:
    data = encode_frame(0xFFFFFFFF, b"abc")
    assert FrameDecoder().feed(data) == [Frame(0xFFFFFFFF, b"abc")]
    assert data[4:8] == b"\xff\xff\xff\xff"


def test_a_payload_needing_more_than_3584_blocks_cannot_be_encoded() -> None:
    with pytest.raises(ValueError, match="3584"):
        encode_frame(1, bytes(MAX_LIST_SIZE * MAX_BLOCK_BYTES + 1))


@settings(max_examples=150, deadline=None)
@given(payloads=st.lists(st.binary(max_size=20_000), min_size=1, max_size=4),
       cuts=st.lists(st.integers(1, 9000), max_size=12))
def test_frames_come_back_whatever_pieces_the_bytes_arrive_in(payloads: list[bytes], cuts: list[int]) -> None:
    stream = b"".join(encode_frame(i, p) for i, p in enumerate(payloads))
    decoder = FrameDecoder()
    frames, pos = [], 0
    for cut in cuts:
        frames += decoder.feed(stream[pos : pos + cut])
        pos += cut
    frames += decoder.feed(stream[pos:])
    assert frames == [Frame(i, p) for i, p in enumerate(payloads)]
    assert decoder.buffered == 0


def test_an_empty_block_list_is_an_empty_payload() -> None:
    assert FrameDecoder().feed(HEADER.pack(BEGIN_TOKEN, 9, 0)) == [Frame(9, b"")]


@pytest.mark.parametrize("token", [0, 0xFF7FF4FF, 0x00000001])
def test_another_token_is_refused_at_once(token: int) -> None:
    with pytest.raises(FrameError, match="token"):
        FrameDecoder().feed(HEADER.pack(token, 1, 1))


@pytest.mark.parametrize("list_size", [-1, MAX_LIST_SIZE + 1, 2**31 - 1])
def test_a_list_size_outside_0_to_3584_is_refused_before_any_block(list_size: int) -> None:
    with pytest.raises(FrameError, match="list size"):
        FrameDecoder().feed(HEADER.pack(BEGIN_TOKEN, 1, list_size))


@pytest.mark.parametrize("length", [-1, MAX_BLOCK_BYTES + 1, 2**31 - 1])
def test_a_block_longer_than_8192_bytes_is_refused_before_it_is_buffered(length: int) -> None:
    decoder = FrameDecoder()
    with pytest.raises(FrameError, match="block"):
        decoder.feed(HEADER.pack(BEGIN_TOKEN, 1, 1) + struct.pack(">i", length) + b"x" * 10)


def test_a_truncated_frame_waits_for_the_rest_holding_only_what_arrived() -> None:
    data = encode_frame(5, bytes(10_000))
    decoder = FrameDecoder()
    assert decoder.feed(data[:-1]) == []
    assert decoder.buffered == len(data) - 1 - HEADER.size - 2 * 4  # payload bytes and the unread tail
    assert decoder.feed(data[-1:]) == [Frame(5, bytes(10_000))]
