"""The records of ``__consumer_offsets``: record types by key version, the versions written, tombstones.

Every key starts with an ``int16`` record type and every value with an ``int16`` version; the bytes
after them follow Kafka 4.4's JSON schemas, generated into :mod:`tidelog.protocol.coordinator_records`
(``make codegen``; the field layouts of every version are documented there; a key's schema is version
0, its class's ``RECORD_TYPE`` is the int16 in front of it)::

    record type   key                         value (versions read; version Tidelog writes)
    0             LegacyOffsetCommitKey       read as OffsetCommitKey (the same layout; Kafka 0.8.2 wrote it),
                                              its value as OffsetCommitValue 0-4; never written
    1             OffsetCommitKey             OffsetCommitValue 0-4; writes 3, or 1 when the commit
                                              carries an expire timestamp (OffsetCommit v2-v4 retention)
    2             GroupMetadataKey            GroupMetadataValue 0-4; writes 3
    3-8, 16 ...   ConsumerGroup*Key (KIP-848) the consumer group type's (its ``RECORD_TYPES``)

A :class:`RecordSerde` reads and writes the record types of one table: the group coordinator builds
its own from :data:`CLASSIC_RECORD_TYPES` and its group types' ``record_types``
(:mod:`tidelog.coordinator.group.serde` has the table of every type Tidelog writes).

Keys are written with their record type in front (OffsetCommitKey: 1) and are the generated key classes
themselves (frozen, hashable). Values are this module's frozen dataclasses, the coordinator's view
(tuples, the field order its code uses); they are converted to and from the generated classes at the
edge. A record whose value is null is a tombstone: it deletes its key (and compaction later drops
both). Kafka 3.x/4.x write exactly these versions (``MetadataVersion.offsetCommitValueVersion`` and
``groupMetadataValueVersion``: the highest non-flexible version), so a Kafka tool can read our log.

The embedded formats of the classic ``consumer`` protocol (member metadata and assignments) are
:mod:`tidelog.coordinator.group.classic.consumer_protocol`'s.

Decoding hostile bytes raises :class:`~tidelog.protocol.exceptions.MalformedMessageError` only.
Pure functions and immutable values: safe from any thread.
"""

from __future__ import annotations

import dataclasses
import struct
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from tidelog.protocol import coordinator_records as schema
from tidelog.protocol.coordinator_records import GroupMetadataKey, OffsetCommitKey
from tidelog.protocol.exceptions import MalformedMessageError, ProtocolError
from tidelog.protocol.message import Message
from tidelog.protocol.primitives import (
    INT16,
    read_uvarint,
)
from tidelog.varint import VarintError

OFFSET_COMMIT_KEY_VERSION = OffsetCommitKey.RECORD_TYPE  # 1; 0 (LegacyOffsetCommitKey) is read too
GROUP_METADATA_KEY_VERSION = GroupMetadataKey.RECORD_TYPE  # 2
OFFSET_COMMIT_VALUE_VERSION = 3
OFFSET_COMMIT_VALUE_VERSION_WITH_EXPIRY = 1
GROUP_METADATA_VALUE_VERSION = 3


class UnknownRecordTypeError(LookupError):
    """A key version no registered record type claims (Kafka's loader logs and skips these)."""


# ------------------------------------------------------------------------------------ the values


@dataclass(frozen=True, slots=True)
class OffsetCommitValue:
    offset: int
    metadata: str
    commit_timestamp: int
    leader_epoch: int = -1
    expire_timestamp: int = -1


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
    """How one record type is written and read. ``key_cls`` is the key's class; ``key_version``
    is written in front of keys; ``read_*`` take ``(buf, pos, version)`` and return ``(obj, pos)``;
    ``write_key(key) -> bytes`` and ``write_value(value) -> bytes`` include the version prefix."""

    key_version: int  # the record type
    key_cls: type
    read_key: Callable[[memoryview, int, int], tuple[Any, int]]
    write_key: Callable[[Any], bytes]
    read_value: Callable[[memoryview, int, int], tuple[Any, int]]
    write_value: Callable[[Any], bytes]
    #: Further record types read as this one (OffsetCommitKey: LegacyOffsetCommitKey's 0).
    aliases: tuple[int, ...] = field(default=())


