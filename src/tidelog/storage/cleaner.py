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
6. **Transactions (partial; the transaction work completes this).** Control batches are copied as
   they are. Records of transactional batches are never put in the map (without the aborted-txn index
   a record of an aborted transaction must not hide a committed one); they are removed only when a
   newer non-transactional record of the same key supersedes them.
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
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from crc32c import crc32c

from tidelog.clock import Clock
from tidelog.config import INT_MAX, LONG_MAX, TopicConfig
from tidelog.records import RecordBatchBuilder, RecordBatchView
from tidelog.records.batch import DELETE_HORIZON_FLAG_MASK, HEADER
from tidelog.storage import files
from tidelog.storage.checkpoints import fsync_dir
from tidelog.storage.index import OffsetIndex, TimeIndex
from tidelog.storage.log import PartitionLog
from tidelog.storage.segment import Segment

log = logging.getLogger(__name__)

DEFAULT_MAX_MAP_ENTRIES = 1_000_000  # ~100-150 bytes of memory each (a bytes key and a dict slot)
_READ_CHUNK = 4 * 1024 * 1024
_LOG_HEADER = struct.Struct(">qi")
_INT32 = struct.Struct(">i")
_UINT32 = struct.Struct(">I")
_LAST_OFFSET_DELTA_AT = 23
_CRC_AT = 17
_ATTRIBUTES_AT = 21
_EMPTY_BATCH_LENGTH = HEADER.size - 12
_CLEARED_ATTRIBUTES = 0x07 | DELETE_HORIZON_FLAG_MASK  # codec bits and the horizon bit of an empty batch


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
    for seg, end in _inactive_with_ends(plog):
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


def _inactive_with_ends(plog: PartitionLog) -> Iterator[tuple[Segment, int]]:
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
        chosen = [(seg, end) for seg, end in _inactive_with_ends(plog) if end <= uncleanable]
        if not chosen:
            return None
        sources = tuple(
            SourceSegment(
                seg, os.dup(seg.file.fileno()), seg.base_offset, end, seg.size,
                len(seg.offset_index) * OffsetIndex.ENTRY_SIZE, len(seg.time_index) * TimeIndex.ENTRY_SIZE,
            )
            for seg, end in chosen
        )
        producers = {
            pid: entry.last_data_offset
            for pid, entry in plog.producer_state.active_producers.items()
            if entry.last_data_offset >= 0
        }
        return CleanPlan(plog.topic, plog.partition, plog.directory, plog.config, now, dirty, uncleanable,
                         sources, producers)

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
                    _rename_group(plan.directory, group.base_offset, files.CLEANED_SUFFIX, files.SWAP_SUFFIX)
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
        _rename_group(plog.directory, group.base_offset, files.SWAP_SUFFIX, "")
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
                _unlink_group(plan.directory, group.base_offset, files.CLEANED_SUFFIX)
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
            for group in _group_by_size(sources, plan.config):
                cleaned, group_horizon = _clean_group(plan, group, offset_map, map_end, stats)
                if cleaned is not None:
                    done.append(cleaned)
                if group_horizon is not None:
                    horizon = group_horizon if horizon is None else min(horizon, group_horizon)
        except BaseException:
            for group in done:
                _unlink_group(plan.directory, group.base_offset, files.CLEANED_SUFFIX)
            raise
        end = max(map_end, plan.first_dirty_offset)
        return CleanResult(plan, done, end, horizon, stats)

    def _build_offset_map(self, plan: CleanPlan, stats: CleanerStats) -> tuple[dict[bytes, int], int]:
        """key -> latest offset over the dirty segments; and the offset the map covers up to."""
        offset_map: dict[bytes, int] = {}
        first_dirty = plan.first_dirty_offset
        map_end = first_dirty
        for src in plan.sources:
            if src.end_offset <= first_dirty:
                continue
            if offset_map and len(offset_map) >= self.max_map_entries:
                break
            for view in _read_batches(src):
                stats.bytes_read += view.size_in_bytes
                if view.is_control_batch or view.is_transactional or view.last_offset < first_dirty:
                    continue
                for record in _records(view):
                    if record.key is not None and record.offset >= first_dirty:
                        offset_map[record.key] = record.offset
            map_end = src.end_offset
        return offset_map, map_end


# ------------------------------------------------------------------------------ cleaning a group


def _group_by_size(sources: list[SourceSegment], config: TopicConfig) -> Iterator[list[SourceSegment]]:
    """Kafka's groupSegmentsBySize: consecutive segments whose sizes and offsets fit one segment."""
    i = 0
    while i < len(sources):
        group = [sources[i]]
        size, index_bytes, time_bytes = sources[i].size, sources[i].index_bytes, sources[i].time_index_bytes
        i += 1
        while i < len(sources):
            nxt = sources[i]
            if (
                size + nxt.size > config.segment_bytes
                or index_bytes + nxt.index_bytes > config.segment_index_bytes
                or time_bytes + nxt.time_index_bytes > config.segment_index_bytes
                or (nxt.size and nxt.end_offset - 1 - group[0].base_offset > INT_MAX)
            ):
                break
            group.append(nxt)
            size, index_bytes, time_bytes = size + nxt.size, index_bytes + nxt.index_bytes, time_bytes + nxt.time_index_bytes
            i += 1
        yield group


