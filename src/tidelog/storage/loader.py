"""Opening a partition log at start-up, and recovering it after a crash.

Rules, in order:

1. Leftovers first. ``*.tmp`` and ``*.cleaned`` files are incomplete writes: delete them. ``*.deleted``
   files belong to segments retention already removed: delete them. A ``*.log.swap`` file is a
   compaction that committed (the cleaner renames ``.cleaned`` to ``.swap`` as its commit point): the
   segments it replaces (base offset in [swap base, swap end)) and every other file of its base offset
   are deleted, the swap file loses its suffix and its indexes are rebuilt. A ``.swap`` index without
   its ``.log.swap`` is an orphan of a finished swap: deleted.
2. Segments are the ``<base offset>.log`` files, sorted. An index file that is missing, has a partial
   entry, or fails its sanity check is rebuilt from the log.
3. After a **clean shutdown** (the log dir's clean-shutdown marker exists), the tail of each segment
   is read only from its last index entry on, to find the log end offset.
4. After a **crash**, every segment from the one holding the recovery point on is re-validated batch
   by batch (size, magic, CRC32C, increasing offsets) and truncated at the first invalid byte: a torn
   final write and garbage appended to the file both end there. Segments after a truncated one are
   deleted: nothing after a hole can be trusted. Everything below the recovery point was fsync'ed and
   is kept as it is.
5. Producer state: the latest snapshot at or below the log end offset, then the log replayed from it.
6. **Say what was done.** :class:`LoadStats` records, per partition, how many segments were
   re-validated, how many bytes were cut at which offset and how many later segments went; the log
   manager sums them into its start-up report.

Runs in the executor at start-up (it reads whole segments after a crash).
"""

from __future__ import annotations

import logging
import os
import struct
from dataclasses import dataclass
from pathlib import Path

from tidelog.clock import Clock
from tidelog.config import TopicConfig
from tidelog.records.batch import LAST_OFFSET_DELTA_OFFSET, LOG_HEADER
from tidelog.storage import files
from tidelog.storage.index import CorruptIndexError
from tidelog.storage.log import PartitionLog
from tidelog.storage.producer_state import ProducerStateManager
from tidelog.storage.segment import Segment, scan_batches

log = logging.getLogger(__name__)

_INT32 = struct.Struct(">i")


@dataclass(slots=True)
class LoadStats:
    """What opening one partition log did (rule 6)."""

    topic: str
    partition: int
    segments: int = 0
    segments_recovered: int = 0  # re-validated batch by batch (after a crash, or a missing index)
    truncated_bytes: int = 0
    truncated_at_offset: int | None = None  # the log end offset after the cut
    truncated_segment: str | None = None
    segments_deleted: int = 0  # segments after a cut
    log_end_offset: int = 0

    def describe(self) -> str:
        """One line for the broker's log when something was cut."""
        text = (f"{self.topic}-{self.partition}: truncated {self.truncated_bytes} invalid bytes at offset "
                f"{self.truncated_at_offset} in {self.truncated_segment}")
        if self.segments_deleted:
            text += f" and deleted the {self.segments_deleted} segment(s) after it"
        return text + f"; the log now ends at offset {self.log_end_offset}"


def load_log(
    directory: Path,
    topic: str,
    partition: int,
    config: TopicConfig,
    clock: Clock,
    *,
    recovery_point: int = 0,
    log_start_offset: int = 0,
    clean_shutdown: bool = False,
    producer_id_expiration_ms: int = 86_400_000,
    stats: LoadStats | None = None,
) -> PartitionLog:
    """Open (creating if needed) the log in ``directory``, recovering it if the shutdown was unclean.
    ``stats``, when given, is filled in with what was checked and cut (rule 6)."""
    stats = stats if stats is not None else LoadStats(topic, partition)
    directory.mkdir(parents=True, exist_ok=True)
    _remove_leftovers(directory)
    _complete_swaps(directory)
    segments = _open_segments(directory, config, clock)
    stats.segments = len(segments)
    if not segments:
        seg = _new_segment(directory, log_start_offset, config, clock)
        segments = [seg]
        recovery_point = log_start_offset
    elif clean_shutdown:
        for seg in segments:
            stats.segments_recovered += _load_clean(seg)
    else:
        segments = _recover(segments, recovery_point, stats)
        recovery_point = segments[-1].next_offset
    log_end = segments[-1].next_offset
    stats.log_end_offset = log_end
    log_start_offset = max(log_start_offset, segments[0].base_offset)
    if log_start_offset > log_end:
        log_start_offset = log_end
    producer_state = ProducerStateManager(directory, expiration_ms=producer_id_expiration_ms)
    plog = PartitionLog(
        directory,
        topic,
        partition,
        config,
        clock,
        segments,
        producer_state,
        log_start_offset=log_start_offset,
        recovery_point=min(recovery_point, log_end),
    )
    plog.rebuild_producer_state()
    plog.load_leader_epochs()
    return plog


def _remove_leftovers(directory: Path) -> None:
    for path in directory.iterdir():
        name = path.name
        if name.endswith((files.TMP_SUFFIX, files.CLEANED_SUFFIX, files.DELETED_SUFFIX)):
            log.info("removing leftover file %s", path)
            path.unlink(missing_ok=True)


