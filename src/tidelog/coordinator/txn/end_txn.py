"""EndTxn: what ending a transaction means in each state, for both transaction protocols.

The decision of Kafka's ``TransactionCoordinator.endTransaction``, kept apart from the writes: it
returns either a :class:`Reply` (answer now, write nothing) or a :class:`Prepare` (write this
PrepareCommit / PrepareAbort record; the markers follow). ``from_client=False`` is the coordinator
ending a transaction itself: a timeout, or a new producer instance fencing the old one (the
metadata then has ``pending_state`` PrepareEpochFence and the fenced epoch is the one to abort with).

Transaction version 0/1 (EndTxn v0-v4) -- after the producer id (INVALID_PRODUCER_ID_MAPPING), a
client's epoch must equal the current one, the coordinator's must not be older (PRODUCER_FENCED),
and no other change may be pending (CONCURRENT_TRANSACTIONS):

=============== ================== ==================
state           commit             abort
=============== ================== ==================
Ongoing         -> PrepareCommit   -> PrepareAbort
PrepareCommit   CONCURRENT_TRANS.  INVALID_TXN_STATE
PrepareAbort    INVALID_TXN_STATE  CONCURRENT_TRANS.
CompleteCommit  NONE (a retry)     INVALID_TXN_STATE
CompleteAbort   INVALID_TXN_STATE  NONE (a retry)
Empty           INVALID_TXN_STATE  INVALID_TXN_STATE
=============== ================== ==================

Transaction version 2 (EndTxn v5, KIP-890 part 2): every end bumps the epoch, so the request's epoch
tells a retry ("Retry": one below the current epoch, or the last epoch of a producer id that
overflowed to a new one) from the next EndTxn ("Current"); PrepareCommit/PrepareAbort accept only a
retry's epoch, Ongoing/Empty only the current one, else PRODUCER_FENCED. In the Complete states and
Empty (PF = PRODUCER_FENCED, ITS = INVALID_TXN_STATE, EB = a new PrepareAbort with the epoch bumped,
NONE = no error, no write)::

                    abort: retry  current    commit: retry  current
    Empty                  PF     EB                 PF     ITS
    CompleteAbort          NONE   EB                 ITS    ITS
    CompleteCommit         ITS    EB                 NONE   ITS

Ongoing, PrepareCommit and PrepareAbort follow the first table. A version-2 reply without error
carries the producer id and epoch the client must use next. Unlike version 1, a pending change (other
than an epoch fence) is checked before the producer id and epoch: while a transaction's markers are
written (Prepare* with Complete* pending) the producer's next EndTxn already carries the bumped epoch,
which Prepare* does not accept, and gets CONCURRENT_TRANSACTIONS (the client retries) instead of
PRODUCER_FENCED (fatal for the client), as with Kafka.

Changes only ``pending_state`` (through the ``prepare_*`` methods) and, for a version-1 epoch fence,
the epoch fields of the metadata, as Kafka does. A version-2 fence aborts from the current epoch, bumped
once (the fenced producer's markers carry current + 1, the next InitProducerId hands out current + 2).
Loop-only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tidelog.coordinator.txn.metadata import IllegalTransition, TransactionMetadata, TxnTransitMetadata
from tidelog.coordinator.txn.state import (
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    SHORT_MAX,
    TransactionState,
    TransactionVersion,
)
from tidelog.errors import ErrorCode

S = TransactionState


@dataclass(frozen=True, slots=True)
class Reply:
    """Answer without writing anything."""

    error: ErrorCode
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH


@dataclass(frozen=True, slots=True)
class Prepare:
    """Write ``transit`` (PrepareCommit or PrepareAbort), then the markers."""

    transit: TxnTransitMetadata
    is_epoch_fence: bool


def _invalid(md: TransactionMetadata, commit: bool) -> Reply:
    return Reply(ErrorCode.INVALID_TXN_STATE)


def _impossible(md: TransactionMetadata) -> IllegalTransition:
    return IllegalTransition(f"{md.transactional_id} is in state {md.state.value}, which is never observed")


def _clear_fence(md: TransactionMetadata, epoch: int) -> None:
    """An epoch fence becomes the PrepareAbort about to be prepared, with the fenced epoch."""
    md.pending_state = None
    md.producer_epoch = epoch
    md.last_producer_epoch = NO_PRODUCER_EPOCH


def decide_v1(md: TransactionMetadata, producer_id: int, producer_epoch: int, commit: bool, *,
              from_client: bool, now_ms: int) -> Reply | Prepare:
    if md.producer_id != producer_id:
        return Reply(ErrorCode.INVALID_PRODUCER_ID_MAPPING)
    if (from_client and producer_epoch != md.producer_epoch) or producer_epoch < md.producer_epoch:
        return Reply(ErrorCode.PRODUCER_FENCED)
    if md.pending_state is not None and md.pending_state is not S.PREPARE_EPOCH_FENCE:
        return Reply(ErrorCode.CONCURRENT_TRANSACTIONS)
    state = md.state
    if state is S.ONGOING:
        target = S.PREPARE_COMMIT if commit else S.PREPARE_ABORT
        fence = target is S.PREPARE_ABORT and md.pending_state is S.PREPARE_EPOCH_FENCE
        if fence:
            _clear_fence(md, producer_epoch)
        transit = md.prepare_abort_or_commit(target, TransactionVersion.TV_0, NO_PRODUCER_ID, now_ms, False)
        return Prepare(transit, fence)
    if state is S.COMPLETE_COMMIT:
        return Reply(ErrorCode.NONE) if commit else _invalid(md, commit)
    if state is S.COMPLETE_ABORT:
        return Reply(ErrorCode.NONE) if not commit else _invalid(md, commit)
    if state is S.PREPARE_COMMIT:
        return Reply(ErrorCode.CONCURRENT_TRANSACTIONS) if commit else _invalid(md, commit)
    if state is S.PREPARE_ABORT:
        return Reply(ErrorCode.CONCURRENT_TRANSACTIONS) if not commit else _invalid(md, commit)
    if state is S.EMPTY:
        return _invalid(md, commit)
    raise _impossible(md)


def decide_v2(md: TransactionMetadata, producer_id: int, producer_epoch: int, commit: bool, *,
              from_client: bool, client_version: TransactionVersion, now_ms: int,
              new_producer_id: Callable[[], int]) -> Reply | Prepare:
    current = (md.producer_id, md.producer_epoch)
    fence = md.pending_state is S.PREPARE_EPOCH_FENCE
    # A retry after the epoch overflowed to a new producer id, or after the bump of this one.
    retry_on_overflow = (not fence and md.prev_producer_id == producer_id and producer_epoch == SHORT_MAX - 1
                         and md.producer_epoch == 0)
    retry_on_bump = not fence and md.producer_epoch == producer_epoch + 1
    is_retry = retry_on_bump or retry_on_overflow
    state = md.state
    if fence:
        valid_epoch = (not from_client or producer_epoch == md.producer_epoch) and producer_epoch >= md.producer_epoch
    elif state in (S.ONGOING, S.EMPTY, S.DEAD, S.PREPARE_EPOCH_FENCE):
        valid_epoch = producer_epoch == md.producer_epoch
    elif state.is_prepare:
        valid_epoch = retry_on_bump
    else:  # CompleteCommit, CompleteAbort
        valid_epoch = is_retry or producer_epoch == md.producer_epoch

    def prepare(target: TransactionState, no_partition_added: bool) -> Prepare:
        # Version 2 bumps the epoch of every end, a fencing abort's too: the fence's own bump is dropped
        # (only its pending state is cleared), and an exhausted epoch moves to a new producer id either way
        # (Kafka 4.x; before it, the fenced epoch was bumped again and an exhausted one was not rotated).
        next_id = new_producer_id() if md.is_producer_epoch_exhausted else NO_PRODUCER_ID
        if target is S.PREPARE_ABORT and fence:
            md.pending_state = None
        return Prepare(md.prepare_abort_or_commit(target, client_version, next_id, now_ms, no_partition_added), fence)

    # A pending change comes first (Kafka 4.x does the same): while the previous end's markers are written
    # (its Complete state pending) the next EndTxn carries the epoch that end bumped to, which the Prepare
    # state does not accept; it must be told to retry, not that it is fenced.
    if md.pending_state is not None and not fence:
        return Reply(ErrorCode.CONCURRENT_TRANSACTIONS)
    if md.producer_id != producer_id and not retry_on_overflow:
        return Reply(ErrorCode.INVALID_PRODUCER_ID_MAPPING)
    if not valid_epoch:
        return Reply(ErrorCode.PRODUCER_FENCED)
    if state is S.ONGOING:
        return prepare(S.PREPARE_COMMIT if commit else S.PREPARE_ABORT, False)
    if state is S.COMPLETE_COMMIT:
        if commit:
            return Reply(ErrorCode.NONE, *current) if is_retry else _invalid(md, commit)
        return _invalid(md, commit) if is_retry else prepare(S.PREPARE_ABORT, True)
    if state is S.COMPLETE_ABORT:
        if not commit:
            return Reply(ErrorCode.NONE, *current) if is_retry else prepare(S.PREPARE_ABORT, True)
        return _invalid(md, commit)
    if state is S.PREPARE_COMMIT:
        return Reply(ErrorCode.CONCURRENT_TRANSACTIONS) if commit else _invalid(md, commit)
    if state is S.PREPARE_ABORT:
        return Reply(ErrorCode.CONCURRENT_TRANSACTIONS) if not commit else _invalid(md, commit)
    if state is S.EMPTY:
        return prepare(S.PREPARE_ABORT, True) if not commit else _invalid(md, commit)
    raise _impossible(md)


__all__ = ["Prepare", "Reply", "decide_v1", "decide_v2"]
