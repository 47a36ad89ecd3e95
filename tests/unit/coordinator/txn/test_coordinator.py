"""The transaction coordinator on real logs: the producer's APIs, markers, fencing, timeouts,
expiry, failed writes, and that loading what it wrote gives the same state."""

from __future__ import annotations

import pytest

from tidelog.coordinator.txn import TransactionState, TransactionVersion
from tidelog.errors import ErrorCode, KafkaError

from .conftest import TIMEOUT_MS, TxnHarness, txn_batch

S = TransactionState
TV2 = TransactionVersion.TV_2


def persisted(coordinator, txn_id: str):
    """What a record of the id says (last_producer_epoch is not persisted)."""
    md = coordinator.metadata(txn_id)
    return None if md is None else (md.producer_id, md.producer_epoch, md.state, frozenset(md.topic_partitions),
                                    md.txn_timeout_ms, md.txn_start_timestamp, md.txn_last_update_timestamp)


def test_init_producer_id_creates_then_bumps_the_epoch(txn: TxnHarness) -> None:
    pid, epoch = txn.init("a")
    assert epoch == 0 and pid >= 1000
    assert txn.init("a") == (pid, 1)
    assert txn.init("b")[0] != pid  # another id, another producer id
    before = persisted(txn.coordinator, "a")
    assert persisted(txn.restart(), "a") == before
    assert txn.init("a") == (pid, 2)


@pytest.mark.parametrize(("txn_id", "timeout", "code"), [
    ("", 1000, ErrorCode.INVALID_REQUEST),
    ("a", 0, ErrorCode.INVALID_TRANSACTION_TIMEOUT),
    ("a", 900_001, ErrorCode.INVALID_TRANSACTION_TIMEOUT),
])
def test_init_producer_id_refuses(txn: TxnHarness, txn_id: str, timeout: int, code: ErrorCode) -> None:
    assert txn.coordinator.init_producer_id(txn_id, timeout).error == code
    assert txn.writer.appends == 0


def test_add_partitions_errors(txn: TxnHarness) -> None:
    pid, epoch = txn.init("a")
    c = txn.coordinator
    assert c.add_partitions("nope", pid, epoch, [("t", 0)]) == ErrorCode.INVALID_PRODUCER_ID_MAPPING
    assert c.add_partitions("a", pid + 1, epoch, [("t", 0)]) == ErrorCode.INVALID_PRODUCER_ID_MAPPING
    assert c.add_partitions("a", pid, epoch + 1, [("t", 0)]) == ErrorCode.PRODUCER_FENCED
    assert c.add_partitions("", pid, epoch, [("t", 0)]) == ErrorCode.INVALID_REQUEST
    writes = txn.writer.appends
    assert c.add_partitions("a", pid, epoch, [("t", 0)]) == ErrorCode.NONE
    assert c.add_partitions("a", pid, epoch, [("t", 0)]) == ErrorCode.NONE  # already in: nothing written
    assert txn.writer.appends == writes + 1
    assert c.metadata("a").state is S.ONGOING


def test_commit_writes_markers_and_completes(txn: TxnHarness) -> None:
    pid, epoch = txn.init("a")
    txn.begin("a", pid, epoch)
    for p in (0, 1):
        assert txn.data.log("t", p).last_stable_offset == 0  # the transaction holds the LSO back
    reply = txn.coordinator.end_txn("a", pid, epoch, True)
    assert reply.error == ErrorCode.NONE
    assert txn.markers("t", 0) == txn.markers("t", 1) == [(pid, epoch, True)]
    for p in (0, 1):
        plog = txn.data.log("t", p)
        assert plog.last_stable_offset == plog.high_watermark == 3
    md = txn.coordinator.metadata("a")
    assert (md.state, md.topic_partitions, md.pending_state) == (S.COMPLETE_COMMIT, set(), None)
    assert txn.coordinator.end_txn("a", pid, epoch, True).error == ErrorCode.NONE  # a retry
    assert txn.coordinator.end_txn("a", pid, epoch, False).error == ErrorCode.INVALID_TXN_STATE
    assert persisted(txn.restart(), "a")[2] is S.COMPLETE_COMMIT


