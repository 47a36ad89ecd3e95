"""Converting between legacy message sets (magic 0/1, legacy.py) and magic-v2 batches (batch.py).

Up-conversion (:func:`legacy_to_batches`, for v0/v1 Produce requests): each compressed wrapper
becomes one v2 batch with the same codec; runs of plain messages become one uncompressed batch,
split where the timestamp type changes, where offsets stop increasing, or where a LogAppendTime
timestamp changes (a v2 batch has one log append time). Offsets are preserved, or assigned from
``base_offset`` when given (the broker assigns offsets anyway). v0 messages get timestamp -1 in a
CreateTime batch. Every legacy entry is validated (CRC, codec) first.

Down-conversion (:func:`batches_to_legacy`, for Fetch versions that predate magic 2): every v2 batch
becomes plain messages (uncompressed) or one compressed wrapper with the batch's codec; control
batches and empty batches are dropped, headers are dropped, and v0 drops timestamps — what Kafka
does. ZSTD cannot be expressed below magic 2: :class:`UnsupportedCompressionTypeError` (the Fetch
handler answers ``UNSUPPORTED_COMPRESSION_TYPE``). Legacy entries whose magic is not above the
target are copied unchanged. Input batches are assumed valid (they come from the log).

Rebuilding (:func:`rebuild_batch`): a v2 batch made again from (some of) its records, keeping its
base offset, last offset, producer fields, timestamp type, transactional flag and leader epoch, with
the same or another codec: what compaction (fewer records) and a topic's ``compression.type``
(another codec, Kafka's recompression) need.

Pure functions: safe from any thread.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable

from tidelog.records.batch import (
    ATTRIBUTES_OFFSET,
    CRC_OFFSET,
    LAST_OFFSET_DELTA_OFFSET,
    RecordBatchView,
    iter_batches,
)
from tidelog.records.builder import RecordBatchBuilder
from tidelog.records.compression import DEFAULT_MAX_DECOMPRESSED_BYTES, CompressionType
from tidelog.records.crc import crc32c
from tidelog.records.errors import InvalidRecordError, UnsupportedCompressionTypeError
from tidelog.records.legacy import LegacyMessageSetBuilder, LegacyMessageView, encode_message
from tidelog.records.record import Record, TimestampType

_INT32_MAX = (1 << 31) - 1


class _BatchRun:
    """Accumulates records into v2 batches, starting a new batch whenever one cannot hold the next
    record. Not thread-safe; lives for one conversion."""

    __slots__ = ("_builder", "_group", "_out")

    def __init__(self, out: list[bytes]) -> None:
        self._out = out
        self._builder: RecordBatchBuilder | None = None
        self._group: tuple[int, int, int | None] | None = None

    def add(self, record: Record, codec: CompressionType, timestamp_type: TimestampType) -> None:
        group = (int(codec), int(timestamp_type),
                 record.timestamp if timestamp_type == TimestampType.LOG_APPEND_TIME else None)
        builder = self._builder
        if (builder is None or group != self._group or record.offset < builder.next_offset
                or record.offset - builder.base_offset > _INT32_MAX):
            self.flush()
            builder = self._builder = RecordBatchBuilder(
                base_offset=record.offset, compression=codec, timestamp_type=timestamp_type)
            self._group = group
        builder.append(record.timestamp, record.key, record.value, offset=record.offset)

    def flush(self) -> None:
        if self._builder is not None and len(self._builder):
            self._out.append(self._builder.build())
        self._builder = None
        self._group = None


def legacy_to_batches(buf: bytes | bytearray | memoryview, *, base_offset: int | None = None,
                      max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES) -> list[bytes]:
    """Up-convert a records blob of v0/v1 entries into v2 batches (v2 batches pass through as is)."""
    try:
        return _legacy_to_batches(buf, base_offset, max_decompressed_bytes)
    except (ValueError, OverflowError, struct.error) as exc:  # offsets/timestamps beyond int64
        raise InvalidRecordError(f"cannot up-convert: {exc}") from None


def _legacy_to_batches(buf: bytes | bytearray | memoryview, base_offset: int | None,
                       max_decompressed_bytes: int) -> list[bytes]:
    out: list[bytes] = []
    run = _BatchRun(out)
    next_offset = base_offset
    for batch in iter_batches(buf):
        if isinstance(batch, RecordBatchView):
            run.flush()
            out.append(bytes(batch.buffer))
            continue
        batch.validate()
        timestamp_type = batch.timestamp_type
        if timestamp_type == TimestampType.NO_TIMESTAMP_TYPE:
            timestamp_type = TimestampType.CREATE_TIME
        codec = batch.compression_type
        for record in batch.records(max_decompressed_bytes=max_decompressed_bytes):
            if next_offset is not None:
                record.offset = next_offset
                next_offset += 1
            run.add(record, codec, timestamp_type)
        if codec is not CompressionType.NONE:
            run.flush()  # one wrapper, one batch: never merge two wrappers
    run.flush()
    return out


def batches_to_legacy(buf: bytes | bytearray | memoryview, magic: int, *,
                      max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES) -> bytes:
    """Down-convert a records blob to a v0 or v1 message set."""
    if magic not in (0, 1):
        raise ValueError(f"legacy magic must be 0 or 1, not {magic}")
    try:
        return _batches_to_legacy(buf, magic, max_decompressed_bytes)
    except (ValueError, OverflowError, struct.error) as exc:  # offsets/timestamps beyond int64
        raise InvalidRecordError(f"cannot down-convert: {exc}") from None


def _batches_to_legacy(buf: bytes | bytearray | memoryview, magic: int, max_decompressed_bytes: int) -> bytes:
    parts: list[bytes] = []
    for batch in iter_batches(buf):
        if isinstance(batch, LegacyMessageView):
            if batch.magic <= magic:
                parts.append(bytes(batch.buffer))
                continue
            records = list(batch.records(max_decompressed_bytes=max_decompressed_bytes))
        else:
            if batch.is_control_batch:
                continue
            records = list(batch.records(max_decompressed_bytes=max_decompressed_bytes))
        codec = batch.compression_type
        if codec is CompressionType.ZSTD:
            raise UnsupportedCompressionTypeError("ZSTD-compressed batches cannot be down-converted")
        if records:
            parts.append(_message_set(records, magic, codec, batch.timestamp_type))
    return b"".join(parts)


def _message_set(records: list[Record], magic: int, codec: CompressionType,
                 timestamp_type: TimestampType) -> bytes:
    if codec is CompressionType.NONE:
        ts_bit = 0x08 if magic == 1 and timestamp_type == TimestampType.LOG_APPEND_TIME else 0
        return b"".join(encode_message(r.offset, magic, ts_bit, r.timestamp, r.key, r.value) for r in records)
    if timestamp_type == TimestampType.NO_TIMESTAMP_TYPE:
        timestamp_type = TimestampType.CREATE_TIME
    builder = LegacyMessageSetBuilder(magic, compression=codec, timestamp_type=timestamp_type)
    for r in records:
        builder.append(r.timestamp, r.key, r.value, offset=r.offset)
    return builder.build()


_INT32 = struct.Struct(">i")
_UINT32 = struct.Struct(">I")


def rebuild_batch(view: RecordBatchView, records: Iterable[Record], *, compression: CompressionType | None = None,
                  delete_horizon_ms: int | None = None) -> bytearray:
    """``records`` (each at its own offset) as a new batch with ``view``'s header fields; the codec is
    ``compression`` or the view's. The original last offset is kept even when its record is gone (a
    compacted batch keeps the producer's last sequence)."""
    builder = RecordBatchBuilder(
        base_offset=view.base_offset,
        compression=view.compression_type if compression is None else compression,
        timestamp_type=view.timestamp_type,
        producer_id=view.producer_id,
        producer_epoch=view.producer_epoch,
        base_sequence=view.base_sequence,
        is_transactional=view.is_transactional,
        is_control=view.is_control_batch,
        partition_leader_epoch=view.partition_leader_epoch,
        delete_horizon_ms=delete_horizon_ms,
    )
    for record in records:
        builder.append(record.timestamp, record.key, record.value, record.headers, offset=record.offset)
    out = bytearray(builder.build())
    if builder.next_offset - 1 != view.last_offset:
        _INT32.pack_into(out, LAST_OFFSET_DELTA_OFFSET, view.last_offset_delta)
        _UINT32.pack_into(out, CRC_OFFSET, crc32c(memoryview(out)[ATTRIBUTES_OFFSET:]))
    return out


__all__ = ["batches_to_legacy", "legacy_to_batches", "rebuild_batch"]
