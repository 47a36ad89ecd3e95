"""Rewriting segments for a compaction pass (rules 1, 4, 5, 6 and 7 of :mod:`tidelog.storage.cleaner`):
segments grouped by size, each batch filtered against the offset map (and the pass's transactions,
:mod:`tidelog.storage.compaction_txn`), surviving records rebuilt into batches at their original
offsets, the result written as ``.cleaned`` files. Runs in the executor;
touches only the pass's own descriptors and new files."""

from __future__ import annotations

import logging
import os
import struct
from collections.abc import Iterator
from pathlib import Path

from tidelog.config import INT_MAX, LONG_MAX, TopicConfig
from tidelog.records import RecordBatchView, rebuild_batch
from tidelog.records.batch import DELETE_HORIZON_FLAG_MASK, HEADER, MIN_BATCH_LENGTH
from tidelog.records.crc import crc32c
from tidelog.storage import files
from tidelog.storage.compaction_plan import CleanedGroup, CleanerError, CleanerStats, CleanPlan, SourceSegment
from tidelog.storage.compaction_txn import CleanedTransactions
from tidelog.storage.index import OffsetIndex, TimeIndex
from tidelog.storage.segment import BatchScanError, scan_batches
from tidelog.storage.txn_index import AbortedTxn, TransactionIndex

log = logging.getLogger(__name__)


_INT32 = struct.Struct(">i")
_UINT32 = struct.Struct(">I")
_CRC_AT = 17
_ATTRIBUTES_AT = 21
_CLEARED_ATTRIBUTES = 0x07 | DELETE_HORIZON_FLAG_MASK  # codec bits and the horizon bit of an empty batch



# ------------------------------------------------------------------------------ cleaning a group


def group_by_size(sources: list[SourceSegment], config: TopicConfig) -> Iterator[list[SourceSegment]]:
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


def clean_group(
    plan: CleanPlan, group: list[SourceSegment], offset_map: dict[bytes, int], map_end: int, stats: CleanerStats,
    transactions: CleanedTransactions,
) -> tuple[CleanedGroup | None, int | None]:
    """Write one cleaned segment; (None, horizon) when it would be identical to its lone source."""
    writer = _CleanedSegmentWriter(plan.directory, group[0].base_offset, plan.config)
    changed = len(group) > 1
    horizon = None
    kept_from = len(transactions.kept_index)
    try:
        for view, is_last in _with_last(b for src in group for b in read_batches(src)):
            stats.bytes_read += view.size_in_bytes
            if view.is_control_batch:
                out, verbatim, batch_horizon = _filter_control(view, plan, is_last, transactions)
            else:
                out, verbatim, batch_horizon = _filter_batch(view, plan, offset_map, map_end, is_last, stats,
                                                             transactions)
            changed |= not verbatim
            if batch_horizon is not None:
                horizon = batch_horizon if horizon is None else min(horizon, batch_horizon)
            if out is not None:
                writer.append(out)
        aborted = transactions.kept_index[kept_from:]
        changed |= aborted != [txn for src in group for txn in src.aborted]
        if not changed:
            writer.discard()
            return None, horizon
        stats.bytes_written += writer.size
        return writer.finish(tuple(group), aborted), horizon
    except BaseException:
        writer.discard()
        raise


def _keeps_producer_state(view: RecordBatchView, plan: CleanPlan) -> bool:
    """The batch holds what a producer state rebuilt from the log needs: the producer's last data
    batch (its last sequence), or its last marker when it has no data batch left (its epoch)."""
    if not view.has_producer_id:
        return False
    if plan.producer_last_offsets.get(view.producer_id) == view.last_offset:
        return True
    return view.is_control_batch and plan.producer_last_markers.get(view.producer_id) == view.producer_epoch


def _filter_control(
    view: RecordBatchView, plan: CleanPlan, is_last: bool, transactions: CleanedTransactions,
) -> tuple[memoryview | bytes | None, bool, int | None]:
    """Transaction markers (rule 6): kept while their data is; then a delete horizon; then gone."""
    can_discard = transactions.on_control_batch(view)
    keep_empty = is_last or _keeps_producer_state(view, plan)
    if not can_discard:
        return view.buffer, True, None
    if view.record_count == 0:
        return (view.buffer, True, None) if keep_empty else (None, False, None)
    horizon = view.delete_horizon_ms
    if horizon is None:  # first seen discardable: wait delete.retention.ms, as a tombstone does
        horizon = min(plan.now_ms + plan.config.delete_retention_ms, LONG_MAX)
        return rebuild_batch(view, decoded_records(view), delete_horizon_ms=horizon), False, horizon
    if plan.now_ms < horizon:
        return view.buffer, True, horizon
    return (_empty_batch(view), False, None) if keep_empty else (None, False, None)


