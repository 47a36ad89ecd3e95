"""Kafka wire primitives: the building blocks the generated message codecs call.

Formats (big-endian throughout)::

    int8/16/32/64, uint16, float64   fixed width, two's complement / IEEE 754
    bool                             int8, 0 = false, anything else = true
    uuid                             16 raw bytes
    unsigned varint                  7 bits per byte, low group first, high bit = "more follows"
                                     (read_uvarint / write_uvarint, from :mod:`tidelog.varint`)
    string / bytes                   int16 (string) or int32 (bytes) length N, then N bytes; -1 = null
    compact string / bytes           unsigned varint N+1, then N bytes; 0 = null  (flexible versions)
    array                            int32 count (-1 = null) / compact: unsigned varint count+1
    tagged fields                    unsigned varint count, then per field: uvarint tag, uvarint size, data

Readers take ``(buf, pos)`` where ``buf`` is a ``memoryview`` and return ``(value, new_pos)``. Every
length is checked against the bytes that remain *before* anything is allocated, so a hostile length
field raises :class:`MalformedMessageError` instead of allocating. Fixed-width fields and varints past
the end of ``buf`` raise ``struct.error`` / ``IndexError``, and an invalid varint
:class:`~tidelog.varint.VarintError`: :meth:`Message.decode_from <tidelog.protocol.message.Message.decode_from>`
turns them into :class:`MalformedMessageError` once per message. Writers append to a ``bytearray``.

Pure functions, no state: safe from any thread.
"""

from __future__ import annotations

import struct
import uuid

from tidelog.protocol.exceptions import MalformedMessageError, ProtocolEncodeError
from tidelog.varint import read_uvarint, write_uvarint

INT8 = struct.Struct(">b")
INT16 = struct.Struct(">h")
UINT16 = struct.Struct(">H")
INT32 = struct.Struct(">i")
UINT32 = struct.Struct(">I")
INT64 = struct.Struct(">q")
FLOAT64 = struct.Struct(">d")
BOOL = struct.Struct(">?")

ZERO_UUID = uuid.UUID(int=0)
_ZERO_16 = bytes(16)

# ------------------------------------------------------------------------------------------- strings


def _take(buf: memoryview, pos: int, n: int) -> tuple[memoryview, int]:
    end = pos + n
    if end > len(buf):
        raise MalformedMessageError(f"length {n} runs past the end of the message")
    return buf[pos:end], end


def _decode_utf8(raw: memoryview) -> str:
    try:
        return str(raw, "utf-8")
    except UnicodeDecodeError as e:
        raise MalformedMessageError(f"string is not valid UTF-8: {e}") from None


def read_string(buf: memoryview, pos: int) -> tuple[str, int]:
    (n,) = INT16.unpack_from(buf, pos)
    if n < 0:
        raise MalformedMessageError("null in a non-nullable string")
    raw, pos = _take(buf, pos + 2, n)
    return _decode_utf8(raw), pos


def read_nullable_string(buf: memoryview, pos: int) -> tuple[str | None, int]:
    (n,) = INT16.unpack_from(buf, pos)
    if n < 0:
        if n != -1:
            raise MalformedMessageError(f"invalid string length {n}")
        return None, pos + 2
    raw, pos = _take(buf, pos + 2, n)
    return _decode_utf8(raw), pos


def read_compact_string(buf: memoryview, pos: int) -> tuple[str, int]:
    n, pos = read_uvarint(buf, pos)
    if n == 0:
        raise MalformedMessageError("null in a non-nullable compact string")
    raw, pos = _take(buf, pos, n - 1)
    return _decode_utf8(raw), pos


def read_compact_nullable_string(buf: memoryview, pos: int) -> tuple[str | None, int]:
    n, pos = read_uvarint(buf, pos)
    if n == 0:
        return None, pos
    raw, pos = _take(buf, pos, n - 1)
    return _decode_utf8(raw), pos


def _utf8(s: str) -> bytes:
    try:
        return s.encode("utf-8")
    except AttributeError:
        raise ProtocolEncodeError(f"expected a string, got {type(s).__name__}") from None


