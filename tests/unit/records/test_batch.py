"""RecordBatchView: header fields, CRC, validation, in-place patching, records, blob splitting;
cross-checked against kafka-python's independent implementation."""

from __future__ import annotations

import struct

import crc32c
import pytest

from tidelog.records import (
    CompressionType,
    CorruptRecordError,
    InvalidRecordError,
    LegacyMessageView,
    RecordBatchView,
    TimestampType,
    iter_batches,
)
from tidelog.records.batch import HEADER

from .samples import (
    ALL_CODECS,
    KAFKA_PYTHON_CODECS,
    SAMPLE_RECORDS,
    DefaultRecordBatch,
    DefaultRecordBatchBuilder,
    build_legacy,
    build_v2,
    flip,
)


def _with_crc(batch: bytearray) -> bytearray:
    batch[17:21] = crc32c.crc32c(bytes(batch[21:])).to_bytes(4, "big")
    return batch


def test_header_fields() -> None:
    data = build_v2(CompressionType.NONE, base_offset=1000, producer_id=42, producer_epoch=3,
                    base_sequence=17, is_transactional=True, partition_leader_epoch=9)
    view = RecordBatchView(data)
    fields = HEADER.unpack_from(data)
    assert view.base_offset == 1000 == fields[0]
    assert view.batch_length == len(data) - 12
    assert view.size_in_bytes == len(data)
    assert view.partition_leader_epoch == 9
    assert view.magic == 2
    assert view.crc == crc32c.crc32c(data[21:])
    assert view.attributes == 0x10
    assert view.compression_type is CompressionType.NONE and not view.is_compressed
    assert view.timestamp_type is TimestampType.CREATE_TIME
    assert view.is_transactional and not view.is_control_batch and not view.has_delete_horizon
    assert view.delete_horizon_ms is None
    assert view.last_offset_delta == len(SAMPLE_RECORDS) - 1
    assert view.last_offset == 1000 + len(SAMPLE_RECORDS) - 1
    assert view.next_offset == view.last_offset + 1
    assert view.base_timestamp == SAMPLE_RECORDS[0][0]
    assert view.max_timestamp == max(r[0] for r in SAMPLE_RECORDS)
    assert view.producer_id == 42 and view.has_producer_id
    assert view.producer_epoch == 3
    assert view.base_sequence == 17
    assert view.last_sequence == 17 + len(SAMPLE_RECORDS) - 1
    assert view.record_count == len(SAMPLE_RECORDS)
    view.validate()
    assert "base_offset=1000" in repr(view)


def test_last_sequence_wraps_like_kafka() -> None:
    data = bytearray(build_v2(producer_id=1, producer_epoch=0, base_sequence=2**31 - 2))
    assert RecordBatchView(data).last_sequence == len(SAMPLE_RECORDS) - 3
    assert RecordBatchView(build_v2()).last_sequence == -1


@pytest.mark.parametrize("codec", ALL_CODECS, ids=lambda c: c.name)
def test_records_decode_for_every_codec(codec: CompressionType) -> None:
    view = RecordBatchView(build_v2(codec, base_offset=7))
    view.validate()
    assert view.compression_type is codec
    got = list(view.records())
    assert [(r.offset, r.timestamp, r.key, r.value, [tuple(h) for h in r.headers]) for r in got] == [
        (7 + i, ts, key, value, headers) for i, (ts, key, value, headers) in enumerate(SAMPLE_RECORDS)
    ]


def test_zero_copy_view_over_a_larger_buffer() -> None:
    data = bytearray(build_v2() + b"trailing bytes of the next batch")
    view = RecordBatchView(memoryview(data))
    assert view.buffer.obj is data
    assert len(view.buffer) == view.size_in_bytes


def test_crc_detects_every_single_flipped_byte_in_the_covered_region() -> None:
    data = build_v2(CompressionType.NONE, records=SAMPLE_RECORDS[:2])
    for index in range(21, len(data)):
        view = RecordBatchView(flip(data, index))
        assert not view.is_valid_crc()
        with pytest.raises(CorruptRecordError):
            view.verify_crc()


def test_crc_over_a_1mib_batch_needs_no_copy() -> None:
    data = bytearray(build_v2(records=[(0, None, bytes(1024 * 1024), [])]))
    view = RecordBatchView(data)
    view.verify_crc()
    assert crc32c.crc32c(memoryview(data)[21:]) == view.crc


def test_fields_outside_the_crc_are_not_covered() -> None:
    data = build_v2()
    for index in range(0, 16):  # base offset, batch length aside, leader epoch
        if 8 <= index < 12:
            continue
        RecordBatchView(flip(data, index)).verify_crc()


