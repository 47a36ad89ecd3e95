"""Compression codecs for record data: codec id ⇄ bytes, with a bound on decompressed size.

The codec id lives in the low three bits of a batch's (v2) or message's (v0/v1) attributes. What each
codec puts on the wire, and what this module writes and accepts::

    GZIP    RFC 1952 members.      write: one member.        read: one or more members; bytes after
                                                             the last member that are not a gzip header
                                                             are ignored (as Java's GZIPInputStream does)
    SNAPPY  raw snappy block, or the xerial "snappy-java" framing the Java client writes:
              0x82 'S' 'N' 'A' 'P' 'P' 'Y' 0x00 | version int32 | compat int32 |
              (block length int32 BE | raw snappy block)*
                                   write: raw (librdkafka writes raw too; Java's SnappyInputStream and
                                   every other client read raw). read: both; version/compat ignored.
    LZ4     LZ4 frame format (KIP-57):
              magic 04 22 4D 18 | FLG | BD | [content size u64 LE] | HC |
              (block size u32 LE, bit 31 = stored uncompressed | data [| block xxh32])* |
              end mark 00000000 [| content xxh32]
            HC = second byte of xxh32(FLG..content size). Kafka's first LZ4 writer hashed the magic
            too (FLG's HC over bytes 0..5): magic-0 messages carry that broken HC, so for magic 0
            the encoder reproduces it and the decoder accepts any HC (as Kafka does).
                                   write: FLG 0x60 (v1, independent blocks), BD 0x40 (64 KiB), no
                                   checksums, like Kafka and librdkafka. read: independent or linked
                                   blocks, any block size, with or without checksums; no dictionary.
    ZSTD    zstd frames (with or without the content size field).

``decompress(..., max_size=N)`` never produces more than ``N`` bytes and never allocates more than
about ``N`` up front, whatever a header claims: it raises :class:`InvalidRecordError` instead, and for
any corrupt input. LZ4 block and content checksums are verified when the frame is decoded in one call
(linked blocks or checksums present, size bound within ``max_size``); frames that are decoded block by
block because their size bound exceeds ``max_size`` skip those optional checksums (the batch CRC
already covers the compressed bytes).

Pure functions: safe from any thread.
"""

from __future__ import annotations

import struct
import zlib
from enum import IntEnum

import cramjam

from tidelog.records.errors import InvalidRecordError

DEFAULT_MAX_DECOMPRESSED_BYTES = 64 * 1024 * 1024
"""Default bound on the size of one decompressed payload (a decompression-bomb guard)."""

_CODEC_ERRORS = (
    cramjam.DecompressionError,
    cramjam.CompressionError,
    zlib.error,
    struct.error,
    ValueError,
    OverflowError,
    OSError,
    MemoryError,
    TypeError,
)