def _filter_batch(
    view: RecordBatchView, plan: CleanPlan, offset_map: dict[bytes, int], map_end: int, is_last: bool,
    stats: CleanerStats, transactions: CleanedTransactions,
) -> tuple[memoryview | bytes | None, bool, int | None]:
    """(bytes to write or None, copied verbatim?, delete horizon of retained tombstones or None)."""
    keep_empty = is_last or _keeps_producer_state(view, plan)
    if transactions.on_batch(view):  # aborted: every record goes (rule 6)
        stats.records_read += view.record_count
        if view.record_count == 0:
            return (view.buffer, True, None) if keep_empty else (None, False, None)
        return (_empty_batch(view), False, None) if keep_empty else (None, False, None)
    horizon = view.delete_horizon_ms
    retain_deletes = horizon is None or plan.now_ms < horizon
    kept = []
    dropped = tombstones = False
    for record in decoded_records(view):
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
    return rebuild_batch(view, records, delete_horizon_ms=horizon)


def _empty_batch(view: RecordBatchView) -> bytearray:
    """A record-less header keeping the batch's offsets, producer fields and max timestamp."""
    out = bytearray(HEADER.size)
    HEADER.pack_into(
        out, 0, view.base_offset, MIN_BATCH_LENGTH, view.partition_leader_epoch, 2, 0,
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

    def finish(self, sources: tuple[SourceSegment, ...], aborted: list[AbortedTxn]) -> CleanedGroup:
        """``aborted``: the aborted transactions whose ABORT marker this segment kept (its index)."""
        if aborted:
            txn_index = TransactionIndex(files.segment_file(self.directory, self.base_offset,
                                                            files.TXN_INDEX_SUFFIX + files.CLEANED_SUFFIX))
            for txn in aborted:
                txn_index.append(txn)
            txn_index.flush()
            txn_index.close()
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
        unlink_group(self.directory, self.base_offset, files.CLEANED_SUFFIX)

    def _close(self) -> None:
        self.file.close()
        self.offset_index.close()
        self.time_index.close()


# ----------------------------------------------------------------------------------- helpers


def read_batches(src: SourceSegment) -> Iterator[RecordBatchView]:
    """Every batch of a source segment, read through its own descriptor in large chunks."""
    try:
        for position, raw in scan_batches(src.fd, 0, src.size, strict=True):
            yield _view(raw, src, position)
    except BatchScanError as e:
        raise CleanerError(f"{src.segment.log_path}: {e}") from None


def _view(raw: memoryview, src: SourceSegment, position: int) -> RecordBatchView:
    try:
        return RecordBatchView(raw)
    except Exception as e:
        raise CleanerError(f"{src.segment.log_path}: unreadable batch at position {position}: {e}") from e


def decoded_records(view: RecordBatchView) -> list:
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


def _group_paths(directory: Path, base_offset: int, suffix: str) -> tuple[Path, Path, Path, Path]:
    return (
        files.segment_file(directory, base_offset, files.LOG_SUFFIX + suffix),
        files.segment_file(directory, base_offset, files.INDEX_SUFFIX + suffix),
        files.segment_file(directory, base_offset, files.TIME_INDEX_SUFFIX + suffix),
        files.segment_file(directory, base_offset, files.TXN_INDEX_SUFFIX + suffix),
    )


def rename_group(directory: Path, base_offset: int, old_suffix: str, new_suffix: str) -> None:
    """Rename a cleaned segment's files (the aborted-transaction index only if it has one). To
    ``.swap``: the log first (the commit point); out of ``.swap``: the log last (while it is a swap,
    the loader redoes the whole swap)."""
    old, new = _group_paths(directory, base_offset, old_suffix), _group_paths(directory, base_offset, new_suffix)
    order = (0, 1, 2, 3) if new_suffix == files.SWAP_SUFFIX else (1, 2, 3, 0)
    for i in order:
        if i == 3 and not old[i].exists():
            continue
        os.replace(old[i], new[i])


def unlink_group(directory: Path, base_offset: int, suffix: str) -> None:
    for path in _group_paths(directory, base_offset, suffix):
        path.unlink(missing_ok=True)


__all__ = ["clean_group", "decoded_records", "group_by_size", "read_batches", "rename_group", "unlink_group"]
