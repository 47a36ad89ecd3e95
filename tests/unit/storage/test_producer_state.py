"""ProducerStateManager: sequence/epoch rules, duplicates, validate-then-apply, snapshots, expiry."""

from __future__ import annotations

from pathlib import Path

import pytest

from tidelog.errors import ErrorCode, KafkaError
from tidelog.records import ControlRecordType, RecordBatchBuilder, RecordBatchView, build_control_batch
from tidelog.storage.files import snapshot_file
from tidelog.storage.producer_state import (
    BatchMetadata,
    CompletedTxn,
    ProducerStateEntry,
    ProducerStateManager,
)

PID = 1000
INT32_MAX = 2**31 - 1


def make_batch(*, producer_id: int = PID, epoch: int = 0, seq: int = 0, count: int = 1, ts: int = 1_000,
               base_offset: int = 0, transactional: bool = False) -> bytes:
    builder = RecordBatchBuilder(base_offset=base_offset, producer_id=producer_id, producer_epoch=epoch,
                                 base_sequence=seq, is_transactional=transactional)
    for i in range(count):
        builder.append(ts + i, None, b"v%d" % i)
    return builder.build()


class Log:
    """Stands in for the partition log: assigns offsets and keeps the written batches for replay."""

    def __init__(self, manager: ProducerStateManager) -> None:
        self.manager = manager
        self.batches: list[bytes] = []
        self.end_offset = 0

    def produce(self, **kw: object) -> tuple[int, int]:
        """Prepare, 'append' and complete one batch; (first, last) offsets, original ones if duplicate."""
        data = make_batch(base_offset=self.end_offset, **kw)  # type: ignore[arg-type]
        return self.append(data)

    def append(self, data: bytes) -> tuple[int, int]:
        view = RecordBatchView(data)
        append = self.manager.prepare(view)
        if append.duplicate is not None:
            return append.duplicate.first_offset, append.duplicate.last_offset
        first, last = self.end_offset, self.end_offset + view.last_offset_delta
        self.manager.complete(append, first, last)
        self.batches.append(data)
        self.end_offset = last + 1
        return first, last

    def marker(self, control_type: ControlRecordType, *, producer_id: int = PID, epoch: int = 0,
               coordinator_epoch: int = 0, ts: int = 5_000) -> CompletedTxn | None:
        data = build_control_batch(control_type, producer_id=producer_id, producer_epoch=epoch,
                                   coordinator_epoch=coordinator_epoch, timestamp_ms=ts,
                                   base_offset=self.end_offset)
        append = self.manager.prepare(RecordBatchView(data))
        completed = self.manager.complete(append, self.end_offset, self.end_offset)
        self.batches.append(data)
        self.end_offset += 1
        return completed


@pytest.fixture
def manager(tmp_path: Path) -> ProducerStateManager:
    return ProducerStateManager(tmp_path)


@pytest.fixture
def log(manager: ProducerStateManager) -> Log:
    return Log(manager)


def state(manager: ProducerStateManager) -> dict[int, ProducerStateEntry]:
    return dict(manager.active_producers)


def expect_error(code: ErrorCode, manager: ProducerStateManager, data: bytes) -> None:
    with pytest.raises(KafkaError) as info:
        manager.prepare(RecordBatchView(data))
    assert info.value.code == code


# ------------------------------------------------------------------------- sequences, epochs


def test_in_order_sequences_are_accepted(log: Log, manager: ProducerStateManager) -> None:
    assert log.produce(seq=0, count=3) == (0, 2)
    assert log.produce(seq=3, count=2, ts=2_000) == (3, 4)
    assert log.produce(seq=5) == (5, 5)
    entry = manager.last_entry(PID)
    assert entry is not None
    assert (entry.producer_epoch, entry.first_seq, entry.last_seq, entry.last_data_offset) == (0, 0, 5, 5)
    assert entry.batches[1] == BatchMetadata(3, 4, 3, 4, 2_001)
    assert entry.last_timestamp == 1_000
    assert manager.producer_count == 1