def test_abort_indexes_the_aborted_data(txn: TxnHarness) -> None:
    pid, epoch = txn.init("a")
    txn.begin("a", pid, epoch, [("t", 0)])
    assert txn.coordinator.end_txn("a", pid, epoch, False).error == ErrorCode.NONE
    plog = txn.data.log("t", 0)
    assert [(a.producer_id, a.first_offset, a.last_offset) for a in plog.aborted_transactions(0, 3)] == [(pid, 0, 2)]
    assert txn.coordinator.metadata("a").state is S.COMPLETE_ABORT
    # The next transaction starts from CompleteAbort without another InitProducerId.
    txn.begin("a", pid, epoch, [("t", 0)])
    assert txn.coordinator.metadata("a").state is S.ONGOING


def test_a_new_instance_aborts_the_open_transaction_and_fences_the_old_one(txn: TxnHarness) -> None:
    pid, epoch = txn.init("a")
    txn.begin("a", pid, epoch)
    result = txn.coordinator.init_producer_id("a", TIMEOUT_MS)
    assert result.error == ErrorCode.CONCURRENT_TRANSACTIONS  # the client retries
    # The open transaction was aborted one epoch up (v2 server: the abort's own bump; the fence's is
    # dropped, as Kafka 4.x does), and the new instance gets the next epoch.
    assert txn.markers("t", 0) == [(pid, epoch + 1, False)]
    assert txn.coordinator.metadata("a").state is S.COMPLETE_ABORT
    assert txn.init("a") == (pid, epoch + 2)
    c = txn.coordinator
    assert c.add_partitions("a", pid, epoch, [("t", 2)]) == ErrorCode.PRODUCER_FENCED
    assert c.end_txn("a", pid, epoch, True).error == ErrorCode.PRODUCER_FENCED
    # The zombie's late write is refused by the partition too: its epoch is older than the marker's.
    with pytest.raises(KafkaError) as e:
        txn.data.log("t", 0).append_as_leader(txn_batch(pid, epoch, 2))
    assert e.value.code == ErrorCode.INVALID_PRODUCER_EPOCH


def test_v1_server_fences_with_one_bump(tmp_path) -> None:
    h = TxnHarness(tmp_path, transaction_version=TransactionVersion.TV_1)
    pid, epoch = h.init("a")
    h.begin("a", pid, epoch, [("t", 0)])
    assert h.coordinator.init_producer_id("a", TIMEOUT_MS).error == ErrorCode.CONCURRENT_TRANSACTIONS
    assert h.markers("t", 0) == [(pid, epoch + 1, False)]
    assert h.init("a") == (pid, epoch + 2)


def test_v2_every_end_bumps_the_epoch(txn: TxnHarness) -> None:
    pid, epoch = txn.init("a")
    txn.begin("a", pid, epoch, [("t", 0)], version=TV2)
    reply = txn.coordinator.end_txn("a", pid, epoch, True, TV2)
    assert (reply.error, reply.producer_id, reply.producer_epoch) == (ErrorCode.NONE, pid, epoch + 1)
    assert txn.markers("t", 0) == [(pid, epoch + 1, True)]  # markers carry the new epoch: zombies are fenced
    retry = txn.coordinator.end_txn("a", pid, epoch, True, TV2)
    assert (retry.error, retry.producer_id, retry.producer_epoch) == (ErrorCode.NONE, pid, epoch + 1)
    # Abort with nothing added (a v2 client may): epoch bumps again, no marker is needed.
    reply = txn.coordinator.end_txn("a", pid, epoch + 1, False, TV2)
    assert (reply.error, reply.producer_epoch) == (ErrorCode.NONE, epoch + 2)
    assert txn.coordinator.metadata("a").state is S.COMPLETE_ABORT and len(txn.markers("t", 0)) == 1


