"""Compaction of transactional data, as Kafka's cleaner does it: aborted records go whatever their
keys, committed ones compact like any record, markers stay while their transaction's data does, then
wait delete.retention.ms, then go; the aborted-transaction index follows."""

from __future__ import annotations

from pathlib import Path

from tests.unit.storage.conftest import T0, make_batch
from tidelog.config import TopicConfig
from tidelog.records import RecordBatchBuilder, RecordBatchView, decode_control_batch
from tidelog.storage.cleaner import LogCleaner
from tidelog.storage.loader import load_log
from tidelog.storage.log import PartitionLog
from tidelog.storage.txn_index import AbortedTxn
from tidelog.testing import ManualClock

RETENTION = 10_000
CONFIG = {"cleanup.policy": "compact", "segment.bytes": 100_000, "delete.retention.ms": RETENTION,
          "min.cleanable.dirty.ratio": 0.01}


def open_log(path: Path, clock: ManualClock, clean: bool = False) -> PartitionLog:
    return load_log(path, "t", 0, TopicConfig.from_dict(CONFIG), clock, clean_shutdown=clean)


def txn(log: PartitionLog, pid: int, key: bytes, value: bytes, *, seq: int = 0, epoch: int = 0) -> int:
    builder = RecordBatchBuilder(producer_id=pid, producer_epoch=epoch, base_sequence=seq, is_transactional=True)
    builder.append(T0, key, value)
    return log.append_as_leader(bytearray(builder.build())).first_offset


def put(log: PartitionLog, key: bytes, value: bytes | None) -> int:
    return log.append_as_leader(make_batch(1, key=key, value=value)).first_offset


def clean(log: PartitionLog, clock: ManualClock) -> None:
    log.roll()
    result = LogCleaner(clock).clean_log(log, force=True)
    if result is not None:
        for seg in result[1]:
            seg.delete_files()


def data(log: PartitionLog) -> list[tuple[int, bytes, bytes | None]]:
    return [(r.offset, r.key, r.value) for v in log.batches() if not v.is_control_batch for r in v.records()]


def markers(log: PartitionLog) -> list[tuple[int, int, bool | None]]:
    """(offset, producer id, commit) of each control batch; commit None for an emptied one."""
    out = []
    for v in log.batches():
        if v.is_control_batch:
            marker = decode_control_batch(v) if v.record_count else None
            out.append((v.base_offset, v.producer_id, None if marker is None else marker.is_commit))
    return out


def read_committed(log: PartitionLog) -> list[tuple[bytes, bytes | None]]:
    """What a read_committed consumer gets: data minus the aborted transactions' records."""
    aborted = log.aborted_transactions(0, log.log_end_offset)
    out = []
    for v in log.batches():
        if v.is_control_batch:
            continue
        if v.is_transactional and any(a.producer_id == v.producer_id and a.first_offset <= v.base_offset <= a.last_offset
                                      for a in aborted):
            continue
        out += [(r.key, r.value) for r in v.records()]
    return out


def test_aborted_records_go_and_their_marker_follows_after_the_delete_retention(tmp_path: Path) -> None:
    clock = ManualClock(wall_ms=T0 + 1000)
    log = open_log(tmp_path / "t-0", clock)
    put(log, b"a", b"committed")  # 0
    txn(log, 7, b"a", b"aborted")  # 1: must not hide offset 0
    txn(log, 7, b"z", b"aborted too", seq=1)  # 2
    log.append_marker(7, 0, 0, commit=False)  # 3
    put(log, b"b", b"1")  # 4
    assert read_committed(log) == [(b"a", b"committed"), (b"b", b"1")]
    clean(log, clock)
    assert data(log) == [(0, b"a", b"committed"), (4, b"b", b"1")]
    # The marker stays for now: this pass saw its transaction's data. So does its index entry.
    assert markers(log) == [(3, 7, False)]
    assert log.aborted_transactions(0, log.log_end_offset) == [AbortedTxn(7, 1, 3, 4)]
    assert read_committed(log) == [(b"a", b"committed"), (b"b", b"1")]
    # The producer's last batch stays (emptied) while the producer is active, and with it the marker.
    clean(log, clock)
    assert [v.record_count for v in log.batches() if v.base_offset == 2] == [0]
    assert markers(log) == [(3, 7, False)]
    expire_producers(log)
    clean(log, clock)  # the empty batch goes; this pass still saw it
    assert markers(log) == [(3, 7, False)] and not [v for v in log.batches() if v.base_offset == 2]
    clean(log, clock)  # no data of it left: the marker gets a delete horizon, the index entry goes
    assert markers(log) == [(3, 7, False)] and log.aborted_transactions(0, log.log_end_offset) == []
    (marker,) = [v for v in log.batches() if v.is_control_batch]
    assert marker.delete_horizon_ms == clock.wall_ms() + RETENTION
    clock.advance(RETENTION - 1)
    clean(log, clock)
    assert markers(log) == [(3, 7, False)]
    clock.advance(1)
    clean(log, clock)
    assert markers(log) == [] and read_committed(log) == [(b"a", b"committed"), (b"b", b"1")]


