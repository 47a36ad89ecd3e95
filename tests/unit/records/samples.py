"""Shared sample data for the record-layer tests: batches, message sets and byte mutations."""

from __future__ import annotations

import os
import warnings

from tidelog.records import CompressionType, LegacyMessageSetBuilder, RecordBatchBuilder

ALL_CODECS = list(CompressionType)
LEGACY_CODECS = [c for c in CompressionType if c is not CompressionType.ZSTD]
# kafka-python 3.0.12 in the venv has only its built-in gzip codec (no lz4/snappy/zstd packages).
KAFKA_PYTHON_CODECS = [CompressionType.NONE, CompressionType.GZIP]

SAMPLE_RECORDS: list[tuple[int, bytes | None, bytes | None, list[tuple[str, bytes | None]]]] = [
    (1_700_000_000_000, b"key-0", b"value-0", [("trace", b"abc"), ("null", None)]),
    (1_699_999_999_000, None, b"negative timestamp delta", []),
    (1_700_000_000_500, b"tombstone", None, [("", b"")]),
    (1_700_000_000_001, b"", b"", []),
    (1_700_000_000_002, b"k" * 300, os.urandom(200) + b"x" * 5000, [("h" * 130, b"v" * 200)]),
]


def build_v2(codec: CompressionType = CompressionType.NONE, *, base_offset: int = 0,
             records=SAMPLE_RECORDS, **options) -> bytes:
    builder = RecordBatchBuilder(base_offset=base_offset, compression=codec, **options)
    for timestamp, key, value, headers in records:
        builder.append(timestamp, key, value, headers)
    return builder.build()


def build_legacy(magic: int, codec: CompressionType = CompressionType.NONE, *, base_offset: int = 0,
                 count: int = 3, **options) -> bytes:
    builder = LegacyMessageSetBuilder(magic, compression=codec, base_offset=base_offset, **options)
    for i in range(count):
        builder.append(1_600_000_000_000 + i, None if i == 1 else b"key-%d" % i,
                       None if i == 2 else b"value-%d" % i * (i + 1))
    return builder.build()


def flip(data: bytes, index: int, mask: int = 0x01) -> bytearray:
    out = bytearray(data)
    out[index] ^= mask
    return out


with warnings.catch_warnings():  # kafka-python's protocol package warns about importlib.resources
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
    from kafka.record.legacy_records import LegacyRecordBatch, LegacyRecordBatchBuilder
    from kafka.record.memory_records import MemoryRecords

__all__ = [
    "ALL_CODECS",
    "KAFKA_PYTHON_CODECS",
    "LEGACY_CODECS",
    "SAMPLE_RECORDS",
    "DefaultRecordBatch",
    "DefaultRecordBatchBuilder",
    "LegacyRecordBatch",
    "LegacyRecordBatchBuilder",
    "MemoryRecords",
    "build_legacy",
    "build_v2",
    "flip",
]
