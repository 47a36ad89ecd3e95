"""What the transaction coordinator knows about one transactional id, and its prepared transitions.

Kafka's ``TransactionMetadata`` and ``TxnTransitMetadata``. Rules:

1. **Prepare, append, complete.** A change starts with a ``prepare_*`` method: it checks the
   transition against :data:`~tidelog.coordinator.txn.state.VALID_PREVIOUS_STATES`, sets
   ``pending_state`` and returns an immutable :class:`TxnTransitMetadata` (the full target state,
   which is also the ``__transaction_state`` record). The caller appends it; only after a successful
   append does :meth:`TransactionMetadata.complete_transition_to` apply it. A failed append clears
   ``pending_state`` and nothing else changes.
2. **One change at a time.** While ``pending_state`` is set, another prepare is a programming error
   (:class:`IllegalTransition`); the coordinator answers CONCURRENT_TRANSACTIONS before it gets there.
3. **Epochs.** InitProducerId bumps the epoch (or rotates the producer id when the epoch is
   exhausted, ``Short.MAX_VALUE - 1``); fencing an open transaction bumps it once more; with
   transaction version 2 every EndTxn bumps it too (``last_producer_epoch`` keeps the epoch the
   client used, so a retried EndTxn is recognised) and, when that exhausts the epoch, the id moves to
   ``next_producer_id`` at epoch 0 once the markers are written.
4. **Partitions.** ``topic_partitions`` holds the partitions of the open transaction; while the
   markers are written (Prepare* state) each partition whose marker is written is removed, and the
   transaction completes when none is left.
5. **Loaded state.** A record replayed at load gives every field but ``last_producer_epoch``,
   which Kafka does not persist either (it is -1 after a coordinator restart).

Concurrency: loop-only, not thread-safe; :class:`TxnTransitMetadata` is immutable.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace

from tidelog.coordinator.txn.state import (
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    SHORT_MAX,
    TransactionState,
    TransactionVersion,
    is_epoch_exhausted,
    is_valid_transition,
)
from tidelog.errors import ErrorCode, KafkaError

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]
S = TransactionState


class IllegalTransition(RuntimeError):
    """A transition the state table forbids, or a completion that does not match what was prepared."""


@dataclass(frozen=True, slots=True)
class TxnTransitMetadata:
    """The whole state of a transactional id after a transition (the value of its log record)."""

    producer_id: int
    prev_producer_id: int
    next_producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    txn_timeout_ms: int
    state: TransactionState
    topic_partitions: frozenset[TopicPartition]
    txn_start_timestamp: int
    txn_last_update_timestamp: int
    client_transaction_version: TransactionVersion = TransactionVersion.TV_0


@dataclass
class TransactionMetadata:
    transactional_id: str
    producer_id: int
    prev_producer_id: int = NO_PRODUCER_ID
    next_producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    last_producer_epoch: int = NO_PRODUCER_EPOCH
    txn_timeout_ms: int = 60_000
    state: TransactionState = S.EMPTY
    topic_partitions: set[TopicPartition] = field(default_factory=set)
    txn_start_timestamp: int = -1
    txn_last_update_timestamp: int = -1
    client_transaction_version: TransactionVersion = TransactionVersion.TV_0
    pending_state: TransactionState | None = None
    #: An epoch fence was prepared but its append failed: the next fence does not bump again.
    has_failed_epoch_fence: bool = False

    @classmethod
    def from_transit(cls, transactional_id: str, t: TxnTransitMetadata) -> TransactionMetadata:
        """The state a replayed record describes (rule 5)."""
        return cls(transactional_id, t.producer_id, t.prev_producer_id, t.next_producer_id, t.producer_epoch,
                   NO_PRODUCER_EPOCH, t.txn_timeout_ms, t.state, set(t.topic_partitions), t.txn_start_timestamp,
                   t.txn_last_update_timestamp, t.client_transaction_version)

    # ------------------------------------------------------------------------------- queries

    @property
    def pending_transition_in_progress(self) -> bool:
        return self.pending_state is not None

    @property
    def is_producer_epoch_exhausted(self) -> bool:
        return is_epoch_exhausted(self.producer_epoch)

    @property
    def has_pending_transaction(self) -> bool:
        return self.state in (S.ONGOING, S.PREPARE_ABORT, S.PREPARE_COMMIT)

    def snapshot(self) -> TxnTransitMetadata:
        """The current state as a transit (what a record written now would hold)."""
        return TxnTransitMetadata(self.producer_id, self.prev_producer_id, self.next_producer_id, self.producer_epoch,
                                  self.last_producer_epoch, self.txn_timeout_ms, self.state,
                                  frozenset(self.topic_partitions), self.txn_start_timestamp,
                                  self.txn_last_update_timestamp, self.client_transaction_version)

    def remove_partition(self, tp: TopicPartition) -> None:
        """A partition's marker was written (rule 4)."""
        if not self.state.is_prepare:
            raise IllegalTransition(f"{self.transactional_id}: removing {tp} in state {self.state.value}")
        self.topic_partitions.discard(tp)

    # ------------------------------------------------------------------------------ prepares

    def prepare_fence_producer_epoch(self) -> TxnTransitMetadata:
        """Bump the epoch to fence the current producer (its transaction is then aborted)."""
        if self.producer_epoch == SHORT_MAX:
            log.error("fencing %s (producer %d) at epoch Short.MAX_VALUE", self.transactional_id, self.producer_id)
        bump = not self.has_failed_epoch_fence and self.producer_epoch != SHORT_MAX
        return self._prepare(S.PREPARE_EPOCH_FENCE, producer_epoch=self.producer_epoch + (1 if bump else 0))

    def prepare_increment_producer_epoch(self, timeout_ms: int, expected_epoch: int | None,
                                         now_ms: int) -> TxnTransitMetadata:
        """InitProducerId on an idle id: the next epoch; KafkaError(PRODUCER_FENCED) when the
        ``expected_epoch`` (KIP-360 recovery) is neither the current nor the previous epoch."""
        if self.is_producer_epoch_exhausted:
            raise IllegalTransition(f"no producer epoch left for producer {self.producer_id}")
        bumped = self.producer_epoch + 1
        if expected_epoch is None:
            epoch, last = bumped, NO_PRODUCER_EPOCH
        elif self.producer_epoch == NO_PRODUCER_EPOCH or expected_epoch == self.producer_epoch:
            epoch, last = bumped, self.producer_epoch
        elif expected_epoch == self.last_producer_epoch:
            epoch, last = self.producer_epoch, self.last_producer_epoch  # a retry of a call that succeeded
        else:
            raise KafkaError(ErrorCode.PRODUCER_FENCED,
                             f"expected epoch {expected_epoch} is neither the current epoch {self.producer_epoch} "
                             f"nor the previous one {self.last_producer_epoch}")
        return self._prepare(S.EMPTY, producer_epoch=epoch, last_producer_epoch=last, txn_timeout_ms=timeout_ms,
                             topic_partitions=frozenset(), txn_start_timestamp=-1, txn_last_update_timestamp=now_ms)

    def prepare_producer_id_rotation(self, new_producer_id: int, timeout_ms: int, now_ms: int,
                                     record_last_epoch: bool) -> TxnTransitMetadata:
        """InitProducerId when the epoch is exhausted: a new producer id at epoch 0."""
        if self.has_pending_transaction:
            raise IllegalTransition("cannot rotate producer ids while a transaction is pending")
        return self._prepare(S.EMPTY, producer_id=new_producer_id, producer_epoch=0,
                             last_producer_epoch=self.producer_epoch if record_last_epoch else NO_PRODUCER_EPOCH,
                             txn_timeout_ms=timeout_ms, topic_partitions=frozenset(), txn_start_timestamp=-1,
                             txn_last_update_timestamp=now_ms)

    def prepare_add_partitions(self, partitions: frozenset[TopicPartition], now_ms: int,
                               client_version: TransactionVersion) -> TxnTransitMetadata:
        start = now_ms if self.state in (S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT) else self.txn_start_timestamp
        return self._prepare(S.ONGOING, topic_partitions=frozenset(self.topic_partitions | partitions),
                             txn_start_timestamp=start, txn_last_update_timestamp=now_ms,
                             client_transaction_version=client_version)

    def prepare_abort_or_commit(self, target: TransactionState, client_version: TransactionVersion,
                                next_producer_id: int, now_ms: int, no_partition_added: bool) -> TxnTransitMetadata:
        if client_version.supports_epoch_bump:
            if self.producer_epoch == SHORT_MAX and target is S.PREPARE_ABORT:
                log.error("aborting %s (producer %d) at epoch Short.MAX_VALUE", self.transactional_id, self.producer_id)
                epoch = self.producer_epoch
            else:
                epoch = self.producer_epoch + 1
            last = self.producer_epoch
        else:
            epoch, last = self.producer_epoch, self.last_producer_epoch
        # A v2 client may abort without having added anything: the start time is then now.
        start = now_ms if no_partition_added else self.txn_start_timestamp
        return self._prepare(target, producer_epoch=epoch, last_producer_epoch=last, next_producer_id=next_producer_id,
                             txn_start_timestamp=start, txn_last_update_timestamp=now_ms,
                             client_transaction_version=client_version)

    def prepare_complete(self, now_ms: int) -> TxnTransitMetadata:
        """Every marker is written: CompleteCommit or CompleteAbort (rule 3 for an exhausted epoch)."""
        self.has_failed_epoch_fence = False
        target = S.COMPLETE_COMMIT if self.state is S.PREPARE_COMMIT else S.COMPLETE_ABORT
        if self.client_transaction_version.supports_epoch_bump and self.next_producer_id != NO_PRODUCER_ID:
            producer_id, epoch = self.next_producer_id, 0
        else:
            producer_id, epoch = self.producer_id, self.producer_epoch
        return self._prepare(target, producer_id=producer_id, producer_epoch=epoch, next_producer_id=NO_PRODUCER_ID,
                             topic_partitions=frozenset(), txn_last_update_timestamp=now_ms)

    def prepare_dead(self) -> TxnTransitMetadata:
        """transactional.id.expiration.ms passed: the id's tombstone is about to be written."""
        return self._prepare(S.DEAD, topic_partitions=frozenset())

    def _prepare(self, target: TransactionState, **changes: object) -> TxnTransitMetadata:
        if self.pending_state is not None:
            raise IllegalTransition(f"{self.transactional_id}: preparing {target.value} while "
                                    f"{self.pending_state.value} is pending")
        transit = replace(self.snapshot(), state=target, prev_producer_id=self.producer_id, **changes)
        if transit.producer_id < 0:
            raise IllegalTransition(f"illegal producer id {transit.producer_id}")
        if target is not S.DEAD and transit.producer_epoch < 0:
            raise IllegalTransition(f"illegal producer epoch {transit.producer_epoch}")
        if not is_valid_transition(self.state, target):
            raise IllegalTransition(f"{self.transactional_id}: {target.value} cannot follow {self.state.value}")
        self.pending_state = target
        return transit

    # ------------------------------------------------------------------------------ complete

    def complete_transition_to(self, t: TxnTransitMetadata) -> None:
        """Apply a prepared transition once its record is in the log (rule 1). IllegalTransition if
        it is not the one prepared or does not follow from the current state."""
        if self.pending_state is None or self.pending_state is not t.state:
            raise IllegalTransition(f"{self.transactional_id}: completing {t.state.value}, "
                                    f"pending {self.pending_state.value if self.pending_state else None}")
        target = t.state
        if target is S.EMPTY:
            ok = ((self.producer_epoch == t.producer_epoch or self._valid_epoch_bump(t))
                  and not t.topic_partitions and t.txn_start_timestamp == -1)
        elif target is S.ONGOING:
            ok = (self._valid_epoch(t) and self.topic_partitions <= t.topic_partitions
                  and self.txn_timeout_ms == t.txn_timeout_ms)
        elif target.is_prepare:
            empty_abort = (target is S.PREPARE_ABORT and t.client_transaction_version.supports_epoch_bump
                           and self.state in (S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT))
            ok = (self._valid_epoch(t) and set(self.topic_partitions) == set(t.topic_partitions)
                  and self.txn_timeout_ms == t.txn_timeout_ms
                  and (self.txn_start_timestamp == t.txn_start_timestamp or empty_abort))
        elif target.is_complete:
            ok = self._valid_epoch(t) and self.txn_timeout_ms == t.txn_timeout_ms and t.txn_start_timestamp != -1
        else:  # PrepareEpochFence is never written; Dead ends with removal from the cache
            ok = False
        if not ok:
            raise IllegalTransition(f"{self.transactional_id}: unexpected transition from {self} to {t}")
        self.producer_id, self.prev_producer_id, self.next_producer_id = t.producer_id, t.prev_producer_id, \
            t.next_producer_id
        self.producer_epoch, self.last_producer_epoch = t.producer_epoch, t.last_producer_epoch
        self.txn_timeout_ms = t.txn_timeout_ms
        self.topic_partitions = set(t.topic_partitions)
        self.txn_start_timestamp, self.txn_last_update_timestamp = t.txn_start_timestamp, t.txn_last_update_timestamp
        self.client_transaction_version = t.client_transaction_version
        self.pending_state = None
        self.state = target

    def _valid_epoch(self, t: TxnTransitMetadata) -> bool:
        """Kafka's validProducerEpoch: with v2 a Prepare* carries the bumped epoch (its last epoch is
        the current one) and an overflowing Complete* moves to the next producer id at epoch 0."""
        v2 = t.client_transaction_version.supports_epoch_bump
        if v2 and t.state.is_complete and t.producer_epoch == 0:
            return t.last_producer_epoch == self.last_producer_epoch and t.prev_producer_id == self.producer_id
        if v2 and t.state.is_prepare:
            return t.last_producer_epoch == self.producer_epoch and t.producer_id == self.producer_id
        return t.producer_epoch == self.producer_epoch and t.producer_id == self.producer_id

    def _valid_epoch_bump(self, t: TxnTransitMetadata) -> bool:
        return t.producer_epoch == self.producer_epoch + 1 or (t.producer_epoch == 0 and t.producer_id != self.producer_id)


__all__ = ["IllegalTransition", "TopicPartition", "TransactionMetadata", "TxnTransitMetadata"]