def test_v2_next_end_while_the_markers_are_written_is_retried_not_fenced(txn: TxnHarness) -> None:
    """Issue 23, finding 3: commit, then at once abort a transaction that sent nothing (the Java client
    sends that EndTxn without any produce first) while the commit's marker cannot be written yet, as in a
    cluster where EndTxn answers once the markers are queued. The abort must be told to retry
    (CONCURRENT_TRANSACTIONS), not that its producer is fenced; once the marker is written it goes
    through, and the epochs follow Kafka's: one bump per end."""
    pid, epoch = txn.init("a")
    txn.begin("a", pid, epoch, [("t", 0)], version=TV2)
    txn.data.fail[("t", 0)] = ErrorCode.NOT_ENOUGH_REPLICAS  # the marker is retried until the ISR is back
    commit = txn.coordinator.end_txn("a", pid, epoch, True, TV2)
    assert (commit.error, commit.producer_epoch) == (ErrorCode.NONE, epoch + 1)
    md = txn.coordinator.metadata("a")
    assert (md.state, md.pending_state) == (S.PREPARE_COMMIT, S.COMPLETE_COMMIT)
    for retried in range(3):
        abort = txn.coordinator.end_txn("a", pid, commit.producer_epoch, False, TV2)
        assert abort.error == ErrorCode.CONCURRENT_TRANSACTIONS, retried
        txn.advance(20)
    assert txn.coordinator.end_txn("a", pid, epoch, True, TV2).error == ErrorCode.CONCURRENT_TRANSACTIONS
    del txn.data.fail[("t", 0)]
    txn.advance(100)
    assert md.state is S.COMPLETE_COMMIT and txn.markers("t", 0) == [(pid, epoch + 1, True)]
    abort = txn.coordinator.end_txn("a", pid, commit.producer_epoch, False, TV2)
    assert (abort.error, abort.producer_id, abort.producer_epoch) == (ErrorCode.NONE, pid, epoch + 2)
    txn.begin("a", pid, epoch + 2, [("t", 0)], version=TV2)  # the third transaction
    third = txn.coordinator.end_txn("a", pid, epoch + 2, True, TV2)
    assert (third.error, third.producer_epoch) == (ErrorCode.NONE, epoch + 3)
    assert txn.markers("t", 0) == [(pid, epoch + 1, True), (pid, epoch + 3, True)]


def test_v2_epoch_overflow_moves_to_a_new_producer_id(txn: TxnHarness) -> None:
    pid, epoch = txn.init("a")
    md = txn.coordinator.metadata("a")
    md.producer_epoch = epoch = 32766  # as after 32766 transactions
    txn.begin("a", pid, epoch, [("t", 0)], version=TV2)
    reply = txn.coordinator.end_txn("a", pid, epoch, True, TV2)
    assert reply.error == ErrorCode.NONE and reply.producer_id != pid and reply.producer_epoch == 0
    assert txn.markers("t", 0) == [(pid, 32767, True)]
    assert txn.coordinator.end_txn("a", pid, epoch, True, TV2) == reply  # a retry gets the same answer
    assert persisted(txn.restart(), "a")[:2] == (reply.producer_id, 0)


def test_verify_partitions(txn: TxnHarness) -> None:
    pid, epoch = txn.init("a")
    txn.begin("a", pid, epoch, [("t", 0)])
    c = txn.coordinator
    assert c.verify_partitions("a", pid, epoch, [("t", 0), ("t", 1)]) == {
        ("t", 0): ErrorCode.NONE, ("t", 1): ErrorCode.TRANSACTION_ABORTABLE}
    assert c.verify_partitions("a", pid, epoch + 1, [("t", 0)]) == {("t", 0): ErrorCode.PRODUCER_FENCED}
    assert c.verify_partitions("b", pid, epoch, [("t", 0)]) == {("t", 0): ErrorCode.INVALID_PRODUCER_ID_MAPPING}