def test_only_the_last_five_batches_are_kept(log: Log, manager: ProducerStateManager) -> None:
    for seq in range(8):
        log.produce(seq=seq)
    entry = manager.last_entry(PID)
    assert entry is not None
    assert [b.first_seq for b in entry.batches] == [3, 4, 5, 6, 7]


def test_duplicates_of_the_last_five_batches_get_original_offsets(log: Log,
                                                                   manager: ProducerStateManager) -> None:
    offsets = {}
    for i in range(7):
        offsets[i] = log.produce(seq=2 * i, count=2)
    log.end_offset += 100  # other producers wrote in between: retries must not get "current" offsets
    before = state(manager)
    for i in range(2, 7):
        assert log.produce(seq=2 * i, count=2) == offsets[i]
    assert state(manager) == before
    assert len(log.batches) == 7


def test_duplicate_older_than_the_last_five_is_out_of_order(log: Log, manager: ProducerStateManager) -> None:
    for seq in range(6):
        log.produce(seq=seq)
    # Kafka answers OUT_OF_ORDER_SEQUENCE_NUMBER (not DUPLICATE_SEQUENCE_NUMBER) for a forgotten batch.
    expect_error(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, manager, make_batch(seq=0))


def test_partial_overlap_is_not_a_duplicate(log: Log, manager: ProducerStateManager) -> None:
    log.produce(seq=0, count=3)
    expect_error(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, manager, make_batch(seq=0, count=2))


def test_sequence_gap_is_out_of_order(log: Log, manager: ProducerStateManager) -> None:
    log.produce(seq=0, count=3)
    expect_error(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, manager, make_batch(seq=4))
    expect_error(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, manager, make_batch(seq=1))


def test_old_epoch_is_invalid_producer_epoch(log: Log, manager: ProducerStateManager) -> None:
    log.produce(epoch=3, seq=0)
    expect_error(ErrorCode.INVALID_PRODUCER_EPOCH, manager, make_batch(epoch=2, seq=1))
    expect_error(ErrorCode.INVALID_PRODUCER_EPOCH, manager, make_batch(epoch=2, seq=0))


def test_epoch_bump_must_start_at_sequence_zero(log: Log, manager: ProducerStateManager) -> None:
    log.produce(epoch=0, seq=0, count=5)
    expect_error(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, manager, make_batch(epoch=1, seq=5))
    assert log.produce(epoch=1, seq=0) == (5, 5)
    entry = manager.last_entry(PID)
    assert entry is not None
    assert entry.producer_epoch == 1
    assert [b.first_seq for b in entry.batches] == [0]  # the old epoch's batches are forgotten
    expect_error(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, manager, make_batch(epoch=1, seq=0, count=5))


def test_unknown_producer_is_accepted_at_any_sequence(log: Log, manager: ProducerStateManager) -> None:
    # Kafka >= 2.5 (KIP-360): no UNKNOWN_PRODUCER_ID when the partition has no state for the producer.
    assert log.produce(epoch=7, seq=42, count=2) == (0, 1)
    assert log.produce(epoch=7, seq=44) == (2, 2)
    expect_error(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, manager, make_batch(epoch=7, seq=46))


def test_sequence_wraps_around_after_int32_max(log: Log, manager: ProducerStateManager) -> None:
    log.produce(seq=INT32_MAX - 1, count=1)
    log.produce(seq=INT32_MAX, count=3)  # covers INT32_MAX, 0, 1
    entry = manager.last_entry(PID)
    assert entry is not None
    assert (entry.batches[-1].first_seq, entry.batches[-1].last_seq) == (INT32_MAX, 1)
    assert log.produce(seq=INT32_MAX, count=3) == (1, 3)  # duplicate across the wrap
    assert log.produce(seq=2) == (4, 4)
    # and the plain case: last = INT32_MAX, next = 0
    other = Log(ProducerStateManager(manager.directory))
    other.produce(seq=INT32_MAX - 1, count=2)
    assert other.produce(seq=0) == (2, 2)
    expect_error(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, other.manager, make_batch(seq=INT32_MAX))


