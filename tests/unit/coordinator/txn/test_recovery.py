"""A coordinator that dies at any step of ending a transaction: after a restart the transaction ends
exactly as Kafka ends it. Before PrepareCommit/PrepareAbort is in ``__transaction_state`` nothing was
decided (the transaction is still open); once it is, the restarted coordinator writes the markers
to every partition and completes it."""

from __future__ import annotations

import pytest

from tidelog.coordinator.txn import TransactionState, TransactionVersion
from tidelog.errors import ErrorCode

from .conftest import TIMEOUT_MS, Crash, TxnHarness

S = TransactionState
PARTITIONS = (("t", 0), ("t", 1), ("u", 0))
# State writes of a transaction's life: 1 InitProducerId, 2 AddPartitions, 3 Prepare*, 4 Complete*.
# Marker writes 1-3, one per partition, between 3 and 4.
CRASH_POINTS = [
    ("state", "before", 3), ("state", "after", 3),
    ("marker", "before", 1), ("marker", "after", 1), ("marker", "after", 2), ("marker", "after", 3),
    ("state", "before", 4), ("state", "after", 4),
]


def arm(h: TxnHarness, where: str, when: str, n: int) -> None:
    target = h.writer if where == "state" else h.data
    setattr(target, f"crash_{when}", n)


def check_decided(h: TxnHarness, pid: int, commit: bool, epoch: int) -> None:
    md = h.coordinator.metadata("tx")
    assert md.state is (S.COMPLETE_COMMIT if commit else S.COMPLETE_ABORT) and md.pending_state is None
    for tp in PARTITIONS:
        plog = h.data.log(*tp)
        markers = h.markers(*tp)
        assert markers and set(markers) == {(pid, epoch, commit)}  # maybe written twice, never otherwise
        assert plog.last_stable_offset == plog.high_watermark  # nothing left open
        aborted = plog.aborted_transactions(0, plog.log_end_offset)
        assert bool(aborted) is not commit


@pytest.mark.parametrize("version", [TransactionVersion.TV_0, TransactionVersion.TV_2], ids=["v1", "v2"])
@pytest.mark.parametrize("commit", [True, False], ids=["commit", "abort"])
@pytest.mark.parametrize(("where", "when", "n"), CRASH_POINTS, ids=lambda x: str(x))
def test_crash_at_every_step_of_ending_a_transaction(tmp_path, version, commit, where, when, n) -> None:
    h = TxnHarness(tmp_path)
    pid, epoch = h.init("tx")
    h.begin("tx", pid, epoch, PARTITIONS, version=version)
    arm(h, where, when, n)
    with pytest.raises(Crash):
        h.coordinator.end_txn("tx", pid, epoch, commit, version)
    h.restart()
    end_epoch = epoch + 1 if version.supports_epoch_bump else epoch
    if (where, when, n) == ("state", "before", 3):
        # Nothing decided: still open (the partitions hold the LSO); the client's retry ends it.
        assert h.coordinator.metadata("tx").state is S.ONGOING
        assert all(h.data.log(*tp).last_stable_offset == 0 for tp in PARTITIONS)
        assert h.coordinator.end_txn("tx", pid, epoch, commit, version).error == ErrorCode.NONE
    check_decided(h, pid, commit, end_epoch)
    # And the id works on: a new transaction after another restart.
    h.restart()
    assert h.coordinator.metadata("tx").state is (S.COMPLETE_COMMIT if commit else S.COMPLETE_ABORT)
    h.begin("tx", pid, end_epoch, [("t", 0)], version=version)
    assert h.coordinator.end_txn("tx", pid, end_epoch, True, version).error == ErrorCode.NONE


@pytest.mark.parametrize(("where", "when", "n"), [("state", "after", 3), ("marker", "after", 1)],
                         ids=lambda x: str(x))
def test_crash_while_a_new_instance_fences_the_old_one(tmp_path, where, when, n) -> None:
    h = TxnHarness(tmp_path)
    pid, epoch = h.init("tx")
    h.begin("tx", pid, epoch, PARTITIONS)
    arm(h, where, when, n)
    with pytest.raises(Crash):
        h.coordinator.init_producer_id("tx", TIMEOUT_MS)
    h.restart()
    check_decided(h, pid, False, epoch + 1)  # the fence's abort completed, one epoch up
    assert h.init("tx") == (pid, epoch + 2)


def test_crash_while_aborting_a_timed_out_transaction(tmp_path) -> None:
    h = TxnHarness(tmp_path)
    pid, epoch = h.init("tx", timeout_ms=5000)
    h.begin("tx", pid, epoch, PARTITIONS)
    h.data.crash_after = 2
    h.clock.advance(10_000)
    with pytest.raises(Crash):  # what the abort timer runs
        h.coordinator.abort_timed_out_transactions()
    h.restart()
    check_decided(h, pid, False, epoch + 1)


def test_a_transaction_still_open_at_a_crash_is_aborted_by_its_timeout(tmp_path) -> None:
    h = TxnHarness(tmp_path)
    pid, epoch = h.init("tx", timeout_ms=5000)
    h.begin("tx", pid, epoch, PARTITIONS)
    h.restart()  # the producer is gone too
    assert h.coordinator.metadata("tx").state is S.ONGOING
    h.advance(10_000)
    check_decided(h, pid, False, epoch + 1)
