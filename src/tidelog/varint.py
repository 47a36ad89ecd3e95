"""Kafka's variable-length integers: the one implementation the wire codec and the record format share.

Formats::

    unsigned varint   7 bits per byte, low group first, high bit set on every byte but the last:
                      at most 5 bytes for 32 bits (uvarint), 10 bytes for 64 bits
    varint, varlong   a signed int32 / int64 zig-zag mapped to unsigned ((n << 1) ^ (n >> 31), resp. 63:
                      0, -1, 1, -2 ... -> 0, 1, 2, 3 ...), then written as an unsigned varint

:mod:`tidelog.protocol.primitives` uses the unsigned 32-bit ones (compact lengths, tagged fields) and
:mod:`tidelog.records.record` the zig-zag ones (the fields of a magic-v2 record), as Kafka's
``ByteUtils`` serves both its protocol and its record package. This module sits below both layers.

Errors. Readers take ``(buf, pos)`` (bytes, bytearray or memoryview) and return ``(value, next_pos)``;
they do no bounds checks of their own: past the end of ``buf`` indexing raises ``IndexError``, which
each caller turns into its own error once per message or record (``MalformedMessageError``,
``InvalidRecordError``) instead of paying a length check per byte. Bytes that are not a valid varint
(longer than 5 / 10 bytes, or a 5-byte varint over 32 bits) raise :class:`VarintError`, and so does
an out-of-range value on encode; it is a ``ValueError``.

Pure functions and immutable tables: safe from any thread.
"""

from __future__ import annotations

_INT32_MIN, _INT32_MAX = -(1 << 31), (1 << 31) - 1
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
_UINT32_MAX = 0xFFFFFFFF
_ONE_BYTE = tuple(bytes((i,)) for i in range(128))


class VarintError(ValueError):
    """Bytes that are not a valid varint, or a value a varint of that size cannot hold."""


def zigzag_encode(value: int) -> int:
    """Zig-zag map a signed int64 to unsigned: 0, -1, 1, -2 ... -> 0, 1, 2, 3 ..."""
    return (value << 1) ^ (value >> 63)


def zigzag_decode(value: int) -> int:
    return (value >> 1) ^ -(value & 1)


# ------------------------------------------------------------------------------------------ reading


def read_uvarint(buf: bytes | bytearray | memoryview, pos: int) -> tuple[int, int]:
    """An unsigned varint of at most 5 bytes and 32 bits at ``pos``: ``(value, next_pos)``."""
    b = buf[pos]
    if b < 0x80:  # the common one-byte case
        return b, pos + 1
    return _read_rest(buf, pos + 1, b & 0x7F, 28, 32)


def read_varint(buf: bytes | bytearray | memoryview, pos: int) -> tuple[int, int]:
    """A zig-zag varint (int32) at ``pos``: ``(value, next_pos)``. One and two bytes are the fast path
    (record lengths and deltas up to 8191)."""
    b = buf[pos]
    if b < 0x80:
        return (b >> 1) ^ -(b & 1), pos + 1
    c = buf[pos + 1]
    if c < 0x80:
        n = (b & 0x7F) | (c << 7)
        return (n >> 1) ^ -(n & 1), pos + 2
    n, pos = _read_rest(buf, pos + 1, b & 0x7F, 28, 32)
    return (n >> 1) ^ -(n & 1), pos


def read_varlong(buf: bytes | bytearray | memoryview, pos: int) -> tuple[int, int]:
    """A zig-zag varlong (int64) at ``pos``: ``(value, next_pos)``; the same fast paths."""
    b = buf[pos]
    if b < 0x80:
        return (b >> 1) ^ -(b & 1), pos + 1
    c = buf[pos + 1]
    if c < 0x80:
        n = (b & 0x7F) | (c << 7)
        return (n >> 1) ^ -(n & 1), pos + 2
    n, pos = _read_rest(buf, pos + 1, b & 0x7F, 63, 64)
    return (n >> 1) ^ -(n & 1), pos


def _read_rest(buf: bytes | bytearray | memoryview, pos: int, result: int, max_shift: int,
               bits: int) -> tuple[int, int]:
    """The bytes of an unsigned varint after its first (whose low 7 bits are ``result``)."""
    shift = 7
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            break
        shift += 7
        if shift > max_shift:
            raise VarintError(f"{'varint' if bits == 32 else 'varlong'} longer than {max_shift // 7 + 1} bytes")
    if result >> bits:
        raise VarintError(f"{'varint' if bits == 32 else 'varlong'} does not fit in {bits} bits")
    return result, pos


# ------------------------------------------------------------------------------------------ writing


def uvarint_bytes(n: int) -> bytes:
    """The unsigned varint of ``n`` >= 0 (no upper bound: callers bound it by the field's width)."""
    if n < 0x80:
        if n < 0:
            raise VarintError(f"an unsigned varint cannot hold {n}")
        return _ONE_BYTE[n]
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def write_uvarint(b: bytearray, n: int) -> None:
    """Append the unsigned 32-bit varint of ``n``."""
    if 0 <= n < 0x80:
        b.append(n)
        return
    if n < 0 or n > _UINT32_MAX:
        raise VarintError(f"an unsigned varint cannot hold {n}")
    while n >= 0x80:
        b.append((n & 0x7F) | 0x80)
        n >>= 7
    b.append(n)


def encode_varint(value: int) -> bytes:
    """The zig-zag varint of an int32; :class:`VarintError` (a ``ValueError``) if out of range."""
    if not _INT32_MIN <= value <= _INT32_MAX:
        raise VarintError(f"{value} does not fit in a varint (int32)")
    return uvarint_bytes((value << 1) ^ (value >> 31))


def encode_varlong(value: int) -> bytes:
    """The zig-zag varlong of an int64; :class:`VarintError` (a ``ValueError``) if out of range."""
    if not _INT64_MIN <= value <= _INT64_MAX:
        raise VarintError(f"{value} does not fit in a varlong (int64)")
    return uvarint_bytes((value << 1) ^ (value >> 63))


__all__ = [
    "VarintError",
    "encode_varint",
    "encode_varlong",
    "read_uvarint",
    "read_varint",
    "read_varlong",
    "uvarint_bytes",
    "write_uvarint",
    "zigzag_decode",
    "zigzag_encode",
]