def test_non_idempotent_batches_bypass_everything(log: Log, manager: ProducerStateManager) -> None:
    assert log.produce(producer_id=-1, epoch=-1, seq=-1, count=2) == (0, 1)
    assert log.produce(producer_id=-1, epoch=-1, seq=-1, count=2) == (2, 3)
    assert manager.producer_count == 0
    assert manager.replay(RecordBatchView(make_batch(producer_id=-1, epoch=-1, seq=-1))) is None
    assert manager.producer_count == 0


# --------------------------------------------------------------------------- validate, apply


def test_prepare_without_complete_leaves_state_unchanged(log: Log, manager: ProducerStateManager) -> None:
    log.produce(seq=0, count=2)
    log.produce(producer_id=PID + 1, seq=0, transactional=True)
    before = state(manager)
    before_txns = manager.ongoing_transactions()
    # valid appends whose log write "fails": new producer, next sequence, epoch bump, txn start
    for data in (make_batch(producer_id=PID + 2, seq=9), make_batch(seq=2), make_batch(epoch=1, seq=0),
                 make_batch(seq=2, transactional=True)):
        append = manager.prepare(RecordBatchView(data))
        assert not append.is_duplicate
    assert state(manager) == before
    assert manager.ongoing_transactions() == before_txns
    assert log.produce(seq=2) == (3, 3)  # the producer continues as if nothing happened


def test_complete_refuses_duplicates_and_stale_appends(log: Log, manager: ProducerStateManager) -> None:
    log.produce(seq=0)
    duplicate = manager.prepare(RecordBatchView(make_batch(seq=0)))
    with pytest.raises(ValueError, match="duplicate"):
        manager.complete(duplicate, 10, 10)
    first = manager.prepare(RecordBatchView(make_batch(seq=1)))
    second = manager.prepare(RecordBatchView(make_batch(seq=1)))
    manager.complete(first, 1, 1)
    with pytest.raises(ValueError, match="changed"):
        manager.complete(second, 2, 2)


# ------------------------------------------------------------------------------ transactions


def test_transaction_is_tracked_until_its_marker(log: Log, manager: ProducerStateManager) -> None:
    log.produce(seq=0)  # offset 0, idempotent only
    log.produce(producer_id=PID + 1, epoch=2, seq=0, transactional=True)  # offset 1 starts a txn
    log.produce(producer_id=PID + 1, epoch=2, seq=1, transactional=True)
    assert manager.ongoing_transactions() == {PID + 1: 1}
    assert manager.first_undecided_offset() == 1
    expect_error(ErrorCode.INVALID_TXN_STATE, manager, make_batch(producer_id=PID + 1, epoch=2, seq=2))
    completed = log.marker(ControlRecordType.ABORT, producer_id=PID + 1, epoch=2, coordinator_epoch=4)
    assert completed == CompletedTxn(PID + 1, 1, 3, is_aborted=True)
    assert manager.ongoing_transactions() == {}
    assert manager.first_undecided_offset() is None
    entry = manager.last_entry(PID + 1)
    assert entry is not None
    assert (entry.coordinator_epoch, entry.current_txn_first_offset, entry.last_seq) == (4, None, 1)
    # a marker from an older coordinator is fenced; an older producer epoch is rejected
    stale = build_control_batch(ControlRecordType.COMMIT, producer_id=PID + 1, producer_epoch=2,
                                coordinator_epoch=3, timestamp_ms=0)
    expect_error(ErrorCode.TRANSACTION_COORDINATOR_FENCED, manager, stale)
    old = build_control_batch(ControlRecordType.COMMIT, producer_id=PID + 1, producer_epoch=1,
                              coordinator_epoch=4, timestamp_ms=0)
    expect_error(ErrorCode.INVALID_PRODUCER_EPOCH, manager, old)
    assert log.marker(ControlRecordType.COMMIT, producer_id=PID + 1, epoch=2, coordinator_epoch=4) is None


