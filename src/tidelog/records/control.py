"""Control records: the transaction markers (COMMIT/ABORT) the coordinator writes to each partition.

A control batch has attribute bits 4 (transactional) and 5 (control) set, the producer id and epoch
of the transaction, no sequence, and one record with no headers (big-endian fields)::

    key    version  int16   0 (readers accept higher versions and read the fields they know)
           type     int16   ControlRecordType: 0 ABORT, 1 COMMIT, 2-6 KRaft (never written here)
    value  version            int16   0   (EndTxnMarker; only for ABORT and COMMIT)
           coordinatorEpoch   int32

Consumers skip control batches; read_committed consumers use ABORT markers to drop aborted data.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from enum import IntEnum

from tidelog.records.batch import RecordBatchView
from tidelog.records.builder import RecordBatchBuilder
from tidelog.records.errors import InvalidRecordError
from tidelog.records.record import Record

_KEY = struct.Struct(">hh")
_MARKER = struct.Struct(">hi")
CONTROL_KEY_VERSION = 0
END_TXN_MARKER_VERSION = 0


class ControlRecordType(IntEnum):
    """Kafka's control record types; UNKNOWN stands for any id this code does not know. Immutable."""

    UNKNOWN = -1
    ABORT = 0
    COMMIT = 1
    LEADER_CHANGE = 2
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4
    KRAFT_VERSION = 5
    KRAFT_VOTERS = 6

    @classmethod
    def from_id(cls, type_id: int) -> ControlRecordType:
        try:
            return cls(type_id)
        except ValueError:
            return cls.UNKNOWN


@dataclass(frozen=True, slots=True)
class EndTransactionMarker:
    """A decoded COMMIT or ABORT marker. Immutable."""

    control_type: ControlRecordType
    coordinator_epoch: int

    @property
    def is_commit(self) -> bool:
        return self.control_type is ControlRecordType.COMMIT


def control_record_key(control_type: ControlRecordType) -> bytes:
    if control_type is ControlRecordType.UNKNOWN:
        raise ValueError("cannot write an UNKNOWN control record type")
    return _KEY.pack(CONTROL_KEY_VERSION, control_type)


def end_txn_marker_value(coordinator_epoch: int) -> bytes:
    return _MARKER.pack(END_TXN_MARKER_VERSION, coordinator_epoch)


def parse_control_record_type(key: bytes | bytearray | memoryview | None) -> ControlRecordType:
    """The type in a control record key; :class:`InvalidRecordError` if the key is malformed."""
    if key is None or len(key) < _KEY.size:
        raise InvalidRecordError("control record key must have at least 4 bytes")
    version, type_id = _KEY.unpack_from(key, 0)
    if version < 0:
        raise InvalidRecordError(f"invalid control record key version {version}")
    return ControlRecordType.from_id(type_id)


def decode_end_txn_marker(record: Record) -> EndTransactionMarker:
    """The marker in a COMMIT/ABORT control record; :class:`InvalidRecordError` otherwise."""
    control_type = parse_control_record_type(record.key)
    if control_type not in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
        raise InvalidRecordError(f"control record of type {control_type.name} is not a transaction marker")
    value = record.value
    if value is None or len(value) < _MARKER.size:
        raise InvalidRecordError("end transaction marker value must have at least 6 bytes")
    version, coordinator_epoch = _MARKER.unpack_from(value, 0)
    if version < 0:
        raise InvalidRecordError(f"invalid end transaction marker version {version}")
    return EndTransactionMarker(control_type, coordinator_epoch)


def build_control_batch(
    control_type: ControlRecordType,
    *,
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int,
    timestamp_ms: int,
    base_offset: int = 0,
    partition_leader_epoch: int = -1,
) -> bytes:
    """A transactional control batch holding one COMMIT or ABORT marker."""
    if control_type not in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
        raise ValueError(f"a transaction marker is ABORT or COMMIT, not {control_type!r}")
    builder = RecordBatchBuilder(
        base_offset=base_offset,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        is_transactional=True,
        is_control=True,
        partition_leader_epoch=partition_leader_epoch,
    )
    builder.append(timestamp_ms, control_record_key(control_type), end_txn_marker_value(coordinator_epoch))
    return builder.build()


def decode_control_batch(batch: RecordBatchView) -> EndTransactionMarker | None:
    """The transaction marker of a control batch; None when it holds no marker (emptied by
    compaction, or a KRaft/unknown control type). :class:`InvalidRecordError` if ``batch`` is not a
    control batch or its first record is malformed."""
    if not batch.is_control_batch:
        raise InvalidRecordError("not a control batch")
    for record in batch.records():
        if parse_control_record_type(record.key) in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
            return decode_end_txn_marker(record)
        return None
    return None


__all__ = [
    "ControlRecordType",
    "EndTransactionMarker",
    "build_control_batch",
    "control_record_key",
    "decode_control_batch",
    "decode_end_txn_marker",
    "end_txn_marker_value",
    "parse_control_record_type",
]
