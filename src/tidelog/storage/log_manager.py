"""All partition logs of a broker, across its log directories, and their housekeeping.

Start-up: :meth:`lock_dirs` first checks every log dir and takes its exclusive lock (see
:mod:`tidelog.storage.log_dir`), before anything is read. Then :meth:`startup`, for each log dir,
reads the recovery-point and log-start checkpoints, notes whether the clean-shutdown marker is there
(and removes it: from now on a crash is unclean), opens every ``<topic>-<partition>`` directory with
:func:`~tidelog.storage.loader.load_log` and returns a :class:`StartupReport` per log dir saying
what was checked and cut, and how long it took.

Deleting a partition (:meth:`delete_log`) closes it and renames its directory to
``<topic>-<partition>.<id>-delete`` at once; the files go later, off the event loop, in
:meth:`purge_deleted_logs` (also for leftovers of a crash found at start-up), as Kafka does.

Housekeeping the owner calls periodically (the broker schedules these; blocking ones in an executor):

* :meth:`flush_due_logs` — fsync logs whose ``flush.messages`` / ``flush.ms`` policy says so;
* :meth:`checkpoint` — write recovery points and log start offsets (atomic replace);
* :meth:`apply_retention` — delete expired segments (renamed ``.deleted``, removed after
  ``file.delete.delay.ms`` by :meth:`remove_deleted_segments`);
* compaction, in three steps (see :class:`~tidelog.storage.cleaner.LogCleaner`):
  :meth:`grab_filthiest_compacted_log` on the loop, ``self.cleaner.clean(plan)`` in an executor, then
  :meth:`complete_clean` on the loop (or :meth:`clean_filthiest_log`, all on the calling thread).
  The first dirty offset of each compacted log is kept in ``cleaner-offset-checkpoint``.

Shutdown: flush everything, checkpoint, close, and write the clean-shutdown marker last.

Concurrency: loop-only, not thread-safe, except the methods documented as executor-safe.
"""

from __future__ import annotations

import logging
import os
import shutil
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tidelog import disk_space
from tidelog.clock import Clock
from tidelog.config import TopicConfig
from tidelog.disk_space import LogDirSpace
from tidelog.meter import SyncHistogram
from tidelog.storage import files
from tidelog.storage.checkpoints import CheckpointError, fsync_dir, read_checkpoint, write_checkpoint
from tidelog.storage.cleaner import CleanerError, CleanPlan, CleanResult, LogCleaner, log_to_clean
from tidelog.storage.loader import LoadStats, load_log
from tidelog.storage.log import PartitionLog
from tidelog.storage.log_dir import LogDirLock, prepare_log_dir
from tidelog.storage.segment import Segment

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]


@dataclass(slots=True)
class StartupReport:
    """What opening one log dir did: clean or recovered, what was checked and cut, how long it took."""

    log_dir: Path
    clean: bool
    partitions: int = 0
    segments: int = 0
    segments_recovered: int = 0
    truncated: list[LoadStats] = field(default_factory=list)
    deleted_dirs: int = 0
    elapsed_ms: int = 0

    @property
    def truncated_bytes(self) -> int:
        return sum(s.truncated_bytes for s in self.truncated)

    def describe(self) -> list[str]:
        """Lines for the broker's log (Kafka prints the same facts while loading logs)."""
        if not self.partitions:
            return [f"log dir {self.log_dir}: no partition logs yet"]
        if self.clean:
            return [f"log dir {self.log_dir}: clean shutdown, no recovery needed; loaded {self.partitions} "
                    f"partitions ({self.segments} segments) in {self.elapsed_ms} ms"]
        lines = [s.describe() for s in self.truncated]
        lines.append(
            f"log dir {self.log_dir}: recovered after an unclean shutdown in {self.elapsed_ms} ms: "
            f"{self.partitions} partitions, {self.segments_recovered} of {self.segments} segments re-validated, "
            + (f"{self.truncated_bytes} invalid bytes truncated in {len(self.truncated)} partitions"
               if self.truncated else "nothing truncated"))
        return lines


