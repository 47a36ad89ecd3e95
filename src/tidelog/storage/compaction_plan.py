"""What a compaction pass works on: how dirty a log is (rules 2 and 3 of
:mod:`tidelog.storage.cleaner`), the plan of a pass (the segments it reads, through descriptors of its
own) and what the pass produced. Immutable data and pure measurements; loop-only where noted."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tidelog.config import TopicConfig
from tidelog.storage.log import PartitionLog
from tidelog.storage.segment import Segment
from tidelog.storage.txn_index import AbortedTxn

log = logging.getLogger(__name__)


class CleanerError(Exception):
    """A segment could not be cleaned (unreadable batch); the log manager stops cleaning that log."""


# ------------------------------------------------------------------------------------- planning


@dataclass(frozen=True, slots=True)
class LogToClean:
    """How dirty one log is right now (Kafka's ``LogToClean``). Immutable."""

    log: PartitionLog
    first_dirty_offset: int
    first_uncleanable_offset: int
    clean_bytes: int
    cleanable_bytes: int
    max_compaction_delay_ms: int

    @property
    def cleanable_ratio(self) -> float:
        total = self.clean_bytes + self.cleanable_bytes
        return self.cleanable_bytes / total if total else 0.0

    @property
    def needs_compaction_now(self) -> bool:
        return self.max_compaction_delay_ms > 0 and self.cleanable_bytes > 0

    @property
    def is_cleanable(self) -> bool:
        return self.needs_compaction_now or self.cleanable_ratio > self.log.config.min_cleanable_dirty_ratio


@dataclass(frozen=True, slots=True)
class SourceSegment:
    """An inactive segment a pass reads, with its own descriptor (valid even if the loop renames or
    closes the segment meanwhile). Immutable; ``segment`` is only compared by identity at commit."""

    segment: Segment
    fd: int
    base_offset: int
    end_offset: int  # base offset of the next segment
    size: int
    index_bytes: int
    time_index_bytes: int
    aborted: tuple[AbortedTxn, ...] = ()  # the segment's aborted-transaction index, copied at planning


@dataclass(frozen=True, slots=True)
class CleanPlan:
    """Everything the off-loop part needs, copied from the log on the loop. Immutable."""

    topic: str
    partition: int
    directory: Path
    config: TopicConfig
    now_ms: int
    first_dirty_offset: int
    first_uncleanable_offset: int
    sources: tuple[SourceSegment, ...]
    producer_last_offsets: dict[int, int]  # producer id -> offset of its last data record
    #: producer id -> epoch, for producers whose last write is a marker (their marker keeps the epoch)
    producer_last_markers: dict[int, int] = field(default_factory=dict)
    #: The aborted transactions overlapping [first source's base, first uncleanable offset), from
    #: every segment's index (a marker may lie past the range).
    aborted: tuple[AbortedTxn, ...] = ()

    def close(self) -> None:
        for src in self.sources:
            try:
                os.close(src.fd)
            except OSError:
                pass


@dataclass(slots=True)
class CleanerStats:
    bytes_read: int = 0
    bytes_written: int = 0
    records_read: int = 0
    records_retained: int = 0
    tombstones_removed: int = 0


@dataclass(frozen=True, slots=True)
class CleanedGroup:
    """One cleaned segment on disk (``.cleaned`` files) and the segments it replaces. Immutable."""

    sources: tuple[SourceSegment, ...]
    base_offset: int
    size: int
    next_offset: int
    max_timestamp: int
    offset_of_max_timestamp: int
    first_batch_timestamp: int


@dataclass(slots=True)
class CleanResult:
    """The output of :meth:`LogCleaner.clean`, to hand to :meth:`LogCleaner.commit` on the loop."""

    plan: CleanPlan
    groups: list[CleanedGroup]
    end_offset: int  # the next first dirty offset
    delete_horizon_ms: int | None  # earliest horizon of a retained tombstone; None if none is left
    stats: CleanerStats = field(default_factory=CleanerStats)


def first_dirty_offset(plog: PartitionLog) -> int:
    checkpoint = plog.cleaner_offset
    if checkpoint is None or checkpoint < plog.log_start_offset or checkpoint > plog.log_end_offset:
        return plog.log_start_offset
    return checkpoint


def first_uncleanable_offset(plog: PartitionLog, first_dirty: int, now_ms: int) -> int:
    bounds = [plog.active_segment.base_offset, plog.high_watermark]
    open_txn = plog.producer_state.first_undecided_offset()
    if open_txn is not None:
        bounds.append(open_txn)
    lag = max(plog.config.min_compaction_lag_ms, 0)
    if lag > 0:
        for seg in plog.segments[:-1]:
            if seg.next_offset > first_dirty and _largest_timestamp(seg) > now_ms - lag:
                bounds.append(seg.base_offset)
                break
    return min(bounds)


def log_to_clean(plog: PartitionLog, now_ms: int) -> LogToClean:
    """Measure a log (loop-only: reads the segment list)."""
    dirty = first_dirty_offset(plog)
    uncleanable = first_uncleanable_offset(plog, dirty, now_ms)
    clean_bytes = cleanable_bytes = 0
    earliest_dirty_ts = None
    for seg, end in inactive_with_ends(plog):
        if end > uncleanable:
            break
        if end <= dirty:
            clean_bytes += seg.size
        else:
            cleanable_bytes += seg.size
            if seg.first_batch_timestamp > 0:
                earliest_dirty_ts = min(earliest_dirty_ts or seg.first_batch_timestamp, seg.first_batch_timestamp)
    delay = 0
    if earliest_dirty_ts is not None:
        clean_until = now_ms - max(plog.config.max_compaction_lag_ms, 0)
        delay = max(clean_until - earliest_dirty_ts, 0)
    return LogToClean(plog, dirty, uncleanable, clean_bytes, cleanable_bytes, delay)


def inactive_with_ends(plog: PartitionLog) -> Iterator[tuple[Segment, int]]:
    segs = plog.segments
    for i in range(len(segs) - 1):
        yield segs[i], segs[i + 1].base_offset


def _largest_timestamp(seg: Segment) -> int:
    if seg.max_timestamp >= 0:
        return seg.max_timestamp
    try:
        return int(os.stat(seg.log_path).st_mtime * 1000)
    except FileNotFoundError:
        return -1


__all__ = [
    "CleanPlan",
    "CleanResult",
    "CleanedGroup",
    "CleanerError",
    "CleanerStats",
    "LogToClean",
    "SourceSegment",
    "first_dirty_offset",
    "first_uncleanable_offset",
    "inactive_with_ends",
    "log_to_clean",
]
