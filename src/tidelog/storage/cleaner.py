"""Log compaction (``cleanup.policy=compact`` and ``compact,delete``): keep the latest record per key.

Rules (Kafka's ``LogCleaner``/``Cleaner``/``LogCleanerManager``, KIP-354 and KIP-534):

1. **Offsets never change.** A cleaned batch keeps its base offset and its ``lastOffsetDelta`` (so the
   producer's last sequence survives) and holds only the surviving records, each at its original
   offset; the record count drops below ``lastOffsetDelta + 1``. A batch whose records all survive and
   that needs no new delete horizon is copied byte for byte.
2. **Dirty and clean.** ``cleaner_offset`` (the ``cleaner-offset-checkpoint`` entry) is the first dirty
   offset: everything below it was deduplicated by an earlier pass. It falls back to the log start
   offset when missing, below the log start or above the log end. A pass reads the *dirty* segments
   into a key → latest offset map (capped at ``max_map_entries``, at least one segment), then rewrites
   every segment from the first one up to the end of the map: a record survives when its offset is the
   map's offset for its key (or its key is not in the map). Records without a key are dropped (Kafka
   counts them as invalid; the produce path rejects them on compacted topics).
3. **What is cleanable.** Only whole inactive segments below the *first uncleanable offset*: the
   smallest of the active segment's base offset, the high watermark, the first offset of an open
   transaction, and the base offset of the first dirty segment whose largest timestamp is newer than
   ``now - min.compaction.lag.ms``. A log is cleaned when ``dirty / (clean + dirty)`` bytes exceeds
   ``min.cleanable.dirty.ratio``, or when its oldest dirty record is older than
   ``max.compaction.lag.ms`` (KIP-354), or (chosen by the log manager when nothing else qualifies)
   when a tombstone's delete horizon has passed.
4. **Tombstones (KIP-534).** A record with a null value that survives is kept, and its batch gets the
   delete-horizon attribute with ``now + delete.retention.ms`` the first time a pass sees it. A pass
   at or after that horizon drops the tombstone.
5. **Empty batches.** A batch left without records is dropped, except (a) the last batch of an active
   producer (as Kafka: its header keeps the producer's epoch and last sequence so that a producer state
   rebuilt from the log stays right) and (b) the last batch of each cleaned segment, so that a cleaned
   segment still ends exactly where the segments it replaces ended: the loader then knows which old
   segments a ``.swap`` replaces, and segment ranges keep no gaps. An empty batch is a 61-byte header
   with record count 0 (Kafka's ``writeEmptyHeader``); clients skip it.
6. **Transactions** (:mod:`tidelog.storage.compaction_txn`, Kafka's rules). The aborted transactions
   of the range come from the aborted-transaction indexes. Records of aborted transactions are
   removed whatever their keys and never enter the map; committed transactional records are
   compacted like the others. A marker stays while the pass sees data of its transaction; once it
   sees none, the marker gets a delete horizon (``delete.retention.ms``, as a tombstone) and a pass
   after that removes it. A cleaned segment's aborted-transaction index lists the aborted
   transactions whose ABORT marker it kept. The last marker of a producer whose state has no data
   batch (an epoch bumped by KIP-890) is kept, emptied at most, for its epoch.
7. **Grouping.** Consecutive segments are merged into one cleaned segment while their original
   ``.log`` and index sizes fit ``segment.bytes`` / ``segment.index.bytes`` and their offsets fit an
   int32 from the group's base; the cleaned segment is named after the group's first base offset.
   A lone segment that comes out byte-identical is left alone.

Swap protocol, one group at a time (the loader finishes or discards it after a crash)::

    <base>.log.cleaned, .index.cleaned, .timeindex.cleaned   written off the loop, fsync'ed
    .log.cleaned -> .log.swap, then the indexes -> .swap     fsync dir: the commit point
    old segments' files -> .deleted                          (removed later, like retention's)
    indexes .swap -> final, then .log.swap -> <base>.log     fsync dir

A crash before the ``.log.swap`` exists leaves ``.cleaned`` files, which the loader deletes: the old
segments are intact. Once ``.log.swap`` exists, the loader deletes the old segments whose base offset
is in [swap base, swap end), deletes every other file of ``<base>``, renames the swap to
``<base>.log`` and rebuilds its indexes.
"""

from __future__ import annotations

import logging
import os

