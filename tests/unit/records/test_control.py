"""Control batches: transaction markers built, decoded, and read by kafka-python."""

from __future__ import annotations

import pytest

from tidelog.records import (
    ControlRecordType,
    EndTransactionMarker,
    InvalidRecordError,
    Record,
    RecordBatchBuilder,
    RecordBatchView,
    build_control_batch,
    control_record_key,
    decode_control_batch,
    decode_end_txn_marker,
    end_txn_marker_value,
    parse_control_record_type,
)

from .samples import DefaultRecordBatch, build_v2


@pytest.mark.parametrize("control_type", [ControlRecordType.ABORT, ControlRecordType.COMMIT])
def test_marker_batch(control_type: ControlRecordType) -> None:
    data = build_control_batch(control_type, producer_id=4242, producer_epoch=7, coordinator_epoch=19,
                               timestamp_ms=1_700_000_000_000, base_offset=55, partition_leader_epoch=3)
    view = RecordBatchView(data)
    view.validate()
    assert view.is_control_batch and view.is_transactional
    assert (view.producer_id, view.producer_epoch, view.base_sequence) == (4242, 7, -1)
    assert (view.base_offset, view.record_count, view.partition_leader_epoch) == (55, 1, 3)
    (record,) = view.records()
    assert record.key == b"\x00\x00\x00" + bytes([control_type])
    assert record.value == b"\x00\x00\x00\x00\x00\x13"
    assert record.headers == []
    marker = decode_control_batch(view)
    assert marker == EndTransactionMarker(control_type, 19)
    assert marker.is_commit == (control_type is ControlRecordType.COMMIT)
    (theirs,) = list(DefaultRecordBatch(data))
    assert (theirs.type, theirs.version, theirs.commit) == (int(control_type), 0,
                                                            control_type is ControlRecordType.COMMIT)


def test_type_ids_match_kafka() -> None:
    assert (ControlRecordType.ABORT, ControlRecordType.COMMIT) == (0, 1)
    assert ControlRecordType.from_id(6) is ControlRecordType.KRAFT_VOTERS
    assert ControlRecordType.from_id(99) is ControlRecordType.UNKNOWN
    assert control_record_key(ControlRecordType.COMMIT) == b"\x00\x00\x00\x01"
    assert end_txn_marker_value(-1) == b"\x00\x00\xff\xff\xff\xff"
    with pytest.raises(ValueError):
        control_record_key(ControlRecordType.UNKNOWN)
    with pytest.raises(ValueError):
        build_control_batch(ControlRecordType.LEADER_CHANGE, producer_id=1, producer_epoch=0,
                            coordinator_epoch=0, timestamp_ms=0)


def test_newer_versions_are_read_as_version_0() -> None:
    assert parse_control_record_type(b"\x00\x05\x00\x01extra") is ControlRecordType.COMMIT
    record = Record(0, 0, b"\x00\x01\x00\x00", b"\x00\x02\x00\x00\x00\x09more", [])
    assert decode_end_txn_marker(record) == EndTransactionMarker(ControlRecordType.ABORT, 9)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        (None, b"\x00\x00\x00\x00\x00\x00"),
        (b"\x00\x00\x00", b"\x00\x00\x00\x00\x00\x00"),
        (b"\xff\xff\x00\x01", b"\x00\x00\x00\x00\x00\x00"),
        (b"\x00\x00\x00\x01", None),
        (b"\x00\x00\x00\x01", b"\x00\x00\x00\x00\x00"),
        (b"\x00\x00\x00\x01", b"\x80\x00\x00\x00\x00\x00"),
        (b"\x00\x00\x00\x02", b"\x00\x00\x00\x00\x00\x00"),  # LEADER_CHANGE is not a marker
    ],
)
def test_malformed_markers_are_invalid(key, value) -> None:
    with pytest.raises(InvalidRecordError):
        decode_end_txn_marker(Record(0, 0, key, value, []))


def test_decode_control_batch_edge_cases() -> None:
    with pytest.raises(InvalidRecordError):
        decode_control_batch(RecordBatchView(build_v2()))
    builder = RecordBatchBuilder(is_control=True, is_transactional=True, producer_id=1, producer_epoch=0)
    builder.append(0, b"\x00\x00\x00\x03", b"snapshot header")
    assert decode_control_batch(RecordBatchView(builder.build())) is None
    builder = RecordBatchBuilder(is_control=True)
    builder.append(0, b"\x00\x00\x7f\x7f", None)
    assert decode_control_batch(RecordBatchView(builder.build())) is None
