"""Producer id allocation: unique ids, never reused, even across restarts and across the brokers of a
cluster.

Ids are handed out from blocks of ``PRODUCER_ID_BLOCK_SIZE``. A block is claimed from the cluster
metadata before its first id is given out (Kafka's ProducerIdManager scheme): ``allocate_block(size)``
persists the block and returns its first id. A single node moves ``next_producer_id_block`` in its
metadata file (:meth:`~tidelog.cluster.controller.Controller.allocate_producer_id_block`); a cluster
writes ``/latest_producer_id_block`` in ZooKeeper conditionally and retries on a conflict
(:mod:`tidelog.cluster.zk_producer_id`), so two brokers allocating at once get disjoint blocks.
Loop-only, not thread-safe.
"""

from __future__ import annotations

from collections.abc import Callable

PRODUCER_ID_BLOCK_SIZE = 1000


class ProducerIdManager:
    """``allocate_block(size)`` claims the next block of ``size`` ids for this broker and returns its
    first id (raising KafkaError when the metadata cannot be written now)."""

    def __init__(self, allocate_block: Callable[[int], int], block_size: int = PRODUCER_ID_BLOCK_SIZE) -> None:
        self._allocate = allocate_block
        self.block_size = block_size
        self._next = self._end = 0  # empty: the first call claims a block

    def next_producer_id(self) -> int:
        if self._next >= self._end:
            start = self._allocate(self.block_size)
            self._next, self._end = start, start + self.block_size
        pid = self._next
        self._next += 1
        return pid


__all__ = ["PRODUCER_ID_BLOCK_SIZE", "ProducerIdManager"]
