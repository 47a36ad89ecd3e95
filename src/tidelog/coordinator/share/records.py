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

The codec is the generated :mod:`tidelog.protocol.coordinator_records` ``share_snapshot`` and
``share_update`` modules (records-4.4); this module converts to and from them. A key version other than 0 or 1 is an unknown record type
(:class:`UnknownRecordTypeError`, a ``LookupError`` the runtime's loader logs and skips, as Kafka's does).

Pure functions and immutable values; safe from any thread.
"""

from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass
from typing import Any

from tidelog.coordinator.share.persister import DeliveryState, SharePartitionKey, StateBatch
from tidelog.protocol.coordinator_records.share_snapshot import ShareSnapshotKey, ShareSnapshotValue
from tidelog.protocol.coordinator_records.share_update import ShareUpdateKey, ShareUpdateValue
from tidelog.protocol.exceptions import MalformedMessageError, ProtocolError
from tidelog.protocol.primitives import INT16

SNAPSHOT_KEY_VERSION = ShareSnapshotKey.RECORD_TYPE  # 0
UPDATE_KEY_VERSION = ShareUpdateKey.RECORD_TYPE  # 1
VALUE_VERSION = 0


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


def _batches(schema: Any) -> tuple[StateBatch, ...]:
    try:
        return tuple(StateBatch(b.first_offset, b.last_offset, DeliveryState(b.delivery_state), b.delivery_count)
                     for b in schema.state_batches)
    except ValueError as e:
        raise MalformedMessageError(f"unknown delivery state: {e}") from None


def serialize(record: ShareRecord) -> tuple[bytes, bytes | None]:
    """A record's key and value bytes (each with its version prefix)."""
    key_cls, value_cls = (ShareSnapshotKey, ShareSnapshotValue) if record.snapshot else (ShareUpdateKey, ShareUpdateValue)
    k = record.key
    key = INT16.pack(key_cls.RECORD_TYPE) + key_cls(k.group_id, k.topic_id, k.partition).encode(0)
    v = record.value
    if v is None:
        return key, None
    batches = [value_cls.StateBatch(b.first_offset, b.last_offset, int(b.delivery_state), b.delivery_count)
               for b in v.state_batches]
    if record.snapshot:
        value = ShareSnapshotValue(v.snapshot_epoch, v.state_epoch, v.leader_epoch, v.start_offset,
                                   v.delivery_complete_count, v.create_timestamp, v.write_timestamp, batches)
    else:
        value = ShareUpdateValue(v.snapshot_epoch, v.leader_epoch, v.start_offset, v.delivery_complete_count, batches)
    return key, INT16.pack(VALUE_VERSION) + value.encode(VALUE_VERSION)


def deserialize(key: bytes | memoryview, value: bytes | memoryview | None) -> ShareRecord:
    """Raises UnknownRecordTypeError (a LookupError) or MalformedMessageError."""
    try:
        kbuf = memoryview(key)
        (version,) = INT16.unpack_from(kbuf, 0)
        if version not in (SNAPSHOT_KEY_VERSION, UPDATE_KEY_VERSION):
            raise UnknownRecordTypeError(f"unknown __share_group_state key version {version}")
        snapshot = version == SNAPSHOT_KEY_VERSION
        k, _ = (ShareSnapshotKey if snapshot else ShareUpdateKey).decode_from(kbuf, 2, 0)
        share_key = SharePartitionKey(k.group_id, k.topic_id, k.partition)
        if value is None:
            return ShareRecord(share_key, snapshot)
        vbuf = memoryview(value)
        (value_version,) = INT16.unpack_from(vbuf, 0)
        if value_version != VALUE_VERSION:
            raise MalformedMessageError(f"unknown share record value version {value_version}")
        v, _ = (ShareSnapshotValue if snapshot else ShareUpdateValue).decode_from(vbuf, 2, VALUE_VERSION)
    except (struct.error, IndexError):
        raise MalformedMessageError("__share_group_state record truncated") from None
    except ProtocolError as e:
        raise MalformedMessageError(str(e)) from None
    except (ValueError, UnicodeDecodeError) as e:
        raise MalformedMessageError(str(e)) from None
    batches = _batches(v)
    if snapshot:
        return ShareRecord(share_key, True, ShareValue(v.snapshot_epoch, v.leader_epoch, v.start_offset, batches,
                                                       v.delivery_complete_count, v.state_epoch, v.create_timestamp,
                                                       v.write_timestamp))
    return ShareRecord(share_key, False, ShareValue(v.snapshot_epoch, v.leader_epoch, v.start_offset, batches,
                                                    v.delivery_complete_count))


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
