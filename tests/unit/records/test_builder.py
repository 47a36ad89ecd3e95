"""RecordBatchBuilder: derived header fields, options, offsets, compression."""

from __future__ import annotations

import pytest

from tidelog.records import (
    CompressionType,
    InvalidRecordError,
    RecordBatchBuilder,
    RecordBatchView,
    TimestampType,
    build_batch,
)

from .samples import ALL_CODECS, DefaultRecordBatch


def test_derived_header_fields() -> None:
    builder = RecordBatchBuilder(base_offset=40)
    assert builder.append(5_000, b"a", b"1") == 40
    assert builder.append(4_000, b"b", b"2") == 41  # older timestamp: negative delta
    assert builder.append(9_000, b"c", b"3") == 42
    assert len(builder) == 3 and builder.next_offset == 43
    view = RecordBatchView(builder.build())
    view.validate()
    assert (view.base_offset, view.last_offset_delta, view.record_count) == (40, 2, 3)
    assert (view.base_timestamp, view.max_timestamp) == (5_000, 9_000)
    assert (view.producer_id, view.producer_epoch, view.base_sequence, view.partition_leader_epoch) == (-1, -1, -1, -1)
    assert view.attributes == 0
    assert [r.timestamp for r in view.records()] == [5_000, 4_000, 9_000]


def test_all_options_land_in_the_header() -> None:
    builder = RecordBatchBuilder(
        base_offset=2**40, compression=CompressionType.SNAPPY, timestamp_type=TimestampType.LOG_APPEND_TIME,
        producer_id=123456789, producer_epoch=32000, base_sequence=2**31 - 1, is_transactional=True,
        is_control=True, partition_leader_epoch=2**31 - 1, delete_horizon_ms=1_900_000_000_000)
    builder.append(1_000, None, b"x")
    view = RecordBatchView(builder.build())
    view.validate()
    assert view.attributes == 2 | 0x08 | 0x10 | 0x20 | 0x40
    assert view.is_control_batch and view.is_transactional and view.has_delete_horizon
    assert view.timestamp_type is TimestampType.LOG_APPEND_TIME
    assert view.delete_horizon_ms == view.base_timestamp == 1_900_000_000_000
    assert (view.base_offset, view.producer_id, view.producer_epoch, view.base_sequence) == (
        2**40, 123456789, 32000, 2**31 - 1)
    assert view.partition_leader_epoch == 2**31 - 1
    assert view.max_timestamp == 1_000


def test_delete_horizon_is_the_base_of_timestamp_deltas() -> None:
    builder = RecordBatchBuilder(delete_horizon_ms=10_000)
    builder.append(1_000, b"k", None)
    builder.append(2_000, b"k2", None)
    view = RecordBatchView(builder.build())
    assert view.base_timestamp == 10_000
    assert [r.timestamp for r in view.records()] == [1_000, 2_000]


def test_explicit_offsets_may_leave_gaps_but_must_increase() -> None:
    builder = RecordBatchBuilder(base_offset=100)
    builder.append(0, b"a", b"1", offset=100)
    builder.append(0, b"b", b"2", offset=105)
    with pytest.raises(ValueError):
        builder.append(0, b"c", b"3", offset=105)
    with pytest.raises(ValueError):
        builder.append(0, b"c", b"3", offset=100 + 2**31)
    assert builder.append(0, b"c", b"3") == 106
    view = RecordBatchView(builder.build())
    view.validate(allow_compacted=True)
    with pytest.raises(InvalidRecordError, match="inconsistent"):
        view.validate()
    assert [r.offset for r in view.records()] == [100, 105, 106]
    assert (view.last_offset_delta, view.record_count) == (6, 3)


def test_empty_builder_cannot_build() -> None:
    with pytest.raises(ValueError):
        RecordBatchBuilder().build()
    with pytest.raises(ValueError):
        RecordBatchBuilder(timestamp_type=TimestampType.NO_TIMESTAMP_TYPE)


@pytest.mark.parametrize("codec", ALL_CODECS, ids=lambda c: c.name)
def test_compression_shrinks_and_round_trips(codec: CompressionType) -> None:
    rows = [(1_000 + i, b"user-%d" % (i % 10), b"payload " * 50, [("i", str(i).encode())]) for i in range(1000)]
    builder = RecordBatchBuilder(compression=codec)
    for timestamp, key, value, headers in rows:
        builder.append(timestamp, key, value, headers)
    data = builder.build()
    view = RecordBatchView(data)
    view.validate()
    if codec is not CompressionType.NONE:
        assert len(data) < 60_000 < len(view.records_data())
    got = [(r.timestamp, r.key, r.value, [tuple(h) for h in r.headers]) for r in view.records()]
    assert got == rows


def test_memoryview_and_bytearray_inputs() -> None:
    builder = RecordBatchBuilder()
    builder.append(0, bytearray(b"key"), memoryview(b"value"), [("h", bytearray(b"v"))])
    (record,) = RecordBatchView(builder.build()).records()
    assert (record.key, record.value, record.headers[0].value) == (b"key", b"value", b"v")


def test_build_batch_convenience_and_kafka_python_reads_it() -> None:
    data = build_batch([(1, b"k", b"v"), (2, None, None)], base_offset=9, compression=CompressionType.GZIP)
    theirs = DefaultRecordBatch(data)
    assert theirs.validate_crc()
    assert [(r.offset, r.timestamp, r.key, r.value) for r in theirs] == [(9, 1, b"k", b"v"), (10, 2, None, None)]