def write_string(b: bytearray, s: str) -> None:
    if s is None:
        raise ProtocolEncodeError("null in a non-nullable string")
    data = _utf8(s)
    if len(data) > 0x7FFF:
        raise ProtocolEncodeError("string longer than 32767 bytes")
    b += INT16.pack(len(data))
    b += data


def write_nullable_string(b: bytearray, s: str | None) -> None:
    if s is None:
        b += b"\xff\xff"
        return
    write_string(b, s)


def write_compact_string(b: bytearray, s: str) -> None:
    if s is None:
        raise ProtocolEncodeError("null in a non-nullable string")
    data = _utf8(s)
    write_uvarint(b, len(data) + 1)
    b += data


def write_compact_nullable_string(b: bytearray, s: str | None) -> None:
    if s is None:
        b.append(0)
        return
    write_compact_string(b, s)


# --------------------------------------------------------------------------------------------- bytes


def read_bytes(buf: memoryview, pos: int) -> tuple[bytes, int]:
    (n,) = INT32.unpack_from(buf, pos)
    if n < 0:
        raise MalformedMessageError("null in non-nullable bytes")
    raw, pos = _take(buf, pos + 4, n)
    return bytes(raw), pos


def read_nullable_bytes(buf: memoryview, pos: int) -> tuple[bytes | None, int]:
    (n,) = INT32.unpack_from(buf, pos)
    if n < 0:
        if n != -1:
            raise MalformedMessageError(f"invalid bytes length {n}")
        return None, pos + 4
    raw, pos = _take(buf, pos + 4, n)
    return bytes(raw), pos


def read_compact_bytes(buf: memoryview, pos: int) -> tuple[bytes, int]:
    n, pos = read_uvarint(buf, pos)
    if n == 0:
        raise MalformedMessageError("null in non-nullable compact bytes")
    raw, pos = _take(buf, pos, n - 1)
    return bytes(raw), pos


def read_compact_nullable_bytes(buf: memoryview, pos: int) -> tuple[bytes | None, int]:
    n, pos = read_uvarint(buf, pos)
    if n == 0:
        return None, pos
    raw, pos = _take(buf, pos, n - 1)
    return bytes(raw), pos


def read_records(buf: memoryview, pos: int) -> tuple[memoryview | None, int]:
    """A records field (nullable bytes), returned as a zero-copy ``memoryview`` of the message buffer."""
    (n,) = INT32.unpack_from(buf, pos)
    if n < 0:
        if n != -1:
            raise MalformedMessageError(f"invalid records length {n}")
        return None, pos + 4
    return _take(buf, pos + 4, n)


def read_compact_records(buf: memoryview, pos: int) -> tuple[memoryview | None, int]:
    n, pos = read_uvarint(buf, pos)
    if n == 0:
        return None, pos
    return _take(buf, pos, n - 1)


def _check_bytes(data: object) -> None:
    if not isinstance(data, bytes | bytearray | memoryview):
        raise ProtocolEncodeError(f"expected bytes, got {type(data).__name__}")


def write_bytes(b: bytearray, data: bytes) -> None:
    if data is None:
        raise ProtocolEncodeError("null in non-nullable bytes")
    _check_bytes(data)
    b += INT32.pack(len(data))
    b += data


def write_nullable_bytes(b: bytearray, data: bytes | None) -> None:
    if data is None:
        b += b"\xff\xff\xff\xff"
        return
    write_bytes(b, data)


def write_compact_bytes(b: bytearray, data: bytes) -> None:
    if data is None:
        raise ProtocolEncodeError("null in non-nullable bytes")
    _check_bytes(data)
    write_uvarint(b, len(data) + 1)
    b += data


def write_compact_nullable_bytes(b: bytearray, data: bytes | None) -> None:
    if data is None:
        b.append(0)
        return
    write_compact_bytes(b, data)


# ------------------------------------------------------------------------------------- uuid, arrays


