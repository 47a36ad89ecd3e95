"""The typed errors of the record layer.

Every parser and decoder in :mod:`tidelog.records` raises only :class:`RecordsError` subclasses on
bad input, whatever the bytes: never ``IndexError``, ``struct.error``, ``zlib.error``, codec errors or
``MemoryError``. The broker maps them to per-partition error codes:

=========================== ====================================================================
:class:`CorruptRecordError` a checksum does not match (CRC32C of a v2 batch, CRC32 of a v0/v1
                            message) → ``CORRUPT_MESSAGE``
:class:`InvalidRecordError` the bytes are malformed: bad sizes or varints, a wrong magic, a record
                            count that disagrees with the data, truncated or undecompressible
                            data, a decompressed size over the limit → ``INVALID_RECORD``
:class:`UnsupportedCompressionTypeError` the data is fine but cannot be written in the requested
                            format (ZSTD in a v0/v1 message set) → ``UNSUPPORTED_COMPRESSION_TYPE``
=========================== ====================================================================
"""

from __future__ import annotations


class RecordsError(Exception):
    """Base of every error the record layer raises."""


class CorruptRecordError(RecordsError):
    """A checksum over record data does not match the stored one."""


class InvalidRecordError(RecordsError):
    """Record data is malformed: sizes, varints, counts, magic, compression or truncation."""


class UnsupportedCompressionTypeError(RecordsError):
    """The codec cannot be used in the requested message format (e.g. ZSTD below magic 2)."""


__all__ = [
    "CorruptRecordError",
    "InvalidRecordError",
    "RecordsError",
    "UnsupportedCompressionTypeError",
]
