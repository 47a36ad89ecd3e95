"""Loading a coordinator partition in the background, a chunk at a time (Kafka's coordinator loader).

A broker that becomes the leader of a ``__consumer_offsets`` / ``__transaction_state`` partition
must replay it before it serves the groups or transactional ids that live there. Replaying a large
partition in one go would hold the event loop for as long as it takes; instead:

1. **States.** A partition this object knows is *loading* (a task replays it), or *failed* (its
   load raised: requests for it answer NOT_COORDINATOR until it is unloaded). Any other partition
   is not this module's business (loaded, or not coordinated here). :meth:`PartitionLoads.load_now`
   replays a partition synchronously (the broker's start-up, before it serves; unit tests).
2. **Chunks.** :meth:`PartitionLoads.start` runs a task on the running loop that reads the partition
   from its log start and hands each batch to ``replay_batch(partition, batch)``; after at most
   ``chunk_batches`` batches or ``chunk_ms`` of replay it yields to the loop (``asyncio.sleep(0)``),
   so other requests are served meanwhile. Every chunk reads the log afresh from the next offset
   (no iterator is held across a yield, so a segment rolled, cleaned or truncated meanwhile is
   never read stale), and batches appended during the load (transaction markers another
   coordinator writes) are read too.
3. **Completion** is synchronous with the last read: when a chunk finds no batch past the next
   offset, the partition leaves the loading state and ``on_loaded(partition, records)`` runs in the
   same step, so no write can slip in between the end of the replay and the coordinator's
   activation (its timers and ``on_loaded`` hooks start there, never earlier).
4. **Cancellation.** :meth:`PartitionLoads.cancel` (the partition is unloaded: leadership lost
   again) cancels the task; it never replays another batch and ``on_loaded`` never runs. The
   coordinator drops what the replay built so far.

Loop-only, not thread-safe. Reading a chunk's segment data stays on the loop: bounded work.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from tidelog.records import RecordBatchView

log = logging.getLogger(__name__)

ReadFn = Callable[[int, int], Iterator[RecordBatchView]]  # (partition, from offset) -> batches in order
ReplayBatchFn = Callable[[int, RecordBatchView], int]  # (partition, batch) -> records replayed
LoadedFn = Callable[[int, int], None]  # (partition, records replayed)

CHUNK_BATCHES = 256
CHUNK_MS = 10.0


@dataclass(slots=True)
class LoadStats:
    """What one load did: records and batches replayed, chunks, wall time, the longest chunk."""

    partition: int
    records: int = 0
    batches: int = 0
    chunks: int = 0
    elapsed_ms: float = 0.0
    max_chunk_ms: float = 0.0


class PartitionLoads:
    """The loads of one coordinator's partitions (rules 1-4)."""

    def __init__(self, read: ReadFn, replay_batch: ReplayBatchFn, *, chunk_batches: int = CHUNK_BATCHES,
                 chunk_ms: float = CHUNK_MS) -> None:
        self._read = read
        self._replay_batch = replay_batch
        self.chunk_batches = max(1, chunk_batches)
        self.chunk_ms = chunk_ms
        self._tasks: dict[int, asyncio.Task[None]] = {}
        self.failed: set[int] = set()
        #: partition -> the stats of its last completed load (background or synchronous)
        self.stats: dict[int, LoadStats] = {}

    def is_loading(self, partition: int) -> bool:
        return partition in self._tasks

    @property
    def loading(self) -> frozenset[int]:
        return frozenset(self._tasks)

    def task(self, partition: int) -> asyncio.Task[None] | None:
        """The task loading ``partition`` (tests await it), or None."""
        return self._tasks.get(partition)

    # ------------------------------------------------------------------------------- loading

    def load_now(self, partition: int) -> int:
        """Rule 1: replay the whole partition now; returns the records replayed."""
        self.cancel(partition)
        stats = LoadStats(partition)
        started = time.perf_counter()
        next_offset = -1
        while True:
            next_offset, more = self._chunk(partition, next_offset, stats, limit=None)
            if not more:
                break
        stats.elapsed_ms = (time.perf_counter() - started) * 1000
        self.stats[partition] = stats
        return stats.records

    def start(self, partition: int, on_loaded: LoadedFn) -> asyncio.Task[None]:
        """Rule 2: load ``partition`` in a task on the running loop; ``on_loaded`` runs when it is done."""
        self.cancel(partition)
        task = asyncio.get_running_loop().create_task(self._run(partition, on_loaded),
                                                      name=f"coordinator-load-{partition}")
        self._tasks[partition] = task
        return task

    def cancel(self, partition: int) -> bool:
        """Rule 4: stop loading ``partition`` (and forget a failed load); True if a load was running."""
        self.failed.discard(partition)
        task = self._tasks.pop(partition, None)
        if task is None:
            return False
        task.cancel()
        log.info("loading coordinator partition %d cancelled", partition)
        return True

    def cancel_all(self) -> None:
        for partition in list(self._tasks):
            self.cancel(partition)
        self.failed.clear()

    async def _run(self, partition: int, on_loaded: LoadedFn) -> None:
        me = asyncio.current_task()
        stats = LoadStats(partition)
        started = time.perf_counter()
        next_offset = -1
        try:
            while True:
                next_offset, more = self._chunk(partition, next_offset, stats, limit=self.chunk_batches)
                if not more:
                    break
                await asyncio.sleep(0)
                if self._tasks.get(partition) is not me:  # cancelled (or replaced) while yielding
                    return
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("loading coordinator partition %d failed after %d records", partition, stats.records)
            if self._tasks.get(partition) is me:
                del self._tasks[partition]
                self.failed.add(partition)
            return
        if self._tasks.get(partition) is not me:
            return
        del self._tasks[partition]  # rule 3: in the same step as the last read
        stats.elapsed_ms = (time.perf_counter() - started) * 1000
        self.stats[partition] = stats
        log.info("loaded coordinator partition %d: %d records in %d batches, %d chunks, %.0f ms "
                 "(longest chunk %.1f ms)", partition, stats.records, stats.batches, stats.chunks,
                 stats.elapsed_ms, stats.max_chunk_ms)
        try:
            on_loaded(partition, stats.records)
        except Exception:
            log.exception("activating coordinator partition %d after its load failed", partition)

    def _chunk(self, partition: int, next_offset: int, stats: LoadStats, limit: int | None) -> tuple[int, bool]:
        """Replay up to ``limit`` batches (or ``chunk_ms``) from ``next_offset`` (-1: the log start).
        Returns the next offset and whether the chunk stopped before the end of the log."""
        started = time.perf_counter()
        deadline = started + self.chunk_ms / 1000
        count = 0
        batches = self._read(partition, next_offset)
        try:
            for batch in batches:
                if batch.last_offset < next_offset:
                    continue
                stats.records += self._replay_batch(partition, batch)
                stats.batches += 1
                next_offset = batch.last_offset + 1
                count += 1
                if limit is not None and (count >= limit or time.perf_counter() >= deadline):
                    return next_offset, True
        finally:
            close = getattr(batches, "close", None)
            if close is not None:
                close()
            stats.chunks += 1
            stats.max_chunk_ms = max(stats.max_chunk_ms, (time.perf_counter() - started) * 1000)
        return next_offset, False


__all__ = ["CHUNK_BATCHES", "CHUNK_MS", "LoadStats", "PartitionLoads"]