def read_uuid(buf: memoryview, pos: int) -> tuple[uuid.UUID, int]:
    end = pos + 16
    if end > len(buf):
        raise MalformedMessageError("truncated uuid")
    raw = bytes(buf[pos:end])
    if raw == _ZERO_16:
        return ZERO_UUID, end
    return uuid.UUID(bytes=raw), end


def write_uuid(b: bytearray, value: uuid.UUID) -> None:
    try:
        b += value.bytes
    except AttributeError:
        raise ProtocolEncodeError(f"expected a uuid.UUID, got {type(value).__name__}") from None


def read_array_len(buf: memoryview, pos: int, min_item_size: int = 1) -> tuple[int, int]:
    """An int32 array count; -1 (null) is returned as -1. The count is bounded by the bytes left."""
    (n,) = INT32.unpack_from(buf, pos)
    pos += 4
    if n < 0:
        if n != -1:
            raise MalformedMessageError(f"invalid array length {n}")
        return -1, pos
    if n * min_item_size > len(buf) - pos:
        raise MalformedMessageError(f"array of {n} items cannot fit in the {len(buf) - pos} bytes left")
    return n, pos


def read_compact_array_len(buf: memoryview, pos: int, min_item_size: int = 1) -> tuple[int, int]:
    """A compact array count (uvarint N+1); null is returned as -1."""
    n, pos = read_uvarint(buf, pos)
    n -= 1
    if n > 0 and n * min_item_size > len(buf) - pos:
        raise MalformedMessageError(f"array of {n} items cannot fit in the {len(buf) - pos} bytes left")
    return n, pos


def write_array_len(b: bytearray, n: int) -> None:
    b += INT32.pack(n)


def write_compact_array_len(b: bytearray, n: int) -> None:
    write_uvarint(b, n + 1)


# ------------------------------------------------------------------------------------- tagged fields


def read_unknown_tag(buf: memoryview, pos: int, size: int) -> tuple[bytes, int]:
    raw, end = _take(buf, pos, size)
    return bytes(raw), end


def write_tagged(b: bytearray, tagged: list[tuple[int, bytes]]) -> None:
    """The tagged-field section: count, then (tag, size, data) in ascending tag order."""
    write_uvarint(b, len(tagged))
    for tag, data in sorted(tagged, key=lambda t: t[0]):
        write_uvarint(b, tag)
        write_uvarint(b, len(data))
        b += data


# ---------------------------------------------------------------------------------------- the writer


class Writer:
    """Collects an encoded message: small fields go into ``buf``; large blobs (record sets, or
    file slices the server sends with sendfile) are kept by reference in ``parts`` so encoding a
    FetchResponse never copies the records. Not thread-safe; one per encode."""

    __slots__ = ("buf", "parts")

    #: Blobs at least this large are referenced, not copied.
    DETACH_BYTES = 4096

    def __init__(self) -> None:
        self.buf = bytearray()
        self.parts: list = []

    def blob(self, data) -> None:
        """Append a large payload by reference."""
        if self.buf:
            self.parts.append(self.buf)
            self.buf = bytearray()
        self.parts.append(data)

    def buffers(self) -> list:
        """The encoded bytes as a list of buffers, for ``writelines``/``sendmsg``."""
        if not self.parts:
            return [self.buf]
        return [*self.parts, self.buf] if self.buf else list(self.parts)

    def size(self) -> int:
        return len(self.buf) + sum(blob_size(p) for p in self.parts)

    def getvalue(self) -> bytes:
        if not self.parts:
            return bytes(self.buf)
        return b"".join(self.buffers())


def blob_size(data) -> int:
    return data.nbytes if type(data) is memoryview else len(data)


def write_records(w: Writer, data, flexible: bool) -> None:
    """A records field: nullable bytes; a large value is referenced, not copied."""
    b = w.buf
    if data is None:
        if flexible:
            b.append(0)
        else:
            b += b"\xff\xff\xff\xff"
        return
    n = blob_size(data)
    if flexible:
        write_uvarint(b, n + 1)
    else:
        b += INT32.pack(n)
    if n >= Writer.DETACH_BYTES or not isinstance(data, bytes | bytearray | memoryview):
        w.blob(data)
    else:
        b += data
