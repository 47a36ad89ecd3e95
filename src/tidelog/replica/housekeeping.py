"""Background work on the logs: the flush policy, checkpoints, retention, compaction and the removal
of deleted partitions' files.

* **Flush by count.** After an append (the ``appended`` event) a log with ``flush.messages``
  unflushed messages is fsync'ed in the executor; at most one flush per log at a time.
* **Periodic jobs** (the owner runs each every interval it chooses): :meth:`flush_by_time`
  (``flush.ms``), :meth:`checkpoint` (recovery points, log start offsets), :meth:`retention`
  (segments past ``retention.ms`` / ``retention.bytes``, files removed after ``file.delete.delay.ms``;
  expired producer ids), :meth:`compact` (one pass of the log cleaner: planned on the loop, rewritten
  in the executor, committed on the loop).
* **Deleted partitions** (the ``deleted`` event): their renamed directories are removed in the
  executor, one pass for however many partitions went in one go.

The loop side is loop-only and not thread-safe; the storage work runs in the default executor.
"""

from __future__ import annotations

import asyncio
import logging

from tidelog import disk_space
from tidelog.clock import Clock
from tidelog.replica.events import LogEvents
from tidelog.storage.log import PartitionLog
from tidelog.storage.log_manager import LogManager

log = logging.getLogger(__name__)


class LogHousekeeping:
    def __init__(self, logs: LogManager, clock: Clock, events: LogEvents) -> None:
        self.logs = logs
        self.clock = clock
        self._flushing: set[PartitionLog] = set()
        self._purge_scheduled = False
        events.on_appended(self._after_append)
        events.on_deleted(lambda topic, partition: self.schedule_purge())

    # ------------------------------------------------------------------------------------ flush

    def _after_append(self, topic: str, partition: int, plog: PartitionLog) -> None:
        if plog.unflushed_messages >= plog.config.flush_messages and plog not in self._flushing:
            self._flush_in_background(plog)

    def _flush_in_background(self, plog: PartitionLog) -> None:
        self._flushing.add(plog)
        fut = asyncio.get_running_loop().run_in_executor(None, plog.flush)
        fut.add_done_callback(lambda _: self._flushing.discard(plog))

    async def flush_by_time(self) -> None:
        for plog in self.logs.logs_due_for_flush():
            if plog not in self._flushing:
                self._flush_in_background(plog)

    # ---------------------------------------------------------------------------- periodic jobs

    async def checkpoint(self) -> None:
        await asyncio.get_running_loop().run_in_executor(None, self.logs.checkpoint)

    async def retention(self) -> None:
        self.logs.apply_retention()
        self.logs.remove_deleted_segments()
        for _, plog in self.logs.logs():
            plog.producer_state.remove_expired(self.clock.wall_ms())

    async def compact(self) -> None:
        """One compaction pass: plan on the loop, rewrite segments in the executor, commit on the loop."""
        plan = self.logs.grab_filthiest_compacted_log()
        if plan is None:
            return
        try:
            result = await asyncio.get_running_loop().run_in_executor(None, self.logs.cleaner.clean, plan)
        except Exception as e:
            if not disk_space.is_out_of_space(e):  # a full disk: abort_clean reports it to the log dir (once)
                log.exception("compaction of %s-%d failed", plan.topic, plan.partition)
            self.logs.abort_clean(plan, e)
            return
        self.logs.complete_clean(result)

    # -------------------------------------------------------------------------- deleted files

    def schedule_purge(self) -> None:
        """Remove deleted partitions' files in the executor (one pass for a burst of deletions)."""
        if self._purge_scheduled or not self.logs.pending_removal:
            return
        self._purge_scheduled = True
        loop = asyncio.get_running_loop()

        def purge() -> None:
            self._purge_scheduled = False
            loop.run_in_executor(None, self.logs.purge_deleted_logs)

        loop.call_soon(purge)


__all__ = ["LogHousekeeping"]