def _clean_group(
    plan: CleanPlan, group: list[SourceSegment], offset_map: dict[bytes, int], map_end: int, stats: CleanerStats
) -> tuple[CleanedGroup | None, int | None]:
    """Write one cleaned segment; (None, horizon) when it would be identical to its lone source."""
    writer = _CleanedSegmentWriter(plan.directory, group[0].base_offset, plan.config)
    changed = len(group) > 1
    horizon = None
    try:
        for view, is_last in _with_last(b for src in group for b in _read_batches(src)):
            stats.bytes_read += view.size_in_bytes
            out, verbatim, batch_horizon = _filter_batch(view, plan, offset_map, map_end, is_last, stats)
            changed |= not verbatim
            if batch_horizon is not None:
                horizon = batch_horizon if horizon is None else min(horizon, batch_horizon)
            if out is not None:
                writer.append(out)
        if not changed:
            writer.discard()
            return None, horizon
        stats.bytes_written += writer.size
        return writer.finish(tuple(group)), horizon
    except BaseException:
        writer.discard()
        raise


def _filter_batch(
    view: RecordBatchView, plan: CleanPlan, offset_map: dict[bytes, int], map_end: int, is_last: bool,
    stats: CleanerStats,
) -> tuple[memoryview | bytes | None, bool, int | None]:
    """(bytes to write or None, copied verbatim?, delete horizon of retained tombstones or None)."""
    if view.is_control_batch:
        return view.buffer, True, None  # transaction markers stay (rule 6)
    keep_empty = is_last or (
        view.has_producer_id and plan.producer_last_offsets.get(view.producer_id) == view.last_offset
    )
    horizon = view.delete_horizon_ms
    retain_deletes = horizon is None or plan.now_ms < horizon
    kept = []
    dropped = tombstones = False
    for record in _records(view):
        stats.records_read += 1
        if record.offset >= map_end:
            keep = True
        elif record.key is None or record.offset < offset_map.get(record.key, -1):
            keep = False  # keyless, or superseded by a newer record of the key
        elif record.value is None and not retain_deletes:
            keep = False
            stats.tombstones_removed += 1
        else:
            keep = True
        if keep:
            kept.append(record)
            tombstones |= record.value is None
        else:
            dropped = True
    stats.records_retained += len(kept)
    set_horizon = tombstones and horizon is None
    if set_horizon:
        horizon = min(plan.now_ms + plan.config.delete_retention_ms, LONG_MAX)
    retained_horizon = horizon if tombstones else None
    if not dropped and not set_horizon:
        if kept or keep_empty:
            return view.buffer, True, retained_horizon
        return None, False, None  # an empty batch nobody needs
    if kept:
        return _rebuild(view, kept, horizon), False, retained_horizon
    if keep_empty:
        return _empty_batch(view), False, None
    return None, False, None


def _rebuild(view: RecordBatchView, records: list, horizon: int | None) -> bytearray:
    builder = RecordBatchBuilder(
        base_offset=view.base_offset,
        compression=view.compression_type,
        timestamp_type=view.timestamp_type,
        producer_id=view.producer_id,
        producer_epoch=view.producer_epoch,
        base_sequence=view.base_sequence,
        is_transactional=view.is_transactional,
        partition_leader_epoch=view.partition_leader_epoch,
        delete_horizon_ms=horizon,
    )
    for record in records:
        builder.append(record.timestamp, record.key, record.value, record.headers, offset=record.offset)
    out = bytearray(builder.build())
    if builder.next_offset - 1 != view.last_offset:  # keep the original last offset (rule 1)
        _INT32.pack_into(out, _LAST_OFFSET_DELTA_AT, view.last_offset_delta)
        _UINT32.pack_into(out, _CRC_AT, crc32c(memoryview(out)[_ATTRIBUTES_AT:]))
    return out


def _empty_batch(view: RecordBatchView) -> bytearray:
    """A record-less header keeping the batch's offsets, producer fields and max timestamp."""
    out = bytearray(HEADER.size)
    HEADER.pack_into(
        out, 0, view.base_offset, _EMPTY_BATCH_LENGTH, view.partition_leader_epoch, 2, 0,
        view.attributes & ~_CLEARED_ATTRIBUTES, view.last_offset_delta, -1, view.max_timestamp,
        view.producer_id, view.producer_epoch, view.base_sequence, 0,
    )
    _UINT32.pack_into(out, _CRC_AT, crc32c(memoryview(out)[_ATTRIBUTES_AT:]))
    return out