class LogManager:
    """Owns every PartitionLog of the broker."""

    def __init__(
        self,
        log_dirs: list[Path],
        clock: Clock,
        *,
        topic_config: Callable[[str], TopicConfig] | None = None,
        producer_id_expiration_ms: int = 86_400_000,
        flush_latency: SyncHistogram | None = None,
    ) -> None:
        if not log_dirs:
            raise ValueError("at least one log dir is needed")
        self.log_dirs = [Path(d) for d in log_dirs]
        self.clock = clock
        self.topic_config = topic_config or (lambda topic: TopicConfig())
        self.producer_id_expiration_ms = producer_id_expiration_ms
        self._logs: dict[TopicPartition, PartitionLog] = {}
        self._dir_of: dict[TopicPartition, Path] = {}
        self._deleted: list[tuple[int, Segment]] = []  # (remove at monotonic ms, segment)
        self.had_clean_shutdown: dict[Path, bool] = {}
        self.cleaner = LogCleaner(clock)
        self._cleaning: dict[TopicPartition, CleanPlan] = {}  # passes between plan and commit
        self._uncleanable: set[TopicPartition] = set()  # a pass failed on unreadable data
        self._delete_horizons: dict[TopicPartition, int] = {}  # earliest retained tombstone horizon
        self._locks: list[LogDirLock] = []
        self._pending_removal: list[Path] = []  # renamed "-delete" dirs whose files must go
        #: fsync latency of every log's flush (None: metrics off).
        self.flush_latency = flush_latency
        #: Free space of each log dir: the "full" condition and the space reserve (tidelog.disk_space).
        self.space = {d: LogDirSpace(d) for d in self.log_dirs}

    # --------------------------------------------------------------------------------- lifecycle

    def lock_dirs(self) -> None:
        """Check every log dir and take its exclusive lock, before anything is read. Raises
        :class:`~tidelog.storage.log_dir.LogDirError` (nothing is held then)."""
        try:
            for log_dir in self.log_dirs:
                prepare_log_dir(log_dir)
                lock = LogDirLock(log_dir)
                lock.acquire()
                self._locks.append(lock)
                disk_space.register(self.space[log_dir])
                self.space[log_dir].ensure_reserve()
        except Exception:
            self.release_dirs()
            raise

    def release_dirs(self) -> None:
        for space in self.space.values():
            disk_space.unregister(space)
        for lock in self._locks:
            lock.release()
        self._locks = []

    def startup(self) -> list[StartupReport]:
        """Open every log found in the log dirs (recovering after a crash). Blocking. Returns one
        report per log dir."""
        reports = []
        for log_dir in self.log_dirs:
            started_ms = self.clock.monotonic_ms()
            log_dir.mkdir(parents=True, exist_ok=True)
            marker = log_dir / files.CLEAN_SHUTDOWN_FILE
            clean = marker.exists()
            self.had_clean_shutdown[log_dir] = clean
            try:
                recovery = read_checkpoint(log_dir / files.RECOVERY_POINT_CHECKPOINT)
                starts = read_checkpoint(log_dir / files.LOG_START_OFFSET_CHECKPOINT)
            except CheckpointError as e:
                log.warning("%s; recovering every log of %s", e, log_dir)
                recovery, starts, clean = {}, {}, False
            try:
                cleaner_offsets = read_checkpoint(log_dir / files.CLEANER_OFFSET_CHECKPOINT)
            except CheckpointError as e:
                log.warning("%s; compacting the logs of %s from their start", e, log_dir)
                cleaner_offsets = {}
            report = StartupReport(log_dir, clean)
            children = [c for c in sorted(log_dir.iterdir()) if c.is_dir()]
            partition_dirs = [(c, files.parse_partition_dir(c.name)) for c in children]
            if not clean and any(tp is not None for _, tp in partition_dirs):
                log.info("log dir %s was not shut down cleanly: recovering its logs", log_dir)
            for child, tp in partition_dirs:
                if files.is_deleted_partition_dir(child.name):
                    self._pending_removal.append(child)
                    report.deleted_dirs += 1
                    continue
                if tp is None:
                    continue
                if tp in self._logs:
                    raise RuntimeError(f"partition {tp} found in two log dirs: {self._dir_of[tp]} and {log_dir}")
                stats = LoadStats(*tp)
                self._logs[tp] = load_log(
                    child,
                    tp[0],
                    tp[1],
                    self.topic_config(tp[0]),
                    self.clock,
                    recovery_point=recovery.get(tp, 0),
                    log_start_offset=starts.get(tp, 0),
                    clean_shutdown=clean,
                    producer_id_expiration_ms=self.producer_id_expiration_ms,
                    stats=stats,
                )
                self._logs[tp].cleaner_offset = cleaner_offsets.get(tp)
                self._logs[tp].flush_latency = self.flush_latency
                self._logs[tp].dir_space = self.space[log_dir]
                self._dir_of[tp] = log_dir
                report.partitions += 1
                report.segments += stats.segments
                report.segments_recovered += stats.segments_recovered
                if stats.truncated_bytes:
                    report.truncated.append(stats)
            if marker.exists():
                marker.unlink()  # a crash from now on must trigger recovery
            report.elapsed_ms = self.clock.monotonic_ms() - started_ms
            reports.append(report)
        return reports

    def shutdown(self) -> None:
        """Flush, checkpoint, close every log, then mark each log dir as cleanly shut down. A write
        that fails (a full disk) is logged in one line and leaves that log dir without the marker:
        the next start recovers it, and nothing acknowledged is lost (the appends were whole)."""
        failed: set[Path] = set()

        def attempt(log_dir: Path, what: str, step: Callable[[], object]) -> None:
            try:
                step()
            except OSError as e:
                if log_dir not in failed:
                    log.warning("log dir %s: %s failed at shutdown (%s); the next start recovers it",
                                log_dir, what, disk_space.describe(e))
                failed.add(log_dir)

        for tp, plog in self._logs.items():
            attempt(self._dir_of.get(tp, plog.directory.parent), "a flush", plog.flush)
        for log_dir in self.log_dirs:
            attempt(log_dir, "writing the checkpoints", lambda d=log_dir: self._checkpoint_dir(d))
        for tp, plog in self._logs.items():
            attempt(self._dir_of.get(tp, plog.directory.parent), "closing a log", plog.close)
        self.remove_deleted_segments(force=True)
        self.purge_deleted_logs()
        for log_dir in self.log_dirs:
            if log_dir not in failed:
                attempt(log_dir, "writing the clean-shutdown marker", lambda d=log_dir: self._mark_clean(d))
        self.release_dirs()

    @staticmethod
    def _mark_clean(log_dir: Path) -> None:
        (log_dir / files.CLEAN_SHUTDOWN_FILE).write_bytes(b"")
        fsync_dir(log_dir)

    # ------------------------------------------------------------------------------------- logs

    def get_log(self, topic: str, partition: int) -> PartitionLog | None:
        return self._logs.get((topic, partition))

    def get_or_create_log(self, topic: str, partition: int, config: TopicConfig | None = None) -> PartitionLog:
        tp = (topic, partition)
        plog = self._logs.get(tp)
        if plog is not None:
            return plog
        log_dir = min(self.log_dirs, key=lambda d: sum(1 for v in self._dir_of.values() if v == d))
        plog = load_log(
            files.partition_dir(log_dir, topic, partition),
            topic,
            partition,
            config or self.topic_config(topic),
            self.clock,
            producer_id_expiration_ms=self.producer_id_expiration_ms,
        )
        plog.flush_latency = self.flush_latency
        plog.dir_space = self.space[log_dir]
        self._logs[tp] = plog
        self._dir_of[tp] = log_dir
        return plog

    def delete_log(self, topic: str, partition: int) -> bool:
        """Close the partition and rename its directory out of the way (cheap, loop-safe); its files
        are removed by :meth:`purge_deleted_logs`. False if there was no such log."""
        tp = (topic, partition)
        plog = self._logs.pop(tp, None)
        if plog is None:
            return False
        log_dir = self._dir_of.pop(tp, plog.directory.parent)
        self._uncleanable.discard(tp)
        self._delete_horizons.pop(tp, None)
        plog.close_for_deletion()  # a pass in flight notices the closed log at commit and discards itself
        target = files.deleted_partition_dir(log_dir, topic, partition, uuid.uuid4().hex)
        try:
            os.rename(plog.directory, target)
        except FileNotFoundError:
            return True
        self._pending_removal.append(target)
        return True

    @property
    def pending_removal(self) -> int:
        """Deleted partition directories whose files are not removed yet."""
        return len(self._pending_removal)

    def purge_deleted_logs(self) -> int:
        """Remove the files of deleted partitions. Executor-safe (items are taken one at a time).
        Returns how many directories went."""
        removed = 0
        while self._pending_removal:
            try:
                path = self._pending_removal.pop()
            except IndexError:
                break
            shutil.rmtree(path, ignore_errors=True)
            removed += 1
        return removed

    def logs(self) -> Iterator[tuple[TopicPartition, PartitionLog]]:
        return iter(list(self._logs.items()))

    def log_dir_of(self, topic: str, partition: int) -> Path | None:
        return self._dir_of.get((topic, partition))

    # ---------------------------------------------------------------------------- housekeeping

    def logs_due_for_flush(self) -> list[PartitionLog]:
        return [plog for plog in self._logs.values() if plog.flush_due()]

    def flush_due_logs(self) -> int:
        """fsync every log its flush policy says is due. Executor-safe. Returns how many."""
        due = self.logs_due_for_flush()
        for plog in due:
            plog.flush()
        return len(due)

    def checkpoint(self) -> None:
        """Write the recovery-point and log-start-offset checkpoints of every log dir. Executor-safe.
        A log dir whose file system is full (even for the space reserve) keeps its previous files
        (the log dir's state logged it): the next run writes them."""
        for log_dir in self.log_dirs:
            try:
                self._checkpoint_dir(log_dir)
            except OSError as e:
                if not disk_space.is_out_of_space(e):
                    raise
                self.space[log_dir].write_failed(e, "writing the checkpoints")

    def _checkpoint_dir(self, log_dir: Path) -> None:
        mine = {tp: plog for tp, plog in list(self._logs.items()) if self._dir_of.get(tp) == log_dir}
        write_checkpoint(log_dir / files.RECOVERY_POINT_CHECKPOINT, {tp: p.recovery_point for tp, p in mine.items()})
        write_checkpoint(log_dir / files.LOG_START_OFFSET_CHECKPOINT,
                         {tp: p.log_start_offset for tp, p in mine.items()})
        write_checkpoint(log_dir / files.CLEANER_OFFSET_CHECKPOINT,
                         {tp: p.cleaner_offset for tp, p in mine.items() if p.cleaner_offset is not None})

    # ------------------------------------------------------------------------------ free space

    def check_space(self) -> None:
        """Periodic, loop-safe (a ``statvfs`` per log dir, only while one is full or its reserve
        short): takes the space reserves back and ends a "full" condition once there is room."""
        for space in self.space.values():
            space.check()

    def full_dirs(self) -> list[LogDirSpace]:
        """The log dirs where writes fail now (a full disk, or another I/O error)."""
        return [space for space in self.space.values() if space.failing]

    def apply_retention(self) -> int:
        """Remove expired segments from every log; returns how many segments went."""
        removed = 0
        now = self.clock.monotonic_ms()
        for tp, plog in self._logs.items():
            if tp in self._cleaning:
                continue  # retention waits for the pass to commit (Kafka pauses cleaning instead)
            for seg in plog.expired_segments():
                self._deleted.append((now + plog.config.file_delete_delay_ms, seg))
                removed += 1
        return removed

    # --------------------------------------------------------------------------------- cleaning

    def grab_filthiest_compacted_log(self) -> CleanPlan | None:
        """Loop-only. Pick the compacted log most worth cleaning and plan a pass over it.

        Candidates: compacted logs not being cleaned and not marked uncleanable, whose dirty ratio
        exceeds ``min.cleanable.dirty.ratio`` or whose oldest dirty record passed
        ``max.compaction.lag.ms``; the highest ratio wins. With no candidate, a log whose earliest
        retained tombstone horizon has passed is cleaned so that the tombstones go (KIP-534)."""
        now = self.clock.wall_ms()
        measured = [
            log_to_clean(plog, now)
            for tp, plog in self._logs.items()
            if plog.config.compact and tp not in self._cleaning and tp not in self._uncleanable
        ]
        cleanable = [ltc for ltc in measured if ltc.is_cleanable]
        if not cleanable:
            cleanable = [
                ltc for ltc in measured
                if self._delete_horizons.get((ltc.log.topic, ltc.log.partition), now + 1) <= now
            ]
        for ltc in sorted(cleanable, key=lambda ltc: ltc.cleanable_ratio, reverse=True):
            plan = self.cleaner.plan(ltc.log)
            if plan is not None:
                self._cleaning[(plan.topic, plan.partition)] = plan
                return plan
        return None

    def complete_clean(self, result: CleanResult) -> bool:
        """Loop-only. Commit a pass; the replaced segments are deleted after ``file.delete.delay.ms``.
        False if the pass was discarded (the log changed or went away meanwhile)."""
        plan = result.plan
        tp = (plan.topic, plan.partition)
        self._cleaning.pop(tp, None)
        plog = self._logs.get(tp)
        if plog is None:
            self.cleaner.abort(result)
            return False
        replaced = self.cleaner.commit(plog, result)
        if replaced is None:
            return False
        if result.delete_horizon_ms is None:
            self._delete_horizons.pop(tp, None)
        else:
            self._delete_horizons[tp] = result.delete_horizon_ms
        due = self.clock.monotonic_ms() + plog.config.file_delete_delay_ms
        self._deleted += [(due, seg) for seg in replaced]
        return True

    def abort_clean(self, plan: CleanPlan, error: BaseException | None = None) -> None:
        """Loop-only. Forget a pass whose clean step failed; a :class:`CleanerError` (unreadable
        data) stops cleaning that log until it is reopened."""
        tp = (plan.topic, plan.partition)
        self._cleaning.pop(tp, None)
        self.cleaner.abort(plan)
        if isinstance(error, OSError) and disk_space.is_out_of_space(error):
            plog = self._logs.get(tp)
            if plog is not None and plog.dir_space is not None:
                plog.dir_space.write_failed(error, f"compacting {plan.topic}-{plan.partition}")
        if isinstance(error, CleanerError):
            log.error("stopping compaction of %s-%d: %s", plan.topic, plan.partition, error)
            self._uncleanable.add(tp)

    def clean_filthiest_log(self) -> CleanResult | None:
        """Pick, clean and commit one log on the calling thread (tests; a broker that accepts the
        blocking). Returns the committed result, or None if nothing was cleaned."""
        plan = self.grab_filthiest_compacted_log()
        if plan is None:
            return None
        try:
            result = self.cleaner.clean(plan)
        except Exception as e:
            self.abort_clean(plan, e)
            if isinstance(e, CleanerError):
                return None
            raise
        return result if self.complete_clean(result) else None

    def remove_deleted_segments(self, *, force: bool = False) -> int:
        """Delete the files of segments whose ``file.delete.delay.ms`` has passed."""
        now = self.clock.monotonic_ms()
        keep, gone = [], 0
        for due, seg in self._deleted:
            if force or due <= now:
                seg.delete_files()
                gone += 1
            else:
                keep.append((due, seg))
        self._deleted = keep
        return gone


__all__ = ["LogManager", "StartupReport"]
