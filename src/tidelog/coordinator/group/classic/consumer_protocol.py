"""The embedded consumer protocol: what classic ``consumer`` groups carry inside JoinGroup metadata and
SyncGroup assignments (Kafka's ``ConsumerProtocolSubscription`` and ``ConsumerProtocolAssignment``,
read and written by ``ConsumerProtocol`` in Kafka's clients).

Both are never flexible; every version starts with the fields of the versions before it, and a reader
that meets a version above the highest it knows reads it as the highest (Kafka's rule: new versions
may only add fields at the end)::

    ConsumerProtocolSubscription                     ConsumerProtocolAssignment
      version          int16                           version              int16
      topics           array of string                 assigned_partitions  array of
      user_data        nullable bytes                    topic              string
      owned_partitions array of          (v1+)           partitions         array of int32
        topic          string                          user_data            nullable bytes
        partitions     array of int32                  (v1-v3 add nothing; the version follows the
      generation_id    int32, -1 unknown (v2+)          subscription's)
      rack_id          nullable string   (v3+)

Kafka's group coordinator reads a classic member's subscription (topics, owned partitions, rack) when
the member is served by a KIP-848 consumer group, and writes the member's assignment in the version
of the member's own subscription metadata (``ConsumerProtocol.deserializeVersion``), capped at 3.

Decoding hostile bytes raises :class:`~tidelog.protocol.exceptions.MalformedMessageError` only (a
negative version is malformed, as Kafka's ``SchemaException``). Pure functions and immutable values:
safe from any thread.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from tidelog.protocol.exceptions import MalformedMessageError
from tidelog.protocol.primitives import (
    INT16,
    INT32,
    read_array_len,
    read_nullable_bytes,
    read_nullable_string,
    read_string,
    write_array_len,
    write_nullable_string,
    write_string,
)

#: The highest version of both formats (Kafka 2.4 added owned partitions, 2.8 generation ids, 3.5 racks).
HIGHEST_VERSION = 3

TopicPartitionNames = Mapping[str, Iterable[int]]


@dataclass(frozen=True, slots=True)
class ConsumerProtocolSubscription:
    """A decoded subscription. ``owned_partitions`` maps topic -> partitions (the v1+ field)."""

    topics: tuple[str, ...]
    user_data: bytes | None = None
    owned_partitions: Mapping[str, tuple[int, ...]] | None = None
    generation_id: int = -1
    rack_id: str | None = None
    version: int = 0


def protocol_version(data: bytes) -> int:
    """The version a subscription or assignment starts with, capped at :data:`HIGHEST_VERSION`."""
    try:
        (version,) = INT16.unpack_from(data, 0)
    except struct.error:
        raise MalformedMessageError("consumer protocol header truncated") from None
    if version < 0:
        raise MalformedMessageError(f"unsupported consumer protocol version {version}")
    return min(version, HIGHEST_VERSION)


def _read_int32s(buf: memoryview, pos: int) -> tuple[tuple[int, ...], int]:
    n, pos = read_array_len(buf, pos, 4)
    if n < 0:
        raise MalformedMessageError("null partitions array")
    values = struct.unpack_from(f">{n}i", buf, pos)
    return values, pos + 4 * n


def _read_topic_partitions(buf: memoryview, pos: int) -> tuple[dict[str, tuple[int, ...]], int]:
    n, pos = read_array_len(buf, pos, 6)
    out: dict[str, tuple[int, ...]] = {}
    for _ in range(max(n, 0)):
        topic, pos = read_string(buf, pos)
        partitions, pos = _read_int32s(buf, pos)
        out[topic] = out.get(topic, ()) + partitions
    return out, pos


def decode_subscription(data: bytes) -> ConsumerProtocolSubscription:
    """Every field the subscription's version has (a truncated one is malformed, as in Kafka)."""
    version = protocol_version(data)
    buf = memoryview(data)
    try:
        n, pos = read_array_len(buf, 2, 2)
        if n < 0:
            raise MalformedMessageError("null topics")
        topics = []
        for _ in range(n):
            topic, pos = read_string(buf, pos)
            topics.append(topic)
        user_data, pos = read_nullable_bytes(buf, pos)
        owned = None
        generation_id, rack_id = -1, None
        if version >= 1:
            owned, pos = _read_topic_partitions(buf, pos)
        if version >= 2:
            (generation_id,) = INT32.unpack_from(buf, pos)
            pos += 4
        if version >= 3:
            rack_id, pos = read_nullable_string(buf, pos)
    except (struct.error, IndexError):
        raise MalformedMessageError("consumer protocol subscription truncated") from None
    return ConsumerProtocolSubscription(tuple(topics), None if user_data is None else bytes(user_data), owned,
                                        generation_id, rack_id, version)


def subscription_topics(data: bytes) -> list[str]:
    """The topics of a subscription (any version). MalformedMessageError if it is not one."""
    return list(decode_subscription(data).topics)


def encode_subscription(topics: Iterable[str], user_data: bytes | None = None, *, version: int = 0,
                        owned_partitions: TopicPartitionNames | None = None, generation_id: int = -1,
                        rack_id: str | None = None) -> bytes:
    """A subscription in ``version`` (fields the version lacks are left out)."""
    b = bytearray(INT16.pack(version))
    topics = list(topics)
    write_array_len(b, len(topics))
    for topic in topics:
        write_string(b, topic)
    b += INT32.pack(-1) if user_data is None else INT32.pack(len(user_data)) + user_data
    if version >= 1:
        _write_topic_partitions(b, owned_partitions or {})
    if version >= 2:
        b += INT32.pack(generation_id)
    if version >= 3:
        write_nullable_string(b, rack_id)
    return bytes(b)


def _write_topic_partitions(b: bytearray, partitions: TopicPartitionNames) -> None:
    write_array_len(b, len(partitions))
    for topic, parts in partitions.items():
        write_string(b, topic)
        parts = list(parts)
        write_array_len(b, len(parts))
        b += struct.pack(f">{len(parts)}i", *parts)


def decode_assignment(data: bytes) -> dict[str, list[int]]:
    """Topic -> partitions of an assignment (any version); ``{}`` for empty bytes (no assignment)."""
    return assignment_with_user_data(data)[0]


def assignment_with_user_data(data: bytes) -> tuple[dict[str, list[int]], bytes | None]:
    """(topic -> partitions, user data) of an assignment; ``({}, None)`` for empty bytes."""
    if not data:
        return {}, None
    protocol_version(data)
    buf = memoryview(data)
    try:
        partitions, pos = _read_topic_partitions(buf, 2)
        user_data, _ = read_nullable_bytes(buf, pos)
    except (struct.error, IndexError):
        raise MalformedMessageError("consumer protocol assignment truncated") from None
    return {topic: list(parts) for topic, parts in partitions.items()}, user_data


def encode_assignment(partitions: TopicPartitionNames, user_data: bytes | None = None, version: int = 0) -> bytes:
    """An assignment in ``version`` (every version has the same fields)."""
    b = bytearray(INT16.pack(min(version, HIGHEST_VERSION)))
    _write_topic_partitions(b, partitions)
    b += INT32.pack(-1) if user_data is None else INT32.pack(len(user_data)) + user_data
    return bytes(b)


__all__ = [
    "HIGHEST_VERSION",
    "ConsumerProtocolSubscription",
    "assignment_with_user_data",
    "decode_assignment",
    "decode_subscription",
    "encode_assignment",
    "encode_subscription",
    "protocol_version",
    "subscription_topics",
]
