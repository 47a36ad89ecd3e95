"""The transaction coordinator (later) and producer id allocation."""

from tidelog.coordinator.txn.producer_ids import PRODUCER_ID_BLOCK_SIZE, ProducerIdManager

__all__ = ["PRODUCER_ID_BLOCK_SIZE", "ProducerIdManager"]
