"""One record of a magic-v2 batch and the decoded :class:`Record`.

Record format (inside the records section of a batch; all integers zig-zag varints unless noted)::

    length          varint    bytes that follow, up to the end of the headers
    attributes      int8      unused, always 0 on write
    timestampDelta  varlong   timestamp - batch baseTimestamp
    offsetDelta     varint    offset - batch baseOffset
    keyLength       varint    -1 (any negative) = null key
    key             bytes
    valueLength     varint    -1 (any negative) = null value
    value           bytes
    headerCount     varint    must be >= 0
      headerKeyLength   varint    must be >= 0
      headerKey         bytes     UTF-8
      headerValueLength varint    -1 (any negative) = null value
      headerValue       bytes

A varint is an int32 and a varlong an int64, zig-zag encoded (``(n << 1) ^ (n >> 31)``), 7 bits per
byte, low group first, high bit set on every byte but the last: at most 5 and 10 bytes. The codec is
:mod:`tidelog.varint` (shared with the wire protocol); :func:`read_varint` / :func:`read_varlong` here
raise this layer's :class:`InvalidRecordError`.

Decoding checks every length against the bytes of *its own record* before slicing, so a hostile
length raises :class:`InvalidRecordError` and never allocates. Header keys are decoded with
``surrogateescape`` so that non-UTF-8 keys written by other clients survive a decode/encode cycle.

Pure functions, no state: safe from any thread.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from enum import IntEnum
from typing import NamedTuple

from tidelog.records.errors import InvalidRecordError
from tidelog.varint import (
    VarintError,
    encode_varint,
    encode_varlong,
    zigzag_decode,
    zigzag_encode,
)
from tidelog.varint import read_varint as _varint  # raise IndexError past the end: callers catch it once
from tidelog.varint import read_varlong as _varlong
from tidelog.varint import uvarint_bytes as _uvarint

NO_TIMESTAMP = -1
"""The timestamp of v0 messages and of records written without one."""


class TimestampType(IntEnum):
    """What a record timestamp means (attributes bit 3 of a batch / v1 message). Immutable."""

    NO_TIMESTAMP_TYPE = -1
    CREATE_TIME = 0
    LOG_APPEND_TIME = 1


class Header(NamedTuple):
    """A record header: a UTF-8 key and a nullable byte value. Immutable."""

    key: str
    value: bytes | None


HeaderLike = tuple[str, "bytes | bytearray | memoryview | None"]
Bytes = bytes | bytearray | memoryview


@dataclass(slots=True)
class Record:
    """A decoded record with absolute offset and timestamp.

    A plain value object built by the decoders; not thread-safe to mutate, safe to share read-only.
    ``headers`` is always empty for v0/v1 messages and ``attributes`` is the record's own attributes
    byte (v2: unused, 0; v0/v1: the message attributes).
    """

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[Header] = field(default_factory=list)
    attributes: int = 0


# ----------------------------------------------------------------------------------------- varints

_INT32_MIN, _INT32_MAX = -(1 << 31), (1 << 31) - 1
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


def read_varint(buf: bytes | bytearray | memoryview, pos: int) -> tuple[int, int]:
    """Decode a zig-zag varint (int32) at ``pos``: ``(value, next_pos)``; InvalidRecordError if it is not one."""
    return _checked(_varint, "varint", buf, pos)


def read_varlong(buf: bytes | bytearray | memoryview, pos: int) -> tuple[int, int]:
    """Decode a zig-zag varlong (int64) at ``pos``: ``(value, next_pos)``; InvalidRecordError if it is not one."""
    return _checked(_varlong, "varlong", buf, pos)


def _checked(read: Callable[[Bytes, int], tuple[int, int]], what: str, buf: Bytes, pos: int) -> tuple[int, int]:
    try:
        return read(buf, pos)
    except IndexError:
        raise InvalidRecordError(f"truncated {what}") from None
    except VarintError as e:
        raise InvalidRecordError(str(e)) from None


# ---------------------------------------------------------------------------------------- encoding


_CACHED = 1 << 14
_UVARINT_CACHE = [_uvarint(i) for i in range(_CACHED)]  # every 1- and 2-byte varint


def encode_record(offset_delta: int, timestamp_delta: int, key: Bytes | None, value: Bytes | None,
                  headers: Iterable[HeaderLike] = (), attributes: int = 0) -> bytes:
    """One record, length prefix included. ``ValueError`` for values the format cannot hold."""
    return encode_records([(offset_delta, timestamp_delta, key, value, headers)], attributes)


def encode_records(rows: Iterable[tuple[int, int, Bytes | None, Bytes | None, Iterable[HeaderLike]]],
                   attributes: int = 0) -> bytes:
    """Records back to back, from ``(offset_delta, timestamp_delta, key, value, headers)`` rows.

    Keys, values and header values are bytes-like objects with 1-byte items (or None).
    ``ValueError`` for deltas or sizes the format cannot hold.
    """
    cache, uvarint = _UVARINT_CACHE, _uvarint
    attributes_byte = bytes((attributes & 0xFF,))
    out: list[Bytes] = []
    append = out.append
    for offset_delta, timestamp_delta, key, value, headers in rows:
        if not _INT32_MIN <= offset_delta <= _INT32_MAX:
            raise ValueError(f"offset delta {offset_delta} does not fit in an int32")
        if not _INT64_MIN <= timestamp_delta <= _INT64_MAX:
            raise ValueError(f"timestamp delta {timestamp_delta} does not fit in an int64")
        zt = (timestamp_delta << 1) ^ (timestamp_delta >> 63)
        zo = (offset_delta << 1) ^ (offset_delta >> 31)
        if key is None:
            key_size, key = b"\x01", b""
        else:
            n = len(key) << 1
            key_size = cache[n] if n < _CACHED else uvarint(n)
        if value is None:
            value_size, value = b"\x01", b""
        else:
            n = len(value) << 1
            value_size = cache[n] if n < _CACHED else uvarint(n)
        body = b"".join((
            attributes_byte,
            cache[zt] if zt < _CACHED else uvarint(zt),
            cache[zo] if zo < _CACHED else uvarint(zo),
            key_size, key, value_size, value,
            _encode_headers(headers) if headers else b"\x00",
        ))
        n = len(body)
        if n > _INT32_MAX:
            raise ValueError("record larger than 2 GiB")
        n <<= 1
        append(cache[n] if n < _CACHED else uvarint(n))
        append(body)
    return b"".join(out)


def _encode_headers(headers: Iterable[HeaderLike]) -> bytes:
    header_list = headers if isinstance(headers, list | tuple) else list(headers)
    parts: list[Bytes] = [_uvarint(len(header_list) << 1)]
    for header_key, header_value in header_list:
        if not isinstance(header_key, str):
            raise TypeError(f"header key must be str, not {type(header_key).__name__}")
        raw_key = header_key.encode("utf-8", "surrogateescape")
        parts.append(_uvarint(len(raw_key) << 1))
        parts.append(raw_key)
        if header_value is None:
            parts.append(b"\x01")
        else:
            parts.append(_uvarint(len(header_value) << 1))
            parts.append(header_value)
    return b"".join(parts)


# ---------------------------------------------------------------------------------------- decoding


def decode_records(data: bytes, count: int, base_offset: int, base_timestamp: int,
                   log_append_time: int | None = None) -> Iterator[Record]:
    """Decode exactly ``count`` records filling all of ``data`` (a batch's records section).

    Offsets and timestamps are made absolute; when ``log_append_time`` is given (a LogAppendTime
    batch) every record takes it as its timestamp. A generator: errors surface as it advances.
    """
    if type(data) is not bytes:
        data = bytes(data)
    pos = 0
    end = len(data)
    for _ in range(count):
        if pos >= end:
            raise InvalidRecordError(f"batch declares {count} records but its data ends early")
        try:
            record, pos = _decode_record(data, pos, base_offset, base_timestamp)
        except IndexError:
            raise InvalidRecordError("truncated record") from None
        except VarintError as e:
            raise InvalidRecordError(str(e)) from None
        if log_append_time is not None:
            record.timestamp = log_append_time
        yield record
    if pos != end:
        raise InvalidRecordError(f"{end - pos} bytes remain after the {count} declared records")


def decode_record(data: bytes, pos: int, base_offset: int, base_timestamp: int) -> tuple[Record, int]:
    """Decode the record at ``pos``: ``(record, position after it)``."""
    if type(data) is not bytes:
        data = bytes(data)
    try:
        return _decode_record(data, pos, base_offset, base_timestamp)
    except IndexError:
        raise InvalidRecordError("truncated record") from None
    except VarintError as e:
        raise InvalidRecordError(str(e)) from None


def _decode_record(data: bytes, pos: int, base_offset: int, base_timestamp: int) -> tuple[Record, int]:
    # Hot loop for compaction and tools: one-byte varints (the common case) are decoded inline.
    b = data[pos]
    if b < 0x80:
        size, pos = (b >> 1) ^ -(b & 1), pos + 1
    else:
        size, pos = _varint(data, pos)
    end = pos + size
    if size < 6 or end > len(data):
        raise InvalidRecordError(f"record length {size} is invalid or overruns the records data")
    attributes = data[pos]
    b = data[pos + 1]
    if b < 0x80:
        timestamp_delta, pos = (b >> 1) ^ -(b & 1), pos + 2
    else:
        timestamp_delta, pos = _varlong(data, pos + 1)
    b = data[pos]
    if b < 0x80:
        offset_delta, pos = (b >> 1) ^ -(b & 1), pos + 1
    else:
        offset_delta, pos = _varint(data, pos)
    b = data[pos]
    if b < 0x80:
        key_size, pos = (b >> 1) ^ -(b & 1), pos + 1
    else:
        key_size, pos = _varint(data, pos)
    if key_size < 0:
        key = None
    else:
        if pos + key_size > end:
            raise InvalidRecordError(f"key length {key_size} overruns the record")
        key = data[pos : pos + key_size]
        pos += key_size
    b = data[pos]
    if b < 0x80:
        value_size, pos = (b >> 1) ^ -(b & 1), pos + 1
    else:
        value_size, pos = _varint(data, pos)
    if value_size < 0:
        value = None
    else:
        if pos + value_size > end:
            raise InvalidRecordError(f"value length {value_size} overruns the record")
        value = data[pos : pos + value_size]
        pos += value_size
    headers: list[Header] = []
    if data[pos] == 0:
        pos += 1
    else:
        header_count, pos = _varint(data, pos)
        if header_count < 0 or header_count > (end - pos) // 2:
            raise InvalidRecordError(f"invalid header count {header_count}")
        pos = _decode_headers(data, pos, end, header_count, headers)
    if pos != end:
        raise InvalidRecordError(f"record length {size} disagrees with its contents")
    return Record(base_offset + offset_delta, base_timestamp + timestamp_delta, key, value, headers,
                  attributes), end


def _decode_headers(data: bytes, pos: int, end: int, count: int, out: list[Header]) -> int:
    for _ in range(count):
        key_size, pos = _varint(data, pos)
        if key_size < 0 or pos + key_size > end:
            raise InvalidRecordError(f"invalid header key length {key_size}")
        key = bytes(data[pos : pos + key_size]).decode("utf-8", "surrogateescape")
        pos += key_size
        value_size, pos = _varint(data, pos)
        if value_size < 0:
            value = None
        else:
            if pos + value_size > end:
                raise InvalidRecordError(f"header value length {value_size} overruns the record")
            value = bytes(data[pos : pos + value_size])
            pos += value_size
        out.append(Header(key, value))
    return pos


__all__ = [
    "NO_TIMESTAMP",
    "Header",
    "Record",
    "TimestampType",
    "decode_record",
    "decode_records",
    "encode_record",
    "encode_records",
    "encode_varint",
    "encode_varlong",
    "read_varint",
    "read_varlong",
    "zigzag_decode",
    "zigzag_encode",
]