class RecordSerde:
    """Serialize and deserialize the records of one table of record types (by key class, by key
    version). Two types claiming one key version are a construction error. Immutable once built."""

    def __init__(self, record_types: Iterable[RecordType]) -> None:
        self._by_version: dict[int, RecordType] = {}
        self._by_key_class: dict[type, RecordType] = {}
        for rt in record_types:
            for v in (rt.key_version, *rt.aliases):
                known = self._by_version.get(v)
                if known is not None and known.key_cls is not rt.key_cls:
                    raise ValueError(f"key version {v} is already registered for {known.key_cls.__name__}")
                self._by_version[v] = rt
            self._by_key_class[rt.key_cls] = rt

    def serialize(self, record: CoordinatorRecord) -> tuple[bytes, bytes | None]:
        rt = self._by_key_class.get(type(record.key))
        if rt is None:
            raise UnknownRecordTypeError(f"no record type for key {type(record.key).__name__}")
        return rt.write_key(record.key), None if record.value is None else rt.write_value(record.value)

    def deserialize(self, key: bytes | memoryview, value: bytes | memoryview | None) -> CoordinatorRecord:
        """Raises UnknownRecordTypeError (a LookupError) or MalformedMessageError."""
        kbuf = memoryview(key)
        try:
            (key_version,) = INT16.unpack_from(kbuf, 0)
            rt = self._by_version.get(key_version)
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
        except VarintError as e:  # from the hand-written layouts; generated ones raise MalformedMessageError
            raise MalformedMessageError(str(e)) from None


def _check_end(buf: memoryview, pos: int) -> None:
    if pos != len(buf):
        raise MalformedMessageError(f"{len(buf) - pos} unexpected bytes after the key")


# ------------------------------------------------------------------ record types from generated schemas


def read_schema(cls: type[Message], buf: memoryview, pos: int, version: int) -> tuple[Any, int]:
    """Decode the generated ``cls`` at ``pos``; a version it does not have is malformed."""
    if not cls.MIN_VERSION <= version <= cls.MAX_VERSION:
        raise MalformedMessageError(f"unknown {cls.__name__} version {version}")
    try:
        return cls.decode_from(buf, pos, version)
    except ProtocolError as e:
        raise MalformedMessageError(str(e)) from None


def write_schema(obj: Message, version: int) -> bytes:
    """The int16 version, then ``obj`` in that version."""
    return INT16.pack(version) + obj.encode(version)


def schema_record_type(key_cls: type[Message], value_cls: type[Message],
                       value_from_schema: Callable[[Any], Any], value_to_schema: Callable[[Any], Message],
                       value_version: Callable[[Any], int], legacy_key_cls: type[Message] | None = None) -> RecordType:
    """A record type whose keys are the generated ``key_cls`` (its ``RECORD_TYPE`` in front, then the key
    in version 0) and whose values go through the generated ``value_cls``: ``value_from_schema`` and
    ``value_to_schema`` convert between it and the coordinator's value; ``value_version(value)`` picks
    the version to write. Keys of ``legacy_key_cls``'s record type (the same layout) are read as
    ``key_cls``, never written."""

    def read_key(buf: memoryview, pos: int, record_type: int) -> tuple[Any, int]:
        if legacy_key_cls is not None and record_type == legacy_key_cls.RECORD_TYPE:
            legacy, pos = read_schema(legacy_key_cls, buf, pos, 0)
            return same_fields(key_cls, legacy), pos
        return read_schema(key_cls, buf, pos, 0)

    def write_key(key: Any) -> bytes:
        return INT16.pack(key_cls.RECORD_TYPE) + key.encode(0)

    def read_value(buf: memoryview, pos: int, version: int) -> tuple[Any, int]:
        obj, pos = read_schema(value_cls, buf, pos, version)
        return value_from_schema(obj), pos

    def write_value(value: Any) -> bytes:
        return write_schema(value_to_schema(value), value_version(value))

    aliases = () if legacy_key_cls is None else (legacy_key_cls.RECORD_TYPE,)
    return RecordType(key_cls.RECORD_TYPE, key_cls, read_key, write_key, read_value, write_value, aliases)


