"""The share coordinator's shard logic on real logs: replay equals live state, the snapshot cadence,
state-epoch and leader-epoch fencing, delete as a tombstone, unknown share partitions, ownership."""

from __future__ import annotations

import pytest

from tidelog.coordinator.share.persister import DeliveryState as S
from tidelog.coordinator.share.persister import ShareState, StateWrite
from tidelog.coordinator.share.persister import StateBatch as B
from tidelog.errors import ErrorCode, KafkaError

from .conftest import UNKNOWN_TOPIC_ID, ShareHarness, key


def state_of(c, k) -> tuple:
    return (c.states.get(k), c.leader_epochs.get(k), c.state_epochs.get(k), c.updates_since_snapshot.get(k))


def test_initialize_then_read(share):
    c, k = share.coordinator, key()
    assert c.initialize(k, state_epoch=0, start_offset=5) == ErrorCode.NONE
    assert c.read(k, leader_epoch=1) == ShareState(state_epoch=0, start_offset=5, leader_epoch=1)


def test_read_of_a_share_partition_never_initialized_is_unknown(share):
    state = share.coordinator.read(key(), 0)
    assert state.error == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert share.coordinator.write(key(), StateWrite(0, 0, 0)) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    # a summary is no error: no start offset yet (Kafka's defaults)
    assert share.coordinator.read_summary(key(), 0) == ShareState(state_epoch=0, start_offset=-1, leader_epoch=0)


def test_topic_partition_missing_from_metadata_is_unknown(share):
    c = share.coordinator
    assert c.initialize(key(topic_id=UNKNOWN_TOPIC_ID), 0, 0) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert c.initialize(key(partition=-1), 0, 0) == ErrorCode.INVALID_REQUEST
    assert c.read(key(partition=99), 0).error == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_writes_fold_onto_the_state(share):
    c, k = share.coordinator, key()
    c.initialize(k, 0, 0)
    assert c.write(k, StateWrite(0, 1, 0, (B(0, 9, S.AVAILABLE, 1),))) == ErrorCode.NONE
    assert c.write(k, StateWrite(0, 1, -1, (B(0, 4, S.ACKNOWLEDGED, 1),), delivery_complete_count=5)) == ErrorCode.NONE
    assert c.write(k, StateWrite(0, 1, 5, (B(7, 7, S.ARCHIVED, 5),))) == ErrorCode.NONE
    state = c.read(k, 1)
    assert state.start_offset == 5
    assert state.state_batches == (B(5, 6, S.AVAILABLE, 1), B(7, 7, S.ARCHIVED, 5), B(8, 9, S.AVAILABLE, 1))
    assert state.delivery_complete_count == 5
    summary = c.read_summary(k, 1)
    assert (summary.state_epoch, summary.start_offset, summary.state_batches) == (0, 5, ())


def test_replay_equals_live_state(share):
    c = share.coordinator
    keys = [key("g1", 0), key("g1", 1), key("g2", 0), key("g3", 3)]
    for i, k in enumerate(keys):
        c.initialize(k, state_epoch=i, start_offset=0)
        for n in range(7):
            c.write(k, StateWrite(i, n, n * 3, (B(n * 3, n * 3 + 5, S(0 if n % 2 else 2), n),), n))
    c.read(keys[0], 10)  # a higher leader epoch is written down
    c.delete(keys[3])
    live = {k: state_of(c, k) for k in keys}
    restarted = share.restart()
    assert {k: state_of(restarted, k) for k in keys} == live
    assert restarted.read(keys[3], 0).error == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_snapshot_after_the_configured_number_of_updates(tmp_path):
    share = ShareHarness(tmp_path, per_snapshot=3)
    c, k = share.coordinator, key()
    c.initialize(k, 0, 0)
    for n in range(8):
        c.write(k, StateWrite(0, 0, -1, (B(n, n, S.ACKNOWLEDGED, 1),)))
    kinds = [snapshot for snapshot, _ in share.records(k)]
    # initialize: a snapshot; then 3 updates, a snapshot, 3 updates, a snapshot
    assert kinds == [True, False, False, False, True, False, False, False, True]
    epochs = [v.snapshot_epoch for _, v in share.records(k)]
    assert epochs == [0, 0, 0, 0, 1, 1, 1, 1, 2]
    # the last snapshot holds the whole state
    _, last = share.records(k)[-1]
    assert last.state_batches == (B(0, 7, S.ACKNOWLEDGED, 1),)
    assert share.restart().read(k, 0).state_batches == (B(0, 7, S.ACKNOWLEDGED, 1),)


def test_default_cadence_is_kafkas_500(share):
    assert share.config.snapshot_update_records_per_snapshot == 500


def test_initialize_with_a_lower_state_epoch_is_fenced(share):
    c, k = share.coordinator, key()
    assert c.initialize(k, 3, 0) == ErrorCode.NONE
    assert c.initialize(k, 2, 0) == ErrorCode.FENCED_STATE_EPOCH
    assert c.initialize(k, 4, 10) == ErrorCode.NONE  # a re-initialization: empty again, new start offset
    assert c.read(k, 0) == ShareState(state_epoch=4, start_offset=10, leader_epoch=0)


