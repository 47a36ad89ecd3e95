"""Tidelog's record layer: Kafka record batches (magic 2) and message sets (magic 0/1) as bytes.

Sans-IO: bytes or memoryviews in, views, records or bytes out; no files, sockets, clocks or asyncio.
Storage appends batches as bytes through :class:`RecordBatchView` (header fields, CRC, in-place
patching) and never decodes records on the hot path; compaction, coordinators, control markers,
format conversion and tools decode and build records here.
"""

from tidelog.records.batch import (
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    RECORD_BATCH_OVERHEAD,
    BatchEntry,
    RecordBatchView,
    iter_batches,
)
from tidelog.records.builder import RecordBatchBuilder, build_batch
from tidelog.records.compression import (
    DEFAULT_MAX_DECOMPRESSED_BYTES,
    CompressionType,
    available_codecs,
    compress,
    decompress,
)
from tidelog.records.control import (
    ControlRecordType,
    EndTransactionMarker,
    build_control_batch,
    control_record_key,
    decode_control_batch,
    decode_end_txn_marker,
    end_txn_marker_value,
    parse_control_record_type,
)
from tidelog.records.conversion import batches_to_legacy, legacy_to_batches, rebuild_batch
from tidelog.records.errors import (
    CorruptRecordError,
    InvalidRecordError,
    RecordsError,
    UnsupportedCompressionTypeError,
)
from tidelog.records.legacy import (
    LegacyMessageSetBuilder,
    LegacyMessageView,
    encode_message,
    iter_legacy_messages,
)
from tidelog.records.record import (
    NO_TIMESTAMP,
    Header,
    Record,
    TimestampType,
    decode_record,
    decode_records,
    encode_record,
    encode_records,
    encode_varint,
    encode_varlong,
    read_varint,
    read_varlong,
)

__all__ = [
    "DEFAULT_MAX_DECOMPRESSED_BYTES",
    "NO_PARTITION_LEADER_EPOCH",
    "NO_PRODUCER_EPOCH",
    "NO_PRODUCER_ID",
    "NO_SEQUENCE",
    "NO_TIMESTAMP",
    "RECORD_BATCH_OVERHEAD",
    "BatchEntry",
    "CompressionType",
    "ControlRecordType",
    "CorruptRecordError",
    "EndTransactionMarker",
    "Header",
    "InvalidRecordError",
    "LegacyMessageSetBuilder",
    "LegacyMessageView",
    "Record",
    "RecordBatchBuilder",
    "RecordBatchView",
    "RecordsError",
    "TimestampType",
    "UnsupportedCompressionTypeError",
    "available_codecs",
    "batches_to_legacy",
    "build_batch",
    "build_control_batch",
    "compress",
    "control_record_key",
    "decode_control_batch",
    "decode_end_txn_marker",
    "decode_record",
    "decode_records",
    "decompress",
    "encode_message",
    "encode_record",
    "encode_records",
    "encode_varint",
    "encode_varlong",
    "end_txn_marker_value",
    "iter_batches",
    "iter_legacy_messages",
    "legacy_to_batches",
    "parse_control_record_type",
    "read_varint",
    "read_varlong",
    "rebuild_batch",
]
