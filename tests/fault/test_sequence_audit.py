"""The fault runs' disk audit: a (producer id, epoch, sequence) written twice is a broker violation;
a value written under two epochs of one producer is the client's re-send after an epoch bump."""

from __future__ import annotations

from tests.fault.lab.sequence_audit import locate, repeated_sequences, resent_after_epoch_bump
from tidelog.records.builder import build_batch
from tidelog.records.control import ControlRecordType, build_control_batch


def batch(offset: int, values: list[str], pid: int = 7, epoch: int = 0, seq: int = 0, leader_epoch: int = 1) -> bytes:
    return build_batch([(1000, None, v.encode()) for v in values], base_offset=offset, producer_id=pid,
                       producer_epoch=epoch, base_sequence=seq, partition_leader_epoch=leader_epoch)


def test_a_clean_log_has_no_repeated_sequence():
    log = [batch(0, ["a", "b"], seq=0), batch(2, ["c"], seq=2), batch(3, ["d"], epoch=1, seq=0),
           build_batch([(1000, None, b"x")], base_offset=4)]  # no producer id: not audited
    assert repeated_sequences(0, log) == []


def test_a_retry_written_twice_is_named_with_both_offsets():
    log = [batch(0, ["a", "b"], seq=0), batch(2, ["c"], seq=2), batch(3, ["b"], seq=1)]
    assert repeated_sequences(3, log) == [
        "p3: producer 7 epoch 0 seq 1 written twice, at offsets 1 and 3 (a retry the broker did not recognise)"]


def test_copies_tell_a_resend_under_a_new_epoch_from_a_broker_duplicate():
    logs = {0: [batch(0, ["a", "b"], seq=0), batch(2, ["b"], epoch=1, seq=0, leader_epoch=2)],
            1: [batch(0, ["c"], seq=0), batch(1, ["c"], seq=0)],
            2: [batch(0, ["d"], pid=7), batch(1, ["d"], pid=8)]}
    found = locate(["b", "c", "d", "never"], logs)
    assert [(c.partition, c.offset, c.producer_epoch, c.sequence) for c in found["b"]] == [(0, 1, 0, 1), (0, 2, 1, 0)]
    assert found["b"][1].describe() == "p0@2 (producer 7 epoch 1 seq 0, leader epoch 2)"
    assert found["never"] == []
    assert resent_after_epoch_bump(found["b"])
    assert not resent_after_epoch_bump(found["c"])  # same epoch twice: the broker let a retry through
    assert not resent_after_epoch_bump(found["d"])  # two producers
    assert not resent_after_epoch_bump(found["never"])


def test_control_batches_are_skipped():
    marker = build_control_batch(ControlRecordType.COMMIT, producer_id=7, producer_epoch=0, coordinator_epoch=0,
                                 timestamp_ms=1000, base_offset=1)
    assert repeated_sequences(0, [batch(0, ["a"]), marker]) == []
