"""Validation of appended record batches, before a log assigns offsets (Kafka's LogValidator):
framing and size, CRC and header checks, the per-record rules of KIP-467 (keys on compacted topics,
timestamp bounds) and the recompression ``compression.type`` asks for. Pure functions of the bytes and
the topic's config; nothing here touches a file.
"""

from __future__ import annotations

from tidelog.config import TopicConfig
from tidelog.errors import ErrorCode, KafkaError, RecordValidationError
from tidelog.records import (
    CompressionType,
    CorruptRecordError,
    RecordBatchView,
    RecordsError,
    TimestampType,
    legacy_to_batches,
    rebuild_batch,
)
from tidelog.records.batch import LOG_HEADER, LOG_OVERHEAD, MIN_BATCH_LENGTH, RECORD_BATCH_OVERHEAD

#: compression.type -> the codec the broker stores batches in ("producer": whatever the producer sent).
BROKER_CODECS = {"uncompressed": CompressionType.NONE, "gzip": CompressionType.GZIP,
                 "snappy": CompressionType.SNAPPY, "lz4": CompressionType.LZ4, "zstd": CompressionType.ZSTD}


def split_and_validate(data: bytearray | memoryview, max_bytes: int, *, from_client: bool = True
                       ) -> list[RecordBatchView]:
    """The batches of a produce request's records (or a coordinator's), each checked: framing, size
    against ``max.message.bytes``, CRC and header (CORRUPT_MESSAGE, INVALID_RECORD, MESSAGE_TOO_LARGE)."""
    views: list[RecordBatchView] = []
    mv = memoryview(data)
    pos = 0
    total = len(mv)
    while pos < total:
        if total - pos < RECORD_BATCH_OVERHEAD:
            raise KafkaError(ErrorCode.CORRUPT_MESSAGE, "truncated record batch")
        _, length = LOG_HEADER.unpack_from(mv, pos)
        size = LOG_OVERHEAD + length
        if length < MIN_BATCH_LENGTH or pos + size > total:
            raise KafkaError(ErrorCode.CORRUPT_MESSAGE, f"record batch size {size} does not fit the request")
        if size > max_bytes:
            raise KafkaError(
                ErrorCode.MESSAGE_TOO_LARGE, f"batch of {size} bytes exceeds max.message.bytes {max_bytes}"
            )
        try:
            view = RecordBatchView(mv[pos : pos + size])
            view.validate(allow_compacted=not from_client)
        except RecordsError as e:
            raise records_error(e) from None
        if from_client:
            if view.is_control_batch:
                raise KafkaError(ErrorCode.INVALID_RECORD, "clients may not write control batches")
            if view.record_count <= 0:
                raise KafkaError(ErrorCode.INVALID_RECORD, "a record batch must hold at least one record")
        views.append(view)
        pos += size
    if not views:
        raise KafkaError(ErrorCode.INVALID_RECORD, "no record batches in the request")
    return views

def recompress(views: list[RecordBatchView], codec: CompressionType,
               max_bytes: int) -> tuple[bytearray, list[RecordBatchView]]:
    """A topic whose ``compression.type`` names a codec stores every batch in it (Kafka recompresses
    on the leader): batches in another codec are rebuilt, records, offsets and producer fields kept.
    A rebuilt batch larger than ``max.message.bytes`` is MESSAGE_TOO_LARGE."""
    parts: list[bytes | bytearray] = []
    for view in views:
        if view.compression_type == codec:
            parts.append(bytes(view.buffer))
            continue
        try:
            rebuilt = rebuild_batch(view, view.records(), compression=codec)
        except RecordsError as e:
            raise records_error(e) from None
        if len(rebuilt) > max_bytes:
            raise KafkaError(ErrorCode.MESSAGE_TOO_LARGE,
                             f"batch of {len(rebuilt)} bytes after recompression exceeds max.message.bytes "
                             f"{max_bytes}")
        parts.append(rebuilt)
    data = bytearray(b"".join(parts))
    return data, split_and_validate(data, max_bytes)

def check_records(views: list[RecordBatchView], config: TopicConfig, now: int, topic: str, partition: int) -> None:
    """KIP-467: every record the topic must refuse, by its index in the batch, in one
    :class:`RecordValidationError`. Records are decoded only when a rule needs them: a compacted
    topic (every record needs a key) or a CreateTime batch whose timestamps may be out of
    ``message.timestamp.before/after.max.ms`` (the header's max timestamp rules out "too new";
    "too old" is possible only when before.max.ms is finite)."""
    errors: list[tuple[int, str]] = []
    bad_timestamp = False
    for view in views:
        check_time = (config.message_timestamp_type == "CreateTime"
                      and view.timestamp_type == TimestampType.CREATE_TIME)
        low = now - config.message_timestamp_before_max_ms
        high = now + config.message_timestamp_after_max_ms
        check_time = check_time and (view.max_timestamp > high or low > 0)
        if not (config.compact or check_time):
            continue
        try:
            records = list(view.records())
        except RecordsError as e:
            raise records_error(e) from None
        for index, record in enumerate(records):
            if check_time and record.timestamp >= 0 and not low <= record.timestamp <= high:
                bad_timestamp = True
                errors.append((index, f"Timestamp {record.timestamp} of message with offset {record.offset} is "
                                      f"out of range. The timestamp should be within [{low}, {high}]"))
            elif config.compact and record.key is None:
                errors.append((index, "Compacted topic cannot accept message without key in topic partition "
                                      f"{topic}-{partition}."))
    if errors:
        raise RecordValidationError(errors, bad_timestamp=bad_timestamp)


def writable(records) -> bytearray | memoryview:
    """A writable buffer over the records: the request's own buffer when it is writable."""
    if isinstance(records, bytearray):
        return records
    if isinstance(records, memoryview) and not records.readonly:
        return records
    return bytearray(records)


def convert_legacy(data) -> bytes:
    try:
        return b"".join(legacy_to_batches(data, base_offset=0))
    except RecordsError as e:
        raise records_error(e) from None


def records_error(e: RecordsError) -> KafkaError:
    """CRC mismatches are CORRUPT_MESSAGE; every other malformed batch is INVALID_RECORD."""
    code = ErrorCode.CORRUPT_MESSAGE if isinstance(e, CorruptRecordError) else ErrorCode.INVALID_RECORD
    return KafkaError(code, str(e))
