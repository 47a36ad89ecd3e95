"""Kafka's ConsumerGroup* records in ``__consumer_offsets`` (the KIP-848 group state), hand-written serde.

Registered with :func:`tidelog.coordinator.group.records.register_record_type` at import, so the
coordinator runtime writes and replays them. Layouts follow Kafka's group-coordinator record specs
(facts; the specs are not in ../shared, so this serde is written by hand). Pure functions, immutable
value classes.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from tidelog.coordinator.group.assignors import TopicPartitions
from tidelog.coordinator.group.records import RecordType, register_record_type, skip_tags
from tidelog.protocol.exceptions import MalformedMessageError
from tidelog.protocol.primitives import (
    INT8,
    INT16,
    INT32,
    INT64,
    read_compact_array_len,
    read_compact_nullable_string,
    read_compact_string,
    read_string,
    read_uuid,
    read_uvarint,
    write_compact_array_len,
    write_compact_nullable_string,
    write_compact_string,
    write_string,
    write_uuid,
)

# -- records: Kafka's ConsumerGroup* keys and values in __consumer_offsets --------------------------------
#
# Registered with records.register_record_type, so the runtime writes and loads them. Keys are not
# flexible; values are (version 0, flexible: compact strings/arrays, a tagged-field section per struct).
#
#   key version  key (int16 version, then)             value (int16 version 0, then)
#   3            ConsumerGroupMetadataKey               ConsumerGroupMetadataValue
#                  group_id string                        epoch int32; tag 0: metadata_hash int64 (4.1+)
#   5            ConsumerGroupMemberMetadataKey         ConsumerGroupMemberMetadataValue
#                  group_id string, member_id string      instance_id, rack_id   compact nullable string
#                                                         client_id, client_host compact string
#                                                         subscribed_topic_names compact array of compact string
#                                                         subscribed_topic_regex compact nullable string
#                                                         rebalance_timeout_ms   int32
#                                                         server_assignor        compact nullable string
#                                                         (tag 0: classic member metadata, skipped)
#   6            ConsumerGroupTargetAssignmentMetadataKey  ConsumerGroupTargetAssignmentMetadataValue
#                  group_id string                        assignment_epoch int32
#   7            ConsumerGroupTargetAssignmentMemberKey    ConsumerGroupTargetAssignmentMemberValue
#                  group_id string, member_id string      topic_partitions compact array of TopicPartitions
#   8            ConsumerGroupCurrentMemberAssignmentKey   ConsumerGroupCurrentMemberAssignmentValue
#                  group_id string, member_id string      member_epoch int32, previous_member_epoch int32,
#                                                         state int8 (MemberState), assigned_partitions and
#                                                         partitions_pending_revocation: compact arrays of
#                                                         TopicPartitions
#   16           ConsumerGroupRegularExpressionKey      ConsumerGroupRegularExpressionValue
#                  group_id string, regex string          topics compact array of compact string,
#                                                         version int64, timestamp int64
#   TopicPartitions: topic_id uuid, partitions compact array of int32, tagged fields
#   (tag 0 AssignmentEpochs, KIP-1251, is skipped when read and not written).
# Key version 4 (ConsumerGroupPartitionMetadata, before 4.1) is not written; 4.1 replaced it by the hash.


@dataclass(frozen=True, slots=True)
class ConsumerGroupMetadataKey:
    group_id: str


@dataclass(frozen=True, slots=True)
class ConsumerGroupMetadataValue:
    epoch: int
    metadata_hash: int = 0


@dataclass(frozen=True, slots=True)
class ConsumerGroupMemberMetadataKey:
    group_id: str
    member_id: str


@dataclass(frozen=True, slots=True)
class ConsumerGroupMemberMetadataValue:
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    rebalance_timeout_ms: int
    server_assignor: str | None


@dataclass(frozen=True, slots=True)
class ConsumerGroupTargetAssignmentMetadataKey:
    group_id: str


@dataclass(frozen=True, slots=True)
class ConsumerGroupTargetAssignmentMetadataValue:
    assignment_epoch: int


@dataclass(frozen=True, slots=True)
class ConsumerGroupTargetAssignmentMemberKey:
    group_id: str
    member_id: str


@dataclass(frozen=True, slots=True)
class ConsumerGroupTargetAssignmentMemberValue:
    topic_partitions: TopicPartitions


@dataclass(frozen=True, slots=True)
class ConsumerGroupCurrentMemberAssignmentKey:
    group_id: str
    member_id: str


@dataclass(frozen=True, slots=True)
class ConsumerGroupCurrentMemberAssignmentValue:
    member_epoch: int
    previous_member_epoch: int
    state: int  # MemberState
    assigned_partitions: TopicPartitions
    partitions_pending_revocation: TopicPartitions


@dataclass(frozen=True, slots=True)
class ConsumerGroupRegularExpressionKey:
    group_id: str
    regex: str


@dataclass(frozen=True, slots=True)
class ConsumerGroupRegularExpressionValue:
    topics: tuple[str, ...]
    version: int
    timestamp: int


#: Every key type of this module (the coordinator routes their replay here).
KEY_TYPES = (ConsumerGroupMetadataKey, ConsumerGroupMemberMetadataKey, ConsumerGroupTargetAssignmentMetadataKey,
             ConsumerGroupTargetAssignmentMemberKey, ConsumerGroupCurrentMemberAssignmentKey,
             ConsumerGroupRegularExpressionKey)


def _key_codec(version: int, cls: type, fields: tuple[str, ...]) -> tuple[Any, Any]:
    def read(buf: memoryview, pos: int, _version: int) -> tuple[Any, int]:
        values = []
        for _ in fields:
            v, pos = read_string(buf, pos)
            values.append(v)
        return cls(*values), pos

    def write(key: Any) -> bytes:
        b = bytearray(INT16.pack(version))
        for name in fields:
            write_string(b, getattr(key, name))
        return bytes(b)

    return read, write


def _read_value_version(version: int, name: str) -> None:
    if version != 0:
        raise MalformedMessageError(f"unknown {name} version {version}")


def _read_strings(buf: memoryview, pos: int) -> tuple[tuple[str, ...], int]:
    n, pos = read_compact_array_len(buf, pos)
    out = []
    for _ in range(max(n, 0)):
        s_, pos = read_compact_string(buf, pos)
        out.append(s_)
    return tuple(out), pos


def _write_strings(b: bytearray, items: Iterable[str]) -> None:
    items = list(items)
    write_compact_array_len(b, len(items))
    for item in items:
        write_compact_string(b, item)


def _read_tps(buf: memoryview, pos: int) -> tuple[dict[uuid.UUID, frozenset[int]], int]:
    n, pos = read_compact_array_len(buf, pos, 18)
    out: dict[uuid.UUID, frozenset[int]] = {}
    for _ in range(max(n, 0)):
        topic_id, pos = read_uuid(buf, pos)
        m, pos = read_compact_array_len(buf, pos, 4)
        parts = struct.unpack_from(f">{max(m, 0)}i", buf, pos)
        pos += 4 * max(m, 0)
        pos = skip_tags(buf, pos)
        out[topic_id] = out.get(topic_id, frozenset()) | frozenset(parts)
    return out, pos


def _write_tps(b: bytearray, tps: TopicPartitions) -> None:
    items = [(t, sorted(ps)) for t, ps in sorted(tps.items()) if ps]
    write_compact_array_len(b, len(items))
    for topic_id, parts in items:
        write_uuid(b, topic_id)
        write_compact_array_len(b, len(parts))
        b += struct.pack(f">{len(parts)}i", *parts)
        b.append(0)


def _read_group_value(buf: memoryview, pos: int, version: int) -> tuple[ConsumerGroupMetadataValue, int]:
    _read_value_version(version, "ConsumerGroupMetadataValue")
    (epoch,) = INT32.unpack_from(buf, pos)
    pos += 4
    metadata_hash_ = 0
    n, pos = read_uvarint(buf, pos)
    for _ in range(n):
        tag, pos = read_uvarint(buf, pos)
        size, pos = read_uvarint(buf, pos)
        if tag == 0 and size == 8:
            (metadata_hash_,) = INT64.unpack_from(buf, pos)
        pos += size
        if pos > len(buf):
            raise MalformedMessageError("tagged field runs past the end of the record")
    return ConsumerGroupMetadataValue(epoch, metadata_hash_), pos


def _write_group_value(value: ConsumerGroupMetadataValue) -> bytes:
    b = bytearray(INT16.pack(0))
    b += INT32.pack(value.epoch)
    b += b"\x01\x00\x08" + INT64.pack(value.metadata_hash)  # one tagged field: tag 0, 8 bytes
    return bytes(b)


def _read_member_value(buf: memoryview, pos: int, version: int) -> tuple[ConsumerGroupMemberMetadataValue, int]:
    _read_value_version(version, "ConsumerGroupMemberMetadataValue")
    instance_id, pos = read_compact_nullable_string(buf, pos)
    rack_id, pos = read_compact_nullable_string(buf, pos)
    client_id, pos = read_compact_string(buf, pos)
    client_host, pos = read_compact_string(buf, pos)
    names, pos = _read_strings(buf, pos)
    regex, pos = read_compact_nullable_string(buf, pos)
    (rebalance_timeout_ms,) = INT32.unpack_from(buf, pos)
    assignor, pos = read_compact_nullable_string(buf, pos + 4)
    pos = skip_tags(buf, pos)
    return ConsumerGroupMemberMetadataValue(instance_id, rack_id, client_id, client_host, names, regex,
                                            rebalance_timeout_ms, assignor), pos


def _write_member_value(v: ConsumerGroupMemberMetadataValue) -> bytes:
    b = bytearray(INT16.pack(0))
    write_compact_nullable_string(b, v.instance_id)
    write_compact_nullable_string(b, v.rack_id)
    write_compact_string(b, v.client_id)
    write_compact_string(b, v.client_host)
    _write_strings(b, v.subscribed_topic_names)
    write_compact_nullable_string(b, v.subscribed_topic_regex)
    b += INT32.pack(v.rebalance_timeout_ms)
    write_compact_nullable_string(b, v.server_assignor)
    b.append(0)
    return bytes(b)


def _read_target_epoch(buf: memoryview, pos: int, version: int) -> tuple[ConsumerGroupTargetAssignmentMetadataValue, int]:
    _read_value_version(version, "ConsumerGroupTargetAssignmentMetadataValue")
    (epoch,) = INT32.unpack_from(buf, pos)
    return ConsumerGroupTargetAssignmentMetadataValue(epoch), skip_tags(buf, pos + 4)


def _write_target_epoch(v: ConsumerGroupTargetAssignmentMetadataValue) -> bytes:
    return INT16.pack(0) + INT32.pack(v.assignment_epoch) + b"\x00"


def _read_target_member(buf: memoryview, pos: int, version: int) -> tuple[ConsumerGroupTargetAssignmentMemberValue, int]:
    _read_value_version(version, "ConsumerGroupTargetAssignmentMemberValue")
    tps, pos = _read_tps(buf, pos)
    return ConsumerGroupTargetAssignmentMemberValue(tps), skip_tags(buf, pos)


def _write_target_member(v: ConsumerGroupTargetAssignmentMemberValue) -> bytes:
    b = bytearray(INT16.pack(0))
    _write_tps(b, v.topic_partitions)
    b.append(0)
    return bytes(b)


def _read_current(buf: memoryview, pos: int, version: int) -> tuple[ConsumerGroupCurrentMemberAssignmentValue, int]:
    _read_value_version(version, "ConsumerGroupCurrentMemberAssignmentValue")
    epoch, previous = INT32.unpack_from(buf, pos)[0], INT32.unpack_from(buf, pos + 4)[0]
    state = INT8.unpack_from(buf, pos + 8)[0]
    assigned, pos = _read_tps(buf, pos + 9)
    revoking, pos = _read_tps(buf, pos)
    return ConsumerGroupCurrentMemberAssignmentValue(epoch, previous, state, assigned, revoking), skip_tags(buf, pos)


def _write_current(v: ConsumerGroupCurrentMemberAssignmentValue) -> bytes:
    b = bytearray(INT16.pack(0))
    b += INT32.pack(v.member_epoch) + INT32.pack(v.previous_member_epoch) + INT8.pack(int(v.state))
    _write_tps(b, v.assigned_partitions)
    _write_tps(b, v.partitions_pending_revocation)
    b.append(0)
    return bytes(b)


def _read_regex(buf: memoryview, pos: int, version: int) -> tuple[ConsumerGroupRegularExpressionValue, int]:
    _read_value_version(version, "ConsumerGroupRegularExpressionValue")
    topics, pos = _read_strings(buf, pos)
    regex_version, timestamp = INT64.unpack_from(buf, pos)[0], INT64.unpack_from(buf, pos + 8)[0]
    return ConsumerGroupRegularExpressionValue(topics, regex_version, timestamp), skip_tags(buf, pos + 16)


def _write_regex(v: ConsumerGroupRegularExpressionValue) -> bytes:
    b = bytearray(INT16.pack(0))
    _write_strings(b, v.topics)
    b += INT64.pack(v.version) + INT64.pack(v.timestamp)
    b.append(0)
    return bytes(b)


def _register() -> None:
    for version, cls, fields, read_value, write_value in (
        (3, ConsumerGroupMetadataKey, ("group_id",), _read_group_value, _write_group_value),
        (5, ConsumerGroupMemberMetadataKey, ("group_id", "member_id"), _read_member_value, _write_member_value),
        (6, ConsumerGroupTargetAssignmentMetadataKey, ("group_id",), _read_target_epoch, _write_target_epoch),
        (7, ConsumerGroupTargetAssignmentMemberKey, ("group_id", "member_id"), _read_target_member,
         _write_target_member),
        (8, ConsumerGroupCurrentMemberAssignmentKey, ("group_id", "member_id"), _read_current, _write_current),
        (16, ConsumerGroupRegularExpressionKey, ("group_id", "regex"), _read_regex, _write_regex),
    ):
        read_key, write_key = _key_codec(version, cls, fields)
        register_record_type(RecordType(version, cls, read_key, write_key, read_value, write_value))


_register()
