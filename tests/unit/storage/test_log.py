"""PartitionLog: appends, reads by offset, rolls, time lookups, retention, flush, truncation."""

from __future__ import annotations

import pytest

from tests.unit.storage.conftest import T0, make_batch
from tidelog.errors import ErrorCode, KafkaError
from tidelog.records import RecordBatchView
from tidelog.storage.log import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, MAX_TIMESTAMP


def _views(data: bytes) -> list[RecordBatchView]:
    out, pos = [], 0
    while pos < len(data):
        v = RecordBatchView(memoryview(data)[pos:])
        out.append(v)
        pos += v.size_in_bytes
    return out


def test_append_assigns_consecutive_offsets(open_log) -> None:
    log = open_log()
    r1 = log.append_as_leader(make_batch(3))
    r2 = log.append_as_leader(make_batch(2), leader_epoch=7)
    assert (r1.first_offset, r1.last_offset) == (0, 2)
    assert (r2.first_offset, r2.last_offset) == (3, 4)
    assert log.log_end_offset == 5 == log.high_watermark
    data = log.read(0, 1 << 20).records.read()
    views = _views(data)
    assert [(v.base_offset, v.last_offset) for v in views] == [(0, 2), (3, 4)]
    assert views[1].partition_leader_epoch == 7
    for v in views:
        v.validate()  # offsets are outside the CRC; the epoch too


def test_read_inside_a_batch_returns_the_whole_batch(open_log) -> None:
    log = open_log()
    log.append_as_leader(make_batch(5))
    log.append_as_leader(make_batch(5))
    views = _views(log.read(7, 1 << 20).records.read())
    assert [v.base_offset for v in views] == [5]


