"""Retention policy: which segments to delete. Pure functions over segment summaries.

Three rules, as Kafka applies them (each only to whole, inactive segments, oldest first):

1. **Log start offset** (DeleteRecords, or after earlier deletions): a segment whose every offset is
   below the log start offset is deleted.
2. **Time** (``retention.ms`` >= 0): a segment whose largest timestamp is older than
   ``now - retention.ms`` is deleted. A segment is only deleted if all older ones are too.
3. **Size** (``retention.bytes`` >= 0): oldest segments are deleted while the partition stays larger
   than ``retention.bytes`` after removing them.

The active (last) segment is never deleted. Only for ``cleanup.policy`` containing ``delete``; the log
start offset rule applies whatever the policy.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class SegmentSummary:
    base_offset: int
    next_offset: int  # one past the last offset in the segment
    size: int
    max_timestamp: int  # -1 when unknown / empty
    modified_ms: int  # fallback when max_timestamp is -1


def segments_to_delete(
    segments: Sequence[SegmentSummary],
    *,
    now_ms: int,
    log_start_offset: int,
    retention_ms: int,
    retention_bytes: int,
    delete_policy: bool,
) -> int:
    """How many of the oldest segments to delete (never the last one)."""
    candidates = list(segments[:-1])
    count = 0
    for seg in candidates:
        if seg.next_offset <= log_start_offset:
            count += 1
        else:
            break
    if not delete_policy:
        return count
    if retention_ms >= 0:
        limit = now_ms - retention_ms
        while count < len(candidates):
            seg = candidates[count]
            ts = seg.max_timestamp if seg.max_timestamp >= 0 else seg.modified_ms
            if ts < limit:
                count += 1
            else:
                break
    if retention_bytes >= 0:
        total = sum(s.size for s in segments[count:])
        while count < len(candidates) and total - candidates[count].size >= retention_bytes:
            total -= candidates[count].size
            count += 1
    return count


__all__ = ["SegmentSummary", "segments_to_delete"]