def test_a_version_2_marker_starts_the_next_epoch_at_sequence_zero(log: Log, manager: ProducerStateManager) -> None:
    # Transaction version 2 (issue 23, finding 1): EndTxn bumps the epoch and the marker carries the new
    # epoch. Once it is written the new epoch must start at sequence 0 here too.
    for seq in (0, 3):
        log.produce(epoch=9, seq=seq, count=3, transactional=True)
    log.marker(ControlRecordType.COMMIT, epoch=10)
    entry = manager.last_entry(PID)
    assert entry is not None and (entry.producer_epoch, entry.batches) == (10, ())
    expect_error(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, manager, make_batch(epoch=10, seq=6, transactional=True))
    log.produce(epoch=10, seq=0, count=5, transactional=True)
    entry = manager.last_entry(PID)
    assert entry is not None and (entry.producer_epoch, entry.last_seq) == (10, 4)


def test_a_replayed_marker_of_the_same_epoch_keeps_the_sequences(tmp_path: Path) -> None:
    # A replica replays what its leader wrote; a marker of epoch 10 after epoch 10's first batch (only
    # possible in a log written without KIP-890 verification) must not reset that epoch's sequences.
    manager = ProducerStateManager(tmp_path)
    manager.replay(RecordBatchView(make_batch(epoch=9, seq=0, count=3, transactional=True)))
    manager.replay(RecordBatchView(make_batch(epoch=10, seq=0, count=5, base_offset=3, transactional=True)))
    manager.replay(RecordBatchView(build_control_batch(ControlRecordType.COMMIT, producer_id=PID, producer_epoch=10,
                                                       coordinator_epoch=0, timestamp_ms=0, base_offset=8)))
    entry = manager.last_entry(PID)
    assert entry is not None and (entry.producer_epoch, entry.last_seq, entry.current_txn_first_offset) == (10, 4, None)
    expect_error(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, manager, make_batch(epoch=10, seq=0, count=2))
    assert manager.prepare(RecordBatchView(make_batch(epoch=10, seq=5))).duplicate is None


# -------------------------------------------------------------------------------- snapshots


def fill(log: Log) -> None:
    for seq in range(7):
        log.produce(seq=seq, count=1, ts=1_000 + seq)
    log.produce(producer_id=PID + 1, epoch=1, seq=INT32_MAX, count=2)
    log.produce(producer_id=PID + 2, epoch=5, seq=0, transactional=True)
    log.produce(producer_id=PID + 3, epoch=0, seq=0, transactional=True)
    log.marker(ControlRecordType.COMMIT, producer_id=PID + 3, coordinator_epoch=2)
    log.produce(producer_id=PID + 4, epoch=0, seq=0, transactional=True)


def test_snapshot_load_and_replay_give_the_same_state(tmp_path: Path, log: Log,
                                                      manager: ProducerStateManager) -> None:
    fill(log)
    manager.take_snapshot(log.end_offset)
    assert snapshot_file(tmp_path, log.end_offset).exists()
    assert manager.latest_snapshot_offset() == log.end_offset

    loaded = ProducerStateManager(tmp_path)
    assert loaded.load(0, log.end_offset) == log.end_offset
    assert state(loaded) == state(manager)
    assert loaded.ongoing_transactions() == manager.ongoing_transactions() == {PID + 2: 9, PID + 4: 12}

    replayed = ProducerStateManager(tmp_path / "nowhere")
    for data in log.batches:
        replayed.replay(RecordBatchView(data))
    assert state(replayed) == state(manager)
    assert replayed.ongoing_transactions() == manager.ongoing_transactions()

    # duplicates are still detected after a restart
    assert Log(loaded).produce(seq=4) == (4, 4)


