"""The local tier of a partition log: its segments on this broker's disk, in offset order (Kafka's ``LocalLog``).

Invariants::

    segments are sorted by base offset and never empty; only the last one (the active segment) is
    appended to; a segment's offsets are [base_offset, next_offset)

What is here knows segments and files only: where an offset lives, reading whole batches across
segments, searching by timestamp, the aborted-transaction indexes, fsync, cutting and replacing
segments. What the offsets mean (log start offset, high watermark, last stable offset), validation,
producer state and leader epochs are :class:`tidelog.storage.log.PartitionLog`'s, which owns one
:class:`LocalLog` and, one day, a remote tier beside it (:mod:`tidelog.storage.remote_tier`).

Loop-only, not thread-safe; :meth:`LocalLog.flush` may run in an executor thread.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from tidelog.config import TopicConfig
from tidelog.records import RecordBatchView
from tidelog.storage import files
from tidelog.storage.checkpoints import fsync_dir
from tidelog.storage.retention import SegmentSummary
from tidelog.storage.segment import FileSlice, Segment
from tidelog.storage.txn_index import AbortedTxn


class LocalLog:
    """The segments of one partition in ``directory``."""

    def __init__(self, directory: Path, segments: list[Segment]) -> None:
        self.directory = directory
        self.segments = segments

    # ------------------------------------------------------------------------------- where

    @property
    def active_segment(self) -> Segment:
        return self.segments[-1]

    @property
    def end_offset(self) -> int:
        """The offset after the last one written (the log end offset)."""
        return self.segments[-1].next_offset

    @property
    def size(self) -> int:
        return sum(s.size for s in self.segments)

    def floor_index(self, offset: int) -> int:
        """Index of the segment that may hold ``offset``: the last one whose base offset is <= it (or the first)."""
        lo, hi = 0, len(self.segments) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.segments[mid].base_offset <= offset:
                lo = mid
            else:
                hi = mid - 1
        return lo

    def floor_segment(self, offset: int) -> Segment:
        return self.segments[self.floor_index(offset)]

    def base_offsets(self) -> list[int]:
        return [seg.base_offset for seg in self.segments]

    # -------------------------------------------------------------------------------- read

    def read(self, offset: int, max_bytes: int, limit: int, min_one_batch: bool) -> FileSlice | None:
        """Whole batches from ``offset`` (within the log) up to ``limit`` (exclusive), at most ``max_bytes``
        of them unless ``min_one_batch`` lets the first one through whole; None when nothing is there."""
        if offset >= limit:
            return None
        for i in range(self.floor_index(offset), len(self.segments)):
            seg = self.segments[i]
            if seg.base_offset >= limit:
                break
            max_position = seg.position_of(limit) if limit < seg.next_offset else None
            result = seg.read(offset, max_bytes, max_position, min_one_batch)
            if result is not None:
                return result
        return None

    def batches(self, start_offset: int, end_offset: int) -> Iterator[RecordBatchView]:
        """Every batch overlapping [start_offset, end_offset), in order."""
        for seg in self.segments[self.floor_index(start_offset):]:
            if seg.base_offset >= end_offset:
                return
            for _, raw in seg.batches(seg.position_of(start_offset) if seg.base_offset < start_offset else 0):
                view = RecordBatchView(raw)
                if view.base_offset >= end_offset:
                    return
                if view.last_offset >= start_offset:
                    yield view

    def offset_after(self, records: FileSlice) -> int:
        """The offset after the last batch of ``records`` (a slice :meth:`read` returned)."""
        end = records.position + records.size
        for seg in self.segments:
            if seg.file is records.file:
                if end >= seg.size:
                    return seg.next_offset
                header = next(seg.headers(end), None)
                return header.base_offset if header is not None else seg.next_offset
        return self.end_offset

    # ------------------------------------------------------------------------ by timestamp

    def find_offset_by_timestamp(self, timestamp: int, log_start_offset: int,
                                 below: int) -> tuple[int, int] | None:
        """(timestamp, offset) of the first record at or after ``log_start_offset`` whose timestamp is
        >= ``timestamp`` and whose offset is below ``below``; None when none qualifies."""
        for seg in self.segments:
            if seg.max_timestamp < timestamp or seg.next_offset <= log_start_offset:
                continue
            found = seg.find_offset_by_timestamp(timestamp, log_start_offset)
            if found is not None and found[1] < below:
                return found
        return None

    def max_timestamp_batch(self) -> tuple[int, int] | None:
        """(the largest timestamp, the last offset of the batch that carries it), from the segments'
        figures; None when no record has a timestamp."""
        best: tuple[int, int] | None = None
        for seg in self.segments:
            if seg.max_timestamp >= 0 and (best is None or seg.max_timestamp > best[0]):
                best = (seg.max_timestamp, seg.offset_of_max_timestamp)
        return best

    # ------------------------------------------------------------------ aborted transactions

    def index_aborted(self, aborted: AbortedTxn) -> None:
        """Index an aborted transaction in the segment holding its marker (its last offset)."""
        segment = self.floor_segment(aborted.last_offset)
        if not segment.txn_index.contains(aborted):
            segment.txn_index.append(aborted)

    def aborted_transactions(self, fetch_offset: int, upper_bound: int) -> list[AbortedTxn]:
        """The aborted transactions overlapping [fetch_offset, upper_bound), from the segment holding
        ``fetch_offset`` on (a marker is indexed in its own segment, maybe after the data)."""
        found: list[AbortedTxn] = []
        for segment in self.segments[self.floor_index(fetch_offset):]:
            entries, complete = segment.txn_index.collect(fetch_offset, upper_bound)
            found += entries
            if complete or segment.base_offset >= upper_bound:
                break
        return found

    def has_aborted_from(self, offset: int) -> bool:
        """Whether any segment from the one holding ``offset`` on indexes an aborted transaction."""
        return any(seg.txn_index.entries for seg in self.segments[self.floor_index(offset):])

    # ------------------------------------------------------------------- flush and change

    def flush(self, from_offset: int, to_offset: int) -> None:
        """fsync every segment holding offsets in [from_offset, to_offset), then the directory. Safe
        in an executor thread while the loop appends."""
        for seg in list(self.segments):
            if seg.next_offset > from_offset and seg.base_offset < to_offset and not seg.deleted:
                seg.flush()
        fsync_dir(self.directory)

    def summaries(self) -> list[SegmentSummary]:
        """What retention decides on: each segment's offsets, size, max timestamp and file time."""
        return [SegmentSummary(s.base_offset, s.next_offset, s.size, s.max_timestamp, _mtime_ms(s)) for s in self.segments]

    def remove_oldest(self, count: int) -> list[Segment]:
        """Take the ``count`` oldest segments out of the log (their files stay); returns them."""
        removed = self.segments[:count]
        del self.segments[:count]
        return removed

    def replace(self, new_segments: list[Segment], old_segments: list[Segment]) -> None:
        """Put ``new_segments`` in place of ``old_segments``, a run of consecutive inactive segments."""
        start = next((i for i, seg in enumerate(self.segments) if seg is old_segments[0]), None)
        end = None if start is None else start + len(old_segments)
        if end is None or end >= len(self.segments) or any(
            a is not b for a, b in zip(self.segments[start:end], old_segments, strict=True)
        ):
            raise ValueError("replace_segments: the old segments are not a run of inactive segments of this log")
        self.segments[start:end] = new_segments

    def truncate_to(self, offset: int) -> None:
        """Remove every offset >= ``offset`` (the segments starting there go with their files)."""
        while len(self.segments) > 1 and self.segments[-1].base_offset >= offset:
            self.segments.pop().delete_files()
        self.active_segment.truncate_to(offset)
        if self.active_segment.next_offset < offset:
            self.active_segment.next_offset = max(self.active_segment.next_offset, self.active_segment.base_offset)

    def roll(self, base_offset: int, config: TopicConfig, now_ms: int) -> Segment:
        """Close the active segment for appends and start a new one at ``base_offset``; a failed
        creation leaves no half-created files behind (they would block the next roll)."""
        self.active_segment.on_roll()
        try:
            seg = Segment.for_config(self.directory, base_offset, config, now_ms, new=True)
        except OSError as e:
            if not isinstance(e, FileExistsError):
                for suffix in files.SEGMENT_SUFFIXES:
                    files.segment_file(self.directory, base_offset, suffix).unlink(missing_ok=True)
            raise
        self.segments.append(seg)
        return seg

    def restart_at(self, offset: int, config: TopicConfig, now_ms: int) -> None:
        """Delete every segment and start again with one empty segment at ``offset``."""
        for seg in self.segments:
            seg.delete_files()
        self.segments = [Segment.for_config(self.directory, offset, config, now_ms, new=True)]

    def close(self) -> None:
        for seg in self.segments:
            seg.close()


def _mtime_ms(seg: Segment) -> int:
    try:
        return int(os.stat(seg.log_path).st_mtime * 1000)
    except FileNotFoundError:
        return -1


__all__ = ["LocalLog"]