def _complete_swaps(directory: Path) -> None:
    """Finish compactions that committed (``.log.swap`` exists) before the crash."""
    for swap in sorted(directory.glob("*" + files.LOG_SUFFIX + files.SWAP_SUFFIX)):
        parsed = files.parse_offset_file(swap)
        if parsed is None:
            continue
        base = parsed[0]
        seg_end = _swap_end_offset(swap, base)
        replaced = {base}  # always: an old index of <base> must not survive next to the new log
        for path in directory.glob("*" + files.LOG_SUFFIX):
            p = files.parse_offset_file(path)
            if p is not None and p[1] == files.LOG_SUFFIX and base <= p[0] < seg_end:
                replaced.add(p[0])
        for old_base in replaced:
            for suffix in files.SEGMENT_SUFFIXES:
                files.segment_file(directory, old_base, suffix).unlink(missing_ok=True)
        for suffix in files.SEGMENT_SUFFIXES:
            other = files.segment_file(directory, base, suffix + files.SWAP_SUFFIX)
            if suffix == files.LOG_SUFFIX or (suffix == files.TXN_INDEX_SUFFIX and other.exists()):
                other.rename(files.segment_file(directory, base, suffix))
            else:
                other.unlink(missing_ok=True)  # offset and time indexes are rebuilt below
        log.info("completed interrupted compaction swap at offset %d", base)
    for orphan in directory.glob("*" + files.SWAP_SUFFIX):
        log.info("removing leftover file %s", orphan)
        orphan.unlink(missing_ok=True)


def _swap_end_offset(swap: Path, base: int) -> int:
    """One past the last offset in a swap file (scanning its batch headers)."""
    end = base
    with open(swap, "rb") as f:
        for _, raw in scan_batches(f.fileno(), 0, os.fstat(f.fileno()).st_size):
            base_offset, _ = LOG_HEADER.unpack_from(raw)
            (last_delta,) = _INT32.unpack_from(raw, LAST_OFFSET_DELTA_OFFSET)
            end = base_offset + last_delta + 1
    return end


def _open_segments(directory: Path, config: TopicConfig, clock: Clock) -> list[Segment]:
    bases = []
    for path in directory.iterdir():
        parsed = files.parse_offset_file(path)
        if parsed is not None and parsed[1] == files.LOG_SUFFIX:
            bases.append(parsed[0])
    segments = []
    for base in sorted(bases):
        missing_index = not files.index_file(directory, base).exists() or not files.time_index_file(directory, base).exists()
        try:
            seg = _segment(directory, base, config, clock)
        except CorruptIndexError as e:
            log.warning("rebuilding index of %s: %s", directory, e)
            for path in (files.index_file(directory, base), files.time_index_file(directory, base)):
                path.unlink(missing_ok=True)
            seg = _segment(directory, base, config, clock)
            missing_index = True
        seg.needs_recovery = missing_index  # type: ignore[attr-defined]
        segments.append(seg)
    return segments


def _segment(directory: Path, base: int, config: TopicConfig, clock: Clock) -> Segment:
    return Segment.for_config(directory, base, config, clock.wall_ms(), new=False)


def _new_segment(directory: Path, base: int, config: TopicConfig, clock: Clock) -> Segment:
    return Segment.for_config(directory, base, config, clock.wall_ms(), new=True)


def _load_clean(seg: Segment) -> int:
    """Open a segment that needs no recovery; returns 1 if its indexes had to be rebuilt anyway."""
    if getattr(seg, "needs_recovery", False):
        seg.recover()
        return 1
    try:
        seg.offset_index.sanity_check(seg.size)
        seg.load_tail()
        seg.time_index.sanity_check(seg.next_offset)
    except CorruptIndexError as e:
        log.warning("%s: %s; rebuilding its indexes", seg.log_path, e)
        seg.recover()
        return 1
    return 0


def _recover(segments: list[Segment], recovery_point: int, stats: LoadStats) -> list[Segment]:
    """Re-validate from the segment holding the recovery point; cut at the first invalid byte."""
    kept: list[Segment] = []
    for i, seg in enumerate(segments):
        is_last = i == len(segments) - 1
        next_base = segments[i + 1].base_offset if not is_last else None
        if next_base is not None and next_base <= recovery_point and not getattr(seg, "needs_recovery", False):
            stats.segments_recovered += _load_clean(seg)
            kept.append(seg)
            continue
        truncated = seg.recover(max_batch_bytes=None)
        stats.segments_recovered += 1
        kept.append(seg)
        if truncated:
            stats.truncated_bytes = truncated
            stats.truncated_at_offset = seg.next_offset
            stats.truncated_segment = seg.log_path.name
            for later in segments[i + 1 :]:
                log.warning("deleting %s, which follows a truncated segment", later.log_path)
                later.delete_files()
                stats.segments_deleted += 1
            break
    # A segment left empty after truncation stays as the active one (its base offset is kept).
    return kept


__all__ = ["LoadStats", "load_log"]
