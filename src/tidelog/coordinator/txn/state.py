"""The states of a transactional id, their allowed transitions, and the transaction versions.

Kafka's ``TransactionState`` (the display names are what DescribeTransactions and ListTransactions
return, the ids what ``__transaction_state`` stores). Each state with its action and transition:

================== == ================================================================================
state              id what happens next
================== == ================================================================================
Empty              0  no transaction yet (after InitProducerId): AddPartitionsToTxn / AddOffsetsToTxn
                      -> Ongoing; EndTxn(abort) of a KIP-890 (v2) client -> PrepareAbort
Ongoing            1  a transaction is open: more partitions -> Ongoing; EndTxn(commit) -> PrepareCommit;
                      EndTxn(abort), a timeout or a new producer instance -> PrepareAbort (a new
                      instance or a timeout first fences the epoch: PrepareEpochFence, in memory only)
PrepareCommit      2  decided: the COMMIT markers are being written -> CompleteCommit
PrepareAbort       3  decided: the ABORT markers are being written -> CompleteAbort
CompleteCommit     4  done: the next transaction may start (-> Ongoing), InitProducerId -> Empty
CompleteAbort      5  done: as CompleteCommit
Dead               6  the id expired (transactional.id.expiration.ms): its tombstone is being written
PrepareEpochFence  7  the epoch is being bumped to fence a producer: never written, always followed by
                      PrepareAbort in the same step
================== == ================================================================================

Rule: a transition to state S is allowed only from the states in ``VALID_PREVIOUS_STATES[S]``
(Kafka 4.x's table, which lets a v2 client abort from Empty and the Complete states). Expiration of
an id is allowed only from Empty, CompleteCommit and CompleteAbort.

Transaction versions (Kafka's ``transaction.version`` feature): 0 is the original protocol, 1 writes
the flexible ``__transaction_state`` value (version 1), 2 is KIP-890 part 2: the producer epoch is
bumped at the end of every transaction (EndTxn v5), and partitions join a transaction through the
Produce (v12) and TxnOffsetCommit (v5) requests that write to them.

Immutable tables; safe from any thread.
"""

from __future__ import annotations

from enum import Enum, IntEnum

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
SHORT_MAX = (1 << 15) - 1


class TransactionState(Enum):
    EMPTY = "Empty"
    ONGOING = "Ongoing"
    PREPARE_COMMIT = "PrepareCommit"
    PREPARE_ABORT = "PrepareAbort"
    COMPLETE_COMMIT = "CompleteCommit"
    COMPLETE_ABORT = "CompleteAbort"
    DEAD = "Dead"
    PREPARE_EPOCH_FENCE = "PrepareEpochFence"

    @property
    def id(self) -> int:
        return _IDS[self]

    @classmethod
    def from_id(cls, state_id: int) -> TransactionState:
        """The state stored as ``state_id``; ValueError for an unknown id."""
        for state, i in _IDS.items():
            if i == state_id:
                return state
        raise ValueError(f"unknown transaction state id {state_id}")

    @classmethod
    def from_name(cls, name: str) -> TransactionState | None:
        """The state with this display name (ListTransactions' state filter), or None."""
        try:
            return cls(name)
        except ValueError:
            return None

    @property
    def is_expiration_allowed(self) -> bool:
        return self in _EXPIRABLE

    @property
    def is_complete(self) -> bool:
        return self in (TransactionState.COMPLETE_COMMIT, TransactionState.COMPLETE_ABORT)

    @property
    def is_prepare(self) -> bool:
        return self in (TransactionState.PREPARE_COMMIT, TransactionState.PREPARE_ABORT)


S = TransactionState
_IDS = {S.EMPTY: 0, S.ONGOING: 1, S.PREPARE_COMMIT: 2, S.PREPARE_ABORT: 3, S.COMPLETE_COMMIT: 4,
        S.COMPLETE_ABORT: 5, S.DEAD: 6, S.PREPARE_EPOCH_FENCE: 7}
_EXPIRABLE = frozenset({S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT})

#: target state -> the states it may be reached from.
VALID_PREVIOUS_STATES: dict[TransactionState, frozenset[TransactionState]] = {
    S.EMPTY: frozenset({S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.ONGOING: frozenset({S.ONGOING, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.PREPARE_COMMIT: frozenset({S.ONGOING}),
    S.PREPARE_ABORT: frozenset({S.ONGOING, S.PREPARE_EPOCH_FENCE, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.COMPLETE_COMMIT: frozenset({S.PREPARE_COMMIT}),
    S.COMPLETE_ABORT: frozenset({S.PREPARE_ABORT}),
    S.DEAD: frozenset({S.EMPTY, S.COMPLETE_ABORT, S.COMPLETE_COMMIT}),
    S.PREPARE_EPOCH_FENCE: frozenset({S.ONGOING}),
}


def is_valid_transition(current: TransactionState, target: TransactionState) -> bool:
    return current in VALID_PREVIOUS_STATES[target]


class TransactionVersion(IntEnum):
    """Kafka's ``transaction.version`` feature levels."""

    TV_0 = 0
    TV_1 = 1
    TV_2 = 2

    @property
    def supports_epoch_bump(self) -> bool:
        """KIP-890 part 2: every EndTxn bumps the producer epoch."""
        return self >= TransactionVersion.TV_2

    @property
    def log_value_version(self) -> int:
        """The ``TransactionLogValue`` version written at this level (1 is the flexible one)."""
        return 0 if self == TransactionVersion.TV_0 else 1


def is_epoch_exhausted(producer_epoch: int) -> bool:
    """No epoch equal to ``Short.MAX_VALUE`` is handed out, so that a producer can always be fenced."""
    return producer_epoch >= SHORT_MAX - 1


__all__ = [
    "NO_PRODUCER_EPOCH",
    "NO_PRODUCER_ID",
    "SHORT_MAX",
    "VALID_PREVIOUS_STATES",
    "TransactionState",
    "TransactionVersion",
    "is_epoch_exhausted",
    "is_valid_transition",
]
