"""Building magic-v2 record batches (layout in batch.py, record layout in record.py).

What :meth:`RecordBatchBuilder.build` derives, as Kafka's ``MemoryRecordsBuilder`` does:

* ``baseTimestamp`` = the first record's timestamp (or the delete horizon when one is set), and each
  record stores ``timestamp - baseTimestamp`` (possibly negative);
* ``maxTimestamp`` = the largest record timestamp (-1 if none has one);
* ``lastOffsetDelta`` = last offset - ``baseOffset``; ``recordCount`` = records appended;
* the records section is compressed as a whole, then the CRC32C of attributes..end is filled in.
"""

from __future__ import annotations

from collections.abc import Iterable

from tidelog.records.batch import (
    ATTRIBUTES_OFFSET,
    CONTROL_FLAG_MASK,
    DELETE_HORIZON_FLAG_MASK,
    HEADER,
    LOG_OVERHEAD,
    MAGIC_VALUE_V2,
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_FLAG_MASK,
)
from tidelog.records.compression import CompressionType, compress
from tidelog.records.crc import crc32c
from tidelog.records.record import NO_TIMESTAMP, HeaderLike, TimestampType, encode_records

_INT32_MAX = (1 << 31) - 1
_CRC_SLICE = slice(17, 21)


class RecordBatchBuilder:
    """Accumulates records and builds one magic-v2 batch. Not thread-safe; one builder per batch.

    Offsets default to ``base_offset``, ``base_offset + 1``...; explicit offsets must increase but may
    leave gaps (as compaction does). ``delete_horizon_ms`` sets attribute bit 6 and becomes the base
    timestamp.
    """

    __slots__ = (
        "_base_offset",
        "_base_sequence",
        "_compression",
        "_delete_horizon_ms",
        "_first_timestamp",
        "_is_control",
        "_is_transactional",
        "_last_offset",
        "_max_timestamp",
        "_partition_leader_epoch",
        "_parts",
        "_producer_epoch",
        "_producer_id",
        "_timestamp_type",
    )

    def __init__(
        self,
        *,
        base_offset: int = 0,
        compression: CompressionType = CompressionType.NONE,
        timestamp_type: TimestampType = TimestampType.CREATE_TIME,
        producer_id: int = NO_PRODUCER_ID,
        producer_epoch: int = NO_PRODUCER_EPOCH,
        base_sequence: int = NO_SEQUENCE,
        is_transactional: bool = False,
        is_control: bool = False,
        partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
        delete_horizon_ms: int | None = None,
    ) -> None:
        self._base_offset = base_offset
        self._compression = CompressionType(compression)
        self._timestamp_type = TimestampType(timestamp_type)
        if self._timestamp_type == TimestampType.NO_TIMESTAMP_TYPE:
            raise ValueError("a v2 batch is CREATE_TIME or LOG_APPEND_TIME")
        self._producer_id = producer_id
        self._producer_epoch = producer_epoch
        self._base_sequence = base_sequence
        self._is_transactional = is_transactional
        self._is_control = is_control
        self._partition_leader_epoch = partition_leader_epoch
        self._delete_horizon_ms = delete_horizon_ms
        self._parts: list[tuple[int, int, bytes | bytearray | memoryview | None,
                                bytes | bytearray | memoryview | None, Iterable[HeaderLike]]] = []
        self._last_offset = base_offset - 1
        self._first_timestamp: int | None = None
        self._max_timestamp = NO_TIMESTAMP

    def __len__(self) -> int:
        return len(self._parts)

    @property
    def base_offset(self) -> int:
        return self._base_offset

    @property
    def next_offset(self) -> int:
        return self._last_offset + 1

    def append(self, timestamp: int, key: bytes | bytearray | memoryview | None,
               value: bytes | bytearray | memoryview | None, headers: Iterable[HeaderLike] = (),
               offset: int | None = None) -> int:
        """Add a record; returns its offset. ``ValueError`` if the offset does not increase."""
        if offset is None:
            offset = self._last_offset + 1
        elif offset <= self._last_offset:
            raise ValueError(f"offset {offset} is not above the previous offset {self._last_offset}")
        if offset - self._base_offset > _INT32_MAX:
            raise ValueError(f"offset {offset} is too far from the base offset {self._base_offset}")
        if self._first_timestamp is None:
            self._first_timestamp = timestamp
        if timestamp > self._max_timestamp:
            self._max_timestamp = timestamp
        self._parts.append((offset - self._base_offset, timestamp, key, value, headers))
        self._last_offset = offset
        return offset

    def build(self) -> bytes:
        """The finished batch: header, CRC32C and (compressed) records. ``ValueError`` if empty."""
        if not self._parts:
            raise ValueError("a record batch needs at least one record")
        base_timestamp = self._delete_horizon_ms
        if base_timestamp is None:
            base_timestamp = self._first_timestamp if self._first_timestamp is not None else NO_TIMESTAMP
        section = encode_records(
            (offset_delta, timestamp - base_timestamp, key, value, headers)
            for offset_delta, timestamp, key, value, headers in self._parts)
        if self._compression is not CompressionType.NONE:
            section = compress(self._compression, section)
        return self._assemble(section, base_timestamp)

    def _attributes(self) -> int:
        attributes = int(self._compression)
        if self._timestamp_type == TimestampType.LOG_APPEND_TIME:
            attributes |= TIMESTAMP_TYPE_MASK
        if self._is_transactional:
            attributes |= TRANSACTIONAL_FLAG_MASK
        if self._is_control:
            attributes |= CONTROL_FLAG_MASK
        if self._delete_horizon_ms is not None:
            attributes |= DELETE_HORIZON_FLAG_MASK
        return attributes

    def _assemble(self, section: bytes, base_timestamp: int) -> bytes:
        size = HEADER.size + len(section)
        if size - LOG_OVERHEAD > _INT32_MAX:
            raise ValueError("record batch larger than 2 GiB")
        header = bytearray(HEADER.size)
        HEADER.pack_into(
            header, 0, self._base_offset, size - LOG_OVERHEAD, self._partition_leader_epoch,
            MAGIC_VALUE_V2, 0, self._attributes(), self._last_offset - self._base_offset, base_timestamp,
            self._max_timestamp, self._producer_id, self._producer_epoch, self._base_sequence,
            len(self._parts))
        crc = crc32c(section, crc32c(memoryview(header)[ATTRIBUTES_OFFSET:]))
        header[_CRC_SLICE] = crc.to_bytes(4, "big")
        return b"".join((header, section))


def build_batch(records: Iterable[tuple[int, bytes | None, bytes | None]], **options: object) -> bytes:
    """Convenience: a batch of ``(timestamp, key, value)`` triples; ``options`` as for the builder."""
    builder = RecordBatchBuilder(**options)  # type: ignore[arg-type]
    for timestamp, key, value in records:
        builder.append(timestamp, key, value)
    return builder.build()


__all__ = ["RecordBatchBuilder", "build_batch"]
