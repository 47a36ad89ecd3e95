"""The records of ``__share_group_state``: Kafka's ``ShareSnapshot`` and ``ShareUpdate`` (records-4.4).

Every key and value starts with an ``int16`` version. The key version names the record type (Kafka's
coordinator record ``apiKey``)::

    key     version 0   ShareSnapshotKey  group_id (string), topic_id (uuid), partition (int32)
            version 1   ShareUpdateKey    the same fields
    value   version 0   ShareSnapshotValue (flexible) snapshot_epoch, state_epoch, leader_epoch, start_offset,
                        create_timestamp, write_timestamp, state_batches, tagged delivery_complete_count (0)
                        ShareUpdateValue (flexible) snapshot_epoch, leader_epoch, start_offset, state_batches,
                        tagged delivery_complete_count (0)
    state batch         first_offset (int64), last_offset (int64), delivery_state (int8), delivery_count (int16)
    null value          a tombstone: the share partition's state was deleted

The codec is written by hand here (the project's generated ``coordinator_records`` package does not hold
these two record types yet; it is regenerated from records-4.4 separately): the layouts are small and
fixed at version 0. A key version other than 0 or 1 is an unknown record type
(:class:`UnknownRecordTypeError`, a ``LookupError`` the runtime's loader logs and skips, as Kafka's does).

Pure functions and immutable values; safe from any thread.
"""

from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass

from tidelog.coordinator.share.persister import DeliveryState, SharePartitionKey, StateBatch
from tidelog.protocol.exceptions import MalformedMessageError
from tidelog.protocol.primitives import (
    INT16,
    read_compact_array_len,
    read_string,
    read_uuid,
    write_compact_array_len,
    write_string,
    write_tagged,
    write_uuid,
)
from tidelog.varint import read_uvarint, write_uvarint

SNAPSHOT_KEY_VERSION = 0
UPDATE_KEY_VERSION = 1
VALUE_VERSION = 0

_SNAPSHOT_HEAD = struct.Struct(">iiiq")  # snapshot_epoch, state_epoch, leader_epoch, start_offset
_TIMESTAMPS = struct.Struct(">qq")  # create_timestamp, write_timestamp
_UPDATE_HEAD = struct.Struct(">iiq")  # snapshot_epoch, leader_epoch, start_offset
_BATCH = struct.Struct(">qqbh")
_INT32 = struct.Struct(">i")
_DELIVERY_COMPLETE_TAG = 0


class UnknownRecordTypeError(LookupError):
    """A key version this coordinator does not know."""


@dataclass(frozen=True, slots=True)
class ShareValue:
    """A ShareSnapshotValue (``state_epoch``, the timestamps) or a ShareUpdateValue (``state_epoch`` -1 and
    no timestamps: an update does not carry them)."""

    snapshot_epoch: int
    leader_epoch: int
    start_offset: int
    state_batches: tuple[StateBatch, ...] = ()
    delivery_complete_count: int = -1
    state_epoch: int = -1
    create_timestamp: int = -1
    write_timestamp: int = -1


@dataclass(frozen=True, slots=True)
class ShareRecord:
    """One record: a snapshot (the whole state) or an update (a change), or a tombstone (``value`` None)."""

    key: SharePartitionKey
    snapshot: bool
    value: ShareValue | None = None


def parse_coordinator_key(key: str) -> SharePartitionKey:
    """``"{group_id}:{topic_id}:{partition}"`` back to its key (Kafka's ``SharePartitionKey.getInstance``);
    ValueError when malformed. The group id may hold colons: the last two fields are split off."""
    group_id, topic_id, partition = key.rsplit(":", 2)
    if not group_id:
        raise ValueError("empty group id")
    return SharePartitionKey(group_id, uuid.UUID(topic_id), int(partition))


def is_share_coordinator_key(key: str) -> bool:
    """Whether FindCoordinator's SHARE key is well-formed (else INVALID_REQUEST)."""
    try:
        parse_coordinator_key(key)
    except ValueError:
        return False
    return True


def _write_batches(b: bytearray, batches: tuple[StateBatch, ...]) -> None:
    write_compact_array_len(b, len(batches))
    for s in batches:
        b += _BATCH.pack(s.first_offset, s.last_offset, int(s.delivery_state), s.delivery_count)
        write_uvarint(b, 0)  # no tagged fields


def _read_batches(buf: memoryview, pos: int) -> tuple[tuple[StateBatch, ...], int]:
    n, pos = read_compact_array_len(buf, pos, _BATCH.size + 1)
    if n < 0:
        raise MalformedMessageError("null state batches")
    out = []
    for _ in range(n):
        first, last, state, count = _BATCH.unpack_from(buf, pos)
        pos = _skip_tagged(buf, pos + _BATCH.size)
        try:
            delivery_state = DeliveryState(state)
        except ValueError:
            raise MalformedMessageError(f"unknown delivery state {state}") from None
        out.append(StateBatch(first, last, delivery_state, count))
    return tuple(out), pos


