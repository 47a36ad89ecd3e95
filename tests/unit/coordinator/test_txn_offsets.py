"""Transactional offset commits (TxnOffsetCommit): pending until the transaction's marker, unstable
for require_stable fetches, committed or dropped by the marker, and the same after a reload."""

from __future__ import annotations

import pytest

from tidelog.coordinator.group import RequestInfo
from tidelog.coordinator.group.offsets import PartitionCommit
from tidelog.errors import ErrorCode, KafkaError

from .conftest import Harness

INFO = RequestInfo("c", "/h", 3)
PID, EPOCH = 77, 0


def offsets(harness: Harness, group: str, *, stable: bool = False) -> dict[tuple[str, int], tuple[int, int]]:
    fetched = harness.coordinator.fetch_offsets(group, [("t", [0, 1])], require_stable=stable)
    return {(t.name, p.partition_index): (p.committed_offset, p.error_code) for t in fetched.topics for p in t.partitions}


def commit_txn(harness: Harness, group: str = "g", *, pid: int = PID, epoch: int = EPOCH, offset: int = 10,
               generation: int = -1, member: str = "") -> dict:
    return harness.coordinator.commit_transactional_offsets(
        INFO, group, pid, epoch, member, None, generation, [PartitionCommit("t", 0, offset), PartitionCommit("t", 1, offset)])


def end(harness: Harness, group: str, pid: int, commit: bool) -> None:
    """The marker reaches the group's partition: written to its log, then applied (as the marker writer does)."""
    partition = harness.coordinator.partition_for(group)
    result = harness.logs[partition].append_marker(pid, EPOCH, 0, commit=commit)
    harness.coordinator.complete_transaction(partition, result.first_offset, pid, commit)


@pytest.mark.parametrize("commit", [True, False], ids=["commit", "abort"])
def test_pending_until_the_marker(harness: Harness, commit: bool) -> None:
    assert commit_txn(harness) == {("t", 0): ErrorCode.NONE, ("t", 1): ErrorCode.NONE}
    assert offsets(harness, "g") == {("t", 0): (-1, 0), ("t", 1): (-1, 0)}
    assert offsets(harness, "g", stable=True) == {("t", 0): (-1, ErrorCode.UNSTABLE_OFFSET_COMMIT),
                                                  ("t", 1): (-1, ErrorCode.UNSTABLE_OFFSET_COMMIT)}
    assert harness.fresh().offsets.has_pending("g", "t", 0)  # pending after a reload too
    end(harness, "g", PID, commit)
    expected = 10 if commit else -1
    assert offsets(harness, "g", stable=True) == {("t", 0): (expected, 0), ("t", 1): (expected, 0)}
    fresh = harness.fresh()  # the reload replays the transactional batch, then the marker
    assert not fresh.offsets.has_pending("g", "t", 0)
    om = fresh.offsets.get("g", "t", 0)
    assert (om.offset if om else -1) == expected


def test_the_transactional_batch_carries_the_producer(harness: Harness) -> None:
    commit_txn(harness)
    plog = harness.logs[harness.coordinator.partition_for("g")]
    (batch,) = list(plog.batches())
    assert (batch.producer_id, batch.producer_epoch, batch.is_transactional) == (PID, EPOCH, True)
    assert plog.last_stable_offset == 0  # __consumer_offsets itself holds the transaction open
    # A second commit in the same transaction (no sequence: a coordinator's write).
    commit_txn(harness, offset=11)
    assert plog.log_end_offset == 4
    commit_txn(harness, pid=PID + 1, epoch=3)
    with pytest.raises(KafkaError) as e:  # an older epoch of the producer is refused by the log
        commit_txn(harness, pid=PID + 1, epoch=2)
    assert e.value.code == ErrorCode.INVALID_PRODUCER_EPOCH


def test_a_later_plain_commit_wins_over_an_earlier_transactional_one(harness: Harness) -> None:
    commit_txn(harness, offset=10)
    harness.coordinator.commit_offsets(INFO, "g", "", None, -1, [PartitionCommit("t", 0, 20)])
    end(harness, "g", PID, True)
    assert offsets(harness, "g") == {("t", 0): (20, 0), ("t", 1): (10, 0)}
    fresh = harness.fresh()
    assert (fresh.offsets.get("g", "t", 0).offset, fresh.offsets.get("g", "t", 1).offset) == (20, 10)


def test_deleting_offsets_drops_pending_ones_and_expiry_waits(harness: Harness) -> None:
    commit_txn(harness)
    response = harness.coordinator.delete_offsets("g", [("t", [0])])
    assert [p.error_code for t in response.topics for p in t.partitions] == [0]
    assert not harness.coordinator.offsets.has_pending("g", "t", 0)
    assert harness.coordinator.offsets.has_pending("g", "t", 1)
    harness.advance(10 * 60_000)  # well past offsets retention: an open transaction keeps the group
    assert "g" in harness.coordinator.groups
    end(harness, "g", PID, True)
    assert offsets(harness, "g") == {("t", 0): (-1, 0), ("t", 1): (10, 0)}


def test_group_validation(harness: Harness) -> None:
    with pytest.raises(KafkaError) as e:
        commit_txn(harness, "nogroup", generation=3)
    assert e.value.code == ErrorCode.ILLEGAL_GENERATION
    leader, _ = harness.stable_group("live")
    # Without member and generation a transactional commit is accepted even by a group with members.
    assert commit_txn(harness, "live")[("t", 0)] == ErrorCode.NONE
    with pytest.raises(KafkaError) as e:
        commit_txn(harness, "live", pid=PID + 1, member=leader, generation=99)
    assert e.value.code == ErrorCode.ILLEGAL_GENERATION
    with pytest.raises(KafkaError) as e:
        commit_txn(harness, "live", pid=PID + 1, member="stranger", generation=1)
    assert e.value.code == ErrorCode.UNKNOWN_MEMBER_ID
