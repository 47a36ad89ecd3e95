"""Magic-v2 record batches: a zero-copy header view, in-place patching, and blob splitting.

Batch layout (Kafka's ``DefaultRecordBatch``; big-endian; offsets from the start of the batch)::

    off  size  field
      0     8  baseOffset            int64   offset of the first record (patched by the leader)
      8     4  batchLength           int32   bytes after this field (= size_in_bytes - 12)
     12     4  partitionLeaderEpoch  int32   set by the leader; outside the CRC
     16     1  magic                 int8    2
     17     4  crc                   uint32  CRC32C of bytes 21 .. end
     21     2  attributes            int16   bits 0-2 codec, 3 timestamp type (1 = LogAppendTime),
                                             4 transactional, 5 control, 6 delete horizon set
     23     4  lastOffsetDelta       int32   offset of the last record - baseOffset
     27     8  baseTimestamp         int64   first timestamp, or the delete horizon (bit 6)
     35     8  maxTimestamp          int64   max record timestamp, or the log append time
     43     8  producerId            int64   -1 = none
     51     2  producerEpoch         int16
     53     4  baseSequence          int32   -1 = none
     57     4  recordCount           int32
     61     …  records               see record.py; compressed as a whole when codec != 0

A *records blob* (the ``records`` field of Produce and Fetch, a segment file) is batches back to back.
Every format keeps its length at byte 8 and its magic at byte 16 (v0/v1: offset, size, crc, magic),
which is how :func:`iter_batches` tells magic-v2 batches from legacy messages (legacy.py).

Invariants checked here: a batch is at least 61 bytes, ``magic == 2``, its codec id is 0-4, its
CRC32C matches, and its record count agrees with ``lastOffsetDelta`` (``count == delta + 1`` for
producer batches; ``0 <= count <= delta + 1`` for batches a compaction has thinned).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

from tidelog.records.compression import DEFAULT_MAX_DECOMPRESSED_BYTES, CompressionType, decompress
from tidelog.records.crc import crc32c
from tidelog.records.errors import CorruptRecordError, InvalidRecordError
from tidelog.records.legacy import LegacyMessageView
from tidelog.records.record import Record, TimestampType, decode_records

HEADER = struct.Struct(">qiibIhiqqqhii")
RECORD_BATCH_OVERHEAD = HEADER.size  # 61
LOG_OVERHEAD = 12  # baseOffset + batchLength: the bytes not counted in batchLength
#: baseOffset and batchLength, the part of the header every format shares (a batch's size is 12 + length).
LOG_HEADER = struct.Struct(">qi")
#: The smallest batchLength a magic-v2 batch can have: a header and no records.
MIN_BATCH_LENGTH = RECORD_BATCH_OVERHEAD - LOG_OVERHEAD  # 49
BATCH_LENGTH_OFFSET = 8
MAGIC_OFFSET = 16
CRC_OFFSET = 17
ATTRIBUTES_OFFSET = 21
LAST_OFFSET_DELTA_OFFSET = 23
MAX_TIMESTAMP_OFFSET = 35
MAGIC_VALUE_V2 = 2

COMPRESSION_CODEC_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_FLAG_MASK = 0x10
CONTROL_FLAG_MASK = 0x20
DELETE_HORIZON_FLAG_MASK = 0x40

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1

_INT64 = struct.Struct(">q")
_INT32 = struct.Struct(">i")
_UINT32 = struct.Struct(">I")
_INT16 = struct.Struct(">h")
_MIN_LEGACY_MESSAGE_SIZE = 14  # v0 crc + magic + attributes + key length + value length
_MIN_RECORD_SIZE = 7  # length varint + the 6 one-byte fields of an empty record


class RecordBatchView:
    """A header view over one magic-v2 batch in a ``bytes``/``bytearray``/``memoryview``.

    The view never copies the batch: header fields are read from the buffer with one ``struct`` call
    at construction and refreshed by the ``set_*`` methods, which patch the buffer in place (it must
    be writable). Loop-only, not thread-safe: do not patch a buffer another thread is reading, and
    do not change the buffer behind the view's back.
    """

    __slots__ = ("_buf", "_h")

    def __init__(self, buf: bytes | bytearray | memoryview) -> None:
        mv = buf if isinstance(buf, memoryview) else memoryview(buf)
        if mv.format != "B" or mv.ndim != 1:
            mv = mv.cast("B")
        if len(mv) < RECORD_BATCH_OVERHEAD:
            raise InvalidRecordError(f"record batch of {len(mv)} bytes is shorter than its 61-byte header")
        header = HEADER.unpack_from(mv, 0)
        if header[3] != MAGIC_VALUE_V2:
            raise InvalidRecordError(f"record batch has magic {header[3]}, expected 2")
        size = header[1] + LOG_OVERHEAD
        if size < RECORD_BATCH_OVERHEAD:
            raise InvalidRecordError(f"record batch length {header[1]} is smaller than the header")
        if size > len(mv):
            raise InvalidRecordError(f"record batch of {size} bytes is truncated to {len(mv)}")
        self._buf = mv[:size]
        self._h = header

    def __repr__(self) -> str:
        return (f"RecordBatchView(base_offset={self.base_offset}, last_offset={self.last_offset}, "
                f"count={self.record_count}, size={self.size_in_bytes}, "
                f"compression={self.attributes & COMPRESSION_CODEC_MASK})")

    # --------------------------------------------------------------------------- header fields

    @property
    def buffer(self) -> memoryview:
        """The batch's bytes (a view: exactly ``size_in_bytes`` long)."""
        return self._buf

    @property
    def base_offset(self) -> int:
        return self._h[0]

    @property
    def batch_length(self) -> int:
        return self._h[1]

    @property
    def partition_leader_epoch(self) -> int:
        return self._h[2]

    @property
    def magic(self) -> int:
        return self._h[3]

    @property
    def crc(self) -> int:
        return self._h[4]

    @property
    def attributes(self) -> int:
        return self._h[5]

    @property
    def last_offset_delta(self) -> int:
        return self._h[6]

    @property
    def base_timestamp(self) -> int:
        return self._h[7]

    @property
    def max_timestamp(self) -> int:
        return self._h[8]

    @property
    def producer_id(self) -> int:
        return self._h[9]

    @property
    def producer_epoch(self) -> int:
        return self._h[10]

    @property
    def base_sequence(self) -> int:
        return self._h[11]

    @property
    def record_count(self) -> int:
        return self._h[12]

    # ------------------------------------------------------------------------- derived values

    @property
    def size_in_bytes(self) -> int:
        return self._h[1] + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return self._h[0] + self._h[6]

    @property
    def next_offset(self) -> int:
        return self._h[0] + self._h[6] + 1

    @property
    def compression_type(self) -> CompressionType:
        """The codec; :class:`InvalidRecordError` for the unassigned ids 5-7."""
        return CompressionType.from_id(self._h[5] & COMPRESSION_CODEC_MASK)

    @property
    def is_compressed(self) -> bool:
        return bool(self._h[5] & COMPRESSION_CODEC_MASK)

    @property
    def timestamp_type(self) -> TimestampType:
        if self._h[5] & TIMESTAMP_TYPE_MASK:
            return TimestampType.LOG_APPEND_TIME
        return TimestampType.CREATE_TIME

    @property
    def is_transactional(self) -> bool:
        return bool(self._h[5] & TRANSACTIONAL_FLAG_MASK)

    @property
    def is_control_batch(self) -> bool:
        return bool(self._h[5] & CONTROL_FLAG_MASK)

    @property
    def has_delete_horizon(self) -> bool:
        return bool(self._h[5] & DELETE_HORIZON_FLAG_MASK)

    @property
    def delete_horizon_ms(self) -> int | None:
        """The delete horizon (the base timestamp when attribute bit 6 is set), else None."""
        return self._h[7] if self._h[5] & DELETE_HORIZON_FLAG_MASK else None

    @property
    def has_producer_id(self) -> bool:
        return self._h[9] > NO_PRODUCER_ID

    @property
    def last_sequence(self) -> int:
        """Sequence of the last record (wrapping past int32 max like Kafka), or -1 if none."""
        base = self._h[11]
        if base == NO_SEQUENCE:
            return NO_SEQUENCE
        return (base + self._h[6]) % (1 << 31)

    # ----------------------------------------------------------------------------- validation

    def compute_crc(self) -> int:
        """CRC32C of the bytes the ``crc`` field covers (attributes to the end), without copying."""
        return crc32c(self._buf[ATTRIBUTES_OFFSET:])

    def is_valid_crc(self) -> bool:
        return self.compute_crc() == self._h[4]

    def verify_crc(self) -> None:
        """Raise :class:`CorruptRecordError` unless the stored CRC32C matches the batch."""
        computed = self.compute_crc()
        if computed != self._h[4]:
            raise CorruptRecordError(
                f"record batch at offset {self._h[0]} is corrupt: stored crc {self._h[4]:#010x}, "
                f"computed {computed:#010x}")

    def validate(self, *, allow_compacted: bool = False) -> None:
        """Check what can be checked without decoding records; raise the typed errors.

        Size and magic were checked at construction; this adds the CRC (first, so corruption reads
        as :class:`CorruptRecordError`), the codec id, and the record count against
        ``lastOffsetDelta``: exactly ``delta + 1`` records (what producers send) or, with
        ``allow_compacted``, anywhere from 0 to ``delta + 1`` (batches thinned by compaction).
        Uncompressed batches must also be long enough to hold their declared records.
        """
        self.verify_crc()
        attributes, delta, count = self._h[5], self._h[6], self._h[12]
        CompressionType.from_id(attributes & COMPRESSION_CODEC_MASK)
        if delta < 0:
            raise InvalidRecordError(f"record batch has a negative last offset delta {delta}")
        if allow_compacted:
            if not 0 <= count <= delta + 1:
                raise InvalidRecordError(f"record count {count} is outside 0..{delta + 1}")
        elif count <= 0 or count != delta + 1:
            raise InvalidRecordError(
                f"record count {count} is inconsistent with the offset range "
                f"[{self._h[0]}, {self._h[0] + delta}]")
        if not attributes & COMPRESSION_CODEC_MASK:
            room = len(self._buf) - RECORD_BATCH_OVERHEAD
            if count * _MIN_RECORD_SIZE > room:
                raise InvalidRecordError(f"{room} bytes cannot hold {count} records")

    # ------------------------------------------------------------------------------- patching

    def _writable(self) -> memoryview:
        if self._buf.readonly:
            raise TypeError("the batch buffer is read-only; patch a bytearray or a memoryview of one")
        return self._buf

    def set_base_offset(self, base_offset: int) -> None:
        """Patch ``baseOffset`` (not covered by the CRC: nothing to recompute)."""
        _INT64.pack_into(self._writable(), 0, base_offset)
        self._h = HEADER.unpack_from(self._buf, 0)

    def assign(self, base_offset: int, partition_leader_epoch: int) -> None:
        """Patch ``baseOffset`` and ``partitionLeaderEpoch`` together (the append hot path; neither is
        covered by the CRC)."""
        buf = self._writable()
        _INT64.pack_into(buf, 0, base_offset)
        _INT32.pack_into(buf, 12, partition_leader_epoch)
        self._h = HEADER.unpack_from(buf, 0)

    def set_partition_leader_epoch(self, epoch: int) -> None:
        """Patch ``partitionLeaderEpoch`` (not covered by the CRC: nothing to recompute)."""
        _INT32.pack_into(self._writable(), 12, epoch)
        self._h = HEADER.unpack_from(self._buf, 0)

    def set_log_append_time(self, timestamp_ms: int) -> None:
        """Mark the batch LogAppendTime with ``timestamp_ms`` as max timestamp; recomputes the CRC."""
        self.set_max_timestamp(TimestampType.LOG_APPEND_TIME, timestamp_ms)

    def set_max_timestamp(self, timestamp_type: TimestampType, max_timestamp_ms: int) -> None:
        """Set the timestamp-type bit and ``maxTimestamp``, then the CRC (as Kafka's leader does).

        A no-op when both already hold those values.
        """
        buf = self._writable()
        attributes = self._h[5]
        if timestamp_type == TimestampType.LOG_APPEND_TIME:
            new_attributes = attributes | TIMESTAMP_TYPE_MASK
        else:
            new_attributes = attributes & ~TIMESTAMP_TYPE_MASK
        if new_attributes == attributes and max_timestamp_ms == self._h[8]:
            return
        _INT16.pack_into(buf, ATTRIBUTES_OFFSET, new_attributes)
        _INT64.pack_into(buf, MAX_TIMESTAMP_OFFSET, max_timestamp_ms)
        _UINT32.pack_into(buf, CRC_OFFSET, crc32c(buf[ATTRIBUTES_OFFSET:]))
        self._h = HEADER.unpack_from(buf, 0)

    # -------------------------------------------------------------------------------- records

    def records_data(self, *, max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES) -> bytes:
        """The records section as bytes, decompressed when the batch is compressed."""
        section = self._buf[RECORD_BATCH_OVERHEAD:]
        codec = self._h[5] & COMPRESSION_CODEC_MASK
        if not codec:
            return bytes(section)
        return decompress(codec, section, max_size=max_decompressed_bytes)

    def records(self, *, max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES) -> Iterator[Record]:
        """Decode the records (decompressing first if needed), with absolute offsets and timestamps.

        In a LogAppendTime batch every record's timestamp is the batch's max timestamp. Raises
        :class:`InvalidRecordError` when the data disagrees with the declared record count. The CRC
        is not checked here: call :meth:`validate` or :meth:`verify_crc` first for untrusted input.
        """
        count = self._h[12]
        if count < 0:
            raise InvalidRecordError(f"negative record count {count}")
        data = self.records_data(max_decompressed_bytes=max_decompressed_bytes)
        log_append_time = self._h[8] if self._h[5] & TIMESTAMP_TYPE_MASK else None
        return decode_records(data, count, self._h[0], self._h[7], log_append_time)