def test_write_with_a_lower_state_epoch_is_fenced(share):
    c, k = share.coordinator, key()
    c.initialize(k, 2, 0)
    assert c.write(k, StateWrite(1, 0, 0)) == ErrorCode.FENCED_STATE_EPOCH
    assert c.write(k, StateWrite(2, 0, 0)) == ErrorCode.NONE


def test_write_and_read_with_a_lower_leader_epoch_are_fenced_also_after_a_restart(share):
    c, k = share.coordinator, key()
    c.initialize(k, 0, 0)
    assert c.read(k, 5).error == ErrorCode.NONE  # the partition leader at epoch 5 reads: recorded
    assert c.write(k, StateWrite(0, 4, 0)) == ErrorCode.FENCED_LEADER_EPOCH
    assert c.read(k, 4).error == ErrorCode.FENCED_LEADER_EPOCH
    assert c.write(k, StateWrite(0, 5, 0)) == ErrorCode.NONE
    # the new partition leader reads at a higher epoch: the old one is fenced from then on
    assert c.read(k, 7).error == ErrorCode.NONE
    assert c.write(k, StateWrite(0, 5, 0)) == ErrorCode.FENCED_LEADER_EPOCH
    restarted = share.restart()
    assert restarted.write(k, StateWrite(0, 6, 0)) == ErrorCode.FENCED_LEADER_EPOCH
    assert restarted.write(k, StateWrite(0, 7, 0)) == ErrorCode.NONE


def test_only_initialize_sets_the_state_epoch_and_only_read_the_leader_epoch(share):
    """Kafka 4.2+ (KAFKA-19456): a write with higher epochs is applied, its epochs are not recorded."""
    c, k = share.coordinator, key()
    c.initialize(k, 1, 0)
    c.read(k, 2)
    assert c.write(k, StateWrite(3, 9, 4)) == ErrorCode.NONE
    assert c.write(k, StateWrite(1, 2, 5)) == ErrorCode.NONE  # not fenced by the write's epochs 3 and 9
    assert c.read(k, 2) == ShareState(state_epoch=1, start_offset=5, leader_epoch=2)


def test_a_read_at_leader_epoch_minus_1_neither_fences_nor_records(share):
    c, k = share.coordinator, key()
    c.initialize(k, 0, 3)
    c.read(k, 4)
    before = len(share.records(k))
    assert c.read(k, -1).error == ErrorCode.NONE
    assert c.read(k, -1).start_offset == 3
    assert len(share.records(k)) == before
    assert c.leader_epochs[k] == 4


def test_negative_epochs_are_invalid(share):
    c, k = share.coordinator, key()
    assert c.initialize(k, -1, 0) == ErrorCode.INVALID_REQUEST
    c.initialize(k, 0, 0)
    assert c.write(k, StateWrite(-1, 0, 0)) == ErrorCode.INVALID_REQUEST
    assert c.write(k, StateWrite(0, -1, 0)) == ErrorCode.INVALID_REQUEST
    assert c.read(k, -2).error == ErrorCode.INVALID_REQUEST


def test_read_summary_neither_fences_nor_writes(share):
    c, k = share.coordinator, key()
    c.initialize(k, 0, 0)
    c.read(k, 5)
    before = len(share.records(k))
    assert c.read_summary(k, 0).error == ErrorCode.NONE
    assert len(share.records(k)) == before


def test_delete_is_a_tombstone(share):
    c, k = share.coordinator, key()
    c.initialize(k, 3, 0)
    c.write(k, StateWrite(3, 2, 0, (B(0, 0, S.ACKNOWLEDGED, 1),)))
    assert c.delete(k) == ErrorCode.NONE
    assert share.records(k)[-1] == (True, None)
    assert c.read(k, 0).error == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    # the epochs went with it: a new state at epoch 0 is accepted
    assert c.initialize(k, 0, 0) == ErrorCode.NONE
    count = len(share.records(k))
    assert c.delete(key("other")) == ErrorCode.NONE  # nothing there: nothing written
    assert len(share.records(k)) == count


def test_a_partition_not_led_here_is_not_coordinator(share):
    c, k = share.coordinator, key()
    c.initialize(k, 0, 0)
    c.unload([c.partition_for(k)])
    share.writer.not_led.add(c.partition_for(k))
    assert k not in c.states
    with pytest.raises(KafkaError) as e:
        c.read(k, 0)
    assert e.value.code == ErrorCode.NOT_COORDINATOR


def test_failed_append_changes_nothing(share):
    c, k = share.coordinator, key()
    c.initialize(k, 0, 0)
    before = state_of(c, k)
    share.writer.fail_with = ErrorCode.NOT_LEADER_OR_FOLLOWER
    with pytest.raises(KafkaError) as e:
        c.write(k, StateWrite(0, 0, 3, (B(3, 4, S.ACKNOWLEDGED, 1),)))
    assert e.value.code == ErrorCode.NOT_COORDINATOR
    assert state_of(c, k) == before