def test_patching_base_offset_and_leader_epoch_keeps_the_crc() -> None:
    data = bytearray(build_v2(CompressionType.GZIP))
    view = RecordBatchView(data)
    crc = view.crc
    view.set_base_offset(123_456_789_012)
    view.set_partition_leader_epoch(77)
    assert (view.base_offset, view.partition_leader_epoch, view.crc) == (123_456_789_012, 77, crc)
    assert struct.unpack_from(">qii", data) == (123_456_789_012, len(data) - 12, 77)
    view.validate()
    assert [r.offset for r in view.records()] == [123_456_789_012 + i for i in range(len(SAMPLE_RECORDS))]
    assert DefaultRecordBatch(bytes(data)).validate_crc()


def test_patching_log_append_time_recomputes_the_crc() -> None:
    data = bytearray(build_v2(CompressionType.NONE))
    view = RecordBatchView(memoryview(data))
    old_crc = view.crc
    view.set_log_append_time(1_800_000_000_000)
    assert view.timestamp_type is TimestampType.LOG_APPEND_TIME
    assert view.attributes & 0x08
    assert view.max_timestamp == 1_800_000_000_000
    assert view.crc != old_crc
    view.validate()
    assert {r.timestamp for r in view.records()} == {1_800_000_000_000}
    kafka = DefaultRecordBatch(bytes(data))
    assert kafka.validate_crc()
    assert kafka.timestamp_type == 1
    assert {r.timestamp for r in kafka} == {1_800_000_000_000}
    view.set_max_timestamp(TimestampType.CREATE_TIME, SAMPLE_RECORDS[2][0])
    view.validate()
    assert view.timestamp_type is TimestampType.CREATE_TIME
    assert bytes(data) == build_v2(CompressionType.NONE)


def test_patching_a_read_only_buffer_is_refused() -> None:
    view = RecordBatchView(build_v2())
    with pytest.raises(TypeError):
        view.set_base_offset(1)


def test_validate_record_count_rules() -> None:
    base = bytearray(build_v2())
    bad_count = bytearray(base)
    struct.pack_into(">i", bad_count, 57, len(SAMPLE_RECORDS) + 1)
    with pytest.raises(InvalidRecordError, match="inconsistent"):
        RecordBatchView(_with_crc(bad_count)).validate()
    # fewer records than the offset range: fine after compaction, not from a producer
    thinned = bytearray(base)
    struct.pack_into(">i", thinned, 23, len(SAMPLE_RECORDS) + 5)
    view = RecordBatchView(_with_crc(thinned))
    with pytest.raises(InvalidRecordError):
        view.validate()
    view.validate(allow_compacted=True)
    negative = bytearray(base)
    struct.pack_into(">i", negative, 23, -1)
    with pytest.raises(InvalidRecordError):
        RecordBatchView(_with_crc(negative)).validate(allow_compacted=True)
    too_many = bytearray(base)
    struct.pack_into(">ii", too_many, 23, 10**6, 0)
    struct.pack_into(">i", too_many, 57, 10**6 + 1)
    with pytest.raises(InvalidRecordError, match="cannot hold"):
        RecordBatchView(_with_crc(too_many)).validate()


def test_validate_checks_crc_first_and_codec() -> None:
    data = build_v2()
    with pytest.raises(CorruptRecordError):
        RecordBatchView(flip(data, 57)).validate()  # record count byte: corrupt, not "invalid"
    bad_codec = bytearray(data)
    struct.pack_into(">h", bad_codec, 21, 5)
    view = RecordBatchView(_with_crc(bad_codec))
    with pytest.raises(InvalidRecordError):
        view.validate()
    with pytest.raises(InvalidRecordError):
        list(view.records())


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda b: b[:60], "shorter"),
        (lambda b: b[:16] + b"\x01" + b[17:], "magic"),
        (lambda b: b[:8] + struct.pack(">i", 40) + b[12:], "smaller"),
        (lambda b: b[:8] + struct.pack(">i", len(b)) + b[12:], "truncated"),
    ],
)
def test_constructor_rejects_bad_size_and_magic(mutate, message: str) -> None:
    with pytest.raises(InvalidRecordError, match=message):
        RecordBatchView(mutate(build_v2()))


def test_records_detects_count_mismatch() -> None:
    data = bytearray(build_v2())
    struct.pack_into(">i", data, 57, len(SAMPLE_RECORDS) - 1)
    with pytest.raises(InvalidRecordError):
        list(RecordBatchView(data).records())
    struct.pack_into(">i", data, 57, -3)
    with pytest.raises(InvalidRecordError):
        RecordBatchView(data).records()


def test_records_honour_the_decompression_limit() -> None:
    view = RecordBatchView(build_v2(CompressionType.ZSTD, records=[(0, None, bytes(100_000), [])]))
    with pytest.raises(InvalidRecordError):
        list(view.records(max_decompressed_bytes=50_000))


