"""Codecs: round trips, what goes on the wire, the LZ4 magic-0 quirk, xerial snappy, size bounds."""

from __future__ import annotations

import gzip
import os
import random
import struct

import cramjam
import pytest

from tidelog.records import (
    CompressionType,
    InvalidRecordError,
    available_codecs,
    compress,
    decompress,
)
from tidelog.records.compression import XERIAL_MAGIC, xxh32

from .samples import ALL_CODECS

PAYLOADS = {
    "empty": b"",
    "one": b"x",
    "text": b"the quick brown fox jumps over the lazy dog " * 3000,  # several LZ4 blocks
    "random": os.urandom(70_000),  # incompressible: stored LZ4 blocks
}


@pytest.mark.parametrize("codec", ALL_CODECS, ids=lambda c: c.name)
@pytest.mark.parametrize("magic", [0, 1, 2])
@pytest.mark.parametrize("name", list(PAYLOADS))
def test_round_trip(codec: CompressionType, magic: int, name: str) -> None:
    data = PAYLOADS[name]
    packed = compress(codec, data, magic=magic)
    assert decompress(codec, packed, magic=magic) == data
    assert decompress(codec, memoryview(packed), magic=magic) == data


def test_codec_names_and_ids() -> None:
    assert [int(c) for c in CompressionType] == [0, 1, 2, 3, 4]
    assert available_codecs() == ["none", "gzip", "snappy", "lz4", "zstd"]
    assert CompressionType.from_name("ZStd") is CompressionType.ZSTD
    with pytest.raises(ValueError):
        CompressionType.from_name("brotli")
    with pytest.raises(InvalidRecordError):
        CompressionType.from_id(5)
    with pytest.raises(InvalidRecordError):
        decompress(7, b"abc")


# -------------------------------------------------------------------------------------------- gzip


def test_gzip_interoperates_with_stdlib() -> None:
    data = PAYLOADS["text"]
    assert gzip.decompress(compress(CompressionType.GZIP, data)) == data
    assert decompress(CompressionType.GZIP, gzip.compress(data)) == data


def test_gzip_reads_several_members_and_ignores_trailing_junk() -> None:
    two = gzip.compress(b"first ") + gzip.compress(b"second")
    assert decompress(CompressionType.GZIP, two) == b"first second"
    assert decompress(CompressionType.GZIP, two + b"\x00\x00junk") == b"first second"