class CompressionType(IntEnum):
    """Kafka's compression codec ids (attributes bits 0-2). Immutable."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4

    @property
    def config_name(self) -> str:
        """The name used by the ``compression.type`` config: ``"none"``, ``"gzip"``..."""
        return self.name.lower()

    @classmethod
    def from_name(cls, name: str) -> CompressionType:
        """Parse a ``compression.type`` value (case-insensitive); ``ValueError`` if unknown."""
        try:
            return cls[name.upper()]
        except KeyError:
            raise ValueError(f"unknown compression type {name!r}") from None

    @classmethod
    def from_id(cls, codec_id: int) -> CompressionType:
        """The codec for an attributes id; :class:`InvalidRecordError` if there is none."""
        try:
            return cls(codec_id)
        except ValueError:
            raise InvalidRecordError(f"unknown compression codec id {codec_id}") from None


def available_codecs() -> list[str]:
    """Config names of the codecs this build can read and write (all of them: cramjam has them)."""
    return [codec.config_name for codec in CompressionType]


# ------------------------------------------------------------------------------------------ public


def compress(codec: CompressionType | int, data: bytes | bytearray | memoryview, *, magic: int = 2,
             level: int | None = None) -> bytes:
    """Compress ``data`` with ``codec``; ``magic`` selects the LZ4 header-checksum flavour."""
    codec = CompressionType(codec)
    if codec is CompressionType.NONE:
        return bytes(data)
    if codec is CompressionType.GZIP:
        return bytes(cramjam.gzip.compress(data, level=6 if level is None else level))
    if codec is CompressionType.SNAPPY:
        return bytes(cramjam.snappy.compress_raw(data))
    if codec is CompressionType.LZ4:
        return _lz4_compress(memoryview(data), broken_hc=magic == 0, level=level)
    return bytes(cramjam.zstd.compress(data, level=3 if level is None else level))


def decompress(codec: CompressionType | int, data: bytes | bytearray | memoryview, *, magic: int = 2,
               max_size: int = DEFAULT_MAX_DECOMPRESSED_BYTES) -> bytes:
    """Decompress ``data``; :class:`InvalidRecordError` if corrupt or larger than ``max_size``."""
    codec = CompressionType.from_id(int(codec))
    try:
        if codec is CompressionType.NONE:
            out = bytes(data)
        elif codec is CompressionType.GZIP:
            out = _gzip_decompress(memoryview(data), max_size)
        elif codec is CompressionType.SNAPPY:
            out = _snappy_decompress(memoryview(data), max_size)
        elif codec is CompressionType.LZ4:
            out = _lz4_decompress(memoryview(data), max_size, legacy_hc=magic == 0)
        else:
            out = _zstd_decompress(memoryview(data), max_size)
    except InvalidRecordError:
        raise
    except _CODEC_ERRORS as exc:
        raise InvalidRecordError(f"corrupt {codec.config_name} data: {exc}") from None
    except BaseException as exc:
        # A Rust panic inside cramjam surfaces as pyo3's PanicException, a BaseException: hostile
        # input must not get past the handlers' error mapping that way.
        if type(exc).__name__ != "PanicException":
            raise
        raise InvalidRecordError(f"corrupt {codec.config_name} data: {exc}") from None
    if len(out) > max_size:
        raise InvalidRecordError(f"decompressed size exceeds {max_size} bytes")
    return out


# -------------------------------------------------------------------------------------------- gzip

_GZIP_MAGIC = b"\x1f\x8b"


def _gzip_decompress(data: memoryview, max_size: int) -> bytes:
    chunks: list[bytes] = []
    total = 0
    rest: bytes | memoryview = data
    while True:
        member = zlib.decompressobj(16 + zlib.MAX_WBITS)
        # max_length 0 would mean "unlimited": ask for one byte past the budget to detect overflow.
        chunk = member.decompress(rest, max_size - total + 1)
        total += len(chunk)
        if total > max_size:
            raise InvalidRecordError(f"gzip data decompresses to more than {max_size} bytes")
        if not member.eof:
            raise InvalidRecordError("truncated gzip data")
        chunks.append(chunk)
        rest = member.unused_data
        if rest[:2] != _GZIP_MAGIC:
            break
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


# ------------------------------------------------------------------------------------------ snappy

XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER_SIZE = 16
_INT32_BE = struct.Struct(">i")


def _snappy_decompress(data: memoryview, max_size: int) -> bytes:
    if len(data) >= _XERIAL_HEADER_SIZE and data[:8] == XERIAL_MAGIC:
        return _xerial_decompress(data, max_size)
    return _snappy_raw(data, max_size)


def _snappy_raw(block: memoryview, budget: int) -> bytes:
    size = cramjam.snappy.decompress_raw_len(block)
    if size > budget:
        raise InvalidRecordError(f"snappy data decompresses to more than the {budget} bytes allowed")
    out = bytearray(size)
    written = cramjam.snappy.decompress_raw_into(block, out)
    if written != size:
        raise InvalidRecordError("snappy block shorter than its declared length")
    return bytes(out)


def _xerial_decompress(data: memoryview, max_size: int) -> bytes:
    pos, end = _XERIAL_HEADER_SIZE, len(data)
    parts: list[bytes] = []
    total = 0
    while pos < end:
        if end - pos < 4:
            raise InvalidRecordError("truncated xerial snappy block length")
        (size,) = _INT32_BE.unpack_from(data, pos)
        pos += 4
        if size < 0 or size > end - pos:
            raise InvalidRecordError(f"xerial snappy block of {size} bytes overruns the data")
        part = _snappy_raw(data[pos : pos + size], max_size - total)
        total += len(part)
        parts.append(part)
        pos += size
    return b"".join(parts)


# --------------------------------------------------------------------------------------------- lz4

_LZ4_MAGIC = b"\x04\x22\x4d\x18"
_LZ4_FLG = 0x60  # version 01, block independence, no checksums, no content size
_LZ4_BD_64K = 0x40
_LZ4_BLOCK = 64 * 1024
_LZ4_STORED = 0x80000000
_UINT32_LE = struct.Struct("<I")
_UINT64_LE = struct.Struct("<Q")
_END_MARK = b"\x00\x00\x00\x00"


def _lz4_compress(data: memoryview, *, broken_hc: bool, level: int | None) -> bytes:
    header = _LZ4_MAGIC + bytes((_LZ4_FLG, _LZ4_BD_64K))
    hc = (xxh32(header if broken_hc else header[4:]) >> 8) & 0xFF
    parts: list[bytes | memoryview] = [header, bytes((hc,))]
    kwargs = {} if level is None or level <= 9 else {"mode": "high_compression", "compression": level}
    for start in range(0, len(data), _LZ4_BLOCK):
        chunk = data[start : start + _LZ4_BLOCK]
        packed = cramjam.lz4.compress_block(chunk, store_size=False, **kwargs)
        if len(packed) >= len(chunk):
            parts.append(_UINT32_LE.pack(len(chunk) | _LZ4_STORED))
            parts.append(chunk)
        else:
            parts.append(_UINT32_LE.pack(len(packed)))
            parts.append(bytes(packed))
    parts.append(_END_MARK)
    return b"".join(parts)


def _lz4_decompress(data: memoryview, max_size: int, *, legacy_hc: bool) -> bytes:
    end = len(data)
    if end < 7 or data[:4] != _LZ4_MAGIC:
        raise InvalidRecordError("not an LZ4 frame (bad magic or too short)")
    flg, bd = data[4], data[5]
    if flg >> 6 != 1 or flg & 0x03 or bd & 0x8F or not 4 <= (bd >> 4) & 0x07 <= 7:
        raise InvalidRecordError(f"unsupported LZ4 frame descriptor FLG={flg:#04x} BD={bd:#04x}")
    block_max = 1 << (2 * ((bd >> 4) & 0x07) + 8)
    independent, block_sums, content_sum = bool(flg & 0x20), bool(flg & 0x10), bool(flg & 0x04)
    pos = 6
    content_size = None
    if flg & 0x08:
        if end < 15:
            raise InvalidRecordError("truncated LZ4 frame descriptor")
        (content_size,) = _UINT64_LE.unpack_from(data, 6)
        pos = 14
        if content_size > max_size:
            raise InvalidRecordError(f"LZ4 content size {content_size} exceeds {max_size} bytes")
    hc_pos = pos
    good_hc = (xxh32(data[4:hc_pos]) >> 8) & 0xFF
    if data[hc_pos] != good_hc and not legacy_hc:
        raise InvalidRecordError("LZ4 frame descriptor checksum mismatch")
    blocks, bound, pos = _lz4_walk_blocks(data, hc_pos + 1, block_max, block_sums)
    if content_sum:
        if end - pos < 4:
            raise InvalidRecordError("truncated LZ4 content checksum")
        pos += 4
    if pos != end:
        raise InvalidRecordError(f"{end - pos} bytes after the end of the LZ4 frame")
    if (not independent or block_sums or content_sum) and bound <= max_size:
        frame = data if data[hc_pos] == good_hc else b"".join((data[:hc_pos], bytes((good_hc,)), data[hc_pos + 1 :]))
        out = bytes(cramjam.lz4.decompress(frame))
    elif not independent:
        raise InvalidRecordError(f"linked-block LZ4 frame may exceed {max_size} bytes")
    else:
        out = _lz4_decode_blocks(data, blocks, block_max, max_size)
    if content_size is not None and len(out) != content_size:
        raise InvalidRecordError(f"LZ4 content size {content_size} but {len(out)} bytes decoded")
    return out


def _lz4_walk_blocks(data: memoryview, pos: int, block_max: int,
                     block_sums: bool) -> tuple[list[tuple[int, int, bool]], int, int]:
    """(start, size, stored) per block, an upper bound of the decoded size, and the end position."""
    end = len(data)
    blocks: list[tuple[int, int, bool]] = []
    bound = 0
    trailer = 4 if block_sums else 0
    while True:
        if end - pos < 4:
            raise InvalidRecordError("truncated LZ4 frame (no end mark)")
        (word,) = _UINT32_LE.unpack_from(data, pos)
        pos += 4
        if word == 0:
            return blocks, bound, pos
        size, stored = word & 0x7FFFFFFF, bool(word & _LZ4_STORED)
        if size > block_max or size + trailer > end - pos:
            raise InvalidRecordError(f"LZ4 block of {size} bytes overruns the frame or its maximum")
        blocks.append((pos, size, stored))
        bound += size if stored else block_max
        pos += size + trailer


def _lz4_decode_blocks(data: memoryview, blocks: list[tuple[int, int, bool]], block_max: int,
                       max_size: int) -> bytes:
    out = bytearray()
    scratch = bytearray(min(block_max, max_size))
    for start, size, stored in blocks:
        room = max_size - len(out)
        if stored:
            if size > room:
                raise InvalidRecordError(f"LZ4 data decompresses to more than {max_size} bytes")
            out += data[start : start + size]
            continue
        window = memoryview(scratch)[: min(block_max, room)]
        written = cramjam.lz4.decompress_block_into(data[start : start + size], window)
        out += window[:written]
    return bytes(out)


# -------------------------------------------------------------------------------------------- zstd

_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
_ZSTD_MIN_GUESS = 64 * 1024


def _zstd_decompress(data: memoryview, max_size: int) -> bytes:
    if len(data) < 5 or data[:4] != _ZSTD_MAGIC:
        raise InvalidRecordError("not a zstd frame (bad magic or too short)")
    declared = _zstd_content_size(data)
    if declared is not None and declared > max_size:
        raise InvalidRecordError(f"zstd content size {declared} exceeds {max_size} bytes")
    capacity = declared if declared is not None else min(max_size, max(_ZSTD_MIN_GUESS, 8 * len(data)))
    while True:
        out = bytearray(capacity)
        try:
            written = cramjam.zstd.decompress_into(data, out)
        except cramjam.DecompressionError as exc:
            # The only way to learn the size of a frame without a content size is to try: grow the
            # buffer geometrically, never past max_size (+1 so that "exactly max_size" succeeds).
            if "whole buffer" not in str(exc):
                raise
            if capacity > max_size:
                raise InvalidRecordError(f"zstd data decompresses to more than {max_size} bytes") from None
            capacity = min(max_size + 1, max(capacity * 4, _ZSTD_MIN_GUESS))
            continue
        if written > max_size:
            raise InvalidRecordError(f"zstd data decompresses to more than {max_size} bytes")
        del out[written:]
        return bytes(out)


def _zstd_content_size(data: memoryview) -> int | None:
    """The Frame_Content_Size of the first frame, or None if absent (RFC 8878 §3.1.1.1)."""
    fhd = data[4]
    fcs_flag, single_segment, dict_flag = fhd >> 6, (fhd >> 5) & 1, fhd & 0x03
    pos = 5 + (0 if single_segment else 1) + (0, 1, 2, 4)[dict_flag]
    width = (1 if single_segment else 0, 2, 4, 8)[fcs_flag]
    if width == 0 or len(data) < pos + width:
        return None
    value = int.from_bytes(data[pos : pos + width], "little")
    return value + 256 if width == 2 else value


# ------------------------------------------------------------------------------------------ xxh32

_P1, _P2, _P3, _P4, _P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
_M32 = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def xxh32(data: bytes | bytearray | memoryview, seed: int = 0) -> int:
    """XXH32 of ``data`` (pure Python: meant for the few bytes of an LZ4 frame descriptor)."""
    buf = bytes(data)
    n = len(buf)
    pos = 0
    if n >= 16:
        v1, v2, v3, v4 = (seed + _P1 + _P2) & _M32, (seed + _P2) & _M32, seed & _M32, (seed - _P1) & _M32
        lanes = struct.unpack_from(f"<{(n // 16) * 4}I", buf)
        for i in range(0, len(lanes), 4):
            v1 = (_rotl((v1 + lanes[i] * _P2) & _M32, 13) * _P1) & _M32
            v2 = (_rotl((v2 + lanes[i + 1] * _P2) & _M32, 13) * _P1) & _M32
            v3 = (_rotl((v3 + lanes[i + 2] * _P2) & _M32, 13) * _P1) & _M32
            v4 = (_rotl((v4 + lanes[i + 3] * _P2) & _M32, 13) * _P1) & _M32
        h = (_rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)) & _M32
        pos = (n // 16) * 16
    else:
        h = (seed + _P5) & _M32
    h = (h + n) & _M32
    while pos + 4 <= n:
        (word,) = _UINT32_LE.unpack_from(buf, pos)
        h = (_rotl((h + word * _P3) & _M32, 17) * _P4) & _M32
        pos += 4
    while pos < n:
        h = (_rotl((h + buf[pos] * _P5) & _M32, 11) * _P1) & _M32
        pos += 1
    h ^= h >> 15
    h = (h * _P2) & _M32
    h ^= h >> 13
    h = (h * _P3) & _M32
    h ^= h >> 16
    return h


__all__ = [
    "DEFAULT_MAX_DECOMPRESSED_BYTES",
    "CompressionType",
    "available_codecs",
    "compress",
    "decompress",
    "xxh32",
]
