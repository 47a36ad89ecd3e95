"""The high-watermark checkpoint: ``replication-offset-checkpoint`` in every log dir (Kafka's name
and its offset-checkpoint text format, :mod:`tidelog.storage.checkpoints`: version 0, the count,
then ``<topic> <partition> <high watermark>`` lines), for the logs of that dir.

* Written every ``replica.high.watermark.checkpoint.interval.ms`` and at clean shutdown (a snapshot
  taken on the loop by :meth:`snapshot`, written off it by :meth:`write`).
* Read at start-up, before the logs take their roles (:meth:`restore`): each log's high watermark
  starts at its checkpointed value, capped at its log end, instead of at its log end; so a restarted
  broker that leads before its followers are back does not show consumers records the ISR may not
  have had. A log the file does not list starts at its log start (Kafka's 0); a log dir without the
  file (written before it existed) leaves its logs' high watermarks at their log ends, as before.

Cluster mode only: a single node's high watermark is its log end. Not thread-safe except :meth:`write`.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

from tidelog.storage.checkpoints import CheckpointError, read_checkpoint, write_checkpoint
from tidelog.storage.log_manager import LogManager

log = logging.getLogger(__name__)

REPLICATION_OFFSET_CHECKPOINT = "replication-offset-checkpoint"
Snapshot = dict[Path, dict[tuple[str, int], int]]


class HighWatermarkCheckpoints:
    def __init__(self, logs: LogManager) -> None:
        self.logs = logs
        self._writing = threading.Lock()  # the periodic write may still run when the last one starts

    def snapshot(self) -> Snapshot:
        """Every log's high watermark, by log dir (every log dir, so a dir emptied by deletions is rewritten)."""
        by_dir: Snapshot = {d: {} for d in self.logs.log_dirs}
        for tp, plog in self.logs.logs():
            log_dir = self.logs.log_dir_of(*tp)
            if log_dir is not None:
                by_dir.setdefault(log_dir, {})[tp] = plog.high_watermark
        return by_dir

    def write(self, snapshot: Snapshot) -> None:
        """Write each log dir's file (atomically; one write at a time). Executor-safe."""
        with self._writing:
            for log_dir, entries in snapshot.items():
                if log_dir.is_dir():
                    write_checkpoint(log_dir / REPLICATION_OFFSET_CHECKPOINT, entries)

    def restore(self) -> int:
        """Set every loaded log's high watermark from its dir's checkpoint; returns how many were lowered."""
        lowered = 0
        for log_dir in self.logs.log_dirs:
            path = log_dir / REPLICATION_OFFSET_CHECKPOINT
            if not path.exists():
                continue
            try:
                entries = read_checkpoint(path)
            except CheckpointError as e:
                log.warning("%s; the high watermarks of %s start at their log ends", e, log_dir)
                continue
            for tp, plog in self.logs.logs():
                if self.logs.log_dir_of(*tp) != log_dir:
                    continue
                before = plog.high_watermark
                plog.update_high_watermark(entries.get(tp, plog.log_start_offset))
                if plog.high_watermark < before:
                    lowered += 1
        return lowered


__all__ = ["REPLICATION_OFFSET_CHECKPOINT", "HighWatermarkCheckpoints", "Snapshot"]