def test_timed_out_transactions_are_aborted(txn: TxnHarness) -> None:
    pid, epoch = txn.init("a", timeout_ms=15_000)
    txn.begin("a", pid, epoch, [("t", 0)])
    txn.advance(10_000)
    assert txn.coordinator.metadata("a").state is S.ONGOING
    txn.advance(10_000)  # the abort timer runs every 10 s; the transaction is 20 s old
    md = txn.coordinator.metadata("a")
    assert md.state is S.COMPLETE_ABORT and md.producer_epoch == epoch + 1
    assert txn.markers("t", 0) == [(pid, epoch + 1, False)]
    assert txn.data.log("t", 0).last_stable_offset == 3
    assert txn.coordinator.end_txn("a", pid, epoch, True).error == ErrorCode.PRODUCER_FENCED


def test_idle_transactional_ids_expire(tmp_path) -> None:
    h = TxnHarness(tmp_path, transactional_id_expiration_ms=100_000,
                   remove_expired_transactional_ids_interval_ms=60_000)
    pid, _ = h.init("idle")
    pid2, epoch2 = h.init("busy")
    h.begin("busy", pid2, epoch2, [("t", 0)])  # Ongoing: never expires
    h.advance(120_000)
    assert h.coordinator.metadata("idle") is None and h.coordinator.metadata("busy") is not None
    assert h.restart().metadata("idle") is None  # the tombstone is in the log
    assert h.init("idle")[0] != pid  # a new producer id


def test_a_failed_write_changes_nothing(txn: TxnHarness) -> None:
    pid, epoch = txn.init("a")
    before = persisted(txn.coordinator, "a")
    for code, expected in ((ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.NOT_COORDINATOR),
                           (ErrorCode.NOT_ENOUGH_REPLICAS, ErrorCode.COORDINATOR_NOT_AVAILABLE)):
        txn.writer.fail_with = code
        assert txn.coordinator.add_partitions("a", pid, epoch, [("t", 0)]) == expected
        assert txn.coordinator.init_producer_id("a", TIMEOUT_MS).error == expected
        md = txn.coordinator.metadata("a")
        assert persisted(txn.coordinator, "a") == before and md.pending_state is None
    txn.writer.fail_with = None
    assert txn.init("a") == (pid, epoch + 1)


def test_a_failed_epoch_fence_is_not_bumped_twice(txn: TxnHarness) -> None:
    pid, epoch = txn.init("a")
    txn.begin("a", pid, epoch, [("t", 0)])
    txn.writer.fail_with = ErrorCode.NOT_ENOUGH_REPLICAS
    assert txn.coordinator.init_producer_id("a", TIMEOUT_MS).error == ErrorCode.COORDINATOR_NOT_AVAILABLE
    md = txn.coordinator.metadata("a")
    assert md.has_failed_epoch_fence and md.state is S.ONGOING and md.pending_state is None
    txn.writer.fail_with = None
    assert txn.coordinator.init_producer_id("a", TIMEOUT_MS).error == ErrorCode.CONCURRENT_TRANSACTIONS
    assert txn.markers("t", 0) == [(pid, epoch + 1, False)]  # one bump, whatever the failed fence did


def test_markers_are_retried_and_deleted_partitions_skipped(txn: TxnHarness) -> None:
    pid, epoch = txn.init("a")
    txn.begin("a", pid, epoch, [("t", 0), ("t", 1), ("gone", 0)])
    txn.data.fail[("t", 1)] = ErrorCode.NOT_LEADER_OR_FOLLOWER
    txn.data.fail[("gone", 0)] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION  # its topic was deleted
    assert txn.coordinator.end_txn("a", pid, epoch, True).error == ErrorCode.NONE  # decided
    md = txn.coordinator.metadata("a")
    assert (md.state, md.pending_state, md.topic_partitions) == (S.PREPARE_COMMIT, S.COMPLETE_COMMIT, {("t", 1)})
    assert txn.coordinator.add_partitions("a", pid, epoch, [("t", 0)]) == ErrorCode.CONCURRENT_TRANSACTIONS
    assert txn.coordinator.init_producer_id("a", TIMEOUT_MS).error == ErrorCode.CONCURRENT_TRANSACTIONS
    txn.advance(100)
    assert md.state is S.PREPARE_COMMIT  # still failing
    del txn.data.fail[("t", 1)]
    txn.advance(100)
    assert md.state is S.COMPLETE_COMMIT and txn.markers("t", 1) == [(pid, epoch, True)]