def test_load_replays_from_the_snapshot_below_the_log_end(tmp_path: Path, log: Log,
                                                          manager: ProducerStateManager) -> None:
    log.produce(seq=0, count=5)
    manager.take_snapshot(5)
    log.produce(seq=5, count=5)
    manager.take_snapshot(10)
    loaded = ProducerStateManager(tmp_path)
    assert loaded.load(0, 7) == 5  # the log was truncated to 7: snapshot 10 is beyond it
    assert not snapshot_file(tmp_path, 10).exists()
    entry = loaded.last_entry(PID)
    assert entry is not None
    assert entry.last_seq == 4
    loaded.replay(RecordBatchView(log.batches[1]))
    assert state(loaded) == state(manager)


def test_load_without_snapshot_starts_empty_at_log_start(tmp_path: Path, log: Log,
                                                         manager: ProducerStateManager) -> None:
    log.produce(seq=0)
    manager.take_snapshot(1)
    loaded = ProducerStateManager(tmp_path)
    assert loaded.load(3, 9) == 3  # snapshot 1 is below the log start: its log is gone
    assert loaded.producer_count == 0
    assert loaded.latest_snapshot_offset() is None


@pytest.mark.parametrize("damage", ["flip", "truncate", "version", "empty"])
def test_corrupt_snapshot_is_ignored_and_removed(tmp_path: Path, log: Log, manager: ProducerStateManager,
                                                 damage: str) -> None:
    log.produce(seq=0, count=3)
    manager.take_snapshot(3)
    expected = state(manager)
    log.produce(seq=3, count=3)
    path = manager.take_snapshot(6)
    data = bytearray(path.read_bytes())
    if damage == "flip":
        data[-3] ^= 0x40
    elif damage == "truncate":
        del data[-5:]
    elif damage == "version":
        data[1] = 9
    else:
        data.clear()
    path.write_bytes(bytes(data))

    loaded = ProducerStateManager(tmp_path)
    assert loaded.load(0, 6) == 3
    assert state(loaded) == expected
    assert not path.exists()
    assert loaded.latest_snapshot_offset() == 3


def test_snapshot_file_housekeeping(tmp_path: Path, manager: ProducerStateManager) -> None:
    for offset in (0, 10, 20, 30):
        manager.take_snapshot(offset)
    (tmp_path / "00000000000000000010.log").write_bytes(b"")  # other files are left alone
    assert manager.snapshot_offsets() == [0, 10, 20, 30]
    manager.delete_snapshots_before(10)
    assert manager.snapshot_offsets() == [10, 20, 30]
    manager.truncate_after(20)
    assert manager.snapshot_offsets() == [10, 20]
    assert manager.latest_snapshot_offset() == 20
    assert (tmp_path / "00000000000000000010.log").exists()


# ----------------------------------------------------------------------------------- expiry


def test_remove_expired_keeps_recent_producers_and_open_transactions(tmp_path: Path) -> None:
    manager = ProducerStateManager(tmp_path, expiration_ms=1_000)
    log = Log(manager)
    log.produce(producer_id=1, seq=0, ts=10_000)
    log.produce(producer_id=2, seq=0, ts=10_500)
    log.produce(producer_id=3, seq=0, ts=9_000, transactional=True)
    assert manager.remove_expired(10_999) == 0
    assert manager.remove_expired(11_000) == 1  # idle for exactly expiration_ms: expired, as in Kafka
    assert sorted(manager.active_producers) == [2, 3]
    assert manager.remove_expired(50_000) == 1
    assert sorted(manager.active_producers) == [3]
    log.marker(ControlRecordType.COMMIT, producer_id=3, ts=9_500)
    assert manager.remove_expired(50_000) == 1
    assert manager.producer_count == 0
    # an expired producer comes back as an unknown one: any sequence is accepted
    assert log.produce(producer_id=1, seq=17) == (4, 4)
