"""EndTxn's decision in every state, for both protocols (Kafka's tables, written out here)."""

from __future__ import annotations

import pytest

from tidelog.coordinator.txn.end_txn import Prepare, Reply, decide_v1, decide_v2
from tidelog.coordinator.txn.metadata import TransactionMetadata
from tidelog.coordinator.txn.state import TransactionState, TransactionVersion
from tidelog.errors import ErrorCode

S = TransactionState
PID, EPOCH = 10, 5
NONE, ITS, CT, PF = (ErrorCode.NONE, ErrorCode.INVALID_TXN_STATE, ErrorCode.CONCURRENT_TRANSACTIONS,
                     ErrorCode.PRODUCER_FENCED)
PC, PA = S.PREPARE_COMMIT, S.PREPARE_ABORT


def md_in(state: TransactionState, epoch: int = EPOCH) -> TransactionMetadata:
    parts = {("t", 0)} if state in (S.ONGOING, PC, PA) else set()
    return TransactionMetadata("tx", PID, producer_epoch=epoch, state=state, topic_partitions=parts,
                               txn_start_timestamp=100, txn_last_update_timestamp=100)


def outcome(decision: Reply | Prepare):
    return decision.transit.state if isinstance(decision, Prepare) else decision.error


V1 = {  # state: (commit, abort)
    S.ONGOING: (PC, PA),
    PC: (CT, ITS),
    PA: (ITS, CT),
    S.COMPLETE_COMMIT: (NONE, ITS),
    S.COMPLETE_ABORT: (ITS, NONE),
    S.EMPTY: (ITS, ITS),
}


@pytest.mark.parametrize("state", list(V1), ids=lambda s: s.value)
@pytest.mark.parametrize("commit", [True, False], ids=["commit", "abort"])
def test_v1_table(state: TransactionState, commit: bool) -> None:
    decision = decide_v1(md_in(state), PID, EPOCH, commit, from_client=True, now_ms=200)
    assert outcome(decision) == V1[state][0 if commit else 1]


@pytest.mark.parametrize("state", list(V1), ids=lambda s: s.value)
def test_v1_identity_checks_come_first(state: TransactionState) -> None:
    assert outcome(decide_v1(md_in(state), PID + 1, EPOCH, True, from_client=True, now_ms=0)) == \
        ErrorCode.INVALID_PRODUCER_ID_MAPPING
    for epoch in (EPOCH - 1, EPOCH + 1):  # a client's epoch must be the current one
        assert outcome(decide_v1(md_in(state), PID, epoch, True, from_client=True, now_ms=0)) == PF
    pending = md_in(state)
    pending.pending_state = S.ONGOING
    assert outcome(decide_v1(pending, PID, EPOCH, True, from_client=True, now_ms=0)) == CT


# (state, commit?, retry?) -> outcome. "Retry": the epoch before the bump; "current": the epoch now.
V2 = {
    (S.EMPTY, False, True): PF, (S.EMPTY, False, False): PA,
    (S.EMPTY, True, True): PF, (S.EMPTY, True, False): ITS,
    (S.COMPLETE_ABORT, False, True): NONE, (S.COMPLETE_ABORT, False, False): PA,
    (S.COMPLETE_ABORT, True, True): ITS, (S.COMPLETE_ABORT, True, False): ITS,
    (S.COMPLETE_COMMIT, False, True): ITS, (S.COMPLETE_COMMIT, False, False): PA,
    (S.COMPLETE_COMMIT, True, True): NONE, (S.COMPLETE_COMMIT, True, False): ITS,
    (S.ONGOING, True, False): PC, (S.ONGOING, False, False): PA,
    (S.ONGOING, True, True): PF, (S.ONGOING, False, True): PF,
    (PC, True, True): CT, (PC, False, True): ITS, (PC, True, False): PF,
    (PA, False, True): CT, (PA, True, True): ITS, (PA, False, False): PF,
}


@pytest.mark.parametrize(("state", "commit", "retry"), list(V2),
                         ids=lambda x: x.value if isinstance(x, TransactionState) else str(x))
def test_v2_table(state: TransactionState, commit: bool, retry: bool) -> None:
    md = md_in(state)
    decision = decide_v2(md, PID, EPOCH - 1 if retry else EPOCH, commit, from_client=True,
                         client_version=TransactionVersion.TV_2, now_ms=200, new_producer_id=lambda: 999)
    assert outcome(decision) == V2[(state, commit, retry)]
    if isinstance(decision, Prepare):
        assert (decision.transit.producer_epoch, decision.transit.last_producer_epoch) == (EPOCH + 1, EPOCH)
    elif decision.error == NONE:  # a retry learns the ids to use next
        assert (decision.producer_id, decision.producer_epoch) == (PID, EPOCH)