class _CleanedSegmentWriter:
    """Writes ``<base>.log.cleaned`` and its two indexes like :class:`Segment.append` would.
    Executor-only; one per cleaned segment."""

    def __init__(self, directory: Path, base_offset: int, config: TopicConfig) -> None:
        self.directory = directory
        self.base_offset = base_offset
        self.interval = config.index_interval_bytes
        paths = _group_paths(directory, base_offset, files.CLEANED_SUFFIX)
        self.file = open(paths[0], "wb")  # noqa: SIM115 - closed in finish/discard
        self.offset_index = OffsetIndex(paths[1], base_offset, config.segment_index_bytes, load=False)
        self.time_index = TimeIndex(paths[2], base_offset, config.segment_index_bytes, load=False)
        self.size = 0
        self.next_offset = base_offset
        self.max_timestamp, self.offset_of_max_timestamp = -1, base_offset
        self.first_batch_timestamp = -1
        self._since_index = 0

    def append(self, data: bytes | bytearray | memoryview) -> None:
        view = RecordBatchView(data)
        max_ts, last = view.max_timestamp, view.last_offset
        if self.size == 0 or self._since_index >= self.interval:
            self.offset_index.append(view.base_offset, self.size)
            if max_ts > self.max_timestamp:
                self.time_index.maybe_append(max_ts, last)
            elif self.max_timestamp >= 0:
                self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
            self._since_index = 0
        self.file.write(data)
        n = view.size_in_bytes
        self.size += n
        self._since_index += n
        if self.first_batch_timestamp < 0:
            self.first_batch_timestamp = max_ts
        if max_ts > self.max_timestamp:
            self.max_timestamp, self.offset_of_max_timestamp = max_ts, last
        self.next_offset = last + 1

    def finish(self, sources: tuple[SourceSegment, ...]) -> CleanedGroup:
        if self.max_timestamp >= 0:
            self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
        self.file.flush()
        os.fsync(self.file.fileno())
        self.offset_index.flush()
        self.time_index.flush()
        self._close()
        return CleanedGroup(
            sources, self.base_offset, self.size, self.next_offset, self.max_timestamp,
            self.offset_of_max_timestamp, self.first_batch_timestamp,
        )

    def discard(self) -> None:
        self._close()
        _unlink_group(self.directory, self.base_offset, files.CLEANED_SUFFIX)

    def _close(self) -> None:
        self.file.close()
        self.offset_index.close()
        self.time_index.close()


# ----------------------------------------------------------------------------------- helpers


def _read_batches(src: SourceSegment) -> Iterator[RecordBatchView]:
    """Every batch of a source segment, read through its own descriptor in large chunks."""
    position, end = 0, src.size
    while position < end:
        chunk = memoryview(os.pread(src.fd, min(_READ_CHUNK, end - position), position))
        pos = 0
        while pos + 12 <= len(chunk):
            _, length = _LOG_HEADER.unpack_from(chunk, pos)
            if length < _EMPTY_BATCH_LENGTH:
                raise CleanerError(f"{src.segment.log_path}: invalid batch length {length} at {position + pos}")
            if pos + 12 + length > len(chunk):
                break
            yield _view(chunk[pos : pos + 12 + length], src, position + pos)
            pos += 12 + length
        if pos == 0:  # a batch larger than the chunk
            if len(chunk) < 12:
                raise CleanerError(f"{src.segment.log_path}: truncated batch at position {position}")
            _, length = _LOG_HEADER.unpack_from(chunk, 0)
            whole = memoryview(os.pread(src.fd, 12 + length, position))
            if len(whole) < 12 + length:
                raise CleanerError(f"{src.segment.log_path}: truncated batch at position {position}")
            yield _view(whole, src, position)
            pos = 12 + length
        position += pos


def _view(raw: memoryview, src: SourceSegment, position: int) -> RecordBatchView:
    try:
        return RecordBatchView(raw)
    except Exception as e:
        raise CleanerError(f"{src.segment.log_path}: unreadable batch at position {position}: {e}") from e


def _records(view: RecordBatchView) -> list:
    try:
        return list(view.records())
    except Exception as e:
        raise CleanerError(f"batch at offset {view.base_offset} cannot be decoded: {e}") from e


def _with_last(views: Iterator[RecordBatchView]) -> Iterator[tuple[RecordBatchView, bool]]:
    prev = None
    for view in views:
        if prev is not None:
            yield prev, False
        prev = view
    if prev is not None:
        yield prev, True


def _group_paths(directory: Path, base_offset: int, suffix: str) -> tuple[Path, Path, Path]:
    return (
        files.segment_file(directory, base_offset, files.LOG_SUFFIX + suffix),
        files.segment_file(directory, base_offset, files.INDEX_SUFFIX + suffix),
        files.segment_file(directory, base_offset, files.TIME_INDEX_SUFFIX + suffix),
    )


def _rename_group(directory: Path, base_offset: int, old_suffix: str, new_suffix: str) -> None:
    """Rename a cleaned segment's three files. To ``.swap``: the log first (the commit point); out of
    ``.swap``: the log last (while it is a swap, the loader redoes the whole swap)."""
    old, new = _group_paths(directory, base_offset, old_suffix), _group_paths(directory, base_offset, new_suffix)
    order = (0, 1, 2) if new_suffix == files.SWAP_SUFFIX else (1, 2, 0)
    for i in order:
        os.replace(old[i], new[i])


def _unlink_group(directory: Path, base_offset: int, suffix: str) -> None:
    for path in _group_paths(directory, base_offset, suffix):
        path.unlink(missing_ok=True)


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
