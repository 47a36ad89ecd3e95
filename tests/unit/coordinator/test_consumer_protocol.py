"""The embedded consumer protocol (ConsumerProtocolSubscription / ConsumerProtocolAssignment)."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tidelog.coordinator.group.classic.consumer_protocol import (
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
    protocol_version,
    subscription_topics,
)
from tidelog.protocol.exceptions import MalformedMessageError


def s16(text: str) -> bytes:
    return struct.pack(">h", len(text)) + text.encode()


def test_every_subscription_version_reads_back() -> None:
    owned = {"a": (0, 2), "b": (1,)}
    for version in range(4):
        data = encode_subscription(["a", "b"], b"u", version=version, owned_partitions=owned, generation_id=7,
                                   rack_id="r1")
        sub = decode_subscription(data)
        assert (sub.topics, sub.user_data, sub.version) == (("a", "b"), b"u", version)
        assert sub.owned_partitions == (owned if version >= 1 else None)
        assert sub.generation_id == (7 if version >= 2 else -1)
        assert sub.rack_id == ("r1" if version >= 3 else None)
        assert protocol_version(data) == version


def test_subscription_bytes_are_kafkas_layout() -> None:
    # What librdkafka writes: v3, topics, empty user data, owned partitions, generation, null rack.
    data = (struct.pack(">hi", 3, 1) + s16("t") + struct.pack(">i", 0) + struct.pack(">i", 1) + s16("t")
            + struct.pack(">iii", 2, 0, 1) + struct.pack(">ih", 4, -1))
    sub = decode_subscription(data)
    assert (sub.topics, sub.user_data, sub.owned_partitions, sub.generation_id, sub.rack_id) == (
        ("t",), b"", {"t": (0, 1)}, 4, None)
    assert encode_subscription(["t"], b"", version=3, owned_partitions={"t": [0, 1]}, generation_id=4) == data


def test_a_newer_version_is_read_as_the_highest_known() -> None:
    data = encode_subscription(["x"], version=3, rack_id="r") + b"future fields"
    sub = decode_subscription(b"\x00\x07" + data[2:])
    assert (sub.topics, sub.rack_id, sub.version) == (("x",), "r", 3)
    assert protocol_version(encode_assignment({}, version=9)) == 3


def test_assignments() -> None:
    for version in range(4):
        data = encode_assignment({"a": [0, 2], "b": [1]}, version=version)
        assert protocol_version(data) == version
        assert decode_assignment(data) == {"a": [0, 2], "b": [1]}
    assert decode_assignment(b"") == {}
    assert encode_assignment({"t": [3]}) == struct.pack(">hi", 0, 1) + s16("t") + struct.pack(">iii", 1, 3, -1)


@pytest.mark.parametrize("data", [
    b"",
    b"\xff\xff\x00\x00\x00\x00",                        # negative version
    b"\x00\x00\x00\x00\x00\x09ab",                      # nine topics in two bytes
    b"\x00\x01" + encode_subscription(["x"])[2:],       # v1 without its owned partitions
])
def test_malformed_subscriptions(data: bytes) -> None:
    with pytest.raises(MalformedMessageError):
        subscription_topics(data)


@given(st.binary(max_size=80))
def test_hostile_bytes_raise_only_malformed(data: bytes) -> None:
    for decode in (decode_subscription, decode_assignment):
        try:
            decode(data)
        except MalformedMessageError:
            pass
