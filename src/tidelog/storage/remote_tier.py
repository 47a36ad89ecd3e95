"""The seam where a second, remote tier of a partition log attaches (KIP-405 tiered storage). None yet.

A :class:`~tidelog.storage.log.PartitionLog` is its local segments (:class:`~tidelog.storage.local_log.LocalLog`)
plus, optionally, a :class:`RemoteTier` holding older offsets copied elsewhere (object storage) and
deleted locally. The partition log decides which tier answers: offsets in
[``log_start_offset``, ``local_log_start_offset``) are the remote tier's, the rest the local log's.
Without a remote tier both start offsets are the same and every read stays local, which is all
Tidelog does today: nothing implements this protocol yet, and ``PartitionLog.remote`` stays None.

What a remote tier would have to answer, and nothing more (uploading segments, the remote log
metadata topic and remote retention would be its own module's business):
"""

from __future__ import annotations

from typing import Protocol

from tidelog.storage.segment import FileSlice


class RemoteTier(Protocol):
    """Offsets below the local log start offset of one partition, held outside this broker's disk."""

    def read(self, offset: int, max_bytes: int, limit: int, min_one_batch: bool) -> FileSlice | None:
        """Whole batches from ``offset`` up to ``limit`` (exclusive), at most ``max_bytes`` unless
        ``min_one_batch`` lets the first one through whole, in the form local reads take (a slice of
        a file: a cached copy of the remote segment); None when the tier has nothing there."""
        ...

    def find_offset_by_timestamp(self, timestamp: int, log_start_offset: int) -> tuple[int, int] | None:
        """(timestamp, offset) of the first record at or after ``log_start_offset`` whose timestamp is
        >= ``timestamp``; None when no remote record qualifies (the local log is asked next)."""
        ...


__all__ = ["RemoteTier"]
