"""The sans-IO connection core: framing and in-order responses for pipelined requests."""

from __future__ import annotations

import struct

import pytest

from tidelog.protocol import FrameTooLargeError
from tidelog.server.connection import Connection


def test_frames_are_split_from_any_chunking() -> None:
    conn = Connection(max_frame_bytes=100)
    stream = struct.pack(">i", 3) + b"abc" + struct.pack(">i", 2) + b"de"
    frames = []
    for b in stream:
        frames += conn.receive(bytes([b]))
    assert frames == [b"abc", b"de"]


def test_responses_leave_in_request_order() -> None:
    conn = Connection()
    a, b, c = conn.start(), conn.start(), conn.start()
    assert conn.in_flight == 3
    assert conn.finish(c, ["C"]) == []  # waits for a and b
    assert conn.finish(a, ["A"]) == [["A"]]
    assert conn.finish(b, ["B"]) == [["B"], ["C"]]
    assert conn.in_flight == 0


def test_no_response_requests_release_the_queue() -> None:
    conn = Connection()
    a, b = conn.start(), conn.start()
    assert conn.finish(b, ["B"]) == []
    assert conn.finish(a, None) == [["B"]]  # acks=0 produce: nothing to send, B goes


def test_finishing_twice_or_unknown_is_an_error() -> None:
    conn = Connection()
    a = conn.start()
    conn.finish(a, ["A"])
    with pytest.raises(ValueError):
        conn.finish(a, ["A"])
    with pytest.raises(ValueError):
        conn.finish(5, ["X"])


def test_oversized_frame_is_refused() -> None:
    conn = Connection(max_frame_bytes=10)
    with pytest.raises(FrameTooLargeError):
        conn.receive(struct.pack(">i", 11))
