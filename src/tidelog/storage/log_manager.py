"""All partition logs of a broker, across its log directories, and their housekeeping.

Start-up: for each log dir, read the recovery-point and log-start checkpoints, note whether the
clean-shutdown marker is there (and remove it: from now on a crash is unclean), then open every
``<topic>-<partition>`` directory with :func:`~tidelog.storage.loader.load_log`.

Housekeeping the owner calls periodically (the broker schedules these; blocking ones in an executor):

* :meth:`flush_due_logs` — fsync logs whose ``flush.messages`` / ``flush.ms`` policy says so;
* :meth:`checkpoint` — write recovery points and log start offsets (atomic replace);
* :meth:`apply_retention` — delete expired segments (renamed ``.deleted``, removed after
  ``file.delete.delay.ms`` by :meth:`remove_deleted_segments`).

Shutdown: flush everything, checkpoint, close, and write the clean-shutdown marker last.

Concurrency: loop-only, not thread-safe, except the methods documented as executor-safe.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from pathlib import Path

from tidelog.clock import Clock
from tidelog.config import TopicConfig
from tidelog.storage import files
from tidelog.storage.checkpoints import CheckpointError, fsync_dir, read_checkpoint, write_checkpoint
from tidelog.storage.loader import load_log
from tidelog.storage.log import PartitionLog
from tidelog.storage.segment import Segment

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]


class LogManager:
    """Owns every PartitionLog of the broker."""

    def __init__(
        self,
        log_dirs: list[Path],
        clock: Clock,
        *,
        topic_config: Callable[[str], TopicConfig] | None = None,
        producer_id_expiration_ms: int = 86_400_000,
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

    # --------------------------------------------------------------------------------- lifecycle

    def startup(self) -> None:
        """Open every log found in the log dirs (recovering after a crash). Blocking."""
        for log_dir in self.log_dirs:
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
            for child in sorted(log_dir.iterdir()):
                tp = files.parse_partition_dir(child.name) if child.is_dir() else None
                if tp is None:
                    continue
                if tp in self._logs:
                    raise RuntimeError(f"partition {tp} found in two log dirs: {self._dir_of[tp]} and {log_dir}")
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
                )
                self._dir_of[tp] = log_dir
            if marker.exists():
                marker.unlink()  # a crash from now on must trigger recovery

    def shutdown(self) -> None:
        """Flush, checkpoint, close every log, then mark each log dir as cleanly shut down."""
        for plog in self._logs.values():
            plog.flush()
        self.checkpoint()
        for plog in self._logs.values():
            plog.close()
        self.remove_deleted_segments(force=True)
        for log_dir in self.log_dirs:
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
        self._logs[tp] = plog
        self._dir_of[tp] = log_dir
        return plog

    def delete_log(self, topic: str, partition: int) -> bool:
        tp = (topic, partition)
        plog = self._logs.pop(tp, None)
        if plog is None:
            return False
        self._dir_of.pop(tp, None)
        plog.delete()
        return True

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
        """Write the recovery-point and log-start-offset checkpoints of every log dir. Executor-safe."""
        for log_dir in self.log_dirs:
            mine = {tp: plog for tp, plog in self._logs.items() if self._dir_of.get(tp) == log_dir}
            write_checkpoint(
                log_dir / files.RECOVERY_POINT_CHECKPOINT, {tp: p.recovery_point for tp, p in mine.items()}
            )
            write_checkpoint(
                log_dir / files.LOG_START_OFFSET_CHECKPOINT, {tp: p.log_start_offset for tp, p in mine.items()}
            )

    def apply_retention(self) -> int:
        """Remove expired segments from every log; returns how many segments went."""
        removed = 0
        now = self.clock.monotonic_ms()
        for plog in self._logs.values():
            for seg in plog.expired_segments():
                self._deleted.append((now + plog.config.file_delete_delay_ms, seg))
                removed += 1
        return removed

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


__all__ = ["LogManager"]
