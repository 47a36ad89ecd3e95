"""The records of ``__consumer_offsets``: keys and values with versions, laid out as Kafka writes them.

Every key and every value starts with an ``int16`` version. The key version names the record type::

    key version   key                         value (versions read; version Tidelog writes)
    0, 1          OffsetCommitKey             OffsetCommitValue 0-4; writes 3, or 1 when the commit
                                              carries an expire timestamp (OffsetCommit v2-v4 retention)
    2             GroupMetadataKey            GroupMetadataValue 0-4; writes 3
    3-8, 16 ...   ConsumerGroup*Key (KIP-848) registered by the consumer-group module through
                                              :func:`register_record_type`

A record whose value is null is a tombstone: it deletes its key (and compaction later drops both).
Kafka 3.x/4.x write exactly these versions (``MetadataVersion.offsetCommitValueVersion`` and
``groupMetadataValueVersion``: the highest non-flexible version), so a Kafka tool can read our log.

Layouts, big-endian. ``string`` is an int16 length and UTF-8 bytes, ``bytes`` an int32 length; a
nullable one uses length -1 for null. Flexible versions (v4 values) use compact strings/bytes/arrays
(an unsigned varint length + 1) and end every struct with a tagged-field section::

    OffsetCommitKey (v0, v1)          GroupMetadataKey (v2)
      version    int16                  version  int16
      group      string                 group    string
      topic      string
      partition  int32

    OffsetCommitValue                 v0  v1  v2  v3  v4
      version           int16         .   .   .   .   .
      offset            int64         .   .   .   .   .
      leader_epoch      int32                     .   .     -1 = none
      metadata          string        .   .   .   .   .
      commit_timestamp  int64         .   .   .   .   .
      expire_timestamp  int64             .                 -1 = none
      tagged fields                                   .

    GroupMetadataValue                v0  v1  v2  v3  v4
      version                 int16   .   .   .   .   .
      protocol_type           string  .   .   .   .   .
      generation              int32   .   .   .   .   .
      protocol       nullable string  .   .   .   .   .
      leader         nullable string  .   .   .   .   .
      current_state_timestamp int64           .   .   .     -1 = unknown
      members                 array   .   .   .   .   .
        member_id             string  .   .   .   .   .
        group_instance_id  nullable string        .   .
        client_id             string  .   .   .   .   .
        client_host           string  .   .   .   .   .
        rebalance_timeout     int32       .   .   .   .
        session_timeout       int32   .   .   .   .   .
        subscription          bytes   .   .   .   .   .
        assignment            bytes   .   .   .   .   .
        tagged fields                                 .
      tagged fields                                   .

The embedded formats of the classic ``consumer`` protocol, which a group's member metadata and
assignments carry (never flexible; every version starts with the v0 fields, which is all we read)::

    ConsumerProtocolSubscription      ConsumerProtocolAssignment
      version    int16                  version              int16
      topics     array of string        assigned_partitions  array of
      user_data  nullable bytes           topic              string
      (v1+ owned partitions ...)          partitions         array of int32
                                        user_data            nullable bytes

Decoding hostile bytes raises :class:`~tidelog.protocol.exceptions.MalformedMessageError` only.
Pure functions and immutable values: safe from any thread.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tidelog.protocol.exceptions import MalformedMessageError
from tidelog.protocol.primitives import (
    INT16,
    INT32,
    INT64,
    read_array_len,
    read_bytes,
    read_compact_array_len,
    read_compact_bytes,
    read_compact_nullable_string,
    read_compact_string,
    read_nullable_bytes,
    read_nullable_string,
    read_string,
    read_uvarint,
    write_array_len,
    write_bytes,
    write_compact_array_len,
    write_compact_bytes,
    write_compact_nullable_string,
    write_compact_string,
    write_nullable_string,
    write_string,
)

OFFSET_COMMIT_KEY_VERSION = 1
GROUP_METADATA_KEY_VERSION = 2
OFFSET_COMMIT_VALUE_VERSION = 3
OFFSET_COMMIT_VALUE_VERSION_WITH_EXPIRY = 1
GROUP_METADATA_VALUE_VERSION = 3


class UnknownRecordTypeError(LookupError):
    """A key version no registered record type claims (Kafka's loader logs and skips these)."""


# ------------------------------------------------------------------------------------ the values


@dataclass(frozen=True, slots=True)
class OffsetCommitKey:
    group: str
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class OffsetCommitValue:
    offset: int
    metadata: str
    commit_timestamp: int
    leader_epoch: int = -1
    expire_timestamp: int = -1


@dataclass(frozen=True, slots=True)
class GroupMetadataKey:
    group: str


@dataclass(frozen=True, slots=True)
class MemberMetadata:
    member_id: str
    client_id: str
    client_host: str
    session_timeout: int
    subscription: bytes
    assignment: bytes
    rebalance_timeout: int = -1
    group_instance_id: str | None = None


@dataclass(frozen=True, slots=True)
class GroupMetadataValue:
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp: int = -1
    members: tuple[MemberMetadata, ...] = ()


@dataclass(frozen=True, slots=True)
class CoordinatorRecord:
    """One record of the topic: a key object and a value object, or ``None`` for a tombstone."""

    key: Any
    value: Any | None = None


# ---------------------------------------------------------------------------------- the registry


@dataclass(frozen=True, slots=True)
class RecordType:
    """How one record type is written and read. ``key_cls`` is the key's dataclass; ``key_version``
    is written in front of keys; ``read_*`` take ``(buf, pos, version)`` and return ``(obj, pos)``;
    ``write_key(key) -> bytes`` and ``write_value(value) -> bytes`` include the version prefix."""

    key_version: int
    key_cls: type
    read_key: Callable[[memoryview, int, int], tuple[Any, int]]
    write_key: Callable[[Any], bytes]
    read_value: Callable[[memoryview, int, int], tuple[Any, int]]
    write_value: Callable[[Any], bytes]
    #: Further key versions that mean the same type (OffsetCommitKey: 0 and 1).
    aliases: tuple[int, ...] = field(default=())


_BY_VERSION: dict[int, RecordType] = {}
_BY_KEY_CLASS: dict[type, RecordType] = {}


def register_record_type(rt: RecordType) -> None:
    """Make a record type known to :func:`serialize` / :func:`deserialize` (KIP-848 records use this)."""
    for v in (rt.key_version, *rt.aliases):
        if v in _BY_VERSION and _BY_VERSION[v].key_cls is not rt.key_cls:
            raise ValueError(f"key version {v} is already registered for {_BY_VERSION[v].key_cls.__name__}")
        _BY_VERSION[v] = rt
    _BY_KEY_CLASS[rt.key_cls] = rt


def serialize(record: CoordinatorRecord) -> tuple[bytes, bytes | None]:
    rt = _BY_KEY_CLASS.get(type(record.key))
    if rt is None:
        raise UnknownRecordTypeError(f"no record type for key {type(record.key).__name__}")
    return rt.write_key(record.key), None if record.value is None else rt.write_value(record.value)


def deserialize(key: bytes | memoryview, value: bytes | memoryview | None) -> CoordinatorRecord:
    """Raises UnknownRecordTypeError (a LookupError) or MalformedMessageError."""
    kbuf = memoryview(key)
    try:
        (key_version,) = INT16.unpack_from(kbuf, 0)
        rt = _BY_VERSION.get(key_version)
        if rt is None:
            raise UnknownRecordTypeError(f"unknown record type (key version {key_version})")
        k, pos = rt.read_key(kbuf, 2, key_version)
        _check_end(kbuf, pos)
        if value is None:
            return CoordinatorRecord(k, None)
        vbuf = memoryview(value)
        (value_version,) = INT16.unpack_from(vbuf, 0)
        v, pos = rt.read_value(vbuf, 2, value_version)
        return CoordinatorRecord(k, v)
    except (struct.error, IndexError):
        raise MalformedMessageError("record truncated") from None


def _check_end(buf: memoryview, pos: int) -> None:
    if pos != len(buf):
        raise MalformedMessageError(f"{len(buf) - pos} unexpected bytes after the key")


# ---------------------------------------------------------------------------- small read helpers


def _i32(buf: memoryview, pos: int) -> tuple[int, int]:
    return INT32.unpack_from(buf, pos)[0], pos + 4


def _i64(buf: memoryview, pos: int) -> tuple[int, int]:
    return INT64.unpack_from(buf, pos)[0], pos + 8


def skip_tags(buf: memoryview, pos: int) -> int:
    n, pos = read_uvarint(buf, pos)
    for _ in range(n):
        _, pos = read_uvarint(buf, pos)
        size, pos = read_uvarint(buf, pos)
        pos += size
        if pos > len(buf):
            raise MalformedMessageError("tagged field runs past the end of the record")
    return pos


# --------------------------------------------------------------------------------- offset commit


def _read_offset_key(buf: memoryview, pos: int, version: int) -> tuple[OffsetCommitKey, int]:
    group, pos = read_string(buf, pos)
    topic, pos = read_string(buf, pos)
    partition, pos = _i32(buf, pos)
    return OffsetCommitKey(group, topic, partition), pos


def _write_offset_key(key: OffsetCommitKey) -> bytes:
    b = bytearray(INT16.pack(OFFSET_COMMIT_KEY_VERSION))
    write_string(b, key.group)
    write_string(b, key.topic)
    b += INT32.pack(key.partition)
    return bytes(b)


def _read_offset_value(buf: memoryview, pos: int, version: int) -> tuple[OffsetCommitValue, int]:
    if not 0 <= version <= 4:
        raise MalformedMessageError(f"unknown OffsetCommitValue version {version}")
    offset, pos = _i64(buf, pos)
    leader_epoch = -1
    if version >= 3:
        leader_epoch, pos = _i32(buf, pos)
    metadata, pos = (read_compact_string if version >= 4 else read_string)(buf, pos)
    commit_timestamp, pos = _i64(buf, pos)
    expire_timestamp = -1
    if version == 1:
        expire_timestamp, pos = _i64(buf, pos)
    if version >= 4:
        pos = skip_tags(buf, pos)
    return OffsetCommitValue(offset, metadata, commit_timestamp, leader_epoch, expire_timestamp), pos


def offset_value_version(value: OffsetCommitValue) -> int:
    return OFFSET_COMMIT_VALUE_VERSION_WITH_EXPIRY if value.expire_timestamp >= 0 else OFFSET_COMMIT_VALUE_VERSION


def write_offset_value(value: OffsetCommitValue, version: int | None = None) -> bytes:
    """The value in ``version`` (default: the one Kafka writes for it, see :func:`offset_value_version`)."""
    v = offset_value_version(value) if version is None else version
    b = bytearray(INT16.pack(v))
    b += INT64.pack(value.offset)
    if v >= 3:
        b += INT32.pack(value.leader_epoch)
    (write_compact_string if v >= 4 else write_string)(b, value.metadata)
    b += INT64.pack(value.commit_timestamp)
    if v == 1:
        b += INT64.pack(value.expire_timestamp)
    if v >= 4:
        b.append(0)
    return bytes(b)


# -------------------------------------------------------------------------------- group metadata


def _read_group_key(buf: memoryview, pos: int, version: int) -> tuple[GroupMetadataKey, int]:
    group, pos = read_string(buf, pos)
    return GroupMetadataKey(group), pos


def _write_group_key(key: GroupMetadataKey) -> bytes:
    b = bytearray(INT16.pack(GROUP_METADATA_KEY_VERSION))
    write_string(b, key.group)
    return bytes(b)


def _read_member(buf: memoryview, pos: int, version: int) -> tuple[MemberMetadata, int]:
    flexible = version >= 4
    rstr = read_compact_string if flexible else read_string
    rbytes = read_compact_bytes if flexible else read_bytes
    member_id, pos = rstr(buf, pos)
    instance_id = None
    if version >= 3:
        instance_id, pos = (read_compact_nullable_string if flexible else read_nullable_string)(buf, pos)
    client_id, pos = rstr(buf, pos)
    client_host, pos = rstr(buf, pos)
    rebalance_timeout = -1
    if version >= 1:
        rebalance_timeout, pos = _i32(buf, pos)
    session_timeout, pos = _i32(buf, pos)
    subscription, pos = rbytes(buf, pos)
    assignment, pos = rbytes(buf, pos)
    if flexible:
        pos = skip_tags(buf, pos)
    return MemberMetadata(member_id, client_id, client_host, session_timeout, subscription, assignment,
                          rebalance_timeout, instance_id), pos


def _read_group_value(buf: memoryview, pos: int, version: int) -> tuple[GroupMetadataValue, int]:
    if not 0 <= version <= 4:
        raise MalformedMessageError(f"unknown GroupMetadataValue version {version}")
    flexible = version >= 4
    protocol_type, pos = (read_compact_string if flexible else read_string)(buf, pos)
    generation, pos = _i32(buf, pos)
    rnstr = read_compact_nullable_string if flexible else read_nullable_string
    protocol, pos = rnstr(buf, pos)
    leader, pos = rnstr(buf, pos)
    timestamp = -1
    if version >= 2:
        timestamp, pos = _i64(buf, pos)
    n, pos = (read_compact_array_len if flexible else read_array_len)(buf, pos, 6)
    if n < 0:
        raise MalformedMessageError("null members array")
    members = []
    for _ in range(n):
        m, pos = _read_member(buf, pos, version)
        members.append(m)
    if flexible:
        pos = skip_tags(buf, pos)
    return GroupMetadataValue(protocol_type, generation, protocol, leader, timestamp, tuple(members)), pos


def write_group_value(value: GroupMetadataValue, version: int = GROUP_METADATA_VALUE_VERSION) -> bytes:
    flexible = version >= 4
    wstr = write_compact_string if flexible else write_string
    wnstr = write_compact_nullable_string if flexible else write_nullable_string
    wbytes = write_compact_bytes if flexible else write_bytes
    b = bytearray(INT16.pack(version))
    wstr(b, value.protocol_type)
    b += INT32.pack(value.generation)
    wnstr(b, value.protocol)
    wnstr(b, value.leader)
    if version >= 2:
        b += INT64.pack(value.current_state_timestamp)
    (write_compact_array_len if flexible else write_array_len)(b, len(value.members))
    for m in value.members:
        wstr(b, m.member_id)
        if version >= 3:
            wnstr(b, m.group_instance_id)
        wstr(b, m.client_id)
        wstr(b, m.client_host)
        if version >= 1:
            b += INT32.pack(m.rebalance_timeout)
        b += INT32.pack(m.session_timeout)
        wbytes(b, m.subscription)
        wbytes(b, m.assignment)
        if flexible:
            b.append(0)
    if flexible:
        b.append(0)
    return bytes(b)


register_record_type(RecordType(OFFSET_COMMIT_KEY_VERSION, OffsetCommitKey, _read_offset_key, _write_offset_key,
                                _read_offset_value, write_offset_value, aliases=(0,)))
register_record_type(RecordType(GROUP_METADATA_KEY_VERSION, GroupMetadataKey, _read_group_key, _write_group_key,
                                _read_group_value, write_group_value))


# ------------------------------------------------------------------------------------ builders


def offset_commit_record(group: str, topic: str, partition: int, value: OffsetCommitValue) -> CoordinatorRecord:
    return CoordinatorRecord(OffsetCommitKey(group, topic, partition), value)


def offset_tombstone(group: str, topic: str, partition: int) -> CoordinatorRecord:
    return CoordinatorRecord(OffsetCommitKey(group, topic, partition), None)


def group_metadata_record(group: str, value: GroupMetadataValue) -> CoordinatorRecord:
    return CoordinatorRecord(GroupMetadataKey(group), value)


def group_tombstone(group: str) -> CoordinatorRecord:
    return CoordinatorRecord(GroupMetadataKey(group), None)


# ------------------------------------------------------------------ the embedded consumer protocol


def parse_subscription_topics(metadata: bytes) -> list[str]:
    """The topics of a ConsumerProtocolSubscription (any version). MalformedMessageError if not one."""
    buf = memoryview(metadata)
    try:
        (version,) = INT16.unpack_from(buf, 0)
        if version < 0:
            raise MalformedMessageError(f"negative consumer protocol version {version}")
        n, pos = read_array_len(buf, 2, 2)
        if n < 0:
            raise MalformedMessageError("null topics")
        topics = []
        for _ in range(n):
            t, pos = read_string(buf, pos)
            topics.append(t)
        read_nullable_bytes(buf, pos)
        return topics
    except (struct.error, IndexError):
        raise MalformedMessageError("subscription truncated") from None


def parse_assignment(assignment: bytes) -> dict[str, list[int]]:
    """Topic -> partitions of a ConsumerProtocolAssignment (any version); ``{}`` for empty bytes."""
    if not assignment:
        return {}
    buf = memoryview(assignment)
    try:
        n, pos = read_array_len(buf, 2, 6)
        out: dict[str, list[int]] = {}
        for _ in range(max(n, 0)):
            topic, pos = read_string(buf, pos)
            m, pos = read_array_len(buf, pos, 4)
            parts = out.setdefault(topic, [])
            for _ in range(max(m, 0)):
                p, pos = _i32(buf, pos)
                parts.append(p)
        return out
    except (struct.error, IndexError):
        raise MalformedMessageError("assignment truncated") from None


def encode_subscription(topics: list[str], user_data: bytes | None = None) -> bytes:
    """A v0 ConsumerProtocolSubscription (tests and tools)."""
    b = bytearray(INT16.pack(0))
    write_array_len(b, len(topics))
    for t in topics:
        write_string(b, t)
    b += INT32.pack(-1) if user_data is None else INT32.pack(len(user_data)) + user_data
    return bytes(b)


def encode_assignment(partitions: dict[str, list[int]], user_data: bytes | None = None) -> bytes:
    """A v0 ConsumerProtocolAssignment (tests and tools)."""
    b = bytearray(INT16.pack(0))
    write_array_len(b, len(partitions))
    for topic, parts in partitions.items():
        write_string(b, topic)
        write_array_len(b, len(parts))
        for p in parts:
            b += INT32.pack(p)
    b += INT32.pack(-1) if user_data is None else INT32.pack(len(user_data)) + user_data
    return bytes(b)


__all__ = [
    "GROUP_METADATA_KEY_VERSION",
    "GROUP_METADATA_VALUE_VERSION",
    "OFFSET_COMMIT_KEY_VERSION",
    "OFFSET_COMMIT_VALUE_VERSION",
    "OFFSET_COMMIT_VALUE_VERSION_WITH_EXPIRY",
    "CoordinatorRecord",
    "GroupMetadataKey",
    "GroupMetadataValue",
    "MemberMetadata",
    "OffsetCommitKey",
    "OffsetCommitValue",
    "RecordType",
    "UnknownRecordTypeError",
    "deserialize",
    "encode_assignment",
    "encode_subscription",
    "group_metadata_record",
    "group_tombstone",
    "offset_commit_record",
    "offset_tombstone",
    "offset_value_version",
    "parse_assignment",
    "parse_subscription_topics",
    "register_record_type",
    "serialize",
    "skip_tags",
    "write_group_value",
    "write_offset_value",
]
