"""The transaction state table, cell by cell, and the prepare/complete protocol of the metadata."""

from __future__ import annotations

import itertools
from dataclasses import replace

import pytest

from tidelog.coordinator.txn.metadata import IllegalTransition, TransactionMetadata
from tidelog.coordinator.txn.state import (
    VALID_PREVIOUS_STATES,
    TransactionState,
    TransactionVersion,
    is_epoch_exhausted,
    is_valid_transition,
)
from tidelog.errors import ErrorCode, KafkaError

S = TransactionState
E, ON, PC, PA, CC, CA, D, PF = (S.EMPTY, S.ONGOING, S.PREPARE_COMMIT, S.PREPARE_ABORT, S.COMPLETE_COMMIT,
                               S.COMPLETE_ABORT, S.DEAD, S.PREPARE_EPOCH_FENCE)

# Kafka 4.x's table, written out row by row: the states each state may be entered from.
ALLOWED = {
    E: {E, CC, CA},
    ON: {ON, E, CC, CA},
    PC: {ON},
    PA: {ON, PF, E, CC, CA},
    CC: {PC},
    CA: {PA},
    D: {E, CA, CC},
    PF: {ON},
}


@pytest.mark.parametrize(("current", "target"), list(itertools.product(S, S)),
                         ids=lambda s: s.value)
def test_every_cell_of_the_transition_table(current: TransactionState, target: TransactionState) -> None:
    assert is_valid_transition(current, target) is (current in ALLOWED[target])
    assert (current in VALID_PREVIOUS_STATES[target]) is (current in ALLOWED[target])


def test_state_ids_and_names_are_kafkas() -> None:
    # __transaction_state stores the id; DescribeTransactions / ListTransactions show the name.
    assert [(s.id, s.value) for s in S] == [
        (0, "Empty"), (1, "Ongoing"), (2, "PrepareCommit"), (3, "PrepareAbort"), (4, "CompleteCommit"),
        (5, "CompleteAbort"), (6, "Dead"), (7, "PrepareEpochFence")]
    assert all(S.from_id(s.id) is s for s in S)
    with pytest.raises(ValueError):
        S.from_id(8)
    assert S.from_name("Ongoing") is ON and S.from_name("ongoing") is None
    assert {s for s in S if s.is_expiration_allowed} == {E, CC, CA}


def test_epoch_exhaustion_and_versions() -> None:
    assert not is_epoch_exhausted(32765) and is_epoch_exhausted(32766) and is_epoch_exhausted(32767)
    assert [v.supports_epoch_bump for v in TransactionVersion] == [False, False, True]
    assert [v.log_value_version for v in TransactionVersion] == [0, 1, 1]


# ----------------------------------------------------------------- the prepares, from every state


def metadata_in(state: TransactionState, epoch: int = 5) -> TransactionMetadata:
    partitions = {("t", 0)} if state in (ON, PC, PA) else set()
    return TransactionMetadata("tx", 10, producer_epoch=epoch, state=state, topic_partitions=partitions,
                               txn_start_timestamp=100 if state is not E else -1, txn_last_update_timestamp=100)


PREPARES = {
    "add_partitions": (ON, lambda md: md.prepare_add_partitions(frozenset({("t", 1)}), 200, TransactionVersion.TV_0)),
    "commit": (PC, lambda md: md.prepare_abort_or_commit(PC, TransactionVersion.TV_0, -1, 200, False)),
    "abort": (PA, lambda md: md.prepare_abort_or_commit(PA, TransactionVersion.TV_0, -1, 200, False)),
    "fence": (PF, lambda md: md.prepare_fence_producer_epoch()),
    "init": (E, lambda md: md.prepare_increment_producer_epoch(1000, None, 200)),
    "dead": (D, lambda md: md.prepare_dead()),
}


@pytest.mark.parametrize(("state", "operation"), list(itertools.product([s for s in S if s is not PF], PREPARES)),
                         ids=lambda x: x.value if isinstance(x, TransactionState) else x)
