"""Producer id allocation: unique ids, never reused, even across restarts.

Ids are handed out from blocks of ``PRODUCER_ID_BLOCK_SIZE``. Before the first id of a block is given
out, the end of the block is persisted in the cluster metadata (``next_producer_id_block``), so a
restarted broker starts after every id it may have handed out (Kafka's ProducerIdManager scheme).
Loop-only, not thread-safe.
"""

from __future__ import annotations

from collections.abc import Callable

PRODUCER_ID_BLOCK_SIZE = 1000


class ProducerIdManager:
    """``persisted_block_start()`` reads the first id not yet handed out in a block (from the cluster
    metadata, when the first id is asked for); ``reserve(next_block_start)`` persists the start of
    the following block."""

    def __init__(self, persisted_block_start: Callable[[], int], reserve: Callable[[int], None]) -> None:
        self._persisted = persisted_block_start
        self._reserve = reserve
        self._next = self._end = -1  # nothing read yet

    def next_producer_id(self) -> int:
        if self._end < 0:
            self._next = self._end = self._persisted()  # empty block: this call reserves one
        if self._next >= self._end:
            start = max(self._next, self._end)
            self._reserve(start + PRODUCER_ID_BLOCK_SIZE)
            self._next, self._end = start, start + PRODUCER_ID_BLOCK_SIZE
        pid = self._next
        self._next += 1
        return pid


__all__ = ["PRODUCER_ID_BLOCK_SIZE", "ProducerIdManager"]