def test_v2_retry_after_an_epoch_overflow_is_recognised() -> None:
    md = md_in(S.COMPLETE_COMMIT, epoch=0)
    md.producer_id, md.prev_producer_id = 2000, PID  # the id moved on after epoch 32767
    decision = decide_v2(md, PID, 32766, True, from_client=True, client_version=TransactionVersion.TV_2,
                         now_ms=0, new_producer_id=lambda: 999)
    assert decision == Reply(NONE, 2000, 0)


def test_v2_exhausted_epoch_gets_the_next_producer_id() -> None:
    md = md_in(S.ONGOING, epoch=32766)
    decision = decide_v2(md, PID, 32766, True, from_client=True, client_version=TransactionVersion.TV_2,
                         now_ms=0, new_producer_id=lambda: 4242)
    assert isinstance(decision, Prepare) and decision.transit.next_producer_id == 4242


def test_a_v2_epoch_fence_at_an_exhausted_epoch_moves_to_a_new_producer_id() -> None:
    md = md_in(S.ONGOING, epoch=32766)
    fence = md.prepare_fence_producer_epoch()
    decision = decide_v2(md, PID, fence.producer_epoch, False, from_client=False,
                         client_version=TransactionVersion.TV_2, now_ms=0, new_producer_id=lambda: 4242)
    assert isinstance(decision, Prepare) and decision.is_epoch_fence
    assert (decision.transit.producer_epoch, decision.transit.next_producer_id) == (32767, 4242)


@pytest.mark.parametrize("decide", ["v1", "v2"])
def test_an_epoch_fence_aborts_with_the_fenced_epoch(decide: str) -> None:
    md = md_in(S.ONGOING)
    fence = md.prepare_fence_producer_epoch()
    if decide == "v1":
        decision = decide_v1(md, PID, fence.producer_epoch, False, from_client=False, now_ms=0)
        expected_epoch = EPOCH + 1
    else:
        decision = decide_v2(md, PID, fence.producer_epoch, False, from_client=False,
                             client_version=TransactionVersion.TV_2, now_ms=0, new_producer_id=lambda: 1)
        expected_epoch = EPOCH + 1  # v2's own bump from the current epoch: the fence's bump is dropped
    assert isinstance(decision, Prepare) and decision.is_epoch_fence
    assert decision.transit.state is PA and decision.transit.producer_epoch == expected_epoch
    assert md.pending_state is PA


@pytest.mark.parametrize("state", [PC, PA], ids=lambda s: s.value)
@pytest.mark.parametrize("commit", [True, False], ids=["commit", "abort"])
@pytest.mark.parametrize("retry", [True, False], ids=["retry", "next"])
def test_v2_while_the_markers_are_written_the_answer_is_retry_later(state: TransactionState, commit: bool,
                                                                    retry: bool) -> None:
    # Issue 23, finding 3: the Java client's next EndTxn (an abort of a transaction that sent nothing, or a
    # commit) came while the previous one's markers were still being written; it carries the epoch that
    # end bumped to, and Kafka checks the pending Complete* first: CONCURRENT_TRANSACTIONS, which the
    # client retries. Tidelog answered PRODUCER_FENCED, fatal for the client.
    md = md_in(state)
    md.pending_state = S.COMPLETE_COMMIT if state is PC else S.COMPLETE_ABORT
    decision = decide_v2(md, PID, EPOCH - 1 if retry else EPOCH, commit, from_client=True,
                         client_version=TransactionVersion.TV_2, now_ms=200, new_producer_id=lambda: 999)
    assert outcome(decision) == CT
    # An unknown producer id or a stale epoch is refused as such once nothing is pending.
    md.pending_state = None
    assert outcome(decide_v2(md, PID + 1, EPOCH, commit, from_client=True, client_version=TransactionVersion.TV_2,
                             now_ms=200, new_producer_id=lambda: 999)) == ErrorCode.INVALID_PRODUCER_ID_MAPPING
    assert outcome(decide_v2(md, PID, EPOCH - 2, commit, from_client=True, client_version=TransactionVersion.TV_2,
                             now_ms=200, new_producer_id=lambda: 999)) == PF
