"""Legacy message sets, magic v0 and v1: parse, validate and build.

A message set is entries back to back; each entry is one message (big-endian)::

    off  size  field
      0     8  offset        int64   see below
      8     4  messageSize   int32   bytes after this field
     12     4  crc           uint32  CRC32 (zlib.crc32) of bytes 16 .. end
     16     1  magic         int8    0 or 1
     17     1  attributes    int8    bits 0-2 codec (0-3), bit 3 timestamp type (v1: 1 = LogAppendTime)
     18     8  timestamp     int64   v1 only
   18/26    4  keyLength     int32   -1 (any negative) = null
            …  key
            4  valueLength   int32   -1 (any negative) = null
            …  value

Smallest message: 14 bytes after the size field in v0, 22 in v1.

Compression wraps a whole inner message set into the value of one *wrapper* message whose codec bits
are set (the key is normally null). Inner messages have the wrapper's magic and are never compressed.
The wrapper's offset is that of the *last* inner message. Inner offsets are:

* v0: the absolute offsets themselves (the broker rewrites inner and wrapper offsets);
* v1: relative, 0 .. n-1 as written by producers (KIP-31): absolute = wrapper offset - last inner
  offset + inner offset, so the broker only patches the wrapper.

In a v1 wrapper with the LogAppendTime bit, every inner message takes the wrapper's timestamp; with
CreateTime the wrapper carries the max inner timestamp. v0 messages have no timestamp
(:data:`NO_TIMESTAMP`). LZ4 in v0 uses Kafka's broken frame-descriptor checksum (compression.py).
Message sets cannot hold ZSTD (codec 4): that needs magic 2.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator

from tidelog.records.compression import DEFAULT_MAX_DECOMPRESSED_BYTES, CompressionType, compress, decompress
from tidelog.records.errors import (
    CorruptRecordError,
    InvalidRecordError,
    UnsupportedCompressionTypeError,
)
from tidelog.records.record import NO_TIMESTAMP, Record, TimestampType

_ENTRY_V0 = struct.Struct(">qiIbb")  # offset, size, crc, magic, attributes
_TIMESTAMP = struct.Struct(">q")
_INT32 = struct.Struct(">i")
LOG_OVERHEAD = 12
MESSAGE_OVERHEAD_V0 = 14
MESSAGE_OVERHEAD_V1 = 22
CODEC_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
_MAX_INT32 = (1 << 31) - 1


class LegacyMessageView:
    """A view over one v0/v1 entry (a plain message or a compressed wrapper) in a buffer.

    Header fields and the key/value positions are parsed and bounds-checked at construction; nothing
    is copied until :attr:`key`, :attr:`value` or :meth:`records` is used. Immutable (read-only over
    its buffer): safe to share between threads if nobody mutates the buffer.
    """

    __slots__ = ("_attributes", "_buf", "_crc", "_key", "_magic", "_offset", "_timestamp", "_value")

    def __init__(self, buf: bytes | bytearray | memoryview) -> None:
        mv = buf if isinstance(buf, memoryview) else memoryview(buf)
        if mv.format != "B" or mv.ndim != 1:
            mv = mv.cast("B")
        if len(mv) < LOG_OVERHEAD + MESSAGE_OVERHEAD_V0:
            raise InvalidRecordError(f"legacy message of {len(mv)} bytes is too short")
        offset, size, crc, magic, attributes = _ENTRY_V0.unpack_from(mv, 0)
        if magic not in (0, 1):
            raise InvalidRecordError(f"legacy message has magic {magic}, expected 0 or 1")
        minimum = MESSAGE_OVERHEAD_V0 if magic == 0 else MESSAGE_OVERHEAD_V1
        if size < minimum:
            raise InvalidRecordError(f"legacy v{magic} message size {size} is below the minimum {minimum}")
        end = LOG_OVERHEAD + size
        if end > len(mv):
            raise InvalidRecordError(f"legacy message of {end} bytes is truncated to {len(mv)}")
        pos = 18
        if magic == 1:
            (self._timestamp,) = _TIMESTAMP.unpack_from(mv, 18)
            pos = 26
        else:
            self._timestamp = NO_TIMESTAMP
        self._key, pos = _span(mv, pos, end, "key")
        self._value, pos = _span(mv, pos, end, "value")
        if pos != end:
            raise InvalidRecordError(f"legacy message size {size} disagrees with its contents")
        self._buf = mv[:end]
        self._offset, self._crc, self._magic, self._attributes = offset, crc, magic, attributes & 0xFF

    def __repr__(self) -> str:
        return (f"LegacyMessageView(offset={self._offset}, magic={self._magic}, "
                f"attributes={self._attributes}, size={len(self._buf)})")

    @property
    def buffer(self) -> memoryview:
        return self._buf

    @property
    def offset(self) -> int:
        """The entry's offset: for a compressed wrapper, that of its last inner message."""
        return self._offset

    @property
    def last_offset(self) -> int:
        return self._offset

    @property
    def next_offset(self) -> int:
        return self._offset + 1

    @property
    def size_in_bytes(self) -> int:
        return len(self._buf)

    @property
    def crc(self) -> int:
        return self._crc

    @property
    def magic(self) -> int:
        return self._magic

    @property
    def attributes(self) -> int:
        return self._attributes

    @property
    def compression_type(self) -> CompressionType:
        return CompressionType.from_id(self._attributes & CODEC_MASK)

    @property
    def is_compressed(self) -> bool:
        return bool(self._attributes & CODEC_MASK)

    @property
    def timestamp_type(self) -> TimestampType:
        if self._magic == 0:
            return TimestampType.NO_TIMESTAMP_TYPE
        if self._attributes & TIMESTAMP_TYPE_MASK:
            return TimestampType.LOG_APPEND_TIME
        return TimestampType.CREATE_TIME

    @property
    def timestamp(self) -> int:
        return self._timestamp

    @property
    def key(self) -> bytes | None:
        return None if self._key is None else bytes(self._buf[self._key[0] : self._key[1]])

    @property
    def value(self) -> bytes | None:
        return None if self._value is None else bytes(self._buf[self._value[0] : self._value[1]])

    def compute_crc(self) -> int:
        return zlib.crc32(self._buf[16:])

    def is_valid_crc(self) -> bool:
        return self.compute_crc() == self._crc

    def verify_crc(self) -> None:
        """Raise :class:`CorruptRecordError` unless the stored CRC32 matches."""
        computed = self.compute_crc()
        if computed != self._crc:
            raise CorruptRecordError(
                f"message at offset {self._offset} is corrupt: stored crc {self._crc:#010x}, "
                f"computed {computed:#010x}")

    def validate(self) -> None:
        """CRC, then codec: ids 5-7 are invalid, ZSTD is unsupported below magic 2."""
        self.verify_crc()
        codec = CompressionType.from_id(self._attributes & CODEC_MASK)
        if codec is CompressionType.ZSTD:
            raise UnsupportedCompressionTypeError("ZSTD requires magic 2")
        if codec is not CompressionType.NONE and self._value is None:
            raise InvalidRecordError("compressed wrapper message has a null value")

    def records(self, *, max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES) -> Iterator[Record]:
        """The message itself, or a wrapper's inner messages with absolute offsets and timestamps.

        Inner messages must have the wrapper's magic, be uncompressed and pass their CRC
        (:class:`CorruptRecordError` otherwise); the wrapper's own CRC is :meth:`validate`'s job.
        """
        if not self._attributes & CODEC_MASK:
            return iter((self._to_record(self._offset, self._timestamp),))
        return iter(self._inner_records(max_decompressed_bytes))

    def inner_messages(self, *, max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
                       ) -> list[LegacyMessageView]:
        """A compressed wrapper's inner messages as views (offsets as stored, unchecked CRCs)."""
        codec = self.compression_type
        if codec is CompressionType.ZSTD:
            raise UnsupportedCompressionTypeError("ZSTD requires magic 2")
        if self._value is None:
            raise InvalidRecordError("compressed wrapper message has a null value")
        data = decompress(codec, self._buf[self._value[0] : self._value[1]], magic=self._magic,
                          max_size=max_decompressed_bytes)
        inner = list(iter_legacy_messages(data))
        if not inner:
            raise InvalidRecordError("compressed wrapper message holds no inner messages")
        return inner

    def _inner_records(self, max_decompressed_bytes: int) -> list[Record]:
        inner = self.inner_messages(max_decompressed_bytes=max_decompressed_bytes)
        shift = 0 if self._magic == 0 else self._offset - inner[-1].offset
        log_append = self._magic == 1 and bool(self._attributes & TIMESTAMP_TYPE_MASK)
        out = []
        for message in inner:
            if message.magic != self._magic:
                raise InvalidRecordError(
                    f"inner message magic {message.magic} differs from wrapper magic {self._magic}")
            if message.is_compressed:
                raise InvalidRecordError("a compressed wrapper cannot hold compressed messages")
            message.verify_crc()
            timestamp = self._timestamp if log_append else message.timestamp
            out.append(message._to_record(message.offset + shift, timestamp))
        return out

    def _to_record(self, offset: int, timestamp: int) -> Record:
        return Record(offset, timestamp, self.key, self.value, [], self._attributes)