def expire_producers(log: PartitionLog) -> None:
    """What producer.id.expiration.ms does to producers that stopped writing."""
    log.producer_state.remove_expired(log.clock.wall_ms() + log.producer_state.expiration_ms)


def test_committed_markers_go_once_their_data_is_compacted_away(tmp_path: Path) -> None:
    clock = ManualClock(wall_ms=T0 + 1000)
    log = open_log(tmp_path / "t-0", clock)
    txn(log, 7, b"a", b"in txn")  # 0
    log.append_marker(7, 0, 0, commit=True)  # 1
    put(log, b"a", b"newer")  # 2
    clean(log, clock)  # the txn record is superseded, but this pass still saw the batch: marker kept
    assert data(log) == [(2, b"a", b"newer")] and markers(log) == [(1, 7, True)]
    expire_producers(log)  # the producer stopped: its batches no longer matter
    clean(log, clock)
    assert all(not v.is_transactional or v.is_control_batch for v in log.batches())
    clean(log, clock)
    clock.advance(RETENTION)
    clean(log, clock)
    assert markers(log) == [] and data(log) == [(2, b"a", b"newer")]


def test_the_last_marker_of_a_producer_keeps_its_epoch(tmp_path: Path) -> None:
    # KIP-890: the marker carries the bumped epoch; it is all that records the epoch in this
    # partition once the data is gone, so an empty control batch stays and fencing survives a reload.
    clock = ManualClock(wall_ms=T0 + 1000)
    log = open_log(tmp_path / "t-0", clock)
    txn(log, 7, b"a", b"aborted")
    log.append_marker(7, 1, 0, commit=False)  # epoch 1 > the data's 0
    put(log, b"b", b"1")
    for _ in range(3):
        clean(log, clock)
        clock.advance(RETENTION)
    controls = [v for v in log.batches() if v.is_control_batch]
    assert [(v.producer_id, v.producer_epoch, v.record_count) for v in controls] == [(7, 1, 0)]
    log.close()
    reopened = open_log(tmp_path / "t-0", clock, clean=True)
    for snapshot in reopened.producer_state.snapshot_offsets():
        (reopened.directory / f"{snapshot:020d}.snapshot").unlink()
    reopened.rebuild_producer_state()  # the state rebuilt from the log alone still knows epoch 1
    assert reopened.producer_state.last_entry(7).producer_epoch == 1


def test_an_aborted_transaction_whose_marker_is_past_the_cleaned_range(tmp_path: Path) -> None:
    clock = ManualClock(wall_ms=T0 + 1000)
    log = open_log(tmp_path / "t-0", clock)
    txn(log, 7, b"a", b"aborted")  # 0, in the segment that will be cleaned
    put(log, b"b", b"1")
    log.roll()
    log.append_marker(7, 0, 0, commit=False)  # 2, in the next segment
    put(log, b"c", b"1")
    LogCleaner(clock).clean_log(log, force=True)  # cleans the first segment only
    assert data(log) == [(1, b"b", b"1"), (3, b"c", b"1")]
    assert log.aborted_transactions(0, log.log_end_offset) == [AbortedTxn(7, 0, 2, 3)]
    assert isinstance(next(log.batches()), RecordBatchView)
