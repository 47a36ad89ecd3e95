"""The transaction coordinator (``__transaction_state``, KIP-98 and KIP-890) and producer id allocation."""

from tidelog.coordinator.txn.coordinator import (
    TRANSACTION_STATE_TOPIC,
    InitProducerIdResult,
    TransactionCoordinator,
    TxnConfig,
)
from tidelog.coordinator.txn.end_txn import Reply
from tidelog.coordinator.txn.markers import MarkerWriteFn, PendingCompletion, TxnMarkerChannel
from tidelog.coordinator.txn.metadata import IllegalTransition, TransactionMetadata, TxnTransitMetadata
from tidelog.coordinator.txn.producer_ids import PRODUCER_ID_BLOCK_SIZE, ProducerIdManager
from tidelog.coordinator.txn.state import TransactionState, TransactionVersion

__all__ = [
    "PRODUCER_ID_BLOCK_SIZE",
    "TRANSACTION_STATE_TOPIC",
    "IllegalTransition",
    "InitProducerIdResult",
    "MarkerWriteFn",
    "PendingCompletion",
    "ProducerIdManager",
    "Reply",
    "TransactionCoordinator",
    "TransactionMetadata",
    "TransactionState",
    "TransactionVersion",
    "TxnConfig",
    "TxnMarkerChannel",
    "TxnTransitMetadata",
]