def _span(mv: memoryview, pos: int, end: int, what: str) -> tuple[tuple[int, int] | None, int]:
    if end - pos < 4:
        raise InvalidRecordError(f"legacy message truncated before its {what} length")
    (length,) = _INT32.unpack_from(mv, pos)
    pos += 4
    if length < 0:
        return None, pos
    if length > end - pos:
        raise InvalidRecordError(f"legacy message {what} length {length} overruns the message")
    return (pos, pos + length), pos + length


def iter_legacy_messages(buf: bytes | bytearray | memoryview) -> Iterator[LegacyMessageView]:
    """Split a v0/v1 message set into entry views; :class:`InvalidRecordError` if it is truncated."""
    mv = buf if isinstance(buf, memoryview) else memoryview(buf)
    pos, end = 0, len(mv)
    while pos < end:
        if end - pos < LOG_OVERHEAD:
            raise InvalidRecordError("message set ends inside an entry header")
        (size,) = _INT32.unpack_from(mv, pos + 8)
        if size < MESSAGE_OVERHEAD_V0 or size > end - pos - LOG_OVERHEAD:
            raise InvalidRecordError(f"message size {size} at position {pos} is invalid or truncated")
        yield LegacyMessageView(mv[pos : pos + LOG_OVERHEAD + size])
        pos += LOG_OVERHEAD + size