# ------------------------------------------------------------------------------------ iter_batches


def test_iter_batches_splits_mixed_blobs() -> None:
    blob = build_v2(base_offset=0) + build_legacy(1, CompressionType.GZIP, base_offset=10) + \
        build_v2(CompressionType.LZ4, base_offset=20) + build_legacy(0)
    entries = list(iter_batches(blob))
    assert [type(e) for e in entries] == [RecordBatchView, LegacyMessageView, RecordBatchView] + \
        [LegacyMessageView] * 3
    assert [e.magic for e in entries] == [2, 1, 2, 0, 0, 0]
    assert sum(e.size_in_bytes for e in entries) == len(blob)
    for entry in entries:
        entry.validate()
    assert entries[2].base_offset == 20
    assert [r.offset for r in entries[1].records()] == [10, 11, 12]


@pytest.mark.parametrize("cut", [1, 11, 12, 16, 17, 60, 61, -1])
def test_partial_tail_is_invalid_or_skipped(cut: int) -> None:
    first, second = build_v2(), build_v2(base_offset=5)
    blob = first + second[:cut]
    with pytest.raises(InvalidRecordError):
        list(iter_batches(blob))
    assert [e.base_offset for e in iter_batches(blob, allow_partial=True)] == [0]


def test_iter_batches_rejects_garbage_even_when_partial_allowed() -> None:
    bad_magic = bytearray(build_v2())
    bad_magic[16] = 3
    tiny = bytearray(build_v2())
    struct.pack_into(">i", tiny, 8, 13)
    for blob in (bad_magic, tiny):
        for allow_partial in (False, True):
            with pytest.raises(InvalidRecordError):
                list(iter_batches(blob, allow_partial=allow_partial))
    assert list(iter_batches(b"")) == []


# ----------------------------------------------------------------------- kafka-python cross-checks


def _kafka_python_batch(codec: int, transactional: bool) -> bytes:
    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=codec, is_transactional=transactional,
        producer_id=99 if transactional else -1, producer_epoch=4 if transactional else -1,
        base_sequence=12 if transactional else -1, batch_size=1 << 22)
    for i, (timestamp, key, value, headers) in enumerate(SAMPLE_RECORDS):
        builder.append(i, timestamp, key, value, headers)
    return bytes(builder.build())


@pytest.mark.parametrize("codec", KAFKA_PYTHON_CODECS, ids=lambda c: c.name)
@pytest.mark.parametrize("transactional", [False, True])
def test_kafka_python_batches_parse_with_ours(codec: CompressionType, transactional: bool) -> None:
    data = _kafka_python_batch(int(codec), transactional)
    theirs = DefaultRecordBatch(data)
    ours = RecordBatchView(data)
    ours.validate()
    assert (ours.base_offset, ours.magic, ours.crc, ours.attributes, ours.last_offset_delta,
            ours.base_timestamp, ours.max_timestamp, ours.producer_id, ours.producer_epoch,
            ours.base_sequence, ours.record_count, ours.partition_leader_epoch, ours.size_in_bytes) == (
        theirs.base_offset, theirs.magic, theirs.crc, theirs.attributes, theirs.last_offset_delta,
        theirs.first_timestamp, theirs.max_timestamp, theirs.producer_id, theirs.producer_epoch,
        theirs.base_sequence, theirs.records_count, theirs.leader_epoch, theirs.size_in_bytes)
    assert ours.compression_type == codec and ours.is_transactional == transactional
    assert [(r.offset, r.timestamp, r.key, r.value, [tuple(h) for h in r.headers]) for r in ours.records()] == [
        (r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in theirs]


@pytest.mark.parametrize("codec", KAFKA_PYTHON_CODECS, ids=lambda c: c.name)
def test_our_batches_parse_with_kafka_python(codec: CompressionType) -> None:
    data = build_v2(codec, base_offset=500, producer_id=7, producer_epoch=2, base_sequence=30,
                    is_transactional=True, partition_leader_epoch=3)
    theirs = DefaultRecordBatch(data)
    assert theirs.validate_crc()
    view = RecordBatchView(data)
    assert (theirs.base_offset, theirs.last_offset_delta, theirs.records_count, theirs.max_timestamp,
            theirs.first_timestamp, theirs.producer_id, theirs.producer_epoch, theirs.base_sequence,
            theirs.is_transactional, theirs.compression_type, theirs.leader_epoch) == (
        500, view.last_offset_delta, view.record_count, view.max_timestamp, view.base_timestamp,
        7, 2, 30, True, int(codec), 3)
    assert [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in theirs] == [
        (500 + i, ts, key, value, headers) for i, (ts, key, value, headers) in enumerate(SAMPLE_RECORDS)]