from tidelog.clock import Clock
from tidelog.storage import files
from tidelog.storage.checkpoints import fsync_dir
from tidelog.storage.compaction_plan import (
    CleanedGroup,
    CleanerError,
    CleanerStats,
    CleanPlan,
    CleanResult,
    LogToClean,
    SourceSegment,
    first_dirty_offset,
    first_uncleanable_offset,
    inactive_with_ends,
    log_to_clean,
)
from tidelog.storage.compaction_rewrite import (
    clean_group,
    decoded_records,
    group_by_size,
    read_batches,
    rename_group,
    unlink_group,
)
from tidelog.storage.compaction_txn import CleanedTransactions
from tidelog.storage.index import OffsetIndex, TimeIndex
from tidelog.storage.log import PartitionLog
from tidelog.storage.segment import Segment

log = logging.getLogger(__name__)


DEFAULT_MAX_MAP_ENTRIES = 1_000_000  # ~100-150 bytes of memory each (a bytes key and a dict slot)


# --------------------------------------------------------------------------------- the cleaner


class LogCleaner:
    """Compacts partition logs in three steps. Concurrency contract:

    * :meth:`plan` — **loop-only**, cheap: measures the log and copies what the pass needs (segment
      list, offsets, producer state, a duplicated descriptor per inactive segment).
    * :meth:`clean` — **runs in an executor**: reads only the plan's inactive segments (through its own
      descriptors) and writes only new ``.cleaned`` files, while the loop keeps appending to the active
      segment, reading and flushing. It touches no ``PartitionLog`` or ``Segment`` state.
    * :meth:`commit` — **loop-only**, short: checks the log still holds the planned segments unchanged
      (else discards the output), renames files per the swap protocol, opens the new segments and
      splices them into the segment list. Returns the replaced segments, renamed ``.deleted`` but still
      open so that in-flight reads of them finish; the owner deletes them after
      ``file.delete.delay.ms``.

    The owner runs at most one pass per log at a time, and must not truncate, close or delete a log
    between its :meth:`plan` and :meth:`commit` (retention and DeleteRecords are safe: commit notices
    removed segments and discards the pass). The cleaner itself keeps no per-log state.
    """

    def __init__(self, clock: Clock, *, max_map_entries: int = DEFAULT_MAX_MAP_ENTRIES) -> None:
        self.clock = clock
        self.max_map_entries = max_map_entries

    # ---------------------------------------------------------------------------------- loop

    def plan(self, plog: PartitionLog) -> CleanPlan | None:
        """Snapshot a pass over ``plog`` (whatever its dirty ratio); None if nothing is cleanable."""
        if not plog.config.compact or plog.closed:
            return None
        now = self.clock.wall_ms()
        dirty = first_dirty_offset(plog)
        uncleanable = first_uncleanable_offset(plog, dirty, now)
        chosen = [(seg, end) for seg, end in inactive_with_ends(plog) if end <= uncleanable]
        if not chosen:
            return None
        sources = tuple(
            SourceSegment(
                seg, os.dup(seg.file.fileno()), seg.base_offset, end, seg.size,
                len(seg.offset_index) * OffsetIndex.ENTRY_SIZE, len(seg.time_index) * TimeIndex.ENTRY_SIZE,
                tuple(seg.txn_index.entries),
            )
            for seg, end in chosen
        )
        active = plog.producer_state.active_producers
        producers = {pid: p.last_data_offset for pid, p in active.items() if p.last_data_offset >= 0}
        markers = {pid: p.producer_epoch for pid, p in active.items() if p.last_data_offset < 0}
        aborted = tuple(plog.aborted_transactions(sources[0].base_offset, uncleanable))
        return CleanPlan(plog.topic, plog.partition, plog.directory, plog.config, now, dirty, uncleanable,
                         sources, producers, markers, aborted)

    def commit(self, plog: PartitionLog, result: CleanResult) -> list[Segment] | None:
        """Swap the cleaned segments in (see the module docstring). None if the pass was discarded."""
        plan = result.plan
        try:
            if not _still_valid(plog, result):
                log.info("%s-%d changed while it was cleaned; discarding the pass", plan.topic, plan.partition)
                self.abort(result)
                return None
            replaced: list[Segment] = []
            if result.groups:
                for group in result.groups:
                    rename_group(plan.directory, group.base_offset, files.CLEANED_SUFFIX, files.SWAP_SUFFIX)
                fsync_dir(plan.directory)  # the commit point of every group
                for group in result.groups:
                    replaced += self._swap_in(plog, group)
                fsync_dir(plan.directory)
            plog.cleaner_offset = max(result.end_offset, plog.log_start_offset)
            return replaced
        finally:
            plan.close()

    def _swap_in(self, plog: PartitionLog, group: CleanedGroup) -> list[Segment]:
        old = [src.segment for src in group.sources]
        for seg in old:
            seg.rename_with_suffix(files.DELETED_SUFFIX)
        rename_group(plog.directory, group.base_offset, files.SWAP_SUFFIX, "")
        seg = Segment.for_config(plog.directory, group.base_offset, plog.config, self.clock.wall_ms(), new=False)
        seg.next_offset = group.next_offset
        seg.max_timestamp = group.max_timestamp
        seg.offset_of_max_timestamp = group.offset_of_max_timestamp
        seg.first_batch_timestamp = group.first_batch_timestamp
        plog.replace_segments([seg], old)
        return old

    def abort(self, result: CleanResult | CleanPlan) -> None:
        """Forget a pass: delete its ``.cleaned`` files and close its descriptors. Any thread."""
        plan = result if isinstance(result, CleanPlan) else result.plan
        if isinstance(result, CleanResult):
            for group in result.groups:
                unlink_group(plan.directory, group.base_offset, files.CLEANED_SUFFIX)
        plan.close()

    def clean_log(self, plog: PartitionLog, *, force: bool = False) -> tuple[CleanResult, list[Segment]] | None:
        """Plan, clean and commit on the calling thread (tests, tools; the broker splits the steps).

        Skips a log that is not cleanable (dirty ratio, max compaction lag) unless ``force``. Returns the
        result and the replaced segments (the caller deletes their files), or None."""
        if not force and not log_to_clean(plog, self.clock.wall_ms()).is_cleanable:
            return None
        plan = self.plan(plog)
        if plan is None:
            return None
        result = self.clean(plan)
        replaced = self.commit(plog, result)
        return None if replaced is None else (result, replaced)

    # ------------------------------------------------------------------------------ executor

    def clean(self, plan: CleanPlan) -> CleanResult:
        """Build the offset map and write the cleaned segments as ``.cleaned`` files. Executor-safe.

        Raises :class:`CleanerError` for an unreadable batch (nothing is left behind)."""
        stats = CleanerStats()
        done: list[CleanedGroup] = []
        try:
            offset_map, map_end = self._build_offset_map(plan, stats)
            sources = [src for src in plan.sources if src.end_offset <= map_end]
            horizon = None
            transactions = CleanedTransactions(plan.aborted)
            for group in group_by_size(sources, plan.config):
                cleaned, group_horizon = clean_group(plan, group, offset_map, map_end, stats, transactions)
                if cleaned is not None:
                    done.append(cleaned)
                if group_horizon is not None:
                    horizon = group_horizon if horizon is None else min(horizon, group_horizon)
        except BaseException:
            for group in done:
                unlink_group(plan.directory, group.base_offset, files.CLEANED_SUFFIX)
            raise
        end = max(map_end, plan.first_dirty_offset)
        return CleanResult(plan, done, end, horizon, stats)

    def _build_offset_map(self, plan: CleanPlan, stats: CleanerStats) -> tuple[dict[bytes, int], int]:
        """key -> latest offset over the dirty segments; and the offset the map covers up to."""
        offset_map: dict[bytes, int] = {}
        first_dirty = plan.first_dirty_offset
        map_end = first_dirty
        transactions = CleanedTransactions(plan.aborted)
        for src in plan.sources:
            if src.end_offset <= first_dirty:
                continue
            if offset_map and len(offset_map) >= self.max_map_entries:
                break
            for view in read_batches(src):
                stats.bytes_read += view.size_in_bytes
                if view.is_control_batch:
                    transactions.on_control_batch(view)
                    continue
                if transactions.on_batch(view) or view.last_offset < first_dirty:
                    continue
                for record in decoded_records(view):
                    if record.key is not None and record.offset >= first_dirty:
                        offset_map[record.key] = record.offset
            map_end = src.end_offset
        return offset_map, map_end


def _still_valid(plog: PartitionLog, result: CleanResult) -> bool:
    """The log still holds every planned segment, unchanged and inactive, in the planned order."""
    if plog.closed or plog.directory != result.plan.directory:
        return False
    position = {id(seg): i for i, seg in enumerate(plog.segments)}
    for group in result.groups:
        indexes = [position.get(id(src.segment)) for src in group.sources]
        if any(i is None or i >= len(plog.segments) - 1 for i in indexes):
            return False
        if indexes != list(range(indexes[0], indexes[0] + len(indexes))):
            return False
        if any(src.segment.size != src.size or src.segment.deleted for src in group.sources):
            return False
    return True


__all__ = [
    "DEFAULT_MAX_MAP_ENTRIES",
    "CleanPlan",
    "CleanResult",
    "CleanedGroup",
    "CleanerError",
    "CleanerStats",
    "LogCleaner",
    "LogToClean",
    "SourceSegment",
    "first_dirty_offset",
    "first_uncleanable_offset",
    "log_to_clean",
]