# ---------------------------------------------------------------------------------------- building


def encode_message(offset: int, magic: int, attributes: int, timestamp: int,
                   key: bytes | bytearray | memoryview | None,
                   value: bytes | bytearray | memoryview | None) -> bytes:
    """One v0/v1 entry (offset, size, crc, message). ``timestamp`` is ignored for v0."""
    if magic not in (0, 1):
        raise ValueError(f"legacy magic must be 0 or 1, not {magic}")
    parts: list[bytes | bytearray | memoryview] = [struct.pack(">bB", magic, attributes & 0xFF)]
    if magic == 1:
        parts.append(_TIMESTAMP.pack(timestamp))
    for data in (key, value):
        if data is None:
            parts.append(b"\xff\xff\xff\xff")
        else:
            if len(data) > _MAX_INT32:
                raise ValueError("key or value larger than 2 GiB")
            parts.append(_INT32.pack(len(data)))
            parts.append(data)
    body = b"".join(parts)
    return struct.pack(">qiI", offset, len(body) + 4, zlib.crc32(body)) + body


class LegacyMessageSetBuilder:
    """Builds a v0/v1 message set: plain messages, or one compressed wrapper around them all.

    Offsets default to ``base_offset``, ``base_offset + 1``...; explicit offsets must increase.
    Not thread-safe; one builder per message set.
    """

    __slots__ = ("_compression", "_magic", "_messages", "_next_offset", "_timestamp_type")

    def __init__(self, magic: int, *, compression: CompressionType = CompressionType.NONE,
                 timestamp_type: TimestampType = TimestampType.CREATE_TIME, base_offset: int = 0) -> None:
        if magic not in (0, 1):
            raise ValueError(f"legacy magic must be 0 or 1, not {magic}")
        compression = CompressionType(compression)
        if compression is CompressionType.ZSTD:
            raise UnsupportedCompressionTypeError("ZSTD requires magic 2")
        self._magic = magic
        self._compression = compression
        self._timestamp_type = TimestampType(timestamp_type)
        self._next_offset = base_offset
        self._messages: list[tuple[int, int, bytes | None, bytes | None]] = []

    def __len__(self) -> int:
        return len(self._messages)

    def append(self, timestamp: int, key: bytes | bytearray | memoryview | None,
               value: bytes | bytearray | memoryview | None, offset: int | None = None) -> int:
        """Add a message; returns its offset."""
        if offset is None:
            offset = self._next_offset
        elif offset < self._next_offset and self._messages:
            raise ValueError(f"offset {offset} is not above the previous offset {self._next_offset - 1}")
        key = None if key is None else bytes(key)
        value = None if value is None else bytes(value)
        self._messages.append((offset, timestamp if self._magic == 1 else NO_TIMESTAMP, key, value))
        self._next_offset = offset + 1
        return offset

    def build(self) -> bytes:
        """The message set (empty bytes if nothing was appended)."""
        if not self._messages:
            return b""
        ts_bit = TIMESTAMP_TYPE_MASK if (self._magic == 1 and
                                         self._timestamp_type == TimestampType.LOG_APPEND_TIME) else 0
        if self._compression is CompressionType.NONE:
            return b"".join(encode_message(offset, self._magic, ts_bit, timestamp, key, value)
                            for offset, timestamp, key, value in self._messages)
        first = self._messages[0][0]
        inner = b"".join(
            encode_message(offset - first if self._magic == 1 else offset, self._magic, ts_bit, timestamp,
                           key, value)
            for offset, timestamp, key, value in self._messages)
        last_offset = self._messages[-1][0]
        max_timestamp = max(timestamp for _, timestamp, _, _ in self._messages)
        wrapped = compress(self._compression, inner, magic=self._magic)
        return encode_message(last_offset, self._magic, ts_bit | int(self._compression), max_timestamp,
                              None, wrapped)


__all__ = [
    "LegacyMessageSetBuilder",
    "LegacyMessageView",
    "encode_message",
    "iter_legacy_messages",
]