def test_each_prepare_from_each_state(state: TransactionState, operation: str) -> None:
    target, prepare = PREPARES[operation]
    md = metadata_in(state)
    if state in ALLOWED[target]:
        transit = prepare(md)
        assert transit.state is target and md.pending_state is target
        assert md.state is state  # nothing applied before the record is written
    else:
        with pytest.raises(IllegalTransition):
            prepare(md)
        assert md.pending_state is None


def test_one_pending_transition_at_a_time_and_completion_must_match() -> None:
    md = metadata_in(ON)
    transit = md.prepare_add_partitions(frozenset({("t", 1)}), 200, TransactionVersion.TV_0)
    with pytest.raises(IllegalTransition):
        md.prepare_abort_or_commit(PC, TransactionVersion.TV_0, -1, 200, False)
    commit = replace(transit, state=PC)
    with pytest.raises(IllegalTransition):
        md.complete_transition_to(commit)
    md.complete_transition_to(transit)
    assert (md.state, md.pending_state, md.topic_partitions) == (ON, None, {("t", 0), ("t", 1)})
    with pytest.raises(IllegalTransition):
        md.complete_transition_to(transit)  # nothing pending any more


def test_a_commit_completes_through_its_markers() -> None:
    md = metadata_in(ON)
    md.complete_transition_to(md.prepare_abort_or_commit(PC, TransactionVersion.TV_0, -1, 200, False))
    with pytest.raises(IllegalTransition):
        metadata_in(ON).remove_partition(("t", 0))  # markers are written only once decided
    complete = md.prepare_complete(300)
    assert complete.state is CC and complete.topic_partitions == frozenset()
    md.remove_partition(("t", 0))
    md.complete_transition_to(complete)
    assert (md.state, md.producer_epoch, md.topic_partitions, md.txn_start_timestamp) == (CC, 5, set(), 100)


def test_init_epochs_kip360_and_fencing() -> None:
    md = metadata_in(CC, epoch=5)
    assert md.prepare_increment_producer_epoch(1000, None, 200).producer_epoch == 6
    md.pending_state = None
    t = md.prepare_increment_producer_epoch(1000, 5, 200)  # KIP-360: a client recovering at the current epoch
    assert (t.producer_epoch, t.last_producer_epoch) == (6, 5)
    md.complete_transition_to(t)
    t = md.prepare_increment_producer_epoch(1000, 5, 300)  # its retry: the same answer, no second bump
    assert (t.producer_epoch, t.last_producer_epoch) == (6, 5)
    md.pending_state = None
    with pytest.raises(KafkaError) as e:
        md.prepare_increment_producer_epoch(1000, 3, 300)  # a zombie's epoch
    assert e.value.code == ErrorCode.PRODUCER_FENCED and md.pending_state is None
    ongoing = metadata_in(ON, epoch=7)
    assert ongoing.prepare_fence_producer_epoch().producer_epoch == 8
    ongoing.pending_state, ongoing.has_failed_epoch_fence = None, True
    assert ongoing.prepare_fence_producer_epoch().producer_epoch == 7  # a failed fence is not bumped twice


def test_v2_ends_bump_the_epoch_and_overflow_to_a_new_producer_id() -> None:
    md = metadata_in(ON, epoch=32766)
    prepare = md.prepare_abort_or_commit(PC, TransactionVersion.TV_2, 2000, 200, False)
    assert (prepare.producer_epoch, prepare.last_producer_epoch, prepare.next_producer_id) == (32767, 32766, 2000)
    md.complete_transition_to(prepare)
    md.remove_partition(("t", 0))
    complete = md.prepare_complete(300)
    assert (complete.producer_id, complete.producer_epoch, complete.prev_producer_id) == (2000, 0, 10)
    md.complete_transition_to(complete)
    assert (md.state, md.producer_id, md.producer_epoch, md.next_producer_id) == (CC, 2000, 0, -1)