def test_a_completion_that_cannot_be_written_is_retried(txn: TxnHarness) -> None:
    pid, epoch = txn.init("a")
    txn.begin("a", pid, epoch, [("t", 0)])
    appends = txn.writer.appends
    original = txn.writer.append

    def fail_completion(partition: int, batch: bytes) -> int:
        if txn.writer.appends >= appends + 1:  # PrepareCommit goes through, CompleteCommit does not
            raise KafkaError(ErrorCode.NOT_ENOUGH_REPLICAS, "no ISR")
        return original(partition, batch)

    txn.writer.append = fail_completion
    assert txn.coordinator.end_txn("a", pid, epoch, True).error == ErrorCode.NONE
    md = txn.coordinator.metadata("a")
    assert (md.state, md.pending_state) == (S.PREPARE_COMMIT, S.COMPLETE_COMMIT)
    txn.writer.append = original
    txn.advance(100)
    assert (md.state, md.pending_state) == (S.COMPLETE_COMMIT, None)


def test_describe_and_list(txn: TxnHarness) -> None:
    pid, epoch = txn.init("a")
    txn.clock.advance(5)
    txn.begin("a", pid, epoch, [("t", 1), ("t", 0), ("u", 3)])
    pid_b, _ = txn.init("b")
    c = txn.coordinator
    a, missing, empty = c.describe_transactions(["a", "nope", ""])
    assert (a.error_code, a.transaction_state, a.producer_id, a.producer_epoch, a.transaction_timeout_ms) == (
        0, "Ongoing", pid, epoch, TIMEOUT_MS)
    assert a.transaction_start_time_ms == txn.clock.wall_ms()
    assert [(t.topic, t.partitions) for t in a.topics] == [("t", [0, 1]), ("u", [3])]
    assert missing.error_code == ErrorCode.TRANSACTIONAL_ID_NOT_FOUND and empty.error_code == ErrorCode.INVALID_REQUEST

    def listed(**filters):
        r = c.list_transactions(**filters)
        return r.error_code, sorted((s.transactional_id, s.producer_id, s.transaction_state)
                                    for s in r.transaction_states), r.unknown_state_filters

    assert listed() == (0, [("a", pid, "Ongoing"), ("b", pid_b, "Empty")], [])
    assert listed(state_filters=["Ongoing", "Bogus"]) == (0, [("a", pid, "Ongoing")], ["Bogus"])
    assert listed(producer_id_filters=[pid_b]) == (0, [("b", pid_b, "Empty")], [])
    assert listed(transactional_id_pattern="[ab]") == listed()
    assert listed(transactional_id_pattern="a.+") == (0, [], [])
    assert listed(transactional_id_pattern="(")[0] == ErrorCode.INVALID_REGULAR_EXPRESSION
    txn.clock.advance(1000)
    # Running longer than 500 ms: the Ongoing one; Empty has no start time (-1) and is always listed.
    assert [x[0] for x in listed(duration_filter_ms=500)[1]] == ["a", "b"]
    assert listed(duration_filter_ms=5000)[1] == [("b", pid_b, "Empty")]


def test_a_closed_coordinator_answers_not_available(txn: TxnHarness) -> None:
    txn.coordinator.close()
    assert txn.coordinator.init_producer_id("a", TIMEOUT_MS).error == ErrorCode.COORDINATOR_NOT_AVAILABLE
    assert txn.coordinator.list_transactions().error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE
