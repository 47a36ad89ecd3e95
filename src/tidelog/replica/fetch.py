"""What a fetch asks of one partition, what it gets back, and the wait for enough data.

Reading several partitions for one Fetch (Kafka's ``ReplicaManager.readFromLocalLog``):

* the response has a budget, the request's ``max_bytes`` (v3+; older versions have none);
* each partition reads at most ``min(its partition_max_bytes, what is left of the budget)``;
* until some partition has returned data, a read returns at least one whole batch even when that
  batch is larger than the limit (KIP-74: a consumer can always make progress); after that, a batch
  that does not fit is left for the next fetch;
* partitions whose budget is used up still answer with their offsets (and no records).

A read stops at the high watermark (``read_uncommitted``) or, for ``read_committed``, at the last
stable offset, and then reports the aborted transactions its records span (from the segments'
``.txnindex``), so the consumer can drop their records.

The wait (:class:`DelayedFetch`): a fetch that found fewer than ``min_bytes`` parks in the
purgatory under its partitions and completes when an append brings enough bytes, when one of its
topics is deleted (it then answers with the error), or at ``max_wait_ms``.

Loop-only, not thread-safe.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass

from tidelog.errors import ErrorCode
from tidelog.storage.log import PartitionLog
from tidelog.storage.segment import FileSlice
from tidelog.storage.txn_index import AbortedTxn

READ_UNCOMMITTED = 0
READ_COMMITTED = 1


@dataclass(slots=True)
class PartitionFetch:
    """One partition of a fetch: where to read from and how much."""

    topic: str | None  # None: the request named a topic id this broker does not know
    topic_id: uuid.UUID
    partition: int
    fetch_offset: int
    max_bytes: int
    current_leader_epoch: int = -1
    last_fetched_epoch: int = -1  # followers only: the epoch of their last batch (divergence check)


@dataclass(slots=True)
class PartitionRead:
    """What one partition answers: records (whole batches) or an error, and its offsets."""

    error: ErrorCode = ErrorCode.NONE
    records: FileSlice | None = None
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1
    error_message: str | None = None
    aborted: list[AbortedTxn] | None = None  # read_committed only: the aborted transactions it spans
    diverging_epoch: tuple[int, int] | None = None  # followers only: (epoch, end offset) to truncate by

    @property
    def size(self) -> int:
        return self.records.size if self.records is not None else 0


def readable_end(log: PartitionLog, isolation_level: int) -> int:
    """The offset a fetch may read up to: the high watermark, or for read_committed the last stable
    offset (the first offset of the oldest undecided transaction)."""
    return log.last_stable_offset if isolation_level == READ_COMMITTED else log.high_watermark


class DelayedFetch:
    """The completion test of a parked fetch (see the module rules)."""

    __slots__ = ("_end", "_is_deleted", "_logs", "isolation_level", "min_bytes", "partitions")

    def __init__(self, partitions: list[PartitionFetch], logs: dict[tuple[str, int], PartitionLog],
                 min_bytes: int, isolation_level: int, is_deleted: Callable[[str], bool],
                 end: Callable[[PartitionLog], int] | None = None) -> None:
        self.partitions = partitions
        self._logs = logs
        self.min_bytes = min_bytes
        self.isolation_level = isolation_level
        self._is_deleted = is_deleted
        #: how far a read may go: the high watermark / LSO for clients, the log end for followers
        self._end = end or (lambda log: readable_end(log, isolation_level))

    @property
    def keys(self) -> list[tuple[str, int]]:
        return list(self._logs)

    def has_enough(self) -> bool:
        """Enough new bytes? Any partition whose readable end moved past the fetch offset counts; with
        ``min_bytes`` above one the new bytes are measured by reading (min_bytes is a hint)."""
        total = 0
        for pf in self.partitions:
            if pf.topic is None:
                continue
            if self._is_deleted(pf.topic):
                return True  # the topic was deleted meanwhile: answer now (with its error)
            log = self._logs.get((pf.topic, pf.partition))
            if log is None:
                continue
            end = self._end(log)
            if end > pf.fetch_offset:
                if self.min_bytes <= 1:
                    return True
                result = log.read(pf.fetch_offset, pf.max_bytes, max_offset=end)
                total += result.records.size if result.records is not None else 0
                if total >= self.min_bytes:
                    return True
        return False


__all__ = ["READ_COMMITTED", "READ_UNCOMMITTED", "DelayedFetch", "PartitionFetch", "PartitionRead", "readable_end"]