def same_fields(cls: type, obj: Any, **changed: Any) -> Any:
    """``cls(...)`` with every field of ``cls`` taken from the like-named attribute of ``obj``, except
    ``changed`` (both sides use Kafka's field names, snake_cased)."""
    names = [f.name for f in cls.SCHEMA] if hasattr(cls, "SCHEMA") else [f.name for f in dataclasses.fields(cls)]
    return cls(**{n: getattr(obj, n) for n in names if n not in changed}, **changed)


def skip_tags(buf: memoryview, pos: int) -> int:
    """Skip a tagged-field section (for the hand-written layouts of record types ../shared lacks)."""
    n, pos = read_uvarint(buf, pos)
    for _ in range(n):
        _, pos = read_uvarint(buf, pos)
        size, pos = read_uvarint(buf, pos)
        pos += size
        if pos > len(buf):
            raise MalformedMessageError("tagged field runs past the end of the record")
    return pos


# -------------------------------------------------------------------- offset commit, group metadata


def offset_value_version(value: OffsetCommitValue) -> int:
    return OFFSET_COMMIT_VALUE_VERSION_WITH_EXPIRY if value.expire_timestamp >= 0 else OFFSET_COMMIT_VALUE_VERSION


def _offset_value_schema(value: OffsetCommitValue) -> schema.OffsetCommitValue:
    # topicId (v4+, tagged) is not kept: Tidelog writes versions 1 and 3, as Kafka does.
    return same_fields(schema.OffsetCommitValue, value, topic_id=schema.OffsetCommitValue().topic_id)


def write_offset_value(value: OffsetCommitValue, version: int | None = None) -> bytes:
    """The value in ``version`` (default: the one Kafka writes for it, see :func:`offset_value_version`)."""
    return write_schema(_offset_value_schema(value), offset_value_version(value) if version is None else version)


def _group_value(obj: schema.GroupMetadataValue) -> GroupMetadataValue:
    return same_fields(GroupMetadataValue, obj, members=tuple(same_fields(MemberMetadata, m) for m in obj.members))


def _group_value_schema(value: GroupMetadataValue) -> schema.GroupMetadataValue:
    members = [same_fields(schema.GroupMetadataValue.MemberMetadata, m) for m in value.members]
    return same_fields(schema.GroupMetadataValue, value, members=members)


def write_group_value(value: GroupMetadataValue, version: int = GROUP_METADATA_VALUE_VERSION) -> bytes:
    return write_schema(_group_value_schema(value), version)


#: The record types of classic groups and committed offsets (every group coordinator reads these).
CLASSIC_RECORD_TYPES: tuple[RecordType, ...] = (
    schema_record_type(OffsetCommitKey, schema.OffsetCommitValue, lambda obj: same_fields(OffsetCommitValue, obj),
                       _offset_value_schema, offset_value_version, legacy_key_cls=schema.LegacyOffsetCommitKey),
    schema_record_type(GroupMetadataKey, schema.GroupMetadataValue, _group_value, _group_value_schema,
                       lambda _: GROUP_METADATA_VALUE_VERSION),
)


# ------------------------------------------------------------------------------------ builders


def offset_commit_record(group: str, topic: str, partition: int, value: OffsetCommitValue) -> CoordinatorRecord:
    return CoordinatorRecord(OffsetCommitKey(group, topic, partition), value)


def offset_tombstone(group: str, topic: str, partition: int) -> CoordinatorRecord:
    return CoordinatorRecord(OffsetCommitKey(group, topic, partition), None)


def group_metadata_record(group: str, value: GroupMetadataValue) -> CoordinatorRecord:
    return CoordinatorRecord(GroupMetadataKey(group), value)


def group_tombstone(group: str) -> CoordinatorRecord:
    return CoordinatorRecord(GroupMetadataKey(group), None)


__all__ = [
    "CLASSIC_RECORD_TYPES",
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
    "RecordSerde",
    "RecordType",
    "UnknownRecordTypeError",
    "group_metadata_record",
    "group_tombstone",
    "offset_commit_record",
    "offset_tombstone",
    "offset_value_version",
    "read_schema",
    "same_fields",
    "schema_record_type",
    "skip_tags",
    "write_group_value",
    "write_offset_value",
    "write_schema",
]
