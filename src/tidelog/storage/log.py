"""One topic-partition's log (Kafka's ``UnifiedLog``): offsets, validation, producer state and leader
epochs over its tiers, appended at the end, read by offset.

The segments on this broker's disk are the local tier (:class:`~tidelog.storage.local_log.LocalLog`);
a remote tier (KIP-405) would hold the offsets below ``local_log_start_offset``
(:mod:`tidelog.storage.remote_tier`: the seam, none attached today, so the two start offsets are one).

Invariants::

    log_start_offset <= local_log_start_offset <= high_watermark <= log_end_offset
    offsets are assigned here, consecutively, on append_as_leader; they never change afterwards
    recovery_point <= log_end_offset: everything below it is fsync'ed

Append path (``append_as_leader``): split the records into batches, validate each one (magic, size,
CRC, record count, timestamps, producer sequence), then assign offsets by patching the batch headers in
place, write the bytes to the active segment (rolling it first if needed), and only then apply the
producer state. A failed validation writes nothing and changes nothing; a failed write (a full disk)
is rolled back and answers KAFKA_STORAGE_ERROR (see :meth:`PartitionLog._append_bytes`).

Concurrency: loop-only, not thread-safe. ``flush()`` is the one method meant for an executor thread;
the owner must not truncate or close the log while a flush runs.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tidelog import disk_space, meter
from tidelog.clock import Clock
from tidelog.config import INT_MAX, TopicConfig
from tidelog.errors import ErrorCode, KafkaError
from tidelog.records import (
    RecordBatchView,
    RecordsError,
    TimestampType,
)
from tidelog.records.control import ControlRecordType, build_control_batch
from tidelog.storage import files
from tidelog.storage.checkpoints import CheckpointError
from tidelog.storage.leader_epoch import LEADER_EPOCH_FILE, LeaderEpochCache
from tidelog.storage.local_log import LocalLog
from tidelog.storage.producer_state import CompletedTxn, ProducerStateManager
from tidelog.storage.remote_tier import RemoteTier
from tidelog.storage.retention import segments_to_delete
from tidelog.storage.segment import FileSlice, Segment
from tidelog.storage.txn_index import AbortedTxn
from tidelog.storage.validator import (
    BROKER_CODECS,
    check_records,
    convert_legacy,
    recompress,
    split_and_validate,
    writable,
)

log = logging.getLogger(__name__)

EARLIEST_TIMESTAMP = -2
LATEST_TIMESTAMP = -1
MAX_TIMESTAMP = -3


@dataclass(frozen=True, slots=True)
class AppendResult:
    """Where an append landed. ``duplicate`` means an idempotent retry: nothing was written."""

    first_offset: int
    last_offset: int
    log_append_time: int  # -1 unless the topic uses LogAppendTime
    log_start_offset: int
    record_count: int
    max_timestamp: int
    duplicate: bool = False


@dataclass(frozen=True, slots=True)
class ReadResult:
    records: FileSlice | None
    high_watermark: int
    log_start_offset: int
    log_end_offset: int


class PartitionLog:
    """The log of one topic-partition. Build it with :func:`tidelog.storage.loader.load_log`."""

    def __init__(
        self,
        directory: Path,
        topic: str,
        partition: int,
        config: TopicConfig,
        clock: Clock,
        segments: list[Segment],
        producer_state: ProducerStateManager,
        *,
        log_start_offset: int,
        recovery_point: int,
    ) -> None:
        self.directory = directory
        self.topic = topic
        self.partition = partition
        self.config = config
        self.clock = clock
        #: The segments on this broker's disk.
        self.local = LocalLog(directory, segments)
        #: Offsets below the local log start, held elsewhere (KIP-405); None: every offset is local.
        self.remote: RemoteTier | None = None
        self.producer_state = producer_state
        self.log_start_offset = log_start_offset
        self.recovery_point = recovery_point
        self.high_watermark = self.log_end_offset
        #: With no followers (a single replica), every appended offset is committed at once. The
        #: replication layer sets this to False and advances the high watermark itself.
        self.high_watermark_follows_end = True
        self.unflushed_messages = 0
        self.last_flush_ms = clock.monotonic_ms()
        self.closed = False
        #: Compaction: the first dirty offset (the cleaner-offset-checkpoint entry); None = never cleaned.
        self.cleaner_offset: int | None = None
        #: Where each leader epoch began (KIP-101); loaded by the loader, kept up to date by appends.
        self.leader_epochs = LeaderEpochCache(None)
        #: fsync latency of :meth:`flush` (metrics on), set by the log manager.
        self.flush_latency: meter.SyncHistogram | None = None
        #: The free-space state of the log dir (a full disk), set by the log manager.
        self.dir_space: disk_space.LogDirSpace | None = None

    # ----------------------------------------------------------------------------------- offsets

    @property
    def segments(self) -> list[Segment]:
        """The local segments, oldest first (storage's own modules and tests; readers get figures)."""
        return self.local.segments

    @segments.setter
    def segments(self, segments: list[Segment]) -> None:
        self.local.segments = segments

    @property
    def active_segment(self) -> Segment:
        return self.local.active_segment

    @property
    def log_end_offset(self) -> int:
        return self.local.end_offset

    @property
    def local_log_start_offset(self) -> int:
        """The first offset on this broker's disk (Kafka's ``localLogStartOffset``): the log start offset
        without a remote tier; with one, where the local segments begin."""
        if self.remote is None:
            return self.log_start_offset
        return max(self.log_start_offset, self.local.segments[0].base_offset)

    @property
    def size(self) -> int:
        """Bytes of the local segments."""
        return self.local.size

    @property
    def segment_count(self) -> int:
        return len(self.local.segments)

    def update_high_watermark(self, offset: int) -> None:
        self.high_watermark = max(self.log_start_offset, min(offset, self.log_end_offset))

    # ------------------------------------------------------------------------------------ append

    def append_as_leader(self, records, *, leader_epoch: int = 0, from_client: bool = True) -> AppendResult:
        """Validate, assign offsets, write. ``records`` is the records field of a produce request
        (``from_client=False``: a coordinator's batch, see producer_state rule 8).

        Raises KafkaError with the code the produce response must carry (CORRUPT_MESSAGE,
        INVALID_RECORD, MESSAGE_TOO_LARGE, INVALID_TIMESTAMP, OUT_OF_ORDER_SEQUENCE_NUMBER,
        INVALID_PRODUCER_EPOCH ...)."""
        data = writable(records)
        if len(data) > 16 and data[16] < 2:  # magic v0/v1 message set (Produce v0-v2)
            data = bytearray(convert_legacy(data))
        now = self.clock.wall_ms()
        views = split_and_validate(data, self.config.max_message_bytes)
        check_records(views, self.config, now, self.topic, self.partition)
        target = BROKER_CODECS.get(self.config.compression_type)  # None: keep the producer's codec
        if target is not None and any(view.compression_type != target for view in views):
            data, views = recompress(views, target, self.config.max_message_bytes)
        log_append = self.config.message_timestamp_type == "LogAppendTime"
        if len(views) > 1 and any(v.producer_id >= 0 for v in views):
            raise KafkaError(ErrorCode.INVALID_RECORD, "an idempotent produce must carry exactly one batch")
        pending = []
        for view in views:
            if view.producer_id >= 0:
                append = self.producer_state.prepare(view, from_client=from_client)
                if append.is_duplicate:
                    original = append.duplicate
                    return AppendResult(
                        original.first_offset, original.last_offset, -1, self.log_start_offset,
                        view.record_count, original.max_timestamp, duplicate=True,
                    )
                pending.append(append)
            else:
                pending.append(None)
        next_offset = self.log_end_offset
        max_ts, offset_of_max_ts = -1, next_offset
        for view in views:
            view.assign(next_offset, leader_epoch)
            if log_append:
                view.set_log_append_time(now)
            if view.max_timestamp > max_ts:
                max_ts, offset_of_max_ts = view.max_timestamp, view.last_offset
            next_offset = view.last_offset + 1
        first, last = self.log_end_offset, next_offset - 1
        self._append_bytes(data, first, last, max_ts, offset_of_max_ts, now, [(leader_epoch, first)])
        for view, append in zip(views, pending):
            if append is not None:
                self._completed(self.producer_state.complete(append, view.base_offset, view.last_offset))
        count = last - first + 1
        self.unflushed_messages += count
        return AppendResult(first, last, now if log_append else -1, self.log_start_offset, count, max_ts)

    def append_marker(self, producer_id: int, producer_epoch: int, coordinator_epoch: int, *, commit: bool,
                      leader_epoch: int = 0) -> AppendResult:
        """Write a transaction marker (COMMIT or ABORT) for ``producer_id``, as the transaction
        coordinator asks (WriteTxnMarkers). Ends the producer's ongoing transaction here; an aborted
        one goes into the segment's aborted-transaction index. Raises KafkaError
        (INVALID_PRODUCER_EPOCH, TRANSACTION_COORDINATOR_FENCED)."""
        now = self.clock.wall_ms()
        batch = bytearray(build_control_batch(
            ControlRecordType.COMMIT if commit else ControlRecordType.ABORT, producer_id=producer_id,
            producer_epoch=producer_epoch, coordinator_epoch=coordinator_epoch, timestamp_ms=now))
        view = RecordBatchView(batch)
        append = self.producer_state.prepare(view)
        offset = self.log_end_offset
        view.assign(offset, leader_epoch)
        self._append_bytes(batch, offset, offset, view.max_timestamp, offset, now, [(leader_epoch, offset)])
        self._completed(self.producer_state.complete(append, offset, offset))
        self.unflushed_messages += 1
        return AppendResult(offset, offset, -1, self.log_start_offset, 1, view.max_timestamp)

    def _completed(self, txn: CompletedTxn | None) -> None:
        """A marker ended a transaction: an aborted one is indexed in the segment holding the marker."""
        if txn is None or not txn.is_aborted:
            return
        self.local.index_aborted(AbortedTxn(txn.producer_id, txn.first_offset, txn.last_offset,
                                            self.producer_state.last_stable_offset_after(txn)))

    @property
    def last_stable_offset(self) -> int:
        """The offset below which every transaction is decided: the first offset of the oldest open
        transaction (never below the log start offset: retention may have deleted its start, as
        Kafka's first unstable offset), or the high watermark when none is open (read_committed reads
        up to here)."""
        first_open = self.producer_state.first_undecided_offset()
        if first_open is None:
            return self.high_watermark
        return min(max(first_open, self.log_start_offset), self.high_watermark)

    def aborted_transactions(self, fetch_offset: int, upper_bound: int) -> list[AbortedTxn]:
        """The aborted transactions overlapping [fetch_offset, upper_bound), from the segment holding
        ``fetch_offset`` on (a marker is indexed in its own segment, maybe after the data)."""
        return self.local.aborted_transactions(fetch_offset, upper_bound)

    def aborted_in_read(self, fetch_offset: int, records: FileSlice | None) -> list[AbortedTxn]:
        """The aborted transactions a read_committed fetch of ``records`` (from ``fetch_offset``)
        must report: those overlapping [fetch_offset, the offset after the last batch read)."""
        if not self.local.has_aborted_from(fetch_offset):
            return []
        return self.aborted_transactions(fetch_offset, self.local.offset_after(records) if records else fetch_offset)

    def next_offset_after(self, records: FileSlice) -> int:
        """The offset after the last batch of ``records`` (a slice this log's :meth:`read` returned)."""
        return self.local.offset_after(records)

    def append_as_follower(self, records) -> AppendResult:
        """Append batches whose offsets the leader assigned (replication, and coordinator replays)."""
        data = writable(records)
        views = split_and_validate(data, self.config.max_message_bytes, from_client=False)
        if views[0].base_offset < self.log_end_offset:
            raise KafkaError(
                ErrorCode.INVALID_RECORD,
                f"offset {views[0].base_offset} is below the log end offset {self.log_end_offset}",
            )
        max_ts, offset_of_max_ts = -1, views[0].base_offset
        prev = self.log_end_offset - 1
        for view in views:
            if view.base_offset <= prev:
                raise KafkaError(ErrorCode.INVALID_RECORD, "batch offsets must increase")
            prev = view.last_offset
            if view.max_timestamp > max_ts:
                max_ts, offset_of_max_ts = view.max_timestamp, view.last_offset
        self._append_bytes(data, views[0].base_offset, views[-1].last_offset, max_ts, offset_of_max_ts,
                           self.clock.wall_ms(), [(view.partition_leader_epoch, view.base_offset) for view in views])
        for view in views:
            self._completed(self.producer_state.replay(view))
        count = sum(v.record_count for v in views)
        self.unflushed_messages += count
        return AppendResult(views[0].base_offset, views[-1].last_offset, -1, self.log_start_offset, count, max_ts)

    def _append_bytes(self, data, first: int, last: int, max_ts: int, offset_of_max_ts: int, now: int,
                      epochs: list[tuple[int, int]]) -> None:
        """Record where leader ``epochs`` (epoch, start offset) begin, then write the batches. A write
        that fails (a full disk ...) leaves the log as it was (the segment rolls a partial write back)
        and raises KafkaError(KAFKA_STORAGE_ERROR); the log dir's state (:mod:`tidelog.disk_space`)
        logs the condition once."""
        space = self.dir_space
        try:
            for epoch, start_offset in epochs:
                self.leader_epochs.assign(epoch, start_offset)
            segment = self._maybe_roll(len(data), first, last, now, max_ts)
            segment.append(data, first, last, max_ts, offset_of_max_ts)
        except OSError as e:
            if space is not None:
                space.write_failed(e, f"an append to {self.topic}-{self.partition}", len(data))
            raise KafkaError(ErrorCode.KAFKA_STORAGE_ERROR,
                             f"cannot write to {self.topic}-{self.partition}: {disk_space.describe(e)}") from None
        if space is not None and space.failing:
            space.write_succeeded()  # ends a failure other than "no room" (disk_space.check ends that)
        if self.high_watermark_follows_end:
            self.high_watermark = last + 1

    def _maybe_roll(self, size: int, first: int, last: int, now: int, max_ts: int) -> Segment:
        seg = self.active_segment
        cfg = self.config
        if seg.size > 0 and (
            seg.size + size > cfg.segment_bytes
            or seg.offset_index.is_full
            or seg.time_index.is_full
            or last - seg.base_offset > INT_MAX
            or self._segment_too_old(seg, now, max_ts)
        ):
            return self.roll(first)
        return seg

    def _segment_too_old(self, seg: Segment, now: int, max_ts: int) -> bool:
        """Kafka's rule: the incoming batch's max timestamp minus the segment's first batch timestamp
        (or, without timestamps, now minus the segment's creation) exceeds segment.ms - jitter."""
        if seg.first_batch_timestamp >= 0:
            waited = max_ts - seg.first_batch_timestamp
        else:
            waited = now - seg.created_ms
        roll_ms = self.config.segment_ms
        if self.config.compact:  # KIP-354: compacted logs also roll by max.compaction.lag.ms
            roll_ms = min(roll_ms, self.config.max_compaction_lag_ms)
        return waited > roll_ms - self.config.segment_jitter_ms

    def roll(self, base_offset: int | None = None) -> Segment:
        """Start a new active segment at ``base_offset`` (default: the log end offset)."""
        base = self.log_end_offset if base_offset is None else base_offset
        old = self.active_segment
        if old.size == 0 and old.base_offset == base:
            return old
        seg = self.local.roll(base, self.config, self.clock.wall_ms())
        try:
            self.producer_state.take_snapshot(base)
        except OSError as e:  # an optimisation: recovery replays from an older snapshot instead
            log.debug("%s-%d: no producer snapshot at %d: %s", self.topic, self.partition, base, e)
        return seg

    # -------------------------------------------------------------------------------------- read

    def read(self, offset: int, max_bytes: int, *, max_offset: int | None = None, min_one_batch: bool = True) -> ReadResult:
        """Whole batches from ``offset`` up to ``max_offset`` (exclusive; default: the high watermark);
        below the local log start offset the remote tier answers (never today: there is none).

        Raises KafkaError(OFFSET_OUT_OF_RANGE) when ``offset`` is outside [log start, log end]."""
        leo = self.log_end_offset
        if offset < self.log_start_offset or offset > leo:
            raise KafkaError(
                ErrorCode.OFFSET_OUT_OF_RANGE,
                f"offset {offset} is outside [{self.log_start_offset}, {leo}] of {self.topic}-{self.partition}",
            )
        limit = self.high_watermark if max_offset is None else max_offset
        if self.remote is not None and offset < self.local_log_start_offset:
            result = self.remote.read(offset, max_bytes, limit, min_one_batch)
        else:
            result = self.local.read(offset, max_bytes, limit, min_one_batch)
        return ReadResult(result, self.high_watermark, self.log_start_offset, leo)

    def batches(self, start_offset: int = 0, end_offset: int | None = None) -> Iterator[RecordBatchView]:
        """Every local batch overlapping [start_offset, end_offset), in order (tools, coordinators, tests)."""
        return self.local.batches(start_offset, self.log_end_offset if end_offset is None else end_offset)

    # ----------------------------------------------------------------------------- by timestamp

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """ListOffsets: (timestamp, offset) for EARLIEST (-2), LATEST (-1), MAX_TIMESTAMP (-3) or the
        first record whose timestamp >= ``timestamp``; None when no record qualifies."""
        if timestamp == EARLIEST_TIMESTAMP:
            return -1, self.log_start_offset
        if timestamp == LATEST_TIMESTAMP:
            return -1, self.high_watermark
        if timestamp == MAX_TIMESTAMP:
            return self._max_timestamp_and_offset()
        if self.remote is not None:
            found = self.remote.find_offset_by_timestamp(timestamp, self.log_start_offset)
            if found is not None:
                return found
        return self.local.find_offset_by_timestamp(timestamp, self.local_log_start_offset, self.high_watermark)

    def legacy_offsets_before(self, timestamp: int, max_num_offsets: int) -> list[int]:
        """ListOffsets v0 (Kafka's ``legacyFetchOffsetsBefore``): LATEST lists the high watermark and
        then every segment's base offset, newest first, up to ``max_num_offsets``; otherwise the one
        offset :meth:`offset_for_timestamp` finds (the high watermark when none qualifies). Kafka used
        segment file times; record times are better."""
        limit = max(1, max_num_offsets)
        if timestamp == LATEST_TIMESTAMP:
            points = {self.high_watermark} | {max(base, self.log_start_offset) for base in self.local.base_offsets()}
            return sorted(points, reverse=True)[:limit]
        found = self.offset_for_timestamp(timestamp)
        return [self.high_watermark if found is None else found[1]]

    def _max_timestamp_and_offset(self) -> tuple[int, int] | None:
        """The largest timestamp and the offset of the first record that carries it (Kafka 3.7+,
        KAFKA-16310): the segments know which batch holds it; that batch's records tell which one."""
        best = self.local.max_timestamp_batch()
        if best is None:
            return None
        max_ts, batch_last_offset = best
        for view in self.batches(batch_last_offset, batch_last_offset + 1):
            if view.max_timestamp != max_ts:
                continue
            if view.timestamp_type == TimestampType.LOG_APPEND_TIME:
                return max_ts, view.base_offset  # every record carries the append time
            try:
                for record in view.records():
                    if record.timestamp == max_ts:
                        return max_ts, record.offset
            except RecordsError:
                break
        return max_ts, batch_last_offset

    # ---------------------------------------------------------------------- flush, retention, trim

    def flush_due(self) -> bool:
        if self.log_end_offset <= self.recovery_point:
            return False
        if self.unflushed_messages >= self.config.flush_messages:
            return True
        return self.clock.monotonic_ms() - self.last_flush_ms >= self.config.flush_ms

    def flush(self, up_to: int | None = None) -> int:
        """fsync every segment holding offsets in [recovery point, up_to); returns the new recovery point.

        Safe to run in an executor thread while the loop keeps appending."""
        target = self.log_end_offset if up_to is None else up_to
        if target <= self.recovery_point:
            return self.recovery_point
        started = meter.now() if self.flush_latency is not None else 0
        self.local.flush(self.recovery_point, target)
        if self.flush_latency is not None:
            self.flush_latency.observe((meter.now() - started) / 1e9)
        self.recovery_point = max(self.recovery_point, target)
        self.unflushed_messages = 0
        self.last_flush_ms = self.clock.monotonic_ms()
        return self.recovery_point

    def delete_records_before(self, offset: int) -> int:
        """DeleteRecords: move the log start offset up to ``offset`` (<= high watermark)."""
        if offset > self.high_watermark:
            raise KafkaError(
                ErrorCode.OFFSET_OUT_OF_RANGE, f"offset {offset} is above the high watermark {self.high_watermark}"
            )
        if offset > self.log_start_offset:
            self.log_start_offset = offset
            try:  # files that only shrink; one a full disk keeps from being rewritten is rewritten later
                self.leader_epochs.truncate_from_start(offset)
                self.producer_state.delete_snapshots_before(self._segment_base_at_or_below(offset))
            except OSError as e:
                log.warning("%s-%d: log start offset %d kept in memory; writing its files failed: %s",
                            self.topic, self.partition, offset, e)
        return self.log_start_offset

    def _segment_base_at_or_below(self, offset: int) -> int:
        return self.local.floor_segment(offset).base_offset

    def expired_segments(self) -> list[Segment]:
        """Apply retention: remove whole old segments from the log and rename their files to
        ``.deleted``. Returns them; the caller removes the files after ``file.delete.delay.ms``."""
        count = segments_to_delete(
            self.local.summaries(),
            now_ms=self.clock.wall_ms(),
            log_start_offset=self.log_start_offset,
            retention_ms=self.config.retention_ms,
            retention_bytes=self.config.retention_bytes,
            delete_policy=self.config.delete,
        )
        # Never delete records the high watermark has not passed.
        while count and self.segments[count - 1].next_offset > self.high_watermark:
            count -= 1
        if not count:
            return []
        removed = self.local.remove_oldest(count)
        self.log_start_offset = max(self.log_start_offset, self.segments[0].base_offset)
        self.leader_epochs.truncate_from_start(self.log_start_offset)
        for seg in removed:
            seg.rename_with_suffix(files.DELETED_SUFFIX)
        self.producer_state.delete_snapshots_before(self.segments[0].base_offset)
        return removed

    def replace_segments(self, new_segments: list[Segment], old_segments: list[Segment]) -> None:
        """Compaction: put ``new_segments`` in place of ``old_segments``, a run of consecutive inactive
        segments of this log. In memory only: the cleaner renames the files (cleaner.py)."""
        self.local.replace(new_segments, old_segments)

    def truncate_to(self, offset: int) -> None:
        """Remove every offset >= ``offset`` (replication: a follower's divergent tail). The leader-epoch
        cache is cut at ``offset`` even when the log has nothing there (an epoch this broker began as
        leader without writing in it must not outlive its becoming a follower, as in Kafka)."""
        if offset >= self.log_end_offset:
            self.leader_epochs.truncate_from_end(offset)
            return
        if offset < self.log_start_offset:
            raise KafkaError(ErrorCode.OFFSET_OUT_OF_RANGE, f"cannot truncate below log start {self.log_start_offset}")
        if self.cleaner_offset is not None:
            self.cleaner_offset = min(self.cleaner_offset, offset)
        self.local.truncate_to(offset)
        self.recovery_point = min(self.recovery_point, self.log_end_offset)
        self.high_watermark = min(self.high_watermark, self.log_end_offset)
        self.leader_epochs.truncate_from_end(self.log_end_offset)
        self.producer_state.truncate_after(self.log_end_offset)
        self.rebuild_producer_state()

    def rebuild_producer_state(self) -> None:
        """Latest producer snapshot at or below the log end, then replay the log from there (which
        also puts back index entries of aborted transactions a recovery emptied)."""
        start = self.producer_state.load(self.log_start_offset, self.log_end_offset)
        for view in self.batches(max(start, self.log_start_offset)):
            self._completed(self.producer_state.replay(view))

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Drop everything and restart the log empty at ``offset``."""
        self.local.restart_at(offset, self.config, self.clock.wall_ms())
        self.log_start_offset = self.recovery_point = self.high_watermark = offset
        self.cleaner_offset = None
        self.leader_epochs.clear()
        self.producer_state.truncate_after(-1)
        self.producer_state.load(offset, offset)  # no snapshot left: an empty state

    def load_leader_epochs(self) -> None:
        """Read ``leader-epoch-checkpoint`` (rebuilt from the batches' leader epochs when missing, as
        for a log written before the file existed), cut to the log's end."""
        try:
            cache = LeaderEpochCache.load(self.directory)
            rebuild = not cache.exists_on_disk
        except CheckpointError:
            cache, rebuild = LeaderEpochCache(self.directory / LEADER_EPOCH_FILE), True
        if rebuild and self.log_end_offset > self.log_start_offset:
            for view in self.batches(self.log_start_offset):
                if view.partition_leader_epoch >= 0 and view.partition_leader_epoch > cache.latest_epoch:
                    cache.entries.append((view.partition_leader_epoch, view.base_offset))
            cache.save()
        cache.truncate_from_end(self.log_end_offset)
        self.leader_epochs = cache

    def update_config(self, config: TopicConfig) -> None:
        self.config = config
        for seg in self.segments:
            seg.index_interval_bytes = config.index_interval_bytes

    def close(self) -> None:
        if self.closed:
            return
        self.producer_state.take_snapshot(self.log_end_offset)
        self.local.close()
        self.closed = True

    def close_for_deletion(self) -> None:
        """Close every file without a final snapshot: the partition is being deleted (DeleteTopics);
        the log manager moves and removes the directory."""
        self.local.close()
        self.closed = True

    def __repr__(self) -> str:
        return (
            f"PartitionLog({self.topic}-{self.partition}, start={self.log_start_offset}, "
            f"end={self.log_end_offset}, hw={self.high_watermark}, segments={len(self.segments)})"
        )


__all__ = [
    "EARLIEST_TIMESTAMP",
    "LATEST_TIMESTAMP",
    "MAX_TIMESTAMP",
    "AppendResult",
    "PartitionLog",
    "ReadResult",
]