BatchEntry = RecordBatchView | LegacyMessageView


def iter_batches(buf: bytes | bytearray | memoryview, *, allow_partial: bool = False) -> Iterator[BatchEntry]:
    """Split a records blob into views: :class:`RecordBatchView` for magic 2 and
    :class:`LegacyMessageView` (one outer message, maybe a compressed wrapper) for magic 0/1.

    Views share the blob's memory. A blob that ends inside an entry raises
    :class:`InvalidRecordError` unless ``allow_partial`` is set, in which case iteration stops
    silently before the partial entry (a Fetch response may be cut mid-batch by its size limit).
    Sizes below the format minimum and unknown magic values always raise. Only headers are checked:
    validate each entry before trusting its contents.
    """
    mv = buf if isinstance(buf, memoryview) else memoryview(buf)
    if mv.format != "B" or mv.ndim != 1:
        mv = mv.cast("B")
    pos, end = 0, len(mv)
    while pos < end:
        remaining = end - pos
        if remaining < LOG_OVERHEAD:
            if allow_partial:
                return
            raise InvalidRecordError(f"records blob ends with {remaining} bytes of a partial entry")
        (length,) = _INT32.unpack_from(mv, pos + 8)
        if length < _MIN_LEGACY_MESSAGE_SIZE:
            raise InvalidRecordError(f"entry size {length} at blob position {pos} is below the minimum")
        size = length + LOG_OVERHEAD
        if size > remaining:
            if allow_partial:
                return
            raise InvalidRecordError(f"entry of {size} bytes at blob position {pos} is truncated to {remaining}")
        magic = mv[pos + MAGIC_OFFSET]
        batch_bytes = mv[pos : pos + size]
        if magic == MAGIC_VALUE_V2:
            yield RecordBatchView(batch_bytes)
        elif magic in (0, 1):
            yield LegacyMessageView(batch_bytes)
        else:
            raise InvalidRecordError(f"unknown magic {magic} at blob position {pos}")
        pos += size


__all__ = [
    "NO_PARTITION_LEADER_EPOCH",
    "NO_PRODUCER_EPOCH",
    "NO_PRODUCER_ID",
    "NO_SEQUENCE",
    "RECORD_BATCH_OVERHEAD",
    "BatchEntry",
    "RecordBatchView",
    "iter_batches",
]