def test_read_bounds(open_log) -> None:
    log = open_log()
    sizes = [len(make_batch(1, value=b"x" * 100)) for _ in range(1)]
    for _ in range(10):
        log.append_as_leader(make_batch(1, value=b"x" * 100))
    one = sizes[0]
    assert log.read(0, one * 3).records.size == one * 3
    assert log.read(0, one * 3 + one // 2).records.size == one * 3
    assert log.read(0, 1).records.size == one  # at least one whole batch
    assert log.read(0, 1, min_one_batch=False).records is None
    log.update_high_watermark(4)
    assert log.read(0, 1 << 20).records.size == one * 4
    assert log.read(4, 1 << 20).records is None
    assert log.read(0, 1 << 20, max_offset=10).records.size == one * 10
    assert log.read(10, 1 << 20).records is None  # at the log end: empty, not an error
    with pytest.raises(KafkaError) as e:
        log.read(11, 100)
    assert e.value.code == ErrorCode.OFFSET_OUT_OF_RANGE


def test_roll_by_size_and_reads_across_segments(open_log) -> None:
    size = len(make_batch(1, value=b"x" * 200))
    log = open_log(segment_bytes=size * 3, index_interval_bytes=1)
    for i in range(10):
        log.append_as_leader(make_batch(1, value=bytes([65 + i]) * 200))
    assert [s.base_offset for s in log.segments] == [0, 3, 6, 9]
    for offset in range(10):
        views = _views(log.read(offset, size).records.read())
        assert views[0].base_offset == offset
        assert next(iter(views[0].records())).value == bytes([65 + offset]) * 200
    # a read starting in one segment stops at its end; the next read continues
    assert _views(log.read(2, 1 << 20).records.read())[-1].base_offset == 2
    names = sorted(p.name for p in log.directory.iterdir())
    assert "00000000000000000003.log" in names and "00000000000000000003.index" in names


def test_roll_by_time_and_index_fullness(open_log, clock) -> None:
    log = open_log(segment_ms=1000)
    log.append_as_leader(make_batch(1, ts=clock.wall_ms()))
    clock.advance(500)
    log.append_as_leader(make_batch(1, ts=clock.wall_ms()))
    assert len(log.segments) == 1
    clock.advance(1000)
    log.append_as_leader(make_batch(1, ts=clock.wall_ms()))
    assert [s.base_offset for s in log.segments] == [0, 2]
    log2 = open_log(segment_index_bytes=16, index_interval_bytes=1)
    for _ in range(5):
        log2.append_as_leader(make_batch(1, ts=clock.wall_ms()))
    assert len(log2.segments) > 1


def test_offsets_by_timestamp(open_log, clock) -> None:
    log = open_log(segment_bytes=300, index_interval_bytes=1)
    for i in range(20):
        log.append_as_leader(make_batch(2, ts=T0 + i * 10))  # records at T0+10i, T0+10i+1
    assert len(log.segments) > 3
    assert log.offset_for_timestamp(EARLIEST_TIMESTAMP) == (-1, 0)
    assert log.offset_for_timestamp(LATEST_TIMESTAMP) == (-1, 40)
    assert log.offset_for_timestamp(MAX_TIMESTAMP) == (T0 + 191, 39)
    assert log.offset_for_timestamp(T0) == (T0, 0)
    assert log.offset_for_timestamp(T0 + 1) == (T0 + 1, 1)
    assert log.offset_for_timestamp(T0 + 2) == (T0 + 10, 2)
    assert log.offset_for_timestamp(T0 + 95) == (T0 + 100, 20)
    assert log.offset_for_timestamp(T0 + 191) == (T0 + 191, 39)
    assert log.offset_for_timestamp(T0 + 192) is None


def test_validation_errors_write_nothing(open_log) -> None:
    log = open_log(max_message_bytes=500)
    log.append_as_leader(make_batch(1))
    bad_crc = make_batch(1)
    bad_crc[-1] ^= 0xFF
    big = make_batch(1, value=b"x" * 600)
    cases = {
        ErrorCode.CORRUPT_MESSAGE: bad_crc,
        ErrorCode.MESSAGE_TOO_LARGE: big,
        ErrorCode.INVALID_TIMESTAMP: make_batch(1, ts=T0 + 10 * 3600 * 1000),
    }
    for code, data in cases.items():
        with pytest.raises(KafkaError) as e:
            log.append_as_leader(data)
        assert e.value.code == code
    truncated = make_batch(2)[:-3]
    with pytest.raises(KafkaError) as e:
        log.append_as_leader(truncated)
    assert e.value.code in (ErrorCode.CORRUPT_MESSAGE, ErrorCode.INVALID_RECORD)
    assert log.log_end_offset == 1 and log.size == len(make_batch(1))


def test_log_append_time(open_log, clock) -> None:
    log = open_log(message_timestamp_type="LogAppendTime")
    result = log.append_as_leader(make_batch(2, ts=5))
    assert result.log_append_time == clock.wall_ms()
    view = _views(log.read(0, 1 << 20).records.read())[0]
    view.validate()
    assert view.max_timestamp == clock.wall_ms()
    assert int(view.timestamp_type) == 1


def test_retention_by_time_and_size_and_delete_records(open_log, clock) -> None:
    size = len(make_batch(1, value=b"x" * 100))
    log = open_log(segment_bytes=size * 2, retention_ms=10_000)
    for _ in range(10):
        log.append_as_leader(make_batch(1, ts=clock.wall_ms(), value=b"x" * 100))
        clock.advance(1000)
    assert len(log.segments) == 5
    clock.advance(10_000 - 3000)  # segments whose newest record is older than 10 s go
    removed = log.expired_segments()
    assert [s.base_offset for s in removed] == [0, 2, 4]
    assert all(s.log_path.name.endswith(".log.deleted") for s in removed)
    assert log.log_start_offset == 6
    with pytest.raises(KafkaError):
        log.read(5, 100)
    log.config = log.config.replace(retention_ms=-1, retention_bytes=size * 2)
    removed = log.expired_segments()
    assert [s.base_offset for s in removed] == [6]
    assert log.log_start_offset == 8
    assert log.delete_records_before(9) == 9
    assert log.read(9, 1 << 20).records is not None
    with pytest.raises(KafkaError):
        log.read(8, 100)
    with pytest.raises(KafkaError):
        log.delete_records_before(11)


def test_retention_never_deletes_the_active_segment(open_log, clock) -> None:
    log = open_log(retention_ms=1)
    log.append_as_leader(make_batch(1, ts=clock.wall_ms()))
    clock.advance(10_000)
    assert log.expired_segments() == []
    assert log.log_end_offset == 1


def test_flush_policy_by_messages_and_time(open_log, clock) -> None:
    log = open_log(flush_messages=3)
    log.append_as_leader(make_batch(2))
    assert not log.flush_due()
    log.append_as_leader(make_batch(1))
    assert log.flush_due()
    assert log.flush() == 3 and log.recovery_point == 3 and not log.flush_due()
    timed = open_log(flush_ms=100)
    timed.append_as_leader(make_batch(1))
    assert not timed.flush_due()
    clock.advance(100)
    assert timed.flush_due()


def test_truncate_to(open_log) -> None:
    size = len(make_batch(2))
    log = open_log(segment_bytes=size * 2)
    for _ in range(5):
        log.append_as_leader(make_batch(2))
    assert log.log_end_offset == 10 and len(log.segments) == 3
    log.truncate_to(5)  # inside the batch 4..5: batch granularity keeps offsets < 4
    assert log.log_end_offset == 4 and len(log.segments) == 2
    r = log.append_as_leader(make_batch(1))
    assert r.first_offset == 4
    log.truncate_fully_and_start_at(100)
    assert log.log_start_offset == log.log_end_offset == 100
    assert log.append_as_leader(make_batch(1)).first_offset == 100


def _producer_batch(seq: int, n: int = 2, epoch: int = 0):
    return make_batch(n, producer_id=7, producer_epoch=epoch, base_sequence=seq)


def _state(log) -> dict:
    return {pid: (e.producer_epoch, [(b.first_seq, b.last_seq, b.first_offset, b.last_offset) for b in e.batches])
            for pid, e in log.producer_state.active_producers.items()}


def test_idempotent_producer_duplicates_and_gaps(open_log) -> None:
    log = open_log()
    assert log.append_as_leader(_producer_batch(0)).first_offset == 0
    assert log.append_as_leader(_producer_batch(2)).first_offset == 2
    dup = log.append_as_leader(_producer_batch(0))
    assert dup.duplicate and (dup.first_offset, dup.last_offset) == (0, 1)
    assert log.log_end_offset == 4
    with pytest.raises(KafkaError) as e:
        log.append_as_leader(_producer_batch(9))
    assert e.value.code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert log.append_as_leader(_producer_batch(0, epoch=1)).first_offset == 4
    with pytest.raises(KafkaError) as e:
        log.append_as_leader(_producer_batch(4, epoch=0))
    assert e.value.code == ErrorCode.INVALID_PRODUCER_EPOCH
    assert log.log_end_offset == 6


@pytest.mark.parametrize("clean", [True, False])
def test_producer_state_is_rebuilt_identically_after_restart(open_log, clean: bool) -> None:
    log = open_log(segment_bytes=300)
    for seq in range(0, 40, 2):
        log.append_as_leader(_producer_batch(seq))
    assert len(log.segments) > 2
    before = _state(log)
    if clean:
        log.close()
    again = open_log(clean=clean, segment_bytes=300)
    assert _state(again) == before
    dup = again.append_as_leader(_producer_batch(38))
    assert dup.duplicate and dup.first_offset == 38
    assert again.append_as_leader(_producer_batch(40)).first_offset == 40


@pytest.mark.parametrize("target, codec", [("zstd", 4), ("gzip", 1), ("uncompressed", 0), ("lz4", 3)])
def test_compression_type_recompresses_keeping_records_and_producer_fields(open_log, target: str, codec: int) -> None:
    log = open_log(compression_type=target)
    source = 2 if codec != 2 else 1  # snappy in, unless the target is snappy
    batch = make_batch(5, values=[b"v%d" % i * 50 for i in range(5)], producer_id=7, producer_epoch=1,
                       base_sequence=0, compression=source)
    original = [(r.offset, r.timestamp, r.key, r.value) for r in RecordBatchView(bytes(batch)).records()]
    result = log.append_as_leader(batch)
    (stored,) = list(log.batches(0))
    assert stored.compression_type == codec
    assert (stored.producer_id, stored.producer_epoch, stored.base_sequence) == (7, 1, 0)
    assert [(r.offset, r.timestamp, r.key, r.value) for r in stored.records()] == original
    assert (result.first_offset, result.last_offset) == (0, 4)
    stored.validate()  # a well-formed batch with a correct CRC
    # The producer state saw it: a retry of the same batch is a duplicate.
    assert log.append_as_leader(make_batch(5, values=[b"v%d" % i * 50 for i in range(5)], producer_id=7,
                                           producer_epoch=1, base_sequence=0, compression=source)).duplicate


def test_producer_compression_type_keeps_the_producers_codec(open_log) -> None:
    log = open_log(compression_type="producer")
    log.append_as_leader(make_batch(3, compression=1))
    (stored,) = list(log.batches(0))
    assert stored.compression_type == 1