def test_gzip_truncated_is_invalid() -> None:
    packed = compress(CompressionType.GZIP, PAYLOADS["text"])
    with pytest.raises(InvalidRecordError):
        decompress(CompressionType.GZIP, packed[: len(packed) // 2])


# ------------------------------------------------------------------------------------------ snappy


def xerial_frame(data: bytes, block: int = 32 * 1024) -> bytes:
    """The snappy-java SnappyOutputStream framing, written from its description."""
    out = [XERIAL_MAGIC, struct.pack(">ii", 1, 1)]
    for start in range(0, len(data), block):
        raw = bytes(cramjam.snappy.compress_raw(data[start : start + block]))
        out += [struct.pack(">i", len(raw)), raw]
    return b"".join(out)


def test_snappy_writes_raw_snappy() -> None:
    packed = compress(CompressionType.SNAPPY, PAYLOADS["text"])
    assert not packed.startswith(XERIAL_MAGIC)
    assert bytes(cramjam.snappy.decompress_raw(packed)) == PAYLOADS["text"]


@pytest.mark.parametrize("name", list(PAYLOADS))
def test_snappy_reads_xerial_framing(name: str) -> None:
    data = PAYLOADS[name]
    assert decompress(CompressionType.SNAPPY, xerial_frame(data)) == data


def test_snappy_xerial_ignores_version_fields() -> None:
    framed = bytearray(xerial_frame(b"abc" * 1000))
    framed[8:16] = struct.pack("<ii", 1, 1)  # little-endian, as some producers wrote them
    assert decompress(CompressionType.SNAPPY, framed) == b"abc" * 1000


@pytest.mark.parametrize("cut", [17, 20, 30, -1])
def test_snappy_truncated_xerial_is_invalid(cut: int) -> None:
    framed = xerial_frame(PAYLOADS["text"])
    with pytest.raises(InvalidRecordError):
        decompress(CompressionType.SNAPPY, framed[:cut])


def test_snappy_xerial_block_length_overrun_is_invalid() -> None:
    framed = bytearray(xerial_frame(b"abc" * 100))
    framed[16:20] = struct.pack(">i", 1 << 30)
    with pytest.raises(InvalidRecordError):
        decompress(CompressionType.SNAPPY, framed)


# --------------------------------------------------------------------------------------------- lz4


def test_xxh32_known_vectors_and_lz4_content_checksums() -> None:
    assert xxh32(b"") == 0x02CC5D05
    assert xxh32(b"abc") == 0x32D153FF
    assert xxh32(b"Nobody inspects the spammish repetition") == 0xE2293B2F
    for size in (1, 3, 4, 15, 16, 17, 31, 33, 1000):
        data = os.urandom(size)
        frame = bytes(cramjam.lz4.compress(data))  # the C library writes an xxh32 content checksum
        assert xxh32(data) == int.from_bytes(frame[-4:], "little")


def test_lz4_frame_is_what_kafka_writes() -> None:
    packed = compress(CompressionType.LZ4, PAYLOADS["text"])
    assert packed[:4] == b"\x04\x22\x4d\x18"
    assert packed[4] == 0x60  # version 1, independent blocks, no checksums, no content size
    assert packed[5] == 0x40  # 64 KiB blocks
    assert packed[6] == (xxh32(packed[4:6]) >> 8) & 0xFF
    assert packed.endswith(b"\x00\x00\x00\x00")
    # an independent decoder (liblz4's frame API, through cramjam) reads it
    assert bytes(cramjam.lz4.decompress(packed)) == PAYLOADS["text"]


def test_lz4_magic_0_uses_kafkas_broken_header_checksum() -> None:
    packed = compress(CompressionType.LZ4, PAYLOADS["text"], magic=0)
    assert packed[6] == (xxh32(packed[:6]) >> 8) & 0xFF  # magic bytes included: KIP-57's bug
    assert packed[6] != (xxh32(packed[4:6]) >> 8) & 0xFF
    with pytest.raises(cramjam.DecompressionError):
        cramjam.lz4.decompress(packed)  # a correct decoder rejects it...
    assert decompress(CompressionType.LZ4, packed, magic=0) == PAYLOADS["text"]  # ...magic 0 accepts
    with pytest.raises(InvalidRecordError):
        decompress(CompressionType.LZ4, packed, magic=1)


def test_lz4_magic_0_also_accepts_a_correct_header_checksum() -> None:
    packed = compress(CompressionType.LZ4, b"hello" * 100, magic=1)
    assert decompress(CompressionType.LZ4, packed, magic=0) == b"hello" * 100


def test_lz4_reads_linked_blocks_content_size_and_checksums() -> None:
    data = PAYLOADS["text"]
    frame = bytes(cramjam.lz4.compress(data))  # linked blocks, block + content checksums
    assert frame[4] & 0x20 == 0
    assert decompress(CompressionType.LZ4, frame) == data
    corrupt = bytearray(frame)
    corrupt[-2] ^= 0xFF  # content checksum
    with pytest.raises(InvalidRecordError):
        decompress(CompressionType.LZ4, corrupt)


def test_lz4_block_by_block_when_the_bound_exceeds_the_limit() -> None:
    data = PAYLOADS["text"][:70_000]  # two blocks: the size bound is 128 KiB
    packed = compress(CompressionType.LZ4, data)
    assert decompress(CompressionType.LZ4, packed, max_size=70_000) == data
    with pytest.raises(InvalidRecordError):
        decompress(CompressionType.LZ4, packed, max_size=69_999)


@pytest.mark.parametrize("index", [0, 3, 4, 5, 6])
def test_lz4_bad_frame_header_is_invalid(index: int) -> None:
    packed = bytearray(compress(CompressionType.LZ4, b"abc" * 100))
    packed[index] ^= 0x01
    with pytest.raises(InvalidRecordError):
        decompress(CompressionType.LZ4, packed)


def test_lz4_trailing_bytes_and_truncation_are_invalid() -> None:
    packed = compress(CompressionType.LZ4, PAYLOADS["text"])
    for bad in (packed + b"x", packed[:-1], packed[:6], packed[: len(packed) // 2]):
        with pytest.raises(InvalidRecordError):
            decompress(CompressionType.LZ4, bad)


# -------------------------------------------------------------------------------------------- zstd


def test_zstd_frame_without_content_size_grows_its_buffer() -> None:
    data = b"\x00" * 3_000_000  # ratio far above the first guess
    compressor = cramjam.zstd.Compressor(level=3)
    compressor.compress(data)
    streamed = bytes(compressor.finish())
    assert streamed[4] & 0xC0 == 0 and not streamed[4] & 0x20  # no Frame_Content_Size field
    assert decompress(CompressionType.ZSTD, streamed) == data
    assert decompress(CompressionType.ZSTD, streamed, max_size=len(data)) == data
    with pytest.raises(InvalidRecordError):
        decompress(CompressionType.ZSTD, streamed, max_size=len(data) - 1)


def test_zstd_concatenated_frames() -> None:
    two = compress(CompressionType.ZSTD, b"a" * 10) + compress(CompressionType.ZSTD, b"b" * 10)
    assert decompress(CompressionType.ZSTD, two) == b"a" * 10 + b"b" * 10


# -------------------------------------------------------------------------------- bounds, garbage


@pytest.mark.parametrize("codec", ALL_CODECS[1:], ids=lambda c: c.name)
def test_decompression_bomb_is_refused(codec: CompressionType) -> None:
    bomb = compress(codec, bytes(16 * 1024 * 1024))
    assert len(bomb) < 1024 * 1024
    with pytest.raises(InvalidRecordError):
        decompress(codec, bomb, max_size=1024 * 1024)
    assert len(decompress(codec, bomb, max_size=16 * 1024 * 1024)) == 16 * 1024 * 1024


def test_xerial_bomb_is_refused_per_block_budget() -> None:
    with pytest.raises(InvalidRecordError):
        decompress(CompressionType.SNAPPY, xerial_frame(bytes(1_000_000)), max_size=100_000)


def test_none_codec_honours_the_bound() -> None:
    with pytest.raises(InvalidRecordError):
        decompress(CompressionType.NONE, b"abcd", max_size=3)


@pytest.mark.parametrize("codec", ALL_CODECS[1:], ids=lambda c: c.name)
@pytest.mark.parametrize("garbage", [b"", b"\x00", b"garbage" * 50, random.Random(7).randbytes(300), b"\xff" * 64])
def test_garbage_is_invalid(codec: CompressionType, garbage: bytes) -> None:
    if codec is CompressionType.SNAPPY and garbage == b"\x00":
        assert decompress(codec, garbage) == b""  # a valid raw snappy stream of length 0
        return
    with pytest.raises(InvalidRecordError):
        decompress(codec, garbage)