def _skip_tagged(buf: memoryview, pos: int) -> int:
    count, pos = read_uvarint(buf, pos)
    for _ in range(count):
        _, pos = read_uvarint(buf, pos)
        size, pos = read_uvarint(buf, pos)
        if size > len(buf) - pos:
            raise MalformedMessageError("tagged field truncated")
        pos += size
    return pos


def _read_value_tags(buf: memoryview, pos: int) -> tuple[int, int]:
    """The value's tagged fields: (delivery_complete_count or -1, new position)."""
    count, pos = read_uvarint(buf, pos)
    dcc = -1
    for _ in range(count):
        tag, pos = read_uvarint(buf, pos)
        size, pos = read_uvarint(buf, pos)
        if size > len(buf) - pos:
            raise MalformedMessageError("tagged field truncated")
        if tag == _DELIVERY_COMPLETE_TAG:
            if size != 4:
                raise MalformedMessageError("DeliveryCompleteCount is not an int32")
            (dcc,) = _INT32.unpack_from(buf, pos)
        pos += size
    return dcc, pos


def serialize(record: ShareRecord) -> tuple[bytes, bytes | None]:
    """A record's key and value bytes (each with its version prefix)."""
    key = bytearray(INT16.pack(SNAPSHOT_KEY_VERSION if record.snapshot else UPDATE_KEY_VERSION))
    write_string(key, record.key.group_id)
    write_uuid(key, record.key.topic_id)
    key += _INT32.pack(record.key.partition)
    v = record.value
    if v is None:
        return bytes(key), None
    value = bytearray(INT16.pack(VALUE_VERSION))
    if record.snapshot:
        value += _SNAPSHOT_HEAD.pack(v.snapshot_epoch, v.state_epoch, v.leader_epoch, v.start_offset)
        value += _TIMESTAMPS.pack(v.create_timestamp, v.write_timestamp)
    else:
        value += _UPDATE_HEAD.pack(v.snapshot_epoch, v.leader_epoch, v.start_offset)
    _write_batches(value, v.state_batches)
    write_tagged(value, [(_DELIVERY_COMPLETE_TAG, _INT32.pack(v.delivery_complete_count))]
                 if v.delivery_complete_count != -1 else [])
    return bytes(key), bytes(value)


def deserialize(key: bytes | memoryview, value: bytes | memoryview | None) -> ShareRecord:
    """Raises UnknownRecordTypeError (a LookupError) or MalformedMessageError."""
    try:
        kbuf = memoryview(key)
        (version,) = INT16.unpack_from(kbuf, 0)
        if version not in (SNAPSHOT_KEY_VERSION, UPDATE_KEY_VERSION):
            raise UnknownRecordTypeError(f"unknown __share_group_state key version {version}")
        group_id, pos = read_string(kbuf, 2)
        topic_id, pos = read_uuid(kbuf, pos)
        (partition,) = _INT32.unpack_from(kbuf, pos)
        share_key = SharePartitionKey(group_id, topic_id, partition)
        snapshot = version == SNAPSHOT_KEY_VERSION
        if value is None:
            return ShareRecord(share_key, snapshot)
        vbuf = memoryview(value)
        (value_version,) = INT16.unpack_from(vbuf, 0)
        if value_version != VALUE_VERSION:
            raise MalformedMessageError(f"unknown share record value version {value_version}")
        if snapshot:
            snapshot_epoch, state_epoch, leader_epoch, start_offset = _SNAPSHOT_HEAD.unpack_from(vbuf, 2)
            create_ts, write_ts = _TIMESTAMPS.unpack_from(vbuf, 2 + _SNAPSHOT_HEAD.size)
            pos = 2 + _SNAPSHOT_HEAD.size + _TIMESTAMPS.size
        else:
            snapshot_epoch, leader_epoch, start_offset = _UPDATE_HEAD.unpack_from(vbuf, 2)
            state_epoch, create_ts, write_ts = -1, -1, -1
            pos = 2 + _UPDATE_HEAD.size
        batches, pos = _read_batches(vbuf, pos)
        dcc, _ = _read_value_tags(vbuf, pos)
    except (struct.error, IndexError):
        raise MalformedMessageError("__share_group_state record truncated") from None
    except (ValueError, UnicodeDecodeError) as e:
        raise MalformedMessageError(str(e)) from None
    return ShareRecord(share_key, snapshot, ShareValue(snapshot_epoch, leader_epoch, start_offset, batches, dcc,
                                                       state_epoch, create_ts, write_ts))


__all__ = [
    "SNAPSHOT_KEY_VERSION",
    "UPDATE_KEY_VERSION",
    "ShareRecord",
    "ShareValue",
    "UnknownRecordTypeError",
    "deserialize",
    "is_share_coordinator_key",
    "parse_coordinator_key",
    "serialize",
]
