"""The aborted-transaction index, transaction markers, the last stable offset, and both across
restarts, recovery and compaction."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from tests.unit.storage.conftest import T0
from tidelog.errors import ErrorCode, KafkaError
from tidelog.records import RecordBatchBuilder
from tidelog.storage import files
from tidelog.storage.txn_index import ENTRY_SIZE, AbortedTxn, TransactionIndex


def txn_batch(producer_id: int, seq: int, n: int = 2, *, key: bytes = b"k", epoch: int = 0) -> bytearray:
    builder = RecordBatchBuilder(producer_id=producer_id, producer_epoch=epoch, base_sequence=seq,
                                 is_transactional=True)
    for i in range(n):
        builder.append(T0 + i, key + b"%d" % i, b"v")
    return bytearray(builder.build())


# ------------------------------------------------------------------------------------ the file


def test_entries_round_trip_and_a_torn_tail_is_dropped(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000000.txnindex"
    index = TransactionIndex(path)
    a, b = AbortedTxn(7, 0, 3, 4), AbortedTxn(9, 5, 10, 11)
    index.append(a)
    index.append(b)
    index.close()
    assert path.stat().st_size == 2 * ENTRY_SIZE == 68
    assert struct.unpack(">hqqqq", path.read_bytes()[:ENTRY_SIZE]) == (0, 7, 0, 3, 4)
    with open(path, "ab") as f:
        f.write(b"\x00\x00\x01")  # a torn third entry
    again = TransactionIndex(path)
    assert again.entries == [a, b] and path.stat().st_size == 68
    assert again.collect(4, 6) == ([b], True)  # b ends past 6: later segments cannot add any
    assert again.collect(0, 3) == ([a], True)
    assert again.collect(11, 20) == ([], False)
    again.truncate_to(10)
    assert again.entries == [a] and path.stat().st_size == ENTRY_SIZE
    again.truncate_to(0)
    assert again.entries == [] and not path.exists()


def test_no_file_until_a_transaction_aborts(tmp_path: Path) -> None:
    path = tmp_path / "x.txnindex"
    assert TransactionIndex(path).entries == [] and not path.exists()


# ------------------------------------------------------------------------------- in the log


def test_markers_end_transactions_and_move_the_last_stable_offset(open_log) -> None:
    log = open_log()
    log.append_as_leader(txn_batch(7, 0))  # offsets 0-1, producer 7's transaction
    log.append_as_leader(txn_batch(8, 0))  # 2-3, producer 8's
    assert (log.high_watermark, log.last_stable_offset) == (4, 0)
    aborted = log.append_marker(7, 0, 5, commit=False)  # offset 4
    assert aborted.first_offset == 4
    assert log.last_stable_offset == 2  # producer 8 is still open
    assert log.aborted_transactions(0, 5) == [AbortedTxn(7, 0, 4, 2)]
    log.append_marker(8, 0, 5, commit=True)  # a commit is not indexed
    assert (log.high_watermark, log.last_stable_offset) == (6, 6)
    assert log.aborted_transactions(0, 6) == [AbortedTxn(7, 0, 4, 2)]
    assert log.aborted_transactions(5, 6) == []  # ended before the fetch offset
    (control,) = [b for b in log.batches(0) if b.is_control_batch and b.base_offset == 4]
    assert control.producer_id == 7 and control.is_transactional


def test_the_index_and_open_transactions_survive_restarts(open_log) -> None:
    log = open_log()
    log.append_as_leader(txn_batch(7, 0))
    log.append_marker(7, 0, 1, commit=False)
    log.append_as_leader(txn_batch(8, 0))  # open at 3
    log.close()
    clean = open_log(clean=True)
    assert clean.aborted_transactions(0, 10) == [AbortedTxn(7, 0, 2, 3)]
    assert clean.last_stable_offset == 3
    clean.close()


def test_a_crash_that_lost_the_index_write_is_repaired_by_recovery(tmp_path: Path, open_log) -> None:
    log = open_log()
    log.append_as_leader(txn_batch(7, 0))
    log.append_marker(7, 0, 1, commit=False)
    log.append_as_leader(txn_batch(8, 0))
    log.flush()
    files.txn_index_file(log.directory, 0).unlink()  # the marker reached the disk, its index entry did not
    recovered = open_log(clean=False)  # the crashed log is never closed
    assert recovered.aborted_transactions(0, 10) == [AbortedTxn(7, 0, 2, 3)]
    assert recovered.last_stable_offset == 3


def test_truncation_removes_entries_past_the_cut(open_log) -> None:
    log = open_log()
    log.append_as_leader(txn_batch(7, 0))
    log.append_marker(7, 0, 1, commit=False)  # 2
    log.append_as_leader(txn_batch(9, 0))  # 3-4
    log.append_marker(9, 0, 1, commit=False)  # 5
    log.truncate_to(4)
    assert log.aborted_transactions(0, 10) == [AbortedTxn(7, 0, 2, 3)]


def test_compaction_keeps_aborted_transactions_of_the_cleaned_segments(open_log) -> None:
    log = open_log(cleanup_policy="compact", segment_bytes=300, min_cleanable_dirty_ratio=0.01)
    log.append_as_leader(txn_batch(7, 0, key=b"a"))
    log.append_marker(7, 0, 1, commit=False)
    for seq in range(0, 12, 2):
        log.append_as_leader(txn_batch(8, seq, key=b"b"))
    log.append_marker(8, 0, 1, commit=True)
    log.roll()
    before = log.aborted_transactions(0, log.log_end_offset)
    from tidelog.storage.cleaner import LogCleaner
    from tidelog.testing import ManualClock

    cleaned = LogCleaner(ManualClock(wall_ms=T0 + 10_000)).clean_log(log, force=True)
    assert cleaned is not None
    assert log.aborted_transactions(0, log.log_end_offset) == before == [AbortedTxn(7, 0, 2, 3)]


def test_the_last_stable_offset_never_falls_below_the_log_start(open_log) -> None:
    log = open_log()
    log.append_as_leader(txn_batch(7, 0))  # open at 0
    log.append_as_leader(txn_batch(8, 0))
    log.append_marker(8, 0, 1, commit=True)
    assert log.last_stable_offset == 0
    log.delete_records_before(3)  # DeleteRecords past the open transaction's first offset
    assert log.last_stable_offset == 3  # Kafka: the first unstable offset is at least the log start
    log.append_marker(7, 0, 1, commit=True)
    assert log.last_stable_offset == log.high_watermark == 6


def test_a_coordinators_transactional_batches_skip_sequence_checks(open_log) -> None:
    # The group coordinator writes transactional offset commits with no sequence (-1), one batch per
    # commit; as Kafka's AppendOrigin.COORDINATOR, only the epoch is checked.
    log = open_log()
    no_seq = RecordBatchBuilder(producer_id=7, producer_epoch=2, base_sequence=-1, is_transactional=True)
    no_seq.append(T0, b"k", b"v")
    batch = no_seq.build()
    log.append_as_leader(bytearray(batch), from_client=False)
    second = log.append_as_leader(bytearray(batch), from_client=False)  # not taken for a duplicate
    assert (second.first_offset, second.duplicate) == (1, False)
    assert log.last_stable_offset == 0
    older = RecordBatchBuilder(producer_id=7, producer_epoch=1, base_sequence=-1, is_transactional=True)
    older.append(T0, b"k", b"v")
    with pytest.raises(KafkaError) as e:
        log.append_as_leader(bytearray(older.build()), from_client=False)
    assert e.value.code == ErrorCode.INVALID_PRODUCER_EPOCH
    # The same bytes from a client are a retry of a batch already written: nothing is appended.
    assert log.append_as_leader(bytearray(batch)).duplicate
